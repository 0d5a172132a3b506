"""Every registered model: shapes, determinism, training signal, jit/vmap, dropout, GroupNorm."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import validate
from jaxfl.models import get_model
from tests.models import _tiny

NAMES = sorted(_tiny.TINY)
TOL = 50 * float(jnp.finfo(jnp.float32).eps)


def _leaves_close(a, b, tol=TOL):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_finite_loss_and_deterministic_init(name):
    fns = _tiny.compiled(name)
    model = fns.model
    params = model.init(jax.random.key(3))
    x, y = _tiny.batch(name, model)
    out, per, metrics = fns.forward(params, x, y)
    assert out.shape == (8, *_tiny.OUTPUT_SHAPE[name])
    assert per.shape == (8,)
    assert np.all(np.isfinite(per))
    assert "loss" in metrics
    for key, value in metrics.items():
        assert value.shape == (8,), key
    np.testing.assert_allclose(metrics["loss"], per, rtol=TOL, atol=TOL)
    # Deterministic given the key; a different key gives different parameters.
    again, other = model.init(jax.random.key(3)), model.init(jax.random.key(4))
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, c) for a, c in
               zip(jax.tree.leaves(params), jax.tree.leaves(other), strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_sgd_decreases_loss(name):
    fns = _tiny.compiled(name)
    params = fns.model.init(jax.random.key(0))
    x, y = _tiny.batch(name, fns.model)
    mask = np.arange(8) < 7  # one padded example
    lr = _tiny.LEARNING_RATE.get(name, 0.1)
    first, _ = fns.value_and_grad(params, x, y, mask)
    for _ in range(8):
        _, grads = fns.value_and_grad(params, x, y, mask)
        params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    last, _ = fns.value_and_grad(params, x, y, mask)
    assert np.isfinite(float(last))
    assert float(last) < 0.98 * float(first), (float(first), float(last))


@pytest.mark.parametrize("name", ["logreg", "mlp", "fedavg_cnn", "char_lstm", "cox"])
def test_jit_vmap_over_stacked_client_params(name):
    fns = _tiny.compiled(name)
    keys = jax.random.split(jax.random.key(1), 3)
    stacked = fns.stacked_init(keys)
    batches = [_tiny.batch(name, fns.model, seed=s) for s in range(3)]
    xs = np.stack([b[0] for b in batches])
    # One function, batched and not: both sides at full float32 (a GPU's default is TF32).
    with jax.default_matmul_precision("highest"):
        outs = fns.stacked_apply(stacked, xs)
        for c in range(3):
            params_c = fns.model.init(keys[c])
            _leaves_close(jax.tree.map(lambda a, c=c: a[c], stacked), params_c)
            out_c, _, _ = fns.forward(params_c, *batches[c])
            np.testing.assert_allclose(outs[c], out_c, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("name", _tiny.HAS_DROPOUT)
def test_dropout_only_with_train_and_key(name):
    model = _tiny.tiny_model(name)
    params = model.init(jax.random.key(0))
    x, y = _tiny.batch(name, model)
    evaluation = model.apply(params, x)
    np.testing.assert_array_equal(model.apply(params, x, train=True), evaluation)
    np.testing.assert_array_equal(model.apply(params, x, key=jax.random.key(1)), evaluation)
    k = jax.random.key(2)
    a = model.apply(params, x, train=True, key=k)
    np.testing.assert_array_equal(a, model.apply(params, x, train=True, key=k))
    assert not np.allclose(a, evaluation)
    assert not np.allclose(a, model.apply(params, x, train=True, key=jax.random.key(5)))
    # batch_loss with a key trains (dropout on); without a key it evaluates.
    assert float(model.batch_loss(params, x, y)) == pytest.approx(
        float(model.loss(evaluation, y).mean()))
    assert float(model.batch_loss(params, x, y, key=k)) == pytest.approx(
        float(model.loss(a, y).mean()))


@pytest.mark.parametrize("name", ["mlp", "fraud_net", "resnet18_gn"])
def test_group_norm_is_per_example(name):
    """GroupNorm (unlike BatchNorm) makes each example's output independent of the batch.

    The applies are jitted (two programs: the whole batch and one example), not dispatched op by
    op, which for the ResNet compiled every layer's primitives separately; a normalisation over
    the batch axis still mixes the examples of the whole-batch program and fails here."""
    model = _tiny.tiny_model(name)
    params = model.init(jax.random.key(0))
    x, _ = _tiny.batch(name, model)
    apply = jax.jit(model.apply)
    with jax.default_matmul_precision("highest"):  # full float32 on every backend
        whole = apply(params, x)
        single = jnp.concatenate([apply(params, x[i:i + 1]) for i in range(len(x))])
    np.testing.assert_allclose(whole, single, rtol=TOL, atol=TOL)


def test_torch_init_scheme_bounds():
    model = _tiny.tiny_model("uldp_cnn")  # init_scheme='torch' by default, as the ULDP-FL code
    params = model.init(jax.random.key(0))
    flax_params = get_model("uldp_cnn", **_tiny.TINY["uldp_cnn"], init_scheme="flax").init(
        jax.random.key(0))
    for layer, tree in params.items():
        kernel = np.asarray(tree["kernel"])
        bound = 1.0 / np.sqrt(np.prod(kernel.shape[:-1]))
        for leaf in (kernel, np.asarray(tree["bias"])):
            assert np.abs(leaf).max() <= bound
        assert np.abs(kernel).max() > 0.5 * bound, layer
        assert np.abs(np.asarray(tree["bias"])).max() > 0, layer  # flax's zero bias redrawn
        assert np.abs(np.asarray(flax_params[layer]["bias"])).max() == 0


def test_char_lstm_stacked_layers_and_sequence_output():
    model = get_model("char_lstm", vocab_size=5, seq_len=4, embed_dim=2, hidden=(3, 2),
                      predict="sequence")
    params = model.init(jax.random.key(0))
    assert set(params) == {"embed", "lstm_0", "lstm_1", "head"}
    x = np.arange(12, dtype=np.int32).reshape(3, 4) % 5
    out, per, acc = jax.jit(lambda p, x, y: (
        model.apply(p, x), model.loss(model.apply(p, x), y),
        model.metrics(model.apply(p, x), y)["accuracy"]))(params, x, (x + 1) % 5)
    assert out.shape == (3, 4, 5)
    assert per.shape == acc.shape == (3,)
    assert np.all(np.isfinite(per))


@pytest.mark.slow
def test_resnet18_gn_default_size_batch_of_two():
    model = get_model("resnet18_gn")
    params = model.init(jax.random.key(0))
    x = np.random.default_rng(0).normal(size=(2, 32, 32, 3)).astype(np.float32)
    loss, grads = jax.jit(jax.value_and_grad(model.batch_loss))(params, x, np.array([1, 7]))
    assert np.isfinite(float(loss))
    assert jax.tree.structure(grads) == jax.tree.structure(params)
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))


@pytest.mark.parametrize("name, kwargs, error", [
    ("logreg", dict(num_classes=0), validate.JaxflValueError),
    ("mlp", dict(hidden=(4, -1)), validate.JaxflValueError),
    ("mlp", dict(hidden=(6,), group_norm=4), validate.JaxflValueError),
    ("mlp", dict(dropout=1.0), validate.JaxflValueError),
    ("fedavg_cnn", dict(input_shape=(28, 28)), validate.ShapeError),
    ("uldp_cnn", dict(input_shape=(10, 10, 1)), validate.ShapeError),
    ("cifar_cnn", dict(init_scheme="kaiming"), validate.JaxflValueError),
    ("resnet18_gn", dict(width=0), validate.JaxflValueError),
    ("char_lstm", dict(predict="first"), validate.JaxflValueError),
    ("char_lstm", dict(hidden=()), validate.JaxflValueError),
    ("cox", dict(ties="efron"), validate.JaxflValueError),
])
def test_bad_arguments_raise_typed_errors(name, kwargs, error):
    with pytest.raises(error, match="Expected"):
        get_model(name, **kwargs)


def test_from_flax_adapter_accepts_modules_without_train_argument():
    import flax.linen as nn

    from jaxfl.models import _flax, losses

    model = _flax.from_flax(nn.Dense(3), name="toy", loss=losses.softmax_cross_entropy,
                            metrics=losses.classification_metrics, input_shape=(4,),
                            init_scheme="torch")
    params = model.init(jax.random.key(0))
    assert params["kernel"].shape == (4, 3)
    assert np.abs(params["kernel"]).max() <= 0.5  # U(+-1/sqrt(4))
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(model.apply(params, x, train=True, key=jax.random.key(1)),
                                  model.apply(params, x))
