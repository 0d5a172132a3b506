"""Models behind a record of pure functions; algorithms never import flax.

A :class:`Model` bundles ``init(key) -> params``, ``apply(params, x, *, train=False, key=None)
-> outputs`` (for a batch ``x`` with a leading example axis), ``loss(outputs, y) ->
per-example loss [B]`` and ``metrics(outputs, y) -> dict of per-example metrics [B]``.
``get_model(name, **kwargs)`` selects a model by name from an explicit registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Model(NamedTuple):
    name: str
    init: Callable[[jax.Array], Any]
    apply: Callable[..., jax.Array]
    loss: Callable[[jax.Array, jax.Array], jax.Array]
    metrics: Callable[[jax.Array, jax.Array], dict]
    input_shape: tuple = ()

    def example_loss(self, params, x, y, *, key=None):
        """Loss of one example (no batch axis): the unit per-example gradients vmap over."""
        out = self.apply(params, x[None], key=key)
        return self.loss(out, y[None])[0]

    def batch_loss(self, params, x, y, mask=None, *, key=None):
        """Masked mean loss over a padded batch."""
        out = self.apply(params, x, key=key)
        per = self.loss(out, y)
        if mask is None:
            return per.mean()
        m = mask.astype(per.dtype)
        return (per * m).sum() / jax.numpy.maximum(m.sum(), 1.0)


_REGISTRY: dict[str, Callable[..., Model]] = {}


def register(name: str):
    """Decorator adding a model builder to the registry."""
    def deco(fn):
        _REGISTRY[name] = fn
        return fn
    return deco


def get_model(name: str, **kwargs) -> Model:
    """Builds a registered model by name."""
    _load_builtin()
    if name not in _REGISTRY:
        from jaxfl._validate import JaxflValueError
        raise JaxflValueError(f"Unknown model {name!r}; available: {sorted(_REGISTRY)}.")
    return _REGISTRY[name](**kwargs)


def available() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def _load_builtin():
    import importlib
    import pkgutil

    import jaxfl.models as pkg
    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"jaxfl.models.{info.name}")
