"""Tiny pure-JAX models and federated data for engine tests (no flax)."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl.data import federated
from jaxfl.models import Model


def logreg(dim: int, classes: int) -> Model:
    def init(key):
        return {"w": 0.01 * jax.random.normal(key, (dim, classes)), "b": jnp.zeros(classes)}

    def apply(params, x, *, train=False, key=None):
        del train, key
        return x.reshape(x.shape[0], -1) @ params["w"] + params["b"]

    def loss(out, y):
        return -jnp.take_along_axis(jax.nn.log_softmax(out), y[:, None], axis=1)[:, 0]

    def metrics(out, y):
        return {"accuracy": (jnp.argmax(out, -1) == y).astype(jnp.float32), "loss": loss(out, y)}

    return Model("toy_logreg", init, apply, loss, metrics, (dim,))


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
