"""ULDP-AVG with one user spread over every silo: sensitivity C, not |S| C."""

import jax
import pytest

from jaxfl.audit import uldp as audit_uldp


@pytest.mark.parametrize("weighting,q", [
    pytest.param("uniform", 1.0, marks=pytest.mark.slow), ("optimal", 0.5)])
def test_multi_silo_user_is_protected_at_the_claimed_level(weighting, q):
    r = audit_uldp.audit_uldp_avg(noise_multiplier=1.0, num_silos=3, rounds=2, trials=12_000,
                                  delta=1e-2, key=jax.random.key(9), weighting=weighting,
                                  sampling_rate=q)
    assert r.epsilon_lb <= r.claimed["strict"] <= r.claimed["paper"]
    assert r.epsilon_lb >= 0.6 * r.claimed["strict"], r
    if q == 1.0:  # a |S| C sensitivity would be far above what the attack achieves
        assert r.info["naive_epsilon"] > 2 * r.claimed["strict"]


def test_canary_federation_layout():
    data = audit_uldp.canary_silos(num_silos=3, num_users=4, dim=2)
    from jaxfl.algorithms import uldp_data

    hist = uldp_data.histogram(data)
    assert hist.shape == (3, 4) and (hist[:, 0] == 1).all()
    assert float(abs(data.x[data.user != 0]).sum()) == 0.0
