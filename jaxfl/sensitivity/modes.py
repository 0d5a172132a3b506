"""Worst-case data-difference patterns: from the sensitivity matrix M_T to one squared Δ².

Koskela & Kulkarni 2025 (v1) take the per-round difference of node j to be +1 in every round
(App. B), i.e. ``Δ² = 1ᵀ M 1``. The theorems' hypothesis allows any ``δ ∈ [-1, 1]^T`` (and, for
d-dimensional models, any per-round vectors of norm <= 1), and M has negative entries, so the
all-ones pattern is only a lower bound in general (App. B argues from non-negative rows of H_T,
which M does not have; counterexamples in :mod:`jaxfl.audit.gossip`). Modes:

* ``paper``: ``1ᵀ M 1``; reproduces the paper, NOT an upper bound in general.
* ``sign_exact``: ``max_{δ ∈ {±1}^T} δᵀ M δ`` by enumeration; exact for scalar data, T <= 20.
* ``sdp``: weak-duality bound on ``max {<M, X>: X ≽ 0, diag X = 1}``; valid for vector data.
* ``certified``: ``min(Σ|M|, T λ_max(M), T)``; valid for every T and model dimension.

A mode is only half of soundness: the value bounds the leakage to the view it was computed for,
and the paper's ``tm4`` view is itself not an upper bound on the exact plain-message view
(:data:`jaxfl.sensitivity.views.VIEW_SOUND`). :func:`is_sound` combines the two; every result
of :mod:`jaxfl.sensitivity` carries that flag as ``sound``.

Chain: ``paper <= sign_exact <= Δ²_vec <= sdp <= certified <= T``. All functions take M [T, T]
as a NumPy array (host, float64) or a jnp array (traceable and vmappable; use float64).
"""

# pylint: disable=invalid-name
from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import validate
from jaxfl.sensitivity import views as _views

MODES = ("paper", "sign_exact", "sdp", "certified")
SOUND_MODES = ("sign_exact", "sdp", "certified")   # sign_exact: scalar data only
SIGN_EXACT_MAX_T = 20
_SIGN_CHUNK = 4096


def _xp(M):
    return jnp if isinstance(M, jax.Array) else np


def paper(M):
    """``1ᵀ M 1`` (the paper's all-ones difference)."""
    return _xp(M).sum(M)


def abs_sum(M):
    """``Σ_{s,t} |M_st|`` (an upper bound on the vector worst case by SDP duality)."""
    xp = _xp(M)
    return xp.sum(xp.abs(M))


def lambda_max(M):
    """Largest eigenvalue of the symmetric part of M."""
    return _xp(M).linalg.eigvalsh(0.5 * (M + M.T))[-1]


def certified(M, horizon=None):
    """``min(Σ|M|, T λ_max(M), T)``: valid for every T and model dimension.

    ``horizon`` overrides T when M is a zero-padded running matrix whose leading block is M_h.
    Works on NumPy (host) and jnp (traced) arrays.
    """
    xp = _xp(M)
    T = M.shape[-1] if horizon is None else horizon
    return xp.minimum(xp.minimum(abs_sum(M), T * xp.maximum(lambda_max(M), 0.0)), 1.0 * T)


def check_sign_horizon(T: int) -> int:
    """Validates T for ``sign_exact`` (enumeration of 2^(T-1) patterns)."""
    T = validate.positive_int("T", T)
    if T > SIGN_EXACT_MAX_T:
        raise validate.JaxflValueError(
            f"mode='sign_exact' enumerates 2^(T-1) patterns; expected T <= {SIGN_EXACT_MAX_T}, "
            f"got T={T}. Use mode='certified' or 'sdp'.")
    return T


def sign_patterns(T: int) -> np.ndarray:
    """All ``2^{T-1}`` patterns in {±1}^T with first entry +1 (δ and -δ give the same value)."""
    T = check_sign_horizon(T)
    rest = np.array(list(itertools.product((1.0, -1.0), repeat=T - 1)), dtype=np.float64)
    rest = rest.reshape(2 ** (T - 1), T - 1)
    return np.concatenate([np.ones((rest.shape[0], 1)), rest], axis=1)


def sign_exact(M):
    """``(max_{δ ∈ {±1}^T} δᵀMδ, argmax pattern [T])`` by chunked enumeration (T <= 20)."""
    T = M.shape[-1]
    pats = sign_patterns(T)
    if not isinstance(M, jax.Array):
        best_val, best = -np.inf, pats[0]
        for start in range(0, pats.shape[0], _SIGN_CHUNK):  # host loop over chunks
            p = pats[start:start + _SIGN_CHUNK]
            vals = np.einsum("ps,st,pt->p", p, M, p)
            k = int(np.argmax(vals))
            if vals[k] > best_val:
                best_val, best = float(vals[k]), p[k]
        return best_val, best
    chunk = min(_SIGN_CHUNK, pats.shape[0])
    pad = (-pats.shape[0]) % chunk
    pats = np.concatenate([pats, np.repeat(pats[:1], pad, axis=0)]).reshape(-1, chunk, T)
    pats = jnp.asarray(pats, M.dtype)

    def chunk_best(p):
        vals = jnp.einsum("ps,st,pt->p", p, M, p)
        k = jnp.argmax(vals)
        return vals[k], p[k]

    vals, best = jax.lax.map(chunk_best, pats)
    k = jnp.argmax(vals)
    return vals[k], best[k]


def sdp_bounds(M, *, iterations: int = 300):
    """``(lower, upper)`` bounds on ``Δ²_vec = max {<M, X> : X ≽ 0, diag X = 1}``.

    Lower: a feasible Burer-Monteiro point ``X = VVᵀ`` (unit rows, rank T) improved by the
    generalised power iteration ``V <- rownormalise(M V)``, monotone for PSD M. Upper: the dual
    point ``y_s = (M X)_ss`` shifted by ``max(0, -λ_min(diag(y) - M))`` so that
    ``diag(y) - M ≽ 0``; then ``Σ y`` bounds the SDP from above (weak duality), whatever the
    quality of V. The returned upper value is additionally capped by :func:`certified`.
    """
    xp = _xp(M)
    T = M.shape[-1]
    Ms = 0.5 * (M + M.T)

    def normalise(V):
        nrm = xp.linalg.norm(V, axis=1, keepdims=True)
        return V / xp.where(nrm > 0, nrm, 1.0)

    def body(V, _):
        MV = Ms @ V
        # Keep rows whose M V row vanishes (zero rows of M) unchanged.
        rows_ok = xp.linalg.norm(MV, axis=1, keepdims=True) > 0
        return normalise(xp.where(rows_ok, MV, V)), None

    V = normalise(xp.eye(T, dtype=M.dtype) + 1.0 / T)   # full rank start
    if xp is jnp:
        V, _ = jax.lax.scan(body, V, None, length=iterations)
    else:
        for _ in range(iterations):
            V, _ = body(V, None)
    X = V @ V.T
    lower = xp.sum(Ms * X)
    y = xp.diagonal(Ms @ X)
    gap = xp.linalg.eigvalsh(xp.diag(y) - Ms)[0]
    upper = xp.sum(y) + T * xp.maximum(-gap, 0.0)
    return lower, xp.minimum(upper, certified(M))


def is_sound(mode: str, view: str = "custom", *, scalar_data: bool = False) -> bool:
    """Whether a Δ² of ``mode`` for ``view`` upper-bounds the exact leakage of that adversary.

    ``paper`` never is (all-ones pattern only); ``sign_exact`` only for scalar data
    (``scalar_data=True``); ``sdp``/``certified`` always, provided the view is sound
    (:func:`jaxfl.sensitivity.views.view_is_sound`: ``tm4`` is not).
    """
    validate.one_of("mode", mode, MODES)
    if not _views.view_is_sound(view):
        return False
    if mode == "paper":
        return False
    if mode == "sign_exact":
        return bool(scalar_data)
    return True


def mode_value(M, mode: str):
    """Δ² of ``mode`` for one M [T, T] (NumPy on the host, or jnp when traced)."""
    validate.one_of("mode", mode, MODES)
    if mode == "paper":
        return paper(M)
    if mode == "certified":
        return certified(M)
    if mode == "sign_exact":
        check_sign_horizon(M.shape[-1])
        return sign_exact(M)[0]
    return sdp_bounds(M)[1]
