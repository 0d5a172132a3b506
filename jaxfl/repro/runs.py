"""Runs of a reproduction and their per-seed data files.

Runs (:func:`run_configs`: a resumable sweep of configs; :func:`finished_run`,
:func:`run_config`, :func:`read_run` read a run back); per-seed data (:func:`write_rows` /
:func:`read_rows`, typed by a schema, with :func:`provenance` columns; :func:`export_runs`:
a figure's CSV from its finished runs; :func:`provenance_of`: where a committed file comes
from). A config names its builder (:mod:`jaxfl.builders`); the sweep engine is
:func:`jaxfl.sweep.run_sweep`.

What the declarations call instead of writing it: row functions of :func:`export_runs`
(:func:`point_row`, :func:`run_numbers`, :func:`run_row`, :func:`last_record_row`; refused or
unfinished points: :func:`refusal`, :func:`unfinished`, :func:`export_configs`,
:func:`with_data`); cells over seeds (:func:`cells_of`, :func:`seed_cell`, :func:`seed_scale`,
:func:`shared_seeds`, :func:`select_on`: a hyperparameter chosen on validation,
:func:`round_table`); curves from the runs' logs (:func:`histories`, :func:`mean_curve`,
:func:`series`, :func:`tail_mean`); data files (:func:`read_if`, :func:`write_json`,
:func:`write_sections`, :func:`from_json`, :func:`check_setting`).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxfl import builders, metrics, sweep, validate
from jaxfl.accounting.report import jsonable
from jaxfl.repro import stats
from jaxfl.validate import JaxflValueError


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


def series(recs, key) -> tuple[np.ndarray, np.ndarray]:
    """(rounds, values) of ``key`` in a run's metrics records (those that log it)."""
    pts = np.array([(r["round"], r[key]) for r in recs if key in r], float).reshape(-1, 2)
    return pts[:, 0], pts[:, 1]


def tail_mean(y, frac: float = 0.25) -> float:
    """The mean of the last ``frac`` of ``y`` (rounded up, at least one value); NaN if empty."""
    return float(np.mean(y[-max(1, int(np.ceil(frac * len(y)))):])) if len(y) else float("nan")


def seed_scale(rows, keys) -> dict:
    """The scale of per-seed ``rows``: the ``rows``, the ``first`` (None without rows),
    ``points``, ``seeds`` (sorted), ``n_seeds`` and ``scale`` (their distinct ``keys`` values)."""
    seeds = sorted({r["seed"] for r in rows})
    return dict(rows=rows, first=rows[0] if rows else None, points=len(rows), seeds=seeds,
                n_seeds=len(seeds), scale="; ".join(", ".join(map(str, v)) for v in sorted(
                    {tuple(r[k] for k in keys) for r in rows})))


def write_json(path, data: dict) -> dict:
    """Writes ``data`` with a ``provenance`` field (:func:`_common.provenance`) as ``path``;
    returns ``data``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({**data, "provenance": provenance()}, indent=1) + "\n")
    return data


def with_data(configs, tag: str) -> list:
    """The ``configs`` whose builder finds its data; any other one skipped with a line that
    names it and the missing file (a study of a dataset that is not shipped)."""
    out = []
    for cfg in configs:
        try:
            builders.run_spec(cfg)
        except validate.DataNotFoundError as err:
            print(f"[{tag}] {cfg.name} skipped: {err}", flush=True)
        else:
            out.append(cfg)
    return out


def histories(run) -> dict[str, list]:
    """Run name -> one metrics record list per seed, of a finished sweep (``run``: a
    :class:`~jaxfl.repro.declare.Run`)."""
    return {name: [read_run(d)[1] for _, d in runs] for name, runs in group(
        zip(run.configs, run.dirs, strict=True), lambda x: x[0].name).items()}


def mean_curve(runs: list | None, key: str = "test_accuracy", scale: float = 100.0):
    """(rounds, mean of ``key`` x ``scale`` over the seeds' records) of one run; None without."""
    if not runs:
        return None
    return (np.array([h["round"] for h in runs[0]]),
            np.mean([[h[key] * scale for h in r] for r in runs], axis=0))


def shared_seeds(values: dict, names) -> int:
    """Seeds shared by the runs ``names`` that ran (runs are compared on the same seeds)."""
    return min((len(values[n]) for n in names if n in values), default=0)


def from_json(v):
    """The inverse of :func:`jaxfl.accounting.report.jsonable`: its "inf", "-inf" and "nan"
    strings as floats, in dicts and lists."""
    if isinstance(v, dict):
        return {k: from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json(x) for x in v]
    return float(v) if v in ("inf", "-inf", "nan") else v


def cells_of(rows: list[dict], key=("method", "mode"), value: str = "test_accuracy") -> dict:
    """Per-seed CSV rows by cell (the values of the columns ``key``), in order: the cell's
    finished rows ``ok`` (status ok, with a ``value``), ``values`` (seed -> value), their
    :func:`~jaxfl.repro.stats.interval`, its declared ``seeds`` and ``missing`` ones."""
    out = {}
    for k, rs in group(rows, lambda r: tuple(r[c] for c in key)).items():
        ok = [r for r in rs if r["status"] == "ok" and r[value] is not None]
        values = {r["seed"]: r[value] for r in ok}
        out[k] = dict(ok=ok, values=values, interval=stats.interval(values.values()),
                      seeds=[r["seed"] for r in rs], missing=[r["seed"] for r in rs if r not in ok])
    return out


def write_sections(path: Path, sections: dict, scale: str, seconds: float) -> None:
    """Writes ``sections`` into the JSON data file ``path`` (its other sections kept) with the
    ``scale``, the :func:`~jaxfl.repro.runs.provenance` and ``seconds`` per
    section (``seconds``: their sum)."""
    data = json.loads(path.read_text()) if path.exists() else {}
    spent = {**data.get("section_seconds", {}), **dict.fromkeys(sections, seconds)}
    data.update(sections, scale=scale, section_seconds=spent, seconds=sum(spent.values()),
                provenance=provenance())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(data), indent=1) + "\n")


def run_numbers(s: dict, finals=("test_accuracy", "train_loss"), modes=("strict",)) -> dict:
    """A finished run's ``rounds``, its ``finals`` (final metrics), the epsilon of its own privacy
    report (``epsilon``) and per mode of ``modes`` ``epsilon_<mode>``: its own report's in that
    mode, else the ``privacy_<mode>`` of :func:`jaxfl.accounting.report.reports`, else its
    own."""
    last, own = s.get("final", {}), s["privacy"]
    out = {"rounds": s["rounds"], **{m: last.get(m) for m in finals},
           "epsilon": float(own["epsilon"])}
    for mode in modes:
        report = own if own["mode"] == mode else s.get(f"privacy_{mode}", own)
        out[f"epsilon_{mode}"] = float(report["epsilon"])
    return out


def point_row(keys=("method", "mode", "seed"), numbers=run_numbers):
    """A row function of :func:`~jaxfl.repro.runs.export_runs`: the config's
    ``keys``, then a finished point's ``numbers(summary)`` and ``status`` ``ok``, or an
    unfinished one's ``status`` ``missing``."""
    def row(cfg, summary, _records=None) -> dict:
        out = {k: getattr(cfg, k) for k in keys}
        if summary is None:
            return {**out, "status": "missing"}
        return {**out, **numbers(summary), "status": "ok"}

    return row


def read_if(data_dir, name: str, types: dict, **kw) -> list[dict]:
    """The typed rows (:func:`_common.read_rows`) of the CSV ``name`` in ``data_dir``; [] where
    there is none."""
    path = Path(data_dir) / name
    return read_rows(path, types, **kw) if path.exists() else []


def seed_cell(rows: list[dict], values: dict[str, str]) -> dict:
    """One cell's seeds: per ``name: column`` of ``values``, ``name_s`` (seed -> value of the
    finished rows, status ``ok``) and its :func:`~stats.interval` ``name``; the ``aborted``
    seeds (status ``aborted: ...``) and the ``missing`` ones (any other status)."""
    ok, bad = [r for r in rows if r["status"] == "ok"], [r for r in rows if r["status"] != "ok"]
    c = {f"{k}_s": {r["seed"]: r[col] for r in ok} for k, col in values.items()}
    return c | {k: stats.interval(c[f"{k}_s"].values()) for k in values} | {
        "aborted": [r["seed"] for r in bad if r["status"].startswith("aborted")],
        "missing": [r["seed"] for r in bad if not r["status"].startswith("aborted")]}


def round_table(rows: list[dict], rounds, value: str, same: str) -> dict:
    """A per-round log of several seeds (columns ``seed``, ``round``): ``seeds``, ``reached``
    (the rounds they stopped at, "lo - hi") and ``table``, one row per round of ``rounds`` that
    every seed reached and one for the last round they all reached: ``n`` seeds, ``value`` (the
    seeds' 95% t-interval of that column) and ``same`` (a column every seed must log alike,
    checked)."""
    seeds = sorted({r["seed"] for r in rows})
    last = [max(r["round"] for r in rows if r["seed"] == s) for s in seeds]
    table = []
    for t in sorted({*(t for t in rounds if t <= min(last)), min(last)}):
        at = [r for r in rows if r["round"] == t]
        if len(one := {round(r[same], 9) for r in at}) != 1:
            raise JaxflValueError(f"Expected one {same} per round, got seeds disagreeing at "
                                  f"round {t}: {one}")
        table.append(dict(round=t, n=len(at), same=one.pop(),
                          value=stats.fmt(stats.interval([r[value] for r in at]))))
    return dict(seeds=", ".join(map(str, seeds)), reached=f"{min(last)} - {max(last)}",
                table=table)


def refusal(cfg) -> str | None:
    """Why the builder refuses ``cfg`` (its typed error, e.g. ULDP-GROUP flags that leave a silo
    empty), or None: a config to leave out of a sweep and report as aborted."""
    try:
        builders.run_spec(cfg)
    except JaxflValueError as err:
        return str(err)
    return None


def select_on(rows: list[dict], cell, param: str, val: str, test: str) -> dict:
    """Per cell of per-seed ``rows`` (the values of the columns ``cell``), a hyperparameter
    chosen on validation: the ``param`` value (``choice``) with the best mean ``val`` over the
    seeds every value of the cell ran (``select_seeds``: all seeds of a full grid, the first
    stage of a two-stage one), its ``rows``, ``values`` (seed -> ``test``) and their
    :func:`~jaxfl.repro.stats.interval`, and the values tried (``choices``, descending)."""
    out = {}
    for key, rs in group(rows, lambda r: tuple(r[k] for k in cell)).items():
        by = group(rs, param)
        common = set.intersection(*({r["seed"] for r in x} for x in by.values()))
        best = max(by, key=lambda v: np.mean([r[val] for r in by[v] if r["seed"] in common]))
        out[key] = dict(choice=best, rows=by[best], values={r["seed"]: r[test] for r in by[best]},
                        interval=stats.interval([r[test] for r in by[best]]),
                        choices=sorted(by, reverse=True), select_seeds=sorted(common))
    return out


def last_record_row(keys, columns: dict, convert: dict | None = None):
    """A row function of :func:`jaxfl.repro.runs.export_runs`: the config's ``keys`` (each
    value through ``convert[key]`` where given), then per ``column: (record key, default)`` of
    ``columns`` that value of the run's last metrics record (``default`` None: required); None
    for a run without records (unfinished: left out)."""
    def row(cfg, _summary, records) -> dict | None:
        if not records:
            return None
        out = {k: (convert or {}).get(k, lambda v: v)(getattr(cfg, k)) for k in keys}
        return out | {col: records[-1][key] if default is None else records[-1].get(key, default)
                      for col, (key, default) in columns.items()}
    return row


def check_setting(path, written: dict, cfg, keys) -> None:
    """Refuses the data file ``path`` written for the setting ``written`` when it differs from
    the ``keys`` fields of ``cfg`` (its scale's config): a ValueError naming both."""
    if written != (setting := {k: getattr(cfg, k) for k in keys}):
        raise ValueError(f"{path} was written for {written}, not for this setting {setting}; "
                         "rerun the driver.")


def run_row(summary: dict, records: list[dict], finals: dict) -> dict:
    """A finished run's :func:`~jaxfl.repro.runs.run_numbers`, its last round's metrics
    ``finals`` (name: metric; NaN when not logged) and its last record's ``seconds``."""
    last = summary.get("final", {})
    return {**run_numbers(summary), **{k: float(last.get(m, float("nan")))
                                             for k, m in finals.items()},
            "seconds": records[-1].get("elapsed_s")}


def export_configs(run, configs, row, path, fields) -> list[dict]:
    """:func:`export_runs` of ``configs`` (points of the run's folder named by their
    config hash; e.g. with the refused ones the figure leaves out of its sweep)."""
    dirs = [run.workdir / "points" / metrics.config_hash(c) for c in configs]
    return export_runs(dataclasses.replace(run, configs=configs, dirs=dirs), row, path, fields)


def unfinished(cfg) -> str:
    """The status of a point without its summary: ``aborted: <why>`` where the builder refuses
    its config (:func:`refusal`), else ``missing``."""
    refused = refusal(cfg)
    return f"aborted: {refused}" if refused else "missing"


__all__ = ["PROVENANCE_FIELDS", "export_runs", "finished_run", "group", "provenance",
           "provenance_of", "read_rows", "read_run", "run_config", "run_configs", "write_rows"]
