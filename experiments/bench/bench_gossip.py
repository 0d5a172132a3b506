"""Gossip-DP sensitivity benchmark (Koskela & Kulkarni 2025 accounting).

  python -m experiments.bench --only gossip            # via `make bench`
  python -m experiments.bench.bench_gossip [--quick]   # this module alone

Rows (wall-clock seconds on the host; compile time reported separately):
* all-pairs TM-1 matrix, n = 100, T = 100 (ER(100, 0.2)): structured method vmapped over
  observers (one factorisation per observer), paper and certified modes; target < 2 s (paper);
  dense pseudo-inverse baseline on a few observers, extrapolated to all 100;
* one observer, all targets, n = 1000, T = 100: structured vs dense pseudo-inverse;
* n = 4039 (ego-Facebook size; a synthetic G(n, m) graph with the same edge count, since the
  SNAP file is not shipped), T = 100, one pair: structured with sparse W, the host sparse
  Kalman filter (20 rounds extrapolated linearly to T = 100; all 100 with
  ``JAXFL_BENCH_FULL=1``), and the dense pseudo-inverse (T x 403,800 system, ~310 MB).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from scipy import sparse  # noqa: E402

from experiments.bench import timing  # noqa: E402
from jaxfl.sensitivity import kalman, pairs, views  # noqa: E402
from jaxfl.sensitivity import linear_system as ls
from jaxfl.topology import graphs, mixing  # noqa: E402


def _dense_tm1_all_targets(W, i, T):
    """Dense baseline: materialise Ĥ_T once per observer, pseudo-inverse, all targets."""
    n = W.shape[0]
    v = views.make_view(W, "tm1", target=(i + 1) % n, observer=i)
    H, _ = ls.dense_system(W, v, T)
    Hp = np.linalg.pinv(H, rcond=1e-10)
    # G_j 1 for all targets: cumsum of the impulse responses Γ_k e_j.
    g = np.empty((T, n))
    row = W[i].copy()
    for k in range(T):
        g[k] = row
        row = row @ W
    X = np.cumsum(g, axis=0)
    return np.sum((Hp @ X) ** 2, axis=0)


def bench_all_pairs(n=100, T=100, dense_observers=3):
    A = graphs.erdos_renyi(n, 0.2, seed=1)
    W = mixing.max_degree(A)
    rows = []
    for mode in ("paper", "certified"):
        t = timing.timed(lambda _, m=mode: pairs.all_pairs_sensitivity(W, T, mode=m))
        res, first, warm = t.out, t.first_s, t.per_call_s
        rows.append({"case": f"all-pairs TM-1 n={n} T={T}", "method": "structured (vmap)",
                     "mode": mode, "seconds": warm, "first_call_s": first,
                     "target_s": 2.0 if mode == "paper" else None})
        if mode == "paper":
            P = res.delta_sq
    t0 = time.perf_counter()
    errs = []
    for i in range(dense_observers):
        d = _dense_tm1_all_targets(W, i, T)
        mask = np.arange(n) != i
        errs.append(np.max(np.abs(d[mask] - P[i, mask]) / np.maximum(1e-300, d[mask])))
    per = (time.perf_counter() - t0) / dense_observers
    rows.append({"case": f"all-pairs TM-1 n={n} T={T}", "method": "dense pinv",
                 "mode": "paper", "seconds": per * n,
                 "note": f"extrapolated from {dense_observers} observers; max rel diff "
                         f"{max(errs):.1e}"})
    return rows


def bench_one_observer(n=1000, T=100):
    A = graphs.erdos_renyi(n, 10 / n * 2, seed=3)
    W = mixing.max_degree(A)
    rows = []
    for mode in ("paper", "certified"):
        t = timing.timed(lambda _, m=mode: pairs.all_pairs_sensitivity(
            W, T, mode=m, observers=[0]))
        res, first, warm = t.out, t.first_s, t.per_call_s
        rows.append({"case": f"one observer, all targets, n={n} T={T}",
                     "method": "structured", "mode": mode, "seconds": warm,
                     "first_call_s": first})
        if mode == "paper":
            P = res.delta_sq[0]
    t0 = time.perf_counter()
    d = _dense_tm1_all_targets(W, 0, T)
    dense_s = time.perf_counter() - t0
    mask = np.arange(n) != 0
    rel = np.max(np.abs(d[mask] - P[mask]) / np.maximum(1e-300, np.abs(d[mask])))
    rows.append({"case": f"one observer, all targets, n={n} T={T}", "method": "dense pinv",
                 "mode": "paper", "seconds": dense_s, "note": f"max rel diff {rel:.1e}"})
    return rows


def bench_facebook_size(T=100, kalman_steps=100, dense=True):
    n, edges = 4039, 88234
    A = graphs.from_networkx(nx.gnm_random_graph(n, edges, seed=0))   # G(n, m), same density
    Wsp = mixing.max_degree(sparse.csr_matrix(A))
    j, i = 300, int(sparse.csr_matrix(A)[300].indices[0])
    v = views.make_view(np.asarray(A), "tm1", target=j, observer=i)
    rows = []
    t0 = time.perf_counter()
    K, G = ls.structured_system_numpy(Wsp, v, T)
    paper = ls.psd_terms_numpy(K, G).M.sum()
    rows.append({"case": f"n={n} (synthetic, {edges} edges) T={T}, one pair",
                 "method": "structured, sparse W", "mode": "paper",
                 "seconds": time.perf_counter() - t0, "value": paper})
    steps = min(kalman_steps, T)
    t0 = time.perf_counter()
    curve = kalman.kalman_paper_curve_sparse(Wsp, v, steps)
    kal = time.perf_counter() - t0
    ref = ls.psd_terms_numpy(K[:steps, :steps], G[:steps, :steps]).M.sum()
    note = f"{steps} steps measured, extrapolated; " if steps < T else ""
    rows.append({"case": f"n={n} (synthetic, {edges} edges) T={T}, one pair",
                 "method": "Kalman (host, sparse W)", "mode": "paper",
                 "seconds": kal * T / steps,
                 "note": note + f"rel diff vs structured at T={steps}: "
                         f"{abs(curve[-1] - ref) / curve[-1]:.1e}"})
    if dense:
        t0 = time.perf_counter()
        H, Gd = ls.dense_system(Wsp.toarray(), v, T)
        z = np.linalg.lstsq(H, Gd @ np.ones(T), rcond=1e-10)[0]
        rows.append({"case": f"n={n} (synthetic, {edges} edges) T={T}, one pair",
                     "method": "dense pinv (lstsq)", "mode": "paper",
                     "seconds": time.perf_counter() - t0, "value": float(z @ z),
                     "note": f"H_T is {H.shape[0]} x {H.shape[1]} ({H.nbytes / 2**20:.0f} MB)"})
    return rows


def main(out_dir=None, *, quick: bool | None = None) -> list[dict]:
    """Benchmark rows. The n = 4039 Kalman row runs 20 rounds (extrapolated to T = 100) unless
    ``JAXFL_BENCH_FULL=1`` (all 100 rounds, minutes) or ``quick`` (5 rounds)."""
    del out_dir  # rows are written by experiments.bench
    full = os.environ.get("JAXFL_BENCH_FULL") == "1"
    steps = 5 if quick else (100 if full else 20)
    with jax.enable_x64(True):
        jnp.zeros(1)
    rows = bench_all_pairs()
    rows += bench_one_observer()
    rows += bench_facebook_size(kalman_steps=steps, dense=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="measure only 5 Kalman steps at n = 4039 and extrapolate")
    args = parser.parse_args()
    print(timing.table(main(quick=args.quick)))
