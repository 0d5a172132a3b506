"""Kalman-filter (innovations) computation of the gossip sensitivity matrix M_T: the
noise-only state-space model of Koskela & Kulkarni 2025, Sec. 3.1, filtered (our method; the paper
builds H_T densely).

``δᵀ M_T δ`` is the Mahalanobis norm of the mean path of the view under the noise-only
state-space model (Koskela & Kulkarni 2025, Sec. 3.2; Lemma 6). The innovations factorisation
of the covariance computes it exactly with O(n²) memory, for any observation matrix C, any
known-noise set, time-varying mixing matrices and long horizons. The signal is fed as the T
unit patterns δ = e_s at once (an [n, T] matrix, the filter is linear in the signal), so one
pass yields the whole M_T and, because the filter is causal, ``M_{T'}`` for every prefix
``T' <= T`` (the leading block of the running sum after T' steps).

Recursion (sigma = 1 units, D = diag(1[k not known])):

  SS:  m ← W (m + E_t),  m̂ ← W m̂,  P ← W (P + D) Wᵀ
  P:   m ← W m + E_t,    m̂ ← W m̂,  P ← W P Wᵀ + D
  ν = C (m - m̂),  S = C P Cᵀ,  M += νᵀ S⁺ ν,  K = P Cᵀ S⁺,  m̂ += K ν,  P -= K C P

with ``E_t = e_j e_tᵀ`` and S⁺ from the equilibrated eigendecomposition (no jitter). A
component of ν outside Range(S) means the views are mutually singular (epsilon = inf); it is
accumulated in the residual Gram R (see :class:`jaxfl.sensitivity.linear_system.Terms`).
"""

# pylint: disable=invalid-name
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import _validate
from jaxfl.sensitivity import linear_system as _ls
from jaxfl.sensitivity import views as _views


class KalmanTrace(NamedTuple):
    """Per-step outputs of the filter (index t = horizon T' - 1), each [T].

    Attributes:
      paper: ``1ᵀ M_{T'} 1`` (paper-mode Δ² at horizon T').
      abs_sum: ``Σ |M_{T'}|`` (a certified upper bound, see :mod:`.modes`).
      paper_in_range: range check of the all-ones pattern at horizon T'.
      all_in_range: range check of every pattern at horizon T'.
      certified: ``min(Σ|M_{T'}|, T' λ_max(M_{T'}), T')`` when tracked, else nan.
    """

    paper: np.ndarray
    abs_sum: np.ndarray
    paper_in_range: np.ndarray
    all_in_range: np.ndarray
    certified: np.ndarray


def kalman_terms_jnp(W, rows, row_mask, noise_mask, target, T: int, model: str,
                     checkpoints: tuple[int, ...] = (), track_certified: bool = False,
                     paper_only: bool = False):
    """Traceable filter. ``W`` is [n, n] or [T, n, n].

    ``rows``/``row_mask`` [m] give C (padded rows are zero); ``noise_mask`` [n] is 1 for
    unknown noise. vmappable over rows, row_mask, noise_mask and target.

    Returns:
      ``(M, R, N, trace, at_checkpoints)``: the [T, T] terms at horizon T, the per-step
      :class:`KalmanTrace` fields as a tuple of [T] arrays, and a tuple ``(M, R, N)`` of
      [len(checkpoints), T, T] running terms at the horizons in ``checkpoints`` (the leading
      h x h block is ``M_h``; the rest is zero). ``track_certified`` adds the certified bound
      of every prefix to the trace (one T x T eigvalsh per step). ``paper_only`` feeds the
      single all-ones pattern instead of the T unit patterns: M, R, N are then [1, 1]
      (``1ᵀM1`` etc.) and the trace's ``all_in_range`` equals ``paper_in_range``.
    """
    n = W.shape[-1]
    dtype = W.dtype
    D = noise_mask.astype(dtype)
    varying = W.ndim == 3
    width = 1 if paper_only else T
    ones = jnp.ones(width, dtype)
    tol2 = _ls.RANGE_TOL**2
    rtol = _ls.PINV_RTOL

    def row_update(k, c):
        # Sequential scalar conditioning on observed row k (exact; equals the joint update).
        m, mh, P, M, R, N, thr = c
        r, on = rows[k], row_mask[k]
        s_k = P[r, r] * on
        nu = (m[r] - mh[r]) * on                            # [T]
        ok = s_k > thr
        inv = jnp.where(ok, 1.0 / jnp.where(ok, s_k, 1.0), 0.0)
        w2 = 1.0 / jnp.maximum(jnp.maximum(s_k, thr), jnp.finfo(dtype).tiny)
        outer = jnp.outer(nu, nu)
        M = M + inv * outer
        N = N + w2 * outer
        R = R + jnp.where(ok, 0.0, w2) * outer
        gain = P[:, r] * inv                                 # [n]
        mh = mh + jnp.outer(gain, nu)
        P = P - jnp.outer(gain, P[r, :])
        return m, mh, P, M, R, N, thr

    def step(carry, xs):
        m, mh, P, M, R, N = carry
        t, Wt = xs if varying else (xs, W)
        E = jnp.zeros((n, width), dtype).at[target, 0 if paper_only else t].set(1.0)
        if model == "ss":
            m = Wt @ (m + E)
            P = Wt @ ((P + jnp.diag(D)) @ Wt.T)
        else:
            m = Wt @ m + E
            P = Wt @ (P @ Wt.T) + jnp.diag(D)
        mh = Wt @ mh
        P = 0.5 * (P + P.T)
        # Roundoff in conditional variances is relative to the largest predicted variance.
        thr = rtol * jnp.max(jnp.diagonal(P))
        m, mh, P, M, R, N, _ = jax.lax.fori_loop(0, rows.shape[0], row_update,
                                                 (m, mh, P, M, R, N, thr))
        P = 0.5 * (P + P.T)
        M = 0.5 * (M + M.T)
        abs_sum = jnp.sum(jnp.abs(M))
        if track_certified:
            h = (t + 1).astype(dtype)
            lam = jnp.linalg.eigvalsh(0.5 * (M + M.T))[-1]
            cert = jnp.minimum(jnp.minimum(abs_sum, h * jnp.maximum(lam, 0.0)), h)
        else:
            cert = jnp.asarray(jnp.nan, dtype)
        out = (ones @ M @ ones, abs_sum,
               ones @ R @ ones <= tol2 * (ones @ N @ ones),
               jnp.trace(R) <= tol2 * jnp.trace(N), cert)
        return (m, mh, P, M, R, N), out

    zeros_nT = jnp.zeros((n, width), dtype)
    zeros_TT = jnp.zeros((width, width), dtype)
    carry = (zeros_nT, zeros_nT, jnp.zeros((n, n), dtype), zeros_TT, zeros_TT, zeros_TT)
    bounds = sorted({int(h) for h in checkpoints if 0 < int(h) < T}) + [T]
    traces, saved, start = [], [], 0
    for stop in bounds:  # a static handful of segments
        steps = jnp.arange(start, stop)
        xs = (steps, W[start:stop]) if varying else steps
        carry, tr = jax.lax.scan(step, carry, xs)
        traces.append(tr)
        saved.append(carry[3:])
        start = stop
    trace = tuple(jnp.concatenate([tr[k] for tr in traces]) for k in range(5))
    index = {h: k for k, h in enumerate(bounds)}
    at = tuple(jnp.stack([saved[index[int(h)]][k] for h in checkpoints])
               if checkpoints else jnp.zeros((0, width, width), dtype) for k in range(3))
    M, R, N = carry[3:]
    return M, R, N, trace, at


_kalman_jit = jax.jit(kalman_terms_jnp, static_argnums=(5, 6, 7, 8, 9))


def kalman_terms(W, view: _views.View, T: int, *, return_trace: bool = False):
    """M_T of ``view`` by the Kalman recursion (float64 jnp; W [n, n] or [T, n, n]).

    Returns:
      :class:`~jaxfl.sensitivity.linear_system.Terms`, and with ``return_trace`` also the
      :class:`KalmanTrace` of every prefix horizon.
    """
    W = _ls.check_mixing(W, T)
    T = _validate.positive_int("T", T)
    n = W.shape[-1]
    rows, row_mask = _ls.padded_rows(view.rows)
    with jax.enable_x64(True):
        _validate.x64_enabled()
        M, R, N, trace, _ = _kalman_jit(jnp.asarray(W), jnp.asarray(rows), jnp.asarray(row_mask),
                                        jnp.asarray(view.known_mask(n)), view.target, T,
                                        view.model)
        terms = _ls.Terms(*(np.asarray(a, dtype=np.float64) for a in (M, R, N)))
        if not return_trace:
            return terms
        return terms, KalmanTrace(*(np.asarray(a) for a in trace))


def kalman_paper_curve_sparse(W, view: _views.View, T: int) -> np.ndarray:
    """Host (NumPy/SciPy) paper-mode Kalman for a large sparse W: ``1ᵀM_h1`` for h = 1..T.

    Same recursion as :func:`kalman_terms_jnp` with the all-ones signal; the covariance
    propagation ``W P Wᵀ`` uses two sparse-times-dense products (O(nnz(W) n) per step, O(n²)
    memory), which is what makes n = 4039 (ego-Facebook) feasible on a CPU. Out-of-range
    innovations give ``inf`` from that horizon on.
    """
    from scipy import sparse as _sparse

    T = _validate.positive_int("T", T)
    W = _sparse.csr_matrix(W, dtype=np.float64)
    n = W.shape[0]
    D = view.known_mask(n)
    m, mh = np.zeros(n), np.zeros(n)
    P = np.zeros((n, n))
    acc, out, ok = 0.0, np.empty(T), True
    for t in range(T):  # host loop over rounds (sequential by nature)
        if view.model == "ss":
            m = W @ (m + np.eye(1, n, view.target)[0])
            P[np.diag_indices(n)] += D
            P = np.asarray((W @ np.asarray(W @ P).T).T)
        else:
            e = np.zeros(n)
            e[view.target] = 1.0
            m = W @ m + e
            P = np.asarray((W @ np.asarray(W @ P).T).T)
            P[np.diag_indices(n)] += D
        mh = W @ mh
        P = 0.5 * (P + P.T)
        thr = _ls.PINV_RTOL * np.max(np.diagonal(P))
        for r in view.rows:  # sequential scalar conditioning
            s, nu = P[r, r], m[r] - mh[r]
            if s > thr:
                acc += nu * nu / s
                gain = P[:, r] / s
                mh = mh + gain * nu
                P -= np.outer(gain, P[r, :])
            elif abs(nu) > _ls.RANGE_TOL * max(abs(m[r]), 1e-300):
                ok = False
        out[t] = acc if ok else np.inf
    return out
