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
