"""Runs one experiment config.

  python -m experiments.run --config experiments/configs/dp_fedavg/mnist.py[:variant=smoke] \
      --set rounds=5 --set noise_multiplier=1.3 --workdir runs/x

The config is data; :func:`jaxfl.builders.run_spec` turns it into a run (algorithm with
its accountant, data, eval) and the engine writes ``config.json``, ``metrics.jsonl`` (headline
epsilon per logged round), checkpoints and ``summary.json`` (the full privacy report) into the
workdir; rerunning the same command resumes a killed run. A rerun that changes the seed, the
data, the config or the mechanism is refused (``ledger.json`` in the workdir records what was
spent); ``--allow-change`` charges the rounds already released and composes them with the new
ones. ``--max-epsilon`` stops the run before the round that would exceed that budget.
Compiled programs are kept in JAX's persistent compilation cache (``~/.cache/jaxfl/xla``;
``--no-compilation-cache`` or ``JAXFL_COMPILATION_CACHE=0`` turns it off,
:mod:`jaxfl.compilation_cache`).
"""

from __future__ import annotations

import argparse
import json

from experiments import config as config_lib
from experiments import host_devices
from jaxfl import builders, compilation_cache


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="path.py or path.py:key=value,...")
    parser.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="override config fields: --set a=1 b=2, repeatable; nested a.b=v; "
                             "--help with --config lists the fields")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--allow-change", action="store_true",
                        help="resume a workdir whose seed, data, config or noise changed, "
                             "charging the rounds it already released (default: refuse)")
    parser.add_argument("--max-epsilon", type=float, default=None,
                        help="hard privacy budget at the config's delta: the run stops before "
                             "the round that would exceed it")
    compilation_cache.add_argument(parser)
    args = config_lib.parse_args(parser, argv)
    compilation_cache.setup(args.no_compilation_cache)  # before the first compilation
    if not args.workdir.strip():
        parser.error("--workdir must not be empty (it would write into the current directory)")
    cfg = config_lib.load_config(args.config, args.set)
    summary = builders.run(cfg, args.workdir, allow_change=args.allow_change,
                           max_epsilon=args.max_epsilon)
    print(json.dumps({k: v for k, v in summary.items()
                      if k not in ("dp_event", "privacy", "privacy_paper", "privacy_strict")},
                     indent=2, default=str))
    for key in ("privacy", "privacy_paper", "privacy_strict"):
        if key in summary:
            r = summary[key]
            print(f"{key}: epsilon={r['epsilon']} at delta={r['delta']} per {r['unit']} "
                  f"({r['accountant']}, mode={r['mode']}, sound={r['sound']})")
    return summary


if __name__ == "__main__":
    host_devices.configure()  # before JAX starts: one host device per core
    main()
