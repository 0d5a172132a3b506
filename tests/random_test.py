"""jaxfl.random: the one name-to-key hash, named sub-keys and per-client keys."""

import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import random as jrandom
from jaxfl.algorithms import base


def test_stream_id_is_the_first_four_bytes_of_sha256():
    for name in ("clients", "noise", "train"):
        digest = hashlib.sha256(name.encode()).digest()
        assert jrandom.stream_id(name) == int.from_bytes(digest[:4], "little") & 0x7FFFFFFF
    assert jrandom.stream_id("clients") == 143674767  # pinned: changing it changes every draw


def test_substream_and_key_streams_fold_in_the_name():
    key = jax.random.key(3)
    want = jax.random.key_data(jax.random.fold_in(key, jrandom.stream_id("noise")))
    assert np.array_equal(jax.random.key_data(jrandom.substream(key, "noise")), want)
    streams = jrandom.key_streams(3, ("noise",))
    assert np.array_equal(jax.random.key_data(streams["noise"]), want)
    assert base.substream is jrandom.substream


def test_client_keys_depend_on_the_client_only():
    key = jax.random.key(5)
    ids = jnp.array([4, 0, 9])
    keys = jax.random.key_data(jrandom.client_keys(key, ids))
    clients = jrandom.substream(key, "clients")
    for k, c in zip(keys, [4, 0, 9], strict=True):
        assert np.array_equal(k, jax.random.key_data(jax.random.fold_in(clients, c)))
    swapped = jax.random.key_data(jrandom.client_keys(key, ids[::-1]))
    assert np.array_equal(swapped, keys[::-1])
    assert base.client_keys is jrandom.client_keys


def test_host_rng_is_a_pure_function_of_its_arguments():
    a = jrandom.host_rng(1, "partition", 2).integers(0, 1 << 30, 4)
    assert np.array_equal(a, jrandom.host_rng(1, "partition", 2).integers(0, 1 << 30, 4))
    assert not np.array_equal(a, jrandom.host_rng(1, "partition", 3).integers(0, 1 << 30, 4))
    assert not np.array_equal(a, jrandom.host_rng(1, "sample", 2).integers(0, 1 << 30, 4))
