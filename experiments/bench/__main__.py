"""`make bench`: runs every ``experiments/bench/bench_*.py`` and writes Markdown tables.

  python -m experiments.bench --out bench_results [--only engine,gossip]

Each benchmark module exposes ``main(out_dir) -> list[dict]``; rows are written to
``<out>/<name>.md`` and ``<out>/<name>.json`` and gathered in ``<out>/README.md`` with the
machine description.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import time
from pathlib import Path

from experiments.bench import timing

# Run by their own targets, not here: bench_torch (`make bench-torch`: a torch venv, real MNIST).
SEPARATE = ("bench_torch",)


def benchmarks(only: str = "") -> list[str]:
    """The modules ``make bench`` runs, in name order (``only``: comma-separated names without
    the ``bench_`` prefix).

    Raises:
      SystemExit: for a name in ``only`` that is not one of them.
    """
    import experiments.bench as pkg

    names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)
                   if m.name.startswith("bench_") and m.name not in SEPARATE)
    if not only:
        return names
    wanted = [f"bench_{n}" for n in only.split(",")]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        raise SystemExit(f"Unknown benchmarks {unknown}; expected some of "
                         f"{[n.removeprefix('bench_') for n in names]} (bench_torch: "
                         "make bench-torch).")
    return [n for n in names if n in wanted]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench_results")
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    names = benchmarks(args.only)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = [f"# jaxfl benchmarks\n\nMachine: {timing.describe()}\n"]
    for name in names:
        t0 = time.time()
        print(f"== {name}", flush=True)
        mod = importlib.import_module(f"experiments.bench.{name}")
        rows = mod.main(out)
        md = timing.table(rows)
        (out / f"{name}.md").write_text(md)
        (out / f"{name}.json").write_text(json.dumps(rows, indent=2, default=str))
        summary.append(f"## {name} ({time.time() - t0:.0f} s)\n\n{md}")
        print(md, flush=True)
    (out / "README.md").write_text("\n".join(summary))


if __name__ == "__main__":
    from experiments import host_devices

    host_devices.configure()  # before JAX starts: one host device per core
    main()
