"""Per-example gradients via vmap equal a per-example loop, and sum to the batch gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import clipping
from tests.models import _tiny

TOL = 100 * float(jnp.finfo(jnp.float32).eps)


def _close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("name", ["logreg", "mlp", "uldp_cnn", "char_lstm"])
def test_vmapped_per_example_grads_equal_loop(name):
    model = _tiny.tiny_model(name)
    params = model.init(jax.random.key(0))
    x, y = _tiny.batch(name, model, n=5)
    vmapped = jax.jit(lambda p, xs, ys: clipping.per_example_grads(model.example_loss, p, xs, ys))
    one = jax.jit(jax.grad(model.batch_loss))
    with jax.default_matmul_precision("highest"):  # both sides at full float32 (GPU: not TF32)
        grads = vmapped(params, x, y)
        for i in range(len(x)):
            _close(jax.tree.map(lambda g, i=i: g[i], grads), one(params, x[i:i + 1], y[i:i + 1]))
        # Mean of per-example gradients = gradient of the batch-mean loss.
        _close(jax.tree.map(lambda g: g.mean(0), grads), one(params, x, y))


def test_per_example_grads_with_dropout_keys_equal_loop():
    model = _tiny.tiny_model("mlp")  # dropout 0.2 after each hidden layer
    params = model.init(jax.random.key(0))
    x, y = _tiny.batch("mlp", model, n=4)
    keys = jax.random.split(jax.random.key(9), 4)

    def example_loss(p, xi, yi, k):
        return model.example_loss(p, xi, yi, key=k)

    grads = jax.jit(lambda p: clipping.per_example_grads(example_loss, p, x, y, keys))(params)
    one = jax.jit(jax.grad(example_loss))
    for i in range(4):
        _close(jax.tree.map(lambda g, i=i: g[i], grads), one(params, x[i], y[i], keys[i]))
    # Dropout is on: the gradient differs from the evaluation-mode gradient.
    eval_grad = jax.grad(model.example_loss)(params, x[0], y[0])
    assert not all(np.allclose(a, b) for a, b in zip(
        jax.tree.leaves(eval_grad), jax.tree.leaves(jax.tree.map(lambda g: g[0], grads))))
