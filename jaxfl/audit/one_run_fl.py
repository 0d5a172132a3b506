"""One-run audits of DP-FedAvg and ULDP-AVG: one real training run with m canaries.

Steinke, Nasr, Jagielski (NeurIPS 2023) white-box "gradient canaries", adapted to the protected
unit of each algorithm:

* the model is least squares ``w . x`` without bias (:func:`jaxfl.audit.dp_fedavg.
  least_squares_model`) of dimension ``dim``, trained on a synthetic regression task held by
  the real clients / users (``y = w* . x + noise``; a real training run, the loss goes down);
* canary i owns a unit direction u_i (rows of a random orthonormal matrix, so canaries do not
  interfere) and one record ``x = u_i, y = 10^4``: its local update points exactly along
  ``+u_i`` and is clipped to C. A DP-FedAvg canary is one client; a ULDP-AVG canary is one user
  with that record in every silo (its weighted clipped sum has norm C, all the sensitivity);
* each canary is included independently with probability 1/2; an excluded canary client has
  no examples (as in :mod:`jaxfl.audit.dp_fedavg`), an excluded canary user has no records.
  The number of clients / users (N, |U|) is public and the same either way;
* the run is :func:`jaxfl.training.run` on the library's algorithm (Poisson sampling, clipping,
  noise, accounting: nothing re-implemented); the claim is the epsilon of that run's summary
  (the algorithm's own accountant, strict mode, PLD);
* score of canary i: ``<w_T - w_0, u_i>`` (the sum of the per-round model updates along u_i);
  the guesser says "in" for the ``k_pos`` highest scores and "out" for the ``k_neg`` lowest;
  :func:`jaxfl.audit.one_run.one_run_bound` turns the correct guesses into the bound.

A one-run bound is much weaker than the many-run audits of the same mechanisms
(:mod:`jaxfl.audit.dp_fedavg`, :mod:`jaxfl.audit.uldp`): with r guesses it cannot exceed the
eps at which ``logistic(eps)^r`` equals the significance, and the paper shows it is loose for
large eps even with perfect canaries. Its value is the cost: one training run.

Example Usage:
  >>> r = audit_dp_fedavg_one_run(canaries=100, dim=128, rounds=2, real_clients=5,
  ...                             sampling_rate=1.0, k_pos=10, noise_multiplier=0.0)
  >>> r.bound.correct == r.bound.guesses == 20 and r.epsilon_lb > 1.5  # every canary leaks
  True
"""

from __future__ import annotations

import time

import jax
import numpy as np
import optax

from jaxfl import training, validate
from jaxfl.algorithms import base, dp_fedavg, uldp, uldp_data
from jaxfl.audit import one_run
from jaxfl.audit.dp_fedavg import least_squares_model
from jaxfl.data import federated, uldp_records

CANARY_TARGET = 1e4


def canary_directions(canaries: int, dim: int, seed: int) -> np.ndarray:
    """``[canaries, dim]`` orthonormal rows (a random rotation's first rows; needs dim >= m)."""
    if canaries > dim:
        raise validate.JaxflValueError(
            f"Expected dim >= canaries for orthonormal canary directions, got dim={dim}, "
            f"canaries={canaries}.")
    g = np.random.default_rng([seed, 1]).normal(size=(dim, canaries))
    q, r = np.linalg.qr(g)
    return (q * np.sign(np.diag(r))).T.astype(np.float32)


def regression_records(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic regression ``y = w* . x + 0.1 N(0, 1)``, ``x ~ N(0, I / dim)``."""
    rng = np.random.default_rng([seed, 2])
    w_star = rng.normal(size=dim)
    x = rng.normal(size=(n, dim)) / np.sqrt(dim)
    y = x @ w_star + 0.1 * rng.normal(size=n)
    return x.astype(np.float32), y.astype(np.float32)


def _inclusion(canaries: int, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, 3]).random(canaries) < 0.5


def _check(canaries, k_pos, k_neg, noise_multiplier):
    m = validate.positive_int("canaries", canaries, minimum=4)
    k_pos = m // 20 if k_pos is None else k_pos
    k_neg = k_pos if k_neg is None else k_neg
    if k_pos < 0 or k_neg < 0 or k_pos + k_neg >= m:
        raise validate.JaxflValueError(
            f"Expected k_pos, k_neg >= 0 and k_pos + k_neg < canaries, got {k_pos}, {k_neg}.")
    validate.non_negative("noise_multiplier", noise_multiplier)
    return m, int(k_pos), int(k_neg)


def _non_private(alg):
    """``alg`` with its noise multiplier forced to 0 (no accountant: the claim is inf)."""
    return base.without_noise(alg)


def _finish(name, run, dirs, included, *, k_pos, k_neg, delta, confidence, private, t0,
            neighbour, info, real):
    w = np.asarray(run.state.params["w"], np.float64)  # w_0 = 0
    x_real, y_real = (np.asarray(a, np.float64) for a in real)
    scores = dirs.astype(np.float64) @ w
    bound = one_run.one_run_bound(scores, included, k_pos=k_pos, k_neg=k_neg, delta=delta,
                                  confidence=confidence)
    claim = float(run.summary["privacy"]["epsilon"]) if private else float("inf")
    return one_run.OneRunResult(
        name=name, bound=bound, claimed={"strict": claim}, neighbour=neighbour,
        view="final model (one training run)", seconds=time.time() - t0,
        info={**info, "score": "<w_T - w_0, u_i>",
              "real_task_mse_initial": float(np.mean(y_real ** 2)),
              "real_task_mse_final": float(np.mean((x_real @ w - y_real) ** 2)),
              "accountant": run.summary.get("privacy", {}).get("accountant")})


def audit_dp_fedavg_one_run(*, canaries: int = 1000, real_clients: int = 50,
                            examples_per_client: int = 8, dim: int = 1024, rounds: int = 10,
                            sampling_rate: float = 0.5, noise_multiplier: float = 1.0,
                            clip_norm: float = 1.0, client_lr: float = 0.5,
                            k_pos: int | None = None, k_neg: int | None = None,
                            delta: float = 1e-5, confidence: float = 0.95,
                            seed: int = 0) -> one_run.OneRunResult:
    """One-run audit of user-level DP-FedAvg with ``canaries`` canary clients (module doc).

    ``noise_multiplier=0`` trains without noise (no claim: inf) as a sanity check of the
    attack. ``k_pos`` / ``k_neg`` default to m / 20 guesses each way.
    """
    m, k_pos, k_neg = _check(canaries, k_pos, k_neg, noise_multiplier)
    R = validate.positive_int("real_clients", real_clients)
    n = validate.positive_int("examples_per_client", examples_per_client)
    t0 = time.time()
    dirs = canary_directions(m, dim, seed)
    included = _inclusion(m, seed)
    x, y = regression_records(R * n, dim, seed)
    x = np.concatenate([x, dirs])
    y = np.concatenate([y, np.full(m, CANARY_TARGET, np.float32)])
    parts = [np.arange(i * n, (i + 1) * n) for i in range(R)]
    parts += [np.array([R * n + i]) if included[i] else np.zeros(0, np.int64) for i in range(m)]
    data = federated.from_partition(x, y, parts, allow_empty=True)
    model = least_squares_model(dim)
    private = noise_multiplier > 0
    alg = dp_fedavg.dp_fedavg(model, num_clients=R + m, local_steps=1, batch_size=None,
                              client_lr=client_lr, clip_norm=clip_norm,
                              noise_multiplier=noise_multiplier if private else 1.0,
                              sampling_rate=sampling_rate, server_opt=optax.sgd(1.0))
    if not private:
        alg = _non_private(alg)
    run = training.run(alg, data, params=model.init(jax.random.key(0)), rounds=rounds,
                       seed=seed, delta=delta if private else None, progress=False,
                       eval_every=rounds)
    return _finish("DP-FedAvg one-run" + ("" if private else " (no noise)"), run, dirs,
                   included, k_pos=k_pos, k_neg=k_neg, delta=delta, confidence=confidence,
                   private=private, t0=t0, neighbour="add/remove one client",
                   real=(x[:R * n], y[:R * n]),
                   info={"noise_multiplier": noise_multiplier, "sampling_rate": sampling_rate,
                         "rounds": rounds, "real_clients": R, "dim": dim,
                         "clip_norm": clip_norm})


def audit_uldp_avg_one_run(*, canaries: int = 1000, real_users: int = 60, num_silos: int = 3,
                           records_per_user: int = 4, dim: int = 1024, rounds: int = 5,
                           noise_multiplier: float = 1.0, sampling_rate: float = 1.0,
                           clip_norm: float = 1.0, local_lr: float = 0.5,
                           k_pos: int | None = None, k_neg: int | None = None,
                           delta: float = 1e-5, confidence: float = 0.95,
                           seed: int = 0) -> one_run.OneRunResult:
    """One-run audit of ULDP-AVG(-s) with ``canaries`` canary users, each with one record in
    every silo (module doc). Real user u's records go to silos ``(u + j) mod |S|``."""
    m, k_pos, k_neg = _check(canaries, k_pos, k_neg, noise_multiplier)
    R = validate.positive_int("real_users", real_users)
    n = validate.positive_int("records_per_user", records_per_user)
    S = validate.positive_int("num_silos", num_silos)
    t0 = time.time()
    dirs = canary_directions(m, dim, seed)
    included = _inclusion(m, seed)
    x_real, y_real = regression_records(R * n, dim, seed)
    xs, ys, us = [], [], []
    real_user = np.repeat(np.arange(R), n)
    real_silo = (real_user + np.tile(np.arange(n), R)) % S
    canary_ids = R + np.flatnonzero(included)
    for s in range(S):
        sel = real_silo == s
        xs.append(np.concatenate([x_real[sel], dirs[included]]))
        ys.append(np.concatenate([y_real[sel], np.full(len(canary_ids), CANARY_TARGET,
                                                       np.float32)]))
        us.append(np.concatenate([real_user[sel], canary_ids]))
    records = uldp_records.from_silos(xs, ys, us, num_users=R + m)
    data = uldp_data.pair_data(records)
    model = least_squares_model(dim)
    private = noise_multiplier > 0
    alg = uldp.uldp_avg(model, num_silos=S, num_users=R + m, local_epochs=1, batch_size=4,
                        local_lr=local_lr, global_lr=1.0, clip_norm=clip_norm,
                        noise_multiplier=noise_multiplier, sampling_rate=sampling_rate)
    run = training.run(alg, data, params=model.init(jax.random.key(0)), rounds=rounds,
                       seed=seed, delta=delta if private else None, progress=False,
                       eval_every=rounds)
    return _finish(f"{alg.name} one-run (users in {S} silos)" + ("" if private else
                                                                  " (no noise)"),
                   run, dirs, included, k_pos=k_pos, k_neg=k_neg, delta=delta,
                   confidence=confidence, private=private, t0=t0,
                   neighbour="add/remove one user (records in every silo)",
                   real=(x_real, y_real),
                   info={"noise_multiplier": noise_multiplier, "sampling_rate": sampling_rate,
                         "rounds": rounds, "real_users": R, "num_silos": S, "dim": dim,
                         "clip_norm": clip_norm})


__all__ = ["audit_dp_fedavg_one_run", "audit_uldp_avg_one_run", "canary_directions",
           "regression_records"]
