"""Seed statistics of the reproduction reports (jaxfl/repro/stats.py)."""

import math

from jaxfl.repro import stats


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


def test_paired_difference_matches_by_seed():
    """Pairs by seed, not by position: a wrong implementation that zips the value lists in
    file order (here seeds 2, 0, 1 against 0, 1, 2) gives a spread-out difference and fails."""
    a = {2: 0.72, 0: 0.70, 1: 0.81}
    b = {0: 0.68, 1: 0.79, 2: 0.70}
    d = stats.paired(a, b)
    assert d["n"] == 3 and d["seeds"] == [0, 1, 2]
    assert math.isclose(d["mean"], 0.02, abs_tol=1e-12) and d["hi"] - d["lo"] < 1e-9
    assert d["lo"] > 0  # the paired interval lies above 0
    # the seed spread swamps the unpaired intervals: the interval rule cannot tell
    assert stats.verdict(list(a.values()), list(b.values())) == stats.OVERLAP
    assert stats.paired({0: 1.0}, {1: 0.0})["n"] == 0  # no common seed


def test_comparable_is_non_inferiority_on_the_paired_difference():
    """A rule that calls "comparable" whenever the mean gap is under the margin (the old
    gossip rule) says holds for b ahead by 0.89 points with a paired interval reaching 1.74;
    non-inferiority says inconclusive, and does not hold once the whole interval is past it."""
    b = {0: 0.880, 1: 0.870, 2: 0.878}
    a = {0: 0.875, 1: 0.861, 2: 0.865}  # b - a: 0.005, 0.009, 0.013
    assert stats.comparable(a, b, 0.01) == stats.OVERLAP_MARGIN
    assert stats.comparable(a, b, 0.05) == stats.HOLDS
    far = {s: v - 0.05 for s, v in a.items()}
    assert stats.comparable(far, b, 0.01) == stats.FAILS


def test_holm_adjusts_step_down_and_decides_the_direction():
    """Holm over three paired tests with raw p 0.01, 0.04, 0.03: adjusted 0.03, 0.06, 0.06
    (step-down, monotone); only the first is significant at 5%, in the claimed direction
    (holds) or against it (does not hold); the p-value of a paired difference equals scipy's
    paired t-test. Wrong implementation caught: uncorrected p-values (all three significant)
    or Bonferroni without the step-down (0.03, 0.12, 0.09)."""
    import scipy.stats

    a, b = {0: 1.0, 1: 1.3, 2: 1.1}, {0: 0.2, 1: 0.4, 2: 0.35}
    d = stats.paired(a, b)
    want = scipy.stats.ttest_rel(list(a.values()), list(b.values())).pvalue
    assert abs(stats.p_value(d) - want) < 1e-12

    def fake(p, mean):
        t = stats.test({"mean": mean, "lo": mean - 1, "hi": mean + 1, "n": 3})
        t["p"] = p
        return t

    ts = stats.holm([fake(0.01, 1.0), fake(0.04, 1.0), fake(0.03, -1.0)])
    assert [round(t["p_holm"], 12) for t in ts] == [0.03, 0.06, 0.06]
    assert [t["verdict"] for t in ts] == [stats.HOLDS, stats.INCONCLUSIVE, stats.INCONCLUSIVE]
    assert stats.holm([fake(0.01, -1.0)])[0]["verdict"] == stats.FAILS
