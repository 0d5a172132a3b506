"""A result labelled ``sound`` upper-bounds the exact view of the adversary it names (issue 16).

Exact references: the secure-summation observer i sees its own state only (``tm1``, exact), so
``tm3`` (closed neighbourhood of j, a post-processing upper bound) must dominate it; the
plain-message observer i sees its own state and its neighbours' messages (``tm4_exact``), which
``tm4`` (the paper's reduction to j's stream) must dominate if it claims soundness. "Exact" is
the largest of the scalar worst case (``sign_exact``) and the feasible vector lower bound
(``sdp_bounds`` lower), both attained by admissible data differences.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl.sensitivity import all_pairs_sensitivity, gossip_sensitivity, modes, views
from jaxfl.topology import graphs, mixing
from tests.sensitivity import _graphs

SETTINGS = settings(derandomize=True, max_examples=40, deadline=None)
EXACT_REFERENCE = {"tm1": "tm1", "tm3": "tm1", "tm4": "tm4_exact", "tm4_exact": "tm4_exact"}


def exact_value(W, j, i, T, view, *, scalar=False):
    """Largest Δ² attained by an admissible difference for the exact view behind ``view``
    (scalar data: ``sign_exact``; vector data: also the feasible SDP point)."""
    r = gossip_sensitivity(W, j, i, T, view=EXACT_REFERENCE[view], mode="sign_exact")
    if scalar:
        return r.sign_exact
    lo, _ = modes.sdp_bounds(np.asarray(r.M))
    return max(r.sign_exact, float(lo))


@st.composite
def small_connected(draw):
    n = draw(st.integers(3, 6))
    p = draw(st.sampled_from([0.4, 0.6, 0.9]))
    seed = draw(st.integers(0, 10_000))
    A = graphs.erdos_renyi(n, p, seed=seed)          # connected by construction
    kind = draw(st.sampled_from(["maxdeg", "mh"]))
    W = {"maxdeg": mixing.max_degree, "mh": mixing.metropolis_hastings}[kind](A)
    j = draw(st.integers(0, n - 1))
    i = draw(st.integers(0, n - 2))
    return W, j, i if i < j else i + 1, draw(st.integers(1, 4))


@SETTINGS
@given(small_connected())
def test_every_sound_result_bounds_the_exact_view(case):
    W, j, i, T = case
    for view in EXACT_REFERENCE:
        exact = {True: exact_value(W, j, i, T, view, scalar=True),
                 False: exact_value(W, j, i, T, view)}
        for mode in modes.MODES:
            r = gossip_sensitivity(W, j, i, T, view=view, mode=mode)
            if r.sound:   # sign_exact's label holds for scalar data only
                ref = exact[mode == "sign_exact"]
                assert r.delta_sq >= ref - 1e-9, (view, mode, r.delta_sq, ref)


def test_labels():
    assert not modes.is_sound("paper", "tm1")
    assert not modes.is_sound("certified", "tm4") and not modes.is_sound("sdp", "tm4")
    assert modes.is_sound("certified", "tm4_exact") and modes.is_sound("certified", "tm3")
    assert modes.is_sound("sign_exact", "tm1", scalar_data=True)
    assert not modes.is_sound("sign_exact", "tm1")          # vector data
    assert views.EXACT_VIEW["tm4"] == "tm4_exact"


def test_tm4_certified_is_below_the_exact_view_and_labelled_unsound():
    """4-node path, j = 1, i = 2, T = 3: 2.688 (tm4) < 2.731 (tm4_exact)."""
    W = _graphs.path_maxdeg(4)
    t = gossip_sensitivity(W, 1, 2, 3, view="tm4", mode="certified")
    e = gossip_sensitivity(W, 1, 2, 3, view="tm4_exact", mode="certified")
    assert t.delta_sq == pytest.approx(2.6881, abs=1e-4)
    assert e.delta_sq == pytest.approx(2.7308, abs=1e-4)
    assert t.delta_sq < exact_value(W, 1, 2, 3, "tm4") and not t.sound and e.sound
    assert not all_pairs_sensitivity(W, 3, view="tm4").sound   # vmapped entry point too


def test_property_catches_a_wrong_label(monkeypatch):
    """Were tm4 labelled sound, the property above would fail on the 4-node path."""
    monkeypatch.setitem(views.VIEW_SOUND, "tm4", True)
    r = gossip_sensitivity(_graphs.path_maxdeg(4), 1, 2, 3, view="tm4", mode="certified")
    assert r.sound and r.delta_sq < exact_value(_graphs.path_maxdeg(4), 1, 2, 3, "tm4")
