"""ULDP-FL Fig. 4: Creditcard (5 silos, T = 100, B = 64), hard-label AUC and epsilon.

  python -m experiments.run --config experiments/configs/uldp/fig4_creditcard.py:method=ULDP-AVG \
      --set data_dir=/path/with/creditcard --workdir runs/uldp/fig4

Needs ``creditcard/creditcard.csv`` (Kaggle mlg-ulb; not shipped with jaxfl's data folder).
Panels (a) |U|=100 uniform, (b) 100 zipf, (c) 1000 uniform, (d) 1000 zipf. Final ULDP epsilon
10.726 (paper mode). cpu: T = 30, Q = 5. smoke: 2 rounds.
"""

from experiments.configs.uldp import common

METHODS = ("DEFAULT", "ULDP-NAIVE", "ULDP-GROUP-max", "ULDP-GROUP-median", "ULDP-GROUP-2",
           "ULDP-GROUP-8", "ULDP-SGD", "ULDP-AVG", "ULDP-AVG-w")


def get_config(arg=None) -> common.UldpConfig:
    return common.figure_config(arg, figure="fig4_creditcard", dataset="creditcard",
                                num_users=100, distribution="uniform",
                                cpu={"rounds": 30, "local_epochs": 5})


def get_sweep(arg=None):
    smoke = common.smoke_sweep(arg)
    if smoke is not None:
        return smoke
    return common.sweep(get_config, arg, METHODS, (100, 1000), ("uniform", "zipf"))
