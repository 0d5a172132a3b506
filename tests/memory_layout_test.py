"""Memory-aware layouts (:func:`jaxfl.layout.fit`): under a device memory budget the engine
sizes the client / pair / sweep-point chunks from the per-unit memory of the compiled step.

On CPU XLA reports no device memory, so these tests set a fake budget with
``JAXFL_DEVICE_MEMORY_BUDGET`` and, for the cohort axis, give ``"auto"`` the accelerators'
full vmap (CPU's measured default is chunks of one client)."""


import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import _validate, layout
from jaxfl.algorithms import dp_fedavg, dp_ftrl, fedavg, uldp, uldp_data
from tests import _fake_budget, _tolerance, _toy

KW = dict(num_clients=7, local_steps=2, batch_size=3, client_lr=0.3, sampling_rate=0.6,
          clip_norm=0.05, noise_multiplier=1.0)


@pytest.fixture
def accelerator_policy(monkeypatch):
    """``"auto"`` on the cohort axis is the full vmap, as on accelerators, and the only budget
    is the fake one (on an accelerator too: the tests do not depend on its free memory)."""
    monkeypatch.setitem(layout.CPU_DEFAULTS, "cohort", None)
    _fake_budget.only_the_fake_budget(monkeypatch)


def _build(algorithm, model, client_batch):
    if algorithm == "dp_fedavg":
        return dp_fedavg.dp_fedavg(model, client_batch=client_batch, **KW)
    kw = {k: KW[k] for k in ("num_clients", "local_steps", "batch_size", "client_lr")}
    if algorithm == "fedavg":
        return fedavg.fedavg(model, sampling_rate=0.6, client_batch=client_batch, **kw)
    return dp_ftrl.dp_ftrl(model, clients_per_round=5, rounds=4, clip_norm=0.05,
                           noise_multiplier=1.0, bands=2, optimizer_steps=10,
                           client_batch=client_batch, **kw)


def _cohort_round(client_batch="auto", algorithm="dp_fedavg"):
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=7, seed=3, sizes=[4, 0, 6, 3, 9, 2, 5]).to_device()
    alg = _build(algorithm, model, client_batch)
    params = model.init(jax.random.key(0))
    cohort = alg.prepare(0, np.random.default_rng(1))
    chunks = []
    fit = layout.fit

    def spy(chunk, kind, units, memory):  # records the layout the round was traced with
        chunks.append(fit(chunk, kind, units, memory))
        return chunks[-1]

    layout.fit = spy
    try:
        state, diag = jax.jit(alg.apply)(alg.init(params), data, cohort, jax.random.key(2))
    finally:
        layout.fit = fit
    return state, diag, chunks, int(np.shape(cohort.indices)[0])


def _close(a, b):
    """Equal to float32 rounding (the chunked and full rounds differ in the order of float
    additions); on accelerators to the precision of their default matmul."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=_tolerance.rtol(float32=1e-5),
                                   atol=_tolerance.atol(float32=1e-6))


def test_device_budget_env(monkeypatch):
    monkeypatch.delenv(layout.BUDGET_ENV, raising=False)
    if jax.default_backend() == "cpu":
        assert layout.device_budget() is None  # XLA:CPU reports no device memory
    monkeypatch.setenv(layout.BUDGET_ENV, "12345")
    assert layout.device_budget() == 12345
    for bad in ("0", "-3", "lots", "inf"):
        monkeypatch.setenv(layout.BUDGET_ENV, bad)
        with pytest.raises(_validate.JaxflValueError, match=layout.BUDGET_ENV):
            layout.device_budget()


def test_fit_policy():
    def memory():
        return 1000, 100

    def at(budget, chunk, units=50, points=1):
        with pytest.MonkeyPatch.context() as m:
            m.setenv(layout.BUDGET_ENV, str(budget))
            with layout.sharing(points):
                return layout.fit(chunk, "cohort", units, memory)

    assert at(1000 + 50 * 100, None) is None  # everything fits: the full vmap
    assert at(1000 + 49 * 100, None) == 49  # one short: chunks
    assert at(1000 + 7 * 100 + 99, None) == 7
    assert at(1000 + 7 * 100, 3) == 3  # the policy's chunk is kept when it fits
    assert at(1000 + 7 * 100, 9) == 7
    assert at(2 * (1000 + 7 * 100), None, points=2) == 7  # two sweep points share the budget
    with pytest.raises(layout.MemoryBudgetError, match=r"50 clients needs 100 bytes.*1099"):
        at(1099, None)
    with pytest.raises(layout.MemoryBudgetError, match="2 sweep points share it"):
        at(2 * 1099, 1, points=2)


def test_no_budget_keeps_the_layout(accelerator_policy):
    calls = []
    assert layout.fit(None, "pairs", 10, lambda: calls.append(1)) is None
    assert layout.fit(4, "pairs", 10, lambda: calls.append(1)) == 4
    assert calls == []  # nothing measured (no compile) without a budget
    *_, chunks, _ = _cohort_round()
    assert chunks == [None]


def test_unit_memory_grows_with_the_model():
    def update(width):
        model = _toy.logreg(width, 3)
        params = model.init(jax.random.key(0))

        def fn(p, x, y):
            return jax.grad(lambda q: model.batch_loss(q, x, y, jnp.ones(x.shape[0], bool),
                                                       key=None))(p)

        x = jax.ShapeDtypeStruct((16, width), jnp.float32)
        y = jax.ShapeDtypeStruct((16,), jnp.int32)
        return layout.unit_memory(("logreg", width), fn, (params,), (x, y))

    small, large = update(8), update(512)
    assert small[1] > 0 and large[1] > small[1]
    # a unit holds at least its records and its gradient (512 x 3 weights)
    assert large[1] >= 4 * (16 * 512 + 512 * 3)
    assert update(512) is large  # measured once per key and shapes


def test_without_memory_analysis_the_estimate_is_arguments_and_outputs(monkeypatch):
    """Backends whose compiled programs report no memory analysis: a unit's records and
    outputs (here its gradient), without temporaries."""
    monkeypatch.setattr(jax.stages.Compiled, "memory_analysis", lambda self: None)
    model = _toy.logreg(64, 3)
    params = model.init(jax.random.key(0))

    def fn(p, x, y):
        return jax.grad(lambda q: model.batch_loss(q, x, y, jnp.ones(x.shape[0], bool),
                                                   key=None))(p)

    unit = (jax.ShapeDtypeStruct((16, 64), jnp.float32), jax.ShapeDtypeStruct((16,), jnp.int32))
    fixed, per = layout.unit_memory("no-analysis", fn, (params,), unit)
    grad = 4 * (64 * 3 + 3)
    assert per == 4 * (16 * 64 + 16) + grad and fixed == grad


def test_budget_too_small_for_the_full_vmap_gives_chunks(accelerator_policy, monkeypatch):
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    full, full_diag, chunks, units = _cohort_round()
    assert chunks == [None] and units > 2
    fixed, per = next(iter(layout._MEMORY.values()))
    assert per > 0
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed + units * per))
    *_, chunks, _ = _cohort_round()
    assert chunks == [None]  # exactly enough: still the full vmap
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed + 2 * per + per // 2))
    chunked, chunked_diag, chunks, _ = _cohort_round()
    assert chunks == [2]
    _close(full, chunked)
    _close(full_diag, chunked_diag)
    # an explicit layout is an override: kept whatever the budget
    *_, chunks, _ = _cohort_round(client_batch=None)
    assert chunks == []


@pytest.mark.parametrize("algorithm", ["fedavg", "dp_ftrl"])
def test_every_cohort_algorithm_fits_its_clients(accelerator_policy, monkeypatch, algorithm):
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    full, full_diag, chunks, units = _cohort_round(algorithm=algorithm)
    assert chunks == [None] and units > 2
    fixed, per = next(iter(layout._MEMORY.values()))
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed + 2 * per))
    chunked, chunked_diag, chunks, _ = _cohort_round(algorithm=algorithm)
    assert chunks == [2]
    _close(full, chunked)
    _close(full_diag, chunked_diag)


def test_impossible_budget_names_unit_and_bytes(accelerator_policy, monkeypatch):
    monkeypatch.setenv(layout.BUDGET_ENV, "64")
    with pytest.raises(layout.MemoryBudgetError,
                       match=r"One of the \d+ clients needs \d+ bytes .* budget of 64 bytes"):
        _cohort_round()


def _uldp_round():
    model = _toy.logreg(4, 3)
    alg = uldp.uldp_avg(model, num_silos=3, num_users=6, local_epochs=2, batch_size=4,
                        local_lr=0.1, global_lr=1.0, clip_norm=0.5, noise_multiplier=1.0)
    params = model.init(jax.random.key(0))

    def run(data):  # traced afresh every call (the layout is chosen when tracing)
        return jax.jit(lambda *a: alg.apply(*a))(alg.init(params), data, alg.prepare(0, None),
                                                 jax.random.key(1))

    return run


def _records():
    rng = np.random.default_rng(0)
    n = 60
    return uldp_data.UldpData(rng.normal(size=(n, 4)).astype(np.float32),
                              rng.integers(0, 3, n).astype(np.int32), rng.integers(0, 3, n),
                              rng.integers(0, 6, n), 3, 6).validate()


def test_pairs_in_memory_sized_chunks_equal_the_full_vmap(accelerator_policy, monkeypatch):
    data = uldp_data.pair_data(_records(), min_length=4, max_pairs_per_chunk=None,
                               shards=1).to_device()
    assert all(b.chunk == b.index.shape[0] for b in data.buckets)  # one chunk per bucket
    run = _uldp_round()  # one algorithm: its pair memory is measured once per bucket length
    monkeypatch.setattr(uldp, "_BOUNDS", {})
    full = run(data)
    assert layout._MEMORY == {} and uldp._BOUNDS == {}
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    _close(full, run(data))  # everything fits: the same program
    # ... known from one compiled program for the round (a bound at the longest bucket)
    assert layout._MEMORY == {} and len(uldp._BOUNDS) == 1
    fixed_b, per_b = next(iter(uldp._BOUNDS.values()))
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed_b + per_b - 1))  # no pair fits the bound:
    run(data)  # each bucket measured on its own (2 and 4 pairs)
    per_bucket = {k[2]: v for k, v in layout._MEMORY.items()}
    assert len(per_bucket) == len(data.buckets)
    fixed, per = max(per_bucket.values(), key=lambda v: v[1])
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed + 2 * per))
    seen = []
    fit = layout.fit
    monkeypatch.setattr(layout, "fit", lambda *a: seen.append(fit(*a)) or seen[-1])
    chunked = run(data)
    assert 2 in seen and seen != [b.chunk for b in data.buckets]
    _close(full, chunked)
    assert {k[2]: v for k, v in layout._MEMORY.items()} == per_bucket  # measured once
    monkeypatch.setenv(layout.BUDGET_ENV, str(per // 2))
    with pytest.raises(layout.MemoryBudgetError, match=r"pairs needs \d+ bytes"):
        run(data)


@pytest.mark.slow
def test_sweep_points_and_clients_fit_the_budget(accelerator_policy, tmp_path, monkeypatch):
    from jaxfl import metrics, sweep
    from tests import _sweep_toy as toy

    points = sweep.expand(toy.ToyConfig(rounds=2, checkpoint_every=2),
                          [dict(seed=s) for s in range(4)])
    ref = sweep.run_sweep(points, toy.build, tmp_path / "ref", progress=False)
    assert ref.groups == [[0, 1, 2, 3]] and layout._MEMORY == {}  # no budget: no measurement
    spec = toy.build(points[0].config)
    fixed, per = sweep.vmapped_runs.point_memory(spec)  # a point at one client per chunk
    assert per > 0
    seen = []
    fit = layout.fit
    monkeypatch.setattr(layout, "fit", lambda *a: seen.append(fit(*a)) or seen[-1])
    budget = fixed + 2 * per + per // 2
    res = sweep.run_sweep(points, toy.build, tmp_path / "fit", progress=False,
                          memory_budget=budget)
    from jaxfl import planner
    plans = json.loads((tmp_path / "fit" / planner.PLANS_FILE).read_text())["programs"]
    # the estimate batches two points per vmapped computation, in client chunks ...
    assert plans[0]["sweep_points"] == [0, 1] and plans[0]["points"] == 2
    units = int(np.shape(spec.algorithm.prepare(0, np.random.default_rng(0)).indices)[0])
    assert seen and any(c is not None and c < units for c in seen)
    assert all(a["chunk"] is not None and a["chunk"] < units for a in plans[0]["axes"])
    # ... and the planner runs only programs whose compiled peak is within the budget (the
    # 2-point block holds more than its clients: it may be halved to one point per program)
    ran = [p for p in plans if "peak_bytes" in p and not p["narrowed"]]
    assert all(p["peak_bytes"] <= budget for p in ran)
    assert res.groups in ([[0, 1], [2, 3]], [[0], [1], [2], [3]])
    for p in points:
        toy.float_close(metrics.read_jsonl(tmp_path / "fit" / "points" / p.id / "metrics.jsonl"),
                        metrics.read_jsonl(tmp_path / "ref" / "points" / p.id / "metrics.jsonl"))
    # the device's budget (here the fake one) is the default
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed + 2 * per + per // 2))
    assert sweep.run_sweep(points, toy.build, tmp_path / "env", progress=False).groups == \
        res.groups
    # a budget that holds no point at one client per chunk: refused before any work
    monkeypatch.setenv(layout.BUDGET_ENV, "64")
    with pytest.raises(layout.MemoryBudgetError,
                       match=r"sweep point needs \d+ bytes .* 64 bytes"):
        sweep.run_sweep(points, toy.build, tmp_path / "none", progress=False)


def test_no_config_sets_a_layout_or_a_budget():
    """Layouts and memory budgets are the engine's: the shipped configs only declare the
    override fields (defaulting to the engine's choice) and never set them."""
    from pathlib import Path

    configs = Path(__file__).resolve().parents[1] / "experiments" / "configs"
    names = ("client_batch", "pair_chunk", "client_map", "memory_budget", "chunk_size",
             layout.BUDGET_ENV)
    declared = {"uldp/_common.py": "pair_chunk: int | None = None",
                "lightdp/_common.py": "client_map: str | None = None"}
    files = sorted(configs.rglob("*.py"))
    assert len(files) > 10
    for f in files:
        rel = f.relative_to(configs).as_posix()
        text = f.read_text().replace(declared.get(rel, "\0"), "")
        compact = text.replace(" ", "")
        for name in names:  # neither name=value nor {"name": value}
            assert f"{name}=" not in compact and f'"{name}":' not in compact, (rel, name)
    import dataclasses

    from experiments.configs import fl
    defaults = {f.name: f.default for f in dataclasses.fields(fl.FLConfig)}
    assert defaults["client_batch"] == layout.AUTO


def test_lightdp_clients_fit_the_budget(accelerator_policy, monkeypatch):
    from tests.algorithms import lightdp_test as L

    design = L._with_sigmas(L._design(), 0.02, 0.3)
    data = _toy.blobs(num_clients=6, seed=1, sizes=[8] * 6).to_device()
    model, alg = L._alg(design)
    seen = []
    fit = layout.fit
    monkeypatch.setattr(layout, "fit", lambda *a: seen.append(fit(*a)) or seen[-1])

    def run():  # traced afresh every call (the layout is chosen when tracing)
        return jax.jit(lambda *a: alg.apply(*a))(alg.init(model.init(jax.random.key(0))), data,
                                                 L._rin(alg, 6, [2], 2), jax.random.key(4))

    full = run()
    assert seen == [None] and layout._MEMORY == {}  # no budget: the full vmap, nothing measured
    monkeypatch.setenv(layout.BUDGET_ENV, str(10 ** 12))
    _close(full, run())
    fixed, per = next(iter(layout._MEMORY.values()))
    monkeypatch.setenv(layout.BUDGET_ENV, str(fixed + 4 * per))
    chunked = run()
    assert seen == [None, None, 4]
    _close(full, chunked)
    monkeypatch.setenv(layout.BUDGET_ENV, str(per // 2))
    with pytest.raises(layout.MemoryBudgetError, match=r"6 clients needs \d+ bytes"):
        run()
