"""Subject-level DP benchmark: the cost of one HiGradAvgDP local step (clip per item, average per
subject with a segment mean, sum, noise) against the non-private step and LocalItemDP (DP-SGD) on
the same model and batch (B = 256, subjects drawn like the paper's FEMNIST batches: K ~ 93% of B).

  python -m experiments.bench.bench_subject_dp      (or `make bench`)

Rows: model, method, milliseconds per step (jitted, median of interleaved repeats), slowdown
vs non-private, and the ratio to LocalItemDP (HiGradAvgDP's segment statistics are the only
extra work). A few minutes on 2 shared CPU cores.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.bench import timing
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


def main(out_dir=None, repeats: int = 7) -> list[dict]:
    """Times every (model, method) step; repeats are interleaved across methods so that load
    changes on a shared machine affect all methods alike. Returns one row per pair."""
    del out_dir  # rows are written by experiments.bench
    rng = np.random.default_rng(0)
    sid = jnp.asarray(rng.integers(0, 3500, BATCH))  # ~ 247 distinct subjects of 256 items
    mask = jnp.ones(BATCH, bool)
    rows = []
    for name, kwargs, shape in MODELS:
        model = models.get_model(name, **kwargs)
        params = model.init(jax.random.key(0))
        x = jnp.asarray(rng.normal(size=(BATCH, *shape)).astype(np.float32))
        y = jnp.asarray(rng.integers(0, 10, BATCH).astype(np.int32))
        args = (params, x, y, sid, mask, jax.random.key(1))
        fns = {m: _step_fn(m, model, None) for m in METHODS}
        for fn in fns.values():
            jax.block_until_ready(fn(*args))  # compile
        times = timing.alternate({m: lambda fn=fn, args=args: timing.timed(
            lambda _: fn(*args), warmup=False).per_call_s for m, fn in fns.items()}, repeats)
        ms = {m: 1e3 * float(np.median(t)) for m, t in times.items()}
        for m in METHODS:
            rows.append({"model": name, "method": m, "batch": BATCH, "ms_per_step": ms[m],
                         "x_nonprivate": ms[m] / ms["fedavg"],
                         "x_local_item_dp": ms[m] / ms["local_item_dp"]})
    return rows


if __name__ == "__main__":
    print(timing.describe())
    print(timing.table(main(Path("."))))
