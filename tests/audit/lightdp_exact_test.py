"""LightDP-FL paper design at delta = 1e-2 (issue 16 d), and the count-based bound."""

import jax
import pytest

from jaxfl.audit import bounds, lightdp


def test_counts_bound_matches_direct_formula():
    b = bounds.epsilon_lower_bound_from_counts(500, 1000, 5, 1000, delta=0.0, confidence=0.9)
    assert b.selection == "fixed" and b.tpr == 0.5 and b.fpr == 0.005
    assert b.epsilon_lb < b.epsilon_point == pytest.approx(4.60517, abs=1e-4)


def test_paper_design_at_delta_1e2_is_exceeded_and_strict_holds():
    r = lightdp.audit_lightdp_exact(epsilon=9.0, delta=1e-2, num_clients=10, max_colluders=8,
                                    max_stragglers=8, rounds=150, trials=1_000_000_000,
                                    check_trials=2000, key=jax.random.key(0))
    assert r.info["library_check"]["ok"]
    assert r.claimed["strict"] == pytest.approx(9.5356, abs=1e-3)
    assert r.claimed["paper"] < r.epsilon_lb <= r.claimed["strict"]
