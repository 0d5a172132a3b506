import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl import clipping
from jaxfl import tree as jtree
from tests import _toy


def _tree(seed, scale=1.0, dtype=jnp.float32):
    k1, k2 = jax.random.split(jax.random.key(seed))
    return {"a": (scale * jax.random.normal(k1, (3, 4))).astype(dtype),
            "b": {"c": (scale * jax.random.normal(k2, (5,))).astype(dtype)}}


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 1000), scale=st.floats(1e-4, 1e3), clip=st.floats(1e-3, 10.0))
def test_clip_pytree_bounds_norm_and_keeps_direction(seed, scale, clip):
    t = _tree(seed, scale)
    c, norm = clipping.clip_pytree(t, clip)
    eps = jnp.finfo(jnp.float32).eps
    assert float(jtree.l2_norm(c)) <= clip * (1 + 10 * eps)
    factor = min(1.0, clip / float(norm))
    for x, y in zip(jax.tree.leaves(t), jax.tree.leaves(c), strict=True):
        np.testing.assert_allclose(y, x * factor, rtol=10 * eps, atol=1e-30)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_clip_keeps_dtype_and_handles_zero(dtype):
    t = jax.tree.map(jnp.zeros_like, _tree(0, dtype=dtype))
    c, norm = clipping.clip_pytree(t, 1.0)
    assert float(norm) == 0.0
    assert all(x.dtype == dtype for x in jax.tree.leaves(c))
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(c))


def test_weighted_clip():
    t = {"w": jnp.array([3.0, 4.0])}
    c, norm = clipping.weighted_clip(t, 1.0, 0.25)
    np.testing.assert_allclose(c["w"], [0.15, 0.2], rtol=1e-6)


def test_per_example_clipped_sum_equals_loop():
    model = _toy.logreg(5, 3)
    data = _toy.blobs(sizes=[9])
    params = model.init(jax.random.key(0))
    x, y, m = data.x[0], data.y[0], data.mask[0].copy()
    m[7:] = False
    total, norms = jax.jit(lambda p: clipping.clipped_grad_sum(
        model.example_loss, p, x, y, m, clip_norm=0.1))(params)
    ref = jax.tree.map(jnp.zeros_like, params)
    for i in range(7):  # the reference at full precision, like the clipped sum (any backend)
        with jax.default_matmul_precision("highest"):
            g = jax.grad(model.example_loss)(params, x[i], y[i])
        np.testing.assert_allclose(norms[i], jtree.l2_norm(g), rtol=1e-5)
        g, _ = clipping.clip_pytree(g, 0.1)
        ref = jtree.add(ref, g)
    for a, b in zip(jax.tree.leaves(total), jax.tree.leaves(ref), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_clip_and_sum_masks_and_weights():
    trees = {"w": jnp.array([[3.0, 4.0], [0.3, 0.4], [30.0, 40.0]])}
    s, norms = clipping.clip_and_sum(trees, 1.0, mask=jnp.array([True, True, False]),
                                     weights=jnp.array([1.0, 2.0, 5.0]))
    np.testing.assert_allclose(s["w"], [0.6 + 0.6, 0.8 + 0.8], rtol=1e-6)
    np.testing.assert_allclose(norms, [5.0, 0.5, 50.0], rtol=1e-6)


def _loop_clipped_sum(example_loss, params, xs, ys, mask, clip, extra=(), grads=None):
    """Reference: per-example gradients one at a time, clipped, summed over the mask.

    Returns ``(sum, norms, grads)``; pass ``grads`` back to re-clip without recomputing.
    """
    if grads is None:  # at full precision, like the clipped sums under test (any backend)
        grad = jax.jit(jax.grad(example_loss))
        with jax.default_matmul_precision("highest"):
            grads = [grad(params, xs[i], ys[i], *[e[i] for e in extra])
                     for i in range(len(xs))]
    ref = jax.tree.map(jnp.zeros_like, params)
    for g, m in zip(grads, mask, strict=True):
        if m:
            ref = jtree.add(ref, clipping.clip_pytree(g, clip)[0])
    return ref, np.asarray([float(jtree.l2_norm(g)) for g in grads]), grads


def _assert_tree_close(got, ref):
    tol = 100 * float(jnp.finfo(jnp.float32).eps)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(ref), strict=True):
        scale = max(float(jnp.max(jnp.abs(b))), 1e-30)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("name", ["logreg", "mlp", "fedavg_cnn", "resnet18_gn", "char_lstm"])
def test_two_pass_clipped_sum_equals_per_example_reference(name):
    """Flax models without batch norm (group norm in mlp / resnet18_gn); padded rows are masked
    out; the clip norm is the median norm, so some examples are clipped and some are not."""
    from tests.models import _tiny

    model = _tiny.tiny_model(name)
    params = model.init(jax.random.key(0))
    x, y = _tiny.batch(name, model, n=7)
    mask = np.array([True, True, False, True, True, True, False])
    _, norms, grads = _loop_clipped_sum(model.example_loss, params, x, y, mask, 1.0)
    clip = float(np.median(norms))
    ref, ref_norms, _ = _loop_clipped_sum(model.example_loss, params, x, y, mask, clip,
                                          grads=grads)
    assert np.any(norms[mask] > clip) and np.any(norms[mask] < clip)
    for method in ("two_pass", "one_pass"):
        total, got_norms = jax.jit(lambda p, m=method: clipping.clipped_grad_sum(
            model.example_loss, p, x, y, jnp.asarray(mask), clip_norm=clip, method=m))(params)
        _assert_tree_close(total, ref)
        np.testing.assert_allclose(got_norms, ref_norms, rtol=1e-5)


def test_two_pass_clipped_sum_with_per_example_dropout_keys():
    from tests.models import _tiny

    model = _tiny.tiny_model("mlp")  # dropout 0.2: both passes must use the same keys
    params = model.init(jax.random.key(0))
    x, y = _tiny.batch("mlp", model, n=6)
    keys = jax.random.split(jax.random.key(3), 6)
    mask = np.array([True, False, True, True, True, True])

    def example_loss(p, xi, yi, k):
        return model.example_loss(p, xi, yi, key=k)

    ref, norms, _ = _loop_clipped_sum(example_loss, params, x, y, mask, 0.5, extra=(keys,))
    total, got = jax.jit(lambda p: clipping.clipped_grad_sum(
        example_loss, p, x, y, jnp.asarray(mask), clip_norm=0.5, extra=(keys,)))(params)
    _assert_tree_close(total, ref)
    np.testing.assert_allclose(got, norms, rtol=1e-5)
    np.testing.assert_allclose(clipping.per_example_grad_norms(example_loss, params, x, y, keys),
                               norms, rtol=1e-5)


def test_clipped_grad_sum_rejects_unknown_method():
    from jaxfl import validate

    model = _toy.logreg(5, 3)
    data = _toy.blobs(sizes=[4])
    with pytest.raises(validate.JaxflValueError, match="method"):
        clipping.clipped_grad_sum(model.example_loss, model.init(jax.random.key(0)),
                                  data.x[0], data.y[0], data.mask[0], clip_norm=1.0,
                                  method="three_pass")
