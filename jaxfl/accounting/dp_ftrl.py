"""Accounting of DP-FTRL / matrix-factorization mechanisms and of adaptive clipping.

DP-FTRL (Kairouz et al. 2021; BandMF: Choquette-Choo et al. 2023; BLT: Dvijotham et al. 2024).
The server releases ``C x + sigma * clip * z`` (equivalently adds the round-t row of
``C^{-1} sigma clip z`` to the round-t sum of clipped updates ``x_t``) with a strategy matrix
``C``. Under a (k, b)-participation schema (every client participates at most k times, any two
participations at least b rounds apart) the L2 sensitivity of ``C x`` is ``clip * sens`` with
``sens`` the strategy's multi-participation sensitivity (computed by the algorithm builder with
``jax_privacy.matrix_factorization.sensitivity``; this module does not import JAX). The whole run
is then ONE Gaussian mechanism with ``mu = sens / sigma``: ``GaussianDpEvent(sigma / sens)``
under add/remove of one client. No amplification by sampling is claimed.

Adaptive clipping (Andrew et al. 2021): each round also releases a noisy count of the unclipped
clients, centred (``sum(b_i - 1/2)``, sensitivity 1/2 under add/remove) with noise std
``sigma_b``: a second Gaussian with noise multiplier ``2 sigma_b`` on the same sampled cohort.
The two Gaussians composed are one Gaussian with noise multiplier
``(sigma^-2 + (2 sigma_b)^-2)^(-1/2)`` (:func:`combined_noise_multiplier`), subsampled once.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import dp_accounting

from jaxfl import validate
from jaxfl.accounting import accountants, events, report


def combined_noise_multiplier(noise_multiplier: float, count_noise_multiplier: float) -> float:
    """Noise multiplier of two Gaussian mechanisms (multipliers sigma, sigma_c) on the same
    input released together: ``(sigma^-2 + sigma_c^-2)^(-1/2)``."""
    s = validate.positive("noise_multiplier", noise_multiplier)
    c = validate.positive("count_noise_multiplier", count_noise_multiplier)
    return float((s ** -2 + c ** -2) ** -0.5)


def update_noise_multiplier(target: float, count_noise: float) -> float:
    """Andrew et al. (2021), Thm. 1: the update's noise multiplier such that update + centred
    count (noise std ``count_noise``, sensitivity 1/2) together have noise multiplier ``target``:
    ``(target^-2 - (2 count_noise)^-2)^(-1/2)``."""
    t = validate.positive("target", target)
    b = validate.positive("count_noise", count_noise)
    inner = t ** -2 - (2.0 * b) ** -2
    if inner <= 0:
        raise validate.JaxflValueError(
            f"Expected count_noise > target / 2 (the count alone would exceed the budget), got "
            f"target={t}, count_noise={b}.")
    return float(inner ** -0.5)


def adaptive_clip_round_event(*, sampling_rate: float, noise_multiplier: float,
                              count_noise: float) -> dp_accounting.DpEvent:
    """One DP-FedAvg round with adaptive clipping: the update's Gaussian (sigma) and the
    centred count's Gaussian (std ``count_noise``, sensitivity 1/2) on one Poisson cohort."""
    sigma_eff = combined_noise_multiplier(noise_multiplier, 2.0 * count_noise)
    return events.poisson_gaussian(sampling_rate=sampling_rate, noise_multiplier=sigma_eff)


def ftrl_adaptive_clip_event(*, noise_multiplier: float, sensitivity: float,
                             count_noise: float, participations: int) -> dp_accounting.DpEvent:
    """DP-FTRL with adaptive clipping, as one Gaussian.

    The update stream is released normalised by the (public, previously released) clip norm
    of its round, so it is the matrix mechanism on unit-norm contributions: a Gaussian with
    ``mu_u = sensitivity / noise_multiplier``. Each of the client's at most ``participations``
    rounds also releases its centred count with independent noise std ``count_noise``
    (sensitivity 1/2): ``mu_c^2 = participations / (2 count_noise)^2``. Gaussians compose to
    one with ``mu^2 = mu_u^2 + mu_c^2``, i.e. noise multiplier ``1 / mu`` (equal to
    dp-accounting's composition of ``Gaussian(noise_multiplier / sensitivity)`` and
    ``participations`` x ``Gaussian(2 count_noise)``).
    """
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    s = validate.positive("sensitivity", sensitivity)
    b = validate.positive("count_noise", count_noise)
    k = validate.positive_int("participations", participations)
    mu = math.sqrt((s / sigma) ** 2 + k / (2.0 * b) ** 2)
    return events.gaussian(1.0 / mu)


def cyclic_participation(rounds: int, min_sep: int, max_participations: int | None = None
                         ) -> int:
    """Largest number of participations k in ``rounds`` rounds with separation >= ``min_sep``
    (and at most ``max_participations``): ``min(ceil(rounds / min_sep), max_participations)``."""
    rounds = validate.positive_int("rounds", rounds, minimum=0)
    b = validate.positive_int("min_sep", min_sep)
    k = -(-rounds // b)
    return k if max_participations is None else min(k, int(max_participations))


class FtrlAccountant(report.CurveAccountant):
    """Accountant of a matrix-factorization mechanism from its sensitivity curve.

    Args:
      noise_multiplier: sigma (noise std over clip norm of the i.i.d. stream z).
      sensitivity: ``rounds -> sens`` (float): the strategy's (k, b)-participation sensitivity
        of the released prefix after ``rounds`` rounds (unit clip norm).
      strategy, details: labels written in the report's details.
      final: ``"pld"`` (default) or ``"rdp"``: the accountant of the headline; the Gaussian's
        epsilon is exact (closed form) either way up to the accountant's discretisation.
      count_noise, participations: adaptive clipping (:func:`ftrl_adaptive_clip_event`): the
        std of each round's centred unclipped count (sensitivity 1/2) and ``rounds -> k``, the
        most participations of one client in the first ``rounds`` rounds.
    """

    def __init__(self, *, noise_multiplier: float, sensitivity: Callable[[int], float],
                 strategy: str, unit: str = "client", info: dict | None = None,
                 final: str = "pld", count_noise: float | None = None,
                 participations: Callable[[int], int] | None = None):
        self.sigma = validate.positive("noise_multiplier", noise_multiplier)
        self.sensitivity = sensitivity
        self.strategy = strategy
        self.final = final
        if count_noise is not None:
            validate.positive("count_noise", count_noise)
            if participations is None:
                raise validate.JaxflValueError(
                    "Expected participations (rounds -> k) with count_noise.")
        self.count_noise, self.participations = count_noise, participations
        self._init_args = dict(sensitivity=sensitivity, strategy=strategy, unit=unit,
                               info=info, final=final, count_noise=count_noise,
                               participations=participations)
        info = dict(info or {})
        if count_noise is not None:
            info["count_noise"] = count_noise

        def curve(rounds, delta):
            return [self._epsilon(int(r), delta) for r in rounds]

        def details(rounds, delta):
            s = float(self.sensitivity(rounds))
            out = {"strategy": strategy, "sensitivity": s, "noise_multiplier": self.sigma,
                   "mu": s / self.sigma, **info}
            if count_noise is not None:  # mu: the update stream's; mu_total with the counts
                k = int(participations(rounds))
                out.update(participations=k, mu_count=math.sqrt(k) / (2.0 * count_noise),
                           mu_total=math.hypot(s / self.sigma, math.sqrt(k) / (2 * count_noise)))
            return out

        super().__init__(curve, unit=unit, name=f"gaussian_mf_{final}", details=details,
                         event_fn=self._event)

    def replace(self, **changes) -> FtrlAccountant:
        """A new accountant with some constructor arguments changed (e.g. another
        ``noise_multiplier``, for calibration); ``self`` is left as it is."""
        return FtrlAccountant(**{"noise_multiplier": self.sigma, **self._init_args, **changes})

    def _event(self, rounds: int) -> dp_accounting.DpEvent:
        if rounds == 0:
            return dp_accounting.NoOpDpEvent()
        s = float(self.sensitivity(rounds))
        if self.count_noise is None:
            return events.gaussian(self.sigma / s)
        return ftrl_adaptive_clip_event(noise_multiplier=self.sigma, sensitivity=s,
                                        count_noise=self.count_noise,
                                        participations=int(self.participations(rounds)))

    def _epsilon(self, rounds: int, delta: float) -> float:
        if rounds == 0:
            return 0.0
        event = self._event(rounds)
        if self.final == "pld":
            return accountants.bounded_pld_epsilon(event, delta)
        return accountants.epsilon(event, delta, accountant=self.final)


__all__ = ["combined_noise_multiplier", "update_noise_multiplier", "adaptive_clip_round_event",
           "ftrl_adaptive_clip_event",
           "cyclic_participation", "FtrlAccountant"]

