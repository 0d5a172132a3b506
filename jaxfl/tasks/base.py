"""The :class:`Task` record and the task registry (``get(name, **options)``, ``names()``).

A task is everything a federated run needs besides its algorithm: the dataset, its partition
into the run's units (clients, users x silos, subjects x users, nodes, workers), the model,
its loss (the model's own) and the evaluation on held-out data. A task function is registered
under a name with :func:`register`; its keyword-only parameters are the task's options (with
their defaults) and its docstring says where the data comes from and how it is partitioned.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from jaxfl import models, validate


@dataclasses.dataclass(frozen=True)
class Task:
    """A dataset split over a run's units, with its model and evaluation.

    Attributes:
      name: the registry name it was built from.
      options: the options it was built with, defaults filled in (set by :func:`get`).
      train: what the algorithm trains on: a padded :class:`jaxfl.data.FederatedData` (one row
        per client / node / worker), or the paper's own container (subject data, users x silos).
      test: the held-out data: ``(x, y)`` arrays, or per-unit :class:`~jaxfl.data.FederatedData`.
      model: the model (its ``loss`` is the task's loss); ``None`` when the task leaves it open.
      evaluate: ``params -> {metric: value}`` on ``test``; ``None`` when the evaluation needs the
        algorithm (e.g. DP-OGL's personalized models by group).
      info: facts of the partition (label counts, the raw dataset record, index lists).
    """

    name: str
    options: Mapping[str, Any]
    train: Any
    test: Any = None
    model: models.Model | None = None
    evaluate: Callable[[Any], dict] | None = None
    info: Mapping[str, Any] = dataclasses.field(default_factory=dict)


_REGISTRY: dict[str, Callable[..., Task]] = {}


def register(name: str):
    """Decorator adding a task function (keyword-only options, each with a default)."""
    def deco(fn):
        params = inspect.signature(fn).parameters.values()
        bad = [p.name for p in params
               if p.kind is not p.KEYWORD_ONLY or p.default is inspect.Parameter.empty]
        if bad or not (fn.__doc__ or "").strip():
            raise TypeError(f"Task {name!r}: every option must be keyword-only with a default "
                            f"(not {bad}) and the function must have a docstring.")
        _REGISTRY[name] = fn
        return fn
    return deco


def names() -> tuple[str, ...]:
    """Every registered task name, sorted."""
    return tuple(sorted(_REGISTRY))


def builder(name: str) -> Callable[..., Task]:
    """The task function registered as ``name``.

    Raises:
      JaxflValueError: an unknown name (with the closest one and every registered name).
    """
    if name not in _REGISTRY:
        close = difflib.get_close_matches(str(name), names(), n=1, cutoff=0.5)
        hint = f" did you mean {close[0]!r}?" if close else ""
        raise validate.JaxflValueError(
            f"Unknown task {name!r};{hint} registered tasks: {list(names())}.")
    return _REGISTRY[name]


def options(name: str) -> dict[str, Any]:
    """The options of task ``name`` with their defaults."""
    return {p.name: p.default for p in inspect.signature(builder(name)).parameters.values()}


def describe(name: str) -> str:
    """The docstring of task ``name`` (its source, partition, model and evaluation) and its
    options with their defaults."""
    doc = inspect.cleandoc(builder(name).__doc__)
    opts = ", ".join(f"{k}={v!r}" for k, v in options(name).items())
    return f"{name}({opts})\n\n{doc}"


def get(name: str, **opts) -> Task:
    """Builds task ``name`` with ``opts`` (the others keep their defaults).

    Raises:
      JaxflValueError: an unknown task, or an option it does not have (the message lists the
        valid ones), before any data loads; a bad option value (from the task's own checks).
    """
    valid = options(name)
    unknown = sorted(set(opts) - set(valid))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(valid), n=1, cutoff=0.5)
        hint = f" did you mean {close[0]!r}?" if close else ""
        raise validate.JaxflValueError(
            f"Unknown option(s) {unknown} of task {name!r};{hint} its options: {sorted(valid)}.")
    task = _REGISTRY[name](**opts)
    return dataclasses.replace(task, name=name, options={**valid, **opts})


def model_for(name: str, input_shape, num_classes: int, *, option: str = "model"
              ) -> models.Model:
    """``models.get_model(name)`` given the data's input shape and classes where its builder
    takes them.

    Raises:
      JaxflValueError: an unknown model, naming the task option and the available models.
    """
    params = model_params(name, option=option)
    kw = {}
    if "num_classes" in params:
        kw["num_classes"] = num_classes
    if "input_shape" in params:
        kw["input_shape"] = tuple(input_shape)
    return models.get_model(name, **kw)


def model_params(name: str, *, option: str = "model"):
    """The parameters of model ``name``'s builder (checks the name before any data loads)."""
    try:
        return inspect.signature(models.builder(name)).parameters
    except validate.JaxflValueError as e:
        raise validate.JaxflValueError(f"{e} (task option {option})") from None
