"""Start-up cost of the ULDP-AVG bench round in the accelerator's layout, measured on a CPU.

  JAXFL_DATA_DIR=... python -m experiments.bench.uldp_startup [--quick] [--budget 1e11]
      [--compile] [--per-bucket] [--profile 30] [--cache DIR] [--out run.json]

The jaxfl side of ``bench_torch``'s ``uldp_avg_1000`` row (``--quick``: 3,000 records, else
all of MNIST; ``--users 100`` for the other row) is built as on a GPU
(:func:`experiments.bench.proxies.build`: ``pair_data(..., backend="gpu")``, one vmap per length
bucket; the convolution of ``JAXFL_CONV_IMPL``, default ``patches``, the GPU default) and its
start is timed phase by phase, as the bench's jaxfl side runs it: loading the row's arrays,
building the algorithm and the pair layout, moving it to the device, tracing the round, lowering
it to StableHLO and (``--compile``) compiling it for the CPU. Counted: StableHLO ops of the
lowered round; instructions, fusions, dots and convolutions of the CPU-compiled one; and the
programs compiled (or loaded from the persistent cache) while tracing, which is where the
memory measurement of :func:`jaxfl.layout.fit` compiles. ``--budget`` sets
``JAXFL_DEVICE_MEMORY_BUDGET``: a GPU has a budget (75% of its free memory), a CPU none, so
without it the CPU skips what a GPU start does. ``--per-bucket`` repeats trace and lower (and
compile) for each length bucket alone; ``--profile N`` prints cProfile's top N of the trace.
``--cache DIR`` turns JAX's persistent compilation cache on there (run twice: the second
process is the cached start). See docs/scale.md, "Start-up of a ULDP round".
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import json
import os
import pstats
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _counts_lowered(text: str) -> dict:
    ops = re.findall(r"= \"?(stablehlo\.[a-z_]+)", text)
    return {"stablehlo_ops": len(ops),
            "stablehlo_dots": sum(o == "stablehlo.dot_general" for o in ops),
            "stablehlo_convolutions": sum(o == "stablehlo.convolution" for o in ops)}


def _counts_compiled(compiled) -> dict:
    from jaxfl import roofline

    text = compiled.as_text()
    instr = re.findall(r"^\s*(?:ROOT )?%?[\w.\-]+ = \S+ ([\w\-]+)\(", text, re.M)
    return {"hlo_instructions": len(instr), "fusions": roofline.fusion_count(compiled),
            "dots": sum(o == "dot" for o in instr),
            "convolutions": sum(o == "convolution" for o in instr)}


class _Compiles:
    """Programs compiled or loaded from the persistent cache while inside (JAX's events)."""

    def __enter__(self):
        import jax
        from jax._src import dispatch

        self.secs, self.hits = [], 0
        self._event = dispatch.BACKEND_COMPILE_EVENT

        def duration(event, secs, **kw):
            if event == self._event:
                self.secs.append(secs)

        def hit(event, **kw):
            if event == "/jax/compilation_cache/cache_hits":
                self.hits += 1

        self._listeners = (duration, hit)
        jax.monitoring.register_event_duration_secs_listener(duration)
        jax.monitoring.register_event_listener(hit)
        return self

    def __exit__(self, *exc):
        import jax

        jax.monitoring.unregister_event_duration_listener(self._listeners[0])
        jax.monitoring.unregister_event_listener(self._listeners[1])

    def asdict(self) -> dict:
        return {"programs": len(self.secs), "cache_hits": self.hits,
                "seconds": round(float(sum(self.secs)), 2)}


def _start(fn, args, *, compile_: bool, profile: int = 0) -> dict:
    """Trace, lower (and compile) ``fn`` at ``args``: seconds, counts, programs compiled."""
    out = {}
    prof = cProfile.Profile() if profile else None
    with _Compiles() as during_trace:
        t0, c0 = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        traced = fn.trace(*args)
        if prof:
            prof.disable()
        out["trace_s"] = round(time.perf_counter() - t0, 2)
        out["trace_cpu_s"] = round(time.process_time() - c0, 2)  # robust to other jobs
    out["compiled_while_tracing"] = during_trace.asdict()
    t0, c0 = time.perf_counter(), time.process_time()
    lowered = traced.lower()
    out["lower_s"] = round(time.perf_counter() - t0, 2)
    out["lower_cpu_s"] = round(time.process_time() - c0, 2)
    out.update(_counts_lowered(lowered.as_text()))
    if compile_:
        with _Compiles() as main:
            t0 = time.perf_counter()
            compiled = lowered.compile()
            out["compile_s"] = round(time.perf_counter() - t0, 2)
        out["compile"] = main.asdict()
        out.update(_counts_compiled(compiled))
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(profile)
        out["profile"] = s.getvalue()
    return out


def measure(quick: bool = False, users: int = 1000, *, compile_: bool = False,
            per_bucket: bool = False, profile: int = 0, npz: str | None = None) -> dict:
    """The phases of one start (module docstring); a dict of seconds and counts."""
    t_start = time.perf_counter()
    import jax

    from experiments.bench import bench_torch, proxies
    from jaxfl import layout

    res = {"conv_impl": layout.conv_impl(backend="gpu"),
           "budget": os.environ.get(layout.BUDGET_ENV), "size": "quick" if quick else "full",
           "users": users, "import_s": round(time.perf_counter() - t_start, 2)}
    row = next(r for r in bench_torch.rows(quick) if r.name == f"uldp_avg_{users}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(npz) if npz else Path(tmp) / "row.npz"
        t0 = time.perf_counter()
        if not path.exists():
            bench_torch.prepare(row, path)
        res["prepare_s"] = round(time.perf_counter() - t0, 2)  # the driver's, once per row
        t0 = time.perf_counter()
        z = np.load(path, allow_pickle=False)
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files if not k.startswith("param:") and k != "meta"}
        res["load_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    fn, args, extra = proxies.build("uldp_avg", arrays, meta, "accelerator")
    jax.block_until_ready(args)
    res["build_and_pack_s"] = round(time.perf_counter() - t0, 2)  # algorithm, pairs, device
    res["buckets"] = extra["buckets"]
    res["records_real"], res["records_padded"] = extra["records_real"], extra["records_padded"]
    res["round"] = _start(fn, args, compile_=compile_, profile=profile)
    if per_bucket:
        state, data, ri, key = args
        res["per_bucket"] = []
        for b in data.buckets:
            one = dataclasses.replace(data, buckets=(b,))
            got = _start(jax.jit(fn.__wrapped__ if hasattr(fn, "__wrapped__") else fn),
                         (state, one, ri, key), compile_=compile_)
            res["per_bucket"].append({"pairs": int(b.index.shape[0]),
                                      "length": int(b.index.shape[1]), **got})
    res["total_s"] = round(time.perf_counter() - t_start, 2)
    return res


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="bench_torch --quick size")
    ap.add_argument("--users", type=int, default=1000, choices=(100, 1000))
    ap.add_argument("--budget", default=None,
                    help="JAXFL_DEVICE_MEMORY_BUDGET in bytes (a GPU's start: e.g. 1e11)")
    ap.add_argument("--compile", action="store_true", help="also compile for the CPU")
    ap.add_argument("--per-bucket", action="store_true")
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    ap.add_argument("--cache", default=None, metavar="DIR",
                    help="JAX's persistent compilation cache in DIR")
    ap.add_argument("--npz", default=None, help="reuse (or write) the row's arrays here")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    os.environ.setdefault("JAXFL_CONV_IMPL", "patches")
    if a.budget:
        os.environ["JAXFL_DEVICE_MEMORY_BUDGET"] = str(int(float(a.budget)))
    if not os.environ.get("JAXFL_DATA_DIR"):
        raise SystemExit("Set JAXFL_DATA_DIR (the row reads real MNIST).")
    if a.cache:
        os.environ["JAXFL_COMPILATION_CACHE"] = a.cache
        from jaxfl import compilation_cache

        compilation_cache.setup()
    res = measure(a.quick, a.users, compile_=a.compile, per_bucket=a.per_bucket,
                  profile=a.profile, npz=a.npz)
    res["argv"] = list(sys.argv[1:] if argv is None else argv)
    prof = res["round"].pop("profile", None)
    text = json.dumps(res, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)
    if prof:
        print(prof)
    return res


if __name__ == "__main__":
    main()
