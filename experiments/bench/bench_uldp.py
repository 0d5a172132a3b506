"""ULDP-FL benchmark: one ULDP-AVG round, vmapped over (silo, user) pairs vs a Python loop over
pairs of the same jitted per-pair function; and Protocol 1's runtime against |U| and |S| next
to the authors' published timings (the authors' results notebook
``exp/exp_results.ipynb``, Apple M1 Max, 3072-bit keys; Kato et al. 2023, Sec. 5.2, Fig. 11).

  python -m experiments.bench.bench_uldp [--quick]

Rows:
* ``uldp_avg``: MNIST-shaped CNN (21,840 parameters), 1,000 users over 5 silos (~6 records per
  user, zipf silos), and logistic regression (7,850 parameters) with 10,000 users; Q = 2 epochs,
  B = 64. ``vmap_s`` is the steady-state round (compile excluded, reported separately);
  ``vmap_chunk16_s`` the same with chunks of 16 pairs vmapped and chunks scanned (vmapped
  conv kernels become grouped convolutions, slow in XLA:CPU, so CNNs prefer small chunks);
  ``loop_s`` runs the jitted pair trainer pair by pair (clip, weight and accumulate included),
  extrapolated linearly from ``loop_pairs_timed`` pairs when the loop would be long.
* ``protocol``: d = 16, Q excluded (no training: the clipped deltas are given), per-phase
  seconds of Protocol 1; 1024-bit keys (``insecure_for_tests``) for the sweep, one 2048-bit
  row. The authors' times include local training; compare ratios, not absolute values.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from experiments.bench import timing
from jaxfl import clipping, models
from jaxfl import tree as jtree
from jaxfl.algorithms import uldp, uldp_data, uldp_local
from jaxfl.crypto import protocol
from jaxfl.data import allocation

# The authors' notebook (seconds): key exch., blinded hist., train per silo, aggregation.
AUTHORS = {
    ("U", 10): (1.05, 4.10, 85.5, 2.17), ("U", 20): (1.05, 8.14, 180.0, 2.16),
    ("U", 40): (1.04, 16.49, 319.3, 2.14), ("S", 5): (2.94, 4.53, 91.6, 2.18),
    ("S", 7): (5.73, 4.89, 89.8, 2.16), ("S", 3): (1.05, 4.10, 85.5, 2.17)}


def _task(num_users, num_silos, shape, classes, records, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(records, *shape)).astype(np.float32)
    y = rng.integers(0, classes, records).astype(np.int32)
    users = allocation.uldp_users_of_records(rng, records, num_users, distribution="zipf")
    silos = allocation.uldp_silos_of_records(rng, users, num_silos, distribution="zipf",
                                             num_users=num_users)
    return uldp_data.from_silos([x[s] for s in silos], [y[s] for s in silos],
                                [users[s] for s in silos], num_users=num_users)


def bench_round(name, model, data, *, epochs=2, batch=64, loop_limit=400, repeats=2):
    S, U = data.num_silos, data.num_users
    alg = uldp.uldp_avg(model, num_silos=S, num_users=U, local_epochs=epochs, batch_size=batch,
                        local_lr=0.01, global_lr=10.0, clip_norm=0.1, noise_multiplier=5.0)
    params = model.init(jax.random.key(0))
    state = alg.init(params)
    mask = alg.prepare(0, np.random.default_rng(0))
    key = jax.random.key(1)
    timings = {}
    for cap in (None, 16):
        pairs = uldp_data.pair_data(data, min_length=8, max_pairs_per_chunk=cap)
        dev = pairs.to_device()
        t0 = time.perf_counter()
        apply = jax.jit(alg.apply).lower(state, dev, mask, key).compile()
        compile_s = time.perf_counter() - t0
        t = timing.timed(lambda _, apply=apply, dev=dev: apply(state, dev, mask, key),
                         repeats=repeats)
        timings[cap] = (t.per_call_s, compile_s)
    vmap_s, compile_s = timings[None]

    # The same per-pair function, one pair at a time from Python.
    trainers = {}
    acc = jtree.zeros_like(params)
    todo = [(b, i) for b in pairs.buckets for i in range(b.index.shape[0]) if b.count[i] > 0]
    timed = todo[:loop_limit]

    def one(b, i):
        L = b.index.shape[1]
        if L not in trainers:
            train = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=0.01,
                                             epochs=epochs, batch_size=batch, length=L)
            trainers[L] = jax.jit(lambda p, x, y, m, k, w: jtree.scale(
                clipping.clip_pytree(train(p, x, y, m, k)[0], 0.1)[0], w))
        k = jax.random.fold_in(key, int(b.pair_id[i]))
        w = 1.0 / S
        return trainers[L](params, pairs.x[b.index[i]], pairs.y[b.index[i]], b.mask[i], k, w)

    for L in sorted({b.index.shape[1] for b, _ in timed}):  # compile outside the timing
        b, i = next((b, i) for b, i in timed if b.index.shape[1] == L)
        jax.block_until_ready(one(b, i))
    t0 = time.perf_counter()
    for b, i in timed:
        acc = jtree.add(acc, one(b, i))
    jax.block_until_ready(acc)
    loop_s = (time.perf_counter() - t0) * len(todo) / max(len(timed), 1)
    return {"bench": "uldp_avg", "model": name, "users": U, "silos": S, "pairs": len(todo),
            "params": int(jtree.num_params(params)), "compile_s": compile_s, "vmap_s": vmap_s,
            "vmap_chunk16_s": timings[16][0], "loop_s": loop_s,
            "loop_pairs_timed": len(timed), "speedup": loop_s / vmap_s,
            "speedup_chunk16": loop_s / timings[16][0]}


def bench_protocol(num_users, num_silos, *, dim=16, key_bits=1024, seed=0):
    rng = np.random.default_rng(seed)
    hist = rng.integers(0, 5, size=(num_silos, num_users))
    hist[0, hist.sum(0) == 0] = 1
    cfg = protocol.ProtocolConfig(key_bits=key_bits, n_max=200, clip_norm=1.0,
                                  noise_multiplier=5.0, insecure_for_tests=key_bits < 2048)
    run = protocol.setup(cfg, hist)
    raw = rng.normal(size=(num_silos, num_users, dim))
    clipped = raw / np.maximum(1.0, np.linalg.norm(raw, axis=-1, keepdims=True))
    noise = rng.normal(size=(num_silos, dim)) * 5.0 / np.sqrt(num_silos)
    out = protocol.run_round(run, 0, clipped, noise)
    err = float(np.max(np.abs(out - protocol.plaintext_aggregate(hist, clipped, noise))))
    r = run.timings["rounds"][0]
    row = {"bench": "protocol", "users": num_users, "silos": num_silos, "dim": dim,
           "key_bits": key_bits,
           "key_exchange_s": run.timings["paillier_keygen_and_key_exchange"],
           "blinded_hist_s": run.timings["blinded_histogram"] + r["encrypt_inverses"],
           "silo_s_mean": float(np.mean(r["silo"])), "aggregation_s": r["aggregation"],
           "max_abs_error": err}
    ref = None
    if num_silos == 3:
        ref = AUTHORS.get(("U", num_users))
    elif num_users == 10:
        ref = AUTHORS.get(("S", num_silos))
    if ref is not None and key_bits < 2048:
        row.update(authors_key_exchange_s=ref[0], authors_blinded_hist_s=ref[1],
                   authors_train_per_silo_s=ref[2], authors_aggregation_s=ref[3])
    return row


def main(out_dir=None, quick: bool = False) -> list[dict]:
    del out_dir  # rows are written by experiments.bench
    rows = []
    cnn = models.get_model("uldp_cnn")
    records_cnn = 1500 if quick else 6000
    rows.append(bench_round("uldp_cnn", cnn, _task(250 if quick else 1000, 5, (28, 28, 1), 10,
                                                   records_cnn),
                            loop_limit=50 if quick else 200))
    logreg = models.get_model("logreg", num_classes=10, input_shape=(784,))
    users = 2000 if quick else 10_000
    rows.append(bench_round("logreg", logreg, _task(users, 5, (784,), 10, 6 * users),
                            loop_limit=100 if quick else 400))
    for u, s in ([(10, 3)] if quick else [(10, 3), (20, 3), (40, 3), (10, 5), (10, 7)]):
        rows.append(bench_protocol(u, s))
    if not quick:
        rows.append(bench_protocol(5, 3, key_bits=2048))
    return rows


if __name__ == "__main__":
    from experiments import host_devices

    host_devices.configure()  # before JAX starts: one host device per core
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import json
    for row in main(quick=args.quick):
        print(json.dumps(row, default=float))
