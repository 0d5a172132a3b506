"""Closed-form conversions: analytic Gaussian, Gaussian DP (mu -> epsilon), group privacy.

* Analytic Gaussian (Balle & Wang 2018, Thm. 8): a Gaussian mechanism with sensitivity/std
  ratio ``mu`` is (eps, delta)-DP iff
  ``delta >= Phi(-eps/mu + mu/2) - exp(eps) * Phi(-eps/mu - mu/2)``. A mechanism that is
  ``mu``-GDP (Dong, Roth, Su 2019) has exactly this privacy profile.
* Group privacy: (eps, delta) -> group of size k, (k eps, delta (e^{k eps}-1)/(e^eps-1))
  (Vadhan 2017 Lemma 2.2 in its tight form, as TF Privacy uses); RDP group privacy by
  Mironov 2017 Prop. 2 for groups of size 2^c: (alpha, r) -> (alpha / 2^c, 3^c r) for
  alpha >= 2^(c+1).
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from scipy import optimize, special

from jaxfl import _validate


def _log_ndtr(x):
    return special.log_ndtr(x)


def gaussian_delta(mu: float, eps: float) -> float:
    """Exact delta(eps) of a Gaussian mechanism with sensitivity/std ratio ``mu`` (float64)."""
    mu = _validate.non_negative("mu", mu)
    eps = _validate.non_negative("epsilon", eps)
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = _log_ndtr(-eps / mu + mu / 2)
    b = eps + _log_ndtr(-eps / mu - mu / 2)
    # delta = e^a - e^b = e^a (1 - e^{b-a}), computed stably.
    return float(max(0.0, math.exp(a) * -math.expm1(min(b - a, 0.0))))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest eps with ``gaussian_delta(mu, eps) <= delta`` (exact analytic Gaussian / GDP).

    ``mu`` = sensitivity / noise std (= 1 / noise_multiplier), or the GDP parameter.
    Returns ``inf`` for ``mu = inf`` and 0 for ``mu = 0``.
    """
    delta = _validate.delta(delta)
    if not (_validate._is_real(mu) or (isinstance(mu, np.ndarray) and mu.shape == ())):
        raise _validate.PrivacyParameterError(f"Expected mu to be a real number, got mu={mu!r}.")
    mu = float(mu)
    if math.isnan(mu) or mu < 0:
        raise _validate.PrivacyParameterError(f"Expected mu >= 0, got mu={mu!r}.")
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    if mu < 1e3:
        return float(dp_accounting.get_epsilon_gaussian(1.0 / mu, delta))
    # Large mu: solve directly with a wide bracket.
    f = lambda e: math.log(max(gaussian_delta(mu, e), 1e-300)) - math.log(delta)
    hi = mu * mu
    while f(hi) > 0:
        hi *= 2
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-12))


_BISECTION_STEPS = 200


def _log_delta_of_eps(mu, eps):
    a = special.log_ndtr(-eps / mu + mu / 2)
    b = eps + special.log_ndtr(-eps / mu - mu / 2)
    with np.errstate(divide="ignore"):
        return a + np.log(-np.expm1(np.minimum(b - a, 0.0)))


def gaussian_epsilons(mu, delta: float) -> np.ndarray:
    """Vectorised :func:`gaussian_epsilon`: a bisection of the same
    ``δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` over an array of μ (to ~1e-14 relative; inf for
    μ = inf), for tables of many views."""
    delta = _validate.delta(delta)
    mu = np.asarray(mu, dtype=np.float64)
    if np.any(np.isnan(mu)) or np.any(mu < 0):
        raise _validate.PrivacyParameterError("Expected mu >= 0 (no nan).")
    flat = mu.reshape(-1)
    out = np.zeros_like(flat)
    out[np.isinf(flat)] = np.inf
    live = np.flatnonzero(np.isfinite(flat) & (flat > 0))
    m = flat[live]
    # eps = 0 if delta(0) = 2 Phi(mu / 2) - 1 <= delta.
    zero = 2 * special.ndtr(m / 2) - 1 <= delta
    m, live = m[~zero], live[~zero]
    lo = np.zeros_like(m)
    hi = m * m / 2 + m * math.sqrt(2 * math.log(1 / delta)) + 1.0  # RDP bound >= exact eps
    log_d = math.log(delta)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        above = _log_delta_of_eps(m, mid) > log_d     # delta(mid) too large -> eps larger
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out[live] = hi
    return out.reshape(mu.shape)


def gaussian_noise_multiplier(eps: float, delta: float) -> float:
    """Smallest noise multiplier giving (eps, delta) for one Gaussian mechanism (analytic)."""
    eps = _validate.positive("epsilon", eps)
    delta = _validate.delta(delta)
    return float(dp_accounting.get_sigma_gaussian(eps, delta))


gdp_epsilon = gaussian_epsilon
gdp_delta = gaussian_delta


def composed_gaussian_mu(noise_multipliers) -> float:
    """mu of a composition of Gaussian mechanisms: sqrt(sum 1/sigma_i^2)."""
    s = np.asarray(noise_multipliers, dtype=np.float64)
    if np.any(np.isnan(s)) or np.any(s <= 0):
        raise _validate.PrivacyParameterError("Expected noise multipliers > 0 (no NaN).")
    return float(np.sqrt(np.sum(1.0 / s**2)))


def group_epsilon_delta(eps: float, delta: float, group_size: int) -> tuple[float, float]:
    """(eps, delta)-DP for single units -> guarantee for groups of ``group_size`` units."""
    eps = _validate.non_negative("epsilon", eps)
    delta = _validate.delta(delta)
    k = _validate.positive_int("group_size", group_size)
    if k == 1:
        return eps, delta
    if eps == 0:
        return 0.0, min(1.0, k * delta)
    factor = math.expm1(k * eps) / math.expm1(eps)
    return k * eps, min(1.0, delta * factor)


def group_delta_inverse(eps_group: float, delta_group: float, group_size: int
                        ) -> tuple[float, float]:
    """Per-unit (eps, delta) that :func:`group_epsilon_delta` maps to the group target."""
    k = _validate.positive_int("group_size", group_size)
    eps = _validate.positive("epsilon", eps_group) / k
    delta_group = _validate.delta(delta_group)
    return eps, delta_group * math.expm1(eps) / math.expm1(k * eps) if k > 1 else delta_group


def rdp_group_mironov(orders, rdp, group_size: int) -> tuple[np.ndarray, np.ndarray]:
    """RDP group privacy (Mironov 2017 Prop. 2) for groups of size <= 2^c, c = ceil(log2 k).

    Returns the new ``(orders, rdp)``; only orders alpha >= 2^(c+1) map to valid new orders
    alpha / 2^c > 1 with RDP 3^c * rdp(alpha).
    """
    k = _validate.positive_int("group_size", group_size)
    orders = np.asarray(orders, dtype=np.float64)
    rdp = np.asarray(rdp, dtype=np.float64)
    if orders.ndim != 1 or rdp.shape != orders.shape:
        raise _validate.ShapeError(
            f"Expected rdp.shape == orders.shape (1-D), got {rdp.shape} and {orders.shape}.")
    if np.any(np.isnan(rdp)) or np.any(rdp < 0) or np.any(~(orders > 1)):
        raise _validate.JaxflValueError("Expected RDP values >= 0 (no NaN) at orders > 1.")
    if k == 1:
        return orders, rdp
    c = math.ceil(math.log2(k))
    keep = orders >= 2 ** (c + 1)
    if not np.any(keep):
        raise _validate.JaxflValueError(
            f"Group size {k} needs RDP orders >= {2 ** (c + 1)}; largest given is {orders.max()}.")
    return orders[keep] / 2**c, 3.0**c * rdp[keep]
