"""Config of centralized-server FL experiments (FedAvg, DP-FedAvg) on image/tabular sets.

:class:`FLConfig` is data; its builder is :func:`experiments.papers.fedavg.run_spec`.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from experiments.configs.base import DpTrainingConfig, checked
from jaxfl import validate


@dataclasses.dataclass(frozen=True, kw_only=True)
class FLConfig(DpTrainingConfig):
    """FedAvg / DP-FedAvg on a classification set. All fields are overridable with --set
    (``rounds``, ``batch_size``, ``clip_norm``, ``noise_multiplier``, ``sampling_rate``,
    ``data_dir``: :class:`~experiments.configs.base.DpTrainingConfig`, with these runs'
    defaults)."""

    builder = "experiments.papers.fedavg:run_spec"
    derived_hparams: ClassVar[tuple] = ("target_epsilon",)  # only sets noise_multiplier

    name: str = "dp_fedavg"
    algorithm: str = checked("dp_fedavg", ("fedavg", "dp_fedavg"))
    dataset: str = "mnist"
    max_train_examples: int | None = None
    model: str = "logreg"
    num_clients: int = checked(1000, "int")
    partition: str = checked("dirichlet", ("dirichlet", "iid", "shards"))
    alpha: float = checked(0.5, "positive_value")
    local_steps: int = checked(5, "int")
    client_lr: float = checked(0.2, "positive_value")
    server_lr: float = checked(1.0, "positive_value")
    # set: the builder calibrates noise_multiplier (ignored) so that the run's own accountant
    # reports this epsilon at delta after `rounds` rounds (jaxfl.accounting calibration)
    target_epsilon: float | None = checked(None, "positive?")
    adaptive_clip: bool = False  # Andrew et al. 2021; clip_norm is then the initial clip norm
    # adaptive clipping: target quantile of update norms, geometric learning rate, noise std
    # of the unclipped count (m / 20)
    target_quantile: float = checked(0.5, "probability")
    clip_lr: float = checked(0.2, "positive_value")
    count_noise: float = checked(5.0, "positive")
    client_batch: int | str | None = "auto"  # cohort layout: "auto" (engine), int, none (vmap)

    def check(self):
        from jaxfl import layout
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

    builder = "experiments.papers.dp_ftrl:run_spec"

    name: str = "dp_ftrl"
    algorithm: str = checked("dp_ftrl", ("dp_ftrl",))
    clients_per_round: int = checked(100, "int")
    strategy: str = checked("bandmf", ("bandmf", "blt", "tree"))
    # BandMF bands (None: the number of groups, capped at rounds)
    bands: int | None = checked(None, "int?")
    optimizer_steps: int = checked(100, "int")  # jax_privacy strategy optimisation


METHODS = ("dpfedavg", "bandmf", "tree")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CompareConfig(FtrlConfig):
    """DP-FedAvg (Poisson sampling, rate ``clients_per_round / num_clients``) or DP-FTRL
    (``method`` = its strategy, cyclic groups of ``clients_per_round``) on one federation with
    the same rounds, cohort size and local training (``strategy`` is ignored: ``method``
    decides). Builder: :func:`experiments.papers.dp_ftrl.compare_run_spec`."""

    builder = "experiments.papers.dp_ftrl:compare_run_spec"

    name: str = "dp_ftrl_compare"
    method: str = checked("bandmf", METHODS)
