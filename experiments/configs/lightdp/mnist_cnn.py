"""LightDP-FL on MNIST with a small CNN: the CPU-scaled reproduction of Tables II/III, Fig. 3/4.

CIFAR-10 is not available on this machine, so the reproduction runs here, scaled to 2 CPU
cores: N = 50 clients as in the paper (so C_bar and S_bar keep their meaning), 64 examples
per client dealt as 5 label-sorted shards (non-IID; 2 shards of 32 trained too slowly to
separate the schemes in 20 rounds), images average-pooled to 14x14, a 2-conv CNN
(fedavg_cnn layout, channels 4/8, dense 32; d = 3,578), E = 2 local epochs of batch 32
(4 steps), lr 0.1, T = 20 rounds, W = 0.5 (about the median update norm; W = 1 never clips
and doubles the noise), delta = 1e-5, sqrt(T) composition, strict mode.

Command:
  python -m experiments.reproduce lightdp --scale cpu --workdir runs/lightdp_cpu
  one run: python -m experiments.run --config experiments/configs/lightdp/mnist_cnn.py:epsilon=6 \
      --workdir runs/x
  smoke sweep (two seeds, vmapped): python -m experiments.sweep \
      --config experiments/configs/lightdp/mnist_cnn.py:variant=smoke --workdir runs/s
Expected runtime: Tables II/III over 5 seeds (figures table2, table3: 120 runs, the seeds of a
cell vmapped together): 55 min wall on 2 heavily shared cores (measured 2026-11-28, nice 15,
load 7-12); Figs. 3/4 (29 runs, three paired seeds for Fig. 3): about 22 min (estimated from
the first run, 50 runs in 38 min).
Headline (this machine): see docs/reproduction/lightdp.md. Without noise (eps = 50) the model
reaches ~84% in 20 rounds; LDP / LightDP-FL reach ~75% / ~77% at eps = 3.
Variant ``smoke``: 10 clients x 32 examples, 2 rounds (seconds).
"""

import dataclasses

from experiments.configs.lightdp import _common

CPU = _common.LightDPConfig(
    name="mnist_cnn", dataset="mnist", model="fedavg_cnn", image_pool=2,
    model_kwargs=(("num_classes", 10), ("input_shape", (14, 14, 1)), ("features", (4, 8)),
                  ("hidden", (32,))),
    num_clients=50, examples_per_client=64, shards_per_client=5, test_examples=1000,
    rounds=20, local_epochs=2, batch_size=32, client_lr=0.1, clip_norm=0.5, max_colluders=10,
    max_stragglers=10, eval_every=1, variant="cpu")

SMOKE = dataclasses.replace(CPU, variant="smoke", num_clients=10, examples_per_client=32,
                            batch_size=16, rounds=2, test_examples=200, max_colluders=2,
                            max_stragglers=2)
VARIANTS = {"cpu": CPU, "smoke": SMOKE}


def get_config(arg: str | None = None) -> _common.LightDPConfig:
    return _common.get_config_from(VARIANTS, arg, "cpu")


def get_sweep(arg: str | None = None) -> list[dict]:
    """Smoke: two seeds. Otherwise Tables II and III, Fig. 3 and Fig. 4 (duplicates removed)."""
    return _common.sweep_for(VARIANTS, arg, "cpu")
