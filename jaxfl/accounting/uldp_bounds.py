"""The numbers behind ULDP-FL's accounting (Kato et al., PVLDB 2024, Sec. 3 and Sec. 5.1): RDP
of the sub-sampled Gaussian as Opacus computes it, user-level curves, record-level DP-SGD
histories and the group conversions; :mod:`jaxfl.accounting.uldp` builds the accountants
from them (and re-exports them).


Three families of numbers:

* **User-level (ULDP-NAIVE / -SGD / -AVG / -AVG-w, Thms. 1 and 3, Remark 1).** Every round is
  a Gaussian mechanism with noise multiplier sigma w.r.t. the user-level sensitivity (q = 1), or
  the Poisson-subsampled Gaussian with user sampling rate q (-s / -ws). ``mode="paper"``
  reproduces the authors' numbers exactly: Opacus' RDP of the sub-sampled Gaussian (Mironov,
  Talwar & Zhang 2019, the exact signed series for fractional orders), the Opacus order grid and
  the Opacus RDP -> DP conversion. ``mode="pld"`` (default) is the tight PLD accountant of
  dp-accounting; ``mode="rdp"`` is dp-accounting's RDP with its own grid and conversion. All
  three are valid upper bounds.
* **Record-level DP-SGD inside a silo (ULDP-GROUP, RECORD-LEVEL-DP).** Opacus-style
  ``(sigma, q_s = 1/ceil(n_s/B), steps = T Q ceil(n_s/B))`` histories.
* **Group privacy (ULDP-GROUP-k, Thm. 2, Fig. 2).** From record-level DP-SGD to groups of k
  records (a user capped at k records):

  - ``"rdp_paper"``: the authors' RDP conversion (Mironov 2017 Prop. 2), k *floored* to a power
    of two (the paper reports this lower bound on purpose, Sec. 5.1) and the authors' order grid,
    which for large k contains orders below 2k where Prop. 2 does not apply.
  - ``"rdp"``: the same conversion made sound: k *rounded up* to a power of two, orders >= 2k.
  - ``"normal_paper"``: the authors' (eps, delta) conversion (k eps, k e^{(k-1) eps} delta) with
    their binary search on the input delta (stops when the group delta is within 0.1% of the
    target, from either side) and k capped at 62.
  - ``"normal"``: the tight (eps, delta) group conversion (delta factor (e^{k eps}-1)/(e^eps-1)),
    searched so that the group delta never exceeds the target.
  - ``"pld_mog"`` (sound default): no group conversion at all. Under Poisson sampling with rate
    q a group of k records contributes j ~ Binomial(k, q) clipped gradients to a step, so the
    step is dominated by the mixture-of-Gaussians pair N(0, s^2) vs sum_j Bin(j; k, q) N(j, s^2)
    (Schuchardt et al., NeurIPS 2024, group privacy amplification); composed with the PLD
    accountant. Across silos a user's k records may be split in any way; the bound composes
    every silo with a group of k records, which dominates every split (monotone in the group
    size), so it is sound but not tight for |S| > 1.

Example Usage:
  >>> round(uldp_epsilon(rounds=50, noise_multiplier=5.0, delta=1e-5, mode="paper"), 3)
  7.077
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import dp_accounting
import numpy as np
from scipy import special

from jaxfl import validate
from jaxfl.accounting import accountants, events, recipes, sampled_gaussian

MODES = ("pld", "rdp", "paper")
GROUP_CONVERSIONS = ("pld_mog", "rdp", "normal", "rdp_paper", "normal_paper")
OPACUS_ORDERS = recipes.OPACUS_ORDERS
# The authors cap the (eps, delta) group conversion at k = 62 ("for sigma=5 opacus").
NORMAL_PAPER_MAX_K = 62


# ----------------------------------------------------------------------------------------------
# RDP of the Poisson-subsampled Gaussian, exactly as Opacus 1.4 computes it.
# ----------------------------------------------------------------------------------------------

def subsampled_gaussian_rdp(*, sampling_rate: float, noise_multiplier: float, steps: int = 1,
                            orders: Sequence[float] = OPACUS_ORDERS) -> np.ndarray:
    """RDP ``[len(orders)]`` of ``steps`` Poisson-subsampled Gaussian steps (Opacus' numbers).

    Integer orders come from dp-accounting (the exact binomial expansion, identical to Opacus).
    Fractional orders come from :func:`jaxfl.accounting.sampled_gaussian.sgm_rdp`, the signed
    series of Mironov, Talwar & Zhang 2019 with Opacus' stopping rule: dp-accounting 0.6.0 adds
    the *absolute values* of that series' terms and stops after 1000 terms (an upper bound that
    is up to 8.5% above the exact value, and does not reproduce the authors' numbers;
    ``tests/accounting/uldp_test.py``).

    Args:
      sampling_rate: Poisson rate q in [0, 1] (q = 1 is the plain Gaussian, alpha/(2 sigma^2)).
      noise_multiplier: sigma (noise std / L2 sensitivity).
      steps: number of composed steps.
      orders: RDP orders (> 1).
    """
    q = validate.probability("sampling_rate", sampling_rate, allow_zero=True)
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    steps = validate.positive_int("steps", steps, minimum=0)
    orders = np.asarray(orders, dtype=np.float64)
    if np.any(orders <= 1):
        raise validate.JaxflValueError("Expected all RDP orders > 1.")
    if q == 0.0:
        return np.zeros_like(orders)
    if q == 1.0:
        return steps * orders / (2 * sigma**2)
    out = np.empty_like(orders)
    integer = orders == np.floor(orders)
    if integer.any():
        event = events.poisson_gaussian(sampling_rate=q, noise_multiplier=sigma)
        out[integer] = accountants.rdp_curve(event, tuple(orders[integer].tolist()))
    if (~integer).any():
        out[~integer] = sampled_gaussian.sgm_rdp(sampling_rate=q, noise_multiplier=sigma,
                                                 orders=orders[~integer])
    return steps * out


def opacus_epsilon(rdp, delta: float, orders: Sequence[float] = OPACUS_ORDERS) -> float:
    """Opacus' ``get_privacy_spent``: Balle et al. 2020's conversion minimised over orders."""
    return recipes.epsilon_from_rdp(orders, rdp, delta, "opacus")[0]


# ----------------------------------------------------------------------------------------------
# User-level accounting (ULDP-NAIVE / -SGD / -AVG, with or without user sub-sampling).
# ----------------------------------------------------------------------------------------------

def round_event(*, noise_multiplier: float, sampling_rate: float = 1.0) -> dp_accounting.DpEvent:
    """One round of a ULDP method: Gaussian (q = 1) or Poisson-subsampled Gaussian over users."""
    return events.poisson_gaussian(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)


def uldp_epsilon_curve(rounds: Sequence[int], *, noise_multiplier: float, delta: float,
                       sampling_rate: float = 1.0, mode: str = "pld") -> np.ndarray:
    """User-level epsilon after each entry of ``rounds`` (float64)."""
    validate.one_of("mode", mode, MODES)
    delta = validate.delta(delta)
    raw = np.asarray(rounds)
    if raw.dtype == bool or not (np.issubdtype(raw.dtype, np.integer) or (
            np.issubdtype(raw.dtype, np.floating) and np.all(np.isfinite(raw))
            and np.all(raw == np.round(raw)))):
        raise validate.JaxflValueError(f"Expected integer round counts, got {raw!r}.")
    rounds = raw.astype(np.int64).reshape(-1)
    if np.any(rounds < 0):
        raise validate.JaxflValueError("Expected non-negative round counts.")
    if mode == "paper":
        one = subsampled_gaussian_rdp(sampling_rate=sampling_rate,
                                      noise_multiplier=noise_multiplier)
        eps, _ = recipes.epsilon_from_rdp(OPACUS_ORDERS, rounds[:, None] * one[None], delta,
                                          "opacus")
        return np.where(rounds == 0, 0.0, eps)
    event = round_event(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate)
    return accountants.epsilon_curve(event, rounds, delta, accountant=mode)


def uldp_epsilon(*, rounds: int, noise_multiplier: float, delta: float,
                 sampling_rate: float = 1.0, mode: str = "pld") -> float:
    """User-level epsilon of ULDP-NAIVE / -SGD / -AVG(-w)(-s) after ``rounds`` rounds."""
    return float(uldp_epsilon_curve([rounds], noise_multiplier=noise_multiplier, delta=delta,
                                    sampling_rate=sampling_rate, mode=mode)[0])


# ----------------------------------------------------------------------------------------------
# Record-level DP-SGD in a silo and group privacy (ULDP-GROUP, Thm. 2; Fig. 2).
# ----------------------------------------------------------------------------------------------

def opacus_sampling(num_records: int, batch_size: int) -> tuple[float, int]:
    """Opacus ``make_private`` defaults: (q_s = 1/ceil(n/B), steps per epoch = ceil(n/B))."""
    n = validate.positive_int("num_records", num_records)
    b = validate.positive_int("batch_size", batch_size)
    batches = -(-n // b)
    return 1.0 / batches, batches


def expected_batch_size(num_records: int, batch_size: int) -> int:
    """Opacus' divisor E_s = int(n_s q_s) of the noisy gradient sum."""
    q, _ = opacus_sampling(num_records, batch_size)
    return max(1, int(num_records * q))


def paper_group_orders(k: int) -> np.ndarray:
    """The authors' order grid for group size k: 2k + x/10 (x < 100) and linspace(k+10, 64k, 20)."""
    k = validate.positive_int("group_size", k)
    return np.concatenate([2 * k + np.arange(100) / 10.0, np.linspace(k + 10, 64 * k, 20)])


def _floor_pow2(k: int) -> int:
    return 1 << (int(k).bit_length() - 1)


def _ceil_pow2(k: int) -> int:
    return 1 if k <= 1 else 1 << (int(k) - 1).bit_length()


def group_rdp_epsilon(*, sampling_rate: float, noise_multiplier: float, steps: int,
                      group_size: int, delta: float, paper: bool = False) -> float:
    """Group epsilon through Mironov's RDP group conversion (see module docstring).

    Args:
      sampling_rate, noise_multiplier, steps: the record-level DP-SGD history.
      group_size: k (records per user).
      delta: target delta.
      paper: the authors' recipe (k floored to a power of two, their order grid unfiltered).
        Otherwise k is rounded up to a power of two and orders below 2k are dropped (sound).
    """
    k = validate.positive_int("group_size", group_size)
    delta = validate.delta(delta)
    if k == 1:
        rdp = subsampled_gaussian_rdp(sampling_rate=sampling_rate,
                                      noise_multiplier=noise_multiplier, steps=steps)
        return opacus_epsilon(rdp, delta)
    kk = _floor_pow2(k) if paper else _ceil_pow2(k)
    orders = paper_group_orders(kk)
    if not paper:
        orders = orders[orders >= 2 * kk]
    rdp = subsampled_gaussian_rdp(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier,
                                  steps=steps, orders=orders)
    c = int(round(math.log2(kk)))
    return opacus_epsilon(3.0**c * rdp, delta, orders=orders / kk)


def _epsilon_at_log_delta(orders, rdp, log_delta: float) -> float:
    """Opacus' conversion at delta = exp(log_delta) (log space: group searches need delta_in far
    below the float64 range)."""
    orders = np.asarray(orders, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        eps = rdp - (log_delta + np.log(orders)) / (orders - 1) + np.log((orders - 1) / orders)
    return float(np.nanmin(eps))


# Orders for the sound (eps, delta) group search: the Opacus grid plus large orders, so that
# alpha - 1 > k - 1 and the search has a feasible start for every k <= 1024.
WIDE_ORDERS = tuple(OPACUS_ORDERS) + tuple(float(a) for a in (64, 80, 96, 128, 192, 256, 384,
                                                               512, 768, 1024, 2048, 4096))


def _normal_group_paper(rdp, k: int, delta: float) -> float:
    """The authors' search: bisection on log delta_in in (-1e20, log delta] until the group delta
    k e^{(k-1) eps_in} delta_in is within delta/1e3 of delta (either side)."""
    lo, hi = -1e20, math.log(delta)
    eps_in = math.inf
    for _ in range(10_000):
        mid = (lo + hi) / 2
        eps_in = _epsilon_at_log_delta(OPACUS_ORDERS, rdp, mid)
        x = (k - 1) * eps_in + mid
        delta_g = k * math.exp(x) if x < 700 else math.inf
        if abs(delta_g - delta) <= delta / 1e3:
            break
        if delta_g > delta:
            hi = mid
        else:
            lo = mid
    return float(k * eps_in)


def _normal_group_sound(orders, rdp, k: int, delta: float) -> float:
    """Smallest k eps_in whose tight group delta delta_in (e^{k eps_in}-1)/(e^{eps_in}-1) is at
    most ``delta``. The log group delta is concave in log delta_in, so bisection between a
    feasible lower end and the infeasible log delta finds the largest feasible delta_in."""

    def log_group_delta(ld):
        e = _epsilon_at_log_delta(orders, rdp, ld)
        if e <= 0:
            return e, ld + math.log(k)
        # log((e^{k e} - 1) / (e^e - 1)), stable for large e.
        log_factor = (k - 1) * e + math.log(-math.expm1(-k * e)) - math.log(-math.expm1(-e))
        return e, ld + log_factor

    target = math.log(delta)
    lo = -1e3
    while log_group_delta(lo)[1] > target:
        lo *= 2
        if lo < -1e18:
            raise validate.JaxflValueError(
                f"No feasible delta_in for group size {k}; extend the RDP orders.")
    hi = target
    for _ in range(200):
        mid = (lo + hi) / 2
        if log_group_delta(mid)[1] <= target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-10 * max(1.0, abs(lo)):
            break
    return float(k * log_group_delta(lo)[0])


def group_normal_epsilon(*, sampling_rate: float, noise_multiplier: float, steps: int,
                         group_size: int, delta: float, paper: bool = False) -> float:
    """Group epsilon through the (eps, delta) group conversion (see module docstring).

    Args:
      sampling_rate, noise_multiplier, steps: the record-level DP-SGD history.
      group_size: k.
      delta: target group delta.
      paper: the authors' recipe (Opacus grid, factor k e^{(k-1) eps}, 0.1% tolerance on
        either side of delta, k capped at 62). Otherwise the tight factor, a wide order grid and
        a group delta that never exceeds ``delta``.
    """
    k = validate.positive_int("group_size", group_size)
    delta = validate.delta(delta)
    orders = OPACUS_ORDERS if paper else WIDE_ORDERS
    rdp = subsampled_gaussian_rdp(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier,
                                  steps=steps, orders=orders)
    return _normal_from_rdp(orders, rdp, k, delta, paper)


def _normal_from_rdp(orders, rdp, k: int, delta: float, paper: bool) -> float:
    if k == 1:
        return _epsilon_at_log_delta(orders, rdp, math.log(delta))
    if paper:
        return _normal_group_paper(rdp, min(k, NORMAL_PAPER_MAX_K), delta)
    return _normal_group_sound(orders, rdp, k, delta)


def group_mog_event(*, sampling_rate: float, noise_multiplier: float, steps: int,
                    group_size: int) -> dp_accounting.DpEvent:
    """DP-SGD for a group of k records: ``steps`` mixture-of-Gaussians steps with Bin(k, q)."""
    k = validate.positive_int("group_size", group_size)
    q = validate.probability("sampling_rate", sampling_rate)
    j = np.arange(k + 1)
    probs = special.comb(k, j) * q**j * (1 - q) ** (k - j)
    keep = probs > 0
    probs = probs[keep] / probs[keep].sum()
    step = events.mixture_of_gaussians(noise_multiplier=noise_multiplier,
                                       sensitivities=j[keep].astype(float),
                                       sampling_probs=probs)
    return events.repeated(step, steps)


def group_mog_epsilon(*, sampling_rate: float, noise_multiplier: float, steps: int,
                      group_size: int, delta: float,
                      value_discretization_interval: float | None = None) -> float:
    """Group epsilon of DP-SGD via the mixture-of-Gaussians PLD (no group conversion).

    ``value_discretization_interval`` defaults to :func:`mog_discretization` (pessimistic
    rounding: a coarser grid only over-estimates epsilon).
    """
    event = group_mog_event(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier,
                            steps=steps, group_size=group_size)
    vdi = value_discretization_interval or mog_discretization(group_size)
    return accountants.epsilon(event, delta, accountant="pld", value_discretization_interval=vdi)


def mog_discretization(group_size: int) -> float:
    """PLD grid for group size k: 1e-4 up to k = 8, then growing linearly (privacy losses scale
    with k; at sigma = 5, q = 0.01, 1e5 steps the result moves by < 0.1% versus 1e-5)."""
    return 1e-4 * max(1.0, group_size / 8)


def group_epsilon(*, sampling_rate: float, noise_multiplier: float, steps: int,
                  group_size: int, delta: float, conversion: str = "pld_mog") -> float:
    """Epsilon of one DP-SGD history for groups of ``group_size`` records (Fig. 2)."""
    validate.one_of("conversion", conversion, GROUP_CONVERSIONS)
    kw = dict(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier, steps=steps,
              group_size=group_size, delta=delta)
    if conversion == "pld_mog":
        return group_mog_epsilon(**kw)
    if conversion.startswith("rdp"):
        return group_rdp_epsilon(**kw, paper=conversion == "rdp_paper")
    return group_normal_epsilon(**kw, paper=conversion == "normal_paper")


@functools.lru_cache(maxsize=32)
def _system_mog_epsilon(rates: tuple, steps: tuple, noise_multiplier: float, group_size: int,
                        delta: float, vdi: float) -> float:
    """The composed mixture-of-Gaussians PLD epsilon of every silo's history (tens of seconds at
    small sigma). Cached: a pure function of its arguments, which an accountant's report and its
    curve, and the audits, ask for again with the same values."""
    evs = [group_mog_event(sampling_rate=q, noise_multiplier=noise_multiplier, steps=st,
                           group_size=group_size) for q, st in zip(rates, steps, strict=True)]
    return float(accountants.epsilon(events.composed(evs), delta, accountant="pld",
                                     value_discretization_interval=vdi))


def uldp_group_epsilon(*, silo_sizes: Sequence[int], batch_size: int, local_epochs: int,
                       rounds: int, noise_multiplier: float, group_size: int, delta: float,
                       conversion: str = "pld_mog",
                       value_discretization_interval: float | None = None) -> dict:
    """User-level epsilon of ULDP-GROUP-k (Thm. 2) from the bounded silo sizes |D'_s|.

    Each silo runs ``rounds * local_epochs * ceil(|D'_s|/B)`` DP-SGD steps at rate
    ``1/ceil(|D'_s|/B)``. Paper conversions report the maximum over silos of each silo's group
    epsilon (the authors' code); ``"rdp"`` and ``"normal"`` use the whole-system record-level RDP
    ``max_s rho_s(alpha)`` (parallel composition, Thm. 2) before the group step; ``"pld_mog"``
    composes every silo's mixture-of-Gaussians history with a group of k records in each silo.

    ``value_discretization_interval`` is the PLD grid of ``"pld_mog"`` (default
    :func:`mog_discretization`).

    Returns:
      ``{"epsilon", "per_silo", "conversion", "group_size_used", "sound", "sampling_rates",
      "steps"}``.
    """
    validate.one_of("conversion", conversion, GROUP_CONVERSIONS)
    sizes = [validate.positive_int("silo_size", s) for s in silo_sizes]
    k = validate.positive_int("group_size", group_size)
    hist = [opacus_sampling(n, batch_size) for n in sizes]
    steps = [rounds * local_epochs * b for _, b in hist]
    per_silo = None
    if conversion != "pld_mog":
        per_silo = [group_epsilon(sampling_rate=q, noise_multiplier=noise_multiplier, steps=st,
                                  group_size=k, delta=delta, conversion=conversion)
                    for (q, _), st in zip(hist, steps, strict=True)]
    if conversion in ("rdp_paper", "normal_paper"):
        eps = max(per_silo)
        used = _floor_pow2(k) if conversion == "rdp_paper" else min(k, NORMAL_PAPER_MAX_K)
    elif conversion == "pld_mog":
        vdi = value_discretization_interval or mog_discretization(k)
        eps = _system_mog_epsilon(tuple(q for q, _ in hist), tuple(steps),
                                  float(noise_multiplier), k, float(delta), float(vdi))
        used = k
    else:
        eps = _system_group_epsilon(hist, steps, noise_multiplier, k, delta, conversion)
        used = _ceil_pow2(k) if conversion == "rdp" else k
    return {"epsilon": float(eps), "per_silo": per_silo, "conversion": conversion,
            "group_size_used": used, "sound": not conversion.endswith("_paper"),
            "sampling_rates": [q for q, _ in hist], "steps": steps}


def uldp_group_epsilon_curve(rounds: Sequence[int], *, silo_sizes: Sequence[int],
                             batch_size: int, local_epochs: int, noise_multiplier: float,
                             group_size: int, delta: float, conversion: str = "rdp_paper"
                             ) -> np.ndarray:
    """:func:`uldp_group_epsilon` at every entry of ``rounds`` for the RDP conversions, with the
    per-round RDP computed once (RDP composes linearly in the number of steps)."""
    if conversion not in ("rdp_paper", "rdp"):
        raise validate.JaxflValueError(
            f"Curves are available for the RDP conversions, got {conversion!r}.")
    k = validate.positive_int("group_size", group_size)
    delta = validate.delta(delta)
    paper = conversion == "rdp_paper"
    kk = (_floor_pow2(k) if paper else _ceil_pow2(k))
    orders = paper_group_orders(kk) if kk > 1 else np.asarray(OPACUS_ORDERS)
    if not paper and kk > 1:
        orders = orders[orders >= 2 * kk]
    per_round = []
    for n in silo_sizes:
        q, b = opacus_sampling(n, batch_size)
        per_round.append(subsampled_gaussian_rdp(sampling_rate=q,
                                                 noise_multiplier=noise_multiplier,
                                                 steps=local_epochs * b, orders=orders))
    per_round = np.asarray(per_round)
    factor = 3.0 ** round(math.log2(kk))
    out = []
    for t in rounds:
        if t == 0:
            out.append(0.0)
            continue
        rdp = factor * t * per_round
        if paper:  # the code: each silo's epsilon, then the max
            out.append(max(opacus_epsilon(r, delta, orders / kk) for r in rdp))
        else:  # the system's record-level RDP (max over silos), then one conversion
            out.append(opacus_epsilon(np.max(rdp, axis=0), delta, orders / kk))
    return np.asarray(out)


def record_level_epsilon(*, silo_sizes: Sequence[int], batch_size: int, local_epochs: int,
                         rounds: int, noise_multiplier: float, delta: float,
                         mode: str = "paper") -> float:
    """Record-level epsilon of RECORD-LEVEL-DP: silos hold disjoint records (parallel
    composition), so the maximum over silos. ``mode`` as in :func:`uldp_epsilon_curve`."""
    validate.one_of("mode", mode, MODES)
    out = []
    for n in silo_sizes:
        q, b = opacus_sampling(n, batch_size)
        steps = rounds * local_epochs * b
        if mode == "paper":
            out.append(opacus_epsilon(subsampled_gaussian_rdp(
                sampling_rate=q, noise_multiplier=noise_multiplier, steps=steps), delta))
        else:
            out.append(accountants.epsilon(
                events.dp_sgd(noise_multiplier=noise_multiplier, sampling_rate=q, steps=steps),
                delta, accountant=mode))
    return float(max(out))


def _system_group_epsilon(hist, steps, sigma, k, delta, conversion):
    """Group epsilon of the whole system: record-level RDP max_s rho_s, then group conversion."""
    if conversion == "rdp":
        kk = _ceil_pow2(k)
        orders = paper_group_orders(kk)[paper_group_orders(kk) >= 2 * kk] if kk > 1 else \
            np.asarray(OPACUS_ORDERS)
        rdp = np.max([subsampled_gaussian_rdp(sampling_rate=q, noise_multiplier=sigma, steps=st,
                                              orders=orders)
                      for (q, _), st in zip(hist, steps, strict=True)], axis=0)
        if kk == 1:
            return opacus_epsilon(rdp, delta, orders)
        c = int(round(math.log2(kk)))
        return opacus_epsilon(3.0**c * rdp, delta, orders=orders / kk)
    # normal: record-level RDP of the system is the max over silos (parallel composition).
    rdp = np.max([subsampled_gaussian_rdp(sampling_rate=q, noise_multiplier=sigma, steps=st,
                                          orders=WIDE_ORDERS)
                  for (q, _), st in zip(hist, steps, strict=True)], axis=0)
    return _normal_from_rdp(WIDE_ORDERS, rdp, k, delta, paper=False)
