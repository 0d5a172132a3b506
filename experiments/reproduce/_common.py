"""What the reproduction drivers share, so that a driver only chooses configs and draws.

Runs (:func:`sweep_points`, :func:`run_configs`, :func:`run_file`: resumable sweeps;
:func:`finished_run`, :func:`run_config`, :func:`read_run` read a run back); per-seed data
(:func:`write_rows` / :func:`read_rows` with :func:`provenance` columns, :func:`export_runs`);
pages (:func:`prose` / :func:`prose_wrapped`: a block of ``templates/<page>.md``, where the
fixed wording lives; :func:`table`, :func:`wrap`, :func:`splice_blocks`); figures (:func:`plot`,
shared by the papers; :func:`save`). Statistics: :mod:`experiments.reproduce.stats`.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from experiments import builders
from jaxfl import metrics, sweep


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


def sweep_points(spec: str, overrides=()) -> list[sweep.Point]:
    """The points of the config file ``spec`` (``path.py:arg``): its ``get_config(arg)`` with
    ``overrides`` (``--set`` strings) expanded by ``get_sweep(arg)``, as ``python -m
    experiments.sweep --config SPEC --set ...`` runs them (same point ids)."""
    from experiments import config as config_lib

    return sweep.expand(config_lib.load_config(spec, overrides), config_lib.load_module(
        spec.partition(":")[0]).get_sweep(spec.partition(":")[2]))


def run_file(spec: str, workdir, **sweep_kwargs) -> list[sweep.Point]:
    """Runs (or resumes) the sweep of :func:`sweep_points` ``(spec)`` in ``workdir``; returns
    its points."""
    sweep.run_sweep(points := sweep_points(spec), builders.run_spec, Path(workdir), **sweep_kwargs)
    return points


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
    """The per-seed CSV of a finished :class:`~experiments.reproduce.declare.Run`: one row per
    config, ``row(config, summary, records)`` (both None for an unfinished point; the row None:
    left out), sorted by the key ``sort`` when given, written by :func:`write_rows`."""
    rows = []
    for cfg, d in zip(run.configs, run.dirs, strict=True):
        done = (Path(d) / "summary.json").exists() and (Path(d) / "metrics.jsonl").exists()
        if (r := row(cfg, *(read_run(d) if done else (None, None)))) is not None:
            rows.append(r)
    return write_rows(path, sorted(rows, key=sort) if sort else rows, fields)


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


def provenance_section(paths) -> str:
    """The "Provenance of the data" section of a page reading the data files ``paths``."""
    return prose("reproduction", "provenance", files=[{"line": provenance_of(p)} for p in paths])


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


def num(v, nd: int = 4, big_nd: int | None = None) -> str:
    """A number's table cell: a float to ``nd`` significant digits (``big_nd`` from 1e5 on),
    None as "-", anything else as written."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{big_nd if big_nd is not None and abs(v) >= 1e5 else nd}g}"
    return str(v)


def row(cells) -> str:
    """One Markdown table line."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: Sequence, rows: Iterable = ()) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row of cells."""
    return [row(header), "|" + "---|" * len(header), *(row(r) for r in rows)]


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the block between the ``name`` markers (``<!-- BEGIN GENERATED: name -->``,
    ``<!-- END GENERATED: name -->``) replaced by ``body``."""
    begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
    i, j = text.index(begin) + len(begin), text.index(end)
    return text[:i] + "\n" + body.strip("\n") + "\n" + text[j:]


def splice_blocks(text: str, blocks: dict[str, str], title: str = "") -> str:
    """``text`` with each ``name: body`` of ``blocks`` spliced in (:func:`splice`); an empty
    ``text`` becomes ``# title``, a block without its markers is appended."""
    text = text or f"# {title}\n"
    for name, body in blocks.items():
        if f"<!-- BEGIN GENERATED: {name} -->" not in text:
            text = text.rstrip() + (f"\n\n<!-- BEGIN GENERATED: {name} -->\n"
                                    f"<!-- END GENERATED: {name} -->\n")
        text = splice(text, name, body)
    return text


def wrap(items: Sequence[str], bullet: str | None = "* ", indent: str = "  ") -> str:
    """Markdown bullets (``bullet`` before each item's first line, ``indent`` before the
    others), wrapped at 95 columns; ``bullet=None``: the items as one paragraph."""
    import textwrap

    kw = dict(width=95, break_long_words=False, break_on_hyphens=False)
    if bullet is None:
        return "\n".join(textwrap.wrap(" ".join(items), **kw))
    return "\n".join(textwrap.fill(t, initial_indent=bullet, subsequent_indent=indent, **kw)
                     for t in items)


TEMPLATES = Path(__file__).with_name("templates")
_BLOCK = re.compile(r"^<!-- block: (\w+) -->$", re.M)
_FIELD = re.compile(r"\{\{(\w+)((?:\.\w+)*)(?::([^}]*))?\}\}")
# A section: {{#name}}...{{/name}} (repeated per dict of a list, once for another true value,
# dropped for a false one) or {{^name}}...{{/name}} (once when the value is false). A tag alone
# on its line takes the line with it.
_SECTION = re.compile(r"(?:^\{\{([#^])(\w+)\}\}\n(.*?)^\{\{/\2\}\}(?:\n|\Z))"
                      r"|(?:\{\{([#^])(\w+)\}\}(.*?)\{\{/\5\}\})", re.M | re.S)


@functools.cache
def _blocks(page: str) -> dict[str, str]:
    """The blocks of ``templates/<page>.md``: the text after each ``<!-- block: name -->`` line
    up to the next (trailing newlines dropped); text before the first is an editors' note."""
    text = (TEMPLATES / f"{page}.md").read_text()
    parts = _BLOCK.split(text)
    names = parts[1::2]
    if len(set(names)) != len(names):
        raise ValueError(f"templates/{page}.md: a block name is used twice: {names}")
    return {n: body.lstrip("\n").rstrip("\n") for n, body in zip(names, parts[2::2])}


def _names(text: str) -> tuple[set, set]:
    """(the names ``text`` needs: its fields outside sections and its outer sections; every
    name, nested sections' included)."""
    top = {m[2] or m[5] for m in _SECTION.finditer(text)}
    every = {m[1] for m in _FIELD.finditer(text)} | set(re.findall(r"\{\{[#^](\w+)\}\}", text))
    return {m[1] for m in _FIELD.finditer(_SECTION.sub("", text))} | top, every


def fill(text: str, fields: dict) -> str:
    """``text`` with its sections expanded (:data:`_SECTION`; a list item's dict adds to the
    fields) and each ``{{name}}`` / ``{{name:spec}}`` replaced by ``str(value)`` /
    ``format(value, spec)``; ``{{name.key}}`` reads a dict's key or an object's attribute
    (``{{base.rounds:d}}``), so a block can take a config or a row whole."""
    def section(m):
        kind, name, body = (m[1], m[2], m[3]) if m[1] else (m[4], m[5], m[6])
        v = fields[name]
        if kind == "^":
            return "" if v else fill(body, fields)
        items = v if isinstance(v, list) else [v if isinstance(v, dict) else {}] if v else []
        return "".join(fill(body, {**fields, **item}) for item in items)

    def field(m):
        v = fields[m[1]]
        for part in m[2].split(".")[1:]:  # {{base.rounds}}: a dict's key or an attribute
            v = v[part] if isinstance(v, dict) else getattr(v, part)
        return format(v, m[3]) if m[3] else str(v)

    return _FIELD.sub(field, _SECTION.sub(section, text))


def prose(page: str, block: str, **fields) -> str:
    """The ``block`` of the Markdown template ``templates/<page>.md`` filled by :func:`fill`
    (``{{name}}``, ``{{name:.3f}}``, sections ``{{#rows}}...{{/rows}}``, ``{{^x}}...{{/x}}``).

    Raises:
      KeyError: no such block, or a field or section without a value.
      TypeError: a value that the block does not use (a misspelt field).

    >>> prose("_example", "greeting", who="reader")
    'Hello, reader.'
    """
    blocks = _blocks(page)
    if block not in blocks:
        raise KeyError(f"templates/{page}.md has no block {block!r} (blocks: {sorted(blocks)})")
    text = blocks[block]
    needed, every = _names(text)
    if missing := needed - fields.keys():
        raise KeyError(f"templates/{page}.md block {block!r} needs {sorted(missing)}")
    if unused := fields.keys() - every:
        raise TypeError(f"templates/{page}.md block {block!r} has no field {sorted(unused)}")
    out = fill(text, fields)
    return out.rstrip("\n") if _SECTION.search(text) else out


def prose_wrapped(page: str, block: str, **fields) -> str:
    """:func:`prose` with every line wrapped at 95 columns by :func:`wrap`: a line ``* text``
    (spaces before the ``*`` allowed: a nested bullet) as one bullet, any other line as one
    paragraph; blank lines stay. A template thus keeps one paragraph or one bullet a line, and a
    long field cannot overrun the page's width."""
    out = []
    for line in prose(page, block, **fields).split("\n"):
        m = re.fullmatch(r"( *\* )(.*)", line)
        out.append(wrap([m[2]], bullet=m[1], indent=" " * len(m[1])) if m
                   else wrap([line], bullet=None))
    return "\n".join(out)


def check_flag(doc: str, argv, what: str) -> bool:
    """The ``--check`` flag of a generator's command line (``doc``: its help; ``what``: what
    differs when it exits 1)."""
    import argparse

    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help=f"write nothing; exit 1 if {what} differs")
    return p.parse_args(argv).check


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path, *, dpi: int = 90, tight: bool = True) -> None:
    """Saves ``fig`` as ``path`` (creating the folder) and closes it."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)


def yerr(intervals: Sequence[dict]) -> np.ndarray:
    """``[2, n]`` error bars (below, above the mean) of :func:`~experiments.reproduce.stats.
    interval` results; zero without an interval (fewer than two values)."""
    return np.array([[v["mean"] - v["lo"], v["hi"] - v["mean"]] if v["n"] > 1 else [0, 0]
                     for v in intervals]).T


def plot(path, panels: Sequence[dict], *, rows: int = 1, cell=(5.2, 3.6), title=None,
         dpi: int = 90, **subplots) -> None:
    """The one figure function of the papers: ``panels`` (row-major on ``rows`` rows of
    ``cell``-sized axes) drawn and saved by :func:`save`. A panel is a dict: ``lines`` (dicts of
    ``x``, ``y``, optional ``fmt``, ``band`` (lo, hi) shaded, and ``Axes.plot`` keywords; with
    ``yerr``: ``Axes.errorbar``'s),
    ``bars`` ({legend: :func:`~experiments.reproduce.stats.interval` results}, grouped with 95%
    bars, :func:`yerr`) over the tick labels ``ticks``, ``hline`` (a dotted reference, or a
    dict of ``Axes.axhline`` keywords), ``legend`` (its font size; none without a label),
    ``grid``, ``size`` (the title's font size), ``minor`` (False: no minor ticks); any other
    key is an ``Axes.set`` keyword (title, xlabel, ylabel, xscale, ylim ...)."""
    cols = -(-len(panels) // rows)
    fig, axes = pyplot().subplots(rows, cols, figsize=(cell[0] * cols, cell[1] * rows),
                                  squeeze=False, **subplots)
    for ax, p in zip(axes.ravel(), panels, strict=False):
        p = dict(p)
        for line in map(dict, p.pop("lines", ())):
            x, y, band = line.pop("x"), line.pop("y"), line.pop("band", None)
            if "yerr" in line:
                ax.errorbar(x, y, fmt=line.pop("fmt", ""), **line)
            else:
                ax.plot(x, y, *filter(None, [line.pop("fmt", None)]), **line)
            if band is not None:
                ax.fill_between(x, *band, alpha=0.15)
        bars, ticks = p.pop("bars", {}), p.pop("ticks", None)
        for i, (label, iv) in enumerate(bars.items()):
            w = 0.72 / len(bars)
            ax.bar(np.arange(len(iv)) + (i - (len(bars) - 1) / 2) * w,
                   [v["mean"] for v in iv], w, yerr=yerr(iv), capsize=3, label=label)
        if ticks is not None:
            ax.set_xticks(np.arange(len(ticks)), ticks, fontsize=6, rotation=p.pop("rotation", 0))
        if (h := p.pop("hline", None)) is not None:
            ax.axhline(**h) if isinstance(h, dict) else ax.axhline(h, color="gray", lw=0.8, ls=":")
        if p.pop("grid", False):
            ax.grid(alpha=0.3)
        size, legend, minor = p.pop("size", None), p.pop("legend", None), p.pop("minor", True)
        ax.set(**p)
        if size:
            ax.title.set_fontsize(size)
        if legend and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=legend)
        if not minor:
            ax.minorticks_off()
    if title:
        fig.suptitle(title, fontsize=10)
    save(fig, path, dpi=dpi)


__all__ = [
    "check_flag", "export_runs", "fill", "finished_run", "group", "num", "plot", "prose",
    "prose_wrapped", "pyplot", "read_rows", "read_run", "row", "run_config", "run_configs",
    "run_file", "save", "splice", "splice_blocks", "sweep_points", "table", "wrap", "write_rows",
    "yerr"]
