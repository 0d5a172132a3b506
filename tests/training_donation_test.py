"""The round loop donates the server state to each round: same results, no warnings, the
caller's arrays untouched, and every round's input state really consumed."""

import json
import warnings

import jax
import numpy as np
from flax import serialization

from jaxfl import checkpoint, sharding, training
from jaxfl import random as jrandom
from jaxfl.algorithms import base, dp_fedavg
from tests import _toy


def _setup():
    model = _toy.logreg(5, 3)
    alg = dp_fedavg.dp_fedavg(model, num_clients=8, local_steps=2, batch_size=4, client_lr=0.3,
                              clip_norm=0.5, noise_multiplier=1.0, sampling_rate=0.5)
    return alg, _toy.blobs(num_clients=8, dim=5, classes=3, seed=1), model.init(jax.random.key(0))


def _reference_states(alg, data, params, rounds, seed):
    """The states after each round of a plain loop over an undonated jit of the round."""
    step = jax.jit(lambda s, d, ri, k: base.call_apply(alg, s, d, ri, k))
    key = jrandom.key_streams(seed, ("train",))["train"]
    state, out = alg.init(params), []
    for r in range(rounds):
        state, _ = step(state, data.to_device(), alg.prepare(r, jrandom.host_rng(seed, "sample", r)),
                        jrandom.round_key(key, r))
        out.append(jax.tree.map(np.asarray, state))
    return out


def test_donated_rounds_equal_the_undonated_loop(tmp_path, monkeypatch):
    alg, data, params = _setup()
    before = jax.tree.map(np.array, params)
    # dp_fedavg's initial state holds the caller's params arrays themselves: donating them
    # would delete the caller's arrays (the loop donates a private copy instead).
    held = {id(x) for x in jax.tree.leaves(alg.init(params))}
    assert {id(x) for x in jax.tree.leaves(params)} <= held

    inputs = []  # the state given to each round, to see that it was consumed

    call = sharding.LoopJit.__call__

    def spy_call(self, state, *args):  # records each round's input state
        inputs.append(state)
        return call(self, state, *args)

    monkeypatch.setattr(sharding.LoopJit, "__call__", spy_call)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = training.run(alg, data, params=params, rounds=4, seed=3, workdir=tmp_path,
                           checkpoint_every=2, progress=False)
    assert not [str(w.message) for w in caught if "donat" in str(w.message).lower()]

    ref = _reference_states(alg, data, params, 4, seed=3)
    for a, b in zip(jax.tree.leaves(res.state), jax.tree.leaves(ref[-1]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)  # bit for bit
    saved = checkpoint.at_round(tmp_path / "checkpoints", 2)  # saved before round 3 reused it
    restored = serialization.msgpack_restore(saved.read_bytes())
    for a, b in zip(jax.tree.leaves(restored), jax.tree.leaves(ref[1]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)
    assert json.loads((tmp_path / "summary.json").read_text())["rounds_completed"] == 4

    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(before), strict=True):
        assert not a.is_deleted()  # the caller's arrays are intact
        np.testing.assert_array_equal(np.asarray(a), b)
    assert len(inputs) == 4
    for state in inputs:  # every round's input buffers were donated (consumed by the round)
        assert all(x.is_deleted() for x in jax.tree.leaves(state))
