"""ULDP-AVG round split by pair bucket, jaxfl and torch ``vmap`` side by side: the per-step
profile of both sides for bench_torch's ULDP-AVG row.

  JAXFL_HOST_DEVICES=1 XLA_FLAGS=--xla_cpu_multi_thread_eigen=false \\
      python -m experiments.bench.uldp_profile [--users 1000] [--quick] [--pairs 2] [--out DIR]
  python -m experiments.bench.uldp_profile --render docs/scale/uldp_profile_<...>.json

Both sides read bench_torch's ``.npz`` of the row (same records, users, silos, initial model,
Q, B) and use one thread. jaxfl: the round is compiled once per bucket of pairs on that bucket
alone, and once on no pairs ("rest": clip, weighting, noise and update of the empty sum); a
bucket's time is its round minus the rest. torch: the ``vmap`` variant's round with a sync and
a clock read after each bucket (``torch_side --profile``). A pair of runs is one jaxfl process
(every part ``--reps`` rounds after one untimed round, parts alternating) and one torch process
(``--reps`` rounds after one warm-up); per-step times divide a bucket's seconds by its
sequential steps (chunks x Q x batches per epoch).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments import host_devices
from experiments.bench import bench_torch, timing


def jaxfl_parts(npz: str, reps: int) -> dict:
    """``{part: seconds per round}`` of the jaxfl side (module docstring)."""
    import jax

    z = np.load(npz, allow_pickle=False)
    meta = json.loads(str(z["meta"]))
    alg, data, params = bench_torch.uldp_built(z, meta)
    state, ri = alg.init(params), alg.prepare(0, np.random.default_rng(0))
    q, batch = int(meta["local_epochs"]), int(meta["batch_size"])
    parts = {"rest": ()}
    for b in data.buckets:
        pairs, length = int(b.index.shape[0]), int(b.index.shape[1])
        steps = pairs // (b.chunk * b.shards) * q * -(-length // batch)
        parts[f"{pairs}x{length} / {b.chunk} / {steps}"] = (b,)
    built = {}
    for name, buckets in parts.items():
        d = dataclasses.replace(data, buckets=buckets).to_device()
        fn = jax.jit(alg.apply).lower(state, d, ri, jax.random.key(1)).compile()
        jax.block_until_ready(fn(state, d, ri, jax.random.key(0)))  # untimed first round
        built[name] = (fn, d)

    def one_round(name) -> float:
        fn, d = built[name]
        t0 = time.perf_counter()
        jax.block_until_ready(fn(state, d, ri, jax.random.key(2)))
        return time.perf_counter() - t0

    got = timing.alternate({n: (lambda n=n: one_round(n)) for n in parts}, reps)
    rest = float(np.mean(got["rest"]))
    return {n: (rest if n == "rest" else float(np.mean(t)) - rest) for n, t in got.items()}


def measure(users: int, quick: bool, pairs: int, reps: int, threads: int) -> list[dict]:
    row = bench_torch.select_rows(quick, f"uldp_avg_{users}")[0]
    torch_python = bench_torch.resolve_torch_python(None)
    env = bench_torch.thread_env(threads)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        npz = str(Path(tmp) / "uldp.npz")
        bench_torch.prepare(row, Path(npz))
        for i in range(pairs):
            t0 = time.perf_counter()
            jx = jaxfl_parts(npz, reps)
            jx_s = time.perf_counter() - t0
            cmd = bench_torch.side_command("torch:vmap", "uldp_avg", npz, reps, threads,
                                           torch_python) + ["--profile"]
            th = bench_torch.run_side(cmd, env, timeout=3600)
            if "error" in th:
                raise SystemExit(f"torch side failed: {th['error']}")
            out.append({"pair": i, "jaxfl": jx, "torch": th["profile"],
                        "torch_round_s": th["seconds"], "jaxfl_process_s": round(jx_s, 1)})
    return out


def _steps(name: str) -> int:
    return int(name.split(" / ")[-1])


def to_markdown(rows: list[dict], info: dict) -> str:
    head = (f"{timing.describe(info)}, one thread a side, {info['users']} users, "
            f"{'3,000 records' if info['quick'] else 'full MNIST'}, {info['date']}, "
            f"load {info['load_avg_1m']} -> {info['load_after']}; mean over {len(rows)} "
            f"pair(s) of runs, {info['reps']} round(s) each.\n\n")
    lines = ["| side | part: pairs x padded records / pairs per chunk / sequential steps | "
             "s per round | ms per step | share of the round |", "|---|---|---|---|---|"]
    for side in ("jaxfl", "torch"):
        parts = {k: float(np.mean([r[side][k] for r in rows])) for k in rows[0][side]}
        total = sum(parts.values())
        order = [k for k in parts if k != "rest"] + ["rest"]
        for k in order:
            step = f"{1e3 * parts[k] / _steps(k):.2f}" if k != "rest" else "-"
            lines.append(f"| {side} | {k} | {parts[k]:.3g} | {step} | "
                         f"{100 * parts[k] / total:.0f}% |")
        lines.append(f"| {side} | **round (sum)** | **{total:.3g}** | - | 100% |")
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1000, choices=(100, 1000))
    ap.add_argument("--quick", action="store_true", help="bench_torch's --quick row")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2, help="timed rounds per part and side")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--render", metavar="JSON", help="print the table of a saved run and exit")
    a = ap.parse_args(argv)
    timing.render_or_run(a, "uldp_profile", to_markdown,
                         {"users": a.users, "quick": a.quick, "reps": a.reps,
                          "threads": a.threads},
                         lambda: measure(a.users, a.quick, a.pairs, a.reps, a.threads))


if __name__ == "__main__":
    host_devices.configure()
    main()
