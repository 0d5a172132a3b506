"""The memory planner (:mod:`jaxfl.planner`) on CPU, with fake budgets and injected
out-of-memory errors: it narrows the sweep's points, then a round's unit axes, until the
compiled program fits; it survives RESOURCE_EXHAUSTED at compile and at run without losing
finished rounds; it refuses a program that cannot fit before any work.

Budgets come from the compiled programs themselves (a run with a huge budget records each
program's predicted peak in ``layout.json``; the test then allows one byte less), so the tests
hold whatever XLA's buffer sizes are. Where the narrowed program adds in another order than the
reference (a vmap of 2 points instead of 4, clients in chunks instead of one vmap, evaluation
batches of 20 instead of 40), results agree to float32 rounding: ``rtol=2e-5, atol=2e-6``
(:func:`tests._sweep_toy.float_close`); everything else is exact.
"""

import json

import jax
import numpy as np
import pytest

from jaxfl import checkpoint, layout, metrics, planner, sweep, training, vmapped_runs
from jaxfl.algorithms import dp_fedavg
from tests import _fake_budget, _toy
from tests import _sweep_toy as toy

OOM = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 37.40GiB"
POINTS = [dict(seed=s) for s in range(4)]


@pytest.fixture
def fake_budget(monkeypatch):
    """Only the fake budget counts (on a GPU too), and ``"auto"`` clients are the full vmap,
    as on accelerators (CPU's measured default is chunks of one client)."""
    _fake_budget.only_the_fake_budget(monkeypatch)
    monkeypatch.setitem(layout.CPU_DEFAULTS, "cohort", None)


def _plans(workdir):
    return json.loads((workdir / planner.PLANS_FILE).read_text())["programs"]


def _metrics(workdir, p):
    return metrics.read_jsonl(workdir / "points" / p.id / "metrics.jsonl")


def _points(rounds=2):
    return sweep.expand(toy.ToyConfig(rounds=rounds, checkpoint_every=4), POINTS)


def test_is_out_of_memory():
    assert planner.is_out_of_memory(jax.errors.JaxRuntimeError(OOM))
    assert planner.is_out_of_memory(jax.errors.JaxRuntimeError("INTERNAL: Out of memory"))
    assert not planner.is_out_of_memory(jax.errors.JaxRuntimeError("INVALID_ARGUMENT: x"))
    assert not planner.is_out_of_memory(MemoryError(OOM))  # not XLA's


def test_peak_bytes_counts_arguments_outputs_and_temporaries():
    x = jax.ShapeDtypeStruct((256, 64), np.float32)
    exe = jax.jit(lambda a: (a @ a.T).sum(0)).lower(x).compile()
    assert planner.peak_bytes(exe) >= 256 * 64 * 4 + 256 * 4


def test_sweep_points_are_halved_until_the_compiled_block_fits(fake_budget, tmp_path,
                                                               monkeypatch):
    points = _points()
    # The estimate from 2 and 4 points says every point fits (as on the H200, where the
    # autotuner's scratch was in no estimate): only the compiled program's peak can tell.
    monkeypatch.setattr(vmapped_runs, "point_memory", lambda spec: (0, 1))
    monkeypatch.setattr(layout, "unit_memory", lambda *a: (0, 1))  # clients: the full vmap
    big = sweep.run_sweep(points, toy.build, tmp_path / "ref", progress=False,
                          memory_budget=10 ** 12)  # the reference: one block of 4 points
    (four,) = {p["peak_bytes"] for p in _plans(tmp_path / "ref")}
    assert big.groups == [[0, 1, 2, 3]] and four > 0
    res = sweep.run_sweep(points, toy.build, tmp_path / "fit", progress=False,
                          memory_budget=four - 1)
    assert res.groups == [[0, 1], [2, 3]]
    plans = _plans(tmp_path / "fit")
    assert plans[0]["sweep_points"] == [0, 1, 2, 3] and plans[0]["peak_bytes"] == four
    assert "predicted peak" in plans[0]["narrowed"][0]
    assert [p["sweep_points"] for p in plans[1:]] == [[0, 1], [2, 3]]
    assert all(p["peak_bytes"] < four and p["budget_bytes"] == four - 1 for p in plans[1:])
    for p in points:
        toy.float_close(_metrics(tmp_path / "fit", p), _metrics(tmp_path / "ref", p))
    # the plans are run metadata: not a column of the released table
    assert not {"peak_bytes", "budget_bytes", "unit_chunk"} & set(
        sweep.read_table(tmp_path / "fit")[0])


def _round_run(workdir, **kw):
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=8, dim=5, classes=3, seed=11)
    alg = dp_fedavg.dp_fedavg(model, num_clients=8, local_steps=2, batch_size=4,
                              client_lr=0.3, clip_norm=0.5, noise_multiplier=1.0,
                              sampling_rate=1.0)
    return training.run(alg, data, params=model.init(jax.random.key(0)), rounds=2, seed=3,
                        workdir=workdir, progress=False, **kw)


def test_a_round_that_does_not_fit_runs_its_clients_in_chunks(fake_budget, tmp_path,
                                                              monkeypatch):
    # The per-client estimate says the full vmap fits; the compiled round says otherwise.
    monkeypatch.setattr(layout, "unit_memory", lambda *a: (0, 1))
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    ref = _round_run(tmp_path / "ref")  # the reference: all 8 clients in one vmap
    (plan,) = _plans(tmp_path / "ref")
    assert plan["axes"] == [{"kind": "cohort", "units": 8, "chunk": None}]
    full = plan["peak_bytes"]
    monkeypatch.setenv(layout.BUDGET_ENV, str(full - 1))
    res = _round_run(tmp_path / "fit")
    (plan,) = _plans(tmp_path / "fit")
    assert plan["unit_chunk"] in (1, 2, 4) and plan["peak_bytes"] < full
    assert plan["axes"] == [{"kind": "cohort", "units": 8, "chunk": plan["unit_chunk"]}]
    assert "predicted peak" in plan["narrowed"][0]
    toy.float_close(res.history, ref.history)


def test_out_of_memory_at_compile_halves_the_points(fake_budget, tmp_path, monkeypatch):
    points = _points()
    ref = sweep.run_sweep(points, toy.build, tmp_path / "ref", progress=False)
    compile_ = jax.stages.Lowered.compile
    failed = []

    def compile_or_fail(self, *a, **k):  # the first program compiled: the 4-point block
        if not failed:
            failed.append(1)
            raise jax.errors.JaxRuntimeError(OOM)
        return compile_(self, *a, **k)

    monkeypatch.setattr(jax.stages.Lowered, "compile", compile_or_fail)
    res = sweep.run_sweep(points, toy.build, tmp_path / "oom", progress=False)
    assert failed and res.groups == [[0, 1], [2, 3]]
    assert len(res.finished) == 4
    plans = _plans(tmp_path / "oom")
    assert "RESOURCE_EXHAUSTED at compile" in plans[0]["narrowed"][0]
    assert plans[0]["sweep_points"] == [0, 1, 2, 3]
    for p in points:
        toy.float_close(_metrics(tmp_path / "oom", p), _metrics(tmp_path / "ref", p))
    assert ref.groups == [[0, 1, 2, 3]]


def test_out_of_memory_at_run_keeps_the_finished_rounds(fake_budget, tmp_path, monkeypatch):
    points = _points(rounds=3)
    ref = sweep.run_sweep(points, toy.build, tmp_path / "ref", progress=False)
    call = jax.stages.Compiled.__call__
    calls = []

    def call_or_fail(self, *a, **k):  # the second block (round 2) runs out of memory
        if len(a) != 6:  # not a block (states, data, inputs, keys, hparams, rounds): an eval
            return call(self, *a, **k)
        calls.append(1)
        if len(calls) == 2:
            raise jax.errors.JaxRuntimeError(OOM)
        return call(self, *a, **k)

    monkeypatch.setattr(jax.stages.Compiled, "__call__", call_or_fail)
    res = sweep.run_sweep(points, toy.build, tmp_path / "oom", progress=False)
    assert res.groups == [[0, 1], [2, 3]] and len(res.finished) == 4
    # round 1 was checkpointed when round 2 failed: each half runs rounds 2 and 3 only
    # (1 + 1 failed + 2 halves x 2 rounds; restarting from round 0 would make 8)
    assert len(calls) == 6
    plans = _plans(tmp_path / "oom")
    assert "RESOURCE_EXHAUSTED at run" in plans[0]["narrowed"][-1]
    for p in points:
        got = _metrics(tmp_path / "oom", p)
        assert [r["round"] for r in got] == [1, 2, 3]
        toy.float_close(got, _metrics(tmp_path / "ref", p))
    assert ref.groups == [[0, 1, 2, 3]]


def test_out_of_memory_in_a_round_narrows_its_clients_and_retries(fake_budget, tmp_path,
                                                                  monkeypatch):
    ref = _round_run(tmp_path / "ref")
    call = jax.stages.Compiled.__call__
    calls = []

    def call_or_fail(self, *a, **k):  # round 2 runs out of memory once
        calls.append(1)
        if len(calls) == 2:
            raise jax.errors.JaxRuntimeError(OOM)
        return call(self, *a, **k)

    monkeypatch.setattr(jax.stages.Compiled, "__call__", call_or_fail)
    res = _round_run(tmp_path / "oom")
    assert len(calls) == 3 and res.summary["rounds_completed"] == 2
    plans = _plans(tmp_path / "oom")
    assert plans[-1]["unit_chunk"] == 4  # half of the 8 clients of the full vmap
    assert "RESOURCE_EXHAUSTED at run" in plans[-1]["narrowed"][0]
    toy.float_close(res.history, ref.history)


def test_a_round_that_cannot_fit_is_refused_before_any_work(tmp_path, monkeypatch):
    """CPU's layout (one client per chunk) leaves nothing to narrow: a budget that holds a
    client's step but not the round (its data, its state) is refused when the round is
    compiled, before round 1 runs (without the planner the round ran, over budget)."""
    _fake_budget.only_the_fake_budget(monkeypatch)
    monkeypatch.setitem(layout.CPU_DEFAULTS, "cohort", 1)
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    _round_run(tmp_path / "big")
    (plan,) = _plans(tmp_path / "big")
    fixed, per = next(iter(layout._MEMORY.values()))
    assert fixed + per < plan["peak_bytes"]  # one client's step fits below the round's peak
    monkeypatch.setenv(layout.BUDGET_ENV, str(plan["peak_bytes"] - 1))
    with pytest.raises(layout.MemoryBudgetError,
                       match=r"training round .* needs \d+ bytes .* budget of \d+ bytes"):
        _round_run(tmp_path / "small")
    assert not (tmp_path / "small" / "metrics.jsonl").exists() or \
        not metrics.read_jsonl(tmp_path / "small" / "metrics.jsonl")
    # (the checkpoint directory is created empty when its writability is checked, before work)
    assert checkpoint.list_checkpoints(tmp_path / "small" / "checkpoints") == []


def test_a_sweep_point_that_cannot_fit_is_refused_before_any_work(fake_budget, tmp_path,
                                                                 monkeypatch):
    points = _points()
    spec = toy.build(points[0].config)
    fixed, per = vmapped_runs.point_memory(spec)
    monkeypatch.setattr(vmapped_runs, "point_memory", lambda s: (fixed, per))  # measured once
    with pytest.raises(layout.MemoryBudgetError,
                       match=rf"sweep point needs {per} bytes .* budget of {fixed + per - 1}"):
        sweep.run_sweep(points, toy.build, tmp_path / "small", progress=False,
                        memory_budget=fixed + per - 1)
    assert not (tmp_path / "small" / "points").exists()


def test_evaluation_batches_are_halved_until_they_fit(fake_budget, monkeypatch):
    model = _toy.logreg(5, 3)
    test = _toy.blobs(num_clients=1, dim=5, classes=3, seed=11, sizes=[40])
    params = model.init(jax.random.key(0))
    ref = training.make_classifier_eval(model, test.x[0], test.y[0], batch_size=40)(params)
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    big = training.make_classifier_eval(model, test.x[0], test.y[0], batch_size=40)
    assert big(params).keys() == ref.keys()
    (whole,) = [p.peak_bytes for p in big.plans]
    monkeypatch.setenv(layout.BUDGET_ENV, str(whole - 1))
    fit = training.make_classifier_eval(model, test.x[0], test.y[0], batch_size=40)
    toy.float_close({k: float(v) for k, v in fit(params).items()},
                    {k: float(v) for k, v in ref.items()})
    assert [p.axes[0][2] for p in fit.plans][:2] == [40, 20]
    assert fit.plans[-1].peak_bytes < whole
    monkeypatch.setenv(layout.BUDGET_ENV, "64")
    with pytest.raises(layout.MemoryBudgetError, match=r"Evaluating 40 examples in batches of 1"):
        training.make_classifier_eval(model, test.x[0], test.y[0], batch_size=40)(params)


def test_the_sweep_benchmark_runs_what_the_planner_fits(fake_budget, monkeypatch):
    """``bench_sweep`` measures the program run_sweep would run: K = 4 points that do not fit
    one compiled block run as two programs of 2 (lane 0 still equals the sequential run)."""
    from experiments.bench import bench_sweep
    from tests.bench_sweep_test import _tiny

    w = bench_sweep.Workload("tiny", lambda q: "tiny", _tiny)
    monkeypatch.setattr(vmapped_runs, "point_memory", lambda spec: (0, 1))
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    (row,) = bench_sweep.measure(w, quick=True, ks=(4,), repeats=1, min_time=0.01)
    assert row["points_per_program"] == 4 and row["narrowed"] == []
    assert row["deterministic"] is True or row["deterministic"] is False
    four = row["predicted_peak_bytes"]
    monkeypatch.setenv(layout.BUDGET_ENV, str(four - 1))
    (row,) = bench_sweep.measure(w, quick=True, ks=(4,), repeats=1, min_time=0.01)
    assert row["points_per_program"] == 2 and row["predicted_peak_bytes"] < four
    assert "predicted peak" in row["narrowed"][0] and row["budget_bytes"] == four - 1
    assert row["lane0_diff"] < 1e-5
    assert row["vmap_points_rounds_per_s"] == pytest.approx(4 / row["vmap_round_s"])
