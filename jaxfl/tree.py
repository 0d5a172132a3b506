"""Pytree helpers that optax.tree does not provide."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def l2_norm(tree) -> jax.Array:
    """Global L2 norm of all leaves, accumulated in float32 or wider."""
    leaves = jax.tree.leaves(tree)
    if not leaves:
        return jnp.zeros(())
    return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.promote_types(x.dtype, jnp.float32))))
                        for x in leaves))


def add(a, b):
    return jax.tree.map(jnp.add, a, b)


def sub(a, b):
    return jax.tree.map(jnp.subtract, a, b)


def scale(tree, s):
    return jax.tree.map(lambda x: (x * s).astype(x.dtype), tree)


def zeros_like(tree):
    return jax.tree.map(jnp.zeros_like, tree)


def stack(trees):
    """Stacks a list of identical pytrees along a new leading axis."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def broadcast(tree, n: int):
    """Repeats every leaf ``n`` times along a new leading axis."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *x.shape)), tree)


def masked_sum(tree, mask):
    """Sum over the leading axis of every leaf, keeping rows where ``mask`` is true."""
    def f(x):
        m = mask.reshape(mask.shape + (1,) * (x.ndim - 1)).astype(x.dtype)
        return jnp.sum(x * m, axis=0)
    return jax.tree.map(f, tree)


def weighted_sum(tree, weights):
    """``sum_i weights[i] * tree[i]`` over the leading axis."""
    def f(x):
        w = weights.reshape(weights.shape + (1,) * (x.ndim - 1)).astype(x.dtype)
        return jnp.sum(x * w, axis=0)
    return jax.tree.map(f, tree)


def num_params(tree) -> int:
    return int(sum(x.size for x in jax.tree.leaves(tree)))


def ravel(tree) -> jax.Array:
    """Concatenates all leaves into one flat vector."""
    return jnp.concatenate([jnp.ravel(x) for x in jax.tree.leaves(tree)])


def mix(W, tree):
    """``W [P, M] @ tree [M, ...] -> [P, ...]`` on every leaf: the one "mix a pytree by a
    matrix" of the library (gossip mixing matrices, DP-OGL group membership weights).

    >>> mix(jnp.array([[0.5, 0.5]]), {"w": jnp.array([[1.0], [3.0]])})["w"].tolist()
    [[2.0]]
    """
    W = jnp.asarray(W)
    if W.ndim != 2:
        raise ValueError(f"Expected a matrix W of shape [P, M], got shape {W.shape}.")
    # Full float32 precision on every backend: gossip's privacy analysis is about these exact
    # products (a TF32 mix would spread a node's noise and signal differently than W says).
    return jax.tree.map(lambda x: jnp.tensordot(W.astype(x.dtype), x, axes=1,
                                                precision=jax.lax.Precision.HIGHEST), tree)
