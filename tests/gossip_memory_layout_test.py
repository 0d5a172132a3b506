"""Memory-aware layout of the gossip node axis (:func:`jaxfl.algorithms.gossip.node_grads`):
under a device memory budget that the full node vmap does not fit, DP-GossipAvg and the
full-batch DP-FedAvg baseline compute their nodes in chunks, with the same results.

On CPU XLA reports no device memory: the budget is the fake ``JAXFL_DEVICE_MEMORY_BUDGET``."""


import jax
import numpy as np
import pytest

from jaxfl import layout
from jaxfl.algorithms import gossip
from jaxfl.data import federated
from jaxfl.topology import graphs, mixing
from tests import _fake_budget, _tolerance


@pytest.fixture
def fake_budget_only(monkeypatch):
    """The only budget is the fake one (on an accelerator too); nothing measured yet."""
    _fake_budget.only_the_fake_budget(monkeypatch)


def _close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=_tolerance.rtol(float32=1e-5),
                                   atol=_tolerance.atol(float32=1e-6))


N, M, D, K = 7, 5, 6, 3


def _setup(kind):
    rng = np.random.default_rng(0)
    sizes = [5, 3, 5, 1, 4, 5, 2]  # padded to M records: masks differ per node
    xs = [rng.normal(size=(s, D)).astype(np.float32) for s in sizes]
    ys = [rng.integers(0, K, s).astype(np.int32) for s in sizes]
    data = federated.from_client_arrays(xs, ys).to_device()
    kw = dict(clip_norm=0.5, noise_multiplier=0.8, learning_rate=0.5, normalizer=float(M))
    if kind == "gossip":
        alg = gossip.dp_gossip_avg(mixing_matrix=mixing.max_degree(graphs.erdos_renyi(
            N, 0.5, seed=1)), **kw)
    else:
        alg = gossip.dp_fedavg_full_batch(num_nodes=N, **kw)
    params = gossip.logreg_init(D, K)
    seen = []

    def run():  # traced afresh every call (the layout is chosen when tracing)
        fit = layout.fit
        layout.fit = lambda *a: seen.append(fit(*a)) or seen[-1]
        try:
            return jax.jit(lambda *a: alg.apply(*a))(alg.init(params), data, None,
                                                     jax.random.key(3))
        finally:
            layout.fit = fit

    return run, seen


@pytest.mark.parametrize("kind", ["gossip", "fedavg_full_batch"])
def test_nodes_in_memory_sized_chunks_equal_the_full_vmap(fake_budget_only, monkeypatch, kind):
    run, seen = _setup(kind)
    full = run()
    assert set(seen) == {None} and layout._MEMORY == {}  # no budget: full vmap, no measuring
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    _close(full, run())
    assert seen[-1] is None
    fixed, per = next(iter(layout._MEMORY.values()))
    assert per > 0
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed + 3 * per + per // 2))
    chunked = run()
    assert seen[-1] == 3  # 7 nodes in chunks of 3 (padded to 9)
    _close(full, chunked)
    assert len(layout._MEMORY) == 1  # measured once
    monkeypatch.setenv(layout.BUDGET_ENV, str(per // 2))
    with pytest.raises(layout.MemoryBudgetError,
                       match=rf"One of the {N} nodes needs \d+ bytes .* budget of \d+ bytes"):
        run()
