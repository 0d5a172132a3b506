"""The plug-in contract's registry: every algorithm of :mod:`jaxfl.algorithms` registers a small
example of itself next to its builder, and one conformance suite (``tests/conformance_test.py``)
checks every registered example:

* the accountant matches the hyperparameters (``accountant.hparams`` are the builder's, and
  epsilon recomputed from them independently agrees);
* the vmapped round equals a per-unit loop (every unit axis one unit at a time);
* the noise's standard deviation passes a Kolmogorov-Smirnov test (the right sigma accepted, a
  10% larger one rejected);
* every traced hyperparameter batches in a sweep (a 2-point vmapped batch equals the two single
  runs);
* the audit bound stays under the claim (where :mod:`jaxfl.audit` has an audit of it);
* the precision walk passes (:mod:`jaxfl.precision`).

A new algorithm joins the suite by registering: in its module, after its builder,

  >>> def _example(**hp):                      # doctest: +SKIP
  ...     model = registry.logreg(5, 3)
  ...     alg = my_algorithm(model, num_clients=6, clip_norm=hp.get("clip_norm", 0.5), ...)
  ...     return registry.Example(model, alg, registry.blobs(6))
  >>> registry.register("my_algorithm", _example, noise=registry.Noise(...))  # doctest: +SKIP

``make(**hparams)`` builds the example with any of its traced hyperparameters
(``Algorithm.hparams``) set to another value (the sweep check builds a second point this way).
:func:`names` imports every module of the package, so nothing else is edited.

Example Usage:
  >>> from jaxfl.algorithms import registry
  >>> "dp_fedavg" in registry.names()
  True
  >>> ex = registry.example("dp_fedavg", noise_multiplier=2.0)
  >>> ex.algorithm.accountant.hparams["noise_multiplier"]
  2.0
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxfl import validate


class Example(NamedTuple):
    """A small instance of a registered algorithm.

    Attributes:
      model: the :class:`jaxfl.models.Model` it trains (None for a closed-form gradient).
      algorithm: the built :class:`~jaxfl.algorithms.base.Algorithm`.
      data: its data (host; :meth:`device_data` is the copy ``apply`` reads).
      params: the initial model parameters (default: ``model.init(key(0))``).
    """

    model: Any
    algorithm: Any
    data: Any
    params: Any = None

    def initial_params(self):
        return self.model.init(jax.random.key(0)) if self.params is None else self.params

    def device_data(self):
        return self.data.to_device() if hasattr(self.data, "to_device") else self.data


class Noise(NamedTuple):
    """Where an example's privacy noise is drawn and the standard deviation it must have,
    computed from the accountant's numbers (not the privatizer's methods).

    Attributes:
      std: ``algorithm -> {draw name: expected std}``; a draw name is the
        :mod:`jaxfl.noise` / :mod:`jaxfl.privatizer` function the noise goes through
        (``"gaussian_like"``, ``"pair_noise"``, ``"local_noise"``).
    """

    std: Callable[[Any], dict]


class Entry(NamedTuple):
    name: str
    make: Callable[..., Example]
    module: str
    noise: Noise | None  # None: the algorithm draws no privacy noise (non-private)
    variant: bool  # a configuration of another entry: only the cheap checks run on it


_ENTRIES: dict[str, Entry] = {}


def register(name: str, make: Callable[..., Example], *, noise: Noise | None = None,
             variant: bool = False) -> None:
    """Registers ``make(**hparams) -> Example`` under ``name`` (module import time).

    ``noise``: where the privacy noise is drawn and its expected std (None: non-private).
    ``variant``: a configuration of an algorithm that is registered already (only the
    accountant and precision checks run on it). Audits live in :mod:`jaxfl.audit` (which the
    algorithms do not import); the suite names the audit of each example.

    Raises:
      JaxflValueError: a name registered twice by different modules.
    """
    module = getattr(make, "__module__", "?")
    old = _ENTRIES.get(name)
    if old is not None and old.module != module:
        raise validate.JaxflValueError(
            f"Algorithm example {name!r} is registered by {old.module} already.")
    _ENTRIES[name] = Entry(name, make, module, noise, variant)


def _load_all() -> None:
    import jaxfl.algorithms as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "registry":
            importlib.import_module(f"{package.__name__}.{info.name}")


def names(*, variants: bool = True) -> list[str]:
    """The registered examples' names (every module of the package imported first)."""
    _load_all()
    return sorted(n for n, e in _ENTRIES.items() if variants or not e.variant)


def entry(name: str) -> Entry:
    _load_all()
    if name not in _ENTRIES:
        raise validate.JaxflValueError(
            f"Expected a registered algorithm example among {sorted(_ENTRIES)}, got {name!r}.")
    return _ENTRIES[name]


def example(name: str, **hparams) -> Example:
    """The example ``name`` built with ``hparams`` (traced hyperparameter name -> value)."""
    return entry(name).make(**hparams)


# ---------------------------------------------------------------------------------------------
# Tiny models and data shared by the examples.
# ---------------------------------------------------------------------------------------------


def logreg(dim: int = 5, classes: int = 3, name: str = "registry_logreg"):
    """Multinomial logistic regression on ``dim`` features, in plain JAX (no flax layers, so
    per-example clipping takes the two-pass method: :func:`cnn` takes the ghost norms)."""
    import jax.numpy as jnp

    from jaxfl.models import Model

    def init(key):
        # a weight initializer (the same values as 0.01 * random.normal), not a privacy draw
        return {"w": jax.nn.initializers.normal(0.01)(key, (dim, classes)),
                "b": jnp.zeros(classes)}

    def apply(params, x, *, train=False, key=None):
        del train, key
        return x.reshape(x.shape[0], -1) @ params["w"] + params["b"]

    def loss(out, y):
        return -jnp.take_along_axis(jax.nn.log_softmax(out), y[:, None], axis=1)[:, 0]

    def metrics(out, y):
        return {"accuracy": (jnp.argmax(out, -1) == y).astype(jnp.float32), "loss": loss(out, y)}

    return Model(name, init, apply, loss, metrics, (dim,))


def cnn():
    """A tiny FedAvg CNN (8x8x1 images, 3 classes): convolutions in local training."""
    from jaxfl.models import get_model

    return get_model("fedavg_cnn", num_classes=3, input_shape=(8, 8, 1), features=(2, 3),
                     hidden=(8,))


def blobs(num_clients: int = 6, dim: int = 5, classes: int = 3, size: int = 6, seed: int = 1):
    """Host :class:`~jaxfl.data.FederatedData`: ``size`` Gaussian-blob examples per client."""
    from jaxfl.data import federated

    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(classes, dim)) * 2
    xs, ys = [], []
    for _ in range(num_clients):
        y = rng.integers(0, classes, size=size)
        xs.append((centers[y] + rng.normal(size=(size, dim))).astype(np.float32))
        ys.append(y.astype(np.int32))
    return federated.from_client_arrays(xs, ys)


def images(model, num_clients: int = 6, size: int = 4, seed: int = 0):
    """Host :class:`~jaxfl.data.FederatedData` of random inputs of ``model``'s shape."""
    from jaxfl.data import federated

    rng = np.random.default_rng(seed)
    xs = [rng.normal(size=(size, *model.input_shape)).astype(np.float32)
          for _ in range(num_clients)]
    ys = [rng.integers(0, 3, size=size).astype(np.int32) for _ in range(num_clients)]
    return federated.from_client_arrays(xs, ys)


def gaussian_std(alg) -> dict:
    """``{"gaussian_like": sigma C s}`` from the accountant's hparams and the privatizer's
    sensitivity factor ``s`` (one share of ``parts``: ``/ sqrt(parts)``)."""
    acc = alg.accountant
    priv = acc.privatizer
    std = acc.hparams["noise_multiplier"] * acc.hparams["clip_norm"] * priv.sensitivity_factor
    return {"gaussian_like": std / np.sqrt(priv.parts)}


GAUSSIAN = Noise(gaussian_std)


__all__ = ["Example", "Noise", "Entry", "register", "names", "entry", "example", "logreg",
           "cnn", "blobs", "images", "gaussian_std", "GAUSSIAN"]
