"""Sweep throughput: K points of one config as one vmapped sweep against K sequential runs.

  python -m experiments.bench.bench_sweep [--quick] [--out DIR] [--only NAMES] [--ks 1,8,64]
  python -m experiments.bench.bench_sweep --render docs/scale/bench_sweep_cpu_quick_<date>.json

A point is a seed and values of the algorithm's traced hyperparameters (clip norm, noise
multiplier, learning rate; :func:`points`). For each workload and K:

* **vmapped**: the engine's sweep program (:func:`jaxfl.vmapped_runs.block_fn`, what
  :func:`jaxfl.sweep.run_sweep` runs), one round of K stacked points per call;
* **sequential**: one point's round as :func:`jaxfl.training.run` compiles it
  (:class:`jaxfl.sharding.LoopJit`), K points one after another. Points of one config do the
  same work whatever their values, so K sequential runs take K times one run's rounds, and
  compile K times (``K x`` one measured compilation).

Throughput is points x rounds per second after compilation (each call feeds its state back,
timed over at least ``min_time`` seconds, median of ``repeats`` measurements taken in turn
with the other columns, so that the machine's load drifts over all of them); compile times
are reported separately. Lane 0 of the vmapped sweep and the sequential run start from the
same state with the same key: ``lane0_diff`` is their largest parameter difference after one
round (float rounding only).

Every run writes ``DIR/sweep_throughput.json`` (versions, threads, device, load before and
after each row, date) and ``sweep_throughput.md`` (``make bench`` adds its own
``bench_sweep.*``); ``--render`` prints the table of a saved run (the tables in docs/scale.md
are renderings of the files committed under docs/scale/, tested).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from experiments.bench import timing

SEED = 0
KS = (1, 8, 64)
# Values of the varied hyperparameters, as factors of the workload's own value.
FACTORS = {"clip_norm": (1.0, 0.5), "noise_multiplier": (1.0, 1.5), "client_lr": (1.0, 0.5),
           "local_lr": (1.0, 0.5), "learning_rate": (1.0, 0.5)}


@dataclasses.dataclass(frozen=True)
class Workload:
    """``setup(quick) -> (build, data, init_params, base)``: ``build(point)`` the algorithm of a
    point (a dict of hyperparameter values), ``init_params(seed)`` its initial parameters."""

    name: str
    title: Callable[[bool], str]
    setup: Callable[[bool], tuple]


def points(k: int, base: dict) -> list[dict]:
    """``k`` points: every combination of two values of each hyperparameter of ``base`` named in
    :data:`FACTORS` (in that order, as many as ``k`` holds), times seeds for the rest.

    >>> [(p["clip_norm"], p["noise_multiplier"], p["seed"])
    ...  for p in points(6, {"clip_norm": 1.0, "noise_multiplier": 1.0})]
    [(1.0, 1.0, 0), (0.5, 1.0, 0), (1.0, 1.5, 0), (0.5, 1.5, 0), (1.0, 1.0, 1), (0.5, 1.0, 1)]
    """
    names = [n for n in FACTORS if n in base]
    grid = [{"seed": 0}]
    for n in names:
        if len(grid) * 2 > k:
            break
        grid = [{**g, n: base[n] * f} for f in FACTORS[n] for g in grid]
    seeds = -(-k // len(grid))
    out = [{**base, **g, "seed": s} for s in range(seeds) for g in grid]
    return out[:k]


# ----------------------------------------------------------------------------- workloads

def dp_fedavg_setup(arch: str, clients: int, *, per_client: int = 20, client_batch="auto"):
    """The DP-FedAvg workload's ``(build, data, init_params, base)`` (:class:`Workload`):
    ``clients`` clients of ``per_client`` random MNIST-shaped records, all in every round, two
    local steps of batch 10; ``client_batch`` the cohort layout request (the engine's
    ``"auto"``; :mod:`experiments.bench.proxies` passes the accelerator's)."""
    import jax

    from jaxfl import models
    from jaxfl.algorithms import dp_fedavg

    model = models.get_model(arch, num_classes=10, input_shape=(784,))
    data = timing.random_clients(clients, per_client, (784,), seed=SEED)
    base = {"client_lr": 0.1, "clip_norm": 1.0, "noise_multiplier": 1.0}

    def build(p):
        return dp_fedavg.dp_fedavg(model, num_clients=clients, local_steps=2, batch_size=10,
                                   client_lr=p["client_lr"], clip_norm=p["clip_norm"],
                                   noise_multiplier=p["noise_multiplier"],
                                   sampling_rate=1.0, client_batch=client_batch)

    return build, data, lambda s: model.init(jax.random.key(s)), base


def _dp_fedavg(arch: str):
    def setup(quick: bool):
        return dp_fedavg_setup(arch, 100 if quick else 1000)

    return setup


def _uldp_heart(quick: bool):
    import jax

    from experiments import config as config_lib
    from experiments.configs.uldp import fig6_heart
    from experiments.papers import uldp as uldp_paper

    cfg = fig6_heart.get_config("method=ULDP-AVG")
    cfg = config_lib.apply_overrides(cfg, {"local_epochs": 2 if quick else 10})
    t = uldp_paper.task(cfg)
    model = t.model
    data = uldp_paper.algorithm_and_data(cfg, t, model)[1]
    base = {"clip_norm": cfg.clip_norm, "noise_multiplier": cfg.noise_multiplier,
            "local_lr": cfg.local_lr}

    def build(p):
        over = config_lib.apply_overrides(cfg, {k: v for k, v in p.items() if k != "seed"})
        return uldp_paper.algorithm_and_data(over, t, model)[0]

    return build, data, lambda s: model.init(jax.random.key(s)), base


def _gossip(quick: bool):
    from jaxfl.algorithms import gossip
    from jaxfl.topology import graphs, mixing

    nodes, per = 100, (100 if quick else 600)
    data = timing.random_clients(nodes, per, (784,), seed=SEED)
    W = mixing.max_degree(graphs.erdos_renyi(nodes, 0.1, seed=1))
    base = {"learning_rate": 1.0, "noise_multiplier": 1.0}

    def build(p):
        return gossip.dp_gossip_avg(mixing_matrix=W, clip_norm=1.0,
                                    noise_multiplier=p["noise_multiplier"],
                                    learning_rate=p["learning_rate"], normalizer=float(per))

    def init(seed):
        del seed  # gossip starts every node from zero
        return gossip.logreg_init(784, 10)

    return build, data, init, base


def _clients(quick):
    return 100 if quick else 1000


WORKLOADS = (
    Workload("dp_fedavg_logreg", lambda q: f"DP-FedAvg logreg, {_clients(q)} clients a round",
             _dp_fedavg("logreg")),
    Workload("dp_fedavg_mlp", lambda q: f"DP-FedAvg MLP, {_clients(q)} clients a round",
             _dp_fedavg("mlp")),
    Workload("uldp_avg_heart", lambda q: f"ULDP-AVG heart disease, 50 users / 4 silos, "
             f"{2 if q else 10} local epochs", _uldp_heart),
    Workload("gossip", lambda q: f"DP gossip averaging, 100 nodes x {100 if q else 600} "
             "examples, logreg", _gossip),
)


# ----------------------------------------------------------------------------- measuring

def _piece(tree, i: int, chunk: int, k: int, axis: int = 0):
    """Points ``i .. i + chunk`` (of ``k``) of a stacked tree, padded to ``chunk`` with copies
    of its last point."""
    import jax

    from jaxfl import vmapped_runs

    rows = list(range(i, min(i + chunk, k)))
    return vmapped_runs._pad_points(
        jax.tree.map(lambda a: np.take(np.asarray(a), rows, axis=axis), tree),
        chunk, axis)


def stacked_points(build, init_params, base: dict, k: int):
    """The first round's arguments of ``k`` stacked points (:func:`points` of ``base``) for
    :func:`jaxfl.vmapped_runs.block_fn` after its data: ``(states [k], round_inputs [1, k],
    key_data [k], hparams [k], rounds [1])``, each point's hparams checked against its own
    accountant (:func:`jaxfl.algorithms.base.bind_hparams`)."""
    import jax
    import jax.numpy as jnp

    from jaxfl import random as jrandom
    from jaxfl import vmapped_runs
    from jaxfl.algorithms import base as alg_base

    pts = points(k, base)
    algs = [build(p) for p in pts]
    states = jax.tree.map(lambda *a: np.stack([np.asarray(x) for x in a]),
                          *[a.init(init_params(p["seed"])) for a, p in zip(algs, pts,
                                                                          strict=True)])
    hp = alg_base.bind_hparams(algs)
    kd = np.stack([_key_data(p["seed"]) for p in pts])
    ri = vmapped_runs.stack_round_inputs([vmapped_runs.stack_round_inputs(
        [a.prepare(0, jrandom.host_rng(p["seed"], "sample", 0))
         for a, p in zip(algs, pts, strict=True)])])
    return states, ri, kd, hp, jnp.zeros(1, jnp.int32)


def _key_data(seed: int) -> np.ndarray:
    """The key data of a point's ``"train"`` stream (what :func:`jaxfl.training.run` keys its
    rounds from)."""
    import jax

    from jaxfl import random as jrandom

    return np.asarray(jax.random.key_data(jrandom.key_streams(seed, ("train",))["train"]))


def _vmapped_plan(ref, most, states, data, ri, kd, hp, rounds, k: int):
    """The vmapped program of ``k`` points as :func:`jaxfl.sweep.run_sweep` plans it: points
    per program from the device budget (``most()``: :func:`jaxfl.sweep.fit_chunk_size`, rounded
    down to a power of two), then compile-verified and halved by the planner (:mod:`jaxfl.planner`)
    while the compiled block does not fit or runs out of memory. Returns ``(pieces, plan,
    points per program, first states, compile seconds)``: ``pieces`` are ``(executable,
    arguments)`` per chunk of points (the last chunk padded with copies of its last point)."""
    import jax

    from jaxfl import layout, planner, vmapped_runs

    budget = layout.device_budget()
    chunk = k
    if budget is not None and k > 1:
        chunk = min(k, most())
        chunk = 1 << (chunk.bit_length() - 1)
    fn = vmapped_runs.planned_block(ref, data_axis=None, spmd=False)
    narrowed = []
    t0 = time.perf_counter()
    while True:
        pieces = [(jax.tree.map(jax.numpy.asarray, _piece(states, i, chunk, k)),
                   _piece(ri, i, chunk, k, axis=1), _piece(kd, i, chunk, k),
                   _piece(hp, i, chunk, k)) for i in range(0, k, chunk)]
        try:
            with layout.sharing(chunk, budget=budget):
                exe = fn.compiled(pieces[0][0], data, pieces[0][1], pieces[0][2],
                                  pieces[0][3], rounds)
                compile_s = time.perf_counter() - t0
                # the first calls through the planner: a RESOURCE_EXHAUSTED at run narrows too
                firsts = [fn(st, data, r_, k_, h_, rounds)[0] for st, r_, k_, h_ in pieces]
            break
        except planner.NarrowPoints as e:
            narrowed += e.plan.narrowed
            if chunk == 1:
                raise
            chunk //= 2
    plan = fn.current_plan
    plan.narrowed[:0] = narrowed
    pieces = [(exe, (data, r_, k_, h_, rounds)) for _, r_, k_, h_ in pieces]
    return pieces, plan, chunk, firsts, compile_s


def measure(workload: Workload, *, quick: bool, ks=KS, repeats: int = 3,
            min_time: float = 1.0) -> list[dict]:
    """One row per K: vmapped and sequential throughput, compile times, lane-0 difference,
    and how the planner laid the vmapped program out (points per program, forced unit chunk,
    predicted peak, budget) and whether the GPU programs were deterministic."""
    import jax
    import jax.numpy as jnp

    from jaxfl import layout, planner, sweep, vmapped_runs
    from jaxfl import random as jrandom
    from jaxfl.algorithms import base as alg_base

    build, data, init_params, base = workload.setup(quick)
    data = data.to_device()
    ref = build({**base, "seed": SEED})

    # sequential: one point's round as training.run compiles it (through the planner)
    def round_step(state, d, ri, key):
        return alg_base.call_apply(ref, state, d, ri, key)

    seq = planner.PlannedLoop(round_step)
    ri0 = ref.prepare(0, jrandom.host_rng(SEED, "sample", 0))
    key0 = jrandom.round_key(jax.random.wrap_key_data(_key_data(SEED)), 0)
    state0 = jax.tree.map(jnp.asarray, ref.init(init_params(SEED)))
    t0 = time.perf_counter()
    seq.compiled(state0, data, ri0, key0)
    seq_compile = time.perf_counter() - t0
    one_round = seq(state0, data, ri0, key0)[0]
    spec = vmapped_runs.RunSpec(algorithm=ref, data=data, params=init_params(SEED), rounds=1,
                                seed=SEED)
    fitted = []  # the points one program holds under the device budget, measured once

    def most():
        if not fitted:
            fitted.append(sweep.fit_chunk_size(spec, layout.device_budget()))
        return fitted[0]

    runs = {}
    for k in ks:
        states, ri, kd, hp, rounds = stacked_points(build, init_params, base, k)
        pieces, plan, chunk, firsts, compile_s = _vmapped_plan(ref, most, states, data, ri,
                                                               kd, hp, rounds, k)
        diff = max(float(jnp.max(jnp.abs(a[0] - b))) for a, b in zip(
            jax.tree.leaves(ref.params_of(firsts[0])),
            jax.tree.leaves(ref.params_of(one_round)), strict=True))

        def call(states, pieces=pieces):
            return [exe(s, *args)[0] for s, (exe, args) in zip(states, pieces, strict=True)]

        runs[k] = dict(call=call, state=firsts, compile_s=compile_s, diff=diff, times=[],
                       plan=plan, chunk=chunk, cost=pieces_cost(ref, firsts, pieces))
    seq_state, seq_times = one_round, []
    for _ in range(repeats):  # columns in turn: load drift spreads over all of them
        t = timing.timed_steps(lambda s, _: seq(s, data, ri0, key0)[0], seq_state,
                               min_time=min_time, max_calls=1000, warmup=False, sync_each=False)
        seq_state = t.out
        seq_times.append(t.per_call_s)
        for k, run in runs.items():
            t = timing.timed_steps(lambda s, _, call=run["call"]: call(s), run["state"],
                                   min_time=min_time, max_calls=1000, warmup=False,
                                   sync_each=False)
            run["state"] = t.out
            run["times"].append(t.per_call_s)
    t_seq = float(np.median(seq_times))
    seq_plan = seq.plans[-1] if seq.plans else None
    rows = []
    for k, run in runs.items():
        t_vmap = float(np.median(run["times"]))
        plan = run["plan"]
        rows.append({
            "workload": workload.name, "title": workload.title(quick), "k": k,
            "vmap_round_s": t_vmap, "seq_round_s": t_seq,
            "vmap_points_rounds_per_s": k / t_vmap, "seq_points_rounds_per_s": 1.0 / t_seq,
            "speedup": t_seq * k / t_vmap,
            "vmap_compile_s": run["compile_s"], "seq_compile_s": seq_compile,
            "seq_compile_total_s": k * seq_compile, "lane0_diff": run["diff"],
            "vmap_times": run["times"], "seq_times": seq_times,
            "hparams": sorted(ref.hparams), "vmap_cost": run["cost"],
            # the planner's layout (docs/scale.md, "The memory planner") and GPU determinism
            "points_per_program": run["chunk"], "unit_chunk": plan.unit_chunk,
            "predicted_peak_bytes": plan.peak_bytes, "budget_bytes": plan.budget_bytes,
            "narrowed": list(plan.narrowed),
            "seq_unit_chunk": seq_plan.unit_chunk if seq_plan else None,
            "seq_predicted_peak_bytes": seq_plan.peak_bytes if seq_plan else None,
            "deterministic": layout.deterministic()})
    return rows


def pieces_cost(ref, firsts, pieces) -> dict | None:
    """The work of one call of the planned K-point block: the count of its first program
    (:func:`vmap_cost`, lowered like it by :func:`jaxfl.vmapped_runs.block_fn`) times the number
    of programs the planner split the points into (every piece is the same program)."""
    from jaxfl import vmapped_runs

    exe, args = pieces[0]
    cost = vmap_cost(vmapped_runs.block_fn(ref, data_axis=None, spmd=False),
                     (firsts[0], *args), exe)
    if cost is None or len(pieces) == 1:
        return cost
    return {k: (v * len(pieces) if k in ("flops", "dot_flops", "bytes", "kernels")
                and v is not None else v) for k, v in cost.items()}


def vmap_cost(fn, args, exe) -> dict | None:
    """The work of one call of the vmapped block (:func:`jaxfl.roofline.count`: on an
    accelerator, FLOPs and bytes from a CPU lowering of the same block). None where it cannot
    be counted."""
    from jaxfl import roofline

    c = roofline.count(fn, args, exe)
    return None if "error" in c else c


# ----------------------------------------------------------------------------- report

def with_roofline(rows: list[dict], peak: dict | None = None) -> list[dict]:
    """Adds each row's ``roofline`` (:func:`jaxfl.roofline.roofline` of the vmapped block:
    its counted work per call and the median seconds per call) where the row has a count;
    ``peak``: the device's (default: :func:`jaxfl.roofline.peaks` of this process's device)."""
    from jaxfl import roofline

    for r in rows:
        c = r.get("vmap_cost")
        if c and c.get("flops") is not None and r.get("vmap_round_s"):
            peak = peak or roofline.peaks()
            r["roofline"] = roofline.roofline(c, r["vmap_round_s"], peak)
    return rows


def _roofline_cells(r: dict) -> str:
    """GFLOP / GB / kernels per call, achieved rates (of peak), bound (of limit); a count
    without FLOPs (saved by an older run on a device) shows its kernels only."""
    c, f = r.get("vmap_cost"), r.get("roofline")
    if not c or c.get("flops") is None:
        return " | " if not c else f"- / - / {c['kernels']:.0f} | | "
    from jaxfl import roofline

    work = f"{c['flops'] / 1e9:.3g} / {c['bytes'] / 1e9:.3g} / {c['kernels']:.0f}"
    if not f:
        return f"{work} | | "
    return (f"{work} | {f['flop_s'] / 1e9:.3g} ({100 * f['of_fp32_peak']:.3g}%), "
            f"{f['bytes_s'] / 1e9:.3g} ({100 * f['of_mem_peak']:.3g}%) | {roofline.summary(f)}")


def info(argv, quick: bool) -> dict:
    return {**timing.machine(), "xla_flags": os.environ.get("XLA_FLAGS", ""), "quick": quick,
            "date": time.strftime("%Y-%m-%d %H:%M %Z"), "argv": list(argv)}


def _g(v):
    return f"{v:.3g}"


def to_markdown(rows: list[dict], meta: dict) -> str:
    """The table of a run (what docs/scale.md shows; runs saved before the roofline columns
    render as they did)."""
    counted = any(r.get("vmap_cost") for r in rows)
    lines = [
        f"`python -m experiments.bench.bench_sweep {' '.join(meta['argv'])}`".replace(" `", "`"),
        "",
        f"Machine {meta['machine']} ({meta['processor']}, {meta['cpus']} CPUs, {meta['affinity']}"
        f" usable), python {meta['python']}, jax {meta['jax']} / jaxlib {meta['jaxlib']}, "
        f"backend {meta['backend']} ({meta['device']} x{meta['device_count']}), XLA_FLAGS "
        f"`{meta['xla_flags']}`, {'--quick sizes, ' if meta['quick'] else ''}{meta['date']}.",
        "",
        "| workload | K | vmapped sweep pts x rounds/s | K sequential runs pts x rounds/s | "
        "speedup | compile s vmapped / sequential (K x one) | lane-0 diff | load before -> "
        "after |" + (" vmapped GFLOP / GB / kernels per call | GFLOP/s, GB/s (of peak) | bound "
                     "(of limit) |" if counted else ""),
        "|---|---|---|---|---|---|---|---|" + ("---|---|---|" if counted else ""),
    ]
    for r in rows:
        load = f"{r['load_before']:.2f} -> {r['load_after']:.2f}" if "load_before" in r else ""
        lines.append(
            f"| {r['title']} | {r['k']} | {_g(r['vmap_points_rounds_per_s'])} | "
            f"{_g(r['seq_points_rounds_per_s'])} | **{r['speedup']:.2f}x** | "
            f"{r['vmap_compile_s']:.1f} / {r['seq_compile_total_s']:.1f} | "
            f"{r['lane0_diff']:.1e} | {load} |" + (f" {_roofline_cells(r)} |" if counted else ""))
    peak = meta.get("peaks")
    if any(r.get("roofline") for r in rows) and peak:
        lines += ["", f"Roofline (jaxfl.roofline) against {peak['name']}: float32 "
                  f"{peak['fp32_flops'] / 1e12:.3g} TFLOP/s, memory "
                  f"{peak['mem_bytes_s'] / 1e9:.3g} GB/s; bound = the largest of the compute, "
                  "bandwidth and launch floors of one call, and the measured time's distance "
                  "to it."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench_results")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--ks", default=",".join(map(str, KS)))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per measurement")
    ap.add_argument("--render", default=None, metavar="JSON",
                    help="print the table of a saved sweep_throughput.json and exit")
    return ap.parse_args(argv)


def main(argv=None) -> list[dict]:
    """Runs the benchmark (``make bench`` calls ``main(out_dir)``: the quick sizes)."""
    if isinstance(argv, Path):  # experiments.bench's convention: main(out_dir)
        argv = ["--out", str(argv), "--quick"]
    from jaxfl import layout

    # before JAX starts: deterministic GPU programs unless JAXFL_DETERMINISTIC=0 (what
    # training.run's entry points do); each row records the switch ("deterministic")
    layout.request_determinism()
    a = parse_args(argv)
    if a.render:
        saved = json.loads(Path(a.render).read_text())
        print(to_markdown(saved["rows"], saved["info"]), end="")
        return saved["rows"]
    ks = tuple(int(k) for k in a.ks.split(","))
    by_name = {w.name: w for w in WORKLOADS}  # in --only's order (the first ones run first)
    chosen = ([by_name[n] for n in a.only.split(",") if n in by_name] if a.only
              else list(WORKLOADS))
    if a.only and len(chosen) != len(a.only.split(",")):
        raise SystemExit(f"Unknown workloads in {a.only!r}; expected some of "
                         f"{[w.name for w in WORKLOADS]}.")
    meta = info(sys.argv[1:] if argv is None else argv, a.quick)
    rows = []
    for w in chosen:
        before = os.getloadavg()[0]
        got = measure(w, quick=a.quick, ks=ks, repeats=a.repeats, min_time=a.min_time)
        after = os.getloadavg()[0]
        with_roofline(got)
        if any(r.get("roofline") for r in got):
            from jaxfl import roofline

            meta["peaks"] = {k: v for k, v in roofline.peaks().items() if k != "source"}
        for r in got:
            r.update(load_before=before, load_after=after)
        rows += got
        timing.write_run(a.out, "sweep_throughput", meta, rows, to_markdown(rows, meta))
        print(to_markdown(got, meta), flush=True)
    return rows


if __name__ == "__main__":
    main()
