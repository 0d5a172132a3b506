"""The claims engine (jaxfl/repro/claims.py): declared paired claims, one Holm family."""

import numpy as np
from scipy import stats as st

from jaxfl.repro import stats
from jaxfl.repro.claims import NOT_RUN, Cmp, Exact, Paired, chain, decide, decide_exact
from tests._holm import holm

CELLS = {"a": {0: 0.80, 1: 0.83, 2: 0.79, 3: 0.82},
         "b": {0: 0.75, 1: 0.79, 2: 0.76, 3: 0.76},
         "c": {0: 0.77, 1: 0.78, 2: 0.77, 3: 0.79},
         "d": {0: 0.801, 1: 0.822, 2: 0.785, 3: 0.826}}


def test_one_holm_family_over_every_claim_and_not_run_outside_it():
    """Each comparison's p-value is scipy's paired t-test on the seeds, Holm-corrected over
    every comparison of every claim that ran (the missing cell's claim is "not run" and not
    counted); a claim holds only when all its comparisons hold. Wrong implementations caught:
    Holm per claim, unpaired tests, a not-run claim counted in the family, any-part-holds."""
    decl = [Paired("a > b", (Cmp("a", "b"),), {"row": 1}),
            Paired("a > b and c > a", (Cmp("a", "b"), Cmp("c", "a"))),
            Paired("a > x", (Cmp("a", "x"),))]
    out = decide(decl, CELLS.get)
    assert out[0]["row"] == 1 and out[2]["verdict"] == NOT_RUN and out[2]["missing"] == ["x"]
    pairs = [("a", "b"), ("a", "b"), ("c", "a")]
    p = [st.ttest_rel(list(CELLS[x].values()), list(CELLS[y].values())).pvalue for x, y in pairs]
    got = [q["test"]["p_holm"] for r in out[:2] for q in r["parts"]]
    np.testing.assert_allclose(got, holm(p), rtol=1e-9)
    assert out[0]["verdict"] == stats.HOLDS
    assert out[1]["verdict"] == stats.FAILS  # c is significantly below a
    assert out[0]["interval_verdict"] == stats.verdict(list(CELLS["a"].values()),
                                                       list(CELLS["b"].values()))


def test_margin_is_non_inferiority_of_b_minus_a():
    """``Cmp(a, b, margin)``: b - a tested against the margin, holding when significantly
    below it. Here e is a + 0.002 (spread 1e-4) on every seed: "a not below e by more than 0.01"
    holds, "... by more than 0.001" does not. Wrong implementations caught: a - b tested (both
    would hold), the margin ignored (the first would not hold)."""
    cells = {"a": CELLS["a"], "e": {s: v + 0.002 + 1e-4 * (-1) ** s for s, v in CELLS["a"].items()}}
    out = decide([Paired("a ~ e", (Cmp("a", "e", 0.01),)),
                  Paired("a ~ e tight", (Cmp("a", "e", 0.001),))], cells.get)
    assert abs(out[0]["parts"][0]["d"]["mean"] - 0.002) < 1e-12
    assert out[0]["verdict"] == stats.HOLDS and out[0]["interval_verdict"] == stats.HOLDS
    assert out[1]["verdict"] == stats.FAILS and out[1]["interval_verdict"] == stats.FAILS


def test_one_seed_and_chain():
    """A claim on one pair is inconclusive, or ``one_seed`` when given; :func:`chain` declares
    an ordering as its adjacent pairs."""
    one = {k: {0: v[0]} for k, v in CELLS.items()}
    decl = chain(["a", "c", "b"], fields=lambda x, y: {"pair": x + y})
    assert [(c.claim, c.cmps[0].a, c.cmps[0].b, c.fields) for c in decl] == [
        ("a > c", "a", "c", {"pair": "ac"}), ("c > b", "c", "b", {"pair": "cb"})]
    assert {r["verdict"] for r in decide(decl, one.get)} == {stats.INCONCLUSIVE}
    assert {r["verdict"] for r in decide(decl, one.get, one_seed="one")} == {"one"}


def test_exact_claims_are_formats_and_predicates_of_the_numbers():
    """:class:`Exact`: claim and measured formatted from the numbers, ``holds`` the rule's
    bool, None for a descriptive claim (never a verdict). Wrong implementations caught: a
    descriptive claim decided, the rule's value passed through unconverted."""
    table = (Exact("x within {tol:.0%}", "x = {x:.2f}", lambda v: abs(v.x - 1) <= v.tol,
                   {"panel": "(a)"}),
             Exact("x described", "{x}", None))
    out = decide_exact(table, {"x": 1.04, "tol": 0.05})
    assert out[0] == {"panel": "(a)", "claim": "x within 5%", "measured": "x = 1.04",
                      "holds": True}
    assert out[1]["holds"] is None
    assert decide_exact(table, {"x": 1.06, "tol": 0.05})[0]["holds"] is False


def test_by_shifts_a_before_the_test():
    """``Cmp(a, b, by=m)``: "a exceeds b by more than m", a - m against b (a is 0.045 above b
    on average): by 0.01 holds, by 0.08 does not; the intervals printed are a - m's."""
    out = decide([Paired("a > b + 0.01", (Cmp("a", "b", by=0.01),)),
                  Paired("a > b + 0.08", (Cmp("a", "b", by=0.08),))], CELLS.get)
    assert out[0]["verdict"] == stats.HOLDS and out[1]["verdict"] == stats.FAILS
    assert abs(out[0]["parts"][0]["a"]["mean"] - (np.mean(list(CELLS["a"].values())) - 0.01)) \
        < 1e-12


def test_a_claim_without_comparisons_is_refused():
    import pytest

    from jaxfl.validate import JaxflValueError

    with pytest.raises(JaxflValueError, match="'empty'.*non-empty tuple of claims.Cmp"):
        Paired("empty", ())
    with pytest.raises(JaxflValueError, match="cmps=\\(\\('a', 'b'\\),\\)"):
        Paired("tuple", (("a", "b"),))
