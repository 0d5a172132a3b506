"""Benchmark: one LightDP-FL round with vs without pairwise noise, N = 50 and N = 1000.

Run: ``python -m experiments.bench.bench_lightdp [--out DIR] [--dim D] [--full]``
(``make bench`` calls :func:`main`). Each row is one (N, variant) with the warm (compiled)
seconds per round and the compile time. Variants (same local training, same clipping):

* ``ldp``: individual noise only (no pairwise terms): the "without pairwise noise" baseline;
* ``lightdp_aggregate``: Eq. 9 directly with S = S_bar = 10 stragglers (N * 10 pair draws);
* ``lightdp_faithful``: all N (N - 1) / 2 pair terms generated (every masked upload);
* ``pairs_only``: the faithful pair generation alone, without training.

A linear softmax model on synthetic 28x28 inputs (d = 7,850) keeps N = 1000 on a CPU; with
``--full`` the faithful path also runs at N = 1000 (5e5 pairs x d draws: minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np

from experiments.bench import timing
from jaxfl import models
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import lightdp


def _worst_round(alg, num_clients: int, stragglers: int):
    """A round input with exactly ``stragglers`` stragglers (S = S_bar: all slots used)."""
    rin = alg.prepare(0, np.random.default_rng(0))
    ids = np.arange(stragglers, dtype=np.int32) * (num_clients // stragglers)
    alive = np.ones(num_clients, bool)
    alive[ids] = False
    cap = rin.straggler_idx.shape[0]
    sidx = np.zeros(cap, np.int32)
    sidx[:stragglers] = ids
    return rin._replace(alive=alive, straggler_idx=sidx,
                        straggler_valid=np.arange(cap) < stragglers)


def _time_round(alg, data, params, repeats: int, num_clients: int, stragglers: int
                ) -> tuple[float, float]:
    """``(seconds per round, first round's seconds)``: the state carried, round ``r`` keyed
    ``r``, one wait at the end."""
    apply = jax.jit(alg.apply)
    rin = _worst_round(alg, num_clients, stragglers)
    t = timing.timed_steps(lambda s, r: apply(s, data, rin, jax.random.key(r))[0],
                           alg.init(params), repeats=repeats, sync_each=False)
    return t.per_call_s, t.first_s


def _time_pairs(num_clients: int, dim: int, repeats: int) -> tuple[float, float]:
    key = jax.random.key(0)
    f = jax.jit(lambda t: lightdp.pair_masks(key, t, num_clients=num_clients, dim=dim,
                                             sigma_k=1.0))
    t = timing.timed(f, repeats=repeats)
    return t.per_call_s, t.first_s


def main(out_dir=None, *, dim_in: int = 784, sizes=(50, 1000), full: bool = False,
         repeats: int = 2) -> list[dict]:
    """Runs the benchmark; writes ``bench_lightdp.json`` in ``out_dir`` when given."""
    model = models.get_model("logreg", num_classes=10, input_shape=(dim_in,))
    params = model.init(jax.random.key(0))
    d = int(sum(x.size for x in jax.tree.leaves(params)))
    rows = []
    for N in sizes:
        data = timing.random_clients(N, 16, (dim_in,)).to_device()
        base = acct.design(epsilon=3.0, delta=1e-5, num_clients=N, max_colluders=N // 5,
                           max_stragglers=10, sensitivity=2.0 / 16, rounds=100)
        variants = [("ldp", acct.design(epsilon=3.0, delta=1e-5, num_clients=N,
                                        max_colluders=N // 5, max_stragglers=10,
                                        sensitivity=2.0 / 16, rounds=100, scheme="ldp"),
                     "aggregate"),
                    ("lightdp_aggregate", base, "aggregate")]
        if N <= 100 or full:
            variants.append(("lightdp_faithful", base, "faithful"))
        for name, design, path in variants:
            alg = lightdp.lightdp_fl(model, design=design, num_clients=N, local_steps=1,
                                     batch_size=16, client_lr=0.1, clip_norm=1.0, path=path,
                                     client_map="vmap")
            sec, comp = _time_round(alg, data, params, repeats, N, 10)
            rows.append({"num_clients": N, "dim": d, "variant": name, "seconds_per_round": sec,
                         "compile_seconds": comp, "stragglers": 10,
                         "pair_draws": (N * 10 * d if path == "aggregate" and name != "ldp"
                                        else N * (N - 1) // 2 * d if path == "faithful" else 0)})
            print(json.dumps(rows[-1]), flush=True)
        if N <= 100 or full:
            sec, comp = _time_pairs(N, d, repeats)
            rows.append({"num_clients": N, "dim": d, "variant": "pairs_only",
                         "seconds_per_round": sec, "compile_seconds": comp,
                         "pair_draws": N * (N - 1) // 2 * d})
            print(json.dumps(rows[-1]), flush=True)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_lightdp.json").write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--dim", type=int, default=784, help="input features (d = 10 dim + 10)")
    ap.add_argument("--full", action="store_true", help="also the faithful path at N = 1000")
    args = ap.parse_args()
    main(args.out, dim_in=args.dim, full=args.full)
