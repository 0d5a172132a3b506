"""Gaussian noise on pytrees: one key per call, one fold-in per leaf.

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

import jax
import jax.numpy as jnp

from jaxfl import precision


def gaussian_like(tree, key: jax.Array, stddev):
    """A pytree shaped like ``tree`` with i.i.d. N(0, stddev^2) entries (leaf dtypes kept)."""
    leaves, treedef = jax.tree.flatten(tree)
    with precision.noise_scope():
        noise = [
            (stddev * jax.random.normal(jax.random.fold_in(key, i), jnp.shape(x),
                                        dtype=jnp.promote_types(jnp.asarray(x).dtype,
                                                                jnp.float32))
             ).astype(jnp.asarray(x).dtype)
            for i, x in enumerate(leaves)
        ]
    return jax.tree.unflatten(treedef, noise)


def add_gaussian(tree, key: jax.Array, stddev):
    """``tree + N(0, stddev^2 I)``."""
    return jax.tree.map(jnp.add, tree, gaussian_like(tree, key, stddev))
