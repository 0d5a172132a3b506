"""Building blocks of subject-level accounting (Marathe & Kanani, arXiv 2206.03617 v1, Sec. 3):
per-step RDP of the Poisson-subsampled Gaussian, the paper's moments-accountant calibration,
its group privacy (Thm. 3.4 / Cor. 3.5), subject inclusion probabilities, horizontal
composition (Thm. 3.9) and the mixture-of-Gaussians event of item clipping at subject level.
Host-side float64; used by :mod:`jaxfl.accounting.subject_dp`.

Example Usage:
  >>> round(paper_group_target(4.0, 1e-5, 2)[1], 10)
  6.767e-07
  >>> round(subject_inclusion_probability(0.1, 2), 4)
  0.19
"""

# pylint: disable=invalid-name
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import dp_accounting
import numpy as np
from dp_accounting import pld as _pld

from jaxfl import validate
from jaxfl.accounting import accountants, events, recipes

# TF-Privacy's classic DP-SGD order grid (compute_dp_sgd_privacy), used with the "basic"
# conversion for the "TF-privacy-style" calibration (our reading of the paper's unstated
# accountant).
TF_PRIVACY_ORDERS = tuple([1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5]
                          + [float(a) for a in range(5, 64)] + [128.0, 256.0, 512.0])

# --------------------------------------------------------------------------------------------
# RDP building blocks
# --------------------------------------------------------------------------------------------
def subject_inclusion_probability(sampling_rate, items):
    """``1 - (1 - q)^k``: probability that a subject with ``k`` items enters a Poisson batch."""
    q = np.asarray(sampling_rate, np.float64)
    k = np.asarray(items, np.float64)
    q_below_one = np.where(q >= 1.0, 0.0, q)  # log1p(-1) would warn; that branch is not used
    out = np.where(q >= 1.0, (k > 0).astype(np.float64), -np.expm1(k * np.log1p(-q_below_one)))
    return float(out) if out.ndim == 0 else out


@functools.lru_cache(maxsize=65536)
def _step_rdp(q: float, sigma: float, orders: tuple) -> np.ndarray:
    if sigma == math.inf or q == 0.0:
        return np.zeros(len(orders))
    if q >= 1.0:  # plain Gaussian: alpha / (2 sigma^2)
        return np.asarray(orders, np.float64) / (2.0 * sigma**2)
    return accountants.rdp_curve(events.poisson_gaussian(sampling_rate=q, noise_multiplier=sigma),
                                 orders)


def step_rdp(sampling_rate: float, noise_multiplier: float,
             orders: Sequence[float] = recipes.DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of one Poisson-subsampled Gaussian step (dp-accounting; cached, float64)."""
    q = validate.probability("sampling_rate", sampling_rate, allow_zero=True)
    s = validate.positive("noise_multiplier", noise_multiplier) if noise_multiplier != math.inf \
        else math.inf
    return _step_rdp(float(q), float(s), tuple(float(o) for o in orders))


def _eps(orders, rdp, delta, conversion):
    return recipes.epsilon_from_rdp(orders, rdp, delta, conversion)[0]


def item_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: float, delta: float,
                 orders: Sequence[float] = recipes.DEFAULT_ORDERS,
                 conversion: str = "improved") -> float:
    """Item-level RDP epsilon of ``steps`` DP-SGD steps (``steps`` may be fractional: RDP is
    linear in the number of compositions, used for the paper's ``sqrt(s)`` rounds)."""
    steps = validate.non_negative("steps", steps, validate.JaxflValueError)
    if steps == 0:
        return 0.0
    return _eps(orders, steps * step_rdp(sampling_rate, noise_multiplier, orders), delta,
                conversion)


@functools.lru_cache(maxsize=4096)
def _calibrate(eps, delta, q, steps, orders, conversion):
    def eps_of(sigma):
        return item_epsilon(noise_multiplier=sigma, sampling_rate=q, steps=steps, delta=delta,
                            orders=orders, conversion=conversion)

    return accountants.calibrate_noise_multiplier(epsilon_of=eps_of, target_epsilon=eps,
                                                  upper=1e4, tol=1e-5)


def calibrate_noise_multiplier(*, target_epsilon: float, delta: float, sampling_rate: float,
                               steps: int, orders: Sequence[float] = recipes.DEFAULT_ORDERS,
                               conversion: str = "improved") -> float:
    """The moments-accountant sigma of the paper: item-level (eps, delta) after ``steps``
    Poisson-subsampled Gaussian steps at rate ``q`` (cached; returned on the private side)."""
    eps = validate.positive("target_epsilon", target_epsilon)
    delta = validate.delta(delta)
    q = validate.probability("sampling_rate", sampling_rate)
    steps = validate.positive_int("steps", steps)
    validate.one_of("conversion", conversion, recipes.CONVERSIONS)
    return _calibrate(eps, delta, q, steps, tuple(float(o) for o in orders), conversion)


def dwork_roth_sigma(epsilon: float, delta: float) -> float:
    """Classic Gaussian mechanism sigma ``sqrt(2 ln(1.25/delta)) / eps`` (Dwork-Roth Thm A.1,
    valid for eps < 1), quoted by the paper's Thm. 3.3."""
    eps = validate.positive("epsilon", epsilon)
    return math.sqrt(2.0 * math.log(1.25 / validate.delta(delta))) / eps


# --------------------------------------------------------------------------------------------
# Group privacy as the paper uses it (Thm. 3.4 / Cor. 3.5)
# --------------------------------------------------------------------------------------------
def paper_group_privacy(eps_item: float, delta_item: float, group_size: int
                        ) -> tuple[float, float]:
    """Thm. 3.4 (Dwork-Roth): item (eps, delta) -> group of g items (g eps, g e^{(g-1)eps} delta).

    Looser than :func:`jaxfl.accounting.conversions.group_epsilon_delta` (tight form)."""
    g = validate.positive_int("group_size", group_size)
    eps = validate.non_negative("epsilon", eps_item)
    return g * eps, g * math.exp((g - 1) * eps) * validate.delta(delta_item)


def paper_group_target(epsilon: float, delta: float, group_size: int) -> tuple[float, float]:
    """Cor. 3.5: the item-level target ``(E/g, D / (g e^{(g-1)E/g}))`` whose Thm. 3.4 image is
    exactly (E, D)."""
    g = validate.positive_int("group_size", group_size)
    eps = validate.positive("epsilon", epsilon)
    delta = validate.delta(delta)
    return eps / g, delta / (g * math.exp((g - 1) * eps / g))


def group_noise_multiplier(*, target_epsilon: float, delta: float, group_size: int,
                           sampling_rate: float, steps: int,
                           orders: Sequence[float] = recipes.DEFAULT_ORDERS,
                           conversion: str = "improved") -> float:
    """LocalGroupDP's ``sigma_{i,Z}`` (paper section 3.3): the item-level sigma for Cor. 3.5's
    target with group size ``Z``; ``Z = 1`` gives the LocalItemDP sigma."""
    e, d = paper_group_target(target_epsilon, delta, group_size)
    return calibrate_noise_multiplier(target_epsilon=e, delta=d, sampling_rate=sampling_rate,
                                      steps=steps, orders=orders, conversion=conversion)


def paper_group_epsilon(sigma, q, steps, delta, Z, orders, conversion) -> float:
    """Paper-mode group epsilon: item (e, d_e) with Z e^{(Z-1)e} d_e = delta, then Z * e."""
    curve = steps * step_rdp(q, sigma, orders)
    e = _eps(orders, curve, delta / Z, conversion) / Z  # start: d_e = delta / Z
    for _ in range(200):  # fixed point of e = eps_item(delta / (Z e^{(Z-1) e}))
        d_e = delta / (Z * math.exp((Z - 1) * e))
        if d_e <= 0:
            return math.inf
        new = _eps(orders, curve, d_e, conversion)
        if abs(new - e) < 1e-12:
            break
        e = new
    return Z * e


# --------------------------------------------------------------------------------------------
# Horizontal composition (Thm. 3.9) and per-subject strict RDP
# --------------------------------------------------------------------------------------------
def horizontal_rdp(per_user_rdp: np.ndarray, users_per_round: int) -> np.ndarray:
    """Worst-case RDP of one round for a subject from its per-user round RDPs ``[..., n, O]``:
    the sum of the ``s`` largest per order (any ``s`` of its users may be sampled together;
    ``s = n`` sums all). Sequential composition, Thm. 3.9."""
    r = np.asarray(per_user_rdp, np.float64)
    s = validate.positive_int("users_per_round", users_per_round)
    if s >= r.shape[-2]:
        return r.sum(axis=-2)
    return np.sort(r, axis=-2)[..., -s:, :].sum(axis=-2)



def mixture_event(*, noise_multiplier: float, sampling_rate: float, items: int
                  ) -> dp_accounting.DpEvent:
    """One step of item-level clipping seen at subject level: ``j`` of the subject's ``k`` items
    are Poisson-sampled w.p. Binom(k, q)(j) and move the clipped sum by <= jC (the collinear
    worst case); a mixture-of-Gaussians event (PLD accountant only)."""
    from scipy import stats
    k = validate.positive_int("items", items)
    q = validate.probability("sampling_rate", sampling_rate)
    return events.mixture_of_gaussians(noise_multiplier=noise_multiplier,
                                       sensitivities=list(range(k + 1)),
                                       sampling_probs=stats.binom.pmf(np.arange(k + 1), k, q))


def mixture_epsilon_pld(*, noise_multiplier: float, sampling_rate: float, items: int,
                        steps: int, delta: float, value_discretization_interval: float = 1e-3
                        ) -> float:
    """Tight single-user subject epsilon for item-level clipping (LocalItemDP), PLD of
    :func:`mixture_event` over ``steps`` steps (slow: seconds)."""
    ev = mixture_event(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate,
                       items=items)
    acc = _pld.PLDAccountant(neighboring_relation=accountants.RELATION,
                             value_discretization_interval=value_discretization_interval)
    acc.compose(ev, validate.positive_int("steps", steps))
    return float(acc.get_epsilon(validate.delta(delta)))


