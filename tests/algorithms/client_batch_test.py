"""Training the cohort in chunks (``client_batch``) equals the fully vmapped round."""

import jax
import numpy as np
import pytest

from jaxfl import layout, validate
from jaxfl.algorithms import dp_fedavg, fedavg
from tests import _toy


@pytest.mark.parametrize("algorithm,client_batch", [("fedavg", 3), ("dp_fedavg", 1),
                                                    ("dp_fedavg", 50)])
def test_chunked_cohort_equals_vmapped(algorithm, client_batch):
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=7, seed=3, sizes=[4, 0, 6, 3, 9, 2, 5]).to_device()
    kw = dict(num_clients=7, local_steps=2, batch_size=3, client_lr=0.3, sampling_rate=0.6)
    if algorithm == "fedavg":
        build = lambda **k: fedavg.fedavg(model, **kw, **k)
    else:
        build = lambda **k: dp_fedavg.dp_fedavg(model, clip_norm=0.05, noise_multiplier=1.0,
                                                **kw, **k)
    full, chunked = build(client_batch=None), build(client_batch=client_batch)
    params = model.init(jax.random.key(0))
    cohort = full.prepare(0, np.random.default_rng(1))
    a, da = jax.jit(full.apply)(full.init(params), data, cohort, jax.random.key(2))
    b, db = jax.jit(chunked.apply)(chunked.init(params), data, cohort, jax.random.key(2))
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    for k in da:
        np.testing.assert_allclose(da[k], db[k], rtol=1e-5, atol=1e-6)
    for bad in (0, -1, "fast", 1.5):
        with pytest.raises(validate.JaxflValueError):
            build(client_batch=bad)


def test_layout_auto_is_chunks_of_one_on_cpu_and_vmap_on_accelerators():
    assert layout.resolve("auto", "cohort", backend="cpu") == 1
    assert layout.resolve("auto", "pairs", backend="cpu") is None  # full vmap of pairs
    # pairs training a conv-sized model run in chunks of 2 on CPU, small models fully vmapped
    heavy, light = layout.HEAVY_FLOPS, layout.HEAVY_FLOPS / 10
    assert layout.resolve("auto", "pairs", backend="cpu", unit_flops=heavy) == 2
    assert layout.resolve("auto", "pairs", backend="cpu", unit_flops=light) is None
    assert layout.resolve("auto", "pairs", backend="gpu", unit_flops=heavy) is None
    assert layout.resolve("auto", "cohort", backend="cpu", unit_flops=heavy) == 1
    assert layout.resolve(8, "pairs", backend="cpu", unit_flops=heavy) == 8  # override wins
    # split over host devices, conv-sized pairs run one per device; light ones are unchanged
    assert layout.resolve("auto", "pairs", backend="cpu", unit_flops=heavy, shards=2) == 1
    assert layout.resolve("auto", "pairs", backend="cpu", unit_flops=light, shards=2) is None
    assert layout.resolve("auto", "pairs", backend="gpu", unit_flops=heavy, shards=2) is None
    # short pairs take more per chunk, about CPU_HEAVY_ROWS records; full-size pairs (8 or more
    # records) keep 2 (1 per device); light models and accelerators ignore the length
    rows = layout.CPU_HEAVY_ROWS
    for length, want in ((1, rows), (2, rows // 2), (3, rows // 3), (8, 2), (128, 2)):
        assert layout.resolve("auto", "pairs", backend="cpu", unit_flops=heavy,
                              length=length) == want
    assert layout.resolve("auto", "pairs", backend="cpu", unit_flops=heavy, shards=2,
                          length=64) == 1
    assert layout.resolve("auto", "pairs", backend="cpu", unit_flops=light, length=1) is None
    assert layout.resolve("auto", "pairs", backend="gpu", unit_flops=heavy, length=1) is None
    assert layout.resolve(4, "pairs", backend="cpu", unit_flops=heavy, length=1) == 4
    # light chunks on CPU gather about CPU_CHUNK_BYTES of records; no bound on accelerators
    assert layout.chunk_rows(4 * 784, backend="cpu") == layout.CPU_CHUNK_BYTES // (4 * 784)
    assert layout.chunk_rows(10 ** 9, backend="cpu") == 1
    assert layout.chunk_rows(4 * 784, backend="tpu") is None
    for backend in ("gpu", "tpu"):
        assert layout.resolve("auto", "cohort", backend=backend) is None
    assert layout.resolve(None, "cohort") is None and layout.resolve(4, "cohort") == 4
    assert layout.resolve("auto", "nodes", backend="cpu") is None  # gossip nodes: full vmap
    with pytest.raises(validate.JaxflValueError):
        layout.resolve("auto", "silos")
