"""vmapped_runs.block_fn: a block of one point runs that point's round without the vmap (its
products then keep the sequential round's layouts, tests/bench_proxies_test.py), with the same
results as the point in a vmapped block of several, with shared or per-point data."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import random as jrandom
from jaxfl import vmapped_runs
from jaxfl.algorithms import base
from tests import _sweep_toy as toy

# float32: the one-point program and the vmapped one add the same products, XLA may order
# them differently (tests/_tolerance.py's float32 values).
RTOL, ATOL = 1e-5, 1e-6


def test_one_point_block_equals_its_lane_in_a_vmapped_block():
    spec = toy.build(toy.ToyConfig(rounds=2))
    alg, data = spec.algorithm, spec.data
    kd = np.asarray(jax.random.key_data(jrandom.key_streams(0, ("train",))["train"]))
    kd2 = np.asarray(jax.random.key_data(jrandom.key_streams(1, ("train",))["train"]))
    cohorts = [alg.prepare(r, jrandom.host_rng(0, "sample", r)) for r in range(2)]
    state = jax.tree.map(np.asarray, alg.init(spec.params))
    stack = lambda trees: jax.tree.map(lambda *a: np.stack(a), *trees)  # noqa: E731
    rounds = jnp.arange(2, dtype=jnp.int32)
    hp = base.bind_hparams([alg, alg])
    fn = vmapped_runs.block_fn(alg, data_axis=None, spmd=False)
    two = fn(stack([state, state]), data, vmapped_runs.stack_round_inputs(
        [vmapped_runs.stack_round_inputs([c, c]) for c in cohorts]), np.stack([kd, kd2]), hp,
        rounds)
    ri1 = vmapped_runs.stack_round_inputs([vmapped_runs.stack_round_inputs([c]) for c in cohorts])
    hp1 = jax.tree.map(lambda a: a[:1], hp)
    one = fn(stack([state]), data, ri1, kd[None], hp1, rounds)
    per_point = vmapped_runs.block_fn(alg, data_axis=0, spmd=False)(
        stack([state]), stack([jax.tree.map(np.asarray, data)]), ri1, kd[None], hp1, rounds)
    for got in (one, per_point):
        assert jax.tree.map(np.shape, got) == jax.tree.map(lambda a: (1, *np.shape(a)[1:]),
                                                           two)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(two), strict=True):
            np.testing.assert_allclose(np.asarray(a)[0], np.asarray(b)[0], rtol=RTOL,
                                       atol=ATOL)
    assert not np.array_equal(np.asarray(jax.tree.leaves(two[0])[0])[0],
                              np.asarray(jax.tree.leaves(two[0])[0])[1])  # two seeds differ
