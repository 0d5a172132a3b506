"""Tiny sweep config for the fault tests: toy data, four points, seconds per run.

  python -m experiments.sweep --config tests/reliability/_sweep_config.py --workdir DIR
"""

import dataclasses

import jax

from jaxfl import training
from jaxfl.algorithms import dp_fedavg
from tests import _toy


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToySweepConfig:
    name: str = "toy_sweep"
    noise_multiplier: float = 1.0
    seed: int = 0
    rounds: int = 6
    eval_every: int = 1
    checkpoint_every: int = 1
    delta: float = 1e-5

    def build(self):
        model = _toy.logreg(5, 3)
        alg = dp_fedavg.dp_fedavg(model, num_clients=6, local_steps=2, batch_size=4,
                                  client_lr=0.3, clip_norm=0.5,
                                  noise_multiplier=self.noise_multiplier, sampling_rate=0.5)
        return alg, _toy.blobs(num_clients=6, seed=5), model.init(jax.random.key(0)), None

    def run(self, workdir):
        alg, data, params, _ = self.build()
        return training.run(alg, data, params=params, rounds=self.rounds, seed=self.seed,
                            workdir=workdir, checkpoint_every=self.checkpoint_every,
                            delta=self.delta, config=self).summary


def get_config(arg=None):
    del arg  # unused
    return ToySweepConfig()


def get_sweep():
    return [{"noise_multiplier": s, "seed": seed} for s in (0.8, 1.5) for seed in (0, 1)]
