"""Per-example clipping without per-example gradients: ghost norms and book-keeping.

For a layer ``z = x W + b`` applied to one example at positions ``t`` (one position for a dense
layer on a vector, the ``OH x OW`` output pixels of a convolution, whose ``x_t`` is then the
``kh x kw x C`` patch), the example's gradient is ``dW = sum_t x_t g_t^T`` and ``db = sum_t g_t``
with ``g_t = dloss / dz_t``. Its squared norm needs only the layer's inputs and output
gradients (Goodfellow 2015 for dense layers; Li et al. 2022 and Bu et al. 2023 for
convolutions, "ghost clipping" and "book-keeping"):

* one position: ``||dW||^2 = ||x||^2 ||g||^2``;
* ``T`` positions: ``||X^T G||_F^2``, computed either as ``X^T G`` per example or as
  ``sum((X X^T) * (G G^T))``, whichever needs fewer multiplications.

With the clip factors ``c_i = min(1, C / ||grad_i||)``, the clipped sum of a layer is one
matmul, ``sum_i c_i X_i^T G_i``. So :func:`clipped_grad_sum` runs one per-example forward pass
that records each layer's input, one backward pass to the layer outputs (never to the
parameters: no ``[B, ...]`` per-example gradient is formed), and one matmul per layer. The
two-pass method of :func:`jaxfl.clipping.clipped_grad_sum` runs a backward pass to the
per-example parameter gradients (reduced to norms) and a second forward and backward pass;
for the FedAvg CNN its norm pass forms the ``[B, 3136, 512]`` outer products of the dense
layer.

The layers are found by intercepting the flax modules of a model built by
:func:`jaxfl.models._flax.from_flax` (``Model.flax_based``), whose loss sees the parameters
only through the module. :func:`supports` accepts a model when every parameter leaf is the
kernel or bias of a ``flax.linen.Dense`` or of a 2-D NHWC ``flax.linen.Conv`` (no feature
groups or input dilation, padding ``'SAME'``, ``'VALID'`` or explicit pairs), each called once
per forward pass. Anything else (normalisation layers, embeddings, recurrent cells, a layer
called twice, a layer under a lifted transform) is refused with :class:`GhostUnsupported`, and
:func:`model_clipped_grad_sum` then uses the two-pass method. Both agree to
float rounding (``tests/ghost_test.py``).

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> from jaxfl import clipping, ghost
  >>> from jaxfl.models import get_model
  >>> m = get_model("mlp", input_shape=(4,), hidden=(3,), num_classes=2)
  >>> p = m.init(jax.random.key(0))
  >>> x, y = jnp.ones((5, 4)), jnp.zeros(5, jnp.int32)
  >>> g, n = ghost.clipped_grad_sum(m, p, x, y, jnp.ones(5), clip_norm=0.1)
  >>> g2, n2 = clipping.clipped_grad_sum(m.example_loss, p, x, y, jnp.ones(5), clip_norm=0.1)
  >>> bool(jnp.allclose(n, n2, rtol=1e-5)), bool(jnp.allclose(g["head"]["kernel"],
  ...                                                            g2["head"]["kernel"], atol=1e-6))
  (True, True)
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxfl import clipping, precision, validate
from jaxfl.models import Model, conv


class GhostUnsupported(ValueError):
    """The model has a parameter or layer that ghost norms do not cover."""


@dataclasses.dataclass(frozen=True)
class _Layer:
    kind: str              # "dense" | "conv"
    kernel_shape: tuple
    use_bias: bool
    out_shape: tuple       # per-example output shape (what the perturbation is added to)
    conv: tuple = ()       # (window, strides, padding, kernel_dilation) for convolutions


def _pairs(v, n):
    if v is None:
        return (1,) * n
    if isinstance(v, int):
        return (v,) * n
    return tuple(int(a) for a in v)


def _conv_spec(mod: nn.Conv, path) -> tuple:
    window = tuple(int(k) for k in mod.kernel_size) if not isinstance(mod.kernel_size, int) \
        else (mod.kernel_size,)
    if len(window) != 2:
        raise GhostUnsupported(f"conv layer {path}: only 2-D convolutions are covered.")
    if mod.feature_group_count != 1 or _pairs(mod.input_dilation, 2) != (1, 1):
        raise GhostUnsupported(f"conv layer {path}: feature groups / input dilation.")
    if getattr(mod, "mask", None) is not None:
        raise GhostUnsupported(f"conv layer {path}: masked kernel.")
    padding = mod.padding
    if isinstance(padding, str):
        if padding.upper() not in ("SAME", "VALID"):
            raise GhostUnsupported(f"conv layer {path}: padding {padding!r}.")
        padding = padding.upper()
    elif isinstance(padding, int):
        padding = ((padding, padding),) * 2
    else:
        padding = tuple((p, p) if isinstance(p, int) else tuple(p) for p in padding)
        if len(padding) != 2:
            raise GhostUnsupported(f"conv layer {path}: padding {mod.padding!r}.")
    return (window, _pairs(mod.strides, 2), padding,
            _pairs(mod.kernel_dilation, 2))


def _forward(model: Model, params, x, y, key, perts, layers: dict | None):
    """One example's loss and each layer's input; ``perts`` (or None) are added to outputs.

    With ``layers`` a dict, fills it with each layer's :class:`_Layer` (discovery).
    """
    inputs = {}

    def interceptor(next_fun, args, kwargs, context):
        mod = context.module
        if context.method_name != "__call__" or type(mod) not in (nn.Dense, nn.Conv):
            return next_fun(*args, **kwargs)
        path = tuple(mod.path)
        if path in inputs:
            raise GhostUnsupported(f"layer {'/'.join(path)} is called more than once per "
                                   "forward pass (shared weights).")
        out = next_fun(*args, **kwargs)
        inputs[path] = args[0]
        if layers is not None:
            kernel = mod.get_variable("params", "kernel")
            kind = "dense" if type(mod) is nn.Dense else "conv"
            layers[path] = _Layer(kind=kind, kernel_shape=tuple(kernel.shape),
                                  use_bias=bool(mod.use_bias), out_shape=tuple(out.shape),
                                  conv=_conv_spec(mod, path) if kind == "conv" else ())
        if perts is not None:
            out = out + perts[path].astype(out.dtype)
        return out

    with nn.intercept_methods(interceptor):
        loss = model.example_loss(params, x, y, key=key)
    return loss, inputs


def _path_names(path) -> tuple:
    return tuple(getattr(k, "key", getattr(k, "name", k)) for k in path)


def discover(model: Model, params, x, y, key=None) -> dict:
    """The layers of ``model`` (path -> :class:`_Layer`) for one example ``x, y``.

    Raises:
      GhostUnsupported: the model is not flax-based or coupled, or a parameter leaf is not the
        kernel / bias of a covered layer called once (see the module docstring).
    """
    if not model.flax_based or model.coupled:
        raise GhostUnsupported(f"model {model.name!r} is not a flax model with a per-example "
                               "loss.")
    layers: dict = {}
    try:
        # The recorded inputs are outputs here, so a layer inside a lifted transform (whose
        # input is an inner tracer) fails now rather than when the sums are formed.
        jax.eval_shape(lambda p, x, y, k: _forward(model, p, x, y, k, None, layers),
                       params, x, y, key)
    except jax.errors.UnexpectedTracerError as e:  # a layer under a lifted transform
        raise GhostUnsupported(f"model {model.name!r}: a layer runs under a lifted "
                               f"transform ({type(e).__name__}).") from None
    covered = {}
    for path, layer in layers.items():
        covered[path + ("kernel",)] = layer.kernel_shape
        if layer.use_bias:
            covered[path + ("bias",)] = (layer.kernel_shape[-1],)
    leaves = jax.tree_util.tree_flatten_with_path(params)[0]
    names = {_path_names(p): tuple(v.shape) for p, v in leaves}
    missing = sorted("/".join(map(str, n)) for n in names if n not in covered)
    if missing:
        raise GhostUnsupported(f"model {model.name!r}: parameters outside dense / conv layers: "
                               f"{missing[:5]}.")
    for n, shape in covered.items():
        if names.get(n) != shape:
            raise GhostUnsupported(f"model {model.name!r}: layer parameter {'/'.join(n)} is "
                                   "not the parameter pytree's leaf of that path.")
    return layers


def supports(model: Model, params, x, y, key=None) -> bool:
    """Whether :func:`clipped_grad_sum` covers ``model`` (one example ``x, y``)."""
    try:
        discover(model, params, x, y, key)
    except GhostUnsupported:
        return False
    return True


def _layer_rows(layer: _Layer, xin, g):
    """One layer's per-example inputs ``X^T [B, K, T]`` and output gradients ``G [B, T, O]``."""
    b = xin.shape[0]
    o = layer.kernel_shape[-1]
    G = g.reshape(b, -1, o).astype(jnp.float32)
    if layer.kind == "dense":
        Xt = jnp.swapaxes(xin.reshape(b, -1, xin.shape[-1]), 1, 2)
    else:
        h, w, c = xin.shape[-3:]
        window, strides, padding, dilation = layer.conv
        Xt = conv.extract_patches(xin.reshape(-1, h, w, c), window, strides, padding, dilation,
                                  channels_first=True).reshape(b, -1, G.shape[1])
    return Xt.astype(jnp.float32), G


def _layer_norms(layer: _Layer, Xt, G):
    """Per-example squared gradient norms ``[B]`` of one layer, and the per-example kernel
    gradients ``[B, K, O]`` when they were the cheaper form (else None)."""
    k, t = Xt.shape[1], Xt.shape[2]
    o = G.shape[-1]
    dw = None
    if t == 1:
        sq = jnp.sum(Xt[:, :, 0] ** 2, axis=-1) * jnp.sum(G[:, 0] ** 2, axis=-1)
    elif k * o <= t * (k + o):   # the per-example kernel gradients are the smaller form
        dw = jnp.einsum("bkt,bto->bko", Xt, G)
        sq = jnp.sum(dw * dw, axis=(1, 2))
    else:                        # Gram form: sum((X X^T) * (G G^T)), T x T per example
        sq = jnp.sum(jnp.einsum("bkt,bks->bts", Xt, Xt) * jnp.einsum("bto,bso->bts", G, G),
                     axis=(1, 2))
    if layer.use_bias:
        sq = sq + jnp.sum(jnp.sum(G, axis=1) ** 2, axis=-1)
    return sq, dw


def _layer_sum(layer: _Layer, Xt, G, dw, factors):
    """One layer's clipped sum ``{"kernel", "bias"}`` with clip factors ``[B]``."""
    if dw is not None:
        kernel = jnp.einsum("b,bko->ko", factors, dw)
    else:
        kernel = jnp.einsum("bkt,bto->ko", Xt, G * factors[:, None, None])
    out = {"kernel": kernel.reshape(layer.kernel_shape)}
    if layer.use_bias:
        out["bias"] = jnp.einsum("b,bo->o", factors, jnp.sum(G, axis=1))
    return out


@precision.sensitive_function
def clipped_grad_sum(model: Model, params, xs, ys, mask, *, clip_norm, keys=None):
    """Sum over the (masked) batch of per-example gradients, each clipped to ``clip_norm``.

    The same quantity as :func:`jaxfl.clipping.clipped_grad_sum` for ``model.example_loss``
    (with ``key=keys[i]`` for example ``i`` when ``keys`` is given: training mode, the same
    dropout draws), computed from ghost norms (module docstring).

    Args:
      model: a flax-based :class:`jaxfl.models.Model` that :func:`supports` accepts.
      params: its parameter pytree.
      xs, ys: batch with a leading example axis ``[B, ...]``.
      mask: ``[B]`` bool or float weights (a float mask multiplies each clip factor).
      clip_norm: L2 bound per example.
      keys: optional ``[B]`` PRNG keys (per-example dropout draws).

    Returns:
      ``(summed_clipped_grads, per_example_norms [B])``.

    Raises:
      GhostUnsupported: for a model outside the covered layers (checked while tracing).
    """
    k0 = None if keys is None else keys[0]
    layers = discover(model, params, xs[0], ys[0], k0)
    perts = {p: jnp.zeros((xs.shape[0],) + l.out_shape, jnp.float32) for p, l in layers.items()}

    def one(pert, x, y, key):
        def f(pt):
            return _forward(model, params, x, y, key, pt, None)
        (_, inputs), g = jax.value_and_grad(f, has_aux=True)(pert)
        return inputs, g

    if keys is None:
        inputs, grads = jax.vmap(lambda pt, x, y: one(pt, x, y, None))(perts, xs, ys)
    else:
        inputs, grads = jax.vmap(one)(perts, xs, ys, keys)
    rows = {p: _layer_rows(l, inputs[p], grads[p]) for p, l in layers.items()}
    parts = {p: _layer_norms(l, *rows[p]) for p, l in layers.items()}
    norms = jnp.sqrt(sum(sq for sq, _ in parts.values()))
    c = clipping.clip_factor(norms, clip_norm)
    c = jax.lax.stop_gradient(c * jnp.asarray(mask).astype(c.dtype))
    sums = {p: _layer_sum(l, *rows[p], parts[p][1], c) for p, l in layers.items()}

    def place(path, leaf):
        names = _path_names(path)
        return sums[names[:-1]][names[-1]].astype(leaf.dtype)

    return jax.tree_util.tree_map_with_path(place, params), norms


MODEL_CLIPPED_GRAD_SUM_METHODS = ("auto", "ghost") + clipping.CLIPPED_GRAD_SUM_METHODS


@precision.sensitive_function
def model_clipped_grad_sum(model, params, xs, ys, mask, *, clip_norm, keys=None,
                           method: str = "auto"):
    """:func:`jaxfl.clipping.clipped_grad_sum` of a :class:`jaxfl.models.Model`'s per-example
    loss.

    ``method="auto"`` (default) uses ghost norms (:func:`clipped_grad_sum`:
    one forward pass, one backward pass to the layer outputs, one matmul per layer, no
    per-example gradients) when the model's layers are covered (flax ``Dense`` / ``Conv`` only,
    checked while tracing), else ``"two_pass"``. ``"ghost"`` insists (raises
    ``GhostUnsupported`` for other models); ``"two_pass"`` / ``"one_pass"`` as in
    :func:`jaxfl.clipping.clipped_grad_sum`. All give the same result up to float rounding.
    DP-SGD on the FedAvg CNN, batch 64, 2 cores: ghost 91 ms per step vs 217 ms two-pass
    (docs/scale.md).

    Args:
      model: the model; its ``example_loss`` is clipped per example.
      params: parameter pytree.
      xs, ys: batch ``[B, ...]``.
      mask: ``[B]`` bool or non-negative float weights multiplying each clip factor.
      clip_norm: L2 bound per example.
      keys: optional ``[B]`` PRNG keys: example ``i`` runs in training mode with
        ``key=keys[i]`` (dropout), identically in every method.
      method: one of :data:`MODEL_CLIPPED_GRAD_SUM_METHODS` (static).

    Returns:
      ``(summed_clipped_grads, per_example_norms [B])``.
    """
    validate.one_of("method", method, MODEL_CLIPPED_GRAD_SUM_METHODS)
    if method in ("auto", "ghost"):
        try:  # refused before any work when the layers are not covered
            return clipped_grad_sum(model, params, xs, ys, mask, clip_norm=clip_norm, keys=keys)
        except GhostUnsupported:
            if method == "ghost":
                raise
        method = "two_pass"
    if keys is None:
        return clipping.clipped_grad_sum(model.example_loss, params, xs, ys, mask,
                                         clip_norm=clip_norm, method=method)

    def example_loss(p, x, y, k):
        return model.example_loss(p, x, y, key=k)

    return clipping.clipped_grad_sum(example_loss, params, xs, ys, mask, clip_norm=clip_norm,
                                     extra=(keys,), method=method)



__all__ = ["GhostUnsupported", "discover", "supports", "clipped_grad_sum",
           "MODEL_CLIPPED_GRAD_SUM_METHODS", "model_clipped_grad_sum"]
