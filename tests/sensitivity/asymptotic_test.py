"""Asymptotic rates: the Perron limit of Fig. 1 (Koskela & Kulkarni 2025, Sec. 4) and the
per-frequency rate of the worst pattern (our derivation)."""

import numpy as np

from jaxfl.sensitivity import asymptotic, gossip_sensitivity, views
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
