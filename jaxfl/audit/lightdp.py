"""Canary audit of LightDP-FL's masked uploads under the worst-case colluder and straggler sets
(Hong, Lin, Duan, arXiv 2412.06120, Eqs. 7-8, Lemma 1, Prop. 1; :mod:`jaxfl.algorithms.lightdp`,
:func:`jaxfl.accounting.lightdp.design`).

Neighbours: one record of the target client i changes, moving its clipped local model by at
most the design sensitivity Delta; the audit uses the worst case ``v = Delta e_0``. Adversary:
the server colluding with ``C_bar`` clients (static) while ``S_bar`` clients straggle. The
colluders know their own individual noise and every pairwise term they share (the pair seeds),
so they subtract them; honest stragglers would leave their pair terms unknown in the view, so
the worst case (spec section 3.5, and :func:`jaxfl.accounting.lightdp.worst_case`) has no
honest stragglers: the stragglers are colluders and every honest client uploads.

The uploads are generated with the library's own noise code (``individual_noise`` and
``pair_masks``, the same pair seeds ``fold_in(fold_in(k, min), max)`` and round folding as
``lightdp_fl``), with client i's model shifted by ``v`` under D. The adversary's statistic is
the exact LLR of the honest uploads after removing the colluders' terms: per coordinate they are
``N(v e_i, C_m)`` with the Lemma 1 covariance ``C_m = ((M-1) k + u) I - k (J - I)``
(``k = sigma_K^2``, ``u = sigma_U^2``, ``M = N - C_bar`` honest clients), so the test is
``(C_m^-1 e_i)^T X[:, 0]`` and ``mu = Delta sqrt((C_m^-1)_ii)``.

Claims: ``paper`` is the nominal target epsilon of the paper-mode design (Prop. 1's sufficient
condition); ``strict`` is the exact Gaussian epsilon of the same noise at the worst view
(``NoiseDesign.exact_epsilon``).

Example Usage:
  >>> import jax
  >>> r = audit_lightdp(epsilon=2.0, delta=1e-2, num_clients=5, max_colluders=2,
  ...                   max_stragglers=1, trials=2000, key=jax.random.key(0))
  >>> r.epsilon_lb <= r.claimed["strict"]
  True
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import _validate
from jaxfl.accounting import lightdp as lightdp_accounting
from jaxfl.algorithms import lightdp
from jaxfl.audit import canary, statistics

TARGET = 0


def honest_covariance(*, num_clients: int, num_colluders: int, sigma_u: float,
                      sigma_k: float) -> np.ndarray:
    """Lemma 1 ``C_m`` of the honest uploaders when every straggler colludes (float64)."""
    M = num_clients - num_colluders
    k, u = sigma_k**2, sigma_u**2
    return ((M - 1) * k + u) * np.eye(M) - k * (np.ones((M, M)) - np.eye(M))


def audit_lightdp(*, epsilon: float, delta: float, num_clients: int, max_colluders: int,
                  max_stragglers: int, trials: int, key: jax.Array, sensitivity: float = 1.0,
                  dim: int = 2, mode: str = "paper", confidence: float = 0.95,
                  batch_size: int = 4096) -> canary.AuditResult:
    """Audits one round of LightDP-FL's masking for client 0 (see module docstring).

    Args:
      epsilon, delta: the design target (one round) and the audit's delta.
      num_clients: N.
      max_colluders: C_bar (the colluders are the last C_bar clients).
      max_stragglers: S_bar (the stragglers are colluders: the worst case).
      trials: runs per hypothesis.
      key: audit key.
      sensitivity: Delta.
      dim: model dimension (the shift is along e_0).
      mode: noise design ``"paper"`` (Prop. 1 calibration) or ``"strict"``.
      confidence: Clopper-Pearson confidence.
      batch_size: trials vmapped together.
    """
    N = _validate.positive_int("num_clients", num_clients, minimum=2)
    C_bar = _validate.positive_int("max_colluders", max_colluders, minimum=0)
    S_bar = _validate.positive_int("max_stragglers", max_stragglers, minimum=0)
    if C_bar >= N or S_bar > C_bar:
        raise _validate.JaxflValueError(
            "Expected max_colluders < num_clients and max_stragglers <= max_colluders (the "
            "worst case puts every straggler among the colluders).")
    delta = _validate.delta(delta)
    d = lightdp_accounting.design(epsilon=epsilon, delta=delta, num_clients=N,
                                  max_colluders=C_bar, max_stragglers=S_bar,
                                  sensitivity=sensitivity, rounds=1, mode=mode)
    colluders = np.arange(N - C_bar, N)
    is_col = jnp.zeros((N,), bool).at[jnp.asarray(colluders)].set(True)
    honest = np.arange(N - C_bar)
    Cm = honest_covariance(num_clients=N, num_colluders=C_bar, sigma_u=d.sigma_u,
                           sigma_k=d.sigma_k)
    shift = np.zeros(len(honest))
    shift[TARGET] = sensitivity
    stat, mu = statistics.gaussian_llr(shift, np.zeros(len(honest)), Cm)
    t_round = 0
    ids = jnp.arange(N, dtype=jnp.int32)
    su, sk = jnp.float32(d.sigma_u), jnp.float32(d.sigma_k)

    def mechanism(k, present):
        pair_keys = jax.random.fold_in(k, 0)
        indiv = lightdp.individual_noise(jax.random.fold_in(k, 1), ids, dim=dim, sigma_u=su)
        masks = lightdp.pair_masks(pair_keys, t_round, num_clients=N, dim=dim, sigma_k=sk)
        models = jnp.zeros((N, dim)).at[TARGET, 0].set(jnp.where(present, sensitivity, 0.0))
        uploads = models + indiv + masks  # Eq. 7, every client (stragglers' never arrive)
        # Colluders' knowledge: every pair term touching a colluder (their seeds).
        honest_only = lightdp.pair_masks(pair_keys, t_round, num_clients=N, dim=dim,
                                         sigma_k=sk, excluded=is_col)
        known = masks - honest_only
        return (uploads - known)[: N - C_bar, 0]  # honest uploads, colluder terms removed

    claims = {"paper": float(epsilon) if mode == "paper" else d.epsilon,
              "strict": d.exact_epsilon(rounds=1, delta=delta)}
    worst = lightdp_accounting.worst_case(num_clients=N, max_colluders=C_bar,
                                          max_stragglers=S_bar, sigma_u=d.sigma_u,
                                          sigma_k=d.sigma_k)
    return canary.audit(
        mechanism, stat, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=batch_size, name=f"LightDP-FL (N={N}, C={C_bar}, S={S_bar} colluding)",
        claimed=claims, neighbour="one record of a client (model moves by <= Delta)",
        view="server + colluders: uploads, colluders' noise and pair seeds",
        info={"design_mode": mode, "sigma_u": d.sigma_u, "sigma_k": d.sigma_k,
              "gamma": d.gamma, "mu": mu, "mu_design": math.sqrt(d.v_exact_max) * sensitivity,
              "worst_case_argmax_exact": worst["argmax_exact"], "colluders": colluders.tolist(),
              "statistic": "exact Gaussian LLR of the honest uploads (Lemma 1 covariance)"})


__all__ = ["audit_lightdp", "honest_covariance"]
