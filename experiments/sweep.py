"""Runs a config's sweep: ``get_sweep()`` points, vmapped where shapes agree, resumable.

  python -m experiments.sweep --config experiments/configs/dp_fedavg/mnist.py[:variant=smoke] \
      --workdir runs/dpfa_sweep [--set rounds=20] [--where seed=0,1] [--chunk-size 16] \
      [--mesh sweep=2,clients=4]
  python -m experiments.sweep ... --select geometric --select-mean 8 \
      --select-score test_accuracy --score-sensitivity 0.001 --score-noise-multiplier 2

With ``--select FAMILY`` the sweep is a private hyperparameter selection
(:mod:`jaxfl.selection`): the sweep's points are the grid; a random number of runs (law
``FAMILY`` with mean ``--select-mean``) each draw a grid point and a fresh seed, run as one
sweep, and the best ``--select-score`` is kept, with the epsilon of the whole procedure
(``<workdir>/selection.json``). The score is noised and accounted unless ``--score-public``
declares that it reads only public data. Without ``--select`` each point reports its own
epsilon, and choosing among them on private data costs more (``--public-split`` declares a
sweep on public data).

The config file (see :mod:`experiments.config`) provides ``get_config(arg)`` and
``get_sweep(arg)`` (a list of override dicts, dotted keys for nested fields; with
``variant=smoke`` a small sweep of at least two points). Each point's run is built by
:func:`jaxfl.builders.run_spec`, exactly as ``experiments.run`` builds a single run, and
reports its own accountant's epsilon. Rerunning the same command resumes: finished points are
skipped (and, with JAX's persistent compilation cache on by default, a rerun or a later
sweep of the same shapes loads its programs instead of compiling them:
``--no-compilation-cache``, :mod:`jaxfl.compilation_cache`). Results:
``<workdir>/results.csv`` (one row per point and logged round, with the headline
``epsilon`` column) and ``<workdir>/points/<id>/`` (a single-run workdir per point).

Multi-host: start the same command on every host with ``--coordinator HOST:PORT
--num-processes N --process-id I`` (or under SLURM / on a TPU pod with ``--distributed``);
see docs/multihost.md.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys

from experiments import config as config_cli
from experiments import host_devices
from jaxfl import builders, compilation_cache, metrics, sharding, sweep, validate
from jaxfl import selection as selection_lib


def select(points: list, where: list[str]) -> list:
    """The points whose config matches every ``KEY=V1,V2,...`` of ``where`` (values compared as
    text with the point's flattened config, e.g. ``method=ULDP-AVG,ULDP-SGD`` or ``seed=0,1``).

    Raises:
      ValueError: on a clause without ``=``, a key no point has, or a selection of no point.
    """
    if not where:
        return points
    flat = [{k: str(v) for k, v in sweep._flatten(metrics.jsonable(p.config)).items()}
            for p in points]
    keep = list(range(len(points)))
    for clause in where:
        if "=" not in clause:
            raise ValueError(f"Expected --where KEY=V1,V2,..., got {clause!r}.")
        key, _, values = clause.partition("=")
        if not any(key in f for f in flat):
            raise ValueError(f"--where names {key!r}, which is not a config field.")
        wanted = set(values.split(","))
        keep = [i for i in keep if flat[i].get(key) in wanted]
    if not keep:
        raise ValueError(f"--where {where} selects none of the {len(points)} points.")
    return [points[i] for i in keep]


def _call_optional_arg(fn, arg):
    return fn(arg) if inspect.signature(fn).parameters else fn()


def parse_mesh(text: str | None):
    """``"sweep=2,clients=4"`` -> a :func:`jaxfl.sharding.make_mesh` mesh (None if empty)."""
    if not text:
        return None
    sizes = config_cli.key_values(text, what="--mesh")
    return sharding.make_mesh(sweep=int(sizes.get("sweep", 1)),
                              clients=int(sizes["clients"]) if "clients" in sizes else None)


def _selection(ap, args):
    """The ``--select*`` options as a :class:`jaxfl.selection.Selection` (None without
    ``--select``); a bad combination is an argparse error before any work."""
    if args.select is None:
        extra = [o for o, v in (("--select-mean", args.select_mean),
                                ("--select-score", args.select_score)) if v is not None]
        if extra:
            ap.error(f"{', '.join(extra)} need --select FAMILY")
        return None
    if args.select_mean is None or args.select_score is None:
        ap.error("--select needs --select-mean and --select-score")
    try:
        return selection_lib.Selection(
            args.select, args.select_mean, args.select_score, seed=args.select_seed,
            shape=args.select_shape, maximize=not args.select_minimize,
            score_data="public" if args.score_public else "private",
            score_sensitivity=args.score_sensitivity,
            score_noise_multiplier=args.score_noise_multiplier)
    except validate.JaxflValueError as e:
        ap.error(str(e))


def main(argv=None) -> sweep.SweepResult | list:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="path/to/config.py[:arg]")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                    help="base config overrides: --set a=1 b=2, repeatable")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=V1,V2",
                    help="run only the points whose config has one of these values (repeatable)")
    ap.add_argument("--chunk-size", type=int, default=None, help="max points per vmapped run")
    ap.add_argument("--sequential", action="store_true", help="no vmap: one run per point")
    ap.add_argument("--mesh", default=None, help="e.g. sweep=2,clients=4 (default: no mesh)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    ap.add_argument("--coordinator", default=None, help="multi-host coordinator HOST:PORT")
    ap.add_argument("--num-processes", type=int, default=None)
    ap.add_argument("--process-id", type=int, default=None)
    ap.add_argument("--distributed", action="store_true",
                    help="multi-host from the environment (SLURM, TPU pod, JAXFL_* variables)")
    ap.add_argument("--allow-change", action="store_true",
                    help="resume points whose seed, data, config or noise changed, charging "
                         "the rounds they already released (default: refuse)")
    ap.add_argument("--max-epsilon", type=float, default=None,
                    help="hard privacy budget per point at its delta: stop before exceeding it")
    # private selection (issue 40, jaxfl.selection)
    ap.add_argument("--select", default=None, choices=sorted(selection_lib.FAMILIES),
                    help="private selection: law of the number of runs")
    ap.add_argument("--select-mean", type=float, default=None, help="mean number of runs")
    ap.add_argument("--select-shape", type=float, default=None,
                    help="shape of the negative_binomial law, in (0, inf)")
    ap.add_argument("--select-score", default=None,
                    help="final metric to select on (e.g. test_accuracy)")
    ap.add_argument("--select-seed", type=int, default=0, help="seed of the selection's draws")
    ap.add_argument("--select-minimize", action="store_true", help="select the smallest score")
    ap.add_argument("--score-public", action="store_true",
                    help="the score reads only public data (not noised)")
    ap.add_argument("--score-sensitivity", type=float, default=None,
                    help="how far one protected unit moves the score (private score)")
    ap.add_argument("--score-noise-multiplier", type=float, default=None,
                    help="score noise std / sensitivity (private score)")
    ap.add_argument("--public-split", action="store_true",
                    help="declare that the sweep trains and compares on public data")
    compilation_cache.add_argument(ap)
    args = config_cli.parse_args(ap, argv)  # --help --config X lists X's fields
    compilation_cache.setup(args.no_compilation_cache)  # before the first compilation
    chosen = _selection(ap, args)
    if args.coordinator or args.distributed:
        sharding.initialize(coordinator_address=args.coordinator,
                            num_processes=args.num_processes, process_id=args.process_id)
    path, _, arg = args.config.partition(":")
    module = config_cli.load_module(path)
    base = config_cli.apply_overrides(module.get_config(arg or None), list(args.set))
    points = select(sweep.expand(base, list(_call_optional_arg(module.get_sweep, arg or None))),
                    args.where)
    build = builders.run_spec
    if args.dry_run:
        groups = sweep.plan(points, build) if not args.sequential else [[p] for p in points]
        plan = [[{"index": p.index, "id": p.id, "overrides": p.overrides,
                  "finished": sweep.is_finished(args.workdir, p)} for p in g] for g in groups]
        print(json.dumps(plan, indent=1, default=str))
        return plan
    res = sweep.run_sweep(points, build, args.workdir, chunk_size=args.chunk_size,
                          vmap=not args.sequential, mesh=parse_mesh(args.mesh),
                          allow_change=args.allow_change, max_epsilon=args.max_epsilon,
                          selection=chosen, public_split=args.public_split)
    if sharding.is_main_process():
        ran_points = res.selection.points if res.selection is not None else points
        print(f"{len(res.finished)}/{len(ran_points)} points finished; ran {len(res.ran)}; "
              f"table: {res.table}", file=sys.stderr)
        print(f"note: {res.note}", file=sys.stderr)
        if res.selection is not None and res.selection.selected_point is not None:
            print(f"selected: {res.selection.selected_point.overrides} (score "
                  f"{res.selection.selected_score:.6g}); {args.workdir}/selection.json",
                  file=sys.stderr)
    sharding.shutdown()
    return res


if __name__ == "__main__":
    host_devices.configure()  # before JAX starts: one host device per core
    main()
