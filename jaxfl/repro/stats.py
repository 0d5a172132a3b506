"""Seed statistics of the reproduction reports: mean with a 95% t-interval, and a verdict.

The verdict of a multi-seed claim is its primary test (:data:`PRIMARY_RULE`): each paired
per-seed difference (:func:`paired`: a - b on the seeds both cells ran, which share
initialisation, sampling and noise streams) gets a two-sided t-test (:func:`test`), the tests of
one paper form one family with Holm's step-down correction (:func:`holm`), and a comparison
holds when significant in the claimed direction, does not hold when significant against it, and
is :data:`INCONCLUSIVE` otherwise. Reported beside it: the interval rule (:func:`verdict`:
"a > b" holds when a's 95% interval lies above b's, fails when below, else overlaps; one seed is
always inconclusive) and the non-inferiority test "a is not worse than b by more than a
margin" (:func:`comparable`: the paired difference b - a against the margin).
"""

from __future__ import annotations

import decimal
import math

import numpy as np
from scipy import stats as _st

HOLDS, FAILS, OVERLAP = "holds", "does not hold", "inconclusive at this scale (intervals overlap)"
OVERLAP_MARGIN = "inconclusive at this scale (paired interval contains the margin)"
ONE_SEED = "one seed (not tested)"  # a claim measured on one seed: reported, never decided
INCONCLUSIVE = "inconclusive (Holm-corrected paired test not significant)"
FAMILY_ALPHA = 0.05  # family-wise error rate of one paper's paired comparisons (Holm)
PRIMARY_RULE = ("paired per-seed difference, two-sided t-test (against 0, or against the margin "
                "for 'comparable'), Holm-corrected over the paper's paired comparisons at "
                f"family-wise {FAMILY_ALPHA:g}")


def interval(values, level: float = 0.95) -> dict:
    """``{mean, lo, hi, n}`` of the finite ``values``: the Student-t interval of the mean
    (``lo = hi = nan`` with fewer than two values)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], float)
    n, mean = len(v), float(v.mean()) if len(v) else math.nan
    if n < 2:
        return {"mean": mean, "lo": math.nan, "hi": math.nan, "n": n}
    half = float(_st.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def _decide(lo: float, hi: float, n_ok: bool, overlap: str) -> str:
    """HOLDS when ``lo > 0``, FAILS when ``hi < 0``, else (or without ``n_ok``) ``overlap``."""
    return overlap if not n_ok else HOLDS if lo > 0 else FAILS if hi < 0 else overlap


def verdict(a, b) -> str:
    """Verdict of "a > b" from the two cells' :func:`interval` (disjoint or overlapping)."""
    ia, ib = interval(a), interval(b)
    return _decide(ia["lo"] - ib["hi"], ia["hi"] - ib["lo"], min(ia["n"], ib["n"]) >= 2, OVERLAP)


def paired(a: dict, b: dict, level: float = 0.95) -> dict:
    """Paired per-seed difference a - b: ``a`` and ``b`` map seed -> value; only seeds present
    (and finite) in both count. Returns :func:`interval` of the differences plus ``seeds``."""
    seeds = sorted(s for s in a if s in b and a[s] is not None and b[s] is not None
                   and np.isfinite(a[s]) and np.isfinite(b[s]))
    return {**interval([a[s] - b[s] for s in seeds], level), "seeds": seeds}


def p_value(d: dict, null: float = 0.0) -> float:
    """Two-sided p-value of the paired t-test of :func:`paired`'s difference ``d`` against
    ``null`` (1 with fewer than two pairs; a difference without spread is 0 unless it equals
    ``null``)."""
    if d["n"] < 2:
        return 1.0
    half = d["hi"] - d["mean"]
    if half == 0:
        return 1.0 if d["mean"] == null else 0.0
    se = half / float(_st.t.ppf(0.975, d["n"] - 1))
    return float(2 * _st.t.sf(abs(d["mean"] - null) / se, d["n"] - 1))


def test(d: dict, null: float = 0.0, sign: float = 1.0) -> dict:
    """One paired comparison of a family: the difference ``d`` (:func:`paired`) tested against
    ``null``; the claim's direction is ``sign * (mean - null) > 0``. :func:`holm` fills in the
    adjusted p-value and the verdict."""
    return {"d": d, "null": null, "sign": sign, "p": p_value(d, null)}


def holm(tests: list[dict], alpha: float = FAMILY_ALPHA) -> list[dict]:
    """Holm's step-down correction over one paper's :func:`test` results, in place: each gets
    ``p_holm`` (adjusted, monotone in the step-down order; also written into ``d`` for
    :func:`fmt_paired`) and ``verdict``: :data:`HOLDS` / :data:`FAILS` when significant at
    ``alpha`` for / against the claimed direction, else :data:`INCONCLUSIVE`."""
    m, running = len(tests), 0.0
    for rank, t in enumerate(sorted(tests, key=lambda t: t["p"])):
        running = max(running, min(1.0, (m - rank) * t["p"]))
        t["p_holm"] = running
    for t in tests:
        side = t["sign"] * (t["d"]["mean"] - t["null"])
        t["verdict"] = _decide(side, side, t["p_holm"] < alpha and side != 0, INCONCLUSIVE)
        t["d"]["p_holm"] = t["p_holm"]
    return tests


def comparable(a: dict, b: dict, margin: float) -> str:
    """Verdict of "a is not worse than b by more than ``margin``": the paired difference b - a
    holds when its interval's upper end is at most ``margin``, fails when its lower end
    exceeds it."""
    d = paired(b, a)
    if d["n"] < 2:
        return OVERLAP_MARGIN
    return HOLDS if d["hi"] <= margin else FAILS if d["lo"] > margin else OVERLAP_MARGIN


def exact(holds: bool | None, undecided: str = "n/a") -> str:
    """The verdict of a number against the claim's stated threshold: :data:`HOLDS` or
    :data:`FAILS`; ``undecided`` for ``None`` (a descriptive claim)."""
    return undecided if holds is None else (HOLDS if holds else FAILS)


def combine(verdicts, overlap: str = OVERLAP) -> str:
    """One verdict of a claim made of several comparisons: holds when every part holds, does
    not hold when one part does not, ``overlap`` otherwise."""
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    return FAILS if any(v == FAILS for v in verdicts) else overlap


def fmt_paired(d: dict, scale: float = 1.0, nd: int = 3, unit: str = "") -> str:
    """``+0.012 [+0.004, +0.020] (n=3)`` for a :func:`paired` result (values times ``scale``)."""
    if d["n"] == 0:
        return "no common seeds"
    m = d["mean"] * scale
    if d["n"] < 2:
        return f"{m:+.{nd}f}{unit} (n=1)"
    holm_p = f", Holm p={d['p_holm']:.2g}" if "p_holm" in d else ""
    return (f"{m:+.{nd}f}{unit} [{d['lo'] * scale:+.{nd}f}, {d['hi'] * scale:+.{nd}f}] "
            f"(n={d['n']}{holm_p})")


def fmt(iv: dict, nd: int = 3) -> str:
    """``0.712 [0.690, 0.734]`` (n = 1: the value alone)."""
    if iv["n"] == 0:
        return "-"
    if not np.isfinite(iv["lo"]):
        return f"{iv['mean']:.{nd}f}"
    return f"{iv['mean']:.{nd}f} [{iv['lo']:.{nd}f}, {iv['hi']:.{nd}f}]"


def matches_spec(values: dict) -> bool:
    """Whether each ``values["_spec"]`` number (a spec's value) equals its number of ``values``
    (rounded as printed) within 0.6 units of the latter's last digit (that of its ``g`` format:
    ``1e-05`` -> 1e-5, ``4`` -> 1, ``0.6881`` -> 1e-4)."""
    return all(abs(values[k] - v)
               <= 0.6 * 10.0 ** decimal.Decimal(format(values[k], "g")).as_tuple().exponent
               for k, v in values["_spec"].items())
