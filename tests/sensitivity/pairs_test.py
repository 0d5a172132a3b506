"""All-pairs (vmapped) matrices agree with single-pair calls; curves agree with horizons."""

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.sensitivity import all_pairs_curves, all_pairs_sensitivity, gossip_sensitivity
from jaxfl.topology import mixing
from tests.sensitivity import _graphs


@pytest.mark.parametrize("view,method", [("tm1", "structured"), ("tm1", "kalman"),
                                         ("tm3", "kalman"), ("tm3", "structured"),
                                         ("tm4", "structured"), ("tm4_exact", "kalman")])
def test_all_pairs_match_single_pairs(view, method):
    _, W = _graphs.er(7, 0.45, seed=4, kind="closed")
    T = 4
    for mode in ("paper", "certified"):
        P = all_pairs_sensitivity(W, T, view=view, mode=mode, method=method)
        assert P.mode == mode and P.view == view and P.delta_sq.shape == (7, 7)
        assert np.all(np.isnan(np.diag(P.delta_sq)))
        for i in range(7):
            for j in range(7):
                if i != j:
                    ref = gossip_sensitivity(W, j, i, T, view=view, mode=mode)
                    assert abs(P.delta_sq[i, j] - ref.delta_sq) < 1e-9, (i, j)
                    assert abs(P.paper[i, j] - ref.paper) < 1e-9
        assert P.off_diagonal().size == 42


def test_all_pairs_subsets_and_sign_exact():
    _, W = _graphs.er(8, 0.4, seed=2)
    P = all_pairs_sensitivity(W, 3, view="tm1", mode="sign_exact", observers=[0, 5],
                              targets=[5, 1, 2])
    assert P.delta_sq.shape == (2, 3) and np.isnan(P.delta_sq[1, 0])
    ref = gossip_sensitivity(W, 2, 0, 3, mode="sign_exact").delta_sq
    assert abs(P.delta_sq[0, 2] - ref) < 1e-9
    with pytest.raises(validate.JaxflValueError):
        all_pairs_sensitivity(W, 25, mode="sign_exact")
    with pytest.raises(validate.TopologyError):
        all_pairs_sensitivity(W, 3, observers=[9])


def test_time_varying_all_pairs():
    A, _ = _graphs.er(6, 0.5, seed=1)
    Ws = mixing.edge_sampled(A, 3, keep_prob=0.7, seed=0)
    P = all_pairs_sensitivity(Ws, 3, view="tm3", mode="paper")
    assert P.method == "kalman"
    ref = gossip_sensitivity(Ws, 4, 1, 3, view="tm3", mode="paper", method="dense").delta_sq
    assert abs(P.delta_sq[1, 4] - ref) < 1e-9
    with pytest.raises(validate.JaxflValueError):
        all_pairs_sensitivity(Ws, 3, method="structured")


@pytest.mark.parametrize("view", ["tm1", "tm3", "tm4"])
def test_curves_match_each_horizon(view):
    _, W = _graphs.er(7, 0.45, seed=6)
    hs = (1, 3, 5)
    c = all_pairs_curves(W, hs, view=view)
    c_paper = all_pairs_curves(W, hs, view=view, certified=False) if view == "tm3" else c
    for k, h in enumerate(hs):
        for i, j in ((0, 1), (2, 6), (5, 3)):
            ref = gossip_sensitivity(W, j, i, h, view=view, mode="certified")
            assert abs(c.paper[k, i, j] - ref.paper) < 1e-9
            assert abs(c.certified[k, i, j] - ref.delta_sq) < 1e-9
            assert abs(c_paper.paper[k, i, j] - ref.paper) < 1e-9


def test_known_none_and_own_noise_infinite_pairs():
    """TM-1 without the correction equals the uncorrected single-pair value; a graph where
    the observer knows all noise reaching it yields inf, never a finite under-estimate."""
    _, W = _graphs.er(6, 0.5, seed=3)
    P = all_pairs_sensitivity(W, 2, view="tm1", mode="paper", known_noise="none")
    ref = gossip_sensitivity(W, 3, 0, 2, mode="paper", known_noise="none").delta_sq
    assert abs(P.delta_sq[0, 3] - ref) < 1e-9
    # Star with a leaf observer: maxdeg_W gives the leaf weight 1/(n-1) on the centre and
    # (n-2)/(n-1) on itself; its view at T = 1 mixes only its own (known) and the centre's
    # noise, so targets beyond the centre are 0 at T = 1 and the centre target is finite.
    from jaxfl.topology import graphs
    Ws = mixing.max_degree(graphs.star(5))
    P = all_pairs_sensitivity(Ws, 1, view="tm1", mode="paper")
    assert P.delta_sq[1, 2] == 0.0 and np.isfinite(P.delta_sq[1, 0])
