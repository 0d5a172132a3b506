"""Builder of FedAvg / DP-FedAvg runs (:class:`experiments.fl.FLConfig`), and the
classification task (data, partition, model, evaluation) that DP-FTRL shares."""

from __future__ import annotations

import difflib
import functools
import inspect
import os

import numpy as np
import optax

from experiments import fl
from jaxfl import ledger, models, sweep, training, validate
from jaxfl import random as jrandom
from jaxfl.accounting import accountants
from jaxfl.algorithms import dp_fedavg, fedavg
from jaxfl.data import federated, idx, partition, sources, tabular


def load_classification(name: str, *, data_dir=None):
    """Returns ``(x_train, y_train, x_test, y_test)`` as float32 / int32 arrays (read-only).

    The last dataset loaded is kept: the points of a sweep and their single runs build one task
    each from the same files (the DP-FedAvg vs DP-FTRL smoke sweep check loaded and verified
    MNIST six times). The arrays are shared, so they are read-only; a builder that changes them
    works on a copy."""
    # Keyed by where the files are read from (JAXFL_DATA_DIR when data_dir is None).
    where = str(data_dir) if data_dir is not None else os.environ.get("JAXFL_DATA_DIR")
    return _load_classification(name, None if data_dir is None else str(data_dir), where)


@functools.lru_cache(maxsize=1)
def _load_classification(name: str, data_dir, where):
    del where  # part of the cache key only
    arrays = _read_classification(name, data_dir=data_dir)
    for a in arrays:
        a.flags.writeable = False
    return arrays


def _read_classification(name: str, *, data_dir=None):
    if name in idx.STANDARDIZATION:
        return (*idx.load_normalized(name, "train", path=data_dir),
                *idx.load_normalized(name, "test", path=data_dir))
    if name == "digits":
        t = tabular.load_digits(images=True)
        x = (t.x / 16.0).astype(np.float32)
        y = t.y.astype(np.int32)
        perm = jrandom.host_rng(0, "digits_split").permutation(len(x))
        cut = int(0.8 * len(x))
        return x[perm[:cut]], y[perm[:cut]], x[perm[cut:]], y[perm[cut:]]
    if name == "cifar10":
        xtr, ytr = sources.load("cifar10", split="train", path=data_dir)
        xte, yte = sources.load("cifar10", split="test", path=data_dir)
        f = lambda a: (a.astype(np.float32) / 255.0)
        return f(xtr), ytr.astype(np.int32), f(xte), yte.astype(np.int32)
    raise ValueError(f"Unknown classification dataset {name!r}.")


def model_builder(name: str):
    """The registered builder of model ``name``.

    Raises:
      JaxflValueError: an unknown model, listing the available ones (before any data loads).
    """
    available = models.available()  # loads every built-in model into the registry
    builder = models._REGISTRY.get(name)  # noqa: SLF001 (the registry get_model reads)
    if builder is None:
        close = difflib.get_close_matches(str(name), available, n=1, cutoff=0.5)
        hint = f" did you mean {close[0]!r}?" if close else ""
        raise validate.JaxflValueError(
            f"Unknown model {name!r} (config field model);{hint} available models: "
            f"{available}.")
    return builder


def _model(name: str, input_shape, num_classes: int) -> models.Model:
    """``models.get_model(name)`` given the data's shape and classes where it takes them."""
    params = inspect.signature(model_builder(name)).parameters
    kw = {}
    if "num_classes" in params:
        kw["num_classes"] = num_classes
    if "input_shape" in params:
        kw["input_shape"] = tuple(input_shape)
    return models.get_model(name, **kw)


def task(cfg: fl.FLConfig):
    """``(data, model, eval_fn)``: the partitioned training set, the config's model for it and
    the test-set evaluation."""
    model_builder(cfg.model)  # an unknown model fails before the data loads
    xtr, ytr, xte, yte = load_classification(cfg.dataset, data_dir=cfg.data_dir)
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
    model = _model(cfg.model, xtr.shape[1:], int(max(ytr.max(), yte.max()) + 1))
    return (federated.from_partition(xtr, ytr, parts), model,
            training.make_classifier_eval(model, xte, yte))


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
