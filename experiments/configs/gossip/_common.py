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

from jaxfl import validate

VIEWS = ("tm1", "tm3", "tm4", "tm4_exact", "ldp")
MIXINGS = ("maxdeg", "closed", "mh")
METHODS = ("gossip_ss_thm3_paper", "gossip_p_thm4_paper", "gossip_ss_thm3_certified",
           "gossip_ldp", "fedavg")


@dataclasses.dataclass(frozen=True, kw_only=True)
class StudyConfig:
    """Pairwise network-DP of one gossip view vs T (accounting only)."""

    builder: ClassVar[str] = "experiments.papers.gossip:run_spec"

    name: str = "fig1_er"
    variant: str = "full"
    graph: str = "er"                 # "er" | "facebook"
    n: int = 100
    p: float = 0.2
    graph_seed: int = 1
    mixing: str = "maxdeg"
    view: str = "tm1"
    target: int | None = 37           # None: every node is a target
    observers_per_kind: int | None = 1  # k smallest-index neighbours + non-neighbours; None: all
    noise_multiplier: float = 5.0
    delta: float = 1e-5
    T: int = 100
    certified_horizons: tuple | None = None  # horizons of the certified curve (None: 1..T)
    eval_every: int = 1
    seed: int = 0
    data_dir: str | None = None

    def __post_init__(self):
        validate.one_of("graph", self.graph, ("er", "facebook"))
        validate.one_of("mixing", self.mixing, MIXINGS)
        validate.one_of("view", self.view, VIEWS)
        validate.positive_int("T", self.T)
        validate.positive_int("eval_every", self.eval_every)
        validate.positive("noise_multiplier", self.noise_multiplier)
        validate.delta(self.delta)
        if self.certified_horizons is not None:
            for h in self.certified_horizons:
                validate.positive_int("certified horizon", h)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MnistConfig:
    """Fig. 3: decentralized logistic regression on MNIST at a target mean pairwise ε."""

    builder: ClassVar[str] = "experiments.papers.gossip:run_spec"
    derived_hparams: ClassVar[tuple] = ("target_epsilon",)

    name: str = "fig3_mnist"
    variant: str = "full"
    method: str = "gossip_ss_thm3_certified"
    n: int = 100
    p: float = 0.2
    graph_seed: int = 3
    mixing: str = "closed"
    per_node: int = 600
    partition_seed: int = 0           # IID split, validation split and the evaluated node
    val_size: int = 0                 # training examples held out for validation (0: none)
    rounds: int = 50
    clip_norm: float = 1.0
    normalizer: float = 600.0         # public B = nominal shard size (unstated)
    delta: float = 1e-5
    target_epsilon: float = 2.0       # mean pairwise ε (FedAvg: ε of μ = √T/σ)
    learning_rate: float = 10.0
    seed: int = 0
    eval_every: int = 10
    checkpoint_every: int = 10
    data_dir: str | None = None

    def __post_init__(self):
        validate.one_of("method", self.method, METHODS)
        validate.one_of("mixing", self.mixing, MIXINGS)
        validate.positive_int("n", self.n)
        validate.positive_int("per_node", self.per_node)
        validate.positive_int("val_size", self.val_size, minimum=0)
        validate.positive_int("rounds", self.rounds)
        validate.positive("target_epsilon", self.target_epsilon)
        validate.positive("learning_rate", self.learning_rate, validate.JaxflValueError)
        validate.positive("clip_norm", self.clip_norm)
        validate.delta(self.delta)
