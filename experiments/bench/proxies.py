"""Proxies to steer the GPU rows by on a CPU: the work of each bench_torch row's compiled jaxfl
program in the accelerator's layout, counted on a CPU lowering.

  python -m experiments.bench.proxies --out docs/scale/proxies_cpu_<date>.json [--quick]
      [--full] [--small] [--only uldp_avg_1000,...]
  python -m experiments.bench.proxies --render docs/scale/proxies_cpu_<date>.json
  python -m experiments.bench.proxies --sweep logreg,mlp --clients 1000 --ks 1,64

For every row of :mod:`experiments.bench.bench_torch` (ULDP-AVG 100 and 1000 users, DP-SGD on
both CNNs, DP-FedAvg logreg and MLP, the gossip round) the jaxfl side's program (a round; for
DP-SGD one step) is built as the benchmark builds it, in two layouts (:data:`LAYOUTS`):

* ``accelerator``: what the engine picks on a GPU (:func:`jaxfl.layout.resolve` with
  ``backend="gpu"``: full vmap of the client / pair / node axis; the GPU's convolution,
  :func:`jaxfl.layout.conv_impl` with ``backend="gpu"``: patches x kernel since 2026-11-28,
  the direct XLA convolution in the counts committed before; one device: no split over host
  devices);
* ``cpu``: what it picks on one CPU device (chunked axes, patches x kernel convolutions);

and, for the ULDP rows, two variants of the accelerator layout, what a change to its rule would
save or cost: ``accelerator-unmerged`` (every pair in its own
:func:`jaxfl.algorithms.uldp_data.bucket_length`, no merging of small buckets) and
``accelerator-16k-chunks`` (the accelerator layout before 2026-11-28: chunks of at most 16,384
records, run one after the other; now every bucket is one vmap there).

Each is lowered and compiled for the CPU and counted by :func:`jaxfl.roofline.program_cost`
(FLOPs, bytes, kernels with loop trip counts; XLA's own ``cost_analysis()`` alongside, which
counts loop bodies once) and :func:`jaxfl.roofline.fusion_count` (fusion computations in the
HLO), with the ULDP rows' real and padded work: records the round trains on (real) and the
record slots it computes (pairs padded to their bucket's length, buckets padded to whole
chunks). Nothing is run: the numbers are properties of the compiled programs.

Sizes: ``--quick`` and ``--full`` are bench_torch's (real MNIST from ``JAXFL_DATA_DIR``);
``--small`` is tiny synthetic data (:func:`small_arrays`, no data files), the size the test
(``tests/bench/proxies_test.py``) recomputes and compares with the committed file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
import types
from pathlib import Path

import numpy as np

from experiments.bench import bench_torch, timing
from jaxfl import layout as engine_layout

SEED = 0
# layout name -> (the backend whose "auto" layout it is, the convolution implementation)
LAYOUTS = {"accelerator": ("gpu", engine_layout.conv_impl("auto", backend="gpu")),
           "cpu": ("cpu", engine_layout.conv_impl("auto", backend="cpu"))}
UNMERGED = "accelerator-unmerged"
CAPPED = "accelerator-16k-chunks"
# The ULDP-only variants of the accelerator layout: (merge small buckets, records per chunk cap)
VARIANTS = {"accelerator": (True, "auto"), UNMERGED: (False, "auto"),
            CAPPED: (True, 16384)}
# The tiny synthetic sizes of --small (and the test).
SMALL = {"uldp_avg": dict(num_users=12, num_silos=3, records=96),
         "dp_sgd": dict(batch_size=8, steps=1),
         "dp_fedavg": dict(num_clients=6, per_client=10, local_steps=2, batch_size=5),
         "gossip": dict(nodes=6, per_node=10)}
FIELDS = ("flops", "dot_flops", "bytes", "kernels", "fusions", "xla_flops", "xla_bytes",
          "unknown_trip_counts")


@contextlib.contextmanager
def conv_impl(impl: str):
    """``JAXFL_CONV_IMPL=impl`` while a program is traced (:func:`jaxfl.layout.conv_impl`)."""
    old = os.environ.get("JAXFL_CONV_IMPL")
    os.environ["JAXFL_CONV_IMPL"] = impl
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JAXFL_CONV_IMPL", None)
        else:
            os.environ["JAXFL_CONV_IMPL"] = old


def small_arrays(kind: str) -> tuple[dict, dict]:
    """Tiny synthetic ``(arrays, meta)`` of a row kind, shaped as bench_torch.prepare writes
    them (MNIST-shaped records, seeded)."""
    rng = np.random.default_rng(SEED)
    p = dict(SMALL[kind])
    if kind == "uldp_avg":
        n = p["records"]
        cfg = bench_torch._uldp_config(p["num_users"], None)
        arrays = dict(x=rng.normal(size=(n, 28, 28, 1)).astype(np.float32),
                      y=rng.integers(0, 10, n).astype(np.int32),
                      silo=rng.integers(0, p["num_silos"], n).astype(np.int32),
                      user=rng.integers(0, p["num_users"], n).astype(np.int32))
        meta = dict(num_users=p["num_users"], num_silos=p["num_silos"], max_records=None,
                    local_epochs=cfg.local_epochs, batch_size=cfg.batch_size)
    elif kind == "dp_sgd":
        n = p["batch_size"] * p["steps"] * 2
        arrays = dict(x=rng.normal(size=(n, 28, 28, 1)).astype(np.float32),
                      y=rng.integers(0, 10, n).astype(np.int32))
        meta = dict(p, lr=0.05, clip_norm=1.0, noise_multiplier=1.0)
    elif kind == "dp_fedavg":
        N, m = p["num_clients"], p["per_client"]
        arrays = dict(x=rng.normal(size=(N * m, 784)).astype(np.float32),
                      y=rng.integers(0, 10, N * m).astype(np.int32),
                      offsets=np.arange(N + 1) * m)
        meta = dict(p, client_lr=0.05, clip_norm=1.0, noise_multiplier=1.0, sampling_rate=1.0)
    elif kind == "gossip":
        from jaxfl.topology import graphs, mixing

        n, m = p["nodes"], p["per_node"]
        arrays = dict(x=rng.normal(size=(n, m, 784)).astype(np.float32),
                      y=rng.integers(0, 10, (n, m)).astype(np.int32),
                      W=mixing.max_degree(graphs.erdos_renyi(n, 0.5, seed=1)))
        meta = dict(p, clip_norm=1.0, noise_multiplier=1.0, learning_rate=1.0,
                    normalizer=float(m))
    else:
        raise ValueError(f"Unknown row kind {kind!r}.")
    return arrays, meta


def _uldp(arrays, meta, backend: str, merged: bool = True, max_rows: int | str = "auto"):
    from experiments import config as config_lib
    from experiments.papers import uldp as uldp_paper
    from jaxfl import models
    from jaxfl.algorithms import uldp_data
    from jaxfl.tasks import silos

    model = silos.model_of("mnist")
    cfg = bench_torch._uldp_config(meta["num_users"], meta["max_records"])
    if meta.get("local_epochs") not in (None, cfg.local_epochs):  # a test's smaller round
        cfg = config_lib.apply_overrides(cfg, {"local_epochs": int(meta["local_epochs"])})
    train = uldp_data.UldpData(x=arrays["x"], y=arrays["y"], silo=arrays["silo"],
                               user=arrays["user"], num_silos=int(meta["num_silos"]),
                               num_users=int(meta["num_users"]))
    alg = uldp_paper.algorithm_and_data(cfg, types.SimpleNamespace(train=train), model)[0]
    flops = models.forward_flops(model)
    # The engine's "auto" pair layout for `backend` (on an accelerator: every bucket one vmap).
    data = uldp_data.pair_data(train, unit_flops=flops, shards=1, backend=backend,
                               max_rows_per_chunk=max_rows,
                               **({} if merged else {"min_length": 1}))
    real = int(sum(int(b.count.sum()) for b in data.buckets))
    slots = int(sum(int(b.index.shape[0]) * int(b.index.shape[1]) for b in data.buckets))
    pairs = int(sum(int((b.count > 0).sum()) for b in data.buckets))
    extra = {"records_real": real, "records_padded": slots, "pairs_real": pairs,
             "pairs_padded": int(sum(int(b.index.shape[0]) for b in data.buckets)),
             "buckets": [[int(b.index.shape[0]), int(b.index.shape[1]), int(b.chunk)]
                         for b in data.buckets],
             "local_epochs": int(meta["local_epochs"])}
    import jax

    return alg, data, model.init(jax.random.key(SEED)), extra


def build(kind: str, arrays: dict, meta: dict, layout_name: str):
    """``(fn, args, extra)``: the row's jaxfl program (a jitted function and its arguments, as
    bench_torch's jaxfl side calls it) in ``layout_name``'s layout; trace it under
    :func:`conv_impl` of that layout."""
    import jax
    import jax.numpy as jnp

    from jaxfl import ghost, layout, models, noise
    from jaxfl.algorithms import gossip
    from jaxfl.data import federated

    backend = LAYOUTS[_base(layout_name)][0]
    rng = np.random.default_rng(SEED)
    key = jax.random.key(SEED + 1)
    extra = {}
    if kind == "dp_sgd":
        model = models.get_model(meta["arch"] if "arch" in meta else "uldp_cnn")
        params = model.init(jax.random.key(SEED))
        B = int(meta["batch_size"])
        C, sigma, lr = meta["clip_norm"], meta["noise_multiplier"], meta["lr"]
        x, y = jnp.asarray(arrays["x"]), jnp.asarray(arrays["y"])
        mask = jnp.ones(B, bool)

        def step(p, b, key):
            xb = jax.lax.dynamic_slice_in_dim(x, b * B, B)
            yb = jax.lax.dynamic_slice_in_dim(y, b * B, B)
            keys = jax.random.split(jax.random.fold_in(key, 0), B)
            total, _ = ghost.model_clipped_grad_sum(model, p, xb, yb, mask, clip_norm=C,
                                                    keys=keys)
            noisy = noise.add_gaussian(total, jax.random.fold_in(key, 1), sigma * C)
            return jax.tree.map(lambda a, g: a - lr * g / B, p, noisy)

        extra["records_real"] = extra["records_padded"] = B
        return jax.jit(step), (params, 0, key), extra
    if kind == "uldp_avg":
        merged, max_rows = VARIANTS.get(layout_name, (True, "auto"))
        alg, data, params, extra = _uldp(arrays, meta, backend, merged=merged,
                                         max_rows=max_rows)
    elif kind == "dp_fedavg":
        alg, data, model = bench_torch.fedavg_built(
            arrays, meta, client_batch=layout.resolve(layout.AUTO, "cohort", backend=backend))
        params = model.init(jax.random.key(SEED))
        extra["records_real"] = extra["records_padded"] = int(arrays["offsets"][-1])
    elif kind == "gossip":
        data = federated.from_client_arrays(list(arrays["x"]), list(arrays["y"]))
        alg = gossip.dp_gossip_avg(mixing_matrix=arrays["W"], clip_norm=meta["clip_norm"],
                                   noise_multiplier=meta["noise_multiplier"],
                                   learning_rate=meta["learning_rate"],
                                   normalizer=meta["normalizer"])
        params = gossip.logreg_init(784, 10)
        extra["records_real"] = extra["records_padded"] = int(np.prod(arrays["y"].shape))
    else:
        raise ValueError(f"Unknown row kind {kind!r}.")
    state = alg.init(params)
    return jax.jit(alg.apply), (state, data.to_device(), alg.prepare(0, rng), key), extra


def measure_one(kind: str, arrays: dict, meta: dict, layout_name: str) -> dict:
    """The counted work of one row's program in one layout (module docstring)."""
    from jaxfl import roofline

    impl = LAYOUTS[_base(layout_name)][1]
    with conv_impl(impl):
        fn, args, extra = build(kind, arrays, meta, layout_name)
        t0 = time.perf_counter()
        compiled = fn.lower(*args).compile()
        compile_s = time.perf_counter() - t0
    cost = roofline.program_cost(compiled)
    return {"layout": layout_name, "conv": impl, **cost.asdict(),
            "fusions": roofline.fusion_count(compiled), **extra,
            "cpu_compile_s": round(compile_s, 2)}


# Opcodes :func:`op_census` lists: a scatter (XLA:GPU serializes it, a sort and a prefix scan,
# under --xla_gpu_deterministic_ops, jaxfl's default; atomics without), a select-and-scatter
# (the same), a sort, and a gather (no determinism cost; listed for where scatters come from:
# the gradient of a gather is a scatter-add).
CENSUS_OPS = ("scatter", "select-and-scatter", "sort", "gather")


def op_census(compiled, ops=CENSUS_OPS) -> dict[str, list[str]]:
    """``{opcode: [source, ...]}``: every instruction of ``ops`` in a compiled program's
    optimized HLO (fused computations and loop bodies included, each counted once), with the
    ``op_name`` of its metadata (the JAX operation it came from, e.g.
    ``.../transpose(jvp(jit(take_along_axis)))/scatter-add``) or ``"?"``."""
    import re

    want = "|".join(re.escape(o) for o in sorted(ops, key=len, reverse=True))
    out = {o: [] for o in ops}
    for line in compiled.as_text().splitlines():
        m = re.search(rf"\s({want})\(", line)
        if m and " = " in line:
            name = re.search(r'op_name="([^"]*)"', line)
            out[m.group(1)].append(name.group(1) if name else "?")
    return out


def sweep_programs(arch: str, *, clients: int, k: int = 1, per_client: int = 20) -> dict:
    """bench_sweep's DP-FedAvg workload (:func:`experiments.bench.bench_sweep.dp_fedavg_setup`)
    in the accelerator's layout (the cohort one vmap, ``layout.resolve(..., backend="gpu")``),
    its two programs compiled for the CPU: ``"sequential"``, one point's round as
    ``training.run`` traces it, and ``"vmapped"``, the sweep's block of ``k`` points
    (:func:`jaxfl.vmapped_runs.block_fn`, the points of
    :func:`experiments.bench.bench_sweep.stacked_points`). For each: the counted work
    (:func:`jaxfl.roofline.program_cost`), the fusions, :func:`op_census` and the ``dots``
    (each dot's result shape and dimension numbers, in program order: the layouts XLA chose
    for the matrix products)."""
    import re

    import jax

    from experiments.bench import bench_sweep
    from jaxfl import layout, roofline, vmapped_runs
    from jaxfl import random as jrandom
    from jaxfl.algorithms import base as alg_base

    cohort = layout.resolve(layout.AUTO, "cohort", backend=LAYOUTS["accelerator"][0])
    build, data, init_params, base = bench_sweep.dp_fedavg_setup(
        arch, clients, per_client=per_client, client_batch=cohort)
    data = data.to_device()
    ref = build({**base, "seed": SEED})
    state = ref.init(init_params(SEED))
    key = jrandom.round_key(jax.random.wrap_key_data(bench_sweep._key_data(SEED)), 0)
    seq = jax.jit(lambda st, d, ri, key: alg_base.call_apply(ref, st, d, ri, key))
    states, *rest = bench_sweep.stacked_points(build, init_params, base, k)
    block = vmapped_runs.block_fn(ref, data_axis=None, spmd=False)
    programs = {
        "sequential": seq.lower(state, data, ref.prepare(0, jrandom.host_rng(SEED, "sample", 0)),
                                key).compile(),
        "vmapped": block.lower(states, data, *rest).compile()}
    out = {}
    for name, compiled in programs.items():
        dots = []  # "f32[1000,784,200]{2,1,0} lhs_batch_dims={0}, ..." (operands left out)
        for line in compiled.as_text().splitlines():
            m = re.search(r"= (\S+) dot\(.*?\), (.*?)(, metadata=.*)?$", line)
            if m:
                dots.append(f"{m.group(1)} {m.group(2)}")
        out[name] = {**roofline.program_cost(compiled).asdict(),
                     "fusions": roofline.fusion_count(compiled),
                     "census": op_census(compiled), "dots": dots}
    return out


def sweep_table(archs, *, clients: int, ks) -> list[dict]:
    """Prints (Markdown) and returns :func:`sweep_programs` of each model and K: the counted
    work and the scatters, sorts and gathers of the sequential round and the vmapped block
    (docs/scale.md, "Scatter-free rounds")."""
    rows = []
    print("| model | program | K | GFLOP | GB | kernels | fusions | scatter | sort | gather |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for arch in archs:
        for i, k in enumerate(ks):
            for name, p in sweep_programs(arch, clients=clients, k=k).items():
                if name == "sequential" and i:
                    continue  # the same round whatever K
                c = {o: len(v) for o, v in p["census"].items()}
                rows.append({"arch": arch, "program": name, "k": k, "clients": clients,
                             **{f: p[f] for f in ("flops", "bytes", "kernels", "fusions")},
                             "census": p["census"]})
                print(f"| {arch} | {name} | {k if name == 'vmapped' else ''} | "
                      f"{p['flops'] / 1e9:.3g} | {p['bytes'] / 1e9:.3g} | {p['kernels']:.0f} | "
                      f"{p['fusions']} | {c['scatter']} | {c['sort']} | {c['gather']} |",
                      flush=True)
                for src in p["census"]["scatter"]:
                    print(f"|  | scatter: `{src}` |||||||||")
    return rows


def _base(layout_name: str) -> str:
    """The layout a variant is of (``accelerator`` or ``cpu``)."""
    return "accelerator" if layout_name.startswith("accelerator") else layout_name


def layouts_of(kind: str, only: str | None = None) -> list[str]:
    names = [*LAYOUTS, *([UNMERGED, CAPPED] if kind == "uldp_avg" else [])]
    return [n for n in names if not only or n in only.split(",")]


def row_arrays(row: bench_torch.Row, size: str, tmp: Path) -> tuple[dict, dict]:
    if size == "small":
        arrays, meta = small_arrays(row.kind)
        if row.kind in ("dp_sgd", "dp_fedavg"):
            meta["arch"] = row.params["arch"]
        return arrays, meta
    path = tmp / f"{row.name}.npz"
    meta = bench_torch.prepare(row, path)
    z = np.load(path, allow_pickle=False)
    return {k: z[k] for k in z.files if not k.startswith("param:") and k != "meta"}, meta


def measure(size: str, only: str | None = None, tmp: Path | None = None,
            layouts: str | None = None) -> list[dict]:
    """One entry per (row, layout) at ``size`` (``small``, ``quick`` or ``full``)."""
    import tempfile

    rows = bench_torch.select_rows(size == "quick", only)
    if size == "small":  # one synthetic ULDP size: the 1000-user row would repeat the 100's
        rows = [r for r in rows if r.name != "uldp_avg_1000"] or rows
    out = []
    with tempfile.TemporaryDirectory() as t:
        for row in rows:
            arrays, meta = row_arrays(row, size, Path(tmp or t))
            for name in layouts_of(row.kind, layouts):
                got = measure_one(row.kind, arrays, meta, name)
                out.append({"row": row.name, "size": size, **got})
                print(f"[{size}] {row.name} {name}: {got['flops']:.3g} FLOPs, "
                      f"{got['bytes']:.3g} B, {got['kernels']:.0f} kernels, "
                      f"{got['fusions']} fusions", flush=True)
    return out


def _g(v) -> str:
    return "" if v is None else f"{v:.3g}"


def floors_ms(r: dict, device: str = "H200") -> dict:
    """The three floors of one call (:func:`jaxfl.roofline.roofline`) on ``device``'s peaks
    (:data:`jaxfl.roofline.PEAKS`), in milliseconds: what the counted work alone predicts for
    an accelerator (kernels counted on the CPU lowering: XLA:GPU fuses differently)."""
    from jaxfl import roofline

    peak = {"name": device, **roofline.PEAKS[device]}
    return {k: 1e3 * v for k, v in roofline.roofline(r, 1.0, peak)["floors_s"].items()}


def to_markdown(rows: list[dict], info: dict) -> str:
    """The table of a saved run (docs/scale.md, "Proxies without a GPU")."""
    lines = [f"{timing.describe(info)}, {info.get('date', '')}. Counted on a CPU lowering "
             "(jaxfl.roofline.program_cost); per round (DP-SGD: per step). H200 floors: the "
             "counted work at the H200's peaks (compute / bandwidth / launch, ms).", "",
             "| row | size | layout | FLOPs | of which dots/convs | bytes | kernels run | "
             "fusions (static) | XLA cost_analysis FLOPs (loops once) | records real / "
             "padded | H200 floors ms |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        recs = (f"{r['records_real']} / {r['records_padded']}"
                if r.get("records_padded") is not None else "")
        f = floors_ms(r)
        fl = (f"{f['compute']:.2g} / {f['bandwidth']:.2g} / {f['launch']:.2g}"
              if r["layout"].startswith("accelerator") else "")
        lines.append(f"| {r['row']} | {r['size']} | {r['layout']} | {_g(r['flops'])} | "
                     f"{_g(r['dot_flops'])} | {_g(r['bytes'])} | {r['kernels']:.0f} | "
                     f"{r['fusions']} | {_g(r['xla_flops'])} | {recs} | {fl} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the run's JSON here")
    ap.add_argument("--small", action="store_true", help="tiny synthetic sizes")
    ap.add_argument("--quick", action="store_true", help="bench_torch --quick sizes")
    ap.add_argument("--full", action="store_true", help="bench_torch full sizes")
    ap.add_argument("--only", default=None, help="comma-separated bench_torch row names")
    ap.add_argument("--layouts", default=None,
                    help="comma-separated layouts (default: all of each row)")
    ap.add_argument("--render", default=None, metavar="JSON")
    ap.add_argument("--sweep", default=None, metavar="ARCHS",
                    help="instead: bench_sweep's DP-FedAvg programs of these models (logreg,mlp;"
                         " sweep_programs), with --clients and --ks")
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--ks", default="1,64")
    a = ap.parse_args(argv)
    if a.sweep:
        return sweep_table(a.sweep.split(","), clients=a.clients,
                           ks=[int(k) for k in a.ks.split(",")])
    if a.render:
        saved = json.loads(Path(a.render).read_text())
        print(to_markdown(saved["rows"], saved["info"]), end="")
        return saved["rows"]
    sizes = [s for s in ("small", "quick", "full") if getattr(a, s)] or ["small"]
    if any(s != "small" for s in sizes) and not os.environ.get("JAXFL_DATA_DIR"):
        raise SystemExit("Set JAXFL_DATA_DIR (--quick / --full read real MNIST).")
    import jax

    info = {**timing.machine(), "date": time.strftime("%Y-%m-%d %H:%M %Z"),
            "argv": list(argv) if argv is not None else [], "jax_version": jax.__version__}
    rows = []
    for s in sizes:
        rows += measure(s, a.only, layouts=a.layouts)
        if a.out:
            Path(a.out).write_text(json.dumps({"info": info, "rows": rows}, indent=1,
                                              default=str) + "\n")
    print(to_markdown(rows, info), end="")
    return rows


if __name__ == "__main__":
    main()
