"""Gaussian noise on pytrees, as functions and as an optax-style privatizer.

Each leaf gets independent N(0, stddev^2) noise from its own key (``fold_in`` of the leaf index),
so the noise of a leaf does not depend on the other leaves' shapes.

Note: ``jax.random`` is not a cryptographically secure PRNG. jaxfl's noise is research grade;
a deployment must draw noise from a CSPRNG (e.g. NumPy's ``secrets``-seeded generator or a
hardware source) on trusted hardware.

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> n = gaussian_like({"w": jnp.zeros(3)}, jax.random.key(0), 2.0)
  >>> n["w"].shape
  (3,)
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax


def gaussian_like(tree, key: jax.Array, stddev):
    """A pytree shaped like ``tree`` with i.i.d. N(0, stddev^2) entries (leaf dtypes kept)."""
    leaves, treedef = jax.tree.flatten(tree)
    noise = [
        (stddev * jax.random.normal(jax.random.fold_in(key, i), jnp.shape(x),
                                    dtype=jnp.promote_types(jnp.asarray(x).dtype, jnp.float32))
         ).astype(jnp.asarray(x).dtype)
        for i, x in enumerate(leaves)
    ]
    return jax.tree.unflatten(treedef, noise)


def add_gaussian(tree, key: jax.Array, stddev):
    """``tree + N(0, stddev^2 I)``."""
    return jax.tree.map(jnp.add, tree, gaussian_like(tree, key, stddev))


class GaussianPrivatizerState(NamedTuple):
    key: jax.Array  # typed PRNG key
    count: jax.Array  # shape=(), dtype=int32


def gaussian_privatizer(*, stddev: float, key: jax.Array) -> optax.GradientTransformation:
    """Adds N(0, stddev^2) noise to the updates; the step's key is ``fold_in(key, count)``.

    Composes with optax, e.g. ``optax.chain(gaussian_privatizer(stddev=s, key=k), optax.sgd(1))``.
    """

    def init_fn(params):
        del params  # unused
        return GaussianPrivatizerState(key=jnp.copy(key), count=jnp.zeros((), jnp.int32))

    def update_fn(updates, state, params=None):
        del params  # unused
        noisy = add_gaussian(updates, jax.random.fold_in(state.key, state.count), stddev)
        return noisy, GaussianPrivatizerState(key=state.key, count=state.count + 1)

    return optax.GradientTransformation(init_fn, update_fn)
