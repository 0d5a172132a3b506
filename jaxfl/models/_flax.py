"""Adapter from a flax.linen module to the :class:`jaxfl.models.Model` record.

Only this adapter and the model definitions import flax; algorithms see the returned pure
functions and plain parameter pytrees. ``init(key)`` returns the ``params`` collection alone (the
models use GroupNorm, never BatchNorm, so there is no other collection), and ``apply`` re-wraps
it. Dropout draws its randomness from ``key`` and runs only when ``train=True`` and a key is given;
``train=True`` without a key is deterministic.

Two initialisation schemes are offered: ``'flax'`` (the module's own initialisers) and
``'torch'``, which redraws every kernel and bias pair from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
PyTorch's default for ``nn.Linear`` / ``nn.Conv2d``. The authors of ULDP-FL seed PyTorch's default
initialisation (the authors' code (FumiyukiKato/uldp-fl, branch ULDP-FL-2023)), so ``'torch'``
reproduces their starting distribution (not their exact draw).

Example Usage:
  >>> import jax, flax.linen as nn
  >>> from jaxfl.models import _flax, losses
  >>> m = _flax.from_flax(nn.Dense(3), name="toy", loss=losses.softmax_cross_entropy,
  ...                     metrics=losses.classification_metrics, input_shape=(4,))
  >>> params = m.init(jax.random.key(0))
  >>> m.apply(params, jax.numpy.ones((2, 4))).shape
  (2, 3)
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxfl import validate
from jaxfl.models import Model

INIT_SCHEMES = ("flax", "torch")


def from_flax(module: nn.Module, *, name: str, loss: Callable, metrics: Callable,
              input_shape: tuple, input_dtype=jnp.float32, init_scheme: str = "flax",
              coupled: bool = False) -> Model:
    """Wraps a linen module whose ``__call__(x, train)`` maps a batch to outputs.

    Args:
      module: a ``flax.linen.Module`` with signature ``__call__(self, x, train: bool = False)``
        (or ``__call__(self, x)`` for a deterministic module). Dropout layers must draw from the
        ``'dropout'`` RNG stream.
      name: registry name of the model.
      loss: per-example loss ``loss(outputs, y) -> [B]``.
      metrics: per-example metrics ``metrics(outputs, y) -> dict``.
      input_shape: shape of one example; ``init`` traces the module on a batch of one.
      input_dtype: dtype of the dummy input used by ``init`` (``int32`` for token models).
      init_scheme: ``'flax'`` or ``'torch'`` (see module docstring).
      coupled: forwarded to :class:`Model` (loss couples the examples of a batch).

    Returns:
      The :class:`Model` record.
    """
    validate.one_of("init_scheme", init_scheme, INIT_SCHEMES)
    input_shape = tuple(int(d) for d in input_shape)
    mode = ({"train": False}, {"train": True})
    if "train" not in inspect.signature(type(module).__call__).parameters:
        mode = ({}, {})

    def init(key: jax.Array):
        k_flax, k_torch = jax.random.split(key)
        dummy = jnp.zeros((1, *input_shape), dtype=input_dtype)
        params = module.init({"params": k_flax}, dummy, **mode[0])["params"]
        if init_scheme == "torch":
            params = torch_default_init(params, key=k_torch)
        return params

    def apply(params, x, *, train: bool = False, key: jax.Array | None = None):
        stochastic = bool(train) and key is not None
        rngs = {"dropout": key} if stochastic else None
        return module.apply({"params": params}, x, rngs=rngs, **mode[stochastic])

    return Model(name=name, init=jax.jit(init), apply=apply, loss=loss, metrics=metrics,
                 input_shape=input_shape, coupled=coupled, flax_based=True)


def torch_default_init(params, *, key: jax.Array):
    """Redraws each ``kernel`` (and its sibling ``bias``) from U(+-1/sqrt(fan_in)).

    ``fan_in`` is the product of all kernel dimensions but the last (the output features), which
    matches PyTorch's ``nn.Linear`` and ``nn.Conv2d`` defaults. Normalisation scales and biases
    (layers without a ``kernel``) keep their flax values (ones and zeros, also PyTorch's default).

    Args:
      params: a flax parameter dict.
      key: PRNG key; each layer uses ``fold_in(key, i)`` with ``i`` its position in path order.

    Returns:
      A parameter dict of the same structure.
    """
    layers = []

    def visit(node, path):
        if isinstance(node, dict) or hasattr(node, "items"):
            if "kernel" in node:
                layers.append(path)
            for k in sorted(node):
                if k not in ("kernel", "bias"):
                    visit(node[k], (*path, k))

    visit(params, ())

    def rebuild(node, path):
        if not hasattr(node, "items"):
            return node
        out = {k: rebuild(v, (*path, k)) for k, v in node.items()}
        if path in layers:
            i = layers.index(path)
            kernel = node["kernel"]
            bound = 1.0 / math.sqrt(math.prod(kernel.shape[:-1]))
            k_w, k_b = jax.random.split(jax.random.fold_in(key, i))
            out["kernel"] = jax.random.uniform(k_w, kernel.shape, kernel.dtype, -bound, bound)
            if "bias" in node:
                bias = node["bias"]
                out["bias"] = jax.random.uniform(k_b, bias.shape, bias.dtype, -bound, bound)
        return out

    return rebuild(params, ())
