"""experiments.bench.proxies: the committed counts are what the code counts (at the small,
synthetic size, recomputed here), and the accelerator layout computed on a CPU gives the CPU
layout's round."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from experiments.bench import proxies

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "docs" / "scale" / "proxies_cpu_2026-11-28.json"
# float32: the two layouts sum the same products in another order (patches x kernel against
# the direct convolution, chunks of pairs against one vmap), so they agree to a few ulps of
# float32 (eps = 1.2e-7; measured differences <= 1.2e-7 on parameters of magnitude <= 0.6);
# these are tests/_tolerance.py's float32 values, ~10x that.
RTOL, ATOL = 1e-5, 1e-6
# Off the CPU, both layouts run there: cuDNN picks its own convolution algorithms and summation
# orders, measured on an H200 (2026-11-28) as 4.7e-5 relative on one of 500 parameters.
if jax.default_backend() != "cpu":
    RTOL, ATOL = 1e-4, 1e-5


def _committed(row: str, layout: str) -> dict:
    rows = json.loads(COMMITTED.read_text())["rows"]
    return next(r for r in rows if r["row"] == row and r["size"] == "small"
                and r["layout"] == layout)


@pytest.mark.parametrize("layout", proxies.layouts_of("uldp_avg"))
def test_committed_uldp_padding_is_what_the_layout_builds(layout):
    arrays, meta = proxies.small_arrays("uldp_avg")
    merged, max_rows = proxies.VARIANTS.get(layout, (True, "auto"))
    extra = proxies._uldp(arrays, meta, proxies.LAYOUTS[proxies._base(layout)][0],
                          merged=merged, max_rows=max_rows)[3]
    want = _committed("uldp_avg_100", layout)
    for key in ("records_real", "records_padded", "pairs_real", "pairs_padded", "buckets"):
        assert extra[key] == want[key], (key, extra[key], want[key])


def test_committed_program_counts_are_what_the_code_counts():
    info = json.loads(COMMITTED.read_text())["info"]
    if (jax.__version__, jax.default_backend()) != (info["jax"], info["backend"]):
        # XLA's passes change between versions (on jax 0.11.2 the same program counts 6.6e6
        # FLOPs, 1.09e7 on 0.10.2): the committed counts are those of CI's pinned jax
        pytest.skip(f"the committed counts are of jax {info['jax']} on {info['backend']}; "
                    f"this is jax {jax.__version__} on {jax.default_backend()}")
    arrays, meta = proxies.small_arrays("dp_fedavg")
    meta["arch"] = "logreg"
    got = proxies.measure_one("dp_fedavg", arrays, meta, "accelerator")
    want = _committed("dp_fedavg_logreg", "accelerator")
    for key in ("flops", "dot_flops", "bytes", "kernels", "fusions", "records_real"):
        assert got[key] == want[key], (key, got[key], want[key])


def test_accelerator_layout_on_cpu_equals_the_cpu_layout():
    rng = np.random.default_rng(1)
    n, users, silos = 24, 4, 2
    arrays = dict(x=rng.normal(size=(n, 28, 28, 1)).astype(np.float32),
                  y=rng.integers(0, 10, n).astype(np.int32),
                  silo=rng.integers(0, silos, n).astype(np.int32),
                  user=rng.integers(0, users, n).astype(np.int32))
    meta = dict(num_users=users, num_silos=silos, max_records=None, local_epochs=1)
    out, buckets = {}, {}
    for layout in ("accelerator", "cpu"):
        with proxies.conv_impl(proxies.LAYOUTS[layout][1]):
            fn, args, extra = proxies.build("uldp_avg", arrays, meta, layout)
            out[layout] = jax.tree.leaves(fn(*args)[0])
        buckets[layout] = extra["buckets"]
    # the two layouts differ: one vmap of every pair against chunks of them
    assert [b[2] for b in buckets["accelerator"]] != [b[2] for b in buckets["cpu"]]
    for a, c in zip(out["accelerator"], out["cpu"], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=RTOL, atol=ATOL)


# The DP-FedAvg sweep programs on the CPU (the accelerator's layout, tiny shapes): no scatter.
# Under --xla_gpu_deterministic_ops (jaxfl's default) XLA:GPU replaces each scatter by a sort and
# a prefix scan; the one scatter-add of the cross-entropy's gradient (take_along_axis) made the
# full-size logreg round 1.8x slower on an H200 (docs/scale.md, "Scatter-free rounds").
# The MLP (logreg's layers and loss, one hidden layer more) with one point: both tests on one
# compilation of the two programs.
@pytest.fixture(scope="module")
def sweep_programs():
    return proxies.sweep_programs("mlp", clients=6, k=1, per_client=10)


def test_dp_fedavg_round_and_sweep_block_have_no_scatter(sweep_programs):
    for name, p in sweep_programs.items():
        census = p["census"]
        assert census["scatter"] == [] and census["select-and-scatter"] == [], (name, census)
        # the one sort left: each client's shuffle (local.py's argsort), no determinism cost
        assert len(census["sort"]) == 1 and "argsort" in census["sort"][0], (name, census)


def test_one_point_sweep_block_lays_out_its_products_as_the_round(sweep_programs):
    """A block of one point computes its matrix products in the sequential round's layouts (a
    single-lane vmap made XLA compute the MLP's weight gradients transposed, f32[6,200,784]
    where the round has f32[6,784,200], and transpose them back)."""
    assert sweep_programs["vmapped"]["dots"] == sweep_programs["sequential"]["dots"]
    assert len(sweep_programs["sequential"]["dots"]) == 8  # forward, input and weight gradients
