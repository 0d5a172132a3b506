"""The accounting of private hyperparameter selection (:mod:`jaxfl.selection`): the law of the
number of runs ``K`` and dp-accounting's ``RepeatAndSelectDpEvent`` (Liu and Talwar, STOC 2019;
Papernot and Steinke, ICLR 2022), in float64 NumPy on the host.

* ``poisson`` (shape ``inf``): K ~ Poisson(mean); K = 0 is possible (nothing is released);
* ``geometric`` (shape 1): P[K = k] = gamma (1 - gamma)^(k - 1), k >= 1;
* ``logarithmic`` (shape 0): P[K = k] = (1 - gamma)^k / (k log(1 / gamma)), k >= 1;
* ``negative_binomial`` (0 < shape < inf): the negative binomial law (shape, gamma)
  conditioned on K >= 1 (Papernot and Steinke's truncated negative binomial);

with ``gamma`` solved from the mean (:func:`tnb_gamma`). Only dp-accounting's RDP accountant
supports the event (its PLD accountant does not).

Example Usage:
  >>> from jaxfl.accounting import events
  >>> run_event = events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.01, steps=1000)
  >>> procedure_epsilon(run_event, 1e-5, "geometric", 1.0) < procedure_epsilon(
  ...     run_event, 1e-5, "geometric", 10.0)
  True
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
from dp_accounting import dp_event as _dp_event
from scipy import special, stats

from jaxfl import validate
from jaxfl.accounting import accountants, recipes

FAMILIES = {"poisson": math.inf, "geometric": 1.0, "logarithmic": 0.0,
            "negative_binomial": None}


# ----------------------------------------------------------------------------- the law of K

def shape_of(family: str, shape: float | None = None) -> float:
    """The ``RepeatAndSelectDpEvent`` shape of ``family`` (``shape`` only for
    ``negative_binomial``, where it must lie in (0, inf))."""
    validate.one_of("family", family, tuple(FAMILIES))
    fixed = FAMILIES[family]
    if fixed is None:
        if shape is None:
            raise validate.JaxflValueError(
                "Expected a shape in (0, inf) for family='negative_binomial', got shape=None.")
        value = validate.positive("shape", shape, validate.JaxflValueError)
        return value
    if shape is not None and float(shape) != fixed:
        raise validate.JaxflValueError(
            f"Expected no shape (or shape={fixed}) for family={family!r}, got shape={shape!r}.")
    return fixed


def _tnb_mean(gamma: float, shape: float) -> float:
    """Mean of the truncated negative binomial law (Papernot and Steinke, Definition 1)."""
    if gamma >= 1.0:
        return 1.0
    if shape == 0.0:
        return (1.0 - gamma) / (gamma * -math.log(gamma))
    # shape (1 - gamma) / (gamma (1 - gamma^shape)), written with expm1 for small shape
    return shape * (1.0 - gamma) / (gamma * -math.expm1(shape * math.log(gamma)))


def tnb_gamma(mean: float, shape: float) -> float:
    """The ``gamma`` of the truncated negative binomial law with ``mean`` (``shape`` >= 0).

    Solved by bisection on the decreasing map ``gamma -> mean`` and returned from the side
    whose mean is at most ``mean`` (so the drawn law's mean never exceeds the accounted one;
    dp-accounting's accountant solves from the other side, a smaller gamma, which only
    loosens its bound).
    """
    mean = check_mean(mean)
    if mean == 1.0:
        return 1.0
    if shape == 1.0:
        return 1.0 / mean
    lo, hi = 0.0, 1.0  # mean(lo) = inf > target >= mean(hi) = 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _tnb_mean(mid, shape) > mean:
            lo = mid
        else:
            hi = mid
    return hi


def check_mean(mean) -> float:
    mean = validate.positive("mean", mean, validate.JaxflValueError)
    if mean < 1.0:
        raise validate.JaxflValueError(
            f"Expected the mean number of runs >= 1 (dp-accounting's RepeatAndSelectDpEvent), "
            f"got mean={mean!r}.")
    return mean


def pmf(family: str, mean: float, k, shape: float | None = None) -> np.ndarray:
    """``P[K = k]`` (float64) of the declared law, for integer ``k`` (0 outside the support)."""
    eta = shape_of(family, shape)
    mean = check_mean(mean)
    k = np.asarray(k, dtype=np.float64)
    if math.isinf(eta):
        return stats.poisson.pmf(k, mean)
    gamma = tnb_gamma(mean, eta)
    out = np.zeros_like(k)
    pos = k >= 1
    if gamma >= 1.0:
        return np.where(k == 1, 1.0, 0.0)
    kk = k[pos]
    if eta == 0.0:
        out[pos] = np.exp(kk * math.log1p(-gamma) - np.log(kk) - math.log(-math.log(gamma)))
    else:
        log_norm = math.log(math.expm1(-eta * math.log(gamma)))  # gamma^-eta - 1
        out[pos] = np.exp(kk * math.log1p(-gamma) + special.gammaln(kk + eta)
                          - special.gammaln(eta) - special.gammaln(kk + 1) - log_norm)
    return out


def draw_runs(family: str, mean: float, rng: np.random.Generator, size=None,
              shape: float | None = None):
    """Draws the number of runs ``K`` from the declared law with ``rng`` (int64)."""
    eta = shape_of(family, shape)
    mean = check_mean(mean)
    rng = validate.generator(rng)
    n = 1 if size is None else int(np.prod(size))
    if math.isinf(eta):
        out = rng.poisson(mean, n)
    else:
        gamma = tnb_gamma(mean, eta)
        if gamma >= 1.0:
            out = np.ones(n, np.int64)
        elif eta == 0.0:
            out = rng.logseries(1.0 - gamma, n)
        elif eta == 1.0:
            out = rng.geometric(gamma, n)
        else:  # negative binomial(eta, gamma) conditioned on K >= 1
            out = rng.negative_binomial(eta, gamma, n)
            while (zero := out == 0).any():
                out[zero] = rng.negative_binomial(eta, gamma, int(zero.sum()))
    out = np.asarray(out, np.int64)
    return int(out[0]) if size is None else out.reshape(size)


# ----------------------------------------------------------------------------- accounting

def repeat_and_select(run_event: dp_accounting.DpEvent, family: str, mean: float,
                      shape: float | None = None) -> dp_accounting.DpEvent:
    """dp-accounting's ``RepeatAndSelectDpEvent`` of ``run_event`` for the declared law."""
    if not isinstance(run_event, dp_accounting.DpEvent):
        raise validate.JaxflValueError(f"Expected a DpEvent, got {run_event!r}.")
    return _dp_event.RepeatAndSelectDpEvent(run_event, check_mean(mean),
                                                shape_of(family, shape))


def rdp_curve(event: dp_accounting.DpEvent, why: str) -> np.ndarray:
    try:  # memoized for hashable events (the grid's points often share one)
        return accountants._cached_rdp(event, recipes.DEFAULT_ORDERS)
    except validate.JaxflValueError as e:
        raise validate.JaxflValueError(
            f"Private selection needs the per-run event in Renyi DP (dp-accounting accounts "
            f"RepeatAndSelectDpEvent with its RDP accountant only; its PLD accountant does not "
            f"support it), but the RDP accountant does not support {why}: {e}") from None


def procedure_epsilon(run_event: dp_accounting.DpEvent, delta: float, family: str,
                      mean: float, shape: float | None = None) -> float:
    """Epsilon at ``delta`` of running ``run_event`` a random number of times (the declared
    law) and releasing the best run: dp-accounting's RDP accountant on
    ``RepeatAndSelectDpEvent`` (default orders, the library's RDP -> DP conversion)."""
    event = repeat_and_select(run_event, family, mean, shape)
    rdp_curve(run_event, "the per-run event")
    return accountants.epsilon(event, delta, accountant="rdp")



__all__ = ["FAMILIES", "shape_of", "tnb_gamma", "check_mean", "pmf", "draw_runs",
           "repeat_and_select", "rdp_curve", "procedure_epsilon"]
