"""The roofline columns of bench_torch and bench_sweep, the first-compile / cached-compile split
of bench_torch, and the jaxfl side's own count of its program."""

import pytest

from experiments.bench import bench_sweep, bench_torch
from jaxfl import roofline

ROW = bench_torch.Row("r", "dp_fedavg", "A row", "round", {}, 1, "clients", ("loop",))
PEAK = dict(name="Toy GPU", fp32_flops=1e12, tf32_flops=None, mem_bytes_s=1e11,
            launch_s=1e-5)
COST = dict(flops=2e9, dot_flops=1e9, bytes=4e9, kernels=100.0, unknown_trip_counts=0,
            xla_flops=1e9, xla_bytes=1e9, counted_on="cpu")


def _side(seconds, compile_s, **kw):
    return {"seconds": seconds, "loss": 2.0, "loss_se": 0.01, "compile_s": compile_s,
            "size": 10, "jax": "0.x", "jaxlib": "0.x", "backend": "gpu",
            "device_kind": "Toy", **kw}


def test_bench_torch_row_gets_cold_and_cached_compile_and_its_roofline():
    outs = [("jaxfl", _side(0.1, 30.0, cost=COST)), ("torch", _side(0.2, 0.0)),
            ("jaxfl", _side(0.1, 1.5, cost=COST)), ("torch", _side(0.2, 0.0)),
            ("jaxfl", _side(0.1, 2.5, cost=COST)), ("torch", _side(0.2, 0.0))]
    r = bench_torch.summarize(ROW, outs)
    assert r["jaxfl_compile_cold_s"] == 30.0 and r["jaxfl_compile_cached_s"] == 2.0
    r["roofline"] = bench_torch.roofline_of(r, PEAK)
    # floors: compute 2e9 / 1e12 = 2 ms, bandwidth 4e9 / 1e11 = 40 ms, launch 1 ms; 0.1 s
    assert r["roofline"]["bound"] == "bandwidth"
    assert r["roofline"]["of_limit"] == pytest.approx(0.4)
    info = {"machine": "m", "processor": "p", "cpus": 2, "python": "3", "threads": 2,
            "xla_flags": "", "pairs": 3, "quick": True, "date": "d", "accelerator": "cuda",
            "peaks": {k: v for k, v in PEAK.items()}}
    md = bench_torch.to_markdown([r], info)
    line = next(s for s in md.splitlines() if s.startswith("| A row"))
    assert "| 30 / 2 |" in line
    assert "| 2 / 4 / 100 |" in line and "bandwidth-bound, 40% of limit" in line
    assert "20 (2%), 40 (40%)" in line  # GFLOP/s (of float32 peak), GB/s (of bandwidth)
    head = next(s for s in md.splitlines() if s.startswith("| workload"))
    assert head.count("|") == line.count("|") == 14
    assert "Toy GPU" in md


def test_bench_sweep_rows_with_a_count_get_the_columns():
    row = {"workload": "w", "title": "A workload", "k": 8, "vmap_round_s": 0.5,
           "seq_round_s": 0.25, "vmap_points_rounds_per_s": 16.0,
           "seq_points_rounds_per_s": 4.0, "speedup": 4.0, "vmap_compile_s": 2.0,
           "seq_compile_s": 1.5, "seq_compile_total_s": 12.0, "lane0_diff": 1e-8,
           "vmap_cost": dict(COST)}
    bench_sweep.with_roofline([row], PEAK)
    # floors: compute 2 ms, bandwidth 40 ms, launch 1 ms; 0.5 s a call
    assert row["roofline"]["bound"] == "bandwidth"
    assert row["roofline"]["of_limit"] == pytest.approx(0.08)
    meta = {"machine": "m", "processor": "p", "cpus": 2, "affinity": 2, "python": "3",
            "jax": "0.x", "jaxlib": "0.x", "backend": "gpu", "device": "gpu",
            "device_count": 1, "xla_flags": "", "quick": True, "date": "today", "argv": [],
            "peaks": PEAK}
    md = bench_sweep.to_markdown([row], meta)
    line = next(s for s in md.splitlines() if s.startswith("| A workload"))
    assert "bandwidth-bound, 8% of limit" in line and "| 2 / 4 / 100 |" in line
    head = next(s for s in md.splitlines() if s.startswith("| workload"))
    assert head.count("|") == line.count("|") == 12
    # A device count without FLOPs (an accelerator's HLO) shows its kernels only.
    gpu = dict(row, vmap_cost=dict(COST, flops=None, dot_flops=None, bytes=None))
    gpu.pop("roofline")
    bench_sweep.with_roofline([gpu], PEAK)
    assert "roofline" not in gpu
    assert "- / - / 100" in bench_sweep.to_markdown([gpu], meta)


def test_jaxfl_side_count_is_the_program_cost():
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda a, b: jnp.tanh(a @ b))
    args = (jnp.ones((16, 32)), jnp.ones((32, 8)))
    compiled = f.lower(*args).compile()
    got = bench_torch.program_cost(f, args, compiled)
    assert got["dot_flops"] == 2 * 16 * 32 * 8
    if jax.default_backend() == "cpu":
        assert got["counted_on"] == "cpu"
        assert got["flops"] == roofline.program_cost(compiled).flops
    else:  # off the CPU, FLOPs and bytes come from a CPU lowering of the same function
        assert got["counted_on"].startswith("cpu lowering")


def test_off_the_cpu_the_count_lowers_the_same_function_for_the_cpu(monkeypatch):
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda a, b: jnp.tanh(a @ b))
    args = (jnp.ones((16, 32)), jnp.ones((32, 8)))
    compiled = f.lower(*args).compile()
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")  # as on a GPU machine
    got = roofline.count(f, args, compiled)
    assert got["counted_on"].startswith("cpu lowering")
    assert got["dot_flops"] == 2 * 16 * 32 * 8
    assert got["kernels"] == roofline.program_cost(compiled).kernels
    assert "error" in roofline.count(f, (jnp.ones((3, 5)),), compiled)  # recorded, not raised
