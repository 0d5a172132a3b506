"""A finite subject-level epsilon for LocalGroupDP with batch-dependent noise (Alg. 2).

Marathe & Kanani (arXiv 2206.03617 v1), Alg. 2: each step releases
``g~ = (1/B)(sum_{j in S} clip_C(g_j) + N(0, sigma_Z^2 C^2 I_d))`` where ``Z`` is the largest
number of items of one subject in the batch S, so the noise *scale* depends on the data. The
paper's group-privacy argument does not cover this (Marathe & Kanani v1, Sec. 3.2, takes the group
size inside the batch). The strict
accountant used to report ``inf``; that is too pessimistic for a model of finite size ``d``: the
adversary sees Z only through the spread of d Gaussian coordinates, and two isotropic Gaussians
with different variances have finite Renyi divergences (of bounded order). This module turns
that into a sound, finite (and for realistic d astronomically large) epsilon.

Derivation (per step, user i, subject a with k items there, Poisson item sampling at rate q,
``s_z = sigma_z`` in units of C, the ``1/B`` factor is post-processing):

1. Condition on the rest of the batch (independent of a's items under Poisson sampling): its
   sum r and its largest group ``z0 >= 1`` are fixed. Under D' (a removed) the release is
   ``Q = N(r, s_{z0}^2 I_d)``. Under D, ``m ~ Binomial(k, q)`` of a's items are sampled and the
   release is a mixture of ``P_v = N(r + v, s_{max(m, z0)}^2 I_d)`` with ``||v|| <= m``.
2. Joint convexity of the hockey-stick divergence makes the bound for the unconditioned pair at
   most the worst conditional one; since ``sigma_Z`` is nondecreasing in Z, ``z0 >= k`` is
   dominated by ``z0 = k`` (equal variances, largest shift-to-noise ratio), so ``z0 in 1..k``.
3. For ``alpha > 1``, ``P -> int P^alpha Q^(1-alpha)`` and ``P -> int Q^alpha P^(1-alpha)`` are
   convex, so both Renyi divergences of the mixture are at most
   ``log(sum_m b_m exp((alpha - 1) D_alpha(component_m)))/(alpha - 1)`` with ``b_m`` the
   binomial weights and the component divergence maximised at ``||v|| = m``.
4. Isotropic Gaussians: with ``s*^2 = alpha s_Q^2 + (1 - alpha) s_P^2 > 0``,
   ``D_alpha(N(mu, s_P^2 I) || N(0, s_Q^2 I)) = alpha ||mu||^2 / (2 s*^2)
   - d / (2 (alpha - 1)) log(s*^2 / (s_P^(2(1-alpha)) s_Q^(2 alpha)))``; it is infinite when
   ``s*^2 <= 0``, i.e. D's direction is finite only for ``alpha < s_m^2 / (s_m^2 - s_{z0}^2)``.
5. The per-step curve (max over z0 and both directions) composes additively over the user's
   steps and over the users holding the subject (horizontal composition, Thm. 3.9 in RDP), and
   converts to (eps, delta) with :func:`jaxfl.accounting.recipes.epsilon_from_rdp`.

Assumptions: Poisson item sampling (the strict accountant's model), per-user item counts k
public, ``sigma_Z`` nondecreasing in Z. Everything is host-side float64.

Example Usage:
  >>> eps = local_group_batch_epsilon(group_noise_multipliers=[1.0, 1.4], items=2,
  ...                                 sampling_rate=0.1, steps=10, delta=1e-5, model_dim=10)
  >>> 0 < eps < float("inf")
  True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from jaxfl import validate
from jaxfl.accounting import recipes


def gaussian_rdp_isotropic(alpha, *, shift: float, sigma_p: float, sigma_q: float,
                           dim: int) -> np.ndarray:
    """``D_alpha(N(mu, sigma_p^2 I_d) || N(0, sigma_q^2 I_d))`` with ``||mu|| = shift``
    (vectorised over ``alpha > 1``; ``inf`` where the order is not admissible)."""
    a = np.asarray(alpha, np.float64)
    sp2, sq2 = float(sigma_p) ** 2, float(sigma_q) ** 2
    s2 = a * sq2 + (1.0 - a) * sp2
    with np.errstate(divide="ignore", invalid="ignore"):
        logdet = np.log(s2) - (1.0 - a) * np.log(sp2) - a * np.log(sq2)
        out = a * shift**2 / (2.0 * s2) - dim * logdet / (2.0 * (a - 1.0))
    return np.where(s2 > 0, np.maximum(out, 0.0), np.inf)


def _sigma_table(group_noise_multipliers, items: int) -> np.ndarray:
    sig = np.asarray([float(group_noise_multipliers(z)) if callable(group_noise_multipliers)
                      else float(group_noise_multipliers[min(z, len(group_noise_multipliers))
                                                         - 1]) for z in range(1, items + 1)])
    if np.any(~(sig > 0)) or np.any(np.diff(sig) < -1e-12):
        raise validate.PrivacyParameterError(
            f"Expected positive sigma_Z nondecreasing in Z, got {sig.tolist()}.")
    return sig


def default_orders(group_noise_multipliers, items: int) -> np.ndarray:
    """Orders dense near 1 (D's direction is finite only below ``s_Z^2/(s_Z^2 - s_1^2)``)."""
    del group_noise_multipliers, items  # the grid below covers every cap > 1 + 1e-4
    fine = 1.0 + np.logspace(-4, 1, 400)
    return np.unique(np.concatenate([fine, np.asarray(recipes.DEFAULT_ORDERS)]))


def local_group_batch_rdp(orders, *, group_noise_multipliers, items: int,
                          sampling_rate: float, model_dim: int) -> np.ndarray:
    """RDP curve of ONE LocalGroupDP step for a subject with ``items`` items at the user.

    Args:
      orders: RDP orders (> 1).
      group_noise_multipliers: ``sigma_Z`` for ``Z = 1, 2, ...`` (a sequence indexed from Z = 1,
        extended by its last value) or a callable ``Z -> sigma_Z``.
      items: k, the subject's items at this user.
      sampling_rate: Poisson item rate q.
      model_dim: d, the number of released coordinates (model parameters).

    Returns:
      ``[len(orders)]`` float64, ``inf`` where no finite bound holds at that order.
    """
    k = validate.positive_int("items", items)
    q = validate.probability("sampling_rate", sampling_rate, allow_zero=True)
    d = validate.positive_int("model_dim", model_dim)
    a = recipes.check_orders(orders)
    sig = _sigma_table(group_noise_multipliers, k)
    m = np.arange(k + 1)
    b = stats.binom.pmf(m, k, q)
    worst = np.zeros_like(a)
    for z0 in range(1, k + 1):  # host loop, k <= a few hundred
        s0 = sig[z0 - 1]
        per_dir = []
        for direction in (0, 1):
            terms = np.zeros((k + 1, a.size))
            for mm in range(1, k + 1):
                s1 = sig[max(mm, z0) - 1]
                if direction == 0:  # D_alpha(P_m || Q)
                    terms[mm] = gaussian_rdp_isotropic(a, shift=mm, sigma_p=s1, sigma_q=s0, dim=d)
                else:  # D_alpha(Q || P_m)
                    terms[mm] = gaussian_rdp_isotropic(a, shift=mm, sigma_p=s0, sigma_q=s1, dim=d)
            with np.errstate(over="ignore", invalid="ignore"):
                logw = np.log(np.maximum(b, 1e-300))[:, None] + (a - 1.0)[None, :] * terms
                logw[b == 0] = -np.inf
                top = np.max(logw, axis=0)
                lse = top + np.log(np.sum(np.exp(logw - np.where(np.isfinite(top), top, 0.0)),
                                          axis=0))
                val = np.where(np.isfinite(top), lse, top) / (a - 1.0)
            per_dir.append(np.maximum(val, 0.0))
        worst = np.maximum(worst, np.maximum(*per_dir))
    return worst


def local_group_batch_epsilon(*, group_noise_multipliers, items: int, sampling_rate: float,
                              steps: int, delta: float, model_dim: int, users: int = 1,
                              orders: Sequence[float] | None = None,
                              conversion: str = "improved") -> float:
    """Subject-level epsilon of LocalGroupDP with batch-dependent noise ``sigma_Z`` (module doc).

    Args:
      group_noise_multipliers: ``sigma_Z`` for ``Z = 1, 2, ...`` (sequence from Z = 1, or a
        callable ``Z -> sigma_Z``), as calibrated by
        :func:`jaxfl.accounting.subject_dp_bounds.group_noise_multiplier`.
      items: k, the subject's items at each user holding it.
      sampling_rate: Poisson item rate ``q = B / n_i``.
      steps: local steps per user over the whole run (``T * rounds``).
      delta: target delta.
      model_dim: d, number of model parameters (the released coordinates).
      users: users holding the subject with the same (k, q, sigma) (horizontal composition);
        for heterogeneous users sum :func:`local_group_batch_rdp` curves instead.
      orders, conversion: RDP grid (default: dense near 1) and conversion.

    Returns:
      A finite epsilon (``inf`` only if no order admits a finite bound).
    """
    steps = validate.positive_int("steps", steps)
    users = validate.positive_int("users", users)
    a = default_orders(group_noise_multipliers, items) if orders is None else \
        recipes.check_orders(orders)
    step = local_group_batch_rdp(a, group_noise_multipliers=group_noise_multipliers,
                                 items=items, sampling_rate=sampling_rate, model_dim=model_dim)
    total = step * float(steps * users)
    finite = np.isfinite(total)
    if not np.any(finite):
        return math.inf
    return recipes.epsilon_from_rdp(a[finite], total[finite], delta, conversion)[0]


__all__ = ["default_orders", "gaussian_rdp_isotropic", "local_group_batch_epsilon",
           "local_group_batch_rdp"]
