"""Reproduction declared as data: each paper's figures, claims and pages as frozen records.

A module of a paper package (:func:`add_package`; this repository's: ``experiments/reproduce/``)
defines ``PAPER = declare.Paper(...)`` (found by :func:`papers`, no list to edit;
:func:`register` adds one from elsewhere). ``python -m experiments.reproduce PAPER`` runs,
exports, renders and checks it (:func:`run_figures`);
``python -m experiments.reproduce.pages`` renders every declared page and the summary
``docs/reproduction.md`` from the committed data (:class:`Inputs`, read once): one
claims-table line per field dict of each :class:`Claim` (its ``row``: a block of the paper's
``template``), one "what remains" line per :class:`Remaining`. A paper builds one context per
inputs (:func:`per_inputs`) and declares its rows and pages over it (:func:`from_context`,
:func:`claims_from`, :func:`remaining_from`, :func:`context_claim`, :func:`context_page`,
:func:`page_block`); :func:`export_from_sweep` exports a figure from a sweep run elsewhere.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import pkgutil
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jaxfl.repro import stats, text

ROOT = Path(__file__).resolve().parents[2]  # the repository (jaxfl is installed editable)
DATA = ROOT / "docs" / "reproduction" / "data"
AUDIT = ROOT / "docs" / "audit.json"


@dataclasses.dataclass(frozen=True)
class Rule:
    """A claim's pre-declared test: ``kind`` and the rule in words: :data:`PAIRED` (paired
    per-seed t-test, Holm per paper: :func:`jaxfl.repro.claims.decide` on the
    paper's :class:`~jaxfl.repro.claims.Paired` records), :data:`EXACT` (a number
    against the stated threshold), :data:`NOT_TESTED`."""

    kind: str
    text: str


PAIRED = Rule("paired", stats.PRIMARY_RULE)
EXACT = Rule("exact", "the number against the claim's stated threshold")
NOT_TESTED = Rule("not tested", "one seed, one benchmark run or a cost model: reported only")


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of a paper, tested by its pre-declared ``rule``: ``fields(inputs)`` gives a
    dict (one summary row, the block ``row``) or a list of dicts (one row each; a dict's
    ``row`` key names another block); string values are escaped for a table cell, numbers,
    dicts and lists left for the block's format specs and sections."""

    name: str
    text: str
    rule: Rule
    row: str
    fields: Callable[[Inputs], dict | list[dict]]
    figure: str | None = None


@dataclasses.dataclass(frozen=True)
class Remaining:
    """A row of the summary's "what ran, what remains" table (``item``: its sort key)."""

    item: str
    row: str
    fields: Callable[[Inputs], dict]


@dataclasses.dataclass(frozen=True)
class Run:
    """What a figure's export gets: the figure, the scale, its configs and their finished run
    directories (same order), the run folder, the data folder and the figures folder."""

    figure: Figure | None
    scale: str
    configs: Sequence
    dirs: Sequence[Path]
    workdir: Path
    data: Path
    figures: Path
    selected: Sequence[str] = ()


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure (or table) of a paper: ``configs(scale)`` its runs, ``export(run)`` writes its
    ``data`` files (under ``docs/reproduction/data/``) from a finished :class:`Run`;
    ``committed``: the scale of the committed data (another scale into that folder is refused
    before anything runs); ``sweep``: selected figures of one ``sweep`` name run as one sweep
    (their configs joined, equal ones once) with the first one's export and plot."""

    name: str
    title: str
    configs: Callable[[str], list]
    data: tuple[str, ...]
    export: Callable[[Run], Any] | None = None
    metric: str = ""
    plot: Callable[[Run], Any] | None = None
    committed: str | None = None  # the scale of its committed data (None: any)
    sweep: str | None = None


@dataclasses.dataclass(frozen=True)
class Page:
    """A generated page (``path`` relative to the repository), the data files it reads and
    ``render(inputs, text)`` (``text``: the committed page, for one with hand-written parts)."""

    path: str
    data: tuple[str, ...]
    render: Callable[[Inputs, str], str]


@dataclasses.dataclass(frozen=True)
class Paper:
    """A paper's declarations: ``order`` places its rows in the summary, ``link`` is the
    template block of its summary line; ``exact()`` gives the exact-accounting numbers its
    pages print but no per-seed file holds, as groups ``{name: {"page", "command", "values":
    {key: (value, format)}, ...}}`` (:func:`jaxfl.repro.pages.exact_numbers` writes them,
    rounded, to ``exact_numbers.json`` and checks each is on its page)."""

    name: str
    title: str
    figures: tuple[Figure, ...] = ()
    claims: tuple[Claim, ...] = ()
    pages: tuple[Page, ...] = ()
    remaining: tuple[Remaining, ...] = ()
    scales: tuple[str, ...] = ("cpu",)
    order: int = 50
    template: str = "reproduction"
    link: str | None = None
    exact: Callable[[], dict] | None = None

    def figure(self, name: str) -> Figure:
        for f in self.figures:
            if f.name == name:
                return f
        raise KeyError(f"paper {self.name!r} has no figure {name!r} "
                       f"(figures: {[f.name for f in self.figures]})")


class Inputs:
    """The committed inputs of the pages: the data folder, ``docs/audit.json`` and
    ``exact_numbers.json``, read once."""

    def __init__(self, data: Path = DATA, audit: Path = AUDIT, root: Path = ROOT):
        self.data, self.audit_path, self.root = Path(data), Path(audit), Path(root)

    def json(self, name: str):
        """The committed data file ``name`` (under :attr:`data`), parsed."""
        return json.loads((self.data / name).read_text())

    @functools.cached_property
    def audit(self) -> dict:
        """``docs/audit.json`` by row name."""
        return {r["name"]: r for r in json.loads(self.audit_path.read_text())}

    @functools.cached_property
    def exact(self) -> dict:
        """``group -> key -> value`` of ``exact_numbers.json`` (formats dropped; ``_spec``: the
        group's spec values). A data folder without it (a smoke run's) reads the committed
        one: its numbers come from the library, not from runs."""
        own = self.data / "exact_numbers.json"
        raw = json.loads((own if own.exists() else DATA / "exact_numbers.json").read_text())
        return {g: {k: v[0] for k, v in d["values"].items()} | {"_spec": d.get("spec", {})}
                for g, d in raw.items() if not g.startswith("_")}

    def audit_row(self, name: str) -> dict:
        """The audit row called ``name`` or registered as ``name`` (``experiments.audit``)."""
        a = self.audit
        return a.get(name) or next(r for r in a.values() if r.get("audit") == name)

    def audit_check(self, name: str, claim: str | None = None) -> dict:
        """:meth:`audit_row` with ``lb`` (its lower bound), ``p`` (the paper's claim, or
        ``info[claim]``), ``cmp`` (">" or "<="), ``exceeded`` and the exact ``verdict``."""
        r = self.audit_row(name)
        lb, p = r["epsilon_lb"], r["info"][claim] if claim else r["claimed"].get("paper")
        return dict(r, lb=lb, p=p, cmp=">" if lb > p else "<=", exceeded=lb > p,
                    verdict=stats.exact(not lb > p))


_REGISTRY: dict[str, Paper] = {}


def register(paper: Paper) -> Paper:
    """Adds ``paper`` to the registry (a module of this package needs no call: its ``PAPER``
    is found by :func:`papers`)."""
    if not isinstance(paper, Paper):
        raise TypeError(f"Expected a declare.Paper, got {type(paper).__name__}.")
    _REGISTRY[paper.name] = paper
    return paper


# Packages whose modules declare papers (:func:`add_package`); each module of one that defines
# ``PAPER = Paper(...)`` is a paper, found on the first :func:`papers` call.
PACKAGES: list[str] = []


def add_package(name: str) -> None:
    """Declares the package ``name`` as holding paper modules (found by :func:`papers`)."""
    if name not in PACKAGES:
        PACKAGES.append(name)
        _discovered.clear()


_discovered: set[str] = set()


def _discover() -> None:
    for name in [p for p in PACKAGES if p not in _discovered]:
        _discovered.add(name)
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{name}.{info.name}")
            if isinstance(getattr(module, "PAPER", None), Paper):
                _REGISTRY.setdefault(module.PAPER.name, module.PAPER)


def papers() -> list[Paper]:
    """Every declared paper, by ``order`` then name."""
    _discover()
    return sorted(_REGISTRY.values(), key=lambda p: (p.order, p.name))


def paper(name: str) -> Paper:
    """The declared paper ``name`` (``-`` and ``_`` alike)."""
    _discover()
    key = name.replace("-", "_")
    if key not in _REGISTRY:
        raise KeyError(f"No paper {name!r}; declared: {sorted(_REGISTRY)}")
    return _REGISTRY[key]


def rows(claim: Claim | Remaining, inputs: Inputs) -> list[dict]:
    """The field dicts of a claim's (or remaining item's) row(s)."""
    out = claim.fields(inputs)
    return [out] if isinstance(out, dict) else list(out)


def run_figures(paper_: Paper, selected: Sequence[str], scale: str, workdir: Path, data: Path,
                figures: Path) -> None:
    """The run of a paper: the configs of each selected figure (or of the selected figures of
    one ``sweep``) as one resumable sweep in ``workdir/<figure or sweep>``
    (:func:`jaxfl.repro.runs.run_configs`), then its export and plot."""
    from jaxfl.metrics import config_hash
    from jaxfl.repro import runs
    from jaxfl.validate import JaxflValueError

    groups: dict[str, list[Figure]] = {}
    for fig in (paper_.figure(n) for n in selected):
        if fig.committed not in (None, scale) and Path(data).resolve() == DATA.resolve():
            raise JaxflValueError(
                f"{paper_.name} figure {fig.name}: its committed data is at scale "
                f"{fig.committed!r}, got --scale {scale!r} with the committed data folder; "
                "pass --data DIR for another scale.")
        groups.setdefault(fig.sweep or fig.name, []).append(fig)
    for key, figs in groups.items():
        configs = list({config_hash(c): c for f in figs for c in f.configs(scale)}.values())
        dirs = runs.run_configs(configs, workdir / key) if configs else []
        run = Run(figs[0], scale, configs, dirs, workdir / key, data, figures,
                  tuple(f.name for f in figs))
        for step in (figs[0].export, figs[0].plot):
            if step is not None:
                step(run)


def per_inputs(fn):
    """``fn(inputs)`` computed once per :class:`Inputs` (which reads its files once)."""
    cache = weakref.WeakKeyDictionary()

    @functools.wraps(fn)
    def cached(inputs):
        if inputs not in cache:
            cache[inputs] = fn(inputs)
        return cache[inputs]
    return cached


def from_context(context, page: str, block: str, rows: str | None = None):
    """A claim's (or remaining item's) fields function: ``block``'s names from
    ``context(inputs)``; with ``rows``, one summary row per dict of the context's list ``rows``
    (its names over the context's)."""
    def fields(inputs):
        ctx = context(inputs)
        if rows is None:
            return text.used(page, block, ctx)
        return [text.used(page, block, ctx | r) for r in ctx[rows]]
    return fields


def export_from_sweep(figure: Figure, sweep_dir, scale: str, data, figures):
    """``figure``'s export of its points in a sweep folder (``sweep_dir/points/<config
    hash>``, e.g. one run by ``python -m experiments.sweep``), running nothing: a point without
    its summary is unfinished."""
    from jaxfl import metrics

    configs = figure.configs(scale)
    dirs = [Path(sweep_dir) / "points" / metrics.config_hash(c) for c in configs]
    return figure.export(Run(figure, scale, configs, dirs, Path(sweep_dir), Path(data),
                                     Path(figures), (figure.name,)))


def context_claim(context, page: str, name: str, text: str, rule: Rule, row: str,
                  rows: str | None = None, figure: str | None = None) -> Claim:
    """A claim whose summary row (block ``row`` of the template ``page``) is filled from
    ``context(inputs)`` (:func:`jaxfl.repro.declare.from_context`; ``rows``: one per dict)."""
    return Claim(name, text, rule, row, from_context(context, page, row, rows), figure)


def context_page(context, page: str, blocks: dict[str, str], wrapped=(), title: str = ""):
    """A page's ``render(inputs, text)``: each ``marker: block`` of ``blocks`` filled from
    ``context(inputs)`` (a block of ``wrapped`` by ``prose_wrapped``), spliced into ``text``."""
    def render(inputs: Inputs, page_text: str) -> str:
        ctx = context(inputs)
        return text.splice_blocks(page_text, {m: text.fill_block(page, b, ctx, b in wrapped)
                                               for m, b in blocks.items()}, title)
    return render


def claims_from(context, page: str, table, prefix: str | None = None) -> tuple[Claim, ...]:
    """The claims of ``table`` (name, text, rule[, figure[, rows]]), each summary row the block
    ``row_<prefix>_<name>`` (``prefix``: default ``page``) of ``templates/<page>.md`` filled
    from ``context`` (:func:`from_context`; ``rows``: the context's list of one dict per row)."""
    def claim(name, text, rule, figure=None, rows=None):
        return context_claim(context, page, name, text, rule, f"row_{prefix or page}_{name}",
                             rows, figure)
    return tuple(claim(*c) for c in table)


def remaining_from(context, page: str, items, prefix: str | None = None) -> tuple[Remaining, ...]:
    """The "what remains" rows ``(item, name)``, each the block ``remaining_<prefix>_<name>``
    (``prefix``: default ``page``; an empty ``name``: ``remaining_<prefix>``) filled from
    ``context``."""
    def block(name):
        return "_".join(filter(None, ("remaining", prefix or page, name)))
    return tuple(Remaining(item, block(name), from_context(context, page, block(name)))
                 for item, name in items)


def page_block(context, page: str, block: str = "page"):
    """A :class:`Page`'s render function: ``block`` filled from ``context(inputs)``
    (the committed text not read), ending with a newline."""
    def render(inputs: Inputs, page_text: str = "") -> str:
        return text.fill_block(page, block, context(inputs)) + "\n"
    return render


__all__ = ["AUDIT", "DATA", "EXACT", "NOT_TESTED", "PACKAGES", "PAIRED", "ROOT", "Claim",
           "Figure", "Inputs", "Page", "Paper", "Remaining", "Rule", "Run", "add_package", "paper",
           "papers", "register", "rows", "run_figures"]
