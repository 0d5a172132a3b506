"""ULDP-AVG pair chunks on CPU: the engine's layout (``pair_chunk`` unset: chunks of 2 pairs
for conv-sized models on one device) against larger caps of pairs per chunk, on the same
pairs, in one process: each layout compiled first, then rounds alternating between them.

  python -m experiments.bench.pair_chunks [--users 1000] [--full] [--caps auto,8,32,128]
      [--rounds 4] [--out DIR]
  python -m experiments.bench.pair_chunks --render docs/scale/pair_chunks_<...>.json

Default: bench_torch's ``--quick`` ULDP-AVG row (MNIST, 3,000 records, 1000 users over 5
silos: 2,246 pairs of 1-3 records, the ULDP CNN, Q = 2, B = 64). The first round of each
layout is left out of its median (it warms caches).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time

import numpy as np

from experiments import host_devices
from experiments.bench import timing


def measure(users: int, full: bool, caps: list, rounds: int) -> list[dict]:
    import jax

    from experiments.bench import bench_torch
    from experiments.papers import uldp as uldp_paper

    cfg = bench_torch._uldp_config(users, None if full else 3000)
    task = uldp_paper.task(cfg)
    model = task.model
    params = model.init(jax.random.key(0))
    built = {}
    for cap in caps:
        c = dataclasses.replace(cfg, pair_chunk=None if cap == "auto" else cap)
        alg, data, _ = uldp_paper.algorithm_and_data(c, task, model)
        layout = [[int(b.index.shape[0]), int(b.index.shape[1]), int(b.chunk), int(b.shards)]
                  for b in data.buckets]
        data, state = data.to_device(), alg.init(params)
        ri = alg.prepare(0, np.random.default_rng(0))
        t0 = time.perf_counter()
        fn = jax.jit(alg.apply).lower(state, data, ri, jax.random.key(1)).compile()
        built[cap] = (fn, state, data, ri, layout, time.perf_counter() - t0)
    rounds_done = {cap: 0 for cap in caps}

    def one_round(cap) -> float:
        fn, state, data, ri, *_ = built[cap]
        t0 = time.perf_counter()
        jax.block_until_ready(fn(state, data, ri, jax.random.key(rounds_done[cap])))
        rounds_done[cap] += 1
        return time.perf_counter() - t0

    got = timing.alternate({str(cap): functools.partial(one_round, cap) for cap in caps}, rounds)
    times = {cap: got[str(cap)] for cap in caps}
    return [{"cap": str(cap), "buckets [pairs, length, chunk, shards]": built[cap][4],
             "compile_s": round(built[cap][5], 2), "round_s": [round(t, 4) for t in times[cap]],
             "median_s": round(float(np.median(times[cap][1:] or times[cap])), 4)}
            for cap in caps]


def to_markdown(rows: list[dict], info: dict) -> str:
    head = (f"{timing.describe(info)}, {info['users']} users, "
            f"{'full MNIST' if info['full'] else '3,000 records'}, {info['date']}, "
            f"load {info['load_avg_1m']} -> {info['load_after']}.\n\n")
    lines = ["| pairs per chunk (cap) | buckets: pairs x length, chunk | compile s | "
             "median round s | rounds s |", "|---|---|---|---|---|"]
    for r in rows:
        b = ", ".join(f"{p}x{n} / {c}"
                      for p, n, c, _ in r["buckets [pairs, length, chunk, shards]"])
        cap = "engine (auto)" if r["cap"] == "auto" else r["cap"]
        lines.append(f"| {cap} | {b} | {r['compile_s']:.1f} | **{r['median_s']:.3g}** | "
                     + ", ".join(f"{t:.2f}" for t in r["round_s"]) + " |")
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--full", action="store_true", help="all of MNIST, not 3,000 records")
    ap.add_argument("--caps", default="auto,8,32,128")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out")
    ap.add_argument("--render", metavar="JSON", help="print the table of a saved run and exit")
    a = ap.parse_args(argv)
    caps = [c if c == "auto" else int(c) for c in a.caps.split(",")]
    timing.render_or_run(a, "pair_chunks", to_markdown,
                         {"users": a.users, "full": a.full, "rounds": a.rounds},
                         lambda: measure(a.users, a.full, caps, a.rounds))


if __name__ == "__main__":
    host_devices.configure()
    main()
