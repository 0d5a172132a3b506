"""Seed statistics of the reproduction reports: mean with a 95% t-interval, and a verdict.

A claim "a > b" (a and b: one number per seed) gets a verdict from the two cells' intervals:
``holds`` when a's interval lies entirely above b's, ``does not hold`` when it lies entirely
below, and ``inconclusive at this scale (intervals overlap)`` otherwise (with one seed, or
fewer, always inconclusive). Disjoint 95% intervals are a conservative test; the paired
per-seed difference is reported next to it for the reader.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

HOLDS, FAILS, OVERLAP = "holds", "does not hold", "inconclusive at this scale (intervals overlap)"


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


def fmt(iv: dict, nd: int = 3) -> str:
    """``0.712 [0.690, 0.734]`` (n = 1: the value alone)."""
    if iv["n"] == 0:
        return "-"
    if not np.isfinite(iv["lo"]):
        return f"{iv['mean']:.{nd}f}"
    return f"{iv['mean']:.{nd}f} [{iv['lo']:.{nd}f}, {iv['hi']:.{nd}f}]"


def write_rows(path, rows: list[dict], fields) -> list[dict]:
    """Writes per-seed ``rows`` as a CSV with columns ``fields`` (creating the folder)."""
    import csv
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields))
        w.writeheader()
        w.writerows(rows)
    return rows
