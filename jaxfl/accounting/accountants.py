"""Epsilon from DpEvents via dp-accounting (RDP and PLD), curves over rounds, calibration.

Reported numbers default to PLD (tight); RDP is used for fast per-round curves and calibration.
Everything runs on the host in float64.

Example Usage:
  >>> from jaxfl.accounting import events
  >>> ev = events.dp_sgd(noise_multiplier=1.1, sampling_rate=256 / 60000, steps=14063)
  >>> round(epsilon(ev, 1e-5, accountant="rdp"), 3)
  2.597
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import dp_accounting
import numpy as np
from dp_accounting import pld as _pld
from dp_accounting import rdp as _rdp
from scipy import optimize

from jaxfl import validate
from jaxfl.accounting import recipes

ACCOUNTANTS = ("pld", "rdp")
RELATION = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def rdp_curve(event: dp_accounting.DpEvent, orders: Sequence[float] = recipes.DEFAULT_ORDERS
              ) -> np.ndarray:
    """RDP curve ``[len(orders)]`` (float64) of ``event`` (dp-accounting RDP accountant)."""
    orders = recipes.check_orders(orders)
    acc = _rdp.RdpAccountant(orders=orders.tolist(), neighboring_relation=RELATION)
    if not acc.supports(event):
        raise validate.JaxflValueError(f"RDP accountant does not support {event!r}.")
    acc.compose(event)
    return np.asarray(acc._rdp, dtype=np.float64)  # pylint: disable=protected-access


@functools.lru_cache(maxsize=4096)
def _lru_rdp(event, orders):
    return rdp_curve(event, orders)


def _cached_rdp(event, orders):
    try:
        hash(event)
    except TypeError:
        return rdp_curve(event, orders)
    return _lru_rdp(event, orders)


def epsilon(event: dp_accounting.DpEvent, delta: float, *, accountant: str = "pld",
            orders: Sequence[float] | None = None, conversion: str = "improved",
            value_discretization_interval: float = 1e-4) -> float:
    """Epsilon of ``event`` at ``delta``.

    Args:
      event: the DpEvent (ADD_OR_REMOVE_ONE neighbouring relation).
      delta: target delta in (0, 1).
      accountant: ``"pld"`` (tight, default) or ``"rdp"``.
      orders: RDP orders (RDP only); defaults to dp-accounting's grid.
      conversion: RDP -> DP conversion, see :mod:`jaxfl.accounting.recipes`.
      value_discretization_interval: PLD discretisation (pessimistic rounding).
    """
    delta = validate.delta(delta)
    validate.one_of("accountant", accountant, ACCOUNTANTS)
    validate.one_of("conversion", conversion, recipes.CONVERSIONS)
    if accountant == "rdp":
        orders = tuple(orders) if orders is not None else recipes.DEFAULT_ORDERS
        curve = _cached_rdp(event, orders)
        return recipes.epsilon_from_rdp(orders, curve, delta, conversion)[0]
    validate.positive("value_discretization_interval", value_discretization_interval,
                       validate.JaxflValueError)
    interval = float(value_discretization_interval)
    try:
        hash(event)
    except TypeError:
        return _pld_epsilon(event, delta, interval)
    return _lru_pld_epsilon(event, delta, interval)


def _pld_epsilon(event, delta: float, interval: float) -> float:
    acc = _pld.PLDAccountant(neighboring_relation=RELATION,
                             value_discretization_interval=interval)
    if not acc.supports(event):
        raise validate.JaxflValueError(f"PLD accountant does not support {event!r}.")
    try:
        acc.compose(event)
        return float(acc.get_epsilon(delta))
    except OverflowError as e:  # losses beyond float range (noise multipliers near 0)
        raise validate.JaxflValueError(
            f"PLD accountant cannot represent {event!r} at a discretization interval of "
            f"{interval:g} ({e}); its privacy losses exceed the float range.") from e


# A PLD epsilon takes up to seconds (a per-round curve builds one PLD per round); runs that
# share an event (ULDP-AVG and -AVG-w, a strict and a paper report of the same mechanism, the
# points of a sweep) ask for the same numbers. Events are frozen dataclasses: equal events
# give the same float, so the cache returns exactly what a fresh accountant would.
@functools.lru_cache(maxsize=4096)
def _lru_pld_epsilon(event, delta: float, interval: float) -> float:
    return _pld_epsilon(event, delta, interval)


def cache_clear() -> None:
    """Empties the RDP-curve and PLD-epsilon caches (a measurement of the accountants' own
    time or memory starts from this)."""
    _lru_rdp.cache_clear()
    _lru_pld_epsilon.cache_clear()


DEFAULT_PLD_INTERVAL = 1e-4
PLD_RELATIVE_SLACK = 1e-4


def pld_roundings(event: dp_accounting.DpEvent, count: int = 1) -> int:
    """How many discretised PLDs dp-accounting's PLD accountant composes for ``event``.

    A Gaussian event composed ``k`` times is built as one Gaussian of std ``sigma / sqrt(k)``
    (one discretisation); every other mechanism is discretised once and self-composed
    ``count`` times. Each discretisation rounds privacy losses up by less than one
    ``value_discretization_interval``, so this bounds the pessimism the grid adds to epsilon.
    """
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return pld_roundings(event.event, count * event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return sum(pld_roundings(e, count) for e in event.events)
    if isinstance(event, dp_accounting.NoOpDpEvent | dp_accounting.NonPrivateDpEvent):
        return 0
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return 1
    return count


def bounded_pld_interval(event: dp_accounting.DpEvent, delta: float, *,
                         relative_slack: float = PLD_RELATIVE_SLACK,
                         rdp_epsilon: float | None = None) -> float:
    """A PLD ``value_discretization_interval`` that keeps the PLD small at any noise level.

    With dp-accounting's default grid (1e-4) a Gaussian with a tiny noise multiplier (epsilon
    in the thousands) needs millions of grid points per step, i.e. gigabytes. The interval is
    ``max(1e-4, relative_slack * eps_rdp / pld_roundings(event))``: the RDP epsilon (cheap) sets
    the scale of the privacy losses, and since each of the ``pld_roundings`` discretisations
    adds at most one interval to the losses, the grid adds at most about ``relative_slack *
    eps_rdp`` to epsilon. The grid size then stays bounded (for a Gaussian of std ``sigma``,
    about ``4 k sigma / relative_slack`` points per step with ``k`` ~ 7 tail deviations, where
    the rule is active; the default grid elsewhere, so ordinary settings are unchanged).

    Soundness: dp-accounting's PLD accountant discretises pessimistically
    (``pessimistic_estimate=True``: losses rounded up, truncated tail mass moved to an infinite
    loss), so the discretised PLD dominates the true one for *every* interval and its epsilon
    is an upper bound whatever interval is chosen; the interval only trades tightness for size.

    Args:
      event: the DpEvent.
      delta: target delta (for the RDP estimate).
      relative_slack: allowed relative loosening of epsilon by the grid.
      rdp_epsilon: the RDP epsilon if already known (computed otherwise; when RDP does not
        support the event or gives an infinite epsilon the default interval is returned).
    """
    relative_slack = validate.positive("relative_slack", relative_slack,
                                        validate.JaxflValueError)
    if rdp_epsilon is None:
        try:
            rdp_epsilon = epsilon(event, delta, accountant="rdp")
        except validate.JaxflValueError:
            return DEFAULT_PLD_INTERVAL
    roundings = pld_roundings(event)
    if roundings == 0 or not np.isfinite(rdp_epsilon) or rdp_epsilon <= 0:
        return DEFAULT_PLD_INTERVAL
    return max(DEFAULT_PLD_INTERVAL, relative_slack * float(rdp_epsilon) / roundings)


def bounded_pld_epsilon(event: dp_accounting.DpEvent, delta: float, *,
                        relative_slack: float = PLD_RELATIVE_SLACK,
                        rdp_epsilon: float | None = None) -> float:
    """PLD epsilon on the :func:`bounded_pld_interval` grid (an upper bound, bounded memory)."""
    delta = validate.delta(delta)
    interval = bounded_pld_interval(event, delta, relative_slack=relative_slack,
                                    rdp_epsilon=rdp_epsilon)
    return epsilon(event, delta, accountant="pld", value_discretization_interval=interval)


def delta_for_epsilon(event: dp_accounting.DpEvent, eps: float, *, accountant: str = "pld"
                      ) -> float:
    eps = validate.non_negative("epsilon", eps)
    validate.one_of("accountant", accountant, ACCOUNTANTS)
    if accountant == "rdp":
        acc = _rdp.RdpAccountant(neighboring_relation=RELATION)
    else:
        acc = _pld.PLDAccountant(neighboring_relation=RELATION)
    if not isinstance(event, dp_accounting.DpEvent) or not acc.supports(event):
        raise validate.JaxflValueError(f"{accountant} accountant does not support {event!r}.")
    acc.compose(event)
    return float(acc.get_delta(eps))


def epsilon_curve(step_event: dp_accounting.DpEvent, steps: Sequence[int], delta: float, *,
                  accountant: str = "rdp", orders: Sequence[float] | None = None,
                  conversion: str = "improved") -> np.ndarray:
    """Epsilon after each count in ``steps`` of ``step_event`` (float64 array).

    With RDP the per-step curve is computed once and scaled (RDP composes additively), so a
    curve over thousands of rounds costs one accountant call.
    """
    raw = np.asarray(steps)
    if raw.ndim != 1:
        raise validate.ShapeError(f"Expected a 1-D list of step counts, got shape {raw.shape}.")
    if raw.dtype == bool or not (np.issubdtype(raw.dtype, np.integer) or (
            np.issubdtype(raw.dtype, np.floating) and np.all(np.isfinite(raw))
            and np.all(raw == np.round(raw)))):
        raise validate.JaxflValueError(f"Expected integer step counts, got {raw!r}.")
    steps_arr = raw.astype(np.int64)
    if np.any(steps_arr < 0):
        raise validate.JaxflValueError("Expected non-negative step counts.")
    delta = validate.delta(delta)
    validate.one_of("accountant", accountant, ACCOUNTANTS)
    if accountant == "rdp":
        orders = tuple(orders) if orders is not None else recipes.DEFAULT_ORDERS
        curve = _cached_rdp(step_event, orders)
        # 0 steps x an excluded (inf) order is "no cost", not NaN.
        with np.errstate(invalid="ignore"):
            scaled = np.where(steps_arr[:, None] == 0, 0.0, steps_arr[:, None] * curve[None, :])
        eps, _ = recipes.epsilon_from_rdp(orders, scaled, delta, conversion)
        return np.where(steps_arr == 0, 0.0, eps)
    out = []
    for t in steps_arr:
        out.append(0.0 if t == 0 else epsilon(dp_accounting.SelfComposedDpEvent(step_event, int(t)),
                                               delta, accountant="pld"))
    return np.asarray(out, dtype=np.float64)


def bisect_noise_multiplier(epsilon_of: Callable[[float], float], target_epsilon: float, *,
                            lower: float = 0.05, upper: float = 1e4, rtol: float = 1e-5
                            ) -> float:
    """Smallest sigma (to ``rtol``) with ``epsilon_of(sigma) <= target_epsilon`` for a
    non-increasing ``epsilon_of``: Brent's method on log sigma, then nudged up until the
    private side holds (the returned sigma always satisfies the target)."""
    if epsilon_of(upper) > target_epsilon:
        raise validate.PrivacyParameterError(
            f"No noise multiplier <= {upper} reaches epsilon={target_epsilon}.")
    if epsilon_of(lower) <= target_epsilon:
        return lower
    f = lambda x: min(epsilon_of(math.exp(x)), 1e9) - target_epsilon
    root = optimize.brentq(f, math.log(lower), math.log(upper), xtol=rtol / 4)
    sigma = math.exp(root)
    while epsilon_of(sigma) > target_epsilon:  # brentq brackets the root; stay above it
        sigma *= 1.0 + rtol / 4
    return sigma


def calibrate_noise_multiplier(make_event: Callable[[float], dp_accounting.DpEvent] | None = None,
                               *, target_epsilon: float, delta: float | None = None,
                               accountant: str = "rdp", lower: float = 0.05,
                               upper: float = 500.0, tol: float = 1e-4,
                               epsilon_of: Callable[[float], float] | None = None) -> float:
    """The library's one calibration entry point: the smallest noise multiplier (up to
    ``tol``) whose privacy loss meets ``target_epsilon``, always on the private side.

    Give either ``make_event`` (sigma -> DpEvent; calibrated at ``delta`` by
    ``dp_accounting.calibrate_dp_mechanism`` with the RDP or PLD accountant), or ``epsilon_of``
    (sigma -> epsilon, non-increasing in sigma: any accountant without a DpEvent, e.g. a
    pairwise gossip statistic or a paper's moments-accountant recipe; solved by
    :func:`bisect_noise_multiplier` with relative tolerance ``tol``).
    """
    target_epsilon = validate.positive("target_epsilon", target_epsilon)
    lower = validate.positive("lower", lower)
    upper = validate.positive("upper", upper)
    tol = validate.positive("tol", tol, validate.JaxflValueError)
    if lower >= upper:
        raise validate.PrivacyParameterError(
            f"Expected lower < upper, got lower={lower!r}, upper={upper!r}.")
    if (make_event is None) == (epsilon_of is None):
        raise validate.JaxflValueError("Expected exactly one of make_event and epsilon_of.")
    if epsilon_of is not None:
        return bisect_noise_multiplier(epsilon_of, target_epsilon, lower=lower, upper=upper,
                                       rtol=tol)
    delta = validate.delta(delta)
    validate.one_of("accountant", accountant, ACCOUNTANTS)

    def fresh():
        if accountant == "rdp":
            return _rdp.RdpAccountant(neighboring_relation=RELATION)
        return _pld.PLDAccountant(neighboring_relation=RELATION)

    at_upper = fresh()
    at_upper.compose(make_event(upper))
    if at_upper.get_epsilon(delta) > target_epsilon:
        raise validate.PrivacyParameterError(
            f"target_epsilon={target_epsilon!r} at delta={delta!r} is not reachable with a noise "
            f"multiplier <= upper={upper!r}; raise `upper` or the budget.")

    return float(dp_accounting.calibrate_dp_mechanism(
        fresh, make_event, target_epsilon, delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(lower, upper), tol=tol))
