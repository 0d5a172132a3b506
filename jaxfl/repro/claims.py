"""A paper's multi-seed claims as data, decided by one engine (:func:`decide`).

A claim is a :class:`Paired` record: its text, the pre-declared comparisons (:class:`Cmp`:
cell ``a`` above cell ``b``, or with ``margin`` "``a`` not below ``b`` by more than the
margin") and the fields its rows print. :func:`decide` reads each cell's per-seed values
(``values(key)``: seed -> value, None for a cell that did not run), decides every comparison
of every claim it is given as ONE Holm family (the declared rule
:data:`jaxfl.repro.declare.PAIRED`: :func:`stats.test` per comparison,
:func:`stats.holm` over the paper) and each claim by :func:`stats.combine` (holds when every
part holds, does not hold when one does not); the interval rule is reported beside it. A claim
with a cell that did not run is ``not run`` and stays out of the family. A paper declares its
claims (a tuple, or a function of the cells that ran for a claim over a chain of cells) and
renders the results with its template blocks. A claim on exact numbers (a privacy table, a
cost model) is an :class:`Exact` record, its rule a predicate on the numbers
(:func:`decide_exact`). Decided claims as the pages print them: :func:`decided`,
:func:`decided_among`, :func:`decide_family` (claims on one seed described, not tested),
:func:`decide_sets` (claims on several per-seed row sets, one family), :func:`ordering_claims`
(an ordering as adjacent paired comparisons), :func:`claim_cells`, :func:`single_rows`,
:func:`verdict_counts`.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Hashable, Sequence
from types import SimpleNamespace

import numpy as np

from jaxfl.repro import stats, text
from jaxfl.validate import JaxflValueError

NOT_RUN = "not run"


@dataclasses.dataclass(frozen=True)
class Cmp:
    """One paired comparison on per-seed values: ``a`` above ``b`` (the difference a - b
    against 0; with ``by``: a - by above b, "a exceeds b by more than ``by``"), or with
    ``margin`` non-inferiority (b - a against the margin: holds when significantly below
    it)."""

    a: Hashable
    b: Hashable
    margin: float | None = None
    by: float = 0.0


@dataclasses.dataclass(frozen=True)
class Paired:
    """A claim decided on paired comparisons: ``claim`` its text, ``cmps`` its comparisons
    (all must hold), ``fields`` what its rows print besides the verdicts."""

    claim: str
    cmps: tuple[Cmp, ...]
    fields: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not self.cmps or not all(isinstance(c, Cmp) for c in self.cmps):
            raise JaxflValueError(f"Paired claim {self.claim!r}: expected a non-empty tuple of "
                                  f"claims.Cmp, got cmps={self.cmps!r}.")


def _part(cmp: Cmp, va: dict, vb: dict) -> dict:
    """One comparison's intervals (``a``, ``b``), paired difference ``d``, its unadjusted
    ``test`` and its interval rule ``interval``."""
    va = {s: v - cmp.by for s, v in va.items()} if cmp.by else va
    plain = cmp.margin is None
    d = stats.paired(va, vb) if plain else stats.paired(vb, va)
    return {"cmp": cmp, "a": stats.interval(va.values()), "b": stats.interval(vb.values()),
            "d": d, "test": stats.test(d) if plain else stats.test(d, cmp.margin, -1.0),
            "interval": stats.verdict(va.values(), vb.values()) if plain
            else stats.comparable(va, vb, cmp.margin)}


def decide(claims: Sequence[Paired], values: Callable[[Hashable], dict | None],
           one_seed: str | None = None) -> list[dict]:
    """Each claim's result: its ``fields``, ``claim``, ``parts`` (:func:`_part` with the
    Holm-adjusted test), ``verdict`` (the combined corrected paired tests; a single comparison's
    own verdict), ``interval_verdict`` (the combined interval rules) and ``missing`` (the cells
    that did not run; verdict :data:`NOT_RUN`). All the claims' comparisons form one Holm
    family. ``one_seed``: the verdict of a claim whose comparisons have fewer than two pairs
    (default: the test's, inconclusive)."""
    out = []
    for c in claims:
        cells = dict.fromkeys(k for x in c.cmps for k in (x.a, x.b))
        vals = {k: values(k) for k in cells}
        missing = [k for k, v in vals.items() if v is None]
        out.append({**c.fields, "claim": c.claim, "missing": missing, "parts": [] if missing else
                    [_part(x, vals[x.a], vals[x.b]) for x in c.cmps]})
    stats.holm([p["test"] for r in out for p in r["parts"]])
    for r in out:
        if r["missing"]:
            r.update(verdict=NOT_RUN, interval_verdict="-")
            continue
        tests, intervals = [p["test"]["verdict"] for p in r["parts"]], [
            p["interval"] for p in r["parts"]]
        r["verdict"] = tests[0] if len(tests) == 1 else stats.combine(tests, stats.INCONCLUSIVE)
        r["interval_verdict"] = intervals[0] if len(intervals) == 1 else stats.combine(intervals)
        if one_seed is not None and all(p["d"]["n"] < 2 for p in r["parts"]):
            r["verdict"] = one_seed
    return out


@dataclasses.dataclass(frozen=True)
class Exact:
    """A claim decided exactly on numbers: ``rule(v)`` (None: descriptive, no verdict) on the
    namespace ``v`` of the numbers; ``claim`` and ``measured`` are formats of them (``{name}``,
    ``{name:.3f}``), ``fields`` what its rows print besides."""

    claim: str
    measured: str
    rule: Callable[[SimpleNamespace], bool] | None
    fields: dict = dataclasses.field(default_factory=dict)


def decide_exact(claims: Sequence[Exact], numbers: dict) -> list[dict]:
    """Each claim's ``fields``, formatted ``claim`` and ``measured``, and ``holds`` (a bool;
    None for a descriptive claim), decided on ``numbers``."""
    v = SimpleNamespace(**numbers)
    return [{**c.fields, "claim": c.claim.format(**numbers), "measured": c.measured.format(
        **numbers), "holds": c.rule and bool(c.rule(v))} for c in claims]


def chain(keys: Sequence[Hashable], fields: Callable[[Hashable, Hashable], dict] | None = None,
          claim: Callable[[Hashable, Hashable], str] = "{} > {}".format) -> list[Paired]:
    """An ordering claim ``keys[0] > keys[1] > ...`` as one :class:`Paired` per adjacent pair."""
    return [Paired(claim(a, b), (Cmp(a, b),), fields(a, b) if fields else {})
            for a, b in zip(keys, keys[1:])]


def ordering_claims(cells: dict, order, name=str, label=str) -> list[dict]:
    """An ordering ``order[0] > order[1] > ...`` over seeds (``cells``: key -> a
    :func:`_runs.cells_of` cell) among the keys with two or more finished seeds: each adjacent pair
    a paired comparison, all one Holm family (:func:`~jaxfl.repro.claims.decide`),
    ``measured`` their intervals; a key without them gives one ``not run`` row naming its
    missing seeds (``name``: a key's name, ``label``: its name in those rows)."""
    ran = [k for k in order if k in cells and cells[k]["interval"]["n"] >= 2]
    out = [dict(claim=r["claim"], verdict=r["verdict"], interval_verdict=r["interval_verdict"],
                paired=stats.fmt_paired(p["d"]), measured=f"{name(p['cmp'].a)} "
                f"{stats.fmt(p['a'])} vs {name(p['cmp'].b)} {stats.fmt(p['b'])}")
           for r in decide(chain(ran, claim=lambda a, b: f"{name(a)} > {name(b)}"),
                           lambda k: cells[k]["values"]) for p in r["parts"]]
    for k in (k for k in order if k not in ran):
        measured = (f"seeds {cells[k]['missing']} of {label(k)} not run" if k in cells
                    else f"{label(k)} not declared")
        out.append(dict(claim=f"{name(k)} in the ordering", verdict=NOT_RUN,
                        interval_verdict="-", paired="-", measured=measured))
    return out


def decided(claims, values, name=str, **kw) -> list[dict]:
    """:func:`~jaxfl.repro.claims.decide`'s results, each with ``paired`` (its paired
    differences, :func:`~stats.fmt_paired`; "-" when not run), ``interval`` (the interval rule)
    and ``detail`` ("a 0.712 [0.690, 0.734] vs b ...", the cells named by ``name(key)``)."""
    out = []
    for r in decide(claims, values, **kw):
        ps = r["parts"]
        out.append(dict(r, interval=r["interval_verdict"], paired="; ".join(
            stats.fmt_paired(p["d"]) for p in ps) or "-", detail="; ".join(
            f"{name(p['cmp'].a)} {stats.fmt(p['a'])} vs {name(p['cmp'].b)} {stats.fmt(p['b'])}"
            for p in ps) or "not run"))
    return out


def claim_cells(r: dict, name, kind, *, page: str, few: int = 2) -> dict:
    """A decided :class:`~jaxfl.repro.claims.Paired` claim ``r``'s cells in words
    (blocks ``detail`` and ``paired`` of ``templates/<page>.md``): ``detail``, how many
    comparisons hold by the interval rule, those that fail and how many overlap (or the cells
    not run), and ``paired``, each paired difference ("a - b (kind): ...") of a claim of at
    most ``few`` comparisons, else how many hold and fail paired. ``name(cell)``: a cell's
    name; ``kind(cmp)``: what a comparison compares."""
    parts = [(name(p["cmp"].a), name(p["cmp"].b), kind(p["cmp"]), p) for p in r["parts"]]
    vs, pvs = [p["interval"] for *_, p in parts], [p["test"]["verdict"] for *_, p in parts]
    if len(parts) > few:
        paired = text.prose(page, "paired", n=len(pvs), holds=pvs.count(stats.HOLDS),
                             fails=pvs.count(stats.FAILS))
    else:
        paired = "; ".join(f"{a} - {b} ({k}): {stats.fmt_paired(p['d'])}"
                           for a, b, k, p in parts) or "-"
    fails = ", ".join(f"{a} vs {b} ({k})" for a, b, k, p in parts if p["interval"] == stats.FAILS)
    return dict(paired=paired, detail=text.prose(
        page, "detail", missing=", ".join(sorted({name(c) for c in r["missing"]})), n=len(vs),
        holds=vs.count(stats.HOLDS), overlap=vs.count(stats.OVERLAP), fails=fails))


def decide_sets(sets, declared, key: str, columns: dict, lower=(), **kw) -> list[list[dict]]:
    """Paired claims ``(claim, fields, [(a, b, metric): "a better than b"])`` of ``declared[k]``
    on the per-seed rows ``sets[k]`` (cells: the values of their column ``key``; a metric's
    values: the column ``columns[metric]``), all decided as ONE Holm family
    (:func:`~jaxfl.repro.claims.decide`; a metric of ``lower`` is better when lower); the
    results by set, each with ``interval`` (the interval rule) and its :func:`claim_cells`
    (``kw``)."""
    values = {(k, c, m): {r["seed"]: (-1.0 if m in lower else 1.0) * r[col] for r in rs
                          if r[key] == c}
              for k, rs in enumerate(sets) for c in {r[key] for r in rs}
              for m, col in columns.items()}
    out = [[] for _ in sets]
    for r in decide([Paired(claim, tuple(Cmp((k, a, m), (k, b, m)) for a, b, m in comps),
                            dict(fields, set=k))
                     for k, decl in enumerate(declared) for claim, fields, comps in decl],
                    values.get):
        out[r["set"]].append(dict(r, interval=r["interval_verdict"], **claim_cells(
            r, lambda cell: cell[1], lambda cmp: cmp.a[2], **kw)))
    return out


def verdict_counts(rows: list[dict]) -> dict:
    """Decided rows' ``verdicts`` ("2 holds, 1 does not hold", or "none") and the
    ``inconclusive`` rest."""
    n = collections.Counter(r["verdict"] for r in rows)
    return dict(verdicts=", ".join(f"{n[v]} {v}" for v in (stats.HOLDS, stats.FAILS) if n[v])
                or "none", inconclusive=len(rows) - n[stats.HOLDS] - n[stats.FAILS])


def single_rows(results: list[dict], scale: float = 1.0, nd: int = 3, cell_nd: int = 4) -> list:
    """The :func:`~jaxfl.repro.claims.decide` results of one comparison each that ran, with
    its paired difference (``paired``; as printed ``diff``: times ``scale``, ``nd`` digits)
    and its two cells as printed (``ours``, ``other``: ``cell_nd`` digits)."""
    return [dict(r, paired=p["d"], diff=stats.fmt_paired(p["d"], scale, nd),
                 ours=stats.fmt(p["a"], cell_nd), other=stats.fmt(p["b"], cell_nd))
            for r in results if r["verdict"] != NOT_RUN for p in r["parts"]]


def decide_family(claims: list[Paired], values, nd: int = 1, unit: str = "") -> list[dict]:
    """:func:`jaxfl.repro.claims.decide` on the claims measured on two or more seeds per cell
    (a claim's field ``k``; without it, always), one Holm family of ``family`` comparisons; a
    claim on fewer is described, not tested (a one-seed test would only dilute the family):
    verdict :data:`~jaxfl.repro.stats.ONE_SEED` and ``inversions`` (its comparisons whose cell
    ``a``'s mean is not above ``b``'s). Each result also has ``n`` (comparisons), ``one_seed``,
    ``held`` (comparisons that hold), ``agree`` (mean differences in the claimed direction) and
    ``parts`` as text: ``at`` (the claim's field ``at``: one label per comparison), ``a`` / ``b``
    (:func:`~jaxfl.repro.stats.fmt`, ``nd`` decimals), ``d`` / ``paired``
    (:func:`~jaxfl.repro.stats.fmt_paired`, ``nd + 1`` decimals, with / without ``unit``) and
    ``verdict``."""
    def mean(key, k):
        return np.mean(list(values(key).values())[:k])

    tested, out = iter(decide([c for c in claims if c.fields.get("k", 2) >= 2], values)), []
    for c in claims:
        k = c.fields.get("k", 2)
        out.append(next(tested) if k >= 2 else dict(
            c.fields, claim=c.claim, verdict=stats.ONE_SEED, parts=[],
            inversions=sum(mean(x.a, k) <= mean(x.b, k) for x in c.cmps)))
        out[-1].update(n=len(c.cmps), one_seed=k < 2)
    family = sum(len(r["parts"]) for r in out)
    for r in out:
        ps = r["parts"]
        r.update(family=family, held=sum(p["test"]["verdict"] == stats.HOLDS for p in ps),
                 agree=sum(p["d"]["mean"] > 0 for p in ps), parts=[dict(
                     at=at, a=stats.fmt(p["a"], nd), b=stats.fmt(p["b"], nd),
                     d=stats.fmt_paired(p["d"], nd=nd + 1, unit=unit),
                     paired=stats.fmt_paired(p["d"], nd=nd + 1), verdict=p["test"]["verdict"])
                     for at, p in zip(r["at"], ps)])  # a described claim: none
    return out


def decided_among(claims: list, values, **kw) -> list[dict]:
    """``claims`` with each :class:`Paired` one replaced by its :func:`decided` result
    (all of them one Holm family); the others (rows decided already) kept in place."""
    out = iter(decided([c for c in claims if isinstance(c, Paired)], values, **kw))
    return [next(out) if isinstance(c, Paired) else c for c in claims]


__all__ = ["NOT_RUN", "Cmp", "Exact", "Paired", "chain", "decide", "decide_exact"]
