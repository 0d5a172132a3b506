"""Convolution as patches x matrix: the engine's CPU form of ``lax.conv_general_dilated``.

On XLA:CPU a direct convolution whose kernel differs per unit (a conv under ``vmap`` over
clients, pairs or groups, and the kernel gradient of every conv) becomes a grouped
convolution, which XLA:CPU runs far below its matmul speed; even unbatched, the direct form of
the small, few-channel convolutions of the papers' CNNs is slower than a matmul. Extracting
the ``kh x kw`` patches (``lax.conv_general_dilated_patches``, which has no kernel and batches
as a plain batch dimension) and contracting them with the reshaped kernel turns the layer, its
gradients and any ``vmap`` of them into (batched) matmuls.

:func:`conv_general_dilated` has the signature of ``lax.conv_general_dilated`` and is what the
models pass to ``flax.linen.Conv``: it reads the engine's layout policy
(:func:`jaxfl.layout.conv_impl`) when traced, so a model is the same object (same parameters,
same initialisation) on every backend and only the computation differs: ``"patches"`` on CPU
and the direct ``"xla"`` form on accelerators. The two agree to float32 rounding
(``tests/models/conv_test.py``). Forms the patches path does not cover (input dilation, grouped
convolutions, layouts other than NHWC/HWIO) always take the direct form.

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> x = jnp.ones((2, 8, 8, 3)); w = jnp.ones((3, 3, 3, 4))
  >>> dn = ("NHWC", "HWIO", "NHWC")
  >>> y1 = patches_conv(x, w, (1, 1), "SAME", dimension_numbers=dn)
  >>> y2 = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
  >>> bool(jnp.allclose(y1, y2)), y1.shape
  (True, (2, 8, 8, 4))
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from jaxfl import layout, validate

_NHWC = ("NHWC", "HWIO", "NHWC")


def _is_nhwc(dimension_numbers) -> bool:
    if dimension_numbers is None:
        return False
    if isinstance(dimension_numbers, lax.ConvDimensionNumbers):
        return dimension_numbers == lax.conv_dimension_numbers(
            (1, 1, 1, 1), (1, 1, 1, 1), _NHWC)
    return tuple(dimension_numbers) == _NHWC


def _covered(lhs, rhs, lhs_dilation, dimension_numbers, feature_group_count,
             batch_group_count) -> bool:
    return (lhs.ndim == 4 and rhs.ndim == 4 and _is_nhwc(dimension_numbers)
            and feature_group_count == 1 and batch_group_count == 1
            and (lhs_dilation is None or all(d == 1 for d in lhs_dilation)))


def extract_patches(lhs, window: tuple[int, int], window_strides, padding,
                    rhs_dilation=None, *, channels_first: bool = False):
    """The ``kh x kw`` patches of an NHWC batch.

    Returns ``[N, OH, OW, kh * kw * C]`` or, with ``channels_first``, ``[N, kh * kw * C, OH * OW]``
    (the per-example ``X^T`` of :mod:`jaxfl.ghost`). The patch axis is in (row, column,
    channel) order, the order of an HWIO kernel reshaped to ``(kh * kw * C, O)``, so
    ``patches @ kernel`` is the convolution. ``padding`` is ``'SAME'``, ``'VALID'`` or
    ``((top, bottom), (left, right))``.
    """
    kh, kw = window
    sh, sw = tuple(window_strides)
    dh, dw = tuple(rhs_dilation) if rhs_dilation is not None else (1, 1)
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1  # the dilated kernel's extent
    if isinstance(padding, str):
        padding = lax.padtype_to_pads(lhs.shape[1:3], (eh, ew), (sh, sw), padding)
    (top, bottom), (left, right) = padding
    x = jnp.pad(lhs, ((0, 0), (top, bottom), (left, right), (0, 0)))
    n, hp, wp, cin = x.shape
    oh, ow = (hp - eh) // sh + 1, (wp - ew) // sw + 1
    if channels_first:  # each tap a [N, C, OH, OW] slice of the [N, C, H, W] transpose
        xt = jnp.transpose(x, (0, 3, 1, 2))
        taps = [lax.slice(xt, (0, 0, i * dh, j * dw),
                          (n, cin, i * dh + (oh - 1) * sh + 1, j * dw + (ow - 1) * sw + 1),
                          (1, 1, sh, sw))
                for i in range(kh) for j in range(kw)]
        return jnp.stack(taps, axis=1).reshape(n, kh * kw * cin, oh * ow)
    # One strided slice per kernel tap, concatenated in (row, column, channel) order: the
    # HWIO kernel's own order, so it reshapes into the matrix without a transpose.
    cols = [lax.slice(x, (0, i * dh, j * dw, 0),
                      (n, i * dh + (oh - 1) * sh + 1, j * dw + (ow - 1) * sw + 1, cin),
                      (1, sh, sw, 1))
            for i in range(kh) for j in range(kw)]
    return cols[0] if len(cols) == 1 else jnp.concatenate(cols, axis=-1)


def patches_conv(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                 dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                 precision=None, preferred_element_type=None):
    """``lax.conv_general_dilated`` computed as patches x kernel matrix (NHWC / HWIO only).

    Raises:
      ValueError: for a form it does not cover (see module docstring).
    """
    if not _covered(lhs, rhs, lhs_dilation, dimension_numbers, feature_group_count,
                    batch_group_count):
        raise ValueError("patches_conv covers NHWC/HWIO convolutions without input dilation "
                         "or feature/batch groups.")
    kh, kw, cin, cout = rhs.shape
    patches = extract_patches(lhs, (kh, kw), window_strides, padding, rhs_dilation)
    kernel = rhs.reshape(kh * kw * cin, cout).astype(patches.dtype)
    return jnp.einsum("nhwk,kc->nhwc", patches, kernel, precision=precision,
                      preferred_element_type=preferred_element_type)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
    """``lax.conv_general_dilated`` in the form the layout policy picks for the backend."""
    kwargs = dict(lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                  dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
                  batch_group_count=batch_group_count, precision=precision,
                  preferred_element_type=preferred_element_type)
    if layout.conv_impl() == "patches" and _covered(lhs, rhs, lhs_dilation, dimension_numbers,
                                                      feature_group_count, batch_group_count):
        return patches_conv(lhs, rhs, window_strides, padding, **kwargs)
    return lax.conv_general_dilated(lhs, rhs, window_strides, padding, **kwargs)


def image_shape(input_shape) -> tuple[int, int, int]:
    """``input_shape`` of a convolutional model checked as ``(height, width, channels)`` of
    positive integers.

    Raises:
      ShapeError: on another number of axes; JaxflValueError: on a non-positive size.
    """
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise validate.ShapeError(
            f"Expected input_shape=(height, width, channels), got input_shape={input_shape!r}.")
    for i, d in enumerate(input_shape):
        validate.positive_int(f"input_shape[{i}]", d)
    return input_shape


def max_pool(x, window: tuple[int, int], strides: tuple[int, int] | None = None):
    """2-D max-pool of an ``NHWC`` batch (``'VALID'`` padding).

    Non-overlapping windows that tile the image (``strides == window``, sizes divisible, the
    CNNs' 2x2 pools) are a reshape and a max over the two window axes: its gradient is an
    elementwise mask, where ``flax.linen.max_pool``'s ``reduce_window`` differentiates to a
    ``select_and_scatter`` that costs XLA:CPU more than the convolution before it (a ULDP CNN
    SGD step, batch 64: 9.6 -> 6.1 ms). Values are identical; on exact ties the gradient is
    shared between the tied inputs instead of going to the first (the same total). Other
    windows use ``flax.linen.max_pool``.
    """
    import flax.linen as nn

    window = tuple(window)
    strides = window if strides is None else tuple(strides)
    if (x.ndim == 4 and len(window) == 2 and strides == window
            and x.shape[1] % window[0] == 0 and x.shape[2] % window[1] == 0):
        b, h, w, c = x.shape
        wh, ww = window
        return x.reshape(b, h // wh, wh, w // ww, ww, c).max(axis=(2, 4))
    return nn.max_pool(x, window, strides=strides)


__all__ = ["extract_patches", "patches_conv", "conv_general_dilated", "max_pool", "image_shape"]
