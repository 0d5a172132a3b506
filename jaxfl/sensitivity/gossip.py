"""Pairwise network-DP sensitivities of DP gossip averaging: public entry points.

Koskela & Kulkarni 2025, "Differential Privacy Analysis of Decentralized Gossip Averaging under
Varying Threat Models" (arXiv 2505.19969 v1): Lemma 1 / Thm. 2 (tm1), Sec. 3.1 (tm2), Thm. 3
(tm3), Thm. 4 (tm4), plus the exact plain-message view tm4_exact (ours; the paper mentions but does
not compute it). Node j is then (eps, delta)-DP towards the view with the eps of a Gaussian
mechanism of noise multiplier ``sigma / Δ`` (see :mod:`jaxfl.accounting.gossip`). Every result
states its ``mode`` (:mod:`jaxfl.sensitivity.modes`); ``paper`` reproduces the figures,
``certified`` (default) is a valid upper bound for every T and model dimension.

Example Usage:
  >>> import numpy as np
  >>> from jaxfl.sensitivity import gossip_sensitivity
  >>> W = np.full((4, 4), 0.25)                      # complete graph, W = J / n
  >>> r = gossip_sensitivity(W, target=1, observer=0, T=3, mode="paper")
  >>> round(r.delta_sq, 10), r.mode                  # T / (n - 1)
  (1.0, 'paper')
"""

# pylint: disable=invalid-name
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import sparse

from jaxfl import _validate
from jaxfl.sensitivity import kalman as _kalman
from jaxfl.sensitivity import linear_system as _ls
from jaxfl.sensitivity import modes as _modes
from jaxfl.sensitivity import views as _views
from jaxfl.topology import mixing as _mixing

METHODS = ("auto", "dense", "structured", "kalman")
PAIR_VIEWS = ("tm1", "tm3", "tm4", "tm4_exact")
_STRUCTURED_MAX_ROWS = 2000  # auto: structured while T * m stays below this, else Kalman


class SensitivityResult(NamedTuple):
    """Squared sensitivity of one (target, view) pair. ``delta_sq`` is in ``mode``.

    Values are ``inf`` when the difference leaves the covariance range (views mutually
    singular). ``sign_exact``/``sdp_*`` are ``nan`` unless that mode was requested.
    ``sound``: whether ``delta_sq`` upper-bounds the exact leakage of the named adversary
    (:func:`jaxfl.sensitivity.modes.is_sound`; ``sign_exact`` counts as sound, i.e. for scalar
    data). False for ``mode="paper"`` and for every ``view="tm4"`` result (Thm. 4's
    reduction is not an upper bound on the exact plain-message view; see ``views``).
    """

    delta_sq: float
    mode: str
    view: str
    method: str
    T: int
    target: int
    observer: int | None
    paper: float
    certified: float
    abs_sum: float
    lambda_max: float
    sign_exact: float
    worst_pattern: np.ndarray | None
    sdp_lower: float
    sdp_upper: float
    in_range: bool
    M: np.ndarray
    sound: bool = False

    def as_dict(self) -> dict:
        """JSON-friendly record (without M); states the mode."""
        out = self._asdict()
        out.pop("M")
        pat = out.pop("worst_pattern")
        out["worst_pattern"] = None if pat is None else [int(v) for v in pat]
        return out


def _choose_method(W: np.ndarray, view: _views.View, T: int, method: str) -> str:
    _validate.one_of("method", method, METHODS)
    if method != "auto":
        if method == "structured" and W.ndim == 3:
            raise _validate.JaxflValueError(
                "method='structured' needs a time-invariant W; use 'kalman' or 'dense'.")
        return method
    if W.ndim == 3 or T * view.num_rows > _STRUCTURED_MAX_ROWS:
        return "kalman"
    return "structured"


def sensitivity_terms(W, view: _views.View, T: int, *, method: str = "auto"
                      ) -> tuple[_ls.Terms, str]:
    """``(Terms(M, R, N), method_used)`` of one view (float64 NumPy arrays)."""
    W = _ls.check_mixing(W, T)
    T = _validate.positive_int("T", T)
    method = _choose_method(W, view, T, method)
    if method == "structured":
        return _ls.structured_terms(W, view, T, backend="numpy"), method
    fn = {"dense": _ls.dense_terms, "kalman": _kalman.kalman_terms}[method]
    return fn(W, view, T), method


def gossip_sensitivity(W, target: int, observer: int | None = None, T: int = 1, *,
                       view: str = "tm1", mode: str = "certified", method: str = "auto",
                       known_noise: str = "observer", colluders=None) -> SensitivityResult:
    """Squared sensitivity ``Δ²`` of target j towards the chosen view after T rounds.

    Args:
      W: mixing matrix [n, n] (any real matrix) or a time-varying stack [T, n, n].
      target: protected node j.
      observer: curious node i (``tm1``, ``tm3``, ``tm4``, ``tm4_exact``).
      T: number of gossip rounds.
      view: threat model, see :mod:`jaxfl.sensitivity.views`.
      mode: ``paper`` | ``sign_exact`` | ``sdp`` | ``certified`` (default).
      method: ``auto`` | ``dense`` | ``structured`` | ``kalman`` (all agree to ~1e-12);
        ``structured`` runs on the host (NumPy) here, ``kalman`` is jit-compiled.
      known_noise: ``observer`` (Sec. 3.5 correction, default) or ``none`` (test mode).
      colluders: colluding set for ``view="tm2"``.

    Returns:
      A :class:`SensitivityResult`; ``mu = sqrt(delta_sq) / sigma``.
    """
    _validate.one_of("mode", mode, _modes.MODES)
    W = _ls.check_mixing(W, T)
    T = _validate.positive_int("T", T)
    if mode == "sign_exact":
        _modes.check_sign_horizon(T)
    v = _views.make_view(W, view, target=target, observer=observer, colluders=colluders,
                         known_noise=known_noise)
    terms, used = sensitivity_terms(W, v, T, method=method)
    paper_ok = bool(_ls.in_range(terms, np.ones(T)))
    all_ok = bool(_ls.in_range(terms))
    sign, pattern, sdp_lo, sdp_hi = np.nan, None, np.nan, np.nan
    M = np.asarray(terms.M, dtype=np.float64)       # host float64 from here on
    paper, cert = float(_modes.paper(M)), float(_modes.certified(M))
    absum, lam = float(_modes.abs_sum(M)), float(_modes.lambda_max(M))
    if mode == "sign_exact":
        val, pat = _modes.sign_exact(M)
        sign, pattern = float(val), np.asarray(pat).astype(np.int64)
    if mode == "sdp":
        lo, hi = _modes.sdp_bounds(M)
        sdp_lo, sdp_hi = float(lo), float(hi)
    inf = np.inf
    values = {"paper": paper if paper_ok else inf,
              "certified": cert if all_ok else inf,
              "sign_exact": sign if all_ok else inf,
              "sdp": sdp_hi if all_ok else inf}
    return SensitivityResult(
        delta_sq=values[mode], mode=mode, view=v.name, method=used, T=T, target=v.target,
        observer=observer, paper=values["paper"], certified=values["certified"],
        abs_sum=absum if all_ok else inf, lambda_max=lam, sign_exact=values["sign_exact"],
        worst_pattern=pattern, sdp_lower=sdp_lo if all_ok else inf, sdp_upper=values["sdp"],
        in_range=paper_ok if mode == "paper" else all_ok, M=terms.M,
        sound=_modes.is_sound(mode, v.name, scalar_data=True))


class SensitivityCurve(NamedTuple):
    """Δ² of one pair for every horizon 1..T (index h - 1); ``modes`` names the two rows.

    ``sound``: whether the ``certified`` row upper-bounds the exact view (False for tm4).
    """

    horizons: np.ndarray
    paper: np.ndarray
    certified: np.ndarray
    view: str
    target: int
    observer: int | None
    modes: tuple = ("paper", "certified")
    sound: bool = False


def sensitivity_curve(W, target: int, observer: int | None = None, T: int = 1, *,
                      view: str = "tm1", known_noise: str = "observer", colluders=None,
                      certified: bool = True, method: str = "kalman") -> SensitivityCurve:
    """Paper-mode and certified Δ² for every horizon 1..T of one pair (float64).

    ``method="kalman"`` (default): one filter pass; ``certified=False`` runs the cheaper
    paper-only filter (certified entries are nan), use it for long horizons (the certified
    bound costs one T x T eigvalsh per step). ``method="structured"``: host NumPy, one
    impulse recursion (W may be a ``scipy.sparse`` matrix, e.g. ego-Facebook) and one
    eigendecomposition per horizon (O(T⁴ m³) in total; T <= a few hundred).
    """
    _validate.one_of("method", method, ("kalman", "structured"))
    if method == "structured":
        return _structured_curve(W, target, observer, T, view=view, known_noise=known_noise,
                                 colluders=colluders, certified=certified)
    W = _ls.check_mixing(W, T)
    T = _validate.positive_int("T", T)
    v = _views.make_view(W, view, target=target, observer=observer, colluders=colluders,
                         known_noise=known_noise)
    n = W.shape[-1]
    with jax.enable_x64(True):
        _validate.x64_enabled()
        rows, row_mask = _ls.padded_rows(v.rows)
        out = _curve_jit(jnp.asarray(W), jnp.asarray(rows), jnp.asarray(row_mask),
                         jnp.asarray(v.known_mask(n)), v.target, T, v.model, certified)
        paper, cert, p_ok, a_ok = (np.asarray(a) for a in out)
    return SensitivityCurve(np.arange(1, T + 1), np.where(p_ok, paper, np.inf),
                            np.where(a_ok, cert, np.inf), v.name, v.target, observer,
                            sound=certified and _views.view_is_sound(v.name))


def _structured_curve(W, target, observer, T, *, view, known_noise, colluders, certified):
    T = _validate.positive_int("T", T)
    if sparse.issparse(W):
        _mixing.validate_mixing(W, row_stochastic=False, nonnegative=False, connected=False,
                                min_nodes=2)
        W = sparse.csr_matrix(W, dtype=np.float64)
        v = _views.make_view(_support_proxy(W), view, target=target, observer=observer,
                             colluders=colluders, known_noise=known_noise)
    else:
        W = _ls.check_mixing(W, T)
        if W.ndim == 3:
            raise _validate.JaxflValueError("method='structured' needs a time-invariant W.")
        v = _views.make_view(W, view, target=target, observer=observer, colluders=colluders,
                             known_noise=known_noise)
    K, G = _ls.structured_system_numpy(W, v, T)
    m = v.num_rows
    paper, cert = np.empty(T), np.full(T, np.nan)
    for h in range(1, T + 1):  # host loop over horizons
        t = _ls.psd_terms_numpy(K[: h * m, : h * m], G[: h * m, :h])
        p_ok, a_ok = bool(_ls.in_range(t, np.ones(h))), bool(_ls.in_range(t))
        paper[h - 1] = t.M.sum() if p_ok else np.inf
        if certified:
            cert[h - 1] = float(_modes.certified(t.M)) if a_ok else np.inf
    return SensitivityCurve(np.arange(1, T + 1), paper, cert, v.name, v.target, observer,
                            sound=certified and _views.view_is_sound(v.name))


def _support_proxy(W):
    """Dense 0/1 support of a sparse W (make_view reads neighbourhoods from it)."""
    if W.shape[0] > 20000:
        raise _validate.JaxflValueError("Sparse W with more than 20000 nodes is not supported.")
    return (W != 0).astype(np.float64).toarray()


def _curve_impl(W, rows, row_mask, noise_mask, target, T, model, certified):
    _, _, _, trace, _ = _kalman.kalman_terms_jnp(
        W, rows, row_mask, noise_mask, target, T, model, track_certified=certified,
        paper_only=not certified)
    paper, _, p_ok, a_ok, cert = trace
    return paper, cert, p_ok, a_ok


_curve_jit = jax.jit(_curve_impl, static_argnums=(5, 6, 7))
