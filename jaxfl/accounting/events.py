"""DpEvent builders for jaxfl's mechanisms.

All events use dp-accounting's ADD_OR_REMOVE_ONE neighbouring relation (the unit being a client,
user, subject, worker or node depending on the algorithm; see each algorithm's docstring).
``noise_multiplier`` is always the noise standard deviation divided by the L2 sensitivity.
"""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting
from dp_accounting import dp_event as _dp_event

from jaxfl import validate

DpEvent = dp_accounting.DpEvent
MixtureOfGaussiansDpEvent = _dp_event.MixtureOfGaussiansDpEvent


def gaussian(noise_multiplier: float) -> DpEvent:
    """One Gaussian mechanism with std ``noise_multiplier`` x sensitivity."""
    return dp_accounting.GaussianDpEvent(
        validate.positive("noise_multiplier", noise_multiplier))


def poisson_gaussian(*, sampling_rate: float, noise_multiplier: float) -> DpEvent:
    """A Poisson-subsampled Gaussian step (q = sampling_rate); q = 1 gives the plain Gaussian."""
    q = validate.probability("sampling_rate", sampling_rate)
    g = gaussian(noise_multiplier)
    return g if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, g)


def repeated(event: DpEvent, count: int) -> DpEvent:
    """``event`` composed ``count`` times (count = 0 gives a no-op)."""
    count = validate.positive_int("count", count, minimum=0)
    if count == 0:
        return dp_accounting.NoOpDpEvent()
    return event if count == 1 else dp_accounting.SelfComposedDpEvent(event, count)


def composed(events: Sequence[DpEvent]) -> DpEvent:
    events = list(events)
    for e in events:
        if not isinstance(e, DpEvent):
            raise validate.JaxflValueError(f"Expected DpEvents to compose, got {e!r}.")
    events = [e for e in events if not isinstance(e, dp_accounting.NoOpDpEvent)]
    if not events:
        return dp_accounting.NoOpDpEvent()
    return events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(list(events))


def dp_sgd(*, noise_multiplier: float, sampling_rate: float, steps: int) -> DpEvent:
    """DP-SGD / DP-FedAvg: ``steps`` Poisson-subsampled Gaussian steps."""
    return repeated(poisson_gaussian(sampling_rate=sampling_rate,
                                     noise_multiplier=noise_multiplier), steps)


def mixture_of_gaussians(*, noise_multiplier: float, sensitivities: Sequence[float],
                         sampling_probs: Sequence[float]) -> DpEvent:
    """Mixture-of-Gaussians event (PLD only): a unit contributes sensitivity s_j w.p. p_j."""
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    sens = [validate.non_negative(f"sensitivities[{i}]", s) for i, s in enumerate(sensitivities)]
    probs = [validate.probability(f"sampling_probs[{i}]", p, allow_zero=True)
             for i, p in enumerate(sampling_probs)]
    if not sens or len(sens) != len(probs):
        raise validate.ShapeError(
            f"Expected as many sensitivities as sampling_probs (>= 1), got {len(sens)} and "
            f"{len(probs)}.")
    if abs(sum(probs) - 1.0) > 1e-9:
        raise validate.PrivacyParameterError(
            f"Expected sampling_probs to sum to 1, got sum={sum(probs)!r}.")
    keep = [i for i, p in enumerate(probs) if p > 0]  # dp-accounting needs probs in (0, 1]
    return MixtureOfGaussiansDpEvent(standard_deviation=sigma,
                                     sensitivities=tuple(sens[i] for i in keep),
                                     sampling_probs=tuple(probs[i] for i in keep))


def to_json(event: DpEvent):
    """A JSON-serialisable nested representation of ``event`` (for logs and checkpoints)."""
    import attr

    def conv(x):
        if isinstance(x, DpEvent):
            return {"name": type(x).__name__,
                    **{f.name: conv(getattr(x, f.name)) for f in attr.fields(type(x))}}
        if isinstance(x, list | tuple):
            return [conv(v) for v in x]
        if hasattr(x, "name") and hasattr(x, "value"):  # enums
            return x.name
        return x

    return conv(event)
