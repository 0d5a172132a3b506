"""Runs one experiment config.

  python -m experiments.run --config experiments/configs/dp_fedavg/mnist.py[:variant=smoke] \
      --set rounds=5 --set noise_multiplier=1.3 --workdir runs/x

The config is data; :func:`experiments.builders.run_spec` turns it into a run (algorithm with
its accountant, data, eval) and the engine writes ``config.json``, ``metrics.jsonl`` (headline
epsilon per logged round), checkpoints and ``summary.json`` (the full privacy report) into the
workdir; rerunning the same command resumes a killed run. Compiled programs are kept in JAX's
persistent compilation cache (``~/.cache/jaxfl/xla``; ``--no-compilation-cache`` or
``JAXFL_COMPILATION_CACHE=0`` turns it off, :mod:`jaxfl.compilation_cache`).
"""

from __future__ import annotations

import argparse
import json

from experiments import builders, host_devices
from experiments import config as config_lib
from jaxfl import compilation_cache


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="path.py or path.py:key=value,...")
    parser.add_argument("--set", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="override config fields: --set a=1 b=2, repeatable; nested a.b=v; "
                             "--help with --config lists the fields")
    parser.add_argument("--workdir", required=True)
    compilation_cache.add_argument(parser)
    args = config_lib.parse_args(parser, argv)
    compilation_cache.setup(args.no_compilation_cache)  # before the first compilation
    cfg = config_lib.load_config(args.config, args.set)
    summary = builders.run(cfg, args.workdir)
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
