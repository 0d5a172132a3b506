"""Seed statistics of the reproduction reports (experiments/reproduce/stats.py)."""

import math

from experiments.reproduce import stats


def test_interval_matches_closed_form():
    iv = stats.interval([0.0, 2.0])  # sd sqrt(2), n 2: half width t_{0.975,1} = 12.7062
    assert iv["n"] == 2 and iv["mean"] == 1.0
    assert math.isclose(iv["hi"] - 1.0, 12.706204736, rel_tol=1e-8)
    five = stats.interval([1.0, 2.0, 3.0, 4.0, 5.0])  # t_{0.975,4} = 2.776445 x sqrt(2.5/5)
    assert math.isclose(five["hi"] - 3.0, 2.776445105 * math.sqrt(0.5), rel_tol=1e-8)


def test_interval_drops_missing_and_one_value_has_no_width():
    iv = stats.interval([0.5, None, float("nan")])
    assert iv["n"] == 1 and iv["mean"] == 0.5 and math.isnan(iv["lo"])
    assert stats.fmt(iv) == "0.500"


def test_verdicts():
    hi, lo = [0.80, 0.81, 0.82], [0.60, 0.61, 0.62]
    assert stats.verdict(hi, lo) == stats.HOLDS
    assert stats.verdict(lo, hi) == stats.FAILS
    assert stats.verdict([0.6, 0.8, 0.7], [0.65, 0.75, 0.7]) == stats.OVERLAP
    assert stats.verdict([0.9], [0.1]) == stats.OVERLAP  # one seed proves nothing
