"""Runs a config's sweep: ``get_sweep()`` points, vmapped where shapes agree, resumable.

  python -m experiments.sweep --config experiments/configs/<paper>/<setting>.py[:arg] \\
      --workdir runs/<name> [--set key=value ...] [--chunk-size 16] [--mesh sweep=2,clients=4]

The config module provides ``get_config(arg)`` (a frozen dataclass) and ``get_sweep()`` (a
list of override dicts, dotted keys for nested fields), and a builder ``config -> RunSpec``
(:class:`jaxfl.sweep.RunSpec`, or a dict of :func:`jaxfl.training.run` arguments with
``algorithm`` and ``data``): the module's own ``build`` if it defines one, else
``experiments.run.build``. Rerunning the same command resumes: finished points are skipped.
Results: ``<workdir>/results.csv`` (one row per point and logged round) and
``<workdir>/points/<id>/`` (a single-run workdir per point).

Multi-host: start the same command on every host with ``--coordinator HOST:PORT
--num-processes N --process-id I`` (or under SLURM / on a TPU pod with ``--distributed``);
see docs/multihost.md.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import json
import sys
from pathlib import Path

from jaxfl import sharding, sweep


def load_config_module(spec: str):
    """Imports ``path.py`` of ``path.py[:arg]``; returns (module, arg or None)."""
    path, _, arg = spec.partition(":")
    mod_spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    if mod_spec is None or not Path(path).exists():
        raise SystemExit(f"config file not found: {path}")
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module, (arg or None)


def _call_optional_arg(fn, arg):
    return fn(arg) if inspect.signature(fn).parameters else fn()


def parse_sets(items) -> dict:
    """``["a.b=1", "name=foo"]`` -> ``{"a.b": 1, "name": "foo"}`` (Python literals or strings)."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def as_builder(module):
    """The ``config -> RunSpec`` builder of a config module (see module docstring)."""
    build = getattr(module, "build", None)
    if build is None:
        from experiments import run as run_module
        build = getattr(run_module, "build", None) or getattr(run_module, "build_run")

    def builder(config):
        built = build(config)
        if isinstance(built, sweep.RunSpec):
            return built
        return sweep.RunSpec(**{"config": config, **dict(built)})

    return builder


def parse_mesh(text: str | None):
    if not text:
        return None
    sizes = dict(part.split("=") for part in text.split(","))
    return sharding.make_mesh(sweep=int(sizes.get("sweep", 1)),
                              clients=int(sizes["clients"]) if "clients" in sizes else None)


def main(argv=None) -> sweep.SweepResult | list:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="path/to/config.py[:arg]")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--set", action="append", default=[], help="base config override k=v")
    ap.add_argument("--chunk-size", type=int, default=None, help="max points per vmapped run")
    ap.add_argument("--sequential", action="store_true", help="no vmap: one run per point")
    ap.add_argument("--mesh", default=None, help="e.g. sweep=2,clients=4 (default: no mesh)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    ap.add_argument("--coordinator", default=None, help="multi-host coordinator HOST:PORT")
    ap.add_argument("--num-processes", type=int, default=None)
    ap.add_argument("--process-id", type=int, default=None)
    ap.add_argument("--distributed", action="store_true",
                    help="multi-host from the environment (SLURM, TPU pod, JAXFL_* variables)")
    args = ap.parse_args(argv)
    if args.coordinator or args.distributed:
        sharding.initialize(coordinator_address=args.coordinator,
                            num_processes=args.num_processes, process_id=args.process_id)
    module, arg = load_config_module(args.config)
    base = sweep.with_overrides(_call_optional_arg(module.get_config, arg), parse_sets(args.set))
    points = sweep.expand(base, list(_call_optional_arg(module.get_sweep, arg)))
    build = as_builder(module)
    if args.dry_run:
        groups = sweep.plan(points, build) if not args.sequential else [[p] for p in points]
        plan = [[{"index": p.index, "id": p.id, "overrides": p.overrides,
                  "finished": sweep.is_finished(args.workdir, p)} for p in g] for g in groups]
        print(json.dumps(plan, indent=1, default=str))
        return plan
    res = sweep.run_sweep(points, build, args.workdir, chunk_size=args.chunk_size,
                          vmap=not args.sequential, mesh=parse_mesh(args.mesh))
    if sharding.is_main_process():
        print(f"{len(res.finished)}/{len(points)} points finished; ran {len(res.ran)}; "
              f"table: {res.table}", file=sys.stderr)
    sharding.shutdown()
    return res


if __name__ == "__main__":
    main()
