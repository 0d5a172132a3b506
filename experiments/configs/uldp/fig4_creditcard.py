"""ULDP-FL Fig. 4: Creditcard (5 silos, T = 100, B = 64), hard-label AUC and epsilon.

  python -m experiments.run --config experiments/configs/uldp/fig4_creditcard.py:method=ULDP-AVG \
      --set data_dir=/path/with/creditcard --workdir runs/uldp/fig4

Needs ``creditcard/creditcard.csv`` (Kaggle mlg-ulb; not shipped with jaxfl's data folder).
Panels (a) |U|=100 uniform, (b) 100 zipf, (c) 1000 uniform, (d) 1000 zipf. Final ULDP epsilon
10.726 (paper mode). cpu: T = 30, Q = 5. smoke: 2 rounds.

GPU estimate (``experiments.bench.flops``): fraud net, 3.3e4 training FLOPs per example (3 x
forward), 100 rounds x Q = 50 x ~22,100 training records = 1.1e8 examples, 3.7e12 FLOPs: ~1 s per
run at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s); sequential local steps and accounting
dominate.
"""

from experiments.configs.uldp import _common

VARIANTS = _common.VARIANTS


def get_config(arg=None) -> _common.UldpConfig:
    return _common.figure_config(arg, figure="fig4_creditcard", dataset="creditcard",
                                num_users=100, distribution="uniform",
                                cpu={"rounds": 30, "local_epochs": 5})


def get_sweep(arg=None):
    return _common.sweep(get_config, arg, _common.METHODS, (100, 1000), ("uniform", "zipf"))
