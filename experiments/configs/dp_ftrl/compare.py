"""DP-FedAvg (Poisson sampling) vs DP-FTRL BandMF vs DP-FTRL tree on MNIST at equal epsilon.

  nohup nice -n 10 python -m experiments.sweep \
      --config experiments/configs/dp_ftrl/compare.py:variant=cpu --workdir runs/ftrl_compare &
  python -m experiments.reproduce.dp_ftrl --workdir runs/ftrl_compare

Every method runs the same federation (1000 clients, Dirichlet(0.5) label skew, logistic
regression), the same number of rounds, clients per round (DP-FedAvg: Poisson rate 0.1, i.e.
100 expected; DP-FTRL: 10 fixed cyclic groups of 100) and local steps. Each point's noise
multiplier is calibrated so that its own accountant reports ``target_epsilon`` at delta=1e-5
after the last round (DP-FedAvg: Poisson-subsampled Gaussian, PLD; DP-FTRL: the strategy's
(k, b)-participation sensitivity, one Gaussian). With ``adaptive_clip`` the clip norm follows
the median of the update norms and the accountant composes the noisy counts.

Variants: ``cpu`` (the table: 3 methods x epsilon {2, 8} x adaptive {off, on} x seeds {0, 1, 2},
50 rounds; about 30 min of one core), ``smoke`` (2 points, 4 rounds, 2,000 examples, seconds).
"""

from experiments import config as config_lib
from experiments.configs.fl import METHODS, CompareConfig

VARIANTS = ("cpu", "smoke")
EPSILONS = (2.0, 8.0)
SEEDS = (0, 1, 2)


def get_config(arg=None) -> CompareConfig:
    a = config_lib.parse_arg(arg, variant="cpu", variants=VARIANTS)
    cfg = CompareConfig(name="dp_ftrl_compare_mnist", dataset="mnist", model="logreg",
                        variant=a["variant"], num_clients=1000, clients_per_round=100,
                        rounds=50, local_steps=5, clip_norm=0.5, target_epsilon=8.0,
                        eval_every=5, checkpoint_every=10)
    if a["variant"] == "smoke":
        cfg = config_lib.apply_overrides(cfg, {"rounds": 4, "num_clients": 20,
                                               "clients_per_round": 5, "bands": 2,
                                               "optimizer_steps": 10,
                                               "max_train_examples": 2000, "local_steps": 2,
                                               "eval_every": 1, "checkpoint_every": 2})
    return cfg


def get_sweep(arg=None):
    """method x target epsilon x adaptive clipping x seed (smoke: two points, one DP-FedAvg and
    one BandMF, both adaptive)."""
    if config_lib.parse_arg(arg, variant="cpu", variants=VARIANTS)["variant"] == "smoke":
        return [{"method": "dpfedavg", "target_epsilon": 2.0, "adaptive_clip": True, "seed": 0},
                {"method": "bandmf", "target_epsilon": 8.0, "adaptive_clip": True, "seed": 1}]
    return [{"method": m, "target_epsilon": e, "adaptive_clip": ad, "seed": s}
            for m in METHODS for e in EPSILONS for ad in (False, True) for s in SEEDS]
