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
  coordinate of the i.i.d. stream before the strategy's correlation (``noising``: the
  strategy's ``C^{-1}``);
* ``"pairwise"``: LightDP's local noise of std ``local_std`` plus pairwise cancelling terms
  of std ``pair_std`` (both prescribed by the design; ``noise_multiplier`` is the design's
  aggregate multiplier).

The privatizer is the mechanism: every privacy-noise draw of the algorithms is made here, and
no algorithm module draws noise of its own. Each kind's draw:

* ``"gaussian"``: :meth:`Privatizer.add_noise` (the aggregate's noise; DP-OGL's groups vmap
  it over the groups with each group's C and sigma), :meth:`Privatizer.add_share` (a gossip
  node's own noise);
* ``"per_unit"``: :meth:`Privatizer.add_share` (one node's share) and
  :meth:`Privatizer.shares` (every silo's share, stacked; :func:`share_noise`);
* ``"correlated"``: :meth:`Privatizer.init` and :meth:`Privatizer.update` (stateful, in the
  style of an optax ``GradientTransformation``: the noise state is the streaming ``C^{-1}``
  product's buffers or the round index; :func:`correlated_noise`);
* ``"pairwise"``: :func:`pair_noise` (one pair's cancelling term, the same at both ends) and
  :func:`local_noise` (each client's own), rounded to a fixed-point grid where asked;
* a standard normal for a formula that scales it itself (adaptive clipping's noisy count):
  :func:`standard_normal`.

Every algorithm builds its privatizer first (sigma is stated there, once) and its accountant
from it (``noise_multiplier``, ``sensitivity``), and records the privatizer and
:attr:`Privatizer.hparams` on the accountant
(:meth:`jaxfl.accounting.report.Accountant.for_mechanism`, which returns a new, frozen
accountant): ``apply`` refuses any other value for them. Inside ``apply`` the traced per-point
values (a sweep's ``hparams``) take the place of the builder's: every method takes the
resolved ``hp`` dict (and an explicit ``clip`` where the clip norm is not a hyperparameter,
e.g. adaptive clipping's state). The draws go through :mod:`jaxfl.noise` (the tail-exact
sampler, in :func:`jaxfl.precision.noise_scope`), the clipping through
:func:`jaxfl.clipping.clip_and_sum` (the sensitive scope).

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
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import clipping, noise, precision, validate

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
      noising: ``"correlated"`` only: the strategy's noise map ``C^{-1}`` (a dense ``[n, m]``
        array or a streaming matrix with ``init_multiply`` / ``multiply_next``).
    """

    clip_norm: float
    noise_multiplier: float
    sensitivity_factor: float = 1.0
    parts: int = 1
    kind: str = "gaussian"
    local_std: float | None = None
    pair_std: float | None = None
    noising: Any = dataclasses.field(default=None, compare=False, repr=False)

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

    def _kinds(self, method, kinds):
        if self.kind not in kinds:
            raise validate.JaxflValueError(
                f"{method} draws the noise of a {' or '.join(map(repr, kinds))} privatizer, "
                f"not of a {self.kind!r} one (module docstring: each kind's draw).")

    def add_noise(self, total, key, hp: Mapping | None = None, *, clip=None,
                  noise_multiplier=None):
        """``total + N(0, std^2 I)`` (``"gaussian"``; :func:`jaxfl.noise.add_gaussian`)."""
        self._kinds("add_noise", ("gaussian",))
        return noise.add_gaussian(total, key, self.std(hp, clip=clip,
                                                       noise_multiplier=noise_multiplier))

    def add_share(self, tree, key, hp: Mapping | None = None, *, clip=None,
                  noise_multiplier=None):
        """``tree + N(0, part_std^2 I)``: one unit's own noise (a gossip node's, std
        ``std``) or its share of the aggregate's (``"per_unit"``, std ``std / sqrt(parts)``)."""
        self._kinds("add_share", ("gaussian", "per_unit"))
        return noise.add_gaussian(tree, key, self.part_std(hp, clip=clip,
                                                           noise_multiplier=noise_multiplier))

    def shares(self, tree, key, hp: Mapping | None = None, *, clip=None,
               noise_multiplier=None):
        """Every one of the ``parts`` shares, stacked ``[parts, ...]`` like ``tree``: share
        ``s`` from ``fold_in(key, s)``, std :meth:`part_std` (:func:`share_noise`)."""
        self._kinds("shares", ("gaussian", "per_unit"))
        return share_noise(tree, key, self.parts, self.part_std(
            hp, clip=clip, noise_multiplier=noise_multiplier))

    def init(self, params):
        """``"correlated"``: the noise state of a run from ``params`` (:func:`correlated_noise`)."""
        self._kinds("init", ("correlated",))
        return correlated_noise(self.noising).init(params)

    def update(self, total, noise_state, key_data, hp: Mapping | None = None, *, clip=None,
               noise_multiplier=None):
        """``"correlated"``: ``total`` plus this round's correlated noise at std
        :meth:`std`: ``(noisy, next noise_state, next key_data)`` (:func:`correlated_noise`;
        ``key_data``: the run's uint32 noise key)."""
        self._kinds("update", ("correlated",))
        return correlated_noise(self.noising).add(
            total, noise_state, key_data, self.std(hp, clip=clip,
                                                   noise_multiplier=noise_multiplier))

    def privatize(self, trees, key, hp: Mapping | None = None, *, clip=None,
                  noise_multiplier=None, mask=None, weights=None):
        """Clip, sum and noise: ``(noisy sum, norms before clipping)``."""
        total, norms = self.clip_and_sum(trees, hp, clip=clip, mask=mask, weights=weights)
        return self.add_noise(total, key, hp, clip=clip,
                              noise_multiplier=noise_multiplier), norms


# ------------------------------------------------------------------------- the kinds' draws


def standard_normal(key, shape=(), dtype=jnp.float32):
    """i.i.d. standard normal values drawn in the noise scope, for a mechanism whose formula
    applies its scale itself (adaptive clipping's count: ``count_noise x z``)."""
    with precision.noise_scope():
        return noise.standard_normal(key, shape, dtype)


def share_noise(tree, key, parts: int, stddev):
    """Independent N(0, stddev^2 I) per share ``s`` from ``fold_in(key, s)``: a pytree like
    ``tree`` with a leading ``[parts]`` axis (per-silo noise)."""
    keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(jnp.arange(parts))
    return jax.vmap(lambda k: noise.gaussian_like(tree, k, stddev))(keys)


def quantize(x, bits):
    """``x`` rounded to the grid ``2^-bits`` (``bits`` None: unchanged)."""
    if bits is None:
        return x
    scale = float(2.0**bits)
    return jnp.round(x * scale) / scale


def pair_noise(key, shape, stddev, dtype=jnp.float32, fixed_point_bits: int | None = None):
    """``"pairwise"``: one pair's cancelling term ``stddev N(0, I)`` of ``shape`` from the
    pair's round key (the same key at both ends: bit-identical terms, exact cancellation),
    rounded to ``2^-fixed_point_bits``."""
    with precision.noise_scope():
        return quantize(stddev * noise.standard_normal(key, shape, dtype), fixed_point_bits)


def local_noise(keys, shape, stddev, dtype=jnp.float32, fixed_point_bits: int | None = None):
    """``"pairwise"``: each client's own noise ``stddev N(0, I)`` of ``shape``, one per key of
    ``keys`` (``[len, *shape]``), rounded to ``2^-fixed_point_bits``."""
    with precision.noise_scope():
        z = jax.vmap(lambda k: noise.standard_normal(k, shape, dtype))(keys)
        return quantize(stddev * z, fixed_point_bits)


class CorrelatedNoise(NamedTuple):
    """``init(params) -> noise_state``; ``add(tree, noise_state, key_data, stddev) -> (noisy,
    noise_state, key_data)``: a strategy's correlated noise (key_data: the run's uint32
    noise key; the streaming state carries its own next key)."""

    init: Any
    add: Any


def correlated_noise(noising) -> CorrelatedNoise:
    """The correlated noise ``stddev (C^{-1} z)_t`` of a strategy's noise map ``noising``,
    ``z`` from :func:`jaxfl.noise.standard_normal`.

    jax_privacy 2.0.0's ``matrix_factorization_privatizer`` draws its ``z`` with
    ``jax.random.normal`` (hard-wired, no sampler argument), whose float32 support stops at
    ~5.2 sigma; this reimplements its two privatizers with jaxfl's sampler and keeps their
    state layout: a streaming ``C^{-1}`` (jax_privacy ``StreamingMatrix``; state ``(key,
    multiply state)``, a fresh split per round, i.i.d. ``stddev z`` through ``multiply_next``)
    or a dense ``[n, m]`` map (state: the round index; round t's noise is ``sum_j M[t, j]
    stddev z_j``, ``z_j`` keyed by ``fold_in(key, j)``). The draws and the noise map run in the
    noise scope (highest matmul precision); the addition does not.
    """
    dense = isinstance(noising, np.ndarray)
    noising = jnp.asarray(noising) if dense else noising

    def init(params):
        if dense:
            return jnp.array(0)
        return noising.init_multiply(params)

    def dense_noise(tree, index, key, stddev):
        row = noising[index] * stddev

        def body(j, acc):
            z = noise.gaussian_like(acc, jax.random.fold_in(key, j), 1.0)
            return jax.tree.map(lambda a, x: a + row[j].astype(a.dtype) * x, acc, z)

        zeros = jax.tree.map(lambda x: jnp.zeros(jnp.shape(x), jnp.promote_types(
            jnp.asarray(x).dtype, noising.dtype)), tree)
        return jax.lax.fori_loop(0, noising.shape[1], body, zeros)

    def add(tree, noise_state, key_data, stddev):
        key = jax.random.wrap_key_data(key_data)
        with precision.noise_scope():
            if dense:
                corr = dense_noise(tree, noise_state, key, stddev)
                new, next_key = noise_state + 1, key_data
            else:
                new_key, sub_key = jax.random.split(key)
                iid = noise.gaussian_like(tree, sub_key, stddev)
                corr, new = noising.multiply_next(iid, noise_state)
                next_key = jax.random.key_data(new_key)
        noisy = jax.tree.map(lambda v, n: (v + n).astype(jnp.asarray(v).dtype), tree, corr)
        return noisy, new, next_key

    return CorrelatedNoise(init, add)


def gaussian(*, clip_norm: float, noise_multiplier: float, sensitivity_factor: float = 1.0
             ) -> Privatizer:
    """I.i.d. Gaussian noise on the clipped aggregate."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity_factor)


def per_unit(*, clip_norm: float, noise_multiplier: float, parts: int,
             sensitivity_factor: float = 1.0) -> Privatizer:
    """The aggregate's Gaussian noise drawn as ``parts`` independent shares (silos, nodes)."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity_factor, parts, "per_unit")


def correlated(*, clip_norm: float, noise_multiplier: float, noising=None,
               sensitivity_factor: float = 1.0) -> Privatizer:
    """DP-FTRL's correlated noise: ``std`` scales the i.i.d. stream the strategy's noise map
    ``noising`` (``C^{-1}``) correlates."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity_factor, 1, "correlated",
                      noising=noising)


def pairwise(*, clip_norm: float, noise_multiplier: float, sensitivity: float,
             local_std: float, pair_std: float) -> Privatizer:
    """LightDP's local plus pairwise-cancelling noise with the design's stds."""
    return Privatizer(clip_norm, noise_multiplier, sensitivity / clip_norm, 1, "pairwise",
                      float(local_std), float(pair_std))


__all__ = ["KINDS", "Privatizer", "gaussian", "per_unit", "correlated", "pairwise",
           "standard_normal", "share_noise", "quantize", "pair_noise", "local_noise",
           "CorrelatedNoise", "correlated_noise"]
