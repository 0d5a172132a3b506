"""LightDP-FL on CIFAR-10 with ResNet-18 (GroupNorm): the paper's full-scale setting.

Command (GPU host; CIFAR-10 python pickles under $JAXFL_DATA_DIR/cifar-10-batches-py):
  python -m experiments.reproduce lightdp --scale full --workdir runs/lightdp_full
  one run: python -m experiments.run \
      --config experiments/configs/lightdp/cifar10_resnet18.py:epsilon=9,max_colluders=10 \
      --workdir runs/x
Expected runtime: one round ~ one CIFAR-10 epoch of ResNet-18 (50 x 1000 images) plus
N * S_bar * d ~ 5.6e9 pairwise draws; 150 rounds per run, 32 runs for Tables II/III + Figs. 3/4.
Paper (Table II, S_bar = 10, C_bar = 10): 50.8 / 54.5 / 61.9 % at eps = 3 / 6 / 9.
Variant ``smoke``: 6 clients x 16 images, a width-8 one-block ResNet, 2 rounds (seconds on CPU);
its sweep (two seeds) needs the CIFAR-10 pickles too: without them the loader stops with an
error naming the missing ``data_batch_*`` files and where it searched.

GPU estimate (``experiments.bench.flops``): ResNet-18 (GroupNorm), 2.9e9 training FLOPs per
32x32 image (3 x forward), 150 rounds x 50 clients x 1000 images = 7.5e6 examples, 2.2e16 FLOPs:
~1.6 h per run at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s) (32 runs: ~50 h), plus the
pairwise noise draws.
"""

import dataclasses

from experiments.configs.lightdp import _common

FULL = _common.LightDPConfig(
    name="cifar10_resnet18", dataset="cifar10", model="resnet18_gn",
    model_kwargs=(("num_classes", 10), ("input_shape", (32, 32, 3))),
    num_clients=50, examples_per_client=1000, rounds=150, local_epochs=1, batch_size=32,
    client_lr=0.05, clip_norm=1.0, max_colluders=10, max_stragglers=10)

SMOKE = dataclasses.replace(
    FULL, variant="smoke", num_clients=6, examples_per_client=16, batch_size=8, rounds=2,
    test_examples=64, max_colluders=1, max_stragglers=2,
    model_kwargs=(("num_classes", 10), ("input_shape", (32, 32, 3)), ("width", 8),
                  ("blocks", (1, 1, 1, 1))))


VARIANTS = {"full": FULL, "smoke": SMOKE}


def get_config(arg: str | None = None) -> _common.LightDPConfig:
    return _common.get_config_from(VARIANTS, arg, "full")


def get_sweep(arg: str | None = None) -> list[dict]:
    """Smoke: two seeds. Otherwise Tables II and III, Fig. 3 and Fig. 4 (duplicates removed)."""
    return _common.sweep_for(VARIANTS, arg, "full")
