"""The privacy-noise sampler as the accountant sees it, and the delta its truncation adds.

A Gaussian accountant assumes noise with full support. A float sampler has a bounded support:
``jax.random.normal`` in float32 (``sqrt(2) erfinv`` of a 24-bit uniform) stops at about
[-5.42, +5.22] standard deviations. jaxfl's sampler (:func:`jaxfl.noise.standard_normal`)
inverts a uniform whose exponent comes from up to 105 random bits, so its support is
[-S, S] with S = :data:`SUPPORT_HALF_WIDTH` or a little more (the exact float32 value is
computed from the sampler's extreme bit patterns by ``tests/noise_test.py``).

The bound. Model the sampler as the standard normal conditioned on [-S, S] per coordinate
(its density is the Gaussian's, renormalised by ``c1 = 1 - 2 Phi_bar(S)``; the float rounding
of values *inside* the support is out of scope here). One release adds ``std * Z`` to a value
``x``, Z in R^d with i.i.d. coordinates; a neighbour moves ``x`` by ``std * a`` with
``||a||_2 <= r = sensitivity / std``. Let ``P`` be the law of ``Z`` and ``Q`` that of
``Z + a``, with supports ``B = [-S, S]^d`` and ``B + a``.

* Mass that the neighbour cannot produce: ``P(B \\ (B + a)) <= sum_i P(Z_i outside
  [-S + a_i, S + a_i]) = sum_i [Phi_bar(S - |a_i|) - Phi_bar(S)] / c1``, and by the mean value
  theorem ``Phi_bar(S - |a_i|) - Phi_bar(S) <= |a_i| phi(S - |a_i|) <= |a_i| phi(S - r)``
  (phi increases towards 0 and ``|a_i| <= r < S``), so the mass is at most
  ``||a||_1 phi(S - r) / c1 <= r sqrt(d) phi(S - r) / c1``.
* On the common support the likelihood ratio is the Gaussian's; both densities carry the
  factor ``1 / c`` with ``c = c1^d >= 1 - 2 d Phi_bar(S)``. So for every event E,
  ``P(E) - e^eps Q(E) <= delta_gauss(eps) / c + P(B \\ (B + a))``.

Composition (adaptive, PLD or RDP of the Gaussian parts): each release contributes its
non-overlap mass (a privacy loss of +inf) once, and the renormalisations multiply the Gaussian
part by ``prod 1/c <= 1 + 2 sum (1/c - 1)`` while that sum is below 1 (it is ~1e-22 here), and
``delta_gauss <= 1``. Hence the total delta is the accountant's delta plus

    truncation_delta = sum over releases of
        r sqrt(d) phi(S - r) / (1 - 2 Phi_bar(S)) + 4 d Phi_bar(S) / (1 - 2 d Phi_bar(S))

:func:`truncation_delta` evaluates it for ``releases`` releases of the same ratio. ``d`` is
the number of noised coordinates of one release; when the accountant does not know it, the
cap :data:`DIM_CAP` = 2^32 stands in (a model with more coordinates must pass its own d).
Under subsampling, counting every release (not only those the unit takes part in) is a sound
over-count. Correlated (matrix-factorisation) noise: the release is a post-processing of
``C x + Z`` with Z i.i.d. from the sampler, so one release of dimension rounds x d with the
mechanism's sensitivity applies.

Numbers (r = 1, d = 1): the old float32 support 5.22 gives ~5e-5 per release (the exact
non-overlap mass is Phi_bar(4.22) = 1.2e-5); the new S gives ~1e-26 (1e-21 at d = 2^32).

Accounting stays float64 NumPy/SciPy; nothing here imports JAX.

Example Usage:
  >>> truncation_delta(1.0, releases=100) < 1e-12 * 100
  True
  >>> truncation_delta(1.0, releases=1, dim=1, support=5.22, margin=0) > 1e-5
  True
"""

from __future__ import annotations

import dataclasses
import math

import dp_accounting
from dp_accounting import dp_event
from scipy import special

from jaxfl import validate

#: Label of the sampler of every privacy-noise draw in jaxfl (recorded in each report).
NAME = "jaxfl.noise.standard_normal (sign + float32 ndtri of a 105-bit-exponent uniform)"
#: Label of ``jax.random.normal`` in float32, the sampler used before (for comparisons).
OLD_NAME = "jax.random.normal (float32)"
#: A float64 lower bound of the sampler's support half-width S (the JAX-side test asserts the
#: exact float32 support is at least this; exact value ~11.8386).
SUPPORT_HALF_WIDTH = 11.83
#: The positive half-width of ``jax.random.normal``'s float32 support (the smaller side).
OLD_SUPPORT_HALF_WIDTH = 5.2201
#: Noised coordinates assumed per release when an accountant does not know the model size.
DIM_CAP = 2**32
#: Largest ratio r = sensitivity / std accepted, relative to S: beyond S - MARGIN the bound is
#: too loose to mean anything (r sqrt(d) phi(5) is ~0.1 at d = 2^32).
MARGIN = 5.0


def _phi(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def per_release_delta(ratio_r: float, dim: int = DIM_CAP,
                      support: float = SUPPORT_HALF_WIDTH, margin: float = MARGIN) -> float:
    """The extra delta of one release (module docstring), float64.

    Raises unless ``ratio_r < support - margin`` (the bound itself needs ``r < support``;
    pass ``margin=0`` to evaluate it for a short-tailed sampler).
    """
    r = float(ratio_r)
    if not (math.isfinite(r) and r >= 0.0):
        raise validate.JaxflValueError(
            f"Expected a finite ratio r = sensitivity / std >= 0, got {ratio_r!r}.")
    if r >= support - margin:
        raise validate.JaxflValueError(
            f"The truncation bound needs r = sensitivity / std < S - {margin:g} = "
            f"{support - margin:.3f} (S = {support:.4f}), got r = {r:.4g}: the noise is too "
            "small relative to the sensitivity for the sampler's support to be bounded away.")
    d = int(dim)
    if d < 1:
        raise validate.JaxflValueError(f"Expected dim >= 1, got {dim!r}.")
    tail = float(special.ndtr(-support))  # Phi_bar(S)
    mass = r * math.sqrt(d) * _phi(support - r) / (1.0 - 2.0 * tail)
    renorm = 4.0 * d * tail / (1.0 - 2.0 * d * tail) if 2.0 * d * tail < 0.5 else math.inf
    return mass + renorm


def truncation_delta(ratio_r: float, releases: int, dim: int = DIM_CAP,
                     support: float = SUPPORT_HALF_WIDTH, margin: float = MARGIN) -> float:
    """Sound extra delta of ``releases`` releases, each with ratio ``ratio_r`` and ``dim``
    noised coordinates, by a sampler whose support is ``[-support, support]`` per
    coordinate (see the module docstring)."""
    n = int(releases)
    if n < 0:
        raise validate.JaxflValueError(f"Expected releases >= 0, got {releases!r}.")
    return 0.0 if n == 0 else n * per_release_delta(ratio_r, dim, support, margin)


class Unbounded(validate.JaxflValueError):
    """The truncation delta cannot be bounded (the message says why)."""


@dataclasses.dataclass(frozen=True)
class NoiseSpec:
    """How a mechanism's privacy noise enters, for its truncation delta.

    Attributes:
      ratio: r = sensitivity / noise std of one release (the worst unit; for noise that is a
        linear map of i.i.d. draws, the Gaussian's mu of one release).
      releases_per_round: releases per round that one unit takes part in (worst case).
      dim: noised coordinates per release (:data:`DIM_CAP` when not known).
      note: how ``ratio`` and the release count were obtained (written in the report).
    """

    ratio: float
    releases_per_round: int = 1
    dim: int = DIM_CAP
    note: str = ""

    def delta(self, rounds: int) -> float:
        """:func:`truncation_delta` after ``rounds`` rounds."""
        return truncation_delta(self.ratio, int(rounds) * int(self.releases_per_round),
                                self.dim)

    def describe(self, rounds: int) -> str:
        """How :meth:`delta` counts after ``rounds`` rounds (the report's note)."""
        return (f"{self.releases_per_round * int(rounds)} releases at r = {self.ratio:.6g}, "
                f"d = {self.dim}" + (f"; {self.note}" if self.note else ""))


def gaussian_releases(event: dp_accounting.DpEvent) -> list[tuple[float, int]]:
    """``[(r, count)]``: every Gaussian release in ``event`` with its ratio ``r = 1 / z``.

    Walks Composed / SelfComposed / PoissonSampled / SampledWith(out)Replacement events;
    sampling is ignored (counting every release is a sound over-count). A
    ``MixtureOfGaussiansDpEvent`` counts once at ``max |sensitivity| / std``. Raises
    :class:`Unbounded` for non-private, non-Gaussian or unknown events.
    """
    out: dict[float, int] = {}

    def walk(e, times):
        if isinstance(e, dp_accounting.NoOpDpEvent) or times == 0:
            return
        if isinstance(e, dp_accounting.GaussianDpEvent):
            if not e.noise_multiplier > 0:
                raise Unbounded("a GaussianDpEvent with noise multiplier 0 (no noise)")
            r = 1.0 / float(e.noise_multiplier)
        elif isinstance(e, dp_event.MixtureOfGaussiansDpEvent):
            r = max(abs(float(x)) for x in e.sensitivities) / float(e.standard_deviation)
        elif isinstance(e, dp_accounting.SelfComposedDpEvent):
            return walk(e.event, times * int(e.count))
        elif isinstance(e, dp_accounting.ComposedDpEvent):
            for sub in e.events:
                walk(sub, times)
            return
        elif isinstance(e, (dp_accounting.PoissonSampledDpEvent,
                            dp_accounting.SampledWithoutReplacementDpEvent,
                            dp_accounting.SampledWithReplacementDpEvent)):
            return walk(e.event, times)
        elif isinstance(e, dp_accounting.NonPrivateDpEvent):
            raise Unbounded("the mechanism is not private (NonPrivateDpEvent)")
        else:
            raise Unbounded(f"a {type(e).__name__} (not a Gaussian release of this sampler)")
        out[r] = out.get(r, 0) + times

    walk(event, 1)
    return sorted(out.items())


def event_truncation_delta(event: dp_accounting.DpEvent, dim: int = DIM_CAP) -> float:
    """The truncation delta of every Gaussian release in ``event`` (each of ``dim``
    coordinates; see :func:`gaussian_releases`)."""
    return math.fsum(truncation_delta(r, n, dim) for r, n in gaussian_releases(event))


__all__ = ["NoiseSpec", "Unbounded", "gaussian_releases", "event_truncation_delta", "NAME",
           "OLD_NAME", "SUPPORT_HALF_WIDTH", "OLD_SUPPORT_HALF_WIDTH", "DIM_CAP", "MARGIN",
           "per_release_delta", "truncation_delta"]
