"""Training FLOPs of the full-scale configs and the expected time per run on one GPU.

  python -m experiments.bench.flops

FLOPs of one example's forward pass come from XLA's cost analysis of the jitted
``model.apply`` (batch of 1); a training example costs 3x its forward pass (forward + backward).
Time = FLOPs per example x examples processed per run / sustained throughput, the throughput
assumed to be 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s). Privacy accounting, noise
generation, evaluation and host work are not counted: for the small models of most configs
they dominate, and the estimate is a lower bound. The numbers are quoted in each config's
docstring.
"""

from __future__ import annotations

import jax

PEAK = 19.5e12  # A100 fp32, FLOP/s
UTILIZATION = 0.2


def flops(fn, *args) -> float:
    """XLA's FLOP count of ``fn(*args)``, compiled for the CPU: XLA:GPU reports -1 for
    programs whose kernels are library calls (cuBLAS, cuDNN), measured on an H200 with jax
    0.11.2, and the count is a property of the program, not of the device it runs on."""
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        args = jax.device_put(args, cpu)
        cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost["flops"])


def train_flops_per_example(model, input_shape) -> float:
    """3 x the forward FLOPs of one example of ``input_shape`` through ``model``."""
    from jaxfl import models

    if tuple(input_shape) != tuple(model.input_shape):
        raise ValueError(f"Expected input_shape={tuple(model.input_shape)} (the model's), got "
                         f"{tuple(input_shape)}.")
    return 3.0 * models.forward_flops(model, compiled=True)


def gpu_seconds(total_flops: float) -> float:
    return total_flops / (PEAK * UTILIZATION)


def _rows():
    """(config, model name, model kwargs, input shape, examples per run, how)."""
    mnist = (28, 28, 1)
    return [
        ("dp_fedavg/mnist", "logreg", {"input_shape": mnist}, mnist, 50 * 100 * 5 * 32,
         "50 rounds x ~100 clients x 5 steps x batch 32"),
        ("gossip/fig3_mnist", "logreg", {"input_shape": mnist}, mnist, 50 * 100 * 600,
         "50 rounds x 100 nodes x 600 (full batch), per point"),
        ("dp_ogl/fig3, fig5", "fedavg_cnn", {"num_classes": 10, "input_shape": mnist}, mnist,
         200 * 100 * 10 * 200, "200 epochs x 100 workers x 10 steps x batch 200 (LB: x3)"),
        ("lightdp/cifar10_resnet18", "resnet18_gn", {"num_classes": 10,
                                                     "input_shape": (32, 32, 3)},
         (32, 32, 3), 150 * 50 * 1000, "150 rounds x 50 clients x 1000 images x 1 epoch"),
        ("uldp/fig5_mnist, fig9(b)", "uldp_cnn", {}, mnist, 200 * 50 * 54_000,
         "200 rounds x Q = 50 epochs x ~54,000 training records"),
        ("uldp/fig4, fig8, fig9(a) (credit card)", "fraud_net", {}, (30,), 100 * 50 * 22_100,
         "100 rounds x Q = 50 (AVG: 30) x ~22,100 training records"),
        ("uldp/fig6_heart", "binary_logreg", {"input_shape": (13,)}, (13,), 50 * 50 * 486,
         "50 rounds x Q = 50 x 486 records"),
        ("uldp/fig7_tcga", "cox", {"input_shape": (39,)}, (39,), 50 * 50 * 866,
         "50 rounds x Q = 50 x 866 records"),
    ]


def table() -> list[dict]:
    from jaxfl import models

    out = []
    for cfg, name, kw, shape, examples, how in _rows():
        per = train_flops_per_example(models.get_model(name, **kw), shape)
        total = per * examples
        out.append({"config": cfg, "model": name, "train_flops_per_example": per,
                    "examples": examples, "how": how, "total_flops": total,
                    "gpu_seconds": gpu_seconds(total)})
    return out


def main() -> None:
    print(f"throughput assumed: {UTILIZATION:.0%} of {PEAK:.3g} FLOP/s = "
          f"{PEAK * UTILIZATION:.3g} FLOP/s")
    print("| config | model | train FLOPs / example | examples / run | total FLOPs | GPU time |")
    print("|---|---|---|---|---|---|")
    for r in table():
        print(f"| {r['config']} | {r['model']} | {r['train_flops_per_example']:.3g} | "
              f"{r['examples']:.3g} ({r['how']}) | {r['total_flops']:.3g} | "
              f"{r['gpu_seconds']:.3g} s |")


if __name__ == "__main__":
    main()
