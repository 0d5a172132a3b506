"""Engine benchmark: FedAvg rounds/s with 100 clients, vmapped vs a Python loop over the same
jitted per-client function, for logistic regression, an MLP and the FedAvg CNN; and the cost of
DP (DP-FedAvg round time / FedAvg round time, same cohort, same local work), for the fully
vmapped cohort and for the chunked cohort (``client_batch``: a scan over chunks of 1 or 10
vmapped clients inside one jit, the recommended setting on CPU).
"""

from __future__ import annotations

import jax

from experiments.bench import bench_scale, timing
from jaxfl import models
from jaxfl import tree as jtree
from jaxfl.algorithms import base, dp_fedavg, fedavg

NUM_CLIENTS = 100
EXAMPLES = 64
LOCAL_STEPS = 5
BATCH = 16
CLIENT_BATCHES = (1, 10)
# The cohort layouts timed: "vmap" the whole cohort vmapped (client_batch=None; not the
# builders' "auto" default, which on CPU is chunks of 1); "batch<b>" a scan over chunks of b
# vmapped clients (cohort.train_and_sum; b = 1 is a scan over single clients inside one jit),
# the CPU remedy.
LAYOUTS = {"vmap": {"client_batch": None},
           **{f"batch{b}": {"client_batch": b} for b in CLIENT_BATCHES}}
# (model, timed repeats); the FedAvg CNN takes ~1 h in all on 2 CPU cores (vmap ~11 min/round).
MODELS = (("logreg", 10), ("mlp", 5), ("fedavg_cnn", 1))


def bench_model(name, kwargs, shape, repeats):
    model = models.get_model(name, **kwargs)
    data = timing.random_clients(NUM_CLIENTS, EXAMPLES, shape).to_device()
    params = model.init(jax.random.key(0))
    common = dict(num_clients=NUM_CLIENTS, local_steps=LOCAL_STEPS, batch_size=BATCH,
                  client_lr=0.05, sampling_rate=1.0)
    cohort, key = base.full_cohort(NUM_CLIENTS), jax.random.key(1)

    def round_s(alg):
        apply, state = jax.jit(alg.apply), alg.init(params)
        return timing.timed(lambda _: apply(state, data, cohort, key), repeats=repeats).per_call_s

    t = {label: (round_s(fedavg.fedavg(model, **layout, **common)),
                 round_s(dp_fedavg.dp_fedavg(model, clip_norm=1.0, noise_multiplier=1.0,
                                             **layout, **common)))
         for label, layout in LAYOUTS.items()}
    loop = bench_scale.client_loop(model, params, data, key, clients=NUM_CLIENTS,
                                   local_steps=LOCAL_STEPS, batch_size=BATCH)
    t_loop = timing.timed(lambda _: jtree.scale(loop(), 1.0 / NUM_CLIENTS),
                          repeats=max(1, repeats // 2)).per_call_s
    t_vmap, t_dp = t["vmap"]
    row = {"model": name, "params": jtree.num_params(params), "clients": NUM_CLIENTS,
           "loop_rounds_per_s": 1 / t_loop, "vmap_rounds_per_s": 1 / t_vmap,
           "vmap_speedup_over_loop": t_loop / t_vmap, "dp_over_fedavg_vmap": t_dp / t_vmap}
    for b in CLIENT_BATCHES:
        t_fa, t_dp_b = t[f"batch{b}"]
        row[f"batch{b}_rounds_per_s"] = 1 / t_fa
        row[f"batch{b}_speedup_over_loop"] = t_loop / t_fa
        row[f"dp_over_fedavg_batch{b}"] = t_dp_b / t_fa
    return row


def main(out_dir=None):
    rows = []
    for name, repeats in MODELS:
        rows.append(bench_model(name, {"num_classes": 10}, (28, 28, 1), repeats))
        print(rows[-1], flush=True)  # the CNN takes long on CPU: show each model when done
    return rows


if __name__ == "__main__":
    main()
