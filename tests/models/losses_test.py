"""jaxfl.models.losses: the cross-entropy picks the label's logit without a gather (whose
gradient is a scatter-add, serialized by XLA:GPU under deterministic ops), and is
optax.softmax_cross_entropy_with_integer_labels' value and gradient bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxfl.models import losses


def _optax(logits, y):
    return losses._mean_rest(optax.softmax_cross_entropy_with_integer_labels(logits, y))


@pytest.mark.parametrize("shape", [(7, 10), (5, 6, 13)])
def test_cross_entropy_is_optax_bit_for_bit(shape):
    rng = np.random.default_rng(0)
    logits = jnp.asarray(30 * rng.normal(size=shape).astype(np.float32))
    y = jnp.asarray(rng.integers(-shape[-1], shape[-1], shape[:-1]), jnp.int32)  # negatives too
    w = jnp.arange(1.0, shape[0] + 1.0)
    for f in (lambda g: g, jax.jit):
        np.testing.assert_array_equal(f(losses.softmax_cross_entropy)(logits, y),
                                      f(_optax)(logits, y))
        got = f(jax.grad(lambda l: jnp.sum(w * losses.softmax_cross_entropy(l, y))))(logits)
        want = f(jax.grad(lambda l: jnp.sum(w * _optax(l, y))))(logits)
        np.testing.assert_array_equal(got, want)


def test_label_logits_is_take_along_axis_out_of_range_labels_included():
    logits = jnp.tile(jnp.array([1.0, 2.0, 3.0]), (6, 1))
    y = jnp.array([0, 2, -1, -3, 3, -4])  # in range, from the end, outside [-3, 3)
    want = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(losses.label_logits(logits, y), want)
    assert np.isnan(np.asarray(losses.label_logits(logits, y))[4:]).all()


def test_cross_entropy_gradient_has_no_gather_or_scatter():
    logits, y = jnp.zeros((4, 10)), jnp.arange(4)
    jaxpr = str(jax.make_jaxpr(jax.grad(
        lambda l: jnp.sum(losses.softmax_cross_entropy(l, y))))(logits))
    assert "scatter" not in jaxpr and "gather" not in jaxpr, jaxpr
