"""The sweep-throughput benchmark (experiments/bench/bench_sweep.py): its points, a tiny real
measurement (the vmapped sweep's lane 0 is the sequential run), the table, and that the tables
in docs/scale.md are renderings of the committed run files."""

import json
from pathlib import Path

import numpy as np
import pytest

from experiments.bench import bench_sweep

ROOT = Path(__file__).resolve().parents[1]


def test_points_vary_the_hyperparameters_then_the_seeds():
    base = {"client_lr": 0.1, "clip_norm": 1.0, "noise_multiplier": 1.0}
    eight = bench_sweep.points(8, base)
    assert len({tuple(sorted(p.items())) for p in eight}) == 8
    assert {p["seed"] for p in eight} == {0}
    assert {p["clip_norm"] for p in eight} == {1.0, 0.5}
    assert {p["client_lr"] for p in eight} == {0.1, 0.05}
    many = bench_sweep.points(64, base)
    assert len({tuple(sorted(p.items())) for p in many}) == 64
    assert {p["seed"] for p in many} == set(range(8))
    # two hyperparameters (gossip): 4 combinations x 2 seeds
    two = bench_sweep.points(8, {"learning_rate": 1.0, "noise_multiplier": 1.0})
    assert {p["seed"] for p in two} == {0, 1} and len({tuple(sorted(p.items()))
                                                       for p in two}) == 8
    assert bench_sweep.points(1, base) == [{**base, "seed": 0}]


def _tiny(quick):
    import jax

    from jaxfl.algorithms import dp_fedavg
    from tests import _toy

    del quick
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=6, dim=5, classes=3, seed=1)
    base = {"client_lr": 0.3, "clip_norm": 0.5, "noise_multiplier": 1.0}

    def build(p):
        return dp_fedavg.dp_fedavg(model, num_clients=6, local_steps=2, batch_size=4,
                                   client_lr=p["client_lr"], clip_norm=p["clip_norm"],
                                   noise_multiplier=p["noise_multiplier"], sampling_rate=1.0)

    return build, data, lambda s: model.init(jax.random.key(s)), base


def test_measure_runs_the_same_computation_both_ways():
    w = bench_sweep.Workload("tiny", lambda q: "tiny", _tiny)
    (row,) = bench_sweep.measure(w, quick=True, ks=(3,), repeats=1, min_time=0.01)
    assert row["k"] == 3
    assert {"client_lr", "clip_norm", "noise_multiplier"} <= set(row["hparams"])
    # lane 0 of the vmapped sweep starts where the sequential run starts, with the same key
    assert row["lane0_diff"] < 1e-5
    assert row["vmap_points_rounds_per_s"] == pytest.approx(3 / row["vmap_round_s"])
    assert row["speedup"] == pytest.approx(row["vmap_points_rounds_per_s"] /
                                           row["seq_points_rounds_per_s"])
    assert row["seq_compile_total_s"] == pytest.approx(3 * row["seq_compile_s"])


def _row(**kw):
    return {"workload": "w", "title": "A workload", "k": 8, "vmap_round_s": 0.5,
            "seq_round_s": 0.25, "vmap_points_rounds_per_s": 16.0,
            "seq_points_rounds_per_s": 4.0, "speedup": 4.0, "vmap_compile_s": 2.0,
            "seq_compile_s": 1.5, "seq_compile_total_s": 12.0, "lane0_diff": 1e-8,
            "load_before": 1.0, "load_after": 2.5, **kw}


def test_table_has_one_line_per_row():
    meta = {"machine": "m", "processor": "p", "cpus": 2, "affinity": 2, "python": "3.11",
            "jax": "0.x", "jaxlib": "0.x", "backend": "cpu", "device": "cpu",
            "device_count": 1, "xla_flags": "", "quick": True, "date": "today",
            "argv": ["--quick"]}
    md = bench_sweep.to_markdown([_row(), _row(k=64, speedup=0.5)], meta)
    lines = [line for line in md.splitlines() if line.startswith("| A workload")]
    assert len(lines) == 2
    assert "**4.00x**" in lines[0] and "2.0 / 12.0" in lines[0] and "1.00 -> 2.50" in lines[0]
    assert "**0.50x**" in lines[1]
    assert "`python -m experiments.bench.bench_sweep --quick`" in md


def test_doc_tables_are_renderings_of_the_committed_runs():
    doc = (ROOT / "docs" / "scale.md").read_text()
    runs = sorted((ROOT / "docs" / "scale").glob("bench_sweep_*.json"))
    assert runs, "no committed bench_sweep run under docs/scale/"
    for f in runs:
        saved = json.loads(f.read_text())
        assert saved["info"]["date"] and saved["rows"]
        assert all(np.isfinite(r["load_before"]) for r in saved["rows"])
        table = [line for line in bench_sweep.to_markdown(saved["rows"], saved["info"])
                 .splitlines() if line.startswith("|")]
        assert "\n".join(table) in doc, f"docs/scale.md lacks the table of {f.name}"
