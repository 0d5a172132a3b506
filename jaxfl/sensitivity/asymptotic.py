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

The paper's readings of its figures: :func:`approach` and :func:`observer_readings` (Fig. 1:
each observer's curve against the limit), :func:`view_comparison` (Fig. 2 and Thm. 4: the
reduction against the exact plain-message view), on the series that
:mod:`jaxfl.accounting.gossip` reads out of the privacy reports.

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


def observer_readings(curves, limit: float) -> list[dict]:
    """Fig. 1's reading of each observer's curve (:func:`jaxfl.accounting.gossip.observer_curves`)
    against the paper-mode ``limit`` 1/(n-1): the curve's fields plus ``nbr`` (a neighbour:
    approaches from above), ``on_side`` and ``monotone`` (:func:`approach` of its paper-mode
    Δ²/T), ``last`` (its last finite value) at ``T_last``, and ``above``: the horizons where the
    certified Δ²/T lies above the paper's (by more than a relative 1e-9)."""
    out = []
    for c in curves:
        paper, nbr = [v for v in c["paper_over_T"] if v is not None], c["kind"] == "neighbour"
        cert = dict(zip(c["certified_T"], c["certified_over_T"], strict=True))
        above = [T for T, v in zip(c["paper_T"], c["paper_over_T"], strict=True)
                 if v is not None and cert.get(T) is not None and cert[T] > v * (1 + 1e-9)]
        on_side, monotone = approach(paper, limit, from_above=nbr)
        out.append(dict(c, nbr=nbr, on_side=on_side, monotone=monotone, last=paper[-1],
                        T_last=c["T"][len(paper) - 1], above=above))
    return out


def view_comparison(series: dict) -> dict:
    """Fig. 2's reading of the mean pairwise ε per view and mode
    (:func:`jaxfl.accounting.gossip.view_series`): ``rows``, one per horizon of
    ``tm3_certified``, with ``T``, ``ldp`` (None where it did not run) and the tm3 / tm4 values
    of both modes; ``exact`` (None without the exact plain-message view ``tm4_exact_paper``):
    Thm. 4's reduction ``tm4_paper`` against that exact view on their ``horizons`` in common,
    ``larger_at`` (the horizons where the exact view's ε is larger: the reduction is not an
    upper bound there) and the ``last`` two horizons' values ``ex`` and ``red``."""
    eps = {key: dict(zip(c["T"], c["mean_eps"], strict=True)) for key, c in series.items()}
    exact, red = eps.get("tm4_exact_paper"), eps["tm4_paper"]
    common = [T for T in exact or () if T in red]
    note = exact and dict(larger_at=[T for T in common if exact[T] > red[T]],
                          horizons=len(common),
                          last=[dict(T=T, ex=exact[T], red=red[T]) for T in common[-2:]])
    rows = [dict(T=T, ldp=eps.get("ldp", {}).get(T), **{k: eps[k][T] for k in (
        "tm3_paper", "tm3_certified", "tm4_paper", "tm4_certified")})
        for T in series["tm3_certified"]["T"]]
    return dict(rows=rows, exact=note)


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
