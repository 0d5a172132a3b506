"""Start-up cost of a ULDP round on an accelerator, on CPU proxies (issue 37, item 3).

On a device with a memory budget (a GPU; on CPU the fake ``JAXFL_DEVICE_MEMORY_BUDGET``) the
pair axis of every length bucket is fitted to the budget (:func:`jaxfl.layout.fit`) while the
round is traced. Measuring a bucket's per-pair memory compiles the vmapped trainer twice; on
all of MNIST (5 buckets) those 10 compiles were most of a GPU start and, from the persistent
cache, most of a second process' start (docs/scale.md, "Start-up of a ULDP round"). The round
now compiles one program for the whole round (a bound at the longest bucket) when the budget
holds every bucket under it, and lays the pairs out exactly as the per-bucket measurement did.
"""

import jax
import numpy as np
import pytest
from jax._src import dispatch

from jaxfl import layout
from jaxfl.algorithms import uldp, uldp_data, uldp_local
from jaxfl.tasks import silos
from tests import _fake_budget, _toy


@pytest.fixture
def fake_budget(monkeypatch):
    _fake_budget.only_the_fake_budget(monkeypatch)
    monkeypatch.setattr(uldp, "_BOUNDS", {}, raising=False)


def _records(n=60, silos_=3, users=6, shape=(4,)):
    rng = np.random.default_rng(0)
    return uldp_data.UldpData(rng.normal(size=(n, *shape)).astype(np.float32),
                              rng.integers(0, 3, n).astype(np.int32),
                              rng.integers(0, silos_, n), rng.integers(0, users, n),
                              silos_, users).validate()


def _lower(model, data, *, num_users=6, num_silos=3):
    """``(lowered round, compiles requested while tracing and lowering it)``."""
    alg = uldp.uldp_avg(model, num_silos=num_silos, num_users=num_users, local_epochs=2,
                        batch_size=4, local_lr=0.1, global_lr=1.0, clip_norm=0.5,
                        noise_multiplier=1.0)
    params = model.init(jax.random.key(0))
    args = (alg.init(params), data, alg.prepare(0, None), jax.random.key(1))
    compiles = []

    def listen(event, secs, **kw):
        if event == dispatch.BACKEND_COMPILE_EVENT:  # a compile, or a persistent-cache load
            compiles.append(secs)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        lowered = jax.jit(alg.apply).lower(*args)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return lowered, len(compiles)


def test_budgeted_round_compiles_one_memory_program(fake_budget, monkeypatch):
    """Tracing the accelerator layout of a round under a budget compiles ONE extra program
    (2 per length bucket before: 6 here), and lowers the very program of the unbudgeted
    trace (the same layout)."""
    data = uldp_data.pair_data(_records(), min_length=4, max_pairs_per_chunk=None, shards=1,
                               backend="gpu").to_device()
    assert len(data.buckets) >= 3
    model = _toy.logreg(4, 3)
    plain, n0 = _lower(model, data)
    assert n0 == 0  # no budget (CPU): nothing measured
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    budgeted, n1 = _lower(model, data)
    assert n1 == 1, n1
    assert budgeted.as_text() == plain.as_text()


def test_bound_covers_every_bucket_measurement(fake_budget):
    """The one-program bound is above every bucket's own measurement (2 and 4 pairs,
    :func:`jaxfl.layout.unit_memory`) at every pair count, so a layout that fits under it fits
    under the bucket's measurement: the layout is the one the measurements give."""
    data = uldp_data.pair_data(_records(), min_length=4, max_pairs_per_chunk=None, shards=1,
                               backend="gpu")
    model = _toy.logreg(4, 3)
    params = model.init(jax.random.key(0))
    key = jax.random.key(1)
    trainers = {}

    def unit_fn(p, x, y, m, k):  # ULDP-AVG's per-pair trainer at the bucket's length
        L = m.shape[0]
        if L not in trainers:
            trainers[L] = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=0.1,
                                                   epochs=2, batch_size=4, length=L)
        return trainers[L](p, x, y, m, k)

    def unit(length):
        return (jax.ShapeDtypeStruct((length, 4), np.float32),
                jax.ShapeDtypeStruct((length,), np.int32),
                jax.ShapeDtypeStruct((length,), np.bool_), jax.ShapeDtypeStruct((), key.dtype))

    lengths = [int(b.index.shape[1]) for b in data.buckets]
    fixed_b, per_b = uldp.pair_memory_bound("bound", unit_fn, params, unit(max(lengths)))
    for length, b in zip(lengths, data.buckets, strict=True):
        fixed, per = layout.unit_memory("exact", unit_fn, (params,), unit(length))
        for n in range(1, int(b.index.shape[0]) + 1):
            assert fixed + n * per <= fixed_b + n * per_b, (length, n)


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["patches"])
def test_uldp_cnn_round_compiles_one_memory_program(fake_budget, monkeypatch, impl):
    """The same on the paper's CNN with the GPU's convolution default (a few records)."""
    monkeypatch.setenv("JAXFL_CONV_IMPL", impl)
    data = uldp_data.pair_data(_records(n=24, silos_=2, users=4, shape=(28, 28, 1)),
                               min_length=2, max_pairs_per_chunk=None, shards=1,
                               backend="gpu").to_device()
    assert len(data.buckets) >= 2
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    _, n = _lower(silos.model_of("mnist"), data, num_users=4, num_silos=2)
    assert n == 1, n


def _loops(jaxpr) -> int:
    """``scan`` equations in a jaxpr, its sub-jaxprs included."""
    n = 0
    for eqn in jaxpr.eqns:
        n += eqn.primitive.name == "scan"
        for v in eqn.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    n += _loops(inner)
    return n


def test_pairs_of_at_most_one_batch_trace_no_step_loop():
    """A pair of at most B records takes its one SGD step per epoch without a loop: the pairs'
    sums trace two loops per bucket (its chunks, the epochs), where a step loop of one trip
    made three (and was batched once more under the pairs' vmap)."""
    data = uldp_data.pair_data(_records(), min_length=4, max_pairs_per_chunk=None, shards=1,
                               backend="gpu").to_device()
    model = _toy.logreg(4, 3)
    params = model.init(jax.random.key(0))
    batch = max(int(b.index.shape[1]) for b in data.buckets)
    trainers = {}

    def unit_fn(p, x, y, m, k):
        L = m.shape[0]
        if L not in trainers:
            trainers[L] = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=0.1,
                                                   epochs=2, batch_size=batch, length=L)
        return trainers[L](p, x, y, m, k)

    traced = jax.jit(lambda p, d, u, k: uldp.silo_sums(
        unit_fn, p, d, u, k, clip_norm=0.5, weighting="uniform")).trace(
        params, data, np.ones(6, np.float32), jax.random.key(1))
    assert _loops(traced.jaxpr.jaxpr) == 2 * len(data.buckets)
