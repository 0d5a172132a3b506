"""ULDP-FL Fig. 7: TcgaBrca (6 silos, T = 50, B = 8), C-index vs rounds and epsilon.

  python -m experiments.run --config experiments/configs/uldp/fig7_tcga.py:method=ULDP-AVG-w \
      --workdir runs/uldp/fig7
  python -m experiments.run --config "experiments/configs/uldp/fig7_tcga.py:variant=smoke" \
      --workdir /tmp/smoke
  python -m experiments.sweep --config experiments/configs/uldp/fig7_tcga.py --where num_users=50 \
      --where distribution=zipf --workdir runs/tcga_b   # panel (b): methods x seeds 0,1,3,6,10

Panels (a) |U|=50 uniform, (b) 50 zipf, (c) 200 uniform, (d) 200 zipf; methods of
``privacy_utility.sh``. Final ULDP epsilon 7.077 (paper mode; delta 1e-5, sigma 5).
Full: minutes per method on 2 CPU cores (GROUP is the slowest: ~1,600 DP-SGD steps a round).
Sweep arg ``seeds=0:1:3`` replaces the paper's seeds. cpu: T = 20, Q = 10.
smoke: 2 rounds, 1 epoch, seconds.

GPU estimate (``experiments.bench.flops``): Cox model on 39 features, 309 training FLOPs per
example (3 x forward), 50 rounds x Q = 50 x 866 records = 2.2e6 examples, 6.7e8 FLOPs: 2e-4 s at
20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s); latency-bound sequential steps dominate, as for
fig6_heart.py.
"""

from experiments.configs.uldp import _common

VARIANTS = _common.VARIANTS


def get_config(arg=None) -> _common.UldpConfig:
    return _common.figure_config(arg, figure="fig7_tcga", dataset="tcga_brca", num_users=50,
                                distribution="uniform", cpu={"rounds": 20, "local_epochs": 10},
                                smoke={"num_users": 200})  # the other |U|: 2 buckets, not 3


def get_sweep(arg=None):
    return _common.sweep(get_config, arg, _common.METHODS, (50, 200), ("uniform", "zipf"))
