"""Quickstart run by tests/packaging_test.py from outside the checkout (2 DP-FedAvg rounds)."""

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


if __name__ == "__main__":
    from jaxfl import training
    from jaxfl.algorithms import dp_fedavg

    model, data = logreg(5, 3), blobs(num_clients=10, seed=3)
    alg = dp_fedavg.dp_fedavg(model, num_clients=10, local_steps=2, batch_size=4, client_lr=0.3,
                              clip_norm=0.5, noise_multiplier=0.8, sampling_rate=0.5)
    res = training.run(alg, data, params=model.init(jax.random.key(0)), rounds=2, seed=0,
                       delta=1e-5, progress=False)
    print(f"rounds={res.summary['rounds_completed']} epsilon={res.summary['epsilon']:.3f}")
