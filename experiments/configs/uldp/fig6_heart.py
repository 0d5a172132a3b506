"""ULDP-FL Fig. 6: HeartDisease (4 silos, T = 50, B = 4), accuracy vs rounds and epsilon.

  python -m experiments.run --config experiments/configs/uldp/fig6_heart.py:method=ULDP-AVG-w \
      --workdir runs/uldp/fig6
  python -m experiments.run --config "experiments/configs/uldp/fig6_heart.py:variant=smoke" \
      --workdir /tmp/smoke

Panels (a) |U|=50 uniform, (b) 50 zipf, (c) 200 uniform, (d) 200 zipf; methods of
``privacy_utility.sh``. Final ULDP epsilon 7.077 (paper mode; delta 1e-5, sigma 5).
Full: minutes per method on 2 CPU cores (GROUP is the slowest: ~2,500 DP-SGD steps a round).
cpu: T = 20, Q = 10. smoke: 2 rounds, 1 epoch, seconds.
"""

from experiments.configs.uldp import common

METHODS = ("DEFAULT", "ULDP-NAIVE", "ULDP-GROUP-max", "ULDP-GROUP-median", "ULDP-GROUP-2",
           "ULDP-GROUP-8", "ULDP-SGD", "ULDP-AVG", "ULDP-AVG-w")


def get_config(arg=None) -> common.UldpConfig:
    return common.figure_config(arg, figure="fig6_heart", dataset="heart_disease", num_users=50,
                                distribution="uniform", cpu={"rounds": 20, "local_epochs": 10})


def get_sweep(arg=None):
    smoke = common.smoke_sweep(arg)
    if smoke is not None:
        return smoke
    return common.sweep(get_config, arg, METHODS, (50, 200), ("uniform", "zipf"))
