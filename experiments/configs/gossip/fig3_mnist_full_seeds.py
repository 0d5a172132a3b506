"""Fig. 3 at its full grid over seeds that vary the noise AND the data: DP-GossipAvg / LDP /
DP-FedAvg on MNIST, 50 rounds, ε ∈ {0.5, 1, 2, 4, 8}, learning rates {31.6, 10, 3.16, 1}
(``fig3_mnist.py``'s ``full`` grid), with the validation split of ``cpu_val`` (5,000 training
examples held out, ``val_accuracy`` logged) so that the learning rate is chosen on validation.

  python -m experiments.sweep --config experiments/configs/gossip/fig3_mnist_full_seeds.py \
      --workdir runs/g3full                   # 5 methods x 20 grid points x seeds 0..4
  python -m experiments.sweep \
      --config "experiments/configs/gossip/fig3_mnist_full_seeds.py:seeds=0:1:2" --workdir ...

Exported and rendered as the Fig. 3 setting ``fig3full`` of ``experiments/reproduce/gossip.py``
(``FIG3S``; block ``fig3_full_seeds`` of ``templates/gossip.md``) at its ``reduced`` variant.

Seed ``s`` sets both ``seed`` (the noise) and ``partition_seed`` (the IID split of the nodes,
the validation split and the evaluated node), so the seeds vary partition and noise (issue 39
item 2; ``fig3_mnist.py:variant=cpu_val`` varies only the noise). The graph (``graph_seed``)
is the paper's one fixed ER(100, 0.2) draw. Arg: ``seeds`` (default ``0:1:2:3:4``),
``variant=smoke`` (a tiny grid, two seeds), ``variant=reduced``.

``reduced`` (the committed run: the full grid is ~4-5 h on 2 free cores, more than a shared
machine gives in a session) answers the same Fig. 3 claims in two pre-declared stages:
stage 1, seed 0, the four methods the claims compare (:data:`CLAIM_METHODS`: Thm-3 gossip in
paper and certified mode, LDP, DP-FedAvg) x the 5 epsilons x the 4 learning rates; stage 2,
seeds 1..4 of each (method, ε) at the learning rate with the best seed-0 *validation* accuracy
(:data:`LR_SEED0`, written after stage 1 and checked against the committed data by
``tests/experiments/gossip_fig3_full_test.py``). Every reported cell is then 5 seeds at one
learning rate chosen without seeing test accuracy. Same config (and point hashes) as ``full``:
every reduced point is a point of the full grid.
"""

import dataclasses

from experiments import config as config_lib
from experiments.configs.gossip import fig3_mnist
from experiments.configs.gossip._common import METHODS

VARIANTS = ("full", "reduced", "smoke")
# ``reduced`` is a selection of the ``full`` grid's points: its configs are ``full``'s
SWEEP_ONLY_VARIANTS = {"reduced": "full"}
SEEDS = (0, 1, 2, 3, 4)
VAL_SIZE = 5000
CLAIM_METHODS = ("gossip_ss_thm3_paper", "gossip_ss_thm3_certified", "gossip_ldp", "fedavg")
# (method, ε) -> the learning rate of the best seed-0 validation accuracy (stage 1 of
# ``reduced``); a (method, ε) not listed runs stage 1 only.
LR_SEED0: dict[tuple[str, float], float] = {
    ("gossip_ss_thm3_certified", 0.5): 3.16, ("gossip_ss_thm3_certified", 1.0): 10.0,
    ("gossip_ss_thm3_certified", 2.0): 10.0, ("gossip_ss_thm3_certified", 4.0): 10.0,
    ("gossip_ss_thm3_certified", 8.0): 10.0,
    ("gossip_ss_thm3_paper", 0.5): 10.0, ("gossip_ss_thm3_paper", 1.0): 10.0,
    ("gossip_ss_thm3_paper", 2.0): 10.0, ("gossip_ss_thm3_paper", 4.0): 10.0,
    ("gossip_ss_thm3_paper", 8.0): 10.0,
    ("gossip_ldp", 0.5): 3.16, ("gossip_ldp", 1.0): 3.16, ("gossip_ldp", 2.0): 10.0,
    ("gossip_ldp", 4.0): 10.0, ("gossip_ldp", 8.0): 10.0,
    ("fedavg", 0.5): 10.0, ("fedavg", 1.0): 10.0, ("fedavg", 2.0): 10.0, ("fedavg", 4.0): 10.0,
    ("fedavg", 8.0): 10.0}


def _arg(arg):
    return config_lib.parse_arg(arg, variant="full", seeds=(), variants=VARIANTS)


def get_config(arg=None):
    a = _arg(arg)
    variant = "full" if a["variant"] == "reduced" else a["variant"]
    cfg = fig3_mnist.get_config(f"variant={variant}")
    if a["variant"] == "smoke":
        return dataclasses.replace(cfg, val_size=100, name="fig3_mnist_full_seeds_smoke")
    return dataclasses.replace(cfg, val_size=VAL_SIZE, name="fig3_mnist_full_seeds")


def get_sweep(arg=None):
    """seed x method x ε x learning rate (seed outermost: a sweep cut short has every method
    at its first seeds); seed ``s`` also sets ``partition_seed = s``. ``reduced``: the first
    seed's full grid of :data:`CLAIM_METHODS`, then the other seeds at :data:`LR_SEED0`."""
    a = _arg(arg)
    if a["variant"] == "reduced":
        first, *rest = a["seeds"] or SEEDS
        epsilons, lrs = fig3_mnist.GRID["full"]
        point = lambda m, e, lr, s: {"method": m, "target_epsilon": e, "learning_rate": lr,
                                     "seed": s, "partition_seed": s}
        return ([point(m, e, lr, first) for m in CLAIM_METHODS for e in epsilons for lr in lrs]
                + [point(m, e, LR_SEED0[(m, e)], s) for s in rest for m in CLAIM_METHODS
                   for e in epsilons if (m, e) in LR_SEED0])
    epsilons, lrs = fig3_mnist.GRID[a["variant"]]
    methods = ("gossip_ss_thm3_certified", "fedavg") if a["variant"] == "smoke" else METHODS
    seeds = a["seeds"] or (SEEDS[:2] if a["variant"] == "smoke" else SEEDS)
    return [{"method": m, "target_epsilon": e, "learning_rate": lr, "seed": s,
             "partition_seed": s}
            for s in seeds for m in methods for e in epsilons for lr in lrs]
