"""Engine benchmark: FedAvg rounds/s with 100 clients, vmapped vs a Python loop over the same
jitted per-client function, for logistic regression, an MLP and the FedAvg CNN; and the cost of
DP (DP-FedAvg round time / FedAvg round time, same cohort, same local work), for the fully
vmapped cohort and for the chunked cohort (``client_batch``: a scan over chunks of 1 or 10
vmapped clients inside one jit, the recommended setting on CPU).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from experiments.bench import timing
from jaxfl import models
from jaxfl import tree as jtree
from jaxfl.algorithms import base, dp_fedavg, fedavg, local

NUM_CLIENTS = 100
EXAMPLES = 64
LOCAL_STEPS = 5
BATCH = 16
CLIENT_BATCHES = (1, 10)
# (model, timed repeats); the FedAvg CNN takes ~1 h in all on 2 CPU cores (vmap ~11 min/round).
MODELS = (("logreg", 10), ("mlp", 5), ("fedavg_cnn", 1))


def bench_model(name, kwargs, shape, repeats):
    model = models.get_model(name, **kwargs)
    data = timing.random_clients(NUM_CLIENTS, EXAMPLES, shape).to_device()
    params = model.init(jax.random.key(0))
    common = dict(num_clients=NUM_CLIENTS, local_steps=LOCAL_STEPS, batch_size=BATCH,
                  client_lr=0.05, sampling_rate=1.0)
    fa = fedavg.fedavg(model, **common)
    dp = dp_fedavg.dp_fedavg(model, clip_norm=1.0, noise_multiplier=1.0, **common)
    cohort = base.full_cohort(NUM_CLIENTS)
    key = jax.random.key(1)
    fa_apply, dp_apply = jax.jit(fa.apply), jax.jit(dp.apply)
    s_fa, s_dp = fa.init(params), dp.init(params)
    t_vmap = timing.timed(lambda _: fa_apply(s_fa, data, cohort, key), repeats=repeats).per_call_s
    t_dp = timing.timed(lambda _: dp_apply(s_dp, data, cohort, key), repeats=repeats).per_call_s
    # The CPU remedy: a scan over chunks of b vmapped clients (cohort.train_and_sum); b = 1 is a
    # scan over single clients inside one jit.
    chunked = {}
    for b in CLIENT_BATCHES:
        fc = jax.jit(fedavg.fedavg(model, client_batch=b, **common).apply)
        dc = jax.jit(dp_fedavg.dp_fedavg(model, clip_norm=1.0, noise_multiplier=1.0,
                                         client_batch=b, **common).apply)
        chunked[b] = (timing.timed(lambda _, fc=fc: fc(s_fa, data, cohort, key),
                                   repeats=repeats).per_call_s,
                      timing.timed(lambda _, dc=dc: dc(s_dp, data, cohort, key),
                                   repeats=repeats).per_call_s)

    update = jax.jit(local.client_update_fn(local.model_batch_loss(model),
                                            optimizer=optax.sgd(0.05), steps=LOCAL_STEPS,
                                            batch_size=BATCH))
    keys = base.client_keys(key, jnp.arange(NUM_CLIENTS))

    def loop():
        total = jtree.zeros_like(params)
        for c in range(NUM_CLIENTS):
            d, _ = update(params, data.x[c], data.y[c], data.mask[c], keys[c])
            total = jtree.add(total, d)
        return jax.block_until_ready(jtree.scale(total, 1.0 / NUM_CLIENTS))

    t_loop = timing.timed(lambda _: loop(), repeats=max(1, repeats // 2)).per_call_s
    row = {"model": name, "params": jtree.num_params(params), "clients": NUM_CLIENTS,
           "loop_rounds_per_s": 1 / t_loop, "vmap_rounds_per_s": 1 / t_vmap,
           "vmap_speedup_over_loop": t_loop / t_vmap, "dp_over_fedavg_vmap": t_dp / t_vmap}
    for b, (t_fa, t_dp_b) in chunked.items():
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
