"""DP-FedAvg (user-level) on MNIST, 1000 clients with Dirichlet(0.5) label skew.

  python -m experiments.run --config experiments/configs/dp_fedavg/mnist.py --workdir runs/dpfa
  python -m experiments.run --config experiments/configs/dp_fedavg/mnist.py:variant=smoke \
      --workdir /tmp/smoke

Full: logistic regression, q=0.1 (about 100 clients a round), sigma=1.0, C=0.5, 5 local steps of
batch 32 at lr 0.2, 50 rounds: about 1 min on 2 CPU cores; test accuracy 0.89 at epsilon 5.15
(PLD; RDP 5.89), delta=1e-5, add/remove one client.
Smoke: 3 rounds on 2,000 examples, seconds.

GPU estimate (``experiments.bench.flops``): logistic regression, 4.7e4 training FLOPs per
example (3 x forward), 50 rounds x ~100 clients x 5 steps x 32 = 8.0e5 examples, 3.8e10 FLOPs: 0.01
s at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s); a run is bound by host work and
accounting, not FLOPs.
"""

from experiments import config as config_lib
from experiments.configs.fl import FLConfig

VARIANTS = ("full", "smoke")


def get_config(arg=None) -> FLConfig:
    a = config_lib.parse_arg(arg, variant="full", dataset="mnist", model="logreg",
                             variants=VARIANTS)
    cfg = FLConfig(name="dp_fedavg_mnist", dataset=a["dataset"], model=a["model"],
                   variant=a["variant"])
    if a["variant"] == "smoke":
        cfg = config_lib.apply_overrides(cfg, {"rounds": 3, "num_clients": 20,
                                               "max_train_examples": 2000, "local_steps": 2,
                                               "sampling_rate": 0.5, "checkpoint_every": 2})
    return cfg


def get_sweep(arg=None):
    """Noise multipliers x seeds (smoke: two points that share one vmapped computation)."""
    if config_lib.parse_arg(arg, extra_keys=("dataset", "model"), variant="full",
                            variants=VARIANTS)["variant"] == "smoke":
        return [{"noise_multiplier": 1.0, "seed": 0}, {"noise_multiplier": 2.0, "seed": 1}]
    return [{"noise_multiplier": s, "seed": seed} for s in (0.5, 1.0, 2.0) for seed in (0, 1)]
