"""Fig. 3 at its full grid over seeds that vary the noise AND the data: DP-GossipAvg / LDP /
DP-FedAvg on MNIST, 50 rounds, ε ∈ {0.5, 1, 2, 4, 8}, learning rates {31.6, 10, 3.16, 1}
(``fig3_mnist.py``'s ``full`` grid), with the validation split of ``cpu_val`` (5,000 training
examples held out, ``val_accuracy`` logged) so that the learning rate is chosen on validation.

  python -m experiments.sweep --config experiments/configs/gossip/fig3_mnist_full_seeds.py \
      --workdir runs/g3full                   # 5 methods x 20 grid points x seeds 0..4
  python -m experiments.sweep \
      --config "experiments/configs/gossip/fig3_mnist_full_seeds.py:seeds=0:1:2" --workdir ...

(to export and render it: a Fig. 3 setting entry, ``FIG3S``, in ``experiments/reproduce/gossip.py``
naming this file, plus a template block; not yet run to the end here).

Seed ``s`` sets both ``seed`` (the noise) and ``partition_seed`` (the IID split of the nodes,
the validation split and the evaluated node), so the seeds vary partition and noise (issue 39
item 2; ``fig3_mnist.py:variant=cpu_val`` varies only the noise). The graph (``graph_seed``)
is the paper's one fixed ER(100, 0.2) draw. Arg: ``seeds`` (default ``0:1:2:3:4``),
``variant=smoke`` (a tiny grid, two seeds).
"""

import dataclasses

from experiments import config as config_lib
from experiments.configs.gossip import fig3_mnist
from experiments.configs.gossip._common import METHODS

VARIANTS = ("full", "smoke")
SEEDS = (0, 1, 2, 3, 4)
VAL_SIZE = 5000


def _arg(arg):
    return config_lib.parse_arg(arg, variant="full", seeds=(), variants=VARIANTS)


def get_config(arg=None):
    a = _arg(arg)
    cfg = fig3_mnist.get_config(f"variant={a['variant']}")
    if a["variant"] == "smoke":
        return dataclasses.replace(cfg, val_size=100, name="fig3_mnist_full_seeds_smoke")
    return dataclasses.replace(cfg, val_size=VAL_SIZE, name="fig3_mnist_full_seeds")


def get_sweep(arg=None):
    """seed x method x ε x learning rate (seed outermost: a sweep cut short has every method
    at its first seeds); seed ``s`` also sets ``partition_seed = s``."""
    a = _arg(arg)
    epsilons, lrs = fig3_mnist.GRID[a["variant"]]
    methods = ("gossip_ss_thm3_certified", "fedavg") if a["variant"] == "smoke" else METHODS
    seeds = a["seeds"] or (SEEDS[:2] if a["variant"] == "smoke" else SEEDS)
    return [{"method": m, "target_epsilon": e, "learning_rate": lr, "seed": s,
             "partition_seed": s}
            for s in seeds for m in methods for e in epsilons for lr in lrs]
