"""LightDP-FL on Fashion-MNIST with the small CNN of ``mnist_cnn.py`` (CPU-scaled reproduction).

Same scaling as ``mnist_cnn.py`` (N = 50, 64 examples per client in 5 shards, 14x14 images,
T = 20, d = 3,578); Fashion-MNIST is harder, so accuracies sit lower, closer to the paper's
CIFAR-10 range.

Command:
  python -m experiments.reproduce.lightdp --scale cpu --dataset fashion_mnist \
      --workdir runs/lightdp_fmnist
Expected runtime: as mnist_cnn (~15-25 min on 2 cores).
Variant ``smoke``: 6 clients x 32 examples, 2 rounds (seconds).
"""

from experiments.configs.lightdp import common, mnist_cnn

CPU = mnist_cnn.CPU.replace(name="fashion_mnist_cnn", dataset="fashion_mnist")
SMOKE = mnist_cnn.SMOKE.replace(name="fashion_mnist_cnn", dataset="fashion_mnist")


def get_config(arg: str | None = None) -> common.LightDPConfig:
    return common.get_config_from({"cpu": CPU, "smoke": SMOKE}, arg, "cpu")


def get_sweep() -> list[dict]:
    """Tables II and III, Fig. 3 and Fig. 4 (duplicates removed)."""
    return common.unique_sweep()
