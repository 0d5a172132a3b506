"""PRNG discipline: named key streams and order-independent per-round/per-client keys.

The root key is split once into named streams (``init``, ``train``, ``noise``, ``sample`` ...).
Every per-round and per-client key is derived by ``fold_in``: ``client_key(k, r, c) =
fold_in(fold_in(k, r), c)``; an algorithm's clients draw from :func:`client_keys` of the round's
key, ``fold_in(substream(k, "clients"), c)``. Keys therefore depend only on (seed, stream,
round, client), never on the order in which rounds or clients are processed, which makes runs
resumable and vmap-safe.
Client keys are never derived from the round number alone.

Host-side randomness (participation sampling, partitioning) uses ``np.random.Generator``
objects built by :func:`host_rng` from the same seed, stream name and round.

Note: ``jax.random`` is not a cryptographically secure PRNG; jaxfl's noise is research grade.

Example Usage:
  >>> streams = key_streams(0, ("init", "train", "noise"))
  >>> k = client_key(streams["train"], 3, 7)
  >>> k.shape
  ()
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

STREAMS = ("init", "train", "noise", "sample", "eval")


def stream_id(name: str) -> int:
    """The 31-bit integer of a stream name (first 4 bytes of its SHA-256, little-endian): what
    :func:`substream` folds in and :func:`host_rng` seeds with."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little") & 0x7FFFFFFF


def substream(key: jax.Array, name: str) -> jax.Array:
    """A named sub-key of ``key``: ``fold_in(key, stream_id(name))``."""
    return jax.random.fold_in(key, stream_id(name))


def root_key(seed: int) -> jax.Array:
    """A typed root key for ``seed``."""
    return jax.random.key(int(seed))


def key_streams(seed: int, names: Sequence[str] = STREAMS) -> dict[str, jax.Array]:
    """Named, independent key streams derived from the seed by name (order-independent)."""
    root = root_key(seed)
    return {name: substream(root, name) for name in names}


def round_key(key: jax.Array, round_index) -> jax.Array:
    """Key of one round of a stream."""
    return jax.random.fold_in(key, round_index)


def client_key(key: jax.Array, round_index, client_index) -> jax.Array:
    """Key of one client in one round: ``fold_in(fold_in(key, round), client)``."""
    return jax.random.fold_in(jax.random.fold_in(key, round_index), client_index)


def client_keys(key: jax.Array, client_ids) -> jax.Array:
    """Per-client keys ``fold_in(substream(key, "clients"), client_id)`` of a round's key,
    vmapped over ``client_ids`` (a client's key depends on its global index only)."""
    clients = substream(key, "clients")
    return jax.vmap(lambda c: jax.random.fold_in(clients, c))(jnp.asarray(client_ids))


def train_stream(seed: int, generation: int = 0) -> jax.Array:
    """The training key stream of a run (``key_streams(seed)["train"]``); generation ``g > 0``
    (a privacy ledger's count of re-runs of released rounds, :mod:`jaxfl.ledger`) folds ``g``
    in, so re-run rounds draw noise independent of their first release."""
    key = key_streams(seed, ("train",))["train"]
    return key if not generation else jax.random.fold_in(key, int(generation))


def sample_rng(seed: int, round_index: int, generation: int = 0) -> np.random.Generator:
    """The host generator of a round's sampling (``host_rng(seed, "sample", round)``; with
    generation ``g > 0`` the index ``g`` is appended, see :func:`train_stream`)."""
    return host_rng(seed, "sample", round_index, *((int(generation),) if generation else ()))


def host_rng(seed: int, stream: str, *indices: int) -> np.random.Generator:
    """A NumPy generator for host-side randomness, a pure function of (seed, stream, indices)."""
    entropy = [int(seed) & 0xFFFFFFFF, stream_id(stream), *[int(i) for i in indices]]
    return np.random.default_rng(np.random.SeedSequence(entropy))
