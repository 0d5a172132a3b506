"""Ghost-norm per-example clipping equals the two-pass reference; unsupported models fall back."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import clipping, ghost
from jaxfl.models import _flax, losses
from tests.models import _tiny

# float32 sums of up to a few thousand products: relative agreement to ~1e-5.
RTOL = 200 * float(jnp.finfo(jnp.float32).eps)

SUPPORTED = {"logreg", "binary_logreg", "linear", "fedavg_cnn", "femnist_cnn", "uldp_cnn",
             "cifar_cnn"}


def _assert_trees_close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        scale = float(jnp.max(jnp.abs(y))) + 1e-12
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=RTOL * scale)


def _both(model, params, x, y, mask, clip_norms, keys=None):
    """(ghost, two-pass) results for each clip norm (traced: one compile per method)."""
    def fn(method):
        return jax.jit(lambda p, c: ghost.model_clipped_grad_sum(
            model, p, x, y, mask, clip_norm=c, keys=keys, method=method))
    ghost_fn, ref_fn = fn("ghost"), fn("two_pass")
    return [(ghost_fn(params, c), ref_fn(params, c)) for c in clip_norms]


def test_supported_models_are_exactly_the_dense_and_conv_ones():
    got = set()
    for name in _tiny.TINY:
        model = _tiny.tiny_model(name)
        params = model.init(jax.random.key(0))
        x, y = _tiny.batch(name, model, n=2)
        if ghost.supports(model, params, jnp.asarray(x[0]), jnp.asarray(y[0])):
            got.add(name)
    # GroupNorm (mlp, fraud_net, resnet), embeddings / scanned cells (char_lstm) and the coupled
    # Cox loss are refused.
    assert got == SUPPORTED


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_ghost_equals_two_pass(name):
    model = _tiny.tiny_model(name)
    params = model.init(jax.random.key(1))
    x, y = _tiny.batch(name, model, n=6, seed=3)
    x, y = jnp.asarray(x), jnp.asarray(y)
    mask = jnp.array([1.0, 0.5, 0.0, 1.0, 2.0, 1.0])  # float weights multiply the clip factors
    for (g1, n1), (g2, n2) in _both(model, params, x, y, mask, [1e-3, 1e3]):
        np.testing.assert_allclose(np.asarray(n1), np.asarray(n2), rtol=RTOL)
        _assert_trees_close(g1, g2)


def test_ghost_with_dropout_keys_equals_two_pass():
    model = _tiny.tiny_model("uldp_cnn")  # dropout and channel dropout
    params = model.init(jax.random.key(1))
    x, y = _tiny.batch("uldp_cnn", model, n=5)
    keys = jax.random.split(jax.random.key(4), 5)
    [((g1, n1), (g2, n2))] = _both(model, params, jnp.asarray(x), jnp.asarray(y), jnp.ones(5),
                                   [0.05], keys=keys)
    np.testing.assert_allclose(np.asarray(n1), np.asarray(n2), rtol=RTOL)
    _assert_trees_close(g1, g2)
    # The keys matter: without them (evaluation mode) the norms differ.
    _, n3 = jax.jit(lambda p: ghost.model_clipped_grad_sum(
        model, p, jnp.asarray(x), jnp.asarray(y), jnp.ones(5), clip_norm=0.05))(params)
    assert not np.allclose(np.asarray(n1), np.asarray(n3))


class _Layers(nn.Module):
    """Convolutions with strides, dilation, explicit padding and no bias, and a dense layer on a
    sequence (several positions per example: the Gram form of the norm)."""

    @nn.compact
    def __call__(self, x, train: bool = False):
        x = nn.relu(nn.Conv(3, (3, 3), strides=(2, 1), padding="SAME", name="c0")(x))
        x = nn.relu(nn.Conv(4, (2, 3), kernel_dilation=(2, 1), padding=((1, 0), (2, 1)),
                            use_bias=False, name="c1")(x))
        x = x.reshape(x.shape[0], -1, 4)                       # [B, T, 4]
        x = nn.relu(nn.Dense(16, name="seq")(jnp.tile(x, (1, 1, 4))))  # T > 1 positions
        return nn.Dense(3, name="head")(x.mean(axis=1))


def _model(module, name="toy", input_shape=(7, 6, 2)):
    return _flax.from_flax(module, name=name, loss=losses.softmax_cross_entropy,
                           metrics=losses.classification_metrics, input_shape=input_shape)


def test_ghost_covers_strides_dilation_padding_and_sequences():
    model = _model(_Layers())
    params = model.init(jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (5, 7, 6, 2))
    y = jnp.arange(5) % 3
    layers = ghost.discover(model, params, x[0], y[0])
    assert {layers[p].kind for p in layers} == {"conv", "dense"}
    for (g1, n1), (g2, n2) in _both(model, params, x, y, jnp.ones(5), [1e-3, 1e3]):
        np.testing.assert_allclose(np.asarray(n1), np.asarray(n2), rtol=RTOL)
        _assert_trees_close(g1, g2)


def test_each_example_alone_has_norm_at_most_clip_norm():
    model = _tiny.tiny_model("fedavg_cnn")
    params = model.init(jax.random.key(2))
    x, y = _tiny.batch("fedavg_cnn", model, n=4)
    fn = jax.jit(lambda p, m: ghost.model_clipped_grad_sum(
        model, p, jnp.asarray(x), jnp.asarray(y), m, clip_norm=1e-2, method="ghost"))
    for i in range(4):
        total, norms = fn(params, jnp.eye(4)[i])
        got = float(jnp.sqrt(sum(jnp.sum(v ** 2) for v in jax.tree.leaves(total))))
        assert float(norms[i]) > 1e-2  # clipping is active
        assert got == pytest.approx(1e-2, rel=1e-5)


class _Shared(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool = False):
        d = nn.Dense(4, name="shared")
        return nn.Dense(2, name="head")(d(nn.relu(d(x))))


class _Scanned(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool = False):
        class Cell(nn.Module):
            @nn.compact
            def __call__(self, h, _):
                return jnp.tanh(nn.Dense(4, name="d")(h)), None

        scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False},
                       length=3)
        h, _ = scan(name="cell")(x, None)
        return nn.Dense(2, name="head")(h)


def _assert_auto_is_two_pass(model, params, x, y):
    mask = jnp.ones(x.shape[0])
    g1, n1 = ghost.model_clipped_grad_sum(model, params, x, y, mask, clip_norm=0.1)
    g2, n2 = clipping.clipped_grad_sum(model.example_loss, params, x, y, mask, clip_norm=0.1)
    np.testing.assert_allclose(np.asarray(n1), np.asarray(n2), rtol=RTOL)
    _assert_trees_close(g1, g2)


@pytest.mark.parametrize("module", [_Shared(), _Scanned()], ids=["shared", "scanned"])
def test_unsupported_layers_are_refused_and_auto_falls_back(module):
    model = _model(module, input_shape=(4,))
    params = model.init(jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (3, 4))
    y = jnp.arange(3) % 2
    assert not ghost.supports(model, params, x[0], y[0])
    with pytest.raises(ghost.GhostUnsupported):
        ghost.clipped_grad_sum(model, params, x, y, jnp.ones(3), clip_norm=1.0)
    _assert_auto_is_two_pass(model, params, x, y)


def test_auto_falls_back_for_group_norm_and_coupled_models():
    for name in ("mlp", "cox"):
        model = _tiny.tiny_model(name)
        params = model.init(jax.random.key(0))
        x, y = _tiny.batch(name, model, n=4)
        x, y = jnp.asarray(x), jnp.asarray(y)
        _assert_auto_is_two_pass(model, params, x, y)


def test_unknown_method_is_rejected():
    model = _tiny.tiny_model("logreg")
    with pytest.raises(ValueError, match="method"):
        ghost.model_clipped_grad_sum(model, model.init(jax.random.key(0)), jnp.ones((2, 6)),
                                        jnp.zeros(2, jnp.int32), jnp.ones(2), clip_norm=1.0,
                                        method="ghosts")
