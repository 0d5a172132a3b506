"""Shared config of the subject-level DP experiments (Marathe & Kanani v1, section 4).

One :class:`SubjectDPConfig` describes one run: a dataset with subjects spread over federation
users, one method of :mod:`jaxfl.algorithms.subject_dp` and a privacy ``mode``. It is data; its
builder is :func:`experiments.papers.subject_dp.run_spec`, which calibrates the noise from the
budget through the algorithm builder (:func:`jaxfl.accounting.subject_dp.noise_plan`):

* ``mode="paper"``: per-user moments-accountant sigma at the item sampling rate over the nominal
  ``T * R`` steps (LocalGroupDP: the lazy sigma_Z table); FedAvg / LocalItemDP run ``R`` rounds,
  the subject-level methods ``R / sqrt(s)`` (Thm. 3.10). Fixed-size batches.
* ``mode="strict"`` (default): Poisson batches; sigma calibrated so the *strict* epsilon meets the
  target after the same round counts (LocalItemDP at item level, its own claim; the subject-level
  methods at subject level; LocalGroupDP with data-independent noise).

Every run's ``summary.json`` holds the accountant's report in the run's mode (``privacy``) and
in the other mode (``privacy_strict`` / ``privacy_paper``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from experiments.configs.base import TrainingConfig, checked
from jaxfl import validate

DATASETS = ("mnist_writers", "shakespeare", "parkinsons", "femnist_leaf", "synthetic")
METHODS = ("fedavg", "local_item_dp", "user_ldp", "local_group_dp", "higradavg_dp")
MODELS = ("mlp", "linear", "char_lstm", "femnist_cnn")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SubjectDPConfig(TrainingConfig):
    """One subject-level DP run. Every field can be overridden with ``--set``."""

    builder = "experiments.papers.subject_dp:run_spec"
    # The budget only sets the noise multipliers, which the algorithm reads on the host (its
    # round inputs) and its accountant is built from: points differing in it share one
    # computation, each with its own noise and accountant (jaxfl.sweep.plan).
    derived_hparams: ClassVar[tuple] = ("target_epsilon",)

    name: str = "subject_dp"
    variant: str = "cpu"
    method: str = checked("higradavg_dp", METHODS)
    mode: str = checked("strict", ("strict", "paper"))
    dataset: str = checked("mnist_writers", DATASETS)
    data_dir: str | None = None
    num_users: int = checked(16, "int")
    users_per_round: int | None = None
    num_subjects: int = 150
    num_train: int | None = 20000
    num_test: int | None = 2000
    alpha: float = 1.0
    model: str = checked("mlp", MODELS)
    hidden: tuple = (64,)
    batch_size: int = checked(64, "int")
    local_steps: int | str = 1  # or "epoch"
    nominal_rounds: int = checked(100, "int")
    rounds: int | None = checked(None, "int?")  # None: R (FedAvg, LocalItemDP) or R / sqrt(s)
    clip_norm: float = checked(1.0, "positive")
    learning_rate: float = checked(0.5, "positive_value")
    nonprivate_learning_rate: float = 0.1
    optimizer: str = checked("sgd", ("sgd", "adam"))
    target_epsilon: float = checked(4.0, "positive")
    microbatch_size: int | None = None
    tight_accounting: bool = True  # strict LocalItemDP: also the PLD mixture bound (slower)
    orders: tuple | None = None  # RDP orders (None: dp-accounting's default grid)
    eval_every: int = 5
    checkpoint_every: int = 25

    def check(self):
        if self.local_steps != "epoch":
            validate.positive_int("local_steps", self.local_steps)


def variant(cfg: SubjectDPConfig, name: str, **overrides) -> SubjectDPConfig:
    """Applies a named variant's (typed) overrides (``smoke`` shrinks everything to seconds)."""
    return dataclasses.replace(cfg, variant=name, **overrides)


SMOKE = {"dataset": "synthetic", "model": "mlp", "hidden": (8,), "num_users": 4,
         "num_subjects": 12, "num_train": 600, "batch_size": 8, "local_steps": 1,
         "nominal_rounds": 8, "eval_every": 1, "checkpoint_every": 2,
         "orders": (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0)}
# The smoke sweep: the fields a subject-level sweep varies, all in one vmapped computation:
# seeds (each its own partition of the subjects), target epsilons (each point's noise is
# calibrated on the host and its accountant built from it), clip norms and learning rates.
SMOKE_SWEEP = [{"seed": 0, "clip_norm": 1.0},
               {"seed": 0, "clip_norm": 0.5, "target_epsilon": 2.0, "learning_rate": 0.25},
               {"seed": 1, "clip_norm": 1.0, "target_epsilon": 8.0}]


def method_mode_sweep(variant_name: str, methods=METHODS, seeds: int = 1) -> list[dict]:
    """``get_sweep`` body: the smoke sweep for the ``smoke`` variant, else every method in both
    modes (FedAvg once, in paper mode), each with ``seeds`` seeds (:func:`with_seeds`)."""
    if variant_name == "smoke":
        return list(SMOKE_SWEEP)
    runs = [{"method": "fedavg", "mode": "paper"}] if "fedavg" in methods else []
    for mode in ("paper", "strict"):
        runs += [{"method": m, "mode": mode} for m in methods if m != "fedavg"]
    return with_seeds(runs, seeds)


def with_seeds(runs: list[dict], seeds: int) -> list[dict]:
    """Each run of ``runs`` with seeds ``0 .. seeds - 1`` (``seeds=1``: ``runs`` as they are).
    A run's seeds differ in their partition of the subjects over the users, yet share one
    vmapped computation (``config.py:seeds=3`` in a sweep: one per method and mode)."""
    seeds = validate.positive_int("seeds", seeds)
    return runs if seeds == 1 else [{**r, "seed": s} for r in runs for s in range(seeds)]


__all__ = ["SubjectDPConfig", "SMOKE", "SMOKE_SWEEP", "METHODS", "variant", "method_mode_sweep",
           "with_seeds"]
