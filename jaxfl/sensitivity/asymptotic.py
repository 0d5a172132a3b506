"""Asymptotic growth rate of the gossip sensitivity (Koskela & Kulkarni 2025, Sec. 4,
Fig. 1; the closed form below is our derivation, checked numerically, since the paper only plots
it).

For single-row views (tm1, tm4) take the transfer function ``h(z) = Σ_{k>=1} Ψ_k z^k``:
``h(z) = c W z (I - zW)^{-1}`` (SS) or ``c z (I - zW)^{-1}`` (P), and the per-frequency rate

    r(ω) = |h_j(e^{iω})|² / Σ_{k not known} |h_k(e^{iω})|².

* Paper mode (all-ones = DC input): ``Δ²_paper / T -> r(0+) = π_j² / Σ_{k not known} π_k²``
  with π the left Perron vector of W (``πᵀW = πᵀ``); 1/(n - |K|) for doubly stochastic W.
* Worst case: ``limsup Δ²_worst / T <= max_ω r(ω)`` (a Szegő-type asymptotic statement, not a
  finite-T certificate).

Host NumPy, float64.
"""

# pylint: disable=invalid-name
from __future__ import annotations

import numpy as np

from jaxfl import validate
from jaxfl.sensitivity import linear_system as _ls
from jaxfl.sensitivity import views as _views


def perron_vector(W) -> np.ndarray:
    """Left eigenvector of W for the eigenvalue closest to 1, normalised to sum 1."""
    W = _ls.check_mixing(W)
    if W.ndim != 2:
        raise validate.JaxflValueError("Expected a time-invariant W.")
    vals, vecs = np.linalg.eig(W.T)
    k = int(np.argmin(np.abs(vals - 1.0)))
    if abs(vals[k] - 1.0) > 1e-8:
        raise validate.TopologyError(f"W has no eigenvalue 1 (closest: {vals[k]}).")
    pi = np.real(vecs[:, k])
    return pi / pi.sum()


def paper_rate_limit(W, view: _views.View) -> float:
    """``lim Δ²_paper / T = π_j² / Σ_{k not known} π_k²`` (tm1 and tm4)."""
    pi = perron_vector(W)
    mask = view.known_mask(pi.size)
    return float(pi[view.target] ** 2 / np.sum(mask * pi**2))


def approach(scaled, limit: float, *, from_above: bool, tol: float = 1e-12) -> tuple[bool, bool]:
    """Whether a paper-mode curve of Δ²/T (in T order) approaches ``limit`` as Fig. 1 shows it:
    ``(on its side of the limit at every T, monotone towards it)``, from above (an observer
    next to the target) or from below (any other); ``tol``: the slack of a monotone step."""
    v, sign = np.asarray(scaled, dtype=np.float64), -1.0 if from_above else 1.0
    return bool(np.all(sign * (limit - v) >= 0)), bool(np.all(sign * np.diff(v) >= -tol))


def rate(W, view: _views.View, omegas) -> np.ndarray:
    """``r(ω)`` on a grid of frequencies (single-row views; ω = 0 exactly is singular)."""
    W = _ls.check_mixing(W)
    if W.ndim != 2 or view.num_rows != 1:
        raise validate.JaxflValueError("rate() needs a time-invariant W and a single-row view.")
    n = W.shape[0]
    c = np.zeros(n)
    c[view.rows[0]] = 1.0
    mask = view.known_mask(n)
    out = []
    for w in np.atleast_1d(np.asarray(omegas, dtype=np.float64)):  # host loop over a grid
        z = np.exp(1j * w)
        # h = c B (I - zW)^{-1} (times z): solve (I - zW)ᵀ hᵀ = Bᵀ cᵀ.
        rhs = (W.T @ c) if view.model == "ss" else c
        h = np.linalg.solve((np.eye(n) - z * W).T, rhs.astype(complex))
        a = np.abs(h) ** 2
        out.append(a[view.target] / np.sum(mask * a))
    return np.asarray(out)


def max_rate(W, view: _views.View, *, num: int = 2048) -> tuple[float, float]:
    """``(max_ω r(ω), argmax)`` over a uniform grid of (0, π]."""
    num = validate.positive_int("num", num, minimum=2)
    omegas = np.linspace(np.pi / num, np.pi, num)
    r = rate(W, view, omegas)
    k = int(np.argmax(r))
    return float(r[k]), float(omegas[k])
