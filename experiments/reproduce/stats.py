"""Seed statistics of the reproduction reports: mean with a 95% t-interval, and a verdict.

The verdict of a multi-seed claim is its primary test (:data:`PRIMARY_RULE`): each paired
per-seed difference (:func:`paired`) gets a two-sided t-test (:func:`test`, :func:`p_value`:
against 0, or against a margin for "comparable"), the tests of one paper form one family with
Holm's step-down correction (:func:`holm`, family-wise :data:`FAMILY_ALPHA`), and a comparison
holds when significant in the claimed direction, does not hold when significant against it,
and is :data:`INCONCLUSIVE` otherwise. The rules below (the interval rule and the uncorrected
paired verdicts) are reported beside it.

A claim "a > b" (a and b: one number per seed) gets a verdict from the two cells' intervals:
``holds`` when a's interval lies entirely above b's, ``does not hold`` when it lies entirely
below, and ``inconclusive at this scale (intervals overlap)`` otherwise (with one seed, or
fewer, always inconclusive). Disjoint 95% intervals are a conservative test; the paired
per-seed difference (:func:`paired`: a - b per seed, matched by seed, mean with a 95%
t-interval over the seeds) is reported next to it, with its own verdict
(:func:`paired_verdict`: holds when the difference's interval lies above 0, does not hold when
below, inconclusive when it contains 0). Seeds pair when both cells ran them: a seed draws the
same initialisation, sampling and noise streams in both, so the paired difference removes the
seed-to-seed spread the two cells share.

A claim "a is comparable to b" (``a`` not worse than ``b`` by more than a ``margin``) is a
non-inferiority test on the paired difference b - a (:func:`comparable`): holds when the upper
end of its interval is at most ``margin``, does not hold when the lower end exceeds it,
inconclusive otherwise.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

HOLDS, FAILS, OVERLAP = "holds", "does not hold", "inconclusive at this scale (intervals overlap)"
OVERLAP_PAIRED = "inconclusive at this scale (paired interval contains 0)"
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
    n = len(v)
    if n == 0:
        return {"mean": math.nan, "lo": math.nan, "hi": math.nan, "n": 0}
    mean = float(v.mean())
    if n < 2:
        return {"mean": mean, "lo": math.nan, "hi": math.nan, "n": 1}
    half = float(_st.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def verdict(a, b) -> str:
    """Verdict of "a > b" from the intervals of :func:`interval` (see the module docstring)."""
    ia, ib = interval(a), interval(b)
    if ia["n"] < 2 or ib["n"] < 2:
        return OVERLAP
    if ia["lo"] > ib["hi"]:
        return HOLDS
    if ia["hi"] < ib["lo"]:
        return FAILS
    return OVERLAP


def paired(a: dict, b: dict, level: float = 0.95) -> dict:
    """Paired per-seed difference a - b: ``a`` and ``b`` map seed -> value; only seeds present
    (and finite) in both count. Returns :func:`interval` of the differences plus ``seeds``."""
    seeds = sorted(s for s in a if s in b and a[s] is not None and b[s] is not None
                   and np.isfinite(a[s]) and np.isfinite(b[s]))
    iv = interval([a[s] - b[s] for s in seeds], level)
    iv["seeds"] = seeds
    return iv


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
    """Holm's step-down correction over one paper's paired comparisons (:func:`test`), in
    place: each gets ``p_holm`` (the adjusted p-value, monotone in the step-down order) and
    ``verdict``: :data:`HOLDS` when significant at ``alpha`` in the claimed direction,
    :data:`FAILS` when significant against it, :data:`INCONCLUSIVE` otherwise. The adjusted
    p-value is also written into the difference (``d["p_holm"]``) so :func:`fmt_paired` shows
    it."""
    m = len(tests)
    running = 0.0
    for rank, t in enumerate(sorted(tests, key=lambda t: t["p"])):
        running = max(running, min(1.0, (m - rank) * t["p"]))
        t["p_holm"] = running
    for t in tests:
        side = t["sign"] * (t["d"]["mean"] - t["null"])
        t["verdict"] = (INCONCLUSIVE if not t["p_holm"] < alpha or side == 0
                        else HOLDS if side > 0 else FAILS)
        t["d"]["p_holm"] = t["p_holm"]
    return tests


def paired_verdict(a: dict, b: dict) -> str:
    """Verdict of "a > b" from the paired difference's interval (see the module docstring)."""
    d = paired(a, b)
    if d["n"] < 2:
        return OVERLAP_PAIRED
    if d["lo"] > 0:
        return HOLDS
    if d["hi"] < 0:
        return FAILS
    return OVERLAP_PAIRED


def comparable(a: dict, b: dict, margin: float) -> str:
    """Verdict of "a is not worse than b by more than ``margin``" (non-inferiority on the
    paired difference b - a; see the module docstring)."""
    d = paired(b, a)
    if d["n"] < 2:
        return OVERLAP_MARGIN
    if d["hi"] <= margin:
        return HOLDS
    if d["lo"] > margin:
        return FAILS
    return OVERLAP_MARGIN


def exact(holds: bool | None, undecided: str = "n/a") -> str:
    """The verdict of a claim decided exactly, on a number against the claim's stated threshold
    (no interval): :data:`HOLDS` or :data:`FAILS`; ``undecided`` for ``None`` (a descriptive
    claim)."""
    return undecided if holds is None else (HOLDS if holds else FAILS)


def combine(verdicts, overlap: str = OVERLAP) -> str:
    """One verdict of a claim made of several comparisons (every epsilon, every pair of
    curves): holds when every part holds, does not hold when one part does not, ``overlap``
    otherwise."""
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    if any(v == FAILS for v in verdicts):
        return FAILS
    return overlap


def compare(a: dict, b: dict) -> dict:
    """"a > b" on per-seed values (``a`` and ``b`` map seed -> value): both cells'
    :func:`interval` (``a``, ``b``), the interval :func:`verdict`, the :func:`paired`
    difference and its :func:`paired_verdict`."""
    va, vb = list(a.values()), list(b.values())
    return {"a": interval(va), "b": interval(vb), "verdict": verdict(va, vb),
            "paired": paired(a, b), "paired_verdict": paired_verdict(a, b)}


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
