"""The privatizer: clip each contribution to C, (weighted) sum, add noise of std sigma x
sensitivity. The one place where a noise std is derived from a noise multiplier.

A :class:`Privatizer` carries the builder's clip norm ``C`` and noise multiplier ``sigma``, the
L2 sensitivity of the clipped aggregate (``sensitivity_factor x C``: 1 for a sum of clipped
contributions under add/remove of one, ``sqrt(S)`` for a DP-OGL+ window, ``|S|`` for a user
present in every silo) and how the noise is drawn (``kind``):

* ``"gaussian"``: i.i.d. N(0, (sigma x sensitivity)^2) on the aggregate (DP-FedAvg, DP-SGD,
  SILO-LEVEL-DP, DP-OGL's groups, gossip nodes);
* ``"per_unit"``: the same total noise drawn as ``parts`` independent shares of std
  ``sigma x sensitivity / sqrt(parts)``, one per silo or node, so that their sum has the
  aggregate's std (ULDP-AVG/SGD, ULDP-NAIVE, full-batch DP-FedAvg);
* ``"correlated"``: DP-FTRL's matrix-mechanism noise, std ``sigma x sensitivity`` per
  coordinate of the i.i.d. stream before the strategy's correlation;
* ``"pairwise"``: LightDP's local noise of std ``local_std`` plus pairwise cancelling terms
  of std ``pair_std`` (both prescribed by the design; ``noise_multiplier`` is the design's
  aggregate multiplier).

Every algorithm builds its privatizer first and its accountant from it (``noise_multiplier``,
``sensitivity``), and records :attr:`Privatizer.hparams` on the accountant
(:meth:`jaxfl.accounting.report.Accountant.with_hparams`): ``apply`` refuses any other value
for them. Inside ``apply`` the traced per-point values (a sweep's ``hparams``) take the place
of the builder's: every method takes the resolved ``hp`` dict (and an explicit ``clip`` where
the clip norm is not a hyperparameter, e.g. adaptive clipping's state). The draws go through
:mod:`jaxfl.noise` (the tail-exact sampler, in :func:`jaxfl.precision.noise_scope`), the
clipping through :func:`jaxfl.clipping.clip_and_sum` (the sensitive scope).

Example Usage:
  >>> p = gaussian(clip_norm=0.5, noise_multiplier=2.0)
  >>> p.std(), p.sensitivity(), dict(p.hparams)
  (1.0, 0.5, {'clip_norm': 0.5, 'noise_multiplier': 2.0})
  >>> float(per_unit(clip_norm=1.0, noise_multiplier=1.0, parts=4).part_std())
  0.5
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping

import numpy as np

from jaxfl import clipping, noise, validate

KINDS = ("gaussian", "per_unit", "correlated", "pairwise")


@dataclasses.dataclass(frozen=True)
class Privatizer:
    """Clip to C, (weighted) sum, add noise of std sigma x sensitivity (module docstring).

    Attributes:
      clip_norm: C, the builder's clip norm.
      noise_multiplier: sigma, the builder's noise multiplier (noise std / sensitivity).
      sensitivity_factor: the aggregate's L2 sensitivity in units of C.
      parts: independent noise shares (``"per_unit"``: silos or nodes) summing to the noise.
      kind: one of :data:`KINDS`.
      local_std, pair_std: ``"pairwise"`` only: the design's stds.
    """

    clip_norm: float
    noise_multiplier: float
    sensitivity_factor: float = 1.0
    parts: int = 1
    kind: str = "gaussian"
    local_std: float | None = None
    pair_std: float | None = None

    def __post_init__(self):
        validate.one_of("kind", self.kind, KINDS)
        validate.positive("clip_norm", self.clip_norm)
        validate.non_negative("noise_multiplier", self.noise_multiplier)
        validate.positive("sensitivity_factor", self.sensitivity_factor,
                           validate.JaxflValueError)
        validate.positive_int("parts", self.parts)

    @property
    def hparams(self) -> Mapping[str, float]:
        """The values an accountant built from this privatizer depends on."""
        return types.MappingProxyType({"clip_norm": float(self.clip_norm),
                                       "noise_multiplier": float(self.noise_multiplier)})

    def _values(self, hp, clip, noise_multiplier):
        hp = hp or {}
        sigma = hp.get("noise_multiplier", self.noise_multiplier) if noise_multiplier is None \
            else noise_multiplier
        clip = hp.get("clip_norm", self.clip_norm) if clip is None else clip
        return sigma, clip

    def sensitivity(self, hp: Mapping | None = None, *, clip=None):
        """L2 sensitivity of the clipped aggregate at clip norm ``clip`` (default: ``hp``'s,
        else the builder's)."""
        _, clip = self._values(hp, clip, 0.0)
        return clip if self.sensitivity_factor == 1 else self.sensitivity_factor * clip

    def std(self, hp: Mapping | None = None, *, clip=None, noise_multiplier=None):
        """Std of the aggregate's noise: sigma x sensitivity (traced values from ``hp``)."""
        sigma, clip = self._values(hp, clip, noise_multiplier)
        return sigma * self.sensitivity(clip=clip)

    def part_std(self, hp: Mapping | None = None, *, clip=None, noise_multiplier=None):
        """Std of one of the ``parts`` independent shares: ``std / sqrt(parts)``, computed as
        ``sigma C / sqrt(parts)`` (sensitivity C) or ``sigma C (factor / sqrt(parts))``
        (``sigma C sqrt(parts)`` when the factor is ``parts``: a user in every silo)."""
        if self.parts == 1:
            return self.std(hp, clip=clip, noise_multiplier=noise_multiplier)
        sigma, clip = self._values(hp, clip, noise_multiplier)
        if self.sensitivity_factor == 1:
            return sigma * clip / np.sqrt(self.parts)
        scale = (np.sqrt(self.parts) if self.sensitivity_factor == self.parts else
                 self.sensitivity_factor / np.sqrt(self.parts))
        return sigma * clip * scale

    def clip_and_sum(self, trees, hp: Mapping | None = None, *, clip=None, mask=None,
                     weights=None):
        """Each row of ``trees [K, ...]`` clipped to C and (weighted, masked) summed:
        ``(sum, norms before clipping)`` (:func:`jaxfl.clipping.clip_and_sum`)."""
        _, clip = self._values(hp, clip, 0.0)
        return clipping.clip_and_sum(trees, clip, mask=mask, weights=weights)

    def add_noise(self, total, key, hp: Mapping | None = None, *, clip=None,
                  noise_multiplier=None):
        """``total + N(0, std^2 I)`` (``"gaussian"``; :func:`jaxfl.noise.add_gaussian`)."""
        if self.kind != "gaussian":
            raise validate.JaxflValueError(
                f"add_noise draws i.i.d. Gaussian noise; a {self.kind!r} privatizer draws its "
                f"own (part_std / std give its scale).")
        return noise.add_gaussian(total, key, self.std(hp, clip=clip,
                                                       noise_multiplier=noise_multiplier))

    def privatize(self, trees, key, hp: Mapping | None = None, *, clip=None,
                  noise_multiplier=None, mask=None, weights=None):
        """Clip, sum and noise: ``(noisy sum, norms before clipping)``."""
        total, norms = self.clip_and_sum(trees, hp, clip=clip, mask=mask, weights=weights)
        return self.add_noise(total, key, hp, clip=clip,
                              noise_multiplier=noise_multiplier), norms


def gaussian(*, clip_norm: float, noise_multiplier: float, sensitivity_factor: float = 1.0
             ) -> Privatizer:
    """I.i.d. Gaussian noise on the clipped aggregate."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity_factor)


def per_unit(*, clip_norm: float, noise_multiplier: float, parts: int,
             sensitivity_factor: float = 1.0) -> Privatizer:
    """The aggregate's Gaussian noise drawn as ``parts`` independent shares (silos, nodes)."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity_factor, parts, "per_unit")


def correlated(*, clip_norm: float, noise_multiplier: float, sensitivity_factor: float = 1.0
               ) -> Privatizer:
    """DP-FTRL's correlated noise: ``std`` scales the i.i.d. stream the strategy correlates."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity_factor, 1, "correlated")


def pairwise(*, clip_norm: float, noise_multiplier: float, sensitivity: float,
             local_std: float, pair_std: float) -> Privatizer:
    """LightDP's local plus pairwise-cancelling noise with the design's stds."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity / clip_norm, 1, "pairwise",
                      float(local_std), float(pair_std))


__all__ = ["KINDS", "Privatizer", "gaussian", "per_unit", "correlated", "pairwise"]
