"""Hypothesis property tests on random graphs (derandomized, small sizes)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl.sensitivity import gossip_sensitivity, modes, views
from jaxfl.sensitivity import linear_system as ls
from jaxfl.topology import graphs, mixing

SETTINGS = settings(derandomize=True, max_examples=15, deadline=None)


@st.composite
def graph_case(draw):
    n = draw(st.integers(4, 8))
    p = draw(st.sampled_from([0.3, 0.5, 0.8]))
    seed = draw(st.integers(0, 10_000))
    kind = draw(st.sampled_from(["maxdeg", "closed", "mh"]))
    A = graphs.erdos_renyi(n, p, seed=seed)
    W = {"maxdeg": mixing.max_degree, "closed": mixing.closed_neighbourhood,
         "mh": mixing.metropolis_hastings}[kind](A)
    j = draw(st.integers(0, n - 1))
    i = draw(st.integers(0, n - 2))
    i = i if i < j else i + 1
    T = draw(st.integers(1, 5))
    return W, j, i, T


@SETTINGS
@given(graph_case(), st.sampled_from(["tm1", "tm3", "tm4", "tm4_exact"]))
def test_dense_equals_structured_and_bounds(case, view):
    W, j, i, T = case
    v = views.make_view(W, view, target=j, observer=i)
    a = ls.dense_terms(W, v, T)
    b = ls.structured_terms(W, v, T, backend="numpy")
    assert np.max(np.abs(a.M - b.M)) < 1e-9 * max(1.0, np.max(np.abs(a.M)))
    assert ls.in_range(a) and ls.in_range(b)
    M = b.M
    lam = np.linalg.eigvalsh(M)
    assert lam[0] >= -1e-9 and lam[-1] <= 1 + 1e-9                     # 0 ≼ M ≼ I
    sign = modes.sign_exact(M)[0]
    _, hi = modes.sdp_bounds(M)
    cert = modes.certified(M)
    assert -1e-12 <= modes.paper(M) <= sign + 1e-9 <= hi + 2e-9
    assert hi <= cert + 1e-9 and cert <= T + 1e-9


@SETTINGS
@given(graph_case())
def test_tm1_psd_below_tm3_and_monotone_in_T(case):
    W, j, i, T = case
    m1 = gossip_sensitivity(W, j, i, T, view="tm1", mode="paper").M
    m3 = gossip_sensitivity(W, j, i, T, view="tm3", mode="paper").M
    assert np.linalg.eigvalsh(m3 - m1)[0] >= -1e-9
    prev = 0.0
    for h in range(1, T + 1):
        cur = gossip_sensitivity(W, j, i, h, view="tm1", mode="paper").delta_sq
        assert cur >= prev - 1e-10
        prev = cur


@SETTINGS
@given(graph_case())
def test_relabelling_invariance(case):
    W, j, i, T = case
    n = W.shape[0]
    perm = np.random.default_rng(n * 31 + T).permutation(n)
    inv = np.argsort(perm)
    Wp = W[np.ix_(perm, perm)]
    for view in ("tm1", "tm3"):
        a = gossip_sensitivity(W, j, i, T, view=view, mode="certified")
        b = gossip_sensitivity(Wp, int(inv[j]), int(inv[i]), T, view=view, mode="certified")
        assert abs(a.delta_sq - b.delta_sq) < 1e-9 and abs(a.paper - b.paper) < 1e-9
