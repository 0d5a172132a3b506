"""Tiny pure-JAX models and federated data for engine tests (no flax)."""

import numpy as np

from jaxfl.algorithms import registry
from jaxfl.data import federated
from jaxfl.models import Model


def logreg(dim: int, classes: int) -> Model:
    """The conformance registry's logistic regression, under the name these tests log."""
    return registry.logreg(dim, classes, name="toy_logreg")


def blobs(num_clients=6, dim=5, classes=3, seed=0, sizes=None):
    rng = np.random.default_rng(seed)
    sizes = sizes or [int(s) for s in rng.integers(3, 12, size=num_clients)]
    centers = rng.normal(size=(classes, dim)) * 2
    xs, ys = [], []
    for n in sizes:
        y = rng.integers(0, classes, size=n)
        xs.append((centers[y] + rng.normal(size=(n, dim))).astype(np.float32))
        ys.append(y.astype(np.int32))
    return federated.from_client_arrays(xs, ys, allow_empty=True)
