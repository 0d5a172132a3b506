"""All-pairs network-DP sensitivity matrices of DP gossip averaging (vmapped, float64).

Koskela & Kulkarni 2025 (arXiv 2505.19969 v1), Fig. 1-3: pairwise sensitivities
``Δ²_{j -> i}`` for every observer i and target j. Per-pair work is a function of one
(observer, target) pair vmapped over a padded pair axis (``jax.lax.map`` in batches to bound
memory); views of different sizes (closed neighbourhoods) are zero-padded with a row mask.

* ``tm1`` uses the structured method with one covariance factorisation per observer
  (K depends only on i when the known set is {i}), all targets solved at once.
* ``tm3``/``tm4``/``tm4_exact`` use the structured method per pair (``method="structured"``)
  or the Kalman filter (``method="kalman"``, default for multi-row views).
* :func:`all_pairs_curves` returns Δ² at several horizons from one Kalman pass per pair.

Entries ``[a, b]`` refer to ``observers[a]`` and ``targets[b]``; pairs with i == j are nan.
"""

# pylint: disable=invalid-name
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import _validate
from jaxfl.sensitivity import kalman as _kalman
from jaxfl.sensitivity import linear_system as _ls
from jaxfl.sensitivity import modes as _modes
from jaxfl.sensitivity import views as _views

PAIR_VIEWS = ("tm1", "tm3", "tm4", "tm4_exact")
PAIR_METHODS = ("auto", "structured", "kalman")


class PairSensitivity(NamedTuple):
    """Pairwise Δ² [len(observers), len(targets)] in ``mode`` (paper values alongside).

    ``sound``: whether ``delta_sq`` upper-bounds the exact view's leakage
    (:func:`jaxfl.sensitivity.modes.is_sound`); False for ``paper`` and for ``view="tm4"``.
    """

    delta_sq: np.ndarray
    paper: np.ndarray
    mode: str
    view: str
    method: str
    T: int
    observers: np.ndarray
    targets: np.ndarray
    sound: bool = False

    def off_diagonal(self, values: np.ndarray | None = None) -> np.ndarray:
        """Flat array of the ordered pairs with observer != target."""
        values = self.delta_sq if values is None else values
        mask = self.observers[:, None] != self.targets[None, :]
        return values[mask]


class PairCurves(NamedTuple):
    """Pairwise Δ² at several horizons: arrays [len(horizons), len(observers), len(targets)].

    ``sound``: whether the ``certified`` arrays upper-bound the exact view (False for tm4).
    """

    horizons: np.ndarray
    paper: np.ndarray
    certified: np.ndarray
    view: str
    observers: np.ndarray
    targets: np.ndarray
    modes: tuple = ("paper", "certified")
    sound: bool = False


def _nodes(name, values, n):
    if values is None:
        return np.arange(n)
    arr = np.asarray(values, dtype=np.int64).reshape(-1)
    if arr.size == 0 or arr.min() < 0 or arr.max() >= n:
        raise _validate.TopologyError(f"Expected {name} to be node indices in [0, {n}).")
    return arr


def _closed_nbhd_table(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    S = np.abs(W).sum(axis=0) if W.ndim == 3 else W
    supp = (S != 0) | (S.T != 0)
    np.fill_diagonal(supp, True)
    size = supp.sum(axis=1)
    m = int(size.max())
    rows = np.zeros((S.shape[0], m), dtype=np.int64)
    mask = np.zeros((S.shape[0], m), dtype=np.float64)
    for k in range(S.shape[0]):  # host-side table build, O(n) rows
        idx = np.flatnonzero(supp[k])
        rows[k, :idx.size], mask[k, :idx.size] = idx, 1.0
    return rows, mask


def pair_arrays(W, view: str, observers, targets, known_noise: str = "observer"):
    """Padded per-pair view arrays for the ordered pairs (i, j), i != j.

    Returns:
      ``(rows [P, m], row_mask [P, m], noise_mask [P, n], target [P], index [P, 2])`` where
      ``index`` holds (position in observers, position in targets).
    """
    W = _ls.check_mixing(W)
    n = W.shape[-1]
    _validate.one_of("view", view, PAIR_VIEWS)
    _validate.one_of("known_noise", known_noise, _views.KNOWN_NOISE)
    obs, tgt = _nodes("observers", observers, n), _nodes("targets", targets, n)
    a, b = np.meshgrid(np.arange(obs.size), np.arange(tgt.size), indexing="ij")
    keep = obs[a] != tgt[b]
    a, b = a[keep], b[keep]
    i, j = obs[a], tgt[b]
    if view in ("tm3", "tm4_exact"):
        table, tmask = _closed_nbhd_table(W)
        who = j if view == "tm3" else i
        rows, row_mask = table[who], tmask[who]
    else:
        rows = (i if view == "tm1" else j)[:, None]
        row_mask = np.ones_like(rows, dtype=np.float64)
    noise = np.ones((i.size, n))
    if known_noise == "observer":
        noise[np.arange(i.size), i] = 0.0
    return rows, row_mask, noise, j, np.stack([a, b], axis=1)


def _pair_values(M, R, N, mode: str, horizon):
    tol2 = _ls.RANGE_TOL**2
    ones = jnp.ones(M.shape[-1], M.dtype)
    paper = jnp.sum(M)
    p_ok = ones @ R @ ones <= tol2 * (ones @ N @ ones)
    a_ok = jnp.trace(R) <= tol2 * jnp.trace(N)
    if mode == "paper":
        value, ok = paper, p_ok
    elif mode == "certified":
        value, ok = _modes.certified(M, horizon), a_ok
    elif mode == "sign_exact":
        value, ok = _modes.sign_exact(M)[0], a_ok
    else:
        value, ok = _modes.sdp_bounds(M)[1], a_ok
    return jnp.where(ok, value, jnp.inf), jnp.where(p_ok, paper, jnp.inf)


def _tm1_observer(W, i, noise_mask, T: int, mode: str):
    """All targets for one TM-1 observer: one factorisation of K_i."""
    gammas = _ls.impulse_responses(W, i[None], jnp.ones(1, W.dtype), T, "ss")
    factor = _ls.psd_factor(_ls.structured_covariance(gammas, noise_mask))
    g = gammas[:, 0, :]                                         # [T, n]
    if mode == "paper":
        s, V, keep, inv = factor
        Xs = jnp.cumsum(g, axis=0) * s[:, None]                 # G_j 1 for every j
        Z = V.T @ Xs
        paper = jnp.sum(inv[:, None] * Z * Z, axis=0)
        resid = Xs - V @ (keep[:, None] * Z)
        ok = jnp.sum(resid**2, axis=0) <= _ls.RANGE_TOL**2 * jnp.sum(Xs**2, axis=0)
        paper = jnp.where(ok, paper, jnp.inf)
        return paper, paper

    def one_target(gj):
        M, R, N = _ls.psd_apply(factor, _ls.toeplitz_signal(gj[:, None]))
        return _pair_values(M, R, N, mode, T)

    return jax.vmap(one_target, in_axes=1)(g)


def _generic_pair(W, rows, row_mask, noise_mask, target, T: int, model: str, mode: str,
                  method: str):
    if method == "structured":
        M, R, N = _ls.structured_terms_jnp(W, rows, row_mask, noise_mask, target, T, model)
    else:
        M, R, N, _, _ = _kalman.kalman_terms_jnp(W, rows, row_mask, noise_mask, target, T,
                                                 model)
    return _pair_values(M, R, N, mode, T)


def _tm1_all_impl(W, obs, noise, T, mode, batch_size):
    return jax.lax.map(lambda xs: _tm1_observer(W, xs[0], xs[1], T, mode), (obs, noise),
                       batch_size=batch_size)


def _generic_all_impl(W, xs, T, model, mode, method, batch_size):
    return jax.lax.map(
        lambda x: _generic_pair(W, x[0], x[1], x[2], x[3], T, model, mode, method), xs,
        batch_size=batch_size)


def _curves_all_impl(W, xs, T, model, horizons, certified, batch_size):
    hvec = jnp.asarray(horizons, W.dtype)
    idx = jnp.asarray(horizons) - 1

    def one(x):
        if not certified:
            _, _, _, (paper, _, p_ok, _, _), _ = _kalman.kalman_terms_jnp(
                W, x[0], x[1], x[2], x[3], T, model, paper_only=True)
            paper = jnp.where(p_ok, paper, jnp.inf)[idx]
            return paper, jnp.full_like(paper, jnp.nan)
        _, _, _, _, (Ms, Rs, Ns) = _kalman.kalman_terms_jnp(
            W, x[0], x[1], x[2], x[3], T, model, checkpoints=horizons)
        cert, paper = jax.vmap(lambda M, R, N, h: _pair_values(M, R, N, "certified", h))(
            Ms, Rs, Ns, hvec)
        return paper, cert

    return jax.lax.map(one, xs, batch_size=batch_size)


def _prefix_all_impl(W, xs, T, model, horizons, certified, batch_size):
    """Single-row views with nonsingular K: one Cholesky gives every horizon."""

    def one(x):
        Z, ok = _ls.prefix_factor_jnp(W, x[0], x[1], x[2], x[3], T, model)
        paper_all = jnp.cumsum(jnp.sum(Z, axis=1) ** 2)
        paper = paper_all[jnp.asarray(horizons) - 1]
        if certified:
            # One batched eigvalsh over zero-padded leading blocks (m = 1 here). Separate
            # per-horizon eigvalsh ops of different sizes hung XLA:CPU (jax 0.10.2).
            idx = jnp.arange(T)

            def cert_h(h):
                keep = idx < h
                Zh = jnp.where(keep[:, None] & keep[None, :], Z, 0.0)
                return _modes.certified(Zh.T @ Zh, h.astype(Z.dtype))

            cert = jax.vmap(cert_h)(jnp.asarray(horizons))
        else:
            cert = jnp.full_like(paper, jnp.nan)
        return paper, cert, ok

    return jax.lax.map(one, xs, batch_size=batch_size)


_tm1_all = jax.jit(_tm1_all_impl, static_argnums=(3, 4, 5))
_generic_all = jax.jit(_generic_all_impl, static_argnums=(2, 3, 4, 5, 6))
_curves_all = jax.jit(_curves_all_impl, static_argnums=(2, 3, 4, 5, 6))
_prefix_all = jax.jit(_prefix_all_impl, static_argnums=(2, 3, 4, 5, 6))


def all_pairs_sensitivity(W, T: int, *, view: str = "tm1", mode: str = "certified",
                          method: str = "auto", known_noise: str = "observer",
                          observers=None, targets=None, batch_size: int = 32
                          ) -> PairSensitivity:
    """Pairwise Δ² for all (observer, target) pairs, vmapped (float64).

    Args:
      W: mixing matrix [n, n] (or [T, n, n] with ``method="kalman"``).
      T: number of rounds.
      view: ``tm1`` | ``tm3`` | ``tm4`` | ``tm4_exact``.
      mode: ``paper`` | ``sign_exact`` | ``sdp`` | ``certified``.
      method: ``auto`` | ``structured`` | ``kalman``.
      known_noise: ``observer`` (default) or ``none``.
      observers, targets: node subsets (default: all nodes).
      batch_size: pairs (or observers for tm1) per vmapped batch.
    """
    W = _ls.check_mixing(W, T)
    T = _validate.positive_int("T", T)
    _validate.one_of("mode", mode, _modes.MODES)
    _validate.one_of("method", method, PAIR_METHODS)
    _validate.one_of("view", view, PAIR_VIEWS)
    if mode == "sign_exact":
        _modes.check_sign_horizon(T)
    n = W.shape[-1]
    obs, tgt = _nodes("observers", observers, n), _nodes("targets", targets, n)
    if W.ndim == 3 and method == "structured":
        raise _validate.JaxflValueError("Time-varying W needs method='kalman'.")
    if method == "auto":
        method = "kalman" if (W.ndim == 3 or view in ("tm3", "tm4_exact")) else "structured"
    out = np.full((obs.size, tgt.size), np.nan)
    paper_out = np.full((obs.size, tgt.size), np.nan)
    with jax.enable_x64(True):
        _validate.x64_enabled()
        Wj = jnp.asarray(W)
        if view == "tm1" and method == "structured":
            noise = np.ones((obs.size, n))
            if known_noise == "observer":
                noise[np.arange(obs.size), obs] = 0.0
            vals, paper = _tm1_all(Wj, jnp.asarray(obs), jnp.asarray(noise), T, mode,
                                   batch_size)
            vals, paper = np.asarray(vals)[:, tgt], np.asarray(paper)[:, tgt]
            diag = obs[:, None] == tgt[None, :]
            out, paper_out = np.where(diag, np.nan, vals), np.where(diag, np.nan, paper)
        else:
            rows, rmask, noise, tj, index = pair_arrays(W, view, obs, tgt, known_noise)
            model = "p" if view in ("tm4", "tm4_exact") else "ss"
            xs = tuple(jnp.asarray(a) for a in (rows, rmask, noise, tj))
            vals, paper = (np.asarray(a) for a in _generic_all(Wj, xs, T, model, mode, method,
                                                               batch_size))
            out[index[:, 0], index[:, 1]] = vals
            paper_out[index[:, 0], index[:, 1]] = paper
    return PairSensitivity(out, paper_out, mode, view, method, T, obs, tgt,
                           sound=_modes.is_sound(mode, view, scalar_data=True))


def all_pairs_curves(W, horizons, *, view: str = "tm3", known_noise: str = "observer",
                     observers=None, targets=None, certified: bool = True,
                     batch_size: int = 32) -> PairCurves:
    """Paper and certified Δ² of every pair at each horizon.

    Single-row views (tm1, tm4) use one Cholesky factorisation per pair for all horizons
    (:func:`~jaxfl.sensitivity.linear_system.prefix_factor_jnp`), falling back to the Kalman
    filter for pairs with a singular covariance; multi-row views use one Kalman pass per pair.
    ``certified=False`` skips the certified bound (and runs a cheaper paper-only filter).
    """
    W = _ls.check_mixing(W)
    hs = tuple(sorted({_validate.positive_int("horizon", int(h)) for h in horizons}))
    T = hs[-1]
    _ls.check_mixing(W, T)
    n = W.shape[-1]
    obs, tgt = _nodes("observers", observers, n), _nodes("targets", targets, n)
    rows, rmask, noise, tj, index = pair_arrays(W, view, obs, tgt, known_noise)
    model = "p" if view in ("tm4", "tm4_exact") else "ss"
    arrays = (rows, rmask, noise, tj)
    with jax.enable_x64(True):
        _validate.x64_enabled()
        Wj = jnp.asarray(W)
        paper = np.full((tj.size, len(hs)), np.nan)
        cert = np.full((tj.size, len(hs)), np.nan)
        todo = np.arange(tj.size)
        if view in ("tm1", "tm4") and W.ndim == 2:
            xs = tuple(jnp.asarray(a) for a in arrays)
            p, c, ok = (np.asarray(a) for a in _prefix_all(Wj, xs, T, model, hs, certified,
                                                           batch_size))
            paper[ok], cert[ok] = p[ok], c[ok]
            todo = np.flatnonzero(~ok)
        if todo.size:
            xs = tuple(jnp.asarray(a[todo]) for a in arrays)
            p, c = (np.asarray(a) for a in _curves_all(Wj, xs, T, model, hs, certified,
                                                       batch_size))
            paper[todo], cert[todo] = p, c
    shape = (len(hs), obs.size, tgt.size)
    P_out, C_out = np.full(shape, np.nan), np.full(shape, np.nan)
    P_out[:, index[:, 0], index[:, 1]] = paper.T
    C_out[:, index[:, 0], index[:, 1]] = cert.T
    return PairCurves(np.asarray(hs), P_out, C_out, view, obs, tgt,
                      sound=certified and _views.view_is_sound(view))


class PairTable:
    """Pairwise Δ² of one view of one mixing matrix, computed per horizon on demand, cached.

    The sensitivity table behind :class:`jaxfl.accounting.gossip.PairwiseAccountant`:
    ``fn(mode)`` is its ``delta_sq_fn`` (``horizons -> [H, n_observers, n_targets]``).
    Dense W (or a time-varying stack [T, n, n]) uses :func:`all_pairs_curves` (one pass for
    all requested horizons); a ``scipy.sparse`` W (ego-Facebook) uses the host structured
    method pair by pair (for a handful of pairs).

    Args:
      W: mixing matrix.
      view: ``tm1`` | ``tm3`` | ``tm4`` | ``tm4_exact``.
      observers, targets: node subsets (default: all nodes).
      known_noise: ``observer`` (Sec. 3.5 correction, default) or ``none``.
    """

    MODES = ("paper", "certified")

    def __init__(self, W, view: str, *, observers=None, targets=None,
                 known_noise: str = "observer"):
        from scipy import sparse as _sparse
        _validate.one_of("view", view, PAIR_VIEWS)
        self.sparse = _sparse.issparse(W)
        if self.sparse:
            from jaxfl.topology import mixing as _mixing
            _mixing.validate_mixing(W, row_stochastic=False, nonnegative=False, connected=False,
                                    min_nodes=2)
            self.W = _sparse.csr_matrix(W, dtype=np.float64)
        else:
            self.W = _ls.check_mixing(W)
        n = self.W.shape[-1]
        self.view, self.known_noise = view, known_noise
        self.observers = _nodes("observers", observers, n)
        self.targets = _nodes("targets", targets, n)
        self._cache: dict[tuple[str, int], np.ndarray] = {}

    @property
    def num_nodes(self) -> int:
        return int(self.W.shape[-1])

    def get(self, horizons, mode: str) -> np.ndarray:
        """Δ² [len(horizons), n_observers, n_targets] in ``mode`` (nan where i == j)."""
        _validate.one_of("mode", mode, self.MODES)
        hs = [_validate.positive_int("horizon", int(h)) for h in horizons]
        todo = sorted({h for h in hs if (mode, h) not in self._cache})
        if todo:
            paper, cert = self._compute(tuple(todo), certified=mode == "certified")
            for k, h in enumerate(todo):
                self._cache["paper", h] = paper[k]
                if cert is not None:
                    self._cache["certified", h] = cert[k]
        return np.stack([self._cache[mode, h] for h in hs])

    def fn(self, mode: str):
        """``horizons -> get(horizons, mode)``."""
        _validate.one_of("mode", mode, self.MODES)
        return lambda horizons: self.get(horizons, mode)

    def _compute(self, hs, *, certified: bool):
        if not self.sparse:
            c = all_pairs_curves(self.W, hs, view=self.view, known_noise=self.known_noise,
                                 observers=self.observers, targets=self.targets,
                                 certified=certified)
            return c.paper, (c.certified if certified else None)
        from jaxfl.sensitivity import gossip as _gossip
        shape = (len(hs), self.observers.size, self.targets.size)
        paper = np.full(shape, np.nan)
        cert = np.full(shape, np.nan) if certified else None
        idx = np.asarray(hs) - 1
        for a, i in enumerate(self.observers):  # host loop over a handful of pairs
            for b, j in enumerate(self.targets):
                if i == j:
                    continue
                cur = _gossip.sensitivity_curve(self.W, int(j), int(i), max(hs), view=self.view,
                                                known_noise=self.known_noise,
                                                certified=certified, method="structured")
                paper[:, a, b] = cur.paper[idx]
                if certified:
                    cert[:, a, b] = cur.certified[idx]
        return paper, cert
