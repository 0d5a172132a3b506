"""ULDP-FL Fig. 5: MNIST (5 silos, T = 200, B = 64, CNN of 21,840 parameters).

  python -m experiments.run --config experiments/configs/uldp/fig5_mnist.py:method=ULDP-AVG-w \
      --workdir runs/uldp/fig5
  python -m experiments.run --config "experiments/configs/uldp/fig5_mnist.py:variant=smoke" \
      --workdir /tmp/smoke

Panels (a) |U|=100 uniform, (b) 100 zipf, (c) 100 zipf-noniid, (d)-(f) the same with 10,000
users (n ~ 6). ULDP-NAIVE is not run (commented out in the authors' script). Final ULDP epsilon
16.513 (paper mode). The full setting needs hours on a CPU; ``cpu``:
T = 10, Q = 2 on 3,000 records; ``smoke`` on 200 records of 10 users, 2 rounds, 1 epoch,
evaluated on 500 test images (``experiments.papers.uldp.SMOKE_TEST_RECORDS``).

GPU estimate (``experiments.bench.flops``): CNNMnist, 2.9e6 training FLOPs per example (3 x
forward), 200 rounds x Q = 50 x ~54,000 training records = 5.4e8 examples, 1.6e15 FLOPs: ~7 min per
run at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s), more with the per-(user, silo) padding
of ULDP-AVG/SGD.
"""

from experiments.configs.uldp import _common

VARIANTS = _common.VARIANTS

METHODS = ("DEFAULT", "ULDP-GROUP-max", "ULDP-GROUP-median", "ULDP-GROUP-2", "ULDP-GROUP-8",
           "ULDP-SGD", "ULDP-AVG", "ULDP-AVG-w")


def get_config(arg=None) -> _common.UldpConfig:
    return _common.figure_config(arg, figure="fig5_mnist", dataset="mnist", num_users=100,
                                distribution="uniform",
                                cpu={"rounds": 10, "local_epochs": 2, "max_records": 3000},
                                smoke={"max_records": 200, "num_users": 10})


def get_sweep(arg=None):
    return _common.sweep(get_config, arg, METHODS, (100, 10000), ("uniform", "zipf", "zipf-noniid"))
