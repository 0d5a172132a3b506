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
(:func:`decide_exact`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from types import SimpleNamespace

from jaxfl.repro import stats
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


__all__ = ["NOT_RUN", "Cmp", "Exact", "Paired", "chain", "decide", "decide_exact"]
