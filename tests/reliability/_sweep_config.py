"""Tiny sweep config for the fault tests: toy data, four points, seconds per run.

  python -m experiments.sweep --config tests/reliability/_sweep_config.py --workdir DIR
"""

import dataclasses
from typing import ClassVar

import jax

from jaxfl import sweep
from jaxfl.algorithms import dp_fedavg
from tests import _toy


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToySweepConfig:
    builder: ClassVar[str] = "tests.reliability._sweep_config:run_spec"
    name: str = "toy_sweep"
    noise_multiplier: float = 1.0
    seed: int = 0
    rounds: int = 6
    eval_every: int = 1
    checkpoint_every: int = 1
    delta: float = 1e-5


def run_spec(cfg: ToySweepConfig) -> sweep.RunSpec:
    model = _toy.logreg(5, 3)
    alg = dp_fedavg.dp_fedavg(model, num_clients=6, local_steps=2, batch_size=4, client_lr=0.3,
                              clip_norm=0.5, noise_multiplier=cfg.noise_multiplier,
                              sampling_rate=0.5)
    return sweep.RunSpec(algorithm=alg, data=_toy.blobs(num_clients=6, seed=5),
                         params=model.init(jax.random.key(0)), rounds=cfg.rounds, seed=cfg.seed,
                         eval_every=cfg.eval_every, checkpoint_every=cfg.checkpoint_every,
                         delta=cfg.delta, config=cfg)


def get_config(arg=None):
    del arg  # unused
    return ToySweepConfig()


def get_sweep():
    return [{"noise_multiplier": s, "seed": seed} for s in (0.8, 1.5) for seed in (0, 1)]
