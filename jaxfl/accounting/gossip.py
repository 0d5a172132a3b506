"""Pairwise network-DP accounting for DP gossip averaging (Koskela & Kulkarni 2025, Sec. 3-4).

A view with squared sensitivity ``Δ²`` (from :mod:`jaxfl.sensitivity`) and per-node noise
multiplier σ is exactly a Gaussian mechanism with ``μ = Δ / σ`` (Lemma 6; Dong et al. GDP), so:

* ε at δ: the analytic Gaussian conversion ``jaxfl.accounting.conversions.gaussian_epsilon``
  (tight, what the paper uses, spec Sec. 4); arrays use a vectorised bisection of the same
  ``δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (tests check it against the scalar core);
* the DpEvent: ``GaussianDpEvent(σ / Δ)``, or equivalently ``T`` composed Gaussian events of
  multiplier ``σ √T / Δ`` (use this to compose with other mechanisms in dp-accounting);
* baselines: LDP (``Δ² = T``), DP-FedAvg with a trusted server / secure aggregation (aggregate
  multiplier σ per round: ``μ = √T / σ``, spec 8-A12), central secure aggregation (``Δ² = T/n``);
* "average ε over all pairs" (Fig. 2, 3) = mean over the ordered pairs i != j, pairs with
  Δ = 0 included (spec 8-A13); median and max are reported alongside.

The accounting is data-independent: compute Δ² once per (W, T, view, mode) and reuse it for any
σ. Every summary carries the sensitivity mode it was computed in.

Example Usage:
  >>> round(pair_epsilon(1.0, noise_multiplier=2.0, delta=1e-5), 6)   # mu = 0.5
  1.993091
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from scipy import special

from jaxfl import _validate
from jaxfl.accounting import conversions, events

_BISECTION_STEPS = 200


def _check_delta_sq(delta_sq) -> np.ndarray:
    arr = np.asarray(delta_sq, dtype=np.float64)
    if np.any(np.isnan(arr)) or np.any(arr < 0):
        raise _validate.PrivacyParameterError("Expected squared sensitivities >= 0 (no nan).")
    return arr


def pair_mu(delta_sq, *, noise_multiplier: float):
    """``μ = sqrt(Δ²) / σ`` (GDP parameter of the view)."""
    sigma = _validate.positive("noise_multiplier", noise_multiplier)
    return np.sqrt(_check_delta_sq(delta_sq)) / sigma


def pair_epsilon(delta_sq: float, *, noise_multiplier: float, delta: float) -> float:
    """ε at ``delta`` of one view (scalar; via the core analytic-Gaussian conversion)."""
    mu = float(pair_mu(delta_sq, noise_multiplier=noise_multiplier))
    return conversions.gaussian_epsilon(mu, delta)


def _log_delta_of_eps(mu, eps):
    a = special.log_ndtr(-eps / mu + mu / 2)
    b = eps + special.log_ndtr(-eps / mu - mu / 2)
    with np.errstate(divide="ignore"):
        return a + np.log(-np.expm1(np.minimum(b - a, 0.0)))


def gaussian_epsilons(mu, delta: float) -> np.ndarray:
    """Vectorised analytic-Gaussian ε(μ, δ) (bisection to ~1e-14 relative); inf for μ = inf."""
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


def pair_epsilons(delta_sq, *, noise_multiplier: float, delta: float) -> np.ndarray:
    """Elementwise ε of an array of Δ² (nan entries, e.g. i == j, stay nan)."""
    arr = np.asarray(delta_sq, dtype=np.float64)
    out = np.full(arr.shape, np.nan)
    ok = ~np.isnan(arr)
    out[ok] = gaussian_epsilons(pair_mu(arr[ok], noise_multiplier=noise_multiplier), delta)
    return out


def view_dp_event(delta_sq: float, *, noise_multiplier: float, rounds: int | None = None
                  ) -> dp_accounting.DpEvent:
    """DpEvent a view satisfies: ``GaussianDpEvent(σ/Δ)``.

    With ``rounds=T`` the same GDP profile as ``T`` composed ``GaussianDpEvent(σ √T / Δ)``.
    Δ = 0 gives ``NoOpDpEvent``; Δ = inf gives ``NonPrivateDpEvent``.
    """
    sigma = _validate.positive("noise_multiplier", noise_multiplier)
    d2 = float(_check_delta_sq(delta_sq))
    if d2 == 0:
        return dp_accounting.NoOpDpEvent()
    if math.isinf(d2):
        return dp_accounting.NonPrivateDpEvent()
    if rounds is None:
        return events.gaussian(sigma / math.sqrt(d2))
    T = _validate.positive_int("rounds", rounds)
    return events.repeated(events.gaussian(sigma * math.sqrt(T / d2)), T)


def ldp_event(*, noise_multiplier: float, rounds: int) -> dp_accounting.DpEvent:
    """Local DP baseline: each of T messages of j is a Gaussian mechanism (``Δ² = T``)."""
    return events.repeated(events.gaussian(noise_multiplier), rounds)


def fedavg_event(*, noise_multiplier: float, rounds: int) -> dp_accounting.DpEvent:
    """Full-batch DP-FedAvg with trusted aggregation: aggregate multiplier σ, T rounds."""
    return events.repeated(events.gaussian(noise_multiplier), rounds)


def central_delta_sq(rounds: int, num_nodes: int) -> float:
    """``Δ² = T / n``: central aggregation of n noisy values with secure aggregation."""
    return _validate.positive_int("rounds", rounds) / _validate.positive_int("n", num_nodes)


def summary(delta_sq, *, noise_multiplier: float, delta: float, mode: str,
            view: str | None = None) -> dict:
    """Mean / median / max / min ε over the given pairs (nan entries are excluded).

    ``delta_sq`` is the off-diagonal pair array (e.g. ``PairSensitivity.off_diagonal()``).
    """
    eps = pair_epsilons(delta_sq, noise_multiplier=noise_multiplier, delta=delta)
    eps = eps[~np.isnan(eps)]
    if eps.size == 0:
        raise _validate.JaxflValueError("No pairs to summarise.")
    d2 = np.asarray(delta_sq, dtype=np.float64)
    d2 = d2[~np.isnan(d2)]
    return {"mode": mode, "view": view, "noise_multiplier": float(noise_multiplier),
            "delta": float(delta), "pairs": int(eps.size),
            "mean_epsilon": float(np.mean(eps)), "median_epsilon": float(np.median(eps)),
            "max_epsilon": float(np.max(eps)), "min_epsilon": float(np.min(eps)),
            "mean_delta_sq": float(np.mean(d2)), "max_delta_sq": float(np.max(d2))}


def calibrate_noise_multiplier(delta_sq, *, target_epsilon: float, delta: float,
                               statistic: str = "mean", rtol: float = 1e-9) -> float:
    """Smallest σ whose mean (or max) pairwise ε is <= ``target_epsilon`` (bisection in log σ).

    The statistic is non-increasing in σ because ε is decreasing in μ = Δ/σ.
    """
    target = _validate.positive("target_epsilon", target_epsilon)
    _validate.one_of("statistic", statistic, ("mean", "max"))
    d2 = np.asarray(delta_sq, dtype=np.float64)
    d2 = _check_delta_sq(d2[~np.isnan(d2)])
    if np.any(np.isinf(d2)):
        raise _validate.PrivacyParameterError("A pair has infinite sensitivity: no sigma works.")
    reduce = np.mean if statistic == "mean" else np.max
    stat = lambda s: reduce(pair_epsilons(d2, noise_multiplier=s, delta=delta))
    lo, hi = 1e-3, 1.0
    while stat(hi) > target:
        lo, hi = hi, hi * 4
        if hi > 1e8:
            raise _validate.PrivacyParameterError("Could not calibrate sigma (target too small).")
    while stat(lo) <= target and lo > 1e-8:
        lo /= 4
    while hi / lo - 1 > rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if stat(mid) > target else (lo, mid)
    return hi
