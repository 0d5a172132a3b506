"""Convolutions as patches x kernel matrix equal XLA's direct convolution (values, gradients,
under vmap), and the layout policy picks the form by backend."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl import layout, validate
from jaxfl.models import conv, get_model

DN = ("NHWC", "HWIO", "NHWC")
TOL = dict(rtol=2e-5, atol=2e-5)  # float32: the two forms sum the products in another order


@settings(max_examples=6, deadline=None, derandomize=True)
@given(size=st.integers(4, 9), cin=st.integers(1, 4), cout=st.integers(1, 5),
       k=st.integers(1, 4), stride=st.integers(1, 3), dilation=st.integers(1, 2),
       padding=st.sampled_from(["SAME", "VALID", ((1, 2), (0, 1))]))
def test_patches_equal_direct_convolution_and_its_gradients(size, cin, cout, k, stride,
                                                             dilation, padding):
    if padding == "VALID" and (k - 1) * dilation + 1 > size:
        return
    kx, kw = jax.random.split(jax.random.key(size * 131 + k))
    x = jax.random.normal(kx, (2, size, size + 1, cin))
    w = jax.random.normal(kw, (k, k, cin, cout))
    args = ((stride, stride), padding)
    # Both forms at full float32 on every backend (a GPU's default convolution and matmul is
    # TF32, which the float32 tolerance below does not cover).
    kw_ = dict(rhs_dilation=(dilation, dilation), dimension_numbers=DN,
               precision=jax.lax.Precision.HIGHEST)
    direct = lambda x, w: jax.lax.conv_general_dilated(x, w, *args, **kw_)  # noqa: E731
    patches = lambda x, w: conv.patches_conv(x, w, *args, **kw_)  # noqa: E731
    np.testing.assert_allclose(patches(x, w), direct(x, w), **TOL)
    loss = lambda f: lambda x, w: jnp.sum(jnp.sin(f(x, w)))  # noqa: E731
    for a, b in zip(jax.grad(loss(patches), (0, 1))(x, w), jax.grad(loss(direct), (0, 1))(x, w),
                    strict=True):
        np.testing.assert_allclose(a, b, **TOL)
    # per-unit kernels under vmap (the grouped convolution XLA:CPU runs slowly)
    ws = jnp.stack([w, 2 * w, -w])
    np.testing.assert_allclose(jax.vmap(patches, (None, 0))(x, ws),
                               jax.vmap(direct, (None, 0))(x, ws), **TOL)


def test_forms_it_does_not_cover_take_the_direct_path():
    x, w = jnp.ones((1, 6, 6, 4)), jnp.ones((3, 3, 2, 4))
    with pytest.raises(ValueError, match="feature/batch groups"):
        conv.patches_conv(x, w, (1, 1), "SAME", dimension_numbers=DN, feature_group_count=2)
    got = conv.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN,
                                    feature_group_count=2)
    want = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN,
                                        feature_group_count=2)
    np.testing.assert_array_equal(got, want)


def test_policy_by_backend_and_override(monkeypatch):
    # chosen per backend by a benchmark (jaxfl.layout's docstring): patches on CPUs and GPUs
    assert layout.conv_impl(backend="cpu") == layout.conv_impl(backend="gpu") == "patches"
    assert layout.conv_impl(backend="tpu") == "xla"
    monkeypatch.setenv("JAXFL_CONV_IMPL", "xla")
    assert layout.conv_impl(backend="cpu") == "xla"
    monkeypatch.setenv("JAXFL_CONV_IMPL", "im2col")
    with pytest.raises(validate.JaxflValueError, match="conv impl"):
        layout.conv_impl()


@pytest.mark.parametrize("name,kw", [("uldp_cnn", {}), ("fedavg_cnn", {}),
                                     ("resnet18_gn", {"width": 2, "blocks": (1, 1), "input_shape": (8, 8, 3)})])
def test_models_are_the_same_function_in_both_forms(monkeypatch, name, kw):
    model = get_model(name, **kw)
    params = model.init(jax.random.key(0))  # same parameters whatever the form
    x = jax.random.normal(jax.random.key(1), (3, *model.input_shape))
    out = {}
    for impl in layout.CONV_IMPLS:
        monkeypatch.setenv("JAXFL_CONV_IMPL", impl)
        with jax.default_matmul_precision("highest"):  # full float32 convolutions (GPU: not TF32)
            out[impl] = jax.jit(lambda p, x: model.apply(p, x))(params, x)  # a fresh trace reads it
        assert jax.tree.structure(model.init(jax.random.key(0))) == jax.tree.structure(params)
    np.testing.assert_allclose(out["patches"], out["xla"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,window", [((3, 8, 6, 4), (2, 2)), ((2, 6, 9, 3), (3, 3)),
                                          ((2, 4, 4, 1), (2, 1))])
def test_reshape_max_pool_equals_flax_max_pool_and_its_gradient(shape, window):
    import flax.linen as nn

    x = jax.random.normal(jax.random.key(0), shape)  # continuous values: no ties
    g = jax.random.normal(jax.random.key(1), conv.max_pool(x, window).shape)
    ref = nn.max_pool(x, window, strides=window)
    np.testing.assert_array_equal(conv.max_pool(x, window), ref)
    grad = jax.grad(lambda v: jnp.sum(conv.max_pool(v, window) * g))(x)
    grad_ref = jax.grad(lambda v: jnp.sum(nn.max_pool(v, window, strides=window) * g))(x)
    np.testing.assert_array_equal(grad, grad_ref)


def test_max_pool_ties_share_the_gradient_and_other_windows_use_flax():
    import flax.linen as nn

    x = jnp.zeros((1, 2, 2, 1)).at[0, 1, 1, 0].set(-1.0)  # three tied maxima
    grad = jax.grad(lambda v: conv.max_pool(v, (2, 2)).sum())(x)
    np.testing.assert_allclose(grad[0, :, :, 0], [[1 / 3, 1 / 3], [1 / 3, 0.0]], rtol=1e-6)
    assert float(grad.sum()) == pytest.approx(1.0)  # the same total as flax's first-max rule
    x = jax.random.normal(jax.random.key(2), (2, 7, 7, 3))  # overlapping / non-tiling windows
    for window, strides in [((3, 3), (2, 2)), ((2, 2), (2, 2))]:
        np.testing.assert_array_equal(conv.max_pool(x, window, strides),
                                      nn.max_pool(x, window, strides=strides))


def test_forward_flops_counts_the_dense_layer():
    from jaxfl.models import forward_flops

    flops = forward_flops(get_model("logreg", input_shape=(784,)))
    assert 2 * 784 * 10 <= flops <= 2 * 784 * 10 + 100  # matmul + bias (+ XLA's small extras)
    assert forward_flops(get_model("uldp_cnn")) >= layout.HEAVY_FLOPS  # the CNN is heavy


@pytest.fixture
def no_cost_analysis(monkeypatch):
    """A backend whose lowering has no cost analysis (XLA:GPU returns None)."""
    from jaxfl import models

    monkeypatch.setattr(jax.stages.Lowered, "cost_analysis", lambda self: None)
    monkeypatch.setattr(jax.stages.Compiled, "cost_analysis", lambda self: None)
    models._forward_flops.cache_clear()
    yield
    models._forward_flops.cache_clear()


@pytest.mark.parametrize("name,kw", [("logreg", {"input_shape": (784,)}), ("uldp_cnn", {}),
                                     ("mlp", {"hidden": (64,), "input_shape": (784,)})])
def test_forward_flops_without_cost_analysis_counts_the_jaxpr(name, kw, no_cost_analysis,
                                                             monkeypatch):
    from jaxfl import models

    model = get_model(name, **kw)
    counted = models.forward_flops(model)
    for compiled in (False, True):
        assert models.forward_flops(model, compiled=compiled) == counted
    assert counted == models.jaxpr_flops(jax.make_jaxpr(model.apply)(
        model.init(jax.random.key(0)), jnp.zeros((1, *model.input_shape))).jaxpr)
    monkeypatch.undo()  # XLA's own count (of the CPU lowering, on every backend), to compare
    # Compiled for the CPU on every backend (arguments committed to the CPU device): a GPU's
    # cross-platform lowering answers None to cost_analysis().
    cpu_args = jax.device_put((model.init(jax.random.key(0)), jnp.zeros((1, *model.input_shape))),
                              jax.devices("cpu")[0])
    cost = jax.jit(model.apply).lower(*cpu_args).compile().cost_analysis()
    xla = float((cost[0] if isinstance(cost, (list, tuple)) else cost)["flops"])
    assert xla != counted  # XLA did answer this time
    assert 0.9 * xla <= counted <= 1.15 * xla
    # the heavy/light layout decision is the same either way
    assert (counted >= layout.HEAVY_FLOPS) == (xla >= layout.HEAVY_FLOPS)


def test_uldp_builds_and_trains_without_cost_analysis(no_cost_analysis, tmp_path):
    from experiments import config as config_lib
    from jaxfl import builders
    from tests.conftest import require_data

    root = require_data("heart_disease")
    cfg = config_lib.load_config("experiments/configs/uldp/fig6_heart.py:variant=smoke,"
                                 "method=ULDP-AVG", [f"data_dir={root / 'heart_disease'}",
                                                     "rounds=1"])
    summary = builders.run(cfg, tmp_path)
    assert summary["epsilon"] > 0 and 0.0 <= summary["final"]["test_accuracy"] <= 1.0
