"""Gossip (mixing) matrices from communication graphs, with validation (host-side NumPy/SciPy).

Koskela & Kulkarni 2025 (arXiv 2505.19969), Sec. 4 and App. F:

* :func:`max_degree` ("maxdeg_W", Fig. 1 and 2): ``W_ij = Adj_ij / max(d_i, d_j)`` for i != j,
  ``W_ii = 1 - Σ_{k != i} W_ik``; symmetric and doubly stochastic, ``W_ii`` may be 0.
* :func:`closed_neighbourhood` (Fig. 3): ``W_ij = 1 / |N̄_i|`` for j in the closed neighbourhood;
  row-stochastic, not symmetric (the paper's ``Λ^{-1}(A + I)`` display is not row-stochastic: a
  typo).
* :func:`metropolis_hastings`: ``W_ij = 1 / (1 + max(d_i, d_j))``, diagonal completes rows.
* :func:`edge_sampled`: a time-varying stack, each round MH weights on a random subgraph.

:func:`validate_mixing` checks the contract (stochasticity, symmetry, support on the graph,
connectivity) and warns when the second-largest |eigenvalue| is ~1 (periodic or disconnected;
the paper's max-degree weights allow it). Dense inputs give dense outputs; sparse adjacency gives
CSR (for n in the 1000s).

Example Usage:
  >>> from jaxfl.topology import graphs
  >>> W = max_degree(graphs.ring(5))
  >>> _ = validate_mixing(W, doubly_stochastic=True, symmetric=True)
  >>> float(W[0, 1]), float(W[0, 0])
  (0.5, 0.0)
"""

# pylint: disable=invalid-name
from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from scipy.sparse import linalg as sparse_linalg

from jaxfl import validate
from jaxfl.topology import graphs as _graphs

_ATOL = 1e-10


def _degrees(A) -> np.ndarray:
    return np.asarray(A.sum(axis=1)).reshape(-1)


def max_degree(A):
    """maxdeg_W: ``W_ij = A_ij / max(d_i, d_j)``, diagonal ``1 - Σ_{k≠i} W_ik``."""
    _graphs.validate_adjacency(A, require_connected=False)
    d = _degrees(A)
    if sparse.issparse(A):
        C = sparse.coo_matrix(A)
        vals = C.data / np.maximum(d[C.row], d[C.col])
        off = sparse.csr_matrix((vals, (C.row, C.col)), shape=A.shape)
        return sparse.csr_matrix(off + sparse.diags(1.0 - _degrees(off)))
    A = np.asarray(A, dtype=np.float64)
    W = A / np.maximum(np.maximum(d[:, None], d[None, :]), 1.0)
    np.fill_diagonal(W, 1.0 - W.sum(axis=1))
    return W


def closed_neighbourhood(A):
    """``W_ij = 1 / |N̄_i|`` for j ∈ N̄_i = N_i ∪ {i} (row-stochastic averaging)."""
    _graphs.validate_adjacency(A, require_connected=False)
    d = _degrees(A)
    if sparse.issparse(A):
        return sparse.csr_matrix(sparse.diags(1.0 / (d + 1.0)) @ (A + sparse.eye(A.shape[0])))
    A = np.asarray(A, dtype=np.float64)
    return (A + np.eye(A.shape[0])) / (d + 1.0)[:, None]


def metropolis_hastings(A):
    """Metropolis–Hastings weights ``1 / (1 + max(d_i, d_j))``; symmetric, doubly stochastic."""
    _graphs.validate_adjacency(A, require_connected=False)
    d = _degrees(A)
    if sparse.issparse(A):
        C = sparse.coo_matrix(A)
        vals = 1.0 / (1.0 + np.maximum(d[C.row], d[C.col]))
        off = sparse.csr_matrix((vals, (C.row, C.col)), shape=A.shape)
        return sparse.csr_matrix(off + sparse.diags(1.0 - _degrees(off)))
    A = np.asarray(A, dtype=np.float64)
    W = A / (1.0 + np.maximum(d[:, None], d[None, :]))
    np.fill_diagonal(W, 1.0 - W.sum(axis=1))
    return W


def edge_sampled(A, T: int, *, keep_prob: float, seed: int) -> np.ndarray:
    """Time-varying W [T, n, n]: each round keeps each edge w.p. ``keep_prob``, MH weights.

    Rounds may be disconnected; each W_t is still symmetric and doubly stochastic.
    """
    T = validate.positive_int("T", T)
    q = validate.probability("keep_prob", keep_prob)
    A = np.asarray(sparse.csr_matrix(A).toarray() if sparse.issparse(A) else A, np.float64)
    _graphs.validate_adjacency(A, require_connected=False)
    rng = np.random.default_rng(validate.positive_int("seed", seed, minimum=0))
    iu = np.triu_indices(A.shape[0], 1)
    out = np.empty((T,) + A.shape)
    for t in range(T):  # host loop over rounds
        keep = np.zeros_like(A)
        keep[iu] = (rng.random(iu[0].size) < q) * A[iu]
        out[t] = metropolis_hastings(keep + keep.T)
    return out


def second_eigenvalue_modulus(W) -> float:
    """Second-largest |eigenvalue| of W (1 - spectral gap for symmetric stochastic W)."""
    n = W.shape[0]
    if sparse.issparse(W) and n > 500:
        vals = sparse_linalg.eigs(W, k=2, which="LM", return_eigenvectors=False)
    else:
        dense = W.toarray() if sparse.issparse(W) else np.asarray(W)
        vals = np.linalg.eigvals(dense)
    mods = np.sort(np.abs(vals))[::-1]
    return float(mods[1]) if mods.size > 1 else 0.0


def validate_mixing(W, *, adjacency=None, row_stochastic: bool = True,
                    doubly_stochastic: bool = False, symmetric: bool = False,
                    connected: bool = True, nonnegative: bool = True,
                    time_varying: bool = False, min_nodes: int = 1,
                    rounds: int | None = None) -> np.ndarray | None:
    """Checks a mixing matrix against its contract; raises :class:`TopologyError`.

    The library's one validation of mixing matrices: the gossip algorithms and
    :mod:`jaxfl.sensitivity` (which accepts any real W, ``row_stochastic=False,
    nonnegative=False, connected=False``) call it.

    Args:
      W: [n, n] dense or sparse; with ``time_varying=True`` also a stack [T, n, n] (each W_t
        is checked).
      adjacency: if given, the off-diagonal support of W must lie on its edges.
      row_stochastic / doubly_stochastic / symmetric / nonnegative: required properties.
      connected: the support graph of W must be connected.
      time_varying: accept a stack [T, n, n].
      min_nodes: smallest accepted n.
      rounds: with a stack, it must hold at least this many matrices.

    Returns:
      The dense float64 matrix (or stack) when W is dense; None for a sparse W.
    """
    is_sparse = sparse.issparse(W)
    if is_sparse:
        dense = None
        shape = W.shape
        if not np.all(np.isfinite(W.data)):
            raise validate.TopologyError("Expected a finite mixing matrix W.")
    else:
        dense = np.asarray(W, dtype=np.float64)
        shape = dense.shape
    ndims = (2, 3) if time_varying else (2,)
    if len(shape) not in ndims or shape[-1] != shape[-2] or shape[-1] < min_nodes:
        want = "(n, n) or (T, n, n)" if time_varying else "(n, n)"
        raise validate.ShapeError(
            f"Expected W.shape={want} with n >= {min_nodes}, got W.shape={tuple(shape)}.")
    if dense is not None and not np.all(np.isfinite(dense)):
        raise validate.TopologyError("Expected a finite mixing matrix W.")
    if len(shape) == 3:
        if rounds is not None and shape[0] < rounds:
            raise validate.ShapeError(
                f"Expected a time-varying W with at least T={rounds} matrices, got {shape[0]}.")
        for Wt in dense:  # host loop over the stack
            validate_mixing(Wt, adjacency=adjacency, row_stochastic=row_stochastic,
                            doubly_stochastic=doubly_stochastic, symmetric=symmetric,
                            connected=connected, nonnegative=nonnegative,
                            min_nodes=min_nodes)
        return dense
    checks = (row_stochastic or doubly_stochastic or symmetric or nonnegative or connected
              or adjacency is not None)
    if not checks:
        return dense
    if is_sparse:
        dense_full = W.toarray()
    else:
        dense_full = dense
    if nonnegative and dense_full.min() < -_ATOL:
        raise validate.TopologyError(f"Expected W >= 0, min entry {dense_full.min():.3g}.")
    if (row_stochastic or doubly_stochastic) and np.abs(dense_full.sum(1) - 1).max() > 1e-9:
        raise validate.TopologyError("Expected row sums of W equal to 1.")
    if doubly_stochastic and np.abs(dense_full.sum(0) - 1).max() > 1e-9:
        raise validate.TopologyError("Expected column sums of W equal to 1.")
    if symmetric and np.abs(dense_full - dense_full.T).max() > _ATOL:
        raise validate.TopologyError("Expected a symmetric W.")
    off = (dense_full != 0) & ~np.eye(dense_full.shape[0], dtype=bool)
    if adjacency is not None:
        adj = adjacency.toarray() if sparse.issparse(adjacency) else np.asarray(adjacency)
        if adj.shape != dense_full.shape:
            raise validate.ShapeError(
                f"adjacency {adj.shape} does not match W {dense_full.shape}.")
        if np.any(off & (adj == 0)):
            raise validate.TopologyError("W has weight on a pair that is not an edge.")
    if connected:
        support = (off | off.T).astype(np.float64)
        if not _graphs.is_connected(support):
            raise validate.TopologyError("Expected the support of W to be connected.")
        lam2 = second_eigenvalue_modulus(dense_full if dense_full.shape[0] <= 500 else W)
        if lam2 >= 1 - 1e-9:
            warnings.warn(f"W has a second eigenvalue of modulus {lam2:.12f} ~ 1 (periodic "
                          "gossip, e.g. a bipartite regular graph with maxdeg_W); averaging "
                          "does not converge.", RuntimeWarning, stacklevel=2)
    return dense
