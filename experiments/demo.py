"""`make demo`: DP-FedAvg on MNIST (or scikit-learn's digits when MNIST is absent).

Prints a per-round table (test accuracy, epsilon) and writes curves.png into the workdir.
"""

from __future__ import annotations

import argparse
import os

from experiments import builders
from experiments import config as config_lib
from experiments.plotting import curves
from jaxfl.data import sources


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", default="runs/demo")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args(argv)
    use_mnist = sources.available("mnist")
    arg = "dataset=mnist" if use_mnist else "dataset=digits"
    print(f"JAXFL_DATA_DIR={os.environ.get('JAXFL_DATA_DIR')!r}: "
          f"{'MNIST found' if use_mnist else 'MNIST not found, using scikit-learn digits'}")
    overrides = list(args.set)
    if not use_mnist:
        overrides += ["num_clients=20", "sampling_rate=0.5", "batch_size=16"]
    cfg = config_lib.load_config(f"experiments/configs/dp_fedavg/mnist.py:{arg}", overrides)
    summary = builders.run(cfg, args.workdir, progress=False)
    from jaxfl import metrics
    recs = metrics.read_jsonl(os.path.join(args.workdir, "metrics.jsonl"))
    print(f"\nDP-FedAvg on {cfg.dataset}: {cfg.num_clients} clients, q={cfg.sampling_rate}, "
          f"sigma={cfg.noise_multiplier}, C={cfg.clip_norm}, delta={cfg.delta}")
    print(f"{'round':>5} {'train_loss':>10} {'test_acc':>9} {'epsilon':>8}")
    for r in recs:
        print(f"{r['round']:>5} {r['train_loss']:>10.4f} {r['test_accuracy']:>9.4f} "
              f"{r['epsilon']:>8.3f}")
    print(f"final epsilon: RDP {summary['epsilon_rdp']:.3f}, PLD {summary['epsilon_pld']:.3f} "
          f"(delta={summary['delta']}, add/remove one client)")
    print(f"plot: {curves.plot_run(args.workdir)}")


if __name__ == "__main__":
    main()
