"""Config of centralized-server FL experiments (FedAvg, DP-FedAvg) on image/tabular sets.

:class:`FLConfig` is data; its builder is :func:`experiments.papers.fedavg.run_spec`.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar


@dataclasses.dataclass(frozen=True, kw_only=True)
class FLConfig:
    """FedAvg / DP-FedAvg on a classification set. All fields are overridable with --set."""

    builder: ClassVar[str] = "experiments.papers.fedavg:run_spec"
    derived_hparams: ClassVar[tuple] = ("target_epsilon",)  # only sets noise_multiplier

    name: str = "dp_fedavg"
    variant: str = "full"
    algorithm: str = "dp_fedavg"  # "fedavg" | "dp_fedavg"
    dataset: str = "mnist"
    data_dir: str | None = None
    max_train_examples: int | None = None
    model: str = "logreg"
    num_clients: int = 1000
    partition: str = "dirichlet"  # "dirichlet" | "iid" | "shards"
    alpha: float = 0.5
    rounds: int = 50
    local_steps: int = 5
    batch_size: int = 32
    client_lr: float = 0.2
    server_lr: float = 1.0
    clip_norm: float = 0.5
    noise_multiplier: float = 1.0
    # set: the builder calibrates noise_multiplier (ignored) so that the run's own accountant
    # reports this epsilon at delta after `rounds` rounds (jaxfl.accounting calibration)
    target_epsilon: float | None = None
    adaptive_clip: bool = False  # Andrew et al. 2021; clip_norm is then the initial clip norm
    target_quantile: float = 0.5  # adaptive clipping: target quantile of update norms
    clip_lr: float = 0.2  # adaptive clipping: geometric learning rate
    count_noise: float = 5.0  # adaptive clipping: noise std of the unclipped count (m / 20)
    sampling_rate: float = 0.1
    delta: float = 1e-5
    seed: int = 0
    client_batch: int | str | None = "auto"  # cohort layout: "auto" (engine), int, none (vmap)
    eval_every: int = 1
    checkpoint_every: int = 10

    def __post_init__(self):
        from jaxfl import layout, validate
        validate.one_of("algorithm", self.algorithm, ("fedavg", "dp_fedavg"))
        validate.one_of("partition", self.partition, ("dirichlet", "iid", "shards"))
        validate.positive_int("num_clients", self.num_clients)
        validate.positive_int("rounds", self.rounds, minimum=0)
        validate.positive_int("local_steps", self.local_steps)
        validate.positive_int("batch_size", self.batch_size)
        validate.positive("client_lr", self.client_lr, validate.JaxflValueError)
        validate.positive("server_lr", self.server_lr, validate.JaxflValueError)
        validate.positive("alpha", self.alpha, validate.JaxflValueError)
        validate.positive("clip_norm", self.clip_norm)
        validate.positive("noise_multiplier", self.noise_multiplier)
        validate.probability("sampling_rate", self.sampling_rate)
        validate.delta(self.delta)
        if self.target_epsilon is not None:
            validate.positive("target_epsilon", self.target_epsilon)
        validate.probability("target_quantile", self.target_quantile)
        validate.positive("clip_lr", self.clip_lr, validate.JaxflValueError)
        validate.positive("count_noise", self.count_noise)
        if self.algorithm == "fedavg" and (self.adaptive_clip or self.target_epsilon):
            raise validate.JaxflValueError(
                "Expected algorithm='dp_fedavg' with adaptive_clip or target_epsilon (FedAvg "
                "is not private).")
        if isinstance(self.client_batch, str) and self.client_batch.isdigit():
            object.__setattr__(self, "client_batch", int(self.client_batch))  # from --set
        layout.resolve(self.client_batch, "cohort")  # validates


__all__ = ["FLConfig", "FtrlConfig", "CompareConfig"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class FtrlConfig(FLConfig):
    """DP-FTRL (matrix-factorization DP-FedAvg, cyclic participation) on a classification set.

    ``clients_per_round`` replaces ``sampling_rate`` (ignored): the clients are split into
    ``num_clients // clients_per_round`` fixed groups trained in turn.
    """

    builder: ClassVar[str] = "experiments.papers.dp_ftrl:run_spec"

    name: str = "dp_ftrl"
    algorithm: str = "dp_ftrl"
    clients_per_round: int = 100
    strategy: str = "bandmf"  # "bandmf" | "blt" | "tree"
    bands: int | None = None  # BandMF bands (None: the number of groups, capped at rounds)
    optimizer_steps: int = 100  # jax_privacy strategy optimisation

    def __post_init__(self):
        from jaxfl import validate
        validate.one_of("algorithm", self.algorithm, ("dp_ftrl",))
        validate.one_of("strategy", self.strategy, ("bandmf", "blt", "tree"))
        validate.positive_int("clients_per_round", self.clients_per_round)
        validate.positive_int("optimizer_steps", self.optimizer_steps)
        if self.bands is not None:
            validate.positive_int("bands", self.bands)
        object.__setattr__(self, "algorithm", "dp_fedavg")  # reuse FLConfig's checks
        try:
            super().__post_init__()
        finally:
            object.__setattr__(self, "algorithm", "dp_ftrl")


METHODS = ("dpfedavg", "bandmf", "tree")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CompareConfig(FtrlConfig):
    """DP-FedAvg (Poisson sampling, rate ``clients_per_round / num_clients``) or DP-FTRL
    (``method`` = its strategy, cyclic groups of ``clients_per_round``) on one federation with
    the same rounds, cohort size and local training (``strategy`` is ignored: ``method``
    decides). Builder: :func:`experiments.papers.dp_ftrl.compare_run_spec`."""

    builder: ClassVar[str] = "experiments.papers.dp_ftrl:compare_run_spec"

    name: str = "dp_ftrl_compare"
    method: str = "bandmf"  # "dpfedavg" | "bandmf" | "tree"

    def __post_init__(self):
        from jaxfl import validate
        validate.one_of("method", self.method, METHODS)
        super().__post_init__()
