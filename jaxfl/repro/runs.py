"""Runs of a reproduction and their per-seed data files.

Runs (:func:`run_configs`: a resumable sweep of configs; :func:`finished_run`,
:func:`run_config`, :func:`read_run` read a run back); per-seed data (:func:`write_rows` /
:func:`read_rows`, typed by a schema, with :func:`provenance` columns; :func:`export_runs`:
a figure's CSV from its finished runs; :func:`provenance_of`: where a committed file comes
from). A config names its builder (:mod:`jaxfl.builders`); the sweep engine is
:func:`jaxfl.sweep.run_sweep`.
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Sequence
from pathlib import Path

from jaxfl import builders, metrics, sweep


def run_configs(configs: Sequence, workdir, **sweep_kwargs) -> list[Path]:
    """Runs (or resumes) ``configs`` as one sweep in ``workdir`` (each point named by its
    config's hash); returns their run directories in order.

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
    sweep.run_sweep(points, builders.run_spec, Path(workdir), **sweep_kwargs)
    return [Path(workdir) / "points" / p.id for p in points]


def finished_run(sweep_dirs, point_id: str) -> Path | None:
    """The point's directory in the first of ``sweep_dirs`` with its ``summary.json``, or None."""
    return next((Path(d) / "points" / point_id for d in sweep_dirs
                 if (Path(d) / "points" / point_id / "summary.json").exists()), None)


def run_config(run_dir) -> dict | None:
    """The frozen config (``config.json``) of a run directory as a dict; None without one."""
    path = Path(run_dir) / "config.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    return record.get("config", record)


def read_run(run_dir) -> tuple[dict, list[dict]]:
    """``(summary.json, metrics.jsonl records)`` of a finished run directory."""
    run_dir = Path(run_dir)
    return (json.loads((run_dir / "summary.json").read_text()),
            metrics.read_jsonl(run_dir / "metrics.jsonl"))


PROVENANCE_FIELDS = ("prov_commit", "prov_jaxfl", "prov_jax", "prov_dp_accounting",
                     "prov_device", "prov_date")


@functools.lru_cache(maxsize=1)
def provenance() -> dict:
    """Where a data file comes from: the commit (``+dirty`` with uncommitted changes;
    ``unknown`` outside git), the jaxfl, jax and dp-accounting versions, the device and the
    UTC date (CSV: one column each; JSON: a ``provenance`` field)."""
    import datetime
    import importlib.metadata
    import subprocess

    import jax

    import jaxfl

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parents[2],
                                  capture_output=True, text=True, check=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "HEAD") or "unknown"
    if commit != "unknown" and git("status", "--porcelain", "--untracked-files=no"):
        commit += "+dirty"
    dev = jax.devices()[0]
    return {"prov_commit": commit, "prov_jaxfl": jaxfl.__version__, "prov_jax": jax.__version__,
            "prov_dp_accounting": importlib.metadata.version("dp-accounting"),
            "prov_device": f"{dev.platform}: {getattr(dev, 'device_kind', '')}".strip(": "),
            "prov_date": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC")}


def write_rows(path, rows: list[dict], fields) -> list[dict]:
    """Writes per-seed ``rows`` as a CSV with columns ``fields`` plus :data:`PROVENANCE_FIELDS`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*fields, *PROVENANCE_FIELDS])
        w.writeheader()
        w.writerows({**r, **provenance()} for r in rows)
    return rows


def export_runs(run, row, path, fields, sort=None) -> list[dict]:
    """The per-seed CSV of a finished :class:`~jaxfl.repro.declare.Run`: one row per
    config, ``row(config, summary, records)`` (both None for an unfinished point; the row None:
    left out), sorted by the key ``sort`` when given, written by :func:`write_rows`."""
    rows = []
    for cfg, d in zip(run.configs, run.dirs, strict=True):
        done = (Path(d) / "summary.json").exists() and (Path(d) / "metrics.jsonl").exists()
        if (r := row(cfg, *(read_run(d) if done else (None, None)))) is not None:
            rows.append(r)
    return write_rows(path, sorted(rows, key=sort) if sort else rows, fields)


def read_rows(path, types: dict | None = None, provenance: bool = False) -> list[dict]:
    """The rows of a CSV of :func:`write_rows` (its provenance columns kept with
    ``provenance``), typed by the schema ``types`` (column -> ``str``, ``int``, ``float`` or
    ``bool``; an empty cell None): the per-seed files declare one dict as both their columns
    and their types."""
    with open(path, newline="") as f:
        rows = [{k: v for k, v in r.items() if provenance or k not in PROVENANCE_FIELDS}
                for r in csv.DictReader(f)]
    parse = {bool: lambda v: v.strip().lower() in ("true", "1", "yes")}
    for r in rows:
        r.update({k: None if r.get(k) in (None, "") else parse.get(t, t)(r[k])
                  for k, t in (types or {}).items() if t is not str})
    return rows


def group(items, key) -> dict:
    """``items`` as lists by ``key(item)`` (a callable; else a row's field), in order."""
    out: dict = {}
    for x in items:
        out.setdefault(key(x) if callable(key) else x[key], []).append(x)
    return out


def provenance_of(path) -> str:
    """One line on where the committed data file ``path`` comes from: its provenance columns
    or field, else the run recorded in ``provenance_notes.json`` beside it."""
    path = Path(path)
    prov = None
    if path.suffix == ".csv":
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if rows and all(k in rows[0] for k in PROVENANCE_FIELDS):
            prov = {k: sorted({r[k] for r in rows}) for k in PROVENANCE_FIELDS}
    elif isinstance(data := json.loads(path.read_text()), dict) and isinstance(
            data.get("provenance"), dict):
        prov = {k: [data["provenance"][k]] for k in PROVENANCE_FIELDS}
    if prov is not None:
        p = {k.removeprefix("prov_"): ", ".join(v) for k, v in prov.items()}
        return (f"`{path.name}`: commit {p['commit']}; jaxfl {p['jaxfl']}, jax {p['jax']}, "
                f"dp-accounting {p['dp_accounting']}; device {p['device']}; {p['date']}")
    notes = json.loads((path.parent / "provenance_notes.json").read_text()).get(path.name, {})
    note = f"; {notes['note']}" if notes.get("note") else ""
    return f"`{path.name}`: provenance not recorded (run {notes.get('run', 'date unknown')}){note}"


__all__ = ["PROVENANCE_FIELDS", "export_runs", "finished_run", "group", "provenance",
           "provenance_of", "read_rows", "read_run", "run_config", "run_configs", "write_rows"]
