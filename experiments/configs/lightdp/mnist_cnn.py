"""LightDP-FL on MNIST with a small CNN: the CPU-scaled reproduction of Tables II/III, Fig. 3/4.

CIFAR-10 is not available on this machine, so the reproduction runs here, scaled so that all
32 runs fit on 2 CPU cores: N = 50 clients as in the paper (C_bar and S_bar keep their
meaning), 200 examples per client in 2 label shards, 1 local epoch of batch 32 (6 steps),
lr 0.05, T = 20 rounds, a 2-conv CNN (fedavg_cnn layout, channels 8/16, dense 32; d = 27,114).

Command:
  python -m experiments.reproduce.lightdp --scale cpu --workdir runs/lightdp_cpu
Expected runtime: ~15-25 min on 2 cores for the whole reproduction (one seed).
Headline (this machine): see docs/reproduction/lightdp.md.
Variant ``smoke``: 6 clients x 32 examples, 2 rounds (seconds).
"""

from experiments.configs.lightdp import common

CPU = common.LightDPConfig(
    name="mnist_cnn", dataset="mnist", model="fedavg_cnn", image_pool=2,
    model_kwargs=(("num_classes", 10), ("input_shape", (14, 14, 1)), ("features", (4, 8)),
                  ("hidden", (32,))),
    num_clients=50, examples_per_client=64, test_examples=1000, rounds=15, local_epochs=1,
    batch_size=32, client_lr=0.05, clip_norm=1.0, max_colluders=10, max_stragglers=10,
    eval_every=1, client_map="map", variant="cpu")

SMOKE = CPU.replace(variant="smoke", num_clients=10, examples_per_client=32, batch_size=16,
                    rounds=2, test_examples=200, max_colluders=2, max_stragglers=2)


def get_config(arg: str | None = None) -> common.LightDPConfig:
    overrides = common.parse_arg(arg)
    variant = overrides.pop("variant", "cpu")
    base = {"cpu": CPU, "smoke": SMOKE}[variant]
    return common.apply_overrides(base, overrides)


def get_sweep() -> list[dict]:
    """Tables II and III, Fig. 3 and Fig. 4 (duplicates removed)."""
    return common.unique_sweep()
