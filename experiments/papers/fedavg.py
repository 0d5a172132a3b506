"""Builder of FedAvg / DP-FedAvg runs (:class:`experiments.configs.fl.FLConfig`) on the
``classification`` task of :mod:`jaxfl.tasks` (shared with DP-FTRL): wiring only."""

from __future__ import annotations

import optax

from experiments.configs import fl
from jaxfl import ledger, sweep, tasks
from jaxfl import random as jrandom
from jaxfl.accounting import accountants
from jaxfl.algorithms import dp_fedavg, fedavg


def task(cfg: fl.FLConfig):
    """``(data, model, eval_fn)`` of the config's ``classification`` task
    (:func:`jaxfl.tasks.images.classification`)."""
    t = tasks.get("classification", dataset=cfg.dataset, model=cfg.model,
                  num_clients=cfg.num_clients, partition=cfg.partition, alpha=cfg.alpha,
                  seed=cfg.seed, max_train_examples=cfg.max_train_examples,
                  data_dir=cfg.data_dir)
    return t.train, t.model, t.evaluate


def spec_of(cfg: fl.FLConfig, alg, data, model, eval_fn, delta, recalibrate=None
            ) -> sweep.RunSpec:
    """The run of ``alg`` on the task, from the config's seeded initial parameters."""
    params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
    return sweep.RunSpec(algorithm=alg, data=data, params=params, rounds=cfg.rounds,
                         seed=cfg.seed, eval_fn=eval_fn, eval_every=cfg.eval_every,
                         checkpoint_every=cfg.checkpoint_every, delta=delta, config=cfg,
                         recalibrate=recalibrate)


def adaptive_clip(cfg: fl.FLConfig) -> dp_fedavg.AdaptiveClip | None:
    """The config's adaptive clipping (None when off)."""
    if not cfg.adaptive_clip:
        return None
    return dp_fedavg.AdaptiveClip(target_quantile=cfg.target_quantile, lr=cfg.clip_lr,
                                  count_noise=cfg.count_noise)


_CALIBRATED: dict = {}


def noise_multiplier(cfg: fl.FLConfig, make_algorithm, key) -> float:
    """``cfg.noise_multiplier``, or with ``cfg.target_epsilon`` the smallest noise multiplier
    whose algorithm's own accountant reports at most ``target_epsilon`` at ``cfg.delta`` after
    ``cfg.rounds`` rounds (the report's headline, as in summary.json). ``key`` names the
    mechanism (everything but sigma that its accounting depends on; memoised)."""
    if cfg.target_epsilon is None:
        return cfg.noise_multiplier
    full = (key, cfg.rounds, cfg.delta, cfg.target_epsilon)
    if full not in _CALIBRATED:
        _CALIBRATED[full] = accountants.calibrate_noise_multiplier(
            epsilon_of=lambda s: make_algorithm(s).accountant.report(cfg.rounds,
                                                                      cfg.delta).epsilon,
            target_epsilon=cfg.target_epsilon, tol=1e-4)
    return _CALIBRATED[full]


def remaining_budget(cfg: fl.FLConfig, make_algorithm):
    """For a config with ``target_epsilon``: the :func:`jaxfl.training.run` ``recalibrate``
    of a resumed or extended run, which calibrates only the remaining rounds against what the
    workdir's ledger has spent (the smallest noise multiplier whose whole-run headline epsilon,
    spent rounds included, is at most ``target_epsilon``); None without a target.

    Raises (when called): :class:`jaxfl.ledger.BudgetError` when nothing is left of the
    budget (the spent epsilon already reaches the target, or not even the largest noise
    multiplier of the calibration keeps the run under it)."""
    if cfg.target_epsilon is None:
        return None
    target = cfg.target_epsilon

    def recalibrate(epsilon_with, spent):
        upper = 500.0
        if spent >= target or epsilon_with(make_algorithm(upper)) > target:
            raise ledger.BudgetError(
                f"Nothing is left of target_epsilon={target} at delta={cfg.delta}: the rounds "
                f"this workdir already released spent {spent:.6g}, and {cfg.rounds} rounds in "
                f"all cannot stay under it (even at noise multiplier {upper}). Use a new "
                f"workdir, or a larger target.")
        sigma = accountants.calibrate_noise_multiplier(
            epsilon_of=lambda s: epsilon_with(make_algorithm(s)), target_epsilon=target,
            tol=1e-4, upper=upper)
        return make_algorithm(sigma)

    return recalibrate


def run_spec(cfg: fl.FLConfig) -> sweep.RunSpec:
    data, model, eval_fn = task(cfg)
    common = dict(num_clients=cfg.num_clients, local_steps=cfg.local_steps,
                  batch_size=cfg.batch_size, client_lr=cfg.client_lr,
                  server_opt=optax.sgd(cfg.server_lr), sampling_rate=cfg.sampling_rate,
                  client_batch=cfg.client_batch)
    if cfg.algorithm == "dp_fedavg":
        adaptive = adaptive_clip(cfg)

        def make(sigma):
            return dp_fedavg.dp_fedavg(model, clip_norm=cfg.clip_norm, noise_multiplier=sigma,
                                       adaptive_clip=adaptive, **common)

        key = ("dp_fedavg", cfg.sampling_rate, cfg.num_clients, adaptive)
        alg = make(noise_multiplier(cfg, make, key))
        recalibrate = remaining_budget(cfg, make)
    else:
        alg = fedavg.fedavg(model, **common)
        recalibrate = None
    return spec_of(cfg, alg, data, model, eval_fn,
                   cfg.delta if cfg.algorithm != "fedavg" else None, recalibrate)
