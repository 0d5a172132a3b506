"""A tiny DP-FedAvg experiment (toy logistic regression on Gaussian blobs) for sweep tests."""

import dataclasses
import functools
from typing import ClassVar

import jax
import numpy as np

from jaxfl import sweep, training
from jaxfl.algorithms import dp_fedavg, fedavg
from tests import _toy


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    builder: ClassVar[str] = "tests._sweep_toy:build"
    seed: int = 0
    algorithm: str = "dp_fedavg"
    num_clients: int = 8
    rounds: int = 4
    local_steps: int = 2
    batch_size: int = 4
    client_lr: float = 0.3
    clip_norm: float = 0.5
    noise_multiplier: float = 1.0
    sampling_rate: float = 0.5
    eval_every: int = 1
    checkpoint_every: int = 2
    final_accountant: str | None = None


@functools.cache
def _data(num_clients):
    data = _toy.blobs(num_clients=num_clients, dim=5, classes=3, seed=11)
    test = _toy.blobs(num_clients=1, dim=5, classes=3, seed=11, sizes=[40])
    return data, test


@functools.cache
def _eval(num_clients):
    _, test = _data(num_clients)
    return training.make_classifier_eval(_toy.logreg(5, 3), test.x[0], test.y[0], batch_size=20)


def build(cfg: ToyConfig) -> sweep.RunSpec:
    model = _toy.logreg(5, 3)
    data, _ = _data(cfg.num_clients)
    common = dict(num_clients=cfg.num_clients, local_steps=cfg.local_steps,
                  batch_size=cfg.batch_size, client_lr=cfg.client_lr,
                  sampling_rate=cfg.sampling_rate)
    if cfg.algorithm == "dp_fedavg":
        alg = dp_fedavg.dp_fedavg(model, clip_norm=cfg.clip_norm,
                                  noise_multiplier=cfg.noise_multiplier, **common)
        delta = 1e-5
    else:
        alg = fedavg.fedavg(model, **common)
        delta = None
    return sweep.RunSpec(algorithm=alg, data=data, params=model.init(jax.random.key(cfg.seed)),
                         rounds=cfg.rounds, seed=cfg.seed, eval_fn=_eval(cfg.num_clients),
                         eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every,
                         delta=delta, final_accountant=cfg.final_accountant, config=cfg,
                         extra_record={"mode": "strict"})


def float_close(a, b, rtol=2e-5, atol=2e-6):
    """Records/summaries equal: exact for non-floats, to float32 rounding for floats."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (a, b)
        for k in a:
            if k != "elapsed_s":
                float_close(a[k], b[k], rtol, atol)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            float_close(x, y, rtol, atol)
    elif isinstance(a, float) and isinstance(b, float):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    else:
        assert a == b, (a, b)


def build_seeded_data(cfg: ToyConfig, ragged: bool = False) -> sweep.RunSpec:
    """Like :func:`build`, but the clients' data depend on the seed (a seeded partition):
    same shapes for every seed unless ``ragged``."""
    sizes = None if ragged else [5, 3, 7, 2, 6, 4, 5, 3][:cfg.num_clients]
    data = _toy.blobs(num_clients=cfg.num_clients, dim=5, classes=3, seed=100 + cfg.seed,
                      sizes=sizes)
    spec = build(cfg)
    return dataclasses.replace(spec, data=data)
