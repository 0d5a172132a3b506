"""The jit/vmap canary audit on mechanisms with known epsilon."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import validate
from jaxfl.accounting import conversions
from jaxfl.audit import canary, statistics


def _gaussian_mech(sigma, dim=1):
    direction = jnp.ones(dim) / jnp.sqrt(dim)

    def mech(key, present):
        return jnp.where(present, 1.0, 0.0) * direction + sigma * jax.random.normal(key, (dim,))

    return mech, direction


@pytest.mark.parametrize("dim", [1, 16])
def test_gaussian_mechanism_audit_is_tight_from_below(dim):
    sigma, delta = 1.0, 1e-2
    mech, direction = _gaussian_mech(sigma, dim)
    res = canary.audit(mech, statistics.projection(direction), key=jax.random.key(0),
                       trials=200_000, delta=delta, name="gauss",
                       claimed={"exact": conversions.gaussian_epsilon(1 / sigma, delta)})
    assert not res.exceeds("exact")
    assert res.epsilon_lb > 0.85 * res.claimed["exact"]
    assert res.trials == 200_000 and res.bound.n_pos == 100_000


def test_wrong_sigma_is_caught():
    """An accountant that believes sigma = 2 while the mechanism uses 1 is exposed."""
    delta = 1e-2
    mech, direction = _gaussian_mech(1.0)
    res = canary.audit(mech, statistics.projection(direction), key=jax.random.key(1),
                       trials=100_000, delta=delta,
                       claimed={"wrong": conversions.gaussian_epsilon(0.5, delta)})
    assert res.exceeds("wrong")


def test_noiseless_mechanism_gives_a_large_bound():
    res = canary.audit(lambda key, p: jnp.where(p, 1.0, 0.0), lambda v: v,
                       key=jax.random.key(2), trials=100_000, delta=1e-5)
    assert res.epsilon_lb > 9.0


def test_identical_views_give_zero():
    res = canary.audit(lambda key, p: jax.random.normal(key), lambda v: v,
                       key=jax.random.key(3), trials=20_000, delta=1e-5)
    assert res.epsilon_lb < 0.1


def test_scores_do_not_depend_on_batch_size_and_hypotheses_use_independent_keys():
    mech, direction = _gaussian_mech(1.0, 3)
    stat = statistics.projection(direction)
    a = canary.sample_scores(mech, stat, key=jax.random.key(4), trials=400, batch_size=50)
    b = canary.sample_scores(mech, stat, key=jax.random.key(4), trials=400, batch_size=400)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-6)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-6)
    assert abs(np.corrcoef(a[0], a[1])[0, 1]) < 0.2
    assert abs(a[0].mean() - 1.0) < 0.25 and abs(a[1].mean()) < 0.25


def test_select_builds_neighbour_data():
    d = {"x": jnp.ones(3)}
    dp = {"x": jnp.zeros(3)}
    assert float(canary.select(jnp.asarray(True), d, dp)["x"].sum()) == 3.0
    assert float(canary.select(jnp.asarray(False), d, dp)["x"].sum()) == 0.0


def test_bad_arguments():
    mech, direction = _gaussian_mech(1.0)
    with pytest.raises(validate.JaxflValueError):
        canary.sample_scores(mech, lambda v: v, key=jax.random.key(0), trials=1)
    with pytest.raises(validate.PrivacyParameterError):
        canary.audit(mech, lambda v: v, key=jax.random.key(0), trials=10, delta=-1.0)
