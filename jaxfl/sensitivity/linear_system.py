"""Stacked linear system ``Y = H_T (x + u)`` of gossip averaging and its sensitivity matrix M_T.

Koskela & Kulkarni 2025 (arXiv 2505.19969 v1), Secs. 3.1-3.2 (Eq. 3.2, Lemma 1, Lemma 6); the
structured construction of the covariance below is ours. For a view (C, model, known set K) and
target j:

* impulse blocks ``Psi_k = C W^k`` (SS) or ``C W^{k-1}`` (P); time-varying W uses ordered
  products, block (t, s) = ``C W_{t-1} ... W_s`` (SS) or ``C W_{t-1} ... W_{s+1}`` (P);
* ``H_T`` block lower-triangular, ``Ĥ_T`` = H_T without the noise columns of K;
* signal ``G_T = H_T (I_T ⊗ e_j)`` (T columns: a unit difference at one round);
* noise covariance ``K = Ĥ_T Ĥ_Tᵀ`` (sigma = 1) and ``M_T = G_Tᵀ K⁺ G_T`` (T x T, PSD, ≼ I).

``δᵀ M_T δ`` is the squared sensitivity of the projected Gaussian mechanism (Lemma 6) when
``G_T δ`` lies in Range(K); otherwise the two views are mutually singular and epsilon is
infinite. Every method here therefore returns :class:`Terms` = (M, R, N) where R and N are the
residual and signal Gram matrices of the range check: ``δ`` is in range iff
``δᵀRδ <= RANGE_TOL² δᵀNδ``.

Three methods (they agree to ~1e-12 in float64; tests require 1e-9):

* :func:`dense_terms` - NumPy least squares on the materialised Ĥ_T (tests / small sizes),
  supports time-varying W;
* :func:`structured_terms` - jnp, Gram of the impulse sequence plus a block-diagonal cumulative
  sum for K (O(T² m² n) + one eigh of size Tm), time-invariant W, vmappable;
* :mod:`jaxfl.sensitivity.kalman` - innovations recursion with O(n²) memory.

Pseudo-inverses use an eigendecomposition of the Jacobi-equilibrated covariance
(``D^{-1/2} K D^{-1/2}``, which leaves ``xᵀK⁺x`` unchanged for x in range) and drop eigenvalues
``<= PINV_RTOL * λ_max``. No jitter is ever added.
"""

# pylint: disable=invalid-name
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import sparse

from jaxfl import _validate
from jaxfl.sensitivity import views as _views
from jaxfl.topology import mixing as _mixing

PINV_RTOL = 1e-12      # eigenvalue cut-off of the equilibrated covariance (ours)
SVD_RTOL = 1e-10       # singular-value cut-off of the dense least-squares path
RANGE_TOL = 1e-8       # relative least-squares residual above which epsilon = inf (ours)


class Terms(NamedTuple):
    """Sensitivity matrix and range-check Gram matrices of one view, all [T, T] float64.

    Attributes:
      M: ``G_Tᵀ K⁺ G_T``; ``δᵀMδ`` is the squared sensitivity for difference pattern δ.
      R: Gram of the residuals ``(I - P_K) G_T`` (equilibrated coordinates).
      N: Gram of the (equilibrated) signal ``G_T``.
    """

    M: np.ndarray
    R: np.ndarray
    N: np.ndarray


def in_range(terms: Terms, pattern=None) -> bool | np.ndarray:
    """Range check. ``pattern`` [..., T]: that δ; ``None``: every δ (all columns of G_T)."""
    R, N = np.asarray(terms.R), np.asarray(terms.N)
    if pattern is None:
        r = np.trace(R, axis1=-2, axis2=-1)
        s = np.trace(N, axis1=-2, axis2=-1)
    else:
        d = np.asarray(pattern, dtype=np.float64)
        r = np.einsum("...s,...st,...t->...", d, R, d)
        s = np.einsum("...s,...st,...t->...", d, N, d)
    return r <= RANGE_TOL**2 * s


# ---------------------------------------------------------------------------------- validation

def check_mixing(W, T: int | None = None) -> np.ndarray:
    """A real mixing matrix [n, n] or a time-varying stack [T, n, n] as float64.

    The theory allows any real W, so only shape and finiteness are required; the checks are
    :func:`jaxfl.topology.mixing.validate_mixing`'s (the library's one validation of W).
    """
    if sparse.issparse(W):
        raise _validate.ShapeError("Expected a dense mixing matrix here, got a sparse matrix.")
    return _mixing.validate_mixing(W, row_stochastic=False, nonnegative=False,
                                   connected=False, time_varying=True, min_nodes=2, rounds=T)


def _mixing_at(W: np.ndarray, t: int) -> np.ndarray:
    return W[t] if W.ndim == 3 else W


# ---------------------------------------------------------------------------- dense (NumPy)

def dense_system(W, view: _views.View, T: int, *, correct: bool = True
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Materialises ``Ĥ_T`` [T m, T (n - |K|)] and ``G_T`` [T m, T] (NumPy, float64).

    Observation t = 1..T is block row t - 1, input round s = 0..T-1 is block column s.
    ``correct=False`` keeps all noise columns (the uncorrected ``H_T``).
    """
    W = check_mixing(W, T)
    T = _validate.positive_int("T", T)
    n = W.shape[-1]
    C = np.eye(n)[view.rows]
    m = C.shape[0]
    H = np.zeros((T, m, T, n))
    if W.ndim == 2:
        # Time-invariant: block (t, s) depends on t - s only (impulse sequence, O(T m n²)).
        gamma = C @ W if view.model == "ss" else C
        for k in range(T):
            for s in range(T - k):
                H[s + k, :, s, :] = gamma
            gamma = gamma @ W
    else:
        for t in range(1, T + 1):  # observation y_t: products C W_{t-1} ... from the left
            R = C
            for s in range(t - 1, -1, -1):
                if view.model == "ss":
                    R = R @ W[s]
                    H[t - 1, :, s, :] = R
                else:
                    H[t - 1, :, s, :] = R
                    R = R @ W[s]
    G = H[:, :, :, view.target].reshape(T * m, T)
    if correct and view.known.size:
        keep = np.ones(n, dtype=bool)
        keep[view.known] = False
        H = H[:, :, :, keep]
    return H.reshape(T * m, -1), G


def dense_terms(W, view: _views.View, T: int) -> Terms:
    """M_T by least squares on the materialised system (``‖Ĥ⁺ G δ‖²``, Lemma 6). Tests only."""
    H, G = dense_system(W, view, T)
    # Row equilibration leaves ‖Ĥ⁺x‖ unchanged for x in Range(Ĥ) (see module docstring).
    norms = np.linalg.norm(H, axis=1)
    scale = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 1.0)
    Hs, Gs = H * scale[:, None], G * scale[:, None]
    U, sv, _ = np.linalg.svd(Hs, full_matrices=False)
    keep = sv > SVD_RTOL * (sv[0] if sv.size else 0.0)
    U, sv = U[:, keep], sv[keep]
    Z = (U.T @ Gs) / sv[:, None]          # = V Σ⁻¹ Uᵀ G in the row space coordinates
    resid = Gs - U @ (U.T @ Gs)
    return Terms(Z.T @ Z, resid.T @ resid, Gs.T @ Gs)


# ------------------------------------------------------------------------- structured (jnp)

def psd_factor(K, rtol: float = PINV_RTOL):
    """Equilibrated eigendecomposition of PSD K [p, p]: ``(scale, V, keep, inv_eigenvalues)``."""
    d = jnp.diagonal(K)
    s = jnp.where(d > 0, jax.lax.rsqrt(jnp.where(d > 0, d, 1.0)), 1.0)
    Ks = K * s[:, None] * s[None, :]
    lam, V = jnp.linalg.eigh(0.5 * (Ks + Ks.T))
    keep = lam > rtol * jnp.maximum(lam[-1], 0.0)
    inv = jnp.where(keep, 1.0 / jnp.where(keep, lam, 1.0), 0.0)
    return s, V, keep, inv


def psd_apply(factor, G):
    """``(GᵀK⁺G, residual Gram, signal Gram)`` for G [p, T] and a :func:`psd_factor` of K."""
    s, V, keep, inv = factor
    Gs = G * s[:, None]
    Z = V.T @ Gs
    resid = Gs - V @ (keep[:, None] * Z)
    return Z.T @ (inv[:, None] * Z), resid.T @ resid, Gs.T @ Gs


def psd_quadratic_terms(K, G, rtol: float = PINV_RTOL):
    """``(GᵀK⁺G, residual Gram, signal Gram)`` for PSD K [p, p] and G [p, T] (jnp, float64)."""
    return psd_apply(psd_factor(K, rtol), G)


def impulse_responses(W, rows, row_mask, T: int, model: str):
    """``Γ_k = Ψ_k`` for k = 1..T as a jnp array [T, m, n] (time-invariant W).

    ``rows`` [m] are observed nodes; ``row_mask`` [m] zeroes padded rows (for vmapping over
    views of different sizes).
    """
    n = W.shape[-1]
    C = jnp.eye(n, dtype=W.dtype)[rows] * row_mask[:, None]
    first = C @ W if model == "ss" else C

    def step(gamma, _):
        return gamma @ W, gamma

    _, gammas = jax.lax.scan(step, first, None, length=T)
    return gammas


def _shift(K4, k: int):
    """``out[t, :, s, :] = K4[t - k, :, s - k, :]`` (zero for t < k or s < k)."""
    T = K4.shape[0]
    return jnp.pad(K4[:T - k, :, :T - k, :], ((k, 0), (0, 0), (k, 0), (0, 0)))


def block_diagonal_cumsum(gram4):
    """``K[t, s] = Σ_{r <= min(t, s)} Gram[t - r, s - r]`` for blocks [T, m, T, m].

    Computed by doubling, ``A <- A + shift_k(A)`` for k = 1, 2, 4, ... (ceil(log2 T) steps of
    O(T² m²) each), which sums the shifts 0..2^L - 1; shifts >= T vanish.
    """
    T = gram4.shape[0]
    K4, k = gram4, 1
    while k < T:
        K4 = K4 + _shift(K4, k)
        k *= 2
    return K4


def toeplitz_signal(g):
    """``G_T`` [T m, T] from the target's impulse responses g [T, m] (block (t, s) = g[t-s])."""
    T, m = g.shape
    t, s = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    lower = t >= s
    blocks = jnp.where(lower[:, :, None], g[np.where(lower, t - s, 0)], 0.0)  # [t, s, a]
    return jnp.transpose(blocks, (0, 2, 1)).reshape(T * m, T)


def structured_covariance(gammas, noise_mask):
    """Noise covariance ``K = Ĥ Ĥᵀ`` [T m, T m] from the impulse sequence [T, m, n]."""
    T, m, n = gammas.shape
    flat = (gammas * noise_mask).reshape(T * m, n)
    gram = (flat @ flat.T).reshape(T, m, T, m)
    return block_diagonal_cumsum(gram).reshape(T * m, T * m)


def structured_terms_jnp(W, rows, row_mask, noise_mask, target, T: int, model: str):
    """Traceable core of :func:`structured_terms` (vmappable over rows/noise_mask/target)."""
    gammas = impulse_responses(W, rows, row_mask, T, model)
    K = structured_covariance(gammas, noise_mask)
    G = toeplitz_signal(gammas[:, :, target])
    return psd_quadratic_terms(K, G)


def prefix_factor_jnp(W, rows, row_mask, noise_mask, target, T: int, model: str):
    """Whitened signal for every prefix horizon at once, via a Cholesky factor of K.

    With ``K = L Lᵀ`` (equilibrated, lower triangular) and ``Z = L⁻¹ G_T`` (block lower
    triangular), the leading blocks satisfy ``M_h = Z_hᵀ Z_h`` for every horizon h <= T, with
    Z_h the leading (h m) x h block. Valid only when K is nonsingular (e.g. single-row views
    whose first impulse block has unknown noise: tm1 with a neighbour, tm4).

    Returns:
      ``(Z [T m, T], ok)`` where ``ok`` certifies that every Cholesky pivot exceeds
      ``PINV_RTOL`` (otherwise use the Kalman or eigendecomposition paths).
    """
    gammas = impulse_responses(W, rows, row_mask, T, model)
    K = structured_covariance(gammas, noise_mask)
    G = toeplitz_signal(gammas[:, :, target])
    d = jnp.diagonal(K)
    s = jnp.where(d > 0, jax.lax.rsqrt(jnp.where(d > 0, d, 1.0)), 1.0)
    Ks = K * s[:, None] * s[None, :]
    L = jnp.linalg.cholesky(0.5 * (Ks + Ks.T))
    piv = jnp.diagonal(L)
    ok = jnp.all(jnp.isfinite(L)) & jnp.all(piv**2 > PINV_RTOL) & jnp.all(d > 0)
    L = jnp.where(ok, L, jnp.eye(L.shape[0], dtype=L.dtype))
    Z = jax.scipy.linalg.solve_triangular(L, G * s[:, None], lower=True)
    return Z, ok


def padded_rows(rows) -> tuple[np.ndarray, np.ndarray]:
    """Pads observed rows to the next power of two (masked), bounding jit recompilations."""
    rows = np.asarray(rows, dtype=np.int64)
    size = 1 << max(0, int(rows.size - 1).bit_length())
    mask = np.zeros(size)
    mask[: rows.size] = 1.0
    return np.concatenate([rows, np.zeros(size - rows.size, np.int64)]), mask


def structured_system_numpy(W, view: _views.View, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Host ``(K [Tm, Tm], G_T [Tm, T])`` by the structured method; W may be scipy-sparse.

    The impulse recursion costs T products with W (O(T m nnz(W)) for sparse W), so this path
    serves large sparse graphs (e.g. ego-Facebook, n = 4039) with one observed row.
    """
    n = W.shape[-1]
    C = np.eye(n)[view.rows] if n <= 20000 else None
    m = view.rows.size
    gammas = np.empty((T, m, n))
    if C is None:
        C = np.zeros((m, n))
        C[np.arange(m), view.rows] = 1.0
    gammas[0] = np.asarray(W.T @ C.T).T if view.model == "ss" else C
    for k in range(1, T):
        gammas[k] = np.asarray(W.T @ gammas[k - 1].T).T      # Γ_{k+1} = Γ_k W
    flat = (gammas * view.known_mask(n)).reshape(T * m, n)
    K4 = (flat @ flat.T).reshape(T, m, T, m)
    k = 1
    while k < T:
        shifted = np.zeros_like(K4)
        shifted[k:, :, k:, :] = K4[:T - k, :, :T - k, :]
        K4 = K4 + shifted
        k *= 2
    g = gammas[:, :, view.target]
    t, s_ = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    blocks = np.where((t >= s_)[:, :, None], g[np.where(t >= s_, t - s_, 0)], 0.0)
    G = np.transpose(blocks, (0, 2, 1)).reshape(T * m, T)
    return K4.reshape(T * m, T * m), G


def psd_terms_numpy(K: np.ndarray, G: np.ndarray) -> Terms:
    """Host twin of :func:`psd_quadratic_terms` (equilibrated eigh, no jitter)."""
    d = np.diagonal(K)
    sc = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 1.0)
    lam, V = np.linalg.eigh(0.5 * (K + K.T) * sc[:, None] * sc[None, :])
    keep = lam > PINV_RTOL * max(lam[-1], 0.0)
    Gs = G * sc[:, None]
    Z = V.T @ Gs
    inv = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
    resid = Gs - V @ (keep[:, None] * Z)
    return Terms(Z.T @ (inv[:, None] * Z), resid.T @ resid, Gs.T @ Gs)


def _structured_numpy(W: np.ndarray, view: _views.View, T: int) -> Terms:
    """Host (NumPy) twin of :func:`structured_terms_jnp` for one view (no compilation)."""
    return psd_terms_numpy(*structured_system_numpy(W, view, T))


def structured_terms(W, view: _views.View, T: int, *, backend: str = "jax") -> Terms:
    """M_T by the structured Gram / diagonal-cumsum method (float64, time-invariant W).

    ``backend="jax"`` runs the jit-compiled kernel used by the vmapped all-pairs code;
    ``backend="numpy"`` is its host twin (no compilation, used for single pairs).
    """
    W = check_mixing(W, T)
    T = _validate.positive_int("T", T)
    if W.ndim == 3:
        raise _validate.JaxflValueError(
            "The structured method needs a time-invariant W; use method='kalman' or 'dense'.")
    _validate.one_of("backend", backend, ("jax", "numpy"))
    if backend == "numpy":
        return _structured_numpy(W, view, T)
    n = W.shape[-1]
    rows, row_mask = padded_rows(view.rows)
    with jax.enable_x64(True):
        _validate.x64_enabled()
        out = _structured_jit(jnp.asarray(W), jnp.asarray(rows), jnp.asarray(row_mask),
                              jnp.asarray(view.known_mask(n)), view.target, T, view.model)
        return Terms(*(np.asarray(a, dtype=np.float64) for a in out))


_structured_jit = jax.jit(structured_terms_jnp, static_argnums=(5, 6))
