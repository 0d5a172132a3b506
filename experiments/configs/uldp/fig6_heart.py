"""ULDP-FL Fig. 6: HeartDisease (4 silos, T = 50, B = 4), accuracy vs rounds and epsilon.

  python -m experiments.run --config experiments/configs/uldp/fig6_heart.py:method=ULDP-AVG-w \
      --workdir runs/uldp/fig6
  python -m experiments.run --config "experiments/configs/uldp/fig6_heart.py:variant=smoke" \
      --workdir /tmp/smoke
  python -m experiments.sweep --config experiments/configs/uldp/fig6_heart.py --where num_users=50 \
      --where distribution=zipf --workdir runs/heart_b   # panel (b): methods x seeds 0,1,3,6,10

Panels (a) |U|=50 uniform, (b) 50 zipf, (c) 200 uniform, (d) 200 zipf; methods of
``privacy_utility.sh``. Final ULDP epsilon 7.077 (paper mode; delta 1e-5, sigma 5).
Full: minutes per method on 2 CPU cores (GROUP is the slowest: ~2,500 DP-SGD steps a round).
Sweep arg ``seeds=0:1:3`` replaces the paper's seeds. cpu: T = 20, Q = 10.
smoke: 2 rounds, 1 epoch, seconds.

GPU estimate (``experiments.bench.flops``): logistic regression on 13 features, 78 training
FLOPs per example (3 x forward), 50 rounds x Q = 50 x 486 records = 1.2e6 examples, 9.5e7 FLOPs:
2e-5 s at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s); the ~2,500 sequential local steps a
round are latency-bound, so a GPU is no faster than the measured ~30 s per run on 2 CPU cores.
"""

from experiments.configs.uldp import _common

VARIANTS = _common.VARIANTS


def get_config(arg=None) -> _common.UldpConfig:
    return _common.figure_config(arg, figure="fig6_heart", dataset="heart_disease", num_users=50,
                                distribution="uniform", cpu={"rounds": 20, "local_epochs": 10})


def get_sweep(arg=None):
    return _common.sweep(get_config, arg, _common.METHODS, (50, 200), ("uniform", "zipf"))
