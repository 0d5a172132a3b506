"""Fig. 3: DP-GossipAvg (Alg. 2) vs full-batch DP-FedAvg (Alg. 1), multinomial logistic
regression on MNIST, 100 IID nodes x 600 examples, ER(100, 0.2), closed-neighbourhood W, C = 1,
B = 600, zero init; test accuracy of one random node vs the mean pairwise ε (δ = 1e-5).

  python -m experiments.sweep --config experiments/configs/gossip/fig3_mnist.py:variant=cpu \
      --workdir runs/g3
  python -m experiments.sweep --config experiments/configs/gossip/fig3_mnist.py:variant=smoke \
      --workdir /tmp/g3

One point per (method, target ε, learning rate). σ is calibrated by the library to the target
mean pairwise ε of each method's accounting: Thm 3 / Thm 4 as published (paper mode), Thm 3
certified, and LDP (Δ² = T, the only certified bound for plain messages under adaptivity, see
jaxfl.sensitivity.views); DP-FedAvg uses μ = √T/σ. The ε x learning-rate grid of one method is one
vmapped computation (target_epsilon is a derived hyperparameter, the noise multiplier a traced one).
Full: 50 rounds, ε ∈ {0.5, 1, 2, 4, 8}, learning rates {31.6, 10, 3.16, 1}: tens of minutes on 2
cores (the all-pairs TM-3 accounting dominates). cpu variant: 30 rounds, ε ∈ {0.5, 2}, learning
rates {31.6, 10, 3.16}. cpu_val: the cpu grid x seeds 0, 1, 2 (``seeds=0:1:2:3:4`` for more;
the seed draws the noise, the data split is fixed), 5,000 training examples held out as a
validation split (550 per node), ``val_accuracy`` logged next to ``test_accuracy`` so that the
learning rate is chosen on validation; ~2 min per (method, seed) on 2 cores. See
docs/reproduction/gossip.md for the measured accuracies.

GPU estimate (``experiments.bench.flops``): logistic regression, 4.7e4 training FLOPs per
example (3 x forward), 50 rounds x 100 nodes x 600 examples = 3.0e6 per point, 1.4e11 FLOPs: 0.04 s
per point at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s) (100 points of the full grid: 4 s);
the all-pairs TM-3 noise calibration (CPU, float64) dominates.
"""

import dataclasses

from experiments import config as config_lib
from experiments.configs.gossip._common import METHODS, MnistConfig

GRID = {"full": ((0.5, 1.0, 2.0, 4.0, 8.0), (31.6, 10.0, 3.16, 1.0)),
        "cpu": ((0.5, 2.0), (31.6, 10.0, 3.16)),
        "cpu_val": ((0.5, 2.0), (31.6, 10.0, 3.16)),
        "smoke": ((2.0, 4.0), (1.0, 3.16))}
VARIANTS = tuple(GRID)


VAL_SEEDS = (0, 1, 2)


def _arg(arg):
    return config_lib.parse_arg(arg, variant="full", seeds=(), variants=VARIANTS)


def get_config(arg=None) -> MnistConfig:
    a = _arg(arg)
    cfg = MnistConfig(variant=a["variant"])
    if a["variant"] in ("cpu", "cpu_val"):
        cfg = dataclasses.replace(cfg, rounds=30, eval_every=5)
    if a["variant"] == "cpu_val":
        cfg = dataclasses.replace(cfg, val_size=5000, name="fig3_mnist_val")
    if a["variant"] == "smoke":
        cfg = dataclasses.replace(cfg, n=10, p=0.5, per_node=50, normalizer=50.0, rounds=4,
                                  eval_every=2, checkpoint_every=2, learning_rate=1.0,
                                  name="fig3_mnist_smoke")
    return cfg


def get_sweep(arg=None):
    """method x ε x learning rate, crossed with ``seeds`` when given (cpu_val: 0, 1, 2)."""
    a = _arg(arg)
    epsilons, lrs = GRID[a["variant"]]
    methods = ("gossip_ss_thm3_certified",) if a["variant"] == "smoke" else METHODS
    seeds = a["seeds"] or (VAL_SEEDS if a["variant"] == "cpu_val" else (None,))
    return [{"method": m, "target_epsilon": e, "learning_rate": lr,
             **({} if s is None else {"seed": s})}
            for m in methods for e in epsilons for lr in lrs for s in seeds]
