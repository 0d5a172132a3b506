"""What the reproduction drivers share: their runs go through the sweep engine.

A driver chooses configs; :func:`run_configs` runs them as one sweep of
:func:`jaxfl.sweep.run_sweep` (points built by :func:`experiments.builders.run_spec`, vmapped
where the layout allows, resumable: a finished point is skipped, a killed one continues from
its last checkpoint) and returns each config's run directory
(``<workdir>/points/<id>/``: ``summary.json``, ``metrics.jsonl``), in the order given.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from experiments import builders
from jaxfl import metrics, sweep


def points_of(configs: Sequence) -> list[sweep.Point]:
    """The sweep points of ``configs`` (each named by its config's hash, as ``sweep.expand``
    names them).

    Raises:
      ValueError: on no config, or two equal configs (they would share one directory).
    """
    if not configs:
        raise ValueError("Expected at least one config to run, got none.")
    points, seen = [], {}
    for i, cfg in enumerate(configs):
        pid = metrics.config_hash(cfg)
        if pid in seen:
            raise ValueError(f"Expected distinct configs, got configs {seen[pid]} and {i} equal.")
        seen[pid] = i
        points.append(sweep.Point(index=i, overrides={}, config=cfg, id=pid))
    return points


def run_configs(configs: Sequence, workdir, **sweep_kwargs) -> list[Path]:
    """Runs (or resumes) ``configs`` as one sweep in ``workdir``; returns their run
    directories in order. ``sweep_kwargs`` go to :func:`jaxfl.sweep.run_sweep`."""
    points = points_of(configs)
    workdir = Path(workdir)
    sweep.run_sweep(points, builders.run_spec, workdir, **sweep_kwargs)
    return [workdir / "points" / p.id for p in points]


__all__ = ["points_of", "run_configs"]
