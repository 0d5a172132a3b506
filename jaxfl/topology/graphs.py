"""Communication graphs for decentralized learning (host-side NumPy / networkx / SciPy).

Graphs are returned as symmetric 0/1 adjacency matrices without self-loops (the paper's
adjacency ``A``, renamed ``Adj``): dense ``np.ndarray`` [n, n] float64, or a
``scipy.sparse.csr_matrix`` for large edge lists. Random constructors take an explicit integer seed.
Used by Koskela & Kulkarni 2025 (arXiv 2505.19969), Sec. 4: Erdős–Rényi G(n, p) (resampled until
connected) and the SNAP ego-Facebook graph (``facebook_combined.txt``; 4039 nodes, 88234 undirected
edges; the paper says "directed, n = 4036"; we use SNAP's undirected file as is).

Example Usage:
  >>> A = erdos_renyi(100, 0.2, seed=1)
  >>> A.shape, bool(is_connected(A))
  ((100, 100), True)
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from jaxfl import validate

FACEBOOK_FILE = "facebook_combined.txt"
FACEBOOK_URL = "https://snap.stanford.edu/data/facebook_combined.txt.gz"


def from_networkx(graph: nx.Graph) -> np.ndarray:
    """Dense symmetric adjacency of an undirected networkx graph (nodes in sorted order)."""
    nodes = sorted(graph.nodes())
    A = nx.to_numpy_array(graph, nodelist=nodes, dtype=np.float64, weight=None)
    A = np.maximum(A, A.T)
    np.fill_diagonal(A, 0.0)
    return A


def validate_adjacency(A, *, require_connected: bool = True) -> None:
    """Checks square, symmetric, 0/1 and loop-free (and connected unless disabled)."""
    shape = A.shape
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 1:
        raise validate.ShapeError(f"Expected a square adjacency matrix, got shape={shape}.")
    if sparse.issparse(A):
        A = sparse.csr_matrix(A)
        asym = abs(A - A.T).max() if A.nnz else 0.0
        vals = np.unique(A.data)
        loops = np.any(A.diagonal() != 0)
    else:
        A = np.asarray(A)
        asym = np.abs(A - A.T).max()
        vals = np.unique(A)
        loops = np.any(np.diag(A) != 0)
    if asym > 0:
        raise validate.TopologyError("Expected a symmetric adjacency matrix (undirected graph).")
    if not np.all(np.isin(vals, (0.0, 1.0))):
        raise validate.TopologyError(f"Expected 0/1 adjacency entries, got values {vals[:5]}.")
    if loops:
        raise validate.TopologyError("Expected no self-loops in the adjacency matrix.")
    if require_connected and not is_connected(A):
        raise validate.TopologyError("Expected a connected graph.")


def is_connected(A) -> bool:
    """Whether the undirected graph with adjacency ``A`` (dense or sparse) is connected."""
    k, _ = csgraph.connected_components(sparse.csr_matrix(A), directed=False)
    return k == 1


def largest_component(A) -> tuple:
    """``(adjacency restricted to the largest connected component, kept node indices)``."""
    _, labels = csgraph.connected_components(sparse.csr_matrix(A), directed=False)
    big = np.argmax(np.bincount(labels))
    keep = np.flatnonzero(labels == big)
    sub = sparse.csr_matrix(A)[keep][:, keep]
    return (sub if sparse.issparse(A) else sub.toarray()), keep


def erdos_renyi(n: int, p: float, *, seed: int, max_tries: int = 1000) -> np.ndarray:
    """G(n, p), resampled until connected (the paper assumes connectivity).

    Attempt 0 is ``networkx.erdos_renyi_graph(n, p, seed=seed)`` exactly; attempt a > 0 uses a
    seed drawn from ``np.random.default_rng([seed, a])``.
    """
    n = validate.positive_int("n", n, minimum=2)
    p = validate.probability("p", p)
    seed = validate.positive_int("seed", seed, minimum=0)
    for attempt in range(validate.positive_int("max_tries", max_tries)):
        s = seed if attempt == 0 else int(np.random.default_rng([seed, attempt]).integers(2**31))
        A = from_networkx(nx.erdos_renyi_graph(n, p, seed=s))
        if is_connected(A):
            return A
    raise validate.TopologyError(
        f"No connected G(n={n}, p={p}) in {max_tries} tries; increase p.")


def ring(n: int) -> np.ndarray:
    """Cycle graph C_n (n >= 3)."""
    return from_networkx(nx.cycle_graph(validate.positive_int("n", n, minimum=3)))


def path(n: int) -> np.ndarray:
    """Path graph 0 - 1 - ... - (n-1)."""
    return from_networkx(nx.path_graph(validate.positive_int("n", n, minimum=2)))


def complete(n: int) -> np.ndarray:
    """Complete graph K_n."""
    return from_networkx(nx.complete_graph(validate.positive_int("n", n, minimum=2)))


def star(n: int) -> np.ndarray:
    """Star with centre 0 and n - 1 leaves."""
    return from_networkx(nx.star_graph(validate.positive_int("n", n, minimum=2) - 1))


def grid(rows: int, cols: int, *, periodic: bool = False) -> np.ndarray:
    """2-D grid (torus if ``periodic``), nodes numbered row-major."""
    rows = validate.positive_int("rows", rows)
    cols = validate.positive_int("cols", cols)
    g = nx.grid_2d_graph(rows, cols, periodic=periodic)
    g = nx.relabel_nodes(g, {(r, c): r * cols + c for r, c in g.nodes()})
    return from_networkx(g)


def random_regular(degree: int, n: int, *, seed: int, max_tries: int = 100) -> np.ndarray:
    """Connected random ``degree``-regular graph on n nodes (resampled until connected)."""
    degree = validate.positive_int("degree", degree)
    n = validate.positive_int("n", n, minimum=2)
    if degree >= n or (degree * n) % 2:
        raise validate.TopologyError(
            f"Expected degree < n and degree * n even, got degree={degree}, n={n}.")
    for attempt in range(max_tries):
        s = seed if attempt == 0 else int(np.random.default_rng([seed, attempt]).integers(2**31))
        A = from_networkx(nx.random_regular_graph(degree, n, seed=s))
        if is_connected(A):
            return A
    raise validate.TopologyError(f"No connected {degree}-regular graph in {max_tries} tries.")


def load_edge_list(file, *, dense: bool = False, connected_component: bool = True):
    """Reads a SNAP-format edge list (``u v`` per line, ``#`` comments) as an undirected graph.

    Directed edges are symmetrised, self-loops and duplicates dropped, node labels relabelled to
    ``0..n-1`` in increasing label order; optionally restricted to the largest component.

    Returns:
      ``(adjacency, labels)``: CSR (or dense) adjacency and the original label of each node.
    """
    file = Path(file)
    if not file.is_file():
        raise validate.DataNotFoundError(f"Edge list not found: {file}.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # empty file: reported just below
            edges = np.loadtxt(file, comments="#", dtype=np.int64, ndmin=2)
    except ValueError as e:
        raise validate.JaxflValueError(f"{file}: not an integer edge list ({e}).") from e
    if edges.ndim != 2 or edges.shape[1] < 2:
        raise validate.ShapeError(f"Expected lines 'u v' in {file}, got shape {edges.shape}.")
    edges = edges[:, :2]
    labels, inv = np.unique(edges, return_inverse=True)
    u, v = inv.reshape(-1, 2).T
    off = u != v
    u, v = u[off], v[off]
    n = labels.size
    A = sparse.coo_matrix((np.ones(2 * u.size), (np.r_[u, v], np.r_[v, u])), shape=(n, n))
    A = sparse.csr_matrix(A)
    A.data[:] = 1.0  # duplicates were summed
    if connected_component:
        A, keep = largest_component(A)
        labels = labels[keep]
    return (A.toarray() if dense else A), labels


def facebook(data_dir: str | os.PathLike | None = None, *, dense: bool = False):
    """SNAP ego-Facebook (``facebook_combined.txt``) from ``data_dir`` or ``$JAXFL_DATA_DIR``.

    Looks for ``<dir>/facebook_combined.txt`` and ``<dir>/snap/facebook_combined.txt``; without
    ``data_dir`` and ``$JAXFL_DATA_DIR``, ``<dir>`` is the download cache
    (``$XDG_CACHE_HOME/jaxfl``). The file is not shipped with jaxfl:
    ``python -m jaxfl.data.download facebook`` fetches, checks and unpacks it (the topology
    layer sits below the data layer, so this loader never downloads by itself).
    """
    cache = Path(os.environ.get("XDG_CACHE_HOME", "") or Path.home() / ".cache") / "jaxfl"
    base = Path(data_dir or os.environ.get("JAXFL_DATA_DIR", "") or cache)
    for cand in (base / FACEBOOK_FILE, base / "snap" / FACEBOOK_FILE,
                 base / "facebook" / FACEBOOK_FILE):
        if cand.is_file():
            return load_edge_list(cand, dense=dense)
    where = "" if data_dir is None else f" --dir {base}"
    raise validate.DataNotFoundError(
        f"{FACEBOOK_FILE} not found under {base} (or its snap/, facebook/ subfolders). "
        f"Download it with: python -m jaxfl.data.download facebook{where} "
        f"(or get {FACEBOOK_URL} and gunzip it).")
