"""Builder of FedAvg / DP-FedAvg runs (:class:`experiments.fl.FLConfig`)."""

from __future__ import annotations

import numpy as np
import optax

from experiments import fl
from jaxfl import models, sweep, training
from jaxfl import random as jrandom
from jaxfl.accounting import accountants
from jaxfl.algorithms import dp_fedavg, fedavg
from jaxfl.data import federated, partition


def federated_data(cfg: fl.FLConfig):
    """``(data, x_test, y_test, num_classes, input_shape)``: the partitioned training set."""
    xtr, ytr, xte, yte = fl.load_classification(cfg.dataset, data_dir=cfg.data_dir)
    if cfg.max_train_examples is not None and cfg.max_train_examples < len(xtr):
        keep = jrandom.host_rng(cfg.seed, "subsample").permutation(len(xtr))
        keep = np.sort(keep[: cfg.max_train_examples])
        xtr, ytr = xtr[keep], ytr[keep]
    rng = jrandom.host_rng(cfg.seed, "partition")
    if cfg.partition == "dirichlet":
        parts = partition.dirichlet(rng, ytr, cfg.num_clients, alpha=cfg.alpha)
    elif cfg.partition == "iid":
        parts = partition.iid(rng, len(ytr), cfg.num_clients)
    else:
        parts = partition.shards(rng, ytr, cfg.num_clients)
    num_classes = int(max(ytr.max(), yte.max()) + 1)
    return federated.from_partition(xtr, ytr, parts), xte, yte, num_classes, xtr.shape[1:]


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


def run_spec(cfg: fl.FLConfig) -> sweep.RunSpec:
    data, xte, yte, num_classes, input_shape = federated_data(cfg)
    model = models.get_model(cfg.model, **fl._model_kwargs(cfg.model, input_shape, num_classes))
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
    else:
        alg = fedavg.fedavg(model, **common)
    params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
    return sweep.RunSpec(algorithm=alg, data=data, params=params, rounds=cfg.rounds,
                         seed=cfg.seed, eval_fn=training.make_classifier_eval(model, xte, yte),
                         eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every,
                         delta=cfg.delta if cfg.algorithm != "fedavg" else None, config=cfg)
