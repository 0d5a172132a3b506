"""Builder of LightDP-FL runs (:class:`experiments.configs.lightdp._common.LightDPConfig`).

Wiring only: loads and partitions the data (label-sorted shards, equal client sizes; the
paper does not say how it splits), designs the noise with :func:`jaxfl.accounting.lightdp.design`
(the accountant of the algorithm is built from that design by
:func:`jaxfl.algorithms.lightdp.lightdp_fl`) and builds the model and the evaluation. Loaded arrays,
models and compiled evaluations are cached per process, so a reproduction that runs many configs
loads and compiles them once.
"""

from __future__ import annotations

import functools

import numpy as np

from experiments.configs.lightdp import _common
from jaxfl import models, sweep, training
from jaxfl import random as jrandom
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import lightdp
from jaxfl.data import federated
from jaxfl.data import partition as part


@functools.lru_cache(maxsize=4)
def load_arrays(dataset: str, image_pool: int = 1):
    """``(x_train, y_train, x_test, y_test)``: float32 standardized images (channels last),
    int32 labels, average-pooled by ``image_pool``.

    Raises:
      DataNotFoundError: when the dataset's files are absent (the message names them).
    """
    if dataset == "cifar10":
        from jaxfl.data import cifar

        (xtr, ytr), (xte, yte) = cifar.load_cifar10("train"), cifar.load_cifar10("test")
        mean = np.array([0.4914, 0.4822, 0.4465], np.float32)
        std = np.array([0.2470, 0.2435, 0.2616], np.float32)
        norm = lambda x: ((x.astype(np.float32) / 255.0 - mean) / std).astype(np.float32)
        xtr, ytr = norm(xtr), ytr.astype(np.int32)
        xte, yte = norm(xte), yte.astype(np.int32)
    else:
        from jaxfl.data import idx

        xtr, ytr = idx.load_normalized(dataset, "train", standardize=True)
        xte, yte = idx.load_normalized(dataset, "test", standardize=True)
    return _pool(xtr, image_pool), ytr, _pool(xte, image_pool), yte


def _pool(x: np.ndarray, k: int) -> np.ndarray:
    """Average-pools ``[n, H, W, C]`` images by ``k`` (H, W divisible by k)."""
    if k == 1:
        return x
    n, h, w, c = x.shape
    return x.reshape(n, h // k, k, w // k, k, c).mean(axis=(2, 4)).astype(np.float32)


def client_indices(cfg: _common.LightDPConfig, labels: np.ndarray) -> list[np.ndarray]:
    """Shards: a seeded subsample of ``N * n`` examples cut into label-sorted shards,
    ``shards_per_client`` per client; every client gets exactly ``n`` examples."""
    rng = jrandom.host_rng(cfg.seed, "partition")
    total = cfg.num_clients * cfg.examples_per_client
    if total > len(labels):
        raise ValueError(f"Need {total} training examples, have {len(labels)}.")
    pool = np.sort(rng.permutation(len(labels))[:total])
    parts = part.shards(rng, labels[pool], cfg.num_clients,
                        shards_per_client=cfg.shards_per_client)
    return [pool[p][: cfg.examples_per_client] for p in parts]


def test_indices(cfg: _common.LightDPConfig, num_test: int) -> np.ndarray:
    """The evaluation examples: all, or a fixed seeded subset of ``test_examples``."""
    if cfg.test_examples is None:
        return np.arange(num_test)
    return np.sort(jrandom.host_rng(cfg.seed, "test_subset").permutation(num_test)[
        : cfg.test_examples])


def local_steps(cfg: _common.LightDPConfig) -> int:
    """E epochs of full batches (remainder dropped): 31 for 1000 examples, batch 32."""
    return cfg.local_epochs * (cfg.examples_per_client // cfg.batch_size)


def sensitivity(cfg: _common.LightDPConfig) -> float:
    return acct.sensitivity(clip_norm=cfg.clip_norm, examples_per_client=cfg.examples_per_client,
                            mode=cfg.sensitivity_mode)


def design_scheme(cfg: _common.LightDPConfig) -> str:
    """HE + DP trains with SMPC + DP's maths (it differs in cost only)."""
    return "smpc_dp" if cfg.scheme == "he_dp" else cfg.scheme


def noise_design(cfg: _common.LightDPConfig) -> acct.NoiseDesign:
    """The noise design of ``cfg`` (Example 1 / the baselines; strict or paper calibration)."""
    pmf = None
    if cfg.stragglers == "bernoulli":
        pmf = acct.binomial_pmf(cfg.num_clients, cfg.failure_prob, cfg.max_stragglers)
    return acct.design(epsilon=cfg.epsilon, delta=cfg.delta, num_clients=cfg.num_clients,
                       max_colluders=cfg.max_colluders, max_stragglers=cfg.max_stragglers,
                       sensitivity=sensitivity(cfg), rounds=cfg.rounds, straggler_pmf=pmf,
                       scheme=design_scheme(cfg), mode=cfg.mode, composition=cfg.composition,
                       constant=cfg.constant)


@functools.lru_cache(maxsize=8)
def _model(name: str, kwargs: tuple):
    return models.get_model(name, **dict(kwargs))


@functools.lru_cache(maxsize=16)
def _eval_fn(model_name: str, model_kwargs: tuple, dataset: str, image_pool: int,
             test_key: tuple):
    _, _, xte, yte = load_arrays(dataset, image_pool)
    sel = np.asarray(test_key, dtype=np.int64)
    return training.make_classifier_eval(_model(model_name, model_kwargs), xte[sel], yte[sel])


def run_spec(cfg: _common.LightDPConfig) -> sweep.RunSpec:
    xtr, ytr, xte, _ = load_arrays(cfg.dataset, cfg.image_pool)
    data = federated.from_partition(xtr, ytr, client_indices(cfg, ytr))
    model = _model(cfg.model, cfg.model_kwargs)
    design = noise_design(cfg)
    keys = jrandom.key_streams(cfg.seed, ("init", "setup"))  # model init and pairwise masks
    algorithm = lightdp.lightdp_fl(
        model, design=design, num_clients=cfg.num_clients, local_steps=local_steps(cfg),
        batch_size=cfg.batch_size, client_lr=cfg.client_lr, clip_norm=cfg.clip_norm,
        setup_key=keys["setup"], stragglers=cfg.stragglers,
        failure_prob=cfg.failure_prob, path=cfg.path, client_map=cfg.client_map)
    sel = test_indices(cfg, len(xte))
    eval_fn = _eval_fn(cfg.model, cfg.model_kwargs, cfg.dataset, cfg.image_pool,
                       tuple(sel.tolist()))
    params = model.init(keys["init"])
    return sweep.RunSpec(algorithm=algorithm, data=data, params=params, rounds=cfg.rounds,
                         seed=cfg.seed, eval_fn=eval_fn,
                         eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every,
                         delta=cfg.delta, config=cfg, extra_record={"scheme": cfg.scheme})


__all__ = ["run_spec", "load_arrays", "client_indices", "test_indices", "local_steps",
           "sensitivity", "design_scheme", "noise_design"]
