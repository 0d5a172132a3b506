"""Dense vs structured vs Kalman, consistency with a simulation of Eq. (3.1) / (3.5), range check."""

import jax
import numpy as np
import pytest

from jaxfl import validate
from jaxfl.algorithms import gossip as gossip_alg
from jaxfl.sensitivity import kalman, modes, views
from jaxfl.sensitivity import linear_system as ls
from jaxfl.topology import mixing
from tests.sensitivity import _graphs

TOL = 1e-9


def _rel(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def _views_for(W, j, i):
    return [views.make_view(W, "tm1", target=j, observer=i),
            views.make_view(W, "tm1", target=j, observer=i, known_noise="none"),
            views.make_view(W, "tm2", target=j, colluders=[i, (j + 3) % W.shape[0]]),
            views.make_view(W, "tm3", target=j, observer=i),
            views.make_view(W, "tm4", target=j, observer=i),
            views.make_view(W, "tm4_exact", target=j, observer=i)]


@pytest.mark.parametrize("kind", ["maxdeg", "closed"])
def test_three_methods_agree(kind):
    A, W = _graphs.er(9, 0.35, seed=3, kind=kind)
    rng = np.random.default_rng(0)
    for T in ((1, 5) if kind == "maxdeg" else (5,)):
        for v in _views_for(W, 2, 5):
            a = ls.dense_terms(W, v, T)
            b = ls.structured_terms(W, v, T)
            c = kalman.kalman_terms(W, v, T)
            b_np = ls.structured_terms(W, v, T, backend="numpy")
            assert _rel(b.M, a.M) < TOL and _rel(c.M, a.M) < TOL, (v.name, T)
            assert _rel(b_np.M, a.M) < TOL
            for terms in (a, b, c, b_np):
                assert ls.in_range(terms)
            for d in rng.uniform(-1, 1, size=(3, T)):
                ref = d @ a.M @ d
                assert abs(d @ b.M @ d - ref) <= TOL * max(1, ref)
                assert abs(d @ c.M @ d - ref) <= TOL * max(1, ref)
            for mode in ("paper", "certified", "sign_exact"):
                vals = [float(modes.mode_value(t.M, mode)) for t in (a, b, c)]
                assert max(vals) - min(vals) <= TOL * max(1.0, vals[0]), (mode, vals)


def test_kalman_prefix_trace_matches_each_horizon():
    _, W = _graphs.er(8, 0.4, seed=5)
    v = views.make_view(W, "tm3", target=1, observer=6)
    _, trace = kalman.kalman_terms(W, v, 6, return_trace=True)
    for h in range(1, 7):
        ref = ls.dense_terms(W, v, h).M
        assert abs(trace.paper[h - 1] - ref.sum()) < TOL
        assert abs(trace.abs_sum[h - 1] - np.abs(ref).sum()) < TOL


def test_time_varying_dense_vs_kalman():
    A, _ = _graphs.er(8, 0.45, seed=7)
    Ws = mixing.edge_sampled(A, 6, keep_prob=0.6, seed=1)
    for name in ("tm1", "tm3", "tm4", "tm4_exact"):
        v = views.make_view(Ws, name, target=0, observer=3)
        a = ls.dense_terms(Ws, v, 6)
        c = kalman.kalman_terms(Ws, v, 6)
        if ls.in_range(a):
            assert ls.in_range(c)
            assert _rel(c.M, a.M) < TOL, name
    with pytest.raises(validate.JaxflValueError):
        ls.structured_terms(Ws, views.make_view(Ws, "tm1", target=0, observer=3), 6)


@pytest.mark.parametrize("model", ["ss", "p"])
@pytest.mark.parametrize("varying", [False, True])
def test_simulation_consistency(model, varying):
    """Running (3.1)/(3.5) gives C θ_t = H_T (x + u), and Y(D) - Y(D') = G_T δ exactly."""
    A, W = _graphs.er(7, 0.5, seed=11)
    T, n, j = 5, 7, 4
    Wt = mixing.edge_sampled(A, T, keep_prob=0.7, seed=2) if varying else W
    rows = np.array([1, 4, 6])
    v = views.View("custom", model, rows, np.array([], dtype=np.int64), j)
    H, G = ls.dense_system(Wt, v, T, correct=False)
    rng = np.random.default_rng(0)
    x, u = rng.normal(size=(T, n)), rng.normal(size=(T, n))
    delta = rng.uniform(-1, 1, size=T)
    x2 = x.copy()
    x2[:, j] -= delta
    with jax.enable_x64(True):
        th = np.asarray(gossip_alg.gossip_streams(Wt, x, u, model=model))
        th2 = np.asarray(gossip_alg.gossip_streams(Wt, x2, u, model=model))
    Y = th[:, rows].reshape(-1)
    np.testing.assert_allclose(Y, H @ (x + u).reshape(-1), atol=1e-12)
    np.testing.assert_allclose(Y - th2[:, rows].reshape(-1), G @ delta, atol=1e-12)


def test_range_check_target_noise_known_is_infinite():
    W = _graphs.path_maxdeg(3)
    # Low level: observer 0 knows its own and the target's noise; at t = 1 its view
    # 0.5 (v_0 + v_1) carries no unknown noise but the signal 0.5 δ_0: mutually singular.
    v = views.View("custom", "ss", np.array([0]), np.array([0, 1]), 1)
    for fn in (ls.dense_terms, ls.structured_terms, kalman.kalman_terms):
        assert not ls.in_range(fn(W, v, 3), np.ones(3)), fn.__name__
        assert not ls.in_range(fn(W, v, 3))
    # Everything known: no noise at all.
    v = views.View("custom", "ss", np.array([0]), np.arange(3), 1)
    assert not ls.in_range(ls.structured_terms(W, v, 2), np.ones(2))
    # The public constructor rejects the target in the known set.
    with pytest.raises(validate.TopologyError):
        views.make_view(W, "tm2", target=1, colluders=[1, 3])


def test_range_check_residual_small_when_target_unknown():
    _, W = _graphs.er(8, 0.4, seed=2, kind="closed")
    for name in ("tm1", "tm3", "tm4"):
        v = views.make_view(W, name, target=3, observer=5)
        H, G = ls.dense_system(W, v, 5)
        z, *_ = np.linalg.lstsq(H, G @ np.ones(5), rcond=None)
        g = G @ np.ones(5)
        assert np.linalg.norm(H @ z - g) / np.linalg.norm(g) < 1e-8
        assert ls.in_range(ls.structured_terms(W, v, 5))


def test_rank_deficient_complete_graph_tm3():
    W = _graphs.complete_avg(6)
    v = views.make_view(W, "tm3", target=2, observer=4)
    for fn in (ls.dense_terms, ls.structured_terms, kalman.kalman_terms):
        t = fn(W, v, 4)
        assert ls.in_range(t)
        assert abs(t.M.sum() - 4 / 5) < 1e-10, fn.__name__


def test_block_diagonal_cumsum_matches_definition():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(5, 2, 5, 2))
    with jax.enable_x64(True):
        K = np.asarray(ls.block_diagonal_cumsum(g))
    ref = np.zeros_like(g)
    for t in range(5):
        for s in range(5):
            for r in range(min(t, s) + 1):
                ref[t, :, s, :] += g[t - r, :, s - r, :]
    np.testing.assert_allclose(K, ref, atol=1e-12)


def test_bad_inputs():
    W = _graphs.path_maxdeg(4)
    v = views.make_view(W, "tm1", target=0, observer=1)
    with pytest.raises(validate.ShapeError):
        ls.structured_terms(np.ones((3, 4)), v, 2)
    with pytest.raises(validate.JaxflValueError):
        ls.structured_terms(W, v, 0)
    with pytest.raises(validate.TopologyError):
        ls.check_mixing(np.full((3, 3), np.nan))


def test_sparse_host_kalman_matches_jax_kalman():
    from scipy import sparse

    from jaxfl.sensitivity import sensitivity_curve

    _, W = _graphs.er(12, 0.3, seed=4)
    for name in ("tm1", "tm3", "tm4"):
        v = views.make_view(W, name, target=3, observer=7)
        a = kalman.kalman_paper_curve_sparse(sparse.csr_matrix(W), v, 6)
        b = sensitivity_curve(W, 3, 7, 6, view=name, certified=False).paper
        np.testing.assert_allclose(a, b, atol=1e-12)
    v = views.View("custom", "ss", np.array([0]), np.array([0, 1]), 1)   # out of range
    assert np.isinf(kalman.kalman_paper_curve_sparse(_graphs.path_maxdeg(3), v, 3)).all()
