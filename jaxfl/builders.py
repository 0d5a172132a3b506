"""From a config (data) to a run: the only place that turns configs into work.

A config is a frozen dataclass of plain values; its class names its paper's builder in the
class variable ``builder = "module:function"``. The builder, ``config -> RunSpec``
(:class:`jaxfl.sweep.RunSpec`: algorithm with its accountant, data, initial parameters, eval
function, rounds, seed, delta), lives in ``experiments/papers/<paper>.py``; it takes the data,
partition, model and evaluation from a :mod:`jaxfl.tasks` task and loads no data itself. The
two drivers, ``experiments/run.py`` (one config) and ``experiments/sweep.py`` (a config's
sweep, vmapped where shapes agree), call :func:`run_spec` and then the engine
(:func:`jaxfl.vmapped_runs.run_single` / :func:`jaxfl.sweep.run_sweep`); nothing else trains.

This repository's configs name builders in ``experiments/papers/`` (``FLConfig.builder ==
"experiments.papers.fedavg:run_spec"``); the reproduction engine (:mod:`jaxfl.repro.runs`) and
the drivers call :func:`run_spec`.

Example Usage:
  >>> class NoBuilder:
  ...     pass
  >>> builder_of(NoBuilder())  # doctest: +ELLIPSIS
  Traceback (most recent call last):
  ValueError: Expected config class NoBuilder to name its builder as the class variable ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from jaxfl import sweep, vmapped_runs


def builder_of(config) -> Callable[[Any], sweep.RunSpec]:
    """The builder function named by ``type(config).builder``.

    Raises:
      ValueError: when the config's class names no builder, or a name that does not import.
    """
    name = getattr(type(config), "builder", None)
    if not isinstance(name, str) or ":" not in name:
        raise ValueError(
            f"Expected config class {type(config).__name__} to name its builder as the class "
            f"variable builder = 'module:function', got {name!r}.")
    module, _, fn = name.partition(":")
    return getattr(importlib.import_module(module), fn)


def run_spec(config) -> sweep.RunSpec:
    """The run specification of ``config`` (algorithm + accountant + data + eval)."""
    spec = builder_of(config)(config)
    if not isinstance(spec, sweep.RunSpec):
        raise TypeError(f"Expected the builder of {type(config).__name__} to return a RunSpec, "
                        f"got {type(spec).__name__}.")
    return spec


def run(config, workdir, **kwargs) -> dict:
    """Runs ``config`` once (resuming in ``workdir``); returns its summary."""
    return vmapped_runs.run_single(run_spec(config), workdir, **kwargs).summary
