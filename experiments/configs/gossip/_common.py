"""Configs of the gossip-DP reproduction (Koskela & Kulkarni 2025, Sec. 4): data only.

Their builder is :func:`experiments.papers.gossip.run_spec`.

* :class:`StudyConfig`: a privacy study (accounting only, no training): per node-pair
  epsilon of one view after T = 1..T rounds. Fig. 1 (TM-1, a few observers of one target;
  the report's ``details["curve"]`` holds each pair's Δ² per horizon) and Fig. 2 (all ordered
  pairs of ER(50, 0.2); the curve holds the mean pairwise ε per horizon). Every run reports
  the ``strict`` (certified sensitivities) and the ``paper`` (all-ones pattern) numbers.
* :class:`MnistConfig`: Fig. 3, DP-GossipAvg / LDP / DP-FedAvg on MNIST with σ calibrated to
  a target mean pairwise ε (``target_epsilon``, a derived hyperparameter: the builder turns it
  into the traced noise multiplier, so an ε x learning-rate grid is one vmapped sweep).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from experiments.configs.base import RunConfig, TrainingConfig, checked
from jaxfl import validate

VIEWS = ("tm1", "tm3", "tm4", "tm4_exact", "ldp")
MIXINGS = ("maxdeg", "closed", "mh")
METHODS = ("gossip_ss_thm3_paper", "gossip_p_thm4_paper", "gossip_ss_thm3_certified",
           "gossip_ldp", "fedavg")


@dataclasses.dataclass(frozen=True, kw_only=True)
class StudyConfig(RunConfig):
    """Pairwise network-DP of one gossip view vs T (accounting only)."""

    builder = "experiments.papers.gossip:run_spec"

    name: str = "fig1_er"
    graph: str = checked("er", ("er", "facebook"))                 # "er" | "facebook"
    n: int = 100
    p: float = 0.2
    graph_seed: int = 1
    mixing: str = checked("maxdeg", MIXINGS)
    view: str = checked("tm1", VIEWS)
    target: int | None = 37           # None: every node is a target
    observers_per_kind: int | None = 1  # k smallest-index neighbours + non-neighbours; None: all
    noise_multiplier: float = checked(5.0, "positive")
    T: int = checked(100, "int")
    certified_horizons: tuple | None = None  # horizons of the certified curve (None: 1..T)
    data_dir: str | None = None

    def check(self):
        for h in self.certified_horizons or ():
            validate.positive_int("certified horizon", h)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MnistConfig(TrainingConfig):
    """Fig. 3: decentralized logistic regression on MNIST at a target mean pairwise ε."""

    builder = "experiments.papers.gossip:run_spec"
    derived_hparams: ClassVar[tuple] = ("target_epsilon",)

    name: str = "fig3_mnist"
    method: str = checked("gossip_ss_thm3_certified", METHODS)
    n: int = checked(100, "int")
    p: float = 0.2
    graph_seed: int = 3
    mixing: str = checked("closed", MIXINGS)
    per_node: int = checked(600, "int")
    partition_seed: int = 0           # IID split, validation split and the evaluated node
    val_size: int = checked(0, "count")  # training examples held out for validation (0: none)
    clip_norm: float = checked(1.0, "positive")
    normalizer: float = 600.0         # public B = nominal shard size (unstated)
    target_epsilon: float = checked(2.0, "positive")       # mean pairwise ε (FedAvg: ε of μ = √T/σ)
    learning_rate: float = checked(10.0, "positive_value")
    eval_every: int = 10
    data_dir: str | None = None
