"""How far one example's clipped contribution can exceed the clip norm, per backend.

The accountant assumes every example adds at most C to the clipped sum. This measures it: for
each example i of a batch, the clipped sum with only example i unmasked is its contribution;
its L2 norm, computed in float64 on the host, over C, minus one, is the excess. Run with the
precision contract as shipped (``jaxfl.precision.sensitive``: highest matmul precision) and with
the contract switched off in this process (the backend's default matmul precision, TF32 on
NVIDIA GPUs), for the ghost, two-pass and one-pass clipped sums.

    python -m experiments.bench.clip_precision --out bench_results

On CPU both columns are float32 rounding (about 1e-7); the difference shows on accelerators.
"""

from __future__ import annotations

import argparse
import contextlib
import platform

import jax
import jax.numpy as jnp
import numpy as np

from experiments.bench import timing
from jaxfl import ghost, precision
from jaxfl.models import get_model

MODELS = {"mlp": {"hidden": (256, 256), "input_shape": (784,)}, "fedavg_cnn": {}}


@contextlib.contextmanager
def _contract_off():
    """The backend's default matmul precision inside ``precision.sensitive`` (measurement only)."""
    original = precision.sensitive
    precision.sensitive = lambda: jax.named_scope(precision.SENSITIVITY_SCOPE)
    try:
        yield
    finally:
        precision.sensitive = original


def excess(model_name: str, method: str, *, batch: int = 32, seed: int = 0) -> dict:
    """Largest ``||contribution_i|| / C - 1`` over the batch (float64 norms), with C set far
    below every example's gradient norm so that every example is clipped."""
    model = get_model(model_name, **MODELS[model_name])
    key_p, key_x, key_y = jax.random.split(jax.random.key(seed), 3)
    params = model.init(key_p)
    xs = jax.random.normal(key_x, (batch, *model.input_shape))
    ys = jax.random.randint(key_y, (batch,), 0, 10)
    _, norms = ghost.model_clipped_grad_sum(model, params, xs, ys, jnp.ones(batch),
                                               clip_norm=1.0, method=method)
    clip = float(jnp.min(norms)) / 10.0

    @jax.jit
    def contributions():
        def one(i):
            total, _ = ghost.model_clipped_grad_sum(
                model, params, xs, ys, (jnp.arange(batch) == i).astype(jnp.float32),
                clip_norm=clip, method=method)
            return total
        return jax.lax.map(one, jnp.arange(batch))

    leaves = [np.asarray(x, np.float64).reshape(batch, -1)
              for x in jax.tree.leaves(contributions())]
    ratio = np.sqrt(sum(np.sum(v * v, axis=1) for v in leaves)) / clip
    return {"model": model_name, "method": method, "batch": batch, "clip_norm": clip,
            "max_excess": float(np.max(ratio) - 1.0), "min_ratio": float(np.min(ratio))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench_results")
    parser.add_argument("--batch", type=int, default=32)
    a = parser.parse_args(argv)
    rows = []
    for name in MODELS:
        for method in ("ghost", "two_pass", "one_pass"):
            shipped = excess(name, method, batch=a.batch)
            with _contract_off():
                off = excess(name, method, batch=a.batch)
            rows.append({"model": name, "method": method, "clip_norm": shipped["clip_norm"],
                         "excess_contract": shipped["max_excess"],
                         "excess_default_precision": off["max_excess"]})
    dev = jax.devices()[0]
    info = {"backend": jax.default_backend(), "device": dev.device_kind,
            "jax": jax.__version__, "python": platform.python_version()}
    lines = [f"Clip-norm excess, max over {a.batch} examples of ||contribution||/C - 1 "
             f"(float64 norms); {info['device']} ({info['backend']}), jax {info['jax']}", "",
             "| model | method | contract (highest) | default precision |", "|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['method']} | {r['excess_contract']:.2e} | "
              f"{r['excess_default_precision']:.2e} |" for r in rows]
    timing.write_run(a.out, "clip_precision", info, rows, "\n".join(lines) + "\n", indent=2)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
