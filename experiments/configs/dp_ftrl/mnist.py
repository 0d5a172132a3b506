"""DP-FTRL (BandMF / BLT / tree noise, cyclic participation) on MNIST, 1000 clients with
Dirichlet(0.5) label skew.

  python -m experiments.run --config experiments/configs/dp_ftrl/mnist.py --workdir runs/ftrl
  python -m experiments.run --config experiments/configs/dp_ftrl/mnist.py:strategy=tree \
      --workdir runs/ftrl_tree
  python -m experiments.run --config experiments/configs/dp_ftrl/mnist.py:variant=smoke \
      --workdir /tmp/smoke

Full: logistic regression, 100 clients a round in 10 fixed groups (every client participates
5 times in 50 rounds, 10 rounds apart), BandMF with 10 bands, sigma=1.0, C=0.5.
Smoke: 4 rounds, 20 clients in 4 groups of 5 on 2,000 examples, 2 bands, seconds.
"""

from experiments import config as config_lib
from experiments.configs.fl import FtrlConfig

VARIANTS = ("full", "smoke")


def get_config(arg=None) -> FtrlConfig:
    a = config_lib.parse_arg(arg, variant="full", dataset="mnist", model="logreg",
                             strategy="bandmf", variants=VARIANTS)
    cfg = FtrlConfig(name=f"dp_ftrl_{a['strategy']}_mnist", dataset=a["dataset"],
                     model=a["model"], variant=a["variant"], strategy=a["strategy"])
    if a["variant"] == "smoke":
        cfg = config_lib.apply_overrides(cfg, {"rounds": 4, "num_clients": 20,
                                               "clients_per_round": 5, "bands": 2,
                                               "optimizer_steps": 10,
                                               "max_train_examples": 2000, "local_steps": 2,
                                               "checkpoint_every": 2})
    return cfg


def get_sweep(arg=None):
    """Noise multipliers x seeds (smoke: two points that share one vmapped computation)."""
    a = config_lib.parse_arg(arg, extra_keys=("dataset", "model", "strategy"), variant="full",
                             variants=VARIANTS)
    if a["variant"] == "smoke":
        return [{"noise_multiplier": 1.0, "seed": 0}, {"noise_multiplier": 2.0, "seed": 1}]
    return [{"noise_multiplier": s, "seed": seed} for s in (0.5, 1.0, 2.0) for seed in (0, 1)]
