"""DP-OGL benchmark: (1) per-epoch wall time with N = 100 workers on RI(M=4) (P = 104 pairs,
one vmap) vs GL (P = 100), DP-OGL and DP-OGL+; (2) the 100 x 100 per-pair heatmap accountant at
t = 200 (target: under 1 s on 2 cores), cold (exact SGM RDP computed) and warm (cached), and
the whole PwP curve t = 1..200.

  python -m experiments.bench.bench_dp_ogl          # prints rows
  python -m experiments.bench --only dp_ogl         # writes bench_results/bench_dp_ogl.md

Training uses synthetic MNIST-shaped data (200 examples per worker) and the CPU-scale model of
the reproduction (MLP 784-64-10; batch 16, L = 10); ``full_cnn=True`` adds the paper's FedAvg
CNN with batch 200 (minutes per epoch on a CPU: XLA runs the vmapped per-pair convolutions
slowly).
"""

from __future__ import annotations

import time

import jax
import numpy as np

from experiments.bench import timing
from jaxfl import models
from jaxfl.accounting import dp_ogl as accounting
from jaxfl.accounting import sampled_gaussian
from jaxfl.algorithms import dp_ogl
from jaxfl.data import federated
from jaxfl.topology import groups


def _data(num_workers=100, per_worker=200, seed=0):
    rng = np.random.default_rng(seed)
    xs = [rng.random((per_worker, 28, 28, 1), dtype=np.float32) for _ in range(num_workers)]
    ys = [rng.integers(0, 10, per_worker).astype(np.int32) for _ in range(num_workers)]
    return federated.from_client_arrays(xs, ys).to_device()


def bench_epoch(structure, *, plus=False, model_name="mlp", features=(8, 16), hidden=(64,),
                batch_size=16, local_steps=10, epochs=3) -> dict:
    kw = {"features": features} if model_name == "fedavg_cnn" else {}
    model = models.get_model(model_name, num_classes=10, input_shape=(28, 28, 1),
                             hidden=hidden, **kw)
    alg = dp_ogl.dp_ogl(model, structure, period=2, local_steps=local_steps,
                        batch_size=batch_size, client_lr=0.05, clip_norms=0.05,
                        noise_multipliers=2.0, sampling_rates=0.7, plus=plus)
    data = _data(structure.num_workers)
    state = alg.init(model.init(jax.random.key(0)))
    apply = jax.jit(alg.apply)
    rins = [alg.prepare(r, np.random.default_rng(r)) for r in range(epochs + 1)]
    t = timing.timed_steps(lambda s, r: apply(s, data, rins[r], jax.random.key(r))[0], state,
                           repeats=epochs)
    state, first, times = t.out, t.first_s, t.times_s
    return {"bench": "epoch", "structure": structure.name, "algorithm": alg.name,
            "model": model_name,
            "pairs": structure.num_pairs, "model_params": int(sum(
                x.size for x in jax.tree.leaves(state.params)) // structure.num_groups),
            "batch": batch_size, "L": local_steps, "compile_plus_first_s": first,
            "epoch_s": float(np.median(times))}


def bench_heatmap(structure, *, period=10, t=200, algorithm="dp_ogl") -> list[dict]:
    rows = []
    kw = dict(t=t, period=period, delta=1e-5, noise_multipliers=2.0, sampling_rates=0.7,
              algorithm=algorithm, recipe="paper")
    sampled_gaussian._sgm_rdp_cached.cache_clear()  # pylint: disable=protected-access
    for label in ("cold", "warm"):
        t0 = time.perf_counter()
        eps = accounting.pairwise_epsilon(structure, **kw)
        dt = time.perf_counter() - t0
        rows.append({"bench": f"heatmap_{label}", "structure": structure.name,
                     "algorithm": algorithm, "t": t, "shape": str(eps.shape), "seconds": dt,
                     "target_s": 1.0, "meets_target": dt < 1.0})
    t0 = time.perf_counter()
    curve = accounting.pwp_curve(structure, epochs=range(1, t + 1), period=period, delta=1e-5,
                                 noise_multipliers=2.0, sampling_rates=0.7, algorithm=algorithm,
                                 recipe="paper")
    rows.append({"bench": "pwp_curve_1..t", "structure": structure.name, "algorithm": algorithm,
                 "t": t, "shape": str(curve.shape), "seconds": time.perf_counter() - t0})
    return rows


def main(out_dir=None, *, full_cnn: bool = False) -> list[dict]:
    del out_dir  # rows are written by experiments.bench
    rows = []
    rows += bench_heatmap(groups.ring(100, 4))
    rows += bench_heatmap(groups.ring(100, 10))
    rows += bench_heatmap(groups.ring(100, 4), period=2, algorithm="dp_ogl_plus")
    for s, plus in ((groups.gl(100), False), (groups.ring(100, 4), False),
                    (groups.ring(100, 4), True)):
        rows.append(bench_epoch(s, plus=plus))
    if full_cnn:  # minutes per epoch on a CPU (vmapped per-pair convolutions)
        for s in (groups.gl(100), groups.ring(100, 4)):
            rows.append(bench_epoch(s, model_name="fedavg_cnn", features=(32, 64),
                                    hidden=(512,), batch_size=200, epochs=1))
    return rows


if __name__ == "__main__":
    for row in main():
        print(row)
