"""DP-OGL pair through an overlapping worker: zero leakage before the propagation delay,
detectable but below the Theorem 1 bound after it."""

import jax
import pytest

from jaxfl.audit import dp_ogl as audit_ogl


@pytest.fixture(scope="module")
def result():
    return audit_ogl.audit_dp_ogl_pair(noise_multiplier=0.3, trials=12_000, delta=1e-2,
                                       key=jax.random.key(5))


def test_onset_matches_theorem_1_and_is_exact(result):
    info = result.info
    assert info["onset_epoch"] == 2 * 1 + 2  # t* = S rho + 2
    assert info["identical_before_onset"]  # bitwise, under common randomness
    assert info["differs_at_onset"]
    assert info["claim_before_onset"] == 0.0
    assert info["pre_onset_epsilon_lb"] == 0.0
    assert info["mechanisms_counted"] == 2  # Example 2 of the paper: K_{1,3}(4) = 2


def test_leakage_after_onset_is_detected_and_below_the_bound(result):
    assert result.epsilon_lb > 0.5
    assert result.epsilon_lb <= result.claimed["strict"]
    assert result.epsilon_lb <= result.claimed["paper"]
