"""Models behind a record of pure functions; algorithms never import flax.

A :class:`Model` bundles ``init(key) -> params``, ``apply(params, x, *, train=False, key=None)
-> outputs`` (for a batch ``x`` with a leading example axis), ``loss(outputs, y) ->
per-example loss [B]`` and ``metrics(outputs, y) -> dict of per-example metrics [B]``.
``get_model(name, **kwargs)`` selects a model by name from an explicit registry, which is filled
by importing every public module of this package (each decorates its builders with
:func:`register`). ``batch_loss`` / ``batch_metrics`` reduce over a padded batch with a mask;
``coupled`` models (the Cox partial likelihood) receive that mask in ``loss`` and ``metrics``.
See ``README.md`` in this directory for the list of models and their sizes.

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> model = get_model("mlp", hidden=(16,), num_classes=3, input_shape=(5,))
  >>> params = model.init(jax.random.key(0))
  >>> model.batch_loss(params, jnp.ones((4, 5)), jnp.array([0, 1, 2, 0])).shape
  ()
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Model(NamedTuple):
    """A model as a record of pure functions over a parameter pytree.

    Attributes:
      name: registry name.
      init: ``init(key) -> params`` (a pytree of arrays; no mutable collections).
      apply: ``apply(params, x, *, train=False, key=None) -> outputs`` for a batch ``x`` with a
        leading example axis. Stochastic layers (dropout) are active only when ``train=True``
        and a ``key`` is given.
      loss: ``loss(outputs, y) -> [B]`` per-example loss. For a ``coupled`` model it also takes
        ``mask=`` (``[B]`` bool) so padded examples are left out of the coupling.
      metrics: ``metrics(outputs, y) -> dict`` of per-example ``[B]`` arrays (``mask=`` as above).
      input_shape: shape of one input example (used by ``init``).
      coupled: True when the loss of one example depends on the other examples of its batch
        (the Cox partial likelihood). ``batch_loss`` then forwards the mask to ``loss``; the
        per-example ``example_loss`` of such a model sees a batch of one.
      flax_based: True for models built by :func:`jaxfl.models._flax.from_flax`, whose
        parameters enter the loss only through the flax module: per-example clipping may then
        use ghost norms (:mod:`jaxfl.ghost`), which checks the layers it needs.
    """

    name: str
    init: Callable[[jax.Array], Any]
    apply: Callable[..., jax.Array]
    loss: Callable[..., jax.Array]
    metrics: Callable[..., dict]
    input_shape: tuple = ()
    coupled: bool = False
    flax_based: bool = False

    def example_loss(self, params, x, y, *, key=None):
        """Loss of one example (no batch axis): the unit per-example gradients vmap over.

        Passing ``key`` selects training mode (dropout on), as in a local SGD step.
        """
        out = self.apply(params, x[None], train=key is not None, key=key)
        return self.loss(out, y[None])[0]

    def batch_loss(self, params, x, y, mask=None, *, key=None):
        """Masked mean loss over a padded batch (``key`` selects training mode)."""
        out = self.apply(params, x, train=key is not None, key=key)
        per = self.masked_loss(out, y, mask)
        if mask is None:
            return per.mean()
        m = mask.astype(per.dtype)
        return (per * m).sum() / jax.numpy.maximum(m.sum(), 1.0)

    def batch_metrics(self, params, x, y, mask=None):
        """Masked means of the per-example metrics over a padded batch (evaluation mode)."""
        out = self.apply(params, x)
        per = self.masked_metrics(out, y, mask)
        if mask is None:
            return {k: v.mean() for k, v in per.items()}
        return {k: (v * mask.astype(v.dtype)).sum() / jax.numpy.maximum(
            mask.astype(v.dtype).sum(), 1.0) for k, v in per.items()}

    def masked_loss(self, outputs, y, mask=None):
        """Per-example loss ``[B]``; ``mask`` reaches ``loss`` only for a ``coupled`` model.

        Use this instead of ``loss`` wherever a padded batch is evaluated, so that padding stays
        out of the risk sets of a coupled loss. Padded entries still need masking by the caller.
        """
        if self.coupled:
            return self.loss(outputs, y, mask=mask)
        return self.loss(outputs, y)

    def masked_metrics(self, outputs, y, mask=None):
        """Per-example metrics dict; ``mask`` reaches ``metrics`` only for a ``coupled`` model."""
        if self.coupled:
            return self.metrics(outputs, y, mask=mask)
        return self.metrics(outputs, y)


_REGISTRY: dict[str, Callable[..., Model]] = {}


def register(name: str):
    """Decorator adding a model builder to the registry."""
    def deco(fn):
        _REGISTRY[name] = fn
        return fn
    return deco


def get_model(name: str, **kwargs) -> Model:
    """Builds a registered model by name (equal requests return the same object)."""
    _load_builtin()
    if name not in _REGISTRY:
        from jaxfl.validate import JaxflValueError
        raise JaxflValueError(f"Unknown model {name!r}; available: {sorted(_REGISTRY)}.")
    builder = _REGISTRY[name]
    accepted = inspect.signature(builder).parameters
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        from jaxfl.validate import JaxflValueError
        raise JaxflValueError(
            f"Unknown argument(s) {unknown} for model {name!r}; accepted: {sorted(accepted)}.")
    try:
        key = (name, builder, tuple(sorted(kwargs.items())))
        hash(key)
    except TypeError:  # unhashable arguments (e.g. lists): a fresh model
        return builder(**kwargs)
    if key not in _BUILT:
        _BUILT[key] = builder(**kwargs)
    return _BUILT[key]


# Models are immutable, so equal requests share one object and with it the compiled ``init``
# and every jit cache keyed on its functions (a sweep or a test file rebuilds the same model
# many times; the ULDP CNN's ``init`` alone takes XLA:CPU ~2 s to compile).
_BUILT: dict = {}


def forward_flops(model: Model, *, compiled: bool = False) -> float:
    """XLA's FLOP count of one example's forward pass through ``model`` (its initial
    parameters, a zero input of ``model.input_shape``).

    ``compiled=False`` (default, what the layout policy reads) analyses the lowered program
    (milliseconds); ``compiled=True`` the program XLA compiled for the default backend (what
    fusion leaves; used for the FLOP-based time estimates). Cached per model.
    """
    return _forward_flops(model, bool(compiled))


@functools.lru_cache(maxsize=64)
def _forward_flops(model: Model, compiled: bool) -> float:
    import jax.numpy as jnp

    params = model.init(jax.random.key(0))
    x = jnp.zeros((1, *model.input_shape), jnp.float32)
    fn = jax.jit(lambda p, v: model.apply(p, v))
    lowered = fn.lower(params, x)
    try:
        cost = (lowered.compile() if compiled else lowered).cost_analysis()
    except Exception:  # noqa: BLE001 - a backend without cost analysis: counted below
        cost = None
    cost = cost[0] if isinstance(cost, (list, tuple)) and cost else cost
    flops = cost.get("flops") if isinstance(cost, dict) else None
    if flops is None or not flops > 0:
        # XLA's GPU lowering returns no cost analysis (None); count the jaxpr instead.
        flops = jaxpr_flops(jax.make_jaxpr(fn)(params, x).jaxpr)
    return float(flops)


def jaxpr_flops(jaxpr) -> float:
    """FLOPs of a jaxpr counted from its equations, the same on every backend.

    ``dot_general``: 2 x (lhs elements) x (rhs free elements); ``conv_general_dilated``: 2 x
    (output elements) x (kernel elements per output feature); every other equation: one per
    output element. Nested jaxprs are counted once (``scan`` bodies ``length`` times). Close to
    XLA's count of the lowered program (what :func:`forward_flops` reads where the backend gives
    one) for dense and convolutional models.

    >>> import jax, jax.numpy as jnp
    >>> jaxpr_flops(jax.make_jaxpr(jnp.dot)(jnp.ones((2, 3)), jnp.ones((3, 4))).jaxpr)
    48.0
    """
    import math

    total = 0.0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        out = sum(math.prod(v.aval.shape) for v in eqn.outvars if hasattr(v.aval, "shape"))
        subs = [v for v in eqn.params.values() if hasattr(v, "eqns") or hasattr(v, "jaxpr")]
        if name == "dot_general":
            (lc, rc), (_, rb) = eqn.params["dimension_numbers"]
            lhs, rhs = (v.aval.shape for v in eqn.invars)
            free = math.prod(d for i, d in enumerate(rhs) if i not in rc and i not in rb)
            total += 2.0 * math.prod(lhs) * free
        elif name == "conv_general_dilated":
            rhs = eqn.invars[1].aval.shape
            out_feature = eqn.params["dimension_numbers"].rhs_spec[0]
            total += 2.0 * out * math.prod(rhs) / rhs[out_feature]
        elif subs:
            times = eqn.params.get("length", 1) if name == "scan" else 1
            for sub in subs:
                total += times * jaxpr_flops(getattr(sub, "jaxpr", sub))
        else:
            total += out
    return total


def available() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def builder(name: str) -> Callable[..., Model]:
    """The registered builder of model ``name`` (its signature lists what :func:`get_model`
    accepts for it).

    Raises:
      JaxflValueError: an unknown name, with the closest registered one and all of them.
    """
    names = available()
    if name not in _REGISTRY:
        import difflib

        from jaxfl.validate import JaxflValueError
        close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.5)
        hint = f" did you mean {close[0]!r}?" if close else ""
        raise JaxflValueError(f"Unknown model {name!r};{hint} available models: {names}.")
    return _REGISTRY[name]


def _load_builtin():
    import importlib
    import pkgutil

    import jaxfl.models as pkg
    for info in pkgutil.iter_modules(pkg.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"jaxfl.models.{info.name}")
