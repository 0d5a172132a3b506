"""experiments.bench.timing: the benchmarks' one timer and machine description."""

import time

import jax.numpy as jnp
import pytest

from experiments.bench import timing


def test_warmup_then_repeats_with_each_output():
    seen = []
    t = timing.timed(lambda i: seen.append(i) or i * 10, repeats=3)
    assert seen == [0, 1, 2, 3]  # call 0 is the warm-up, untimed for throughput
    assert (t.calls, t.first_out, t.out, len(t.times_s)) == (3, 0, 30, 3)
    assert t.first_s is not None and t.per_call_s == pytest.approx(t.total_s / 3)


def test_min_time_and_max_calls():
    t = timing.timed(lambda i: time.sleep(0.01), min_time=0.05, warmup=False)
    assert t.first_s is None and t.calls >= 4 and t.total_s >= 0.05
    capped = timing.timed(lambda i: time.sleep(0.01), min_time=10.0, max_calls=3)
    assert capped.calls == 3 and capped.total_s < 10.0


def test_timed_steps_carries_the_state_and_waits_once():
    t = timing.timed_steps(lambda s, i: s + i, jnp.zeros(()), repeats=4, sync_each=False)
    assert float(t.out) == 0 + 1 + 2 + 3 + 4 and t.times_s == () and t.calls == 4


@pytest.mark.parametrize("kw", [{"repeats": 0}, {"min_time": -1.0},
                                {"repeats": 3, "max_calls": 2}])
def test_bad_arguments_fail_before_any_call(kw):
    calls = []
    with pytest.raises(ValueError, match="repeats"):
        timing.timed(calls.append, **kw)
    assert calls == []


def test_machine_and_its_line():
    m = timing.machine()
    assert {"processor", "cpus", "python", "jax", "backend", "device", "device_count",
            "load_avg_1m"} <= set(m)
    line = timing.describe(m)
    assert f"{m['cpus']} cores" in line and f"jax {m['jax']}" in line
    assert f"{m['device_count']} device(s)" in line


def test_alternate_takes_the_measurements_in_turn():
    order = []
    got = timing.alternate({"a": lambda: order.append("a") or len(order),
                            "b": lambda: order.append("b") or -len(order)}, repeats=2)
    assert order == ["a", "b", "a", "b"] and got == {"a": [1, 3], "b": [-2, -4]}


def test_table_and_run_files(tmp_path):
    md = timing.table([{"x": 1.23456, "y": "s"}, {"x": 2, "z": None}])
    assert md == "| x | y | z |\n|---|---|---|\n| 1.235 | s |  |\n| 2 |  | None |\n"
    assert timing.table([]) == "(no rows)\n"
    timing.write_run(tmp_path / "new", "run", {"k": 1}, [{"x": 1}], md)
    assert (tmp_path / "new" / "run.md").read_text() == md
    import json
    assert json.loads((tmp_path / "new" / "run.json").read_text()) == {"info": {"k": 1},
                                                                       "rows": [{"x": 1}]}


def test_random_clients_are_equal_sized_seeded_shards():
    import numpy as np

    a = timing.random_clients(3, 4, (2,), classes=5, seed=1)
    rng = np.random.default_rng(1)  # the records in client order, then the labels
    x, y = rng.normal(size=(12, 2)).astype(np.float32), rng.integers(0, 5, 12)
    assert np.array_equal(np.asarray(a.x), x.reshape(3, 4, 2))
    assert np.array_equal(np.asarray(a.y), y.reshape(3, 4)) and np.asarray(a.mask).all()
    assert not np.array_equal(np.asarray(timing.random_clients(3, 4, (2,), seed=2).x),
                              np.asarray(a.x))


def test_make_bench_runs_every_benchmark_but_the_torch_one():
    from experiments.bench import __main__ as driver

    names = driver.benchmarks()
    assert "bench_torch" not in names and {"bench_scale", "bench_sweep"} <= set(names)
    assert driver.benchmarks("sweep,gossip") == ["bench_gossip", "bench_sweep"]
    with pytest.raises(SystemExit, match="Unknown benchmarks.*bench_torch"):
        driver.benchmarks("torch")



def test_engine_bench_vmap_column_is_the_full_vmap_not_the_auto_layout():
    """The "vmap" column builds its rounds with ``client_batch=None`` (the whole cohort
    vmapped), and it resolves to no chunking on CPU too. Fails on the version that passed no
    layout: the builders default to ``"auto"`` (chunks of 1 on CPU), so that column silently
    timed ``client_batch=1`` a second time."""
    from experiments.bench import bench_engine
    from jaxfl import layout

    assert bench_engine.LAYOUTS["vmap"] == {"client_batch": None}
    resolved = {k: layout.resolve(v["client_batch"], "cohort", backend="cpu")
                for k, v in bench_engine.LAYOUTS.items()}
    assert resolved == {"vmap": None, "batch1": 1, "batch10": 10}


@pytest.mark.parametrize("stem", ["pair_chunks", "uldp_profile"])
def test_pair_chunk_and_profile_tables_in_the_doc_are_renderings_of_the_committed_runs(stem):
    """docs/scale.md's pair-chunk and ULDP profile tables must be what ``--render`` prints
    from the committed run files (fails on a hand-edited cell or a run file the doc does not
    show)."""
    import importlib
    import json
    from pathlib import Path

    module = importlib.import_module(f"experiments.bench.{stem}")
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "scale.md").read_text()
    runs = sorted((root / "docs" / "scale").glob(f"{stem}_*.json"))
    assert runs
    for f in runs:
        saved = json.loads(f.read_text())
        table = [line for line in module.to_markdown(saved["rows"], saved["info"])
                 .splitlines() if line.startswith("|")]
        assert "\n".join(table) in doc, f.name


def test_uldp_profile_table_sums_parts_and_divides_by_steps():
    """The profile table's round is the sum of its parts and a step's time is the part's
    seconds over the steps in its name (fails on a table that drops "rest" or divides by the
    pairs instead of the sequential steps)."""
    from experiments.bench import uldp_profile

    info = {"processor": "x", "cpus": 2, "python": "3", "jax": "0", "backend": "cpu",
            "device_count": 1, "users": 10, "quick": True, "date": "d", "load_avg_1m": 0,
            "load_after": 0, "reps": 1}
    torch_side = {"rest": 1.0, "40x2 / 40 / 4": 2.0}
    rows = [{"jaxfl": {"rest": 0.5, "40x2 / 8 / 10": 1.0}, "torch": torch_side},
            {"jaxfl": {"rest": 0.5, "40x2 / 8 / 10": 3.0}, "torch": torch_side}]
    md = uldp_profile.to_markdown(rows, info)
    assert "| jaxfl | 40x2 / 8 / 10 | 2 | 200.00 | 80% |" in md
    assert "| jaxfl | **round (sum)** | **2.5** | - | 100% |" in md
    assert "| torch | 40x2 / 40 / 4 | 2 | 500.00 | 67% |" in md
    assert "| torch | **round (sum)** | **3** | - | 100% |" in md
