"""LightDP-FL on Fashion-MNIST with the small CNN of ``mnist_cnn.py`` (CPU-scaled reproduction).

Same scaling as ``mnist_cnn.py`` (N = 50, 64 examples per client in 5 shards, 14x14 images,
T = 20, d = 3,578); Fashion-MNIST is harder, so accuracies sit lower, closer to the paper's
CIFAR-10 range.

Command (every run of the reproduction, one seed each; the reproduction entry point
``python -m experiments.reproduce lightdp`` runs and reports the MNIST setting):
  python -m experiments.sweep --config experiments/configs/lightdp/fashion_mnist_cnn.py \
      --workdir runs/lightdp_fmnist
Expected runtime: as mnist_cnn (~15-25 min on 2 cores).
Variant ``smoke``: 10 clients x 32 examples, 2 rounds (seconds); its sweep runs two seeds:
  python -m experiments.sweep \
      --config experiments/configs/lightdp/fashion_mnist_cnn.py:variant=smoke --workdir D
Needs the Fashion-MNIST IDX files ($JAXFL_DATA_DIR/fashion_mnist or Debian's
dataset-fashion-mnist package); without them the loader stops with an error naming them.
"""

import dataclasses

from experiments.configs.lightdp import _common, mnist_cnn

CPU = dataclasses.replace(mnist_cnn.CPU, name="fashion_mnist_cnn", dataset="fashion_mnist")
SMOKE = dataclasses.replace(mnist_cnn.SMOKE, name="fashion_mnist_cnn", dataset="fashion_mnist")
VARIANTS = {"cpu": CPU, "smoke": SMOKE}


def get_config(arg: str | None = None) -> _common.LightDPConfig:
    return _common.get_config_from(VARIANTS, arg, "cpu")


def get_sweep(arg: str | None = None) -> list[dict]:
    """Smoke: two seeds. Otherwise Tables II and III, Fig. 3 and Fig. 4 (duplicates removed)."""
    return _common.sweep_for(VARIANTS, arg, "cpu")
