"""The base run config every config family extends: the shared run fields and their checks.

A run config is a frozen, keyword-only dataclass (data only; its ``builder`` names the
function that turns it into a :class:`jaxfl.sweep.RunSpec`). :class:`RunConfig` holds the fields
every run has (``name``, ``variant``, ``seed``, ``delta``, ``eval_every``);
:class:`TrainingConfig` adds those of a run that trains in rounds (``rounds``,
``checkpoint_every``), and :class:`DpTrainingConfig` those of a DP-SGD-style run (``batch_size``,
``clip_norm``, ``noise_multiplier``, ``sampling_rate``, ``data_dir``; zero ``rounds`` admitted).
A family declares its own fields, each with its check where it has one (:func:`checked`: the
default and a rule of :data:`RULES`); every field's check runs in :meth:`RunConfig.__post_init__`,
before any work starts, raising a typed :mod:`jaxfl.validate` error that names the field (a
subclass that declares a field again declares its check again). A family gives a field of its
base another default in its ``defaults`` (``{field: default}``; the field keeps its base's type,
check and place). Checks that relate two fields stay in the family's :meth:`check`.

A field's name and value enter the run's config hash (its workdir's name,
:func:`jaxfl.metrics.config_hash`): the families keep the names their committed runs were
recorded under (``rounds`` / ``T`` / ``epochs``, ``mode`` / ``accounting``, ``client_lr`` /
``local_lr`` / ``learning_rate``), and this base adds no field a family did not have.

Example Usage:
  >>> import dataclasses
  >>> @dataclasses.dataclass(frozen=True, kw_only=True)
  ... class ToyConfig(TrainingConfig):
  ...   lr: float = checked(0.1, "positive_value")
  ...   optimizer: str = checked("sgd", ("sgd", "adam"))
  >>> ToyConfig(rounds=3).rounds
  3
  >>> @dataclasses.dataclass(frozen=True, kw_only=True)
  ... class ToyDpConfig(DpTrainingConfig):
  ...   defaults = {"clip_norm": 0.1}  # another default, the base's check ("positive")
  >>> ToyDpConfig().clip_norm, ToyDpConfig().noise_multiplier
  (0.1, 1.0)
  >>> ToyConfig(lr=-1.0)
  Traceback (most recent call last):
  ...
  jaxfl._validate.JaxflValueError: Expected lr > 0, got lr=-1.0.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from jaxfl import validate

#: The rules a field's check may name. A trailing ``?`` also admits None; a tuple is the
#: field's allowed values.
RULES = {
    "int": lambda name, v: validate.positive_int(name, v),  # an integer >= 1
    "count": lambda name, v: validate.positive_int(name, v, minimum=0),  # an integer >= 0
    "positive": lambda name, v: validate.positive(name, v),  # a privacy parameter > 0
    "positive_value": lambda name, v: validate.positive(name, v, validate.JaxflValueError),
    "probability": lambda name, v: validate.probability(name, v),  # in (0, 1]
    "delta": lambda name, v: validate.delta(v, name),  # in (0, 1)
}


def checked(default, rule):
    """A config field with its default and its check: ``rule`` is a key of :data:`RULES`
    (optionally with ``?``: None is admitted too) or a tuple of the allowed values."""
    if not isinstance(rule, tuple) and rule.rstrip("?") not in RULES:
        raise ValueError(f"Expected a rule among {sorted(RULES)} or a tuple, got {rule!r}.")
    return dataclasses.field(default=default, metadata={"check": rule})


def _check(name: str, rule, value) -> None:
    if isinstance(rule, tuple):
        validate.one_of(name, value, rule)
    elif rule.endswith("?"):
        if value is not None:
            RULES[rule[:-1]](name, value)
    else:
        RULES[rule](name, value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunConfig:
    """The fields and checks every run config shares."""

    #: ``"module:function"`` building the run (``config -> RunSpec``); set by each family.
    builder: ClassVar[str] = ""
    #: the family's variants (scales); ``variant`` must be one of them (empty: not checked).
    variants: ClassVar[tuple] = ()
    #: other defaults of fields declared by a base class (``{field: default}``): each is
    #: declared again in the family, with the base's type and check (``__init_subclass__``).
    defaults: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("defaults", {})
        inherited = {}
        for parent in reversed(cls.__mro__[1:]):
            inherited.update(getattr(parent, "__dataclass_fields__", {}))
        annotations = dict(cls.__dict__.get("__annotations__", {}))
        for name, default in own.items():
            if name not in inherited or name in annotations:
                raise TypeError(
                    f"{cls.__name__}.defaults: expected a field of a base class that "
                    f"{cls.__name__} does not declare itself, got {name!r}.")
            base = inherited[name]
            annotations[name] = base.type
            setattr(cls, name, dataclasses.field(default=default, metadata=base.metadata))
        cls.__annotations__ = annotations

    name: str = "run"
    variant: str = "full"
    seed: int = checked(0, "count")
    delta: float = checked(1e-5, "delta")
    eval_every: int = checked(1, "int")

    def __post_init__(self):
        if self.variants:
            validate.one_of("variant", self.variant, self.variants)
        for f in dataclasses.fields(self):
            if "check" in f.metadata:
                _check(f.name, f.metadata["check"], getattr(self, f.name))
        self.check()

    def check(self) -> None:
        """Checks that relate several fields (a family's own; none here)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainingConfig(RunConfig):
    """A run that trains for ``rounds`` rounds, checkpointed every ``checkpoint_every``."""

    rounds: int = checked(50, "int")
    checkpoint_every: int = checked(10, "int")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpTrainingConfig(TrainingConfig):
    """A DP-SGD-style run (DP-FedAvg, DP-FTRL, ULDP-FL): units sampled at ``sampling_rate``,
    local batches of ``batch_size``, updates clipped to ``clip_norm`` and Gaussian noise of
    ``noise_multiplier`` times the sensitivity. Defaults: DP-FedAvg's (a family sets its own in
    ``defaults``)."""

    rounds: int = checked(50, "count")  # zero rounds admitted (TrainingConfig asks >= 1)
    batch_size: int = checked(32, "int")
    clip_norm: float = checked(0.5, "positive")
    noise_multiplier: float = checked(1.0, "positive")
    sampling_rate: float = checked(0.1, "probability")
    data_dir: str | None = None


__all__ = ["RULES", "RunConfig", "TrainingConfig", "DpTrainingConfig", "checked"]
