"""Subject-level DP benchmark: the cost of one HiGradAvgDP local step (clip per item, average per
subject with a segment mean, sum, noise) against the non-private step and LocalItemDP (DP-SGD) on
the same model and batch (B = 256, subjects drawn like the paper's FEMNIST batches: K ~ 93% of B).

  python -m experiments.bench.bench_subject_dp      (or `make bench`)

Rows: model, method, milliseconds per step (jitted, median of repeats), slowdown vs non-private,
and HiGradAvgDP's overhead over LocalItemDP (the segment statistics).
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxfl import models
from jaxfl.algorithms import subject_dp as sdp

BATCH = 256
MODELS = (("mlp", {"hidden": (64,), "num_classes": 10, "input_shape": (784,)}, (784,)),
          ("fedavg_cnn", {"features": (16, 32), "hidden": (64,), "num_classes": 10,
                          "input_shape": (28, 28, 1)}, (28, 28, 1)))
METHODS = ("fedavg", "local_item_dp", "higradavg_dp")


def _step_fn(method, model, microbatch):
    opt = optax.sgd(0.1)

    def step(params, x, y, sid, mask, key):
        g, diag = sdp.private_gradient(method, model, params, x, y, sid, mask, 1.0, key,
                                       clip_norm=1.0, batch_size=BATCH,
                                       microbatch_size=microbatch)
        upd, _ = opt.update(g, opt.init(params), params)
        return optax.apply_updates(params, upd), diag["num_subjects"]

    return jax.jit(step)


def _median_time(fn, args, repeats):
    jax.block_until_ready(fn(*args))  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(out_dir=None, repeats: int = 10) -> list[dict]:
    del out_dir  # rows are written by experiments.bench
    rng = np.random.default_rng(0)
    sid = jnp.asarray(rng.integers(0, 3500, BATCH))  # ~ 240 distinct subjects of 256 items
    mask = jnp.ones(BATCH, bool)
    rows = []
    for name, kwargs, shape in MODELS:
        model = models.get_model(name, **kwargs)
        params = model.init(jax.random.key(0))
        x = jnp.asarray(rng.normal(size=(BATCH, *shape)).astype(np.float32))
        y = jnp.asarray(rng.integers(0, 10, BATCH).astype(np.int32))
        base_ms = None
        item_ms = None
        for method in METHODS:
            for micro in ((None,) if method == "fedavg" else (None, 64)):
                fn = _step_fn(method, model, micro)
                ms = 1e3 * _median_time(fn, (params, x, y, sid, mask, jax.random.key(1)),
                                        repeats)
                if method == "fedavg":
                    base_ms = ms
                if method == "local_item_dp" and micro is None:
                    item_ms = ms
                rows.append({"model": name, "method": method, "microbatch": micro or BATCH,
                             "ms_per_step": ms, "x_nonprivate": ms / base_ms,
                             "x_local_item_dp": ms / item_ms if item_ms else None})
    return rows


if __name__ == "__main__":
    from experiments.bench.__main__ import machine, table
    print(machine())
    print(table(main(Path("."))))
