"""Audit of the library's DP-FedAvg: below the accountant, close to it, and it has power."""

import jax
import numpy as np
import optax
import pytest

from jaxfl import validate
from jaxfl.accounting import accountants, events
from jaxfl.algorithms import base, dp_fedavg
from jaxfl.audit import dp_fedavg as audit_fedavg


@pytest.fixture(scope="module")
def result():
    return audit_fedavg.audit_dp_fedavg(noise_multiplier=1.0, sampling_rate=0.5, rounds=2,
                                        trials=20_000, delta=1e-2, key=jax.random.key(7))


def test_audit_is_below_the_accountant_and_not_vacuous(result):
    eps = result.claimed["strict"]
    ref = accountants.epsilon(events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.5, steps=2),
                              1e-2)
    assert eps == pytest.approx(ref)
    assert result.epsilon_lb <= eps
    assert result.epsilon_lb >= 0.6 * eps, result


def test_audit_refutes_an_accountant_that_overstates_amplification(result):
    """Had the accountant used q/4 (e.g. a realised-cohort denominator bug), we would see it."""
    wrong = accountants.epsilon(events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.125,
                                              steps=2), 1e-2)
    assert result.epsilon_lb > wrong


def test_canary_federation_drives_a_clipped_update_along_e0():
    """The worst-case federation behaves as designed inside the real algorithm."""
    model = audit_fedavg.least_squares_model(3)
    alg = dp_fedavg.dp_fedavg(model, num_clients=4, local_steps=1, batch_size=None,
                              client_lr=1.0, clip_norm=0.7, noise_multiplier=1e-6,
                              sampling_rate=1.0, server_opt=optax.sgd(1.0))
    d, dp = audit_fedavg.canary_federation(num_clients=4, dim=3)
    state = alg.init(model.init(jax.random.key(0)))
    cohort = base.full_cohort(4)
    apply = jax.jit(alg.apply)
    sd, _ = apply(state, d.to_device(), cohort, jax.random.key(1))
    sdp, _ = apply(state, dp.to_device(), cohort, jax.random.key(1))
    diff = np.asarray(sd.params["w"] - sdp.params["w"])
    np.testing.assert_allclose(diff, [0.7 / 4, 0.0, 0.0], atol=1e-5)


def test_rejects_bad_parameters():
    with pytest.raises(validate.PrivacyParameterError):
        audit_fedavg.audit_dp_fedavg(noise_multiplier=0.0, sampling_rate=0.5, rounds=1,
                                     trials=10, delta=1e-2, key=jax.random.key(0))
    with pytest.raises(validate.JaxflValueError):
        audit_fedavg.audit_dp_fedavg(noise_multiplier=1.0, sampling_rate=0.5, rounds=0,
                                     trials=10, delta=1e-2, key=jax.random.key(0))
    with pytest.raises(validate.JaxflValueError):
        audit_fedavg.canary_federation(num_clients=1, dim=2)
