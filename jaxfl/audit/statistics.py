"""Distinguishing statistics: the likelihood-ratio test for the views of Gaussian mechanisms.

By the Neyman-Pearson lemma the most powerful test between M(D) and M(D') thresholds the
log-likelihood ratio (LLR). For the views of jaxfl's mechanisms it has closed forms:

* Gaussian view, common covariance (gossip views, DP-OGL model sequences, Gaussian sums):
  ``y ~ N(a, S)`` vs ``N(b, S)``; the LLR is affine in the projection ``(a - b)^T S^+ y``
  (:func:`gaussian_llr`, with ``mu^2 = (a - b)^T S^+ (a - b)``, the projected-Gaussian
  sensitivity, Koskela & Kulkarni 2025, Lemma 6).
* Isotropic noise and a known shift direction (a clipped canary update): the projection onto
  the shift (:func:`projection`), the special case ``S = s^2 I``.
* Poisson-subsampled Gaussian steps (DP-FedAvg, DP-SGD): per step the normalised projection is
  ``z ~ N(0, 1)`` under D' and ``(1 - q) N(0, 1) + q N(mu, 1)`` under D, so the LLR of T
  independent steps is ``sum_t log(1 - q + q exp(mu z_t - mu^2 / 2))``
  (:func:`subsampled_gaussian_llr`); more generally a mixture over shift sizes
  (:func:`mixture_llr`, e.g. a subject whose j items are sampled with Binomial(k, q)
  probabilities). These are exact LLRs when the other units contribute deterministically.

All statistics are pure jnp functions of the view, so they run inside the audit's jit.

Example Usage:
  >>> import jax.numpy as jnp
  >>> stat = subsampled_gaussian_llr(mu=1.0, q=0.5)
  >>> round(float(stat(jnp.zeros(3))), 4)  # 3 * log(0.5 + 0.5 * exp(-0.5))
  -0.6572
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import tree as jtree
from jaxfl import validate


def _flat(view) -> jax.Array:
    if isinstance(view, jax.Array | np.ndarray) or np.isscalar(view):
        return jnp.ravel(jnp.asarray(view))
    return jtree.ravel(view)


def projection(direction, offset=None) -> Callable:
    """``view -> <ravel(view) - ravel(offset), ravel(direction)>``."""
    d = _flat(direction)
    o = None if offset is None else _flat(offset)

    def stat(view):
        v = _flat(view)
        return jnp.dot(v - o if o is not None else v, d.astype(v.dtype))

    return stat


def gaussian_llr(mean_d, mean_dprime, covariance, *, rtol: float = 1e-12):
    """Exact LLR statistic for ``N(mean_d, S)`` vs ``N(mean_dprime, S)`` (S may be singular).

    Returns ``(statistic, mu)``: the statistic is ``g^T S^+ (y - (a + b) / 2)`` with
    ``g = a - b`` (= the LLR), and ``mu = sqrt(g^T S^+ g)`` the equivalent Gaussian-mechanism
    parameter (the view pair is exactly a Gaussian mechanism with sensitivity/std ``mu``).
    ``mu`` is ``inf`` when ``g`` leaves the range of ``S`` (the views are mutually singular).

    Raises:
      ShapeError: on mismatched shapes or a non-square covariance.
    """
    a = np.asarray(mean_d, dtype=np.float64).reshape(-1)
    b = np.asarray(mean_dprime, dtype=np.float64).reshape(-1)
    cov = np.asarray(covariance, dtype=np.float64)
    validate.shape("mean_dprime", b, a.shape)
    validate.shape("covariance", cov, (a.size, a.size))
    cov = 0.5 * (cov + cov.T)
    w, v = np.linalg.eigh(cov)
    keep = w > rtol * max(float(w.max()), 0.0)
    g = a - b
    coef = v[:, keep].T @ g
    z = v[:, keep] @ (coef / w[keep])
    resid = np.linalg.norm(v[:, keep] @ coef - g)
    mu = np.inf if resid > 1e-8 * max(np.linalg.norm(g), 1e-300) else float(np.sqrt(g @ z))
    mid = 0.5 * (a + b)
    zj, midj = jnp.asarray(z), jnp.asarray(mid)

    def stat(view):
        y = _flat(view)
        return jnp.dot(zj.astype(y.dtype), y - midj.astype(y.dtype))

    return stat, mu


def mixture_llr(mus: Sequence[float], probs: Sequence[float], *, scale=1.0, offset=0.0):
    """LLR of i.i.d. steps, ``sum_j p_j N(mu_j, 1)`` under D vs ``N(0, 1)`` under D'.

    The view is the vector of per-step projections ``y_t``; ``z_t = (y_t - offset) / scale`` is
    the normalised projection. ``probs`` must sum to 1 (include ``mu = 0`` for "not sampled").
    """
    mus = np.asarray(mus, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    if mus.shape != probs.shape or mus.ndim != 1:
        raise validate.ShapeError("Expected mus and probs of the same 1-D shape.")
    if np.any(probs < 0) or abs(probs.sum() - 1.0) > 1e-9:
        raise validate.PrivacyParameterError("Expected probs >= 0 summing to 1.")
    keep = probs > 0
    logp, m = jnp.asarray(np.log(probs[keep])), jnp.asarray(mus[keep])

    def stat(view):
        z = (_flat(view) - offset) / scale
        terms = logp[None, :] + m[None, :] * z[:, None] - 0.5 * m[None, :] ** 2
        return jnp.sum(jax.nn.logsumexp(terms, axis=1))

    return stat


def subsampled_gaussian_llr(*, mu: float, q: float, scale=1.0, offset=0.0):
    """LLR of T Poisson-subsampled Gaussian steps from their normalised projections."""
    mu = validate.positive("mu", mu)
    q = validate.probability("q", q)
    if q == 1.0:
        return mixture_llr([mu], [1.0], scale=scale, offset=offset)
    return mixture_llr([0.0, mu], [1.0 - q, q], scale=scale, offset=offset)


__all__ = ["gaussian_llr", "mixture_llr", "projection", "subsampled_gaussian_llr"]
