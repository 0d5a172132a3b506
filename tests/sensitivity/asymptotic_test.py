"""Asymptotic rates: the Perron limit of Fig. 1 (Koskela & Kulkarni 2025, Sec. 4) and the
per-frequency rate of the worst pattern (our derivation)."""

import numpy as np

from jaxfl.sensitivity import asymptotic, gossip_sensitivity, sensitivity_curve, views
from tests.sensitivity import _graphs


def test_perron_limit_doubly_stochastic_and_closed():
    A, W = _graphs.er(30, 0.2, seed=3)
    v = views.make_view(W, "tm1", target=4, observer=9)
    assert abs(asymptotic.paper_rate_limit(W, v) - 1 / 29) < 1e-12
    A, Wc = _graphs.er(30, 0.2, seed=3, kind="closed")
    pi = asymptotic.perron_vector(Wc)
    deg = A.sum(1) + 1
    np.testing.assert_allclose(pi, deg / deg.sum(), atol=1e-12)   # π_k ∝ |N̄_k|
    v = views.make_view(Wc, "tm1", target=4, observer=9)
    assert abs(asymptotic.rate(Wc, v, [1e-7])[0] - asymptotic.paper_rate_limit(Wc, v)) < 1e-6


def test_rate_spectrum_example_and_alternating_pattern():
    """Reference values: ER(100, 0.2, seed 1), target 37, neighbour 1: r(0) = 0.0101, r(π) = 0.0463;
    the alternating pattern's Δ²/T approaches r(π) (the worst case is not r(0))."""
    A, W = _graphs.er(100, 0.2, seed=1)
    v = views.make_view(W, "tm1", target=37, observer=1)
    r0, rpi = asymptotic.rate(W, v, [1e-7, np.pi])
    assert abs(r0 - 0.0101) < 5e-5 and abs(rpi - 0.0463) < 5e-5
    top, arg = asymptotic.max_rate(W, v)
    assert abs(arg - np.pi) < 1e-9 and abs(top - rpi) < 1e-12
    T = 120
    M = gossip_sensitivity(W, 37, 1, T, mode="paper").M
    alt = (-1.0) ** np.arange(T)
    assert abs(alt @ M @ alt / T - rpi) < 0.1 * rpi
    far = views.make_view(W, "tm1", target=37, observer=0)
    assert abs(asymptotic.max_rate(W, far)[0] - asymptotic.rate(W, far, [1e-7])[0]) < 1e-6


def test_fig1_curves_approach_the_perron_limit_from_their_side():
    """Fig. 1's shape on ER(30, 0.2): the neighbour's paper-mode Δ²/T falls to the limit from
    above, the non-neighbour's rises to it from below, both monotone; a curve pushed across
    the limit, or with one step away from it, is caught (and a neighbour read as if it were
    below the limit fails the side check)."""
    A, W = _graphs.er(30, 0.2, seed=3)
    nbr, far = _graphs.nbr_and_far(A, 4)
    limit = asymptotic.paper_rate_limit(W, views.make_view(W, "tm1", target=4, observer=far))
    T = np.arange(1, 41)
    up, down = (sensitivity_curve(W, 4, i, 40, certified=False).paper / T for i in (far, nbr))
    assert asymptotic.approach(down, limit, from_above=True) == (True, True)
    assert asymptotic.approach(up, limit, from_above=False) == (True, True)
    assert not asymptotic.approach(down, limit, from_above=False)[0]
    crossed, bumped = down.copy(), up.copy()
    crossed[-1] = 0.9 * limit
    bumped[5] = bumped[4] - 1e-6
    assert asymptotic.approach(crossed, limit, from_above=True) == (False, True)
    assert asymptotic.approach(bumped, limit, from_above=False) == (True, False)


def _curve(observer, kind, paper, certified, T=(1, 2, 3, 4)):
    return {"observer": observer, "kind": kind, "T": list(T), "paper_T": list(T),
            "certified_T": list(T), "paper_over_T": paper, "certified_over_T": certified}


def test_observer_readings_decide_fig1_on_the_curves():
    """Each observer's side and monotonicity against the limit, its last finite value and the
    horizons where the certified bound lies above the paper's (a neighbour read from below, the
    first value taken as the last, or "above" taken as "not below" are caught); the committed
    Fig. 1 reads as the paper's shape."""
    limit = 0.1
    nbr = _curve(1, "neighbour", [0.3, 0.2, 0.15, None], [0.3, 0.25, 0.15, None])
    far = _curve(0, "non-neighbour", [0.0, 0.05, 0.04, 0.08], [0.0, 0.05, 0.06, 0.09])
    a, b = asymptotic.observer_readings([nbr, far], limit)
    assert a["nbr"] and (a["on_side"], a["monotone"]) == (True, True)
    assert (a["last"], a["T_last"], a["above"]) == (0.15, 3, [2])
    assert not b["nbr"] and (b["on_side"], b["monotone"]) == (True, False)
    assert (b["last"], b["T_last"], b["above"]) == (0.08, 4, [3, 4])
    assert a["paper_over_T"] == nbr["paper_over_T"] and b["observer"] == 0  # the curve kept
    import json
    from pathlib import Path
    res = json.loads((Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "data" /
                      "gossip_exact.json").read_text())["fig1_er"]
    got = asymptotic.observer_readings(res["curves"], res["limit"])
    assert all(o["on_side"] and o["monotone"] for o in got)


def test_view_comparison_reads_fig2_and_thm4():
    """Fig. 2's rows at tm3_certified's horizons (LDP None where it did not run) and Thm. 4's
    reduction against the exact plain-message view on their common horizons: where the exact
    view is larger, and the last two (a reversed comparison, the horizons of another series or
    the first two instead of the last two are caught); no exact view: None."""
    def s(T, eps):
        return {"T": list(T), "mean_eps": list(eps)}

    series = {"tm3_paper": s((1, 2, 3, 5), (1, 2, 2.5, 3)),
              "tm3_certified": s((1, 2, 5), (2, 3, 4)),
              "tm4_paper": s((1, 2, 3, 5), (1.0, 2.0, 2.5, 3.0)),
              "tm4_certified": s((1, 2, 5), (3, 4, 5)), "ldp": s((1, 2), (5, 6)),
              "tm4_exact_paper": s((1, 2, 4, 5), (1.0, 2.1, 9.9, 3.2))}  # 4: no reduction
    out = asymptotic.view_comparison(series)
    assert [r["T"] for r in out["rows"]] == [1, 2, 5]
    assert out["rows"][2] == dict(T=5, ldp=None, tm3_paper=3, tm3_certified=4, tm4_paper=3.0,
                                  tm4_certified=5)
    assert out["exact"] == dict(larger_at=[2, 5], horizons=3, last=[
        dict(T=2, ex=2.1, red=2.0), dict(T=5, ex=3.2, red=3.0)])
    del series["tm4_exact_paper"]
    assert asymptotic.view_comparison(series)["exact"] is None
