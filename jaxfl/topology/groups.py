"""Overlapping group structures for grouped learning (Kiani, Boenisch, Draper, IEEE JSAIT 2024,
"Controlled privacy leakage propagation throughout overlapping grouped learning", Sec. II and
Sec. VI-A).

A structure is a binary membership matrix ``B`` of shape ``[N workers, M groups]`` with
``B[n, m] = 1`` iff worker n belongs to group m. Groups may overlap: a worker in several groups
trains one local copy per group (one "pair" per non-zero of ``B``). Constructors:

* :func:`gl` - one group of all workers (grouped learning = federated learning).
* :func:`cl` - ``M`` disjoint equal clusters.
* :func:`ring` (RI) - ``M`` groups of ``N/M + 1`` consecutive workers (mod N); adjacent groups
  share exactly one worker and the last group closes the ring.
* :func:`label_based` (LB) - worker n joins group ``y mod M`` for every label y it holds.
* :func:`string` - like the ring but open (Def. 7): groups ordered on a line, group m shares
  workers only with m - 1 and m + 1, every worker in at most two groups.
* :func:`from_groups` - any list of groups.

Graph quantities (host-side, networkx): the group adjacency ``A[m, m'] = 1`` iff the groups
differ and share a worker; the group-to-group hop distance ``rho`` (Def. 5, Eq. 16; 0 on the
diagonal, ``inf`` when disconnected); the group-to-HbC distance ``rho_hat[m', i] = min_{m in
M_i} rho[m', m]``; the worker-pair distance ``min_{m' in M_n} rho_hat[m', i]``.

Example Usage:
  >>> s = ring(9, 3)
  >>> s.membership.shape, s.group_sizes.tolist()
  ((9, 3), [4, 4, 4])
  >>> group_distances(string(5, 3)).tolist()
  [[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Sequence

import networkx as nx
import numpy as np

from jaxfl import validate

# pylint: disable=invalid-name


@dataclasses.dataclass(frozen=True, eq=False)
class GroupStructure:
    """A validated membership matrix and its name.

    Attributes:
      membership: ``[N, M]`` bool, ``membership[n, m]`` iff worker n is in group m.
      name: a label such as ``"RI(100,4)"``.
      kind: the constructor family (``gl``, ``cl``, ``ring``, ``label_based``, ``string``,
        ``custom``).
    """

    membership: np.ndarray  # shape=[N, M], dtype=bool
    name: str = "custom"
    kind: str = "custom"

    def __post_init__(self):
        B = validate_membership(self.membership)
        B.setflags(write=False)
        object.__setattr__(self, "membership", B)

    @property
    def num_workers(self) -> int:
        return int(self.membership.shape[0])

    @property
    def num_groups(self) -> int:
        return int(self.membership.shape[1])

    @property
    def group_sizes(self) -> np.ndarray:
        """``|N_m|``, shape ``[M]``."""
        return self.membership.sum(0).astype(np.int64)

    @property
    def worker_degrees(self) -> np.ndarray:
        """``|M_n|`` (number of groups of each worker), shape ``[N]``."""
        return self.membership.sum(1).astype(np.int64)

    @property
    def num_pairs(self) -> int:
        """``P = nnz(B)``: the number of (worker, group) memberships."""
        return int(self.membership.sum())

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(pair_worker [P], pair_group [P])`` ordered by group, then worker index."""
        g, w = np.nonzero(self.membership.T)
        return w.astype(np.int32), g.astype(np.int32)

    def groups(self) -> list[list[int]]:
        """The member list of every group."""
        return [np.flatnonzero(col).tolist() for col in self.membership.T]

    def __repr__(self) -> str:
        return (f"GroupStructure(name={self.name!r}, N={self.num_workers}, M={self.num_groups}, "
                f"P={self.num_pairs})")


def validate_membership(membership) -> np.ndarray:
    """Returns ``membership`` as a bool array after checking it is a valid structure.

    Raises:
      TopologyError: not 2-D, non-binary entries, an empty group, or a worker in no group.
    """
    B = np.asarray(membership)
    if B.ndim != 2 or B.shape[0] < 1 or B.shape[1] < 1:
        raise validate.TopologyError(
            f"Expected a membership matrix of shape [workers, groups], got shape={B.shape}.")
    if B.dtype != bool:
        if not np.issubdtype(B.dtype, np.number) or not np.all((B == 0) | (B == 1)):
            bad = B[~((B == 0) | (B == 1))] if np.issubdtype(B.dtype, np.number) else B.dtype
            raise validate.TopologyError(
                f"Expected a binary membership matrix (0/1 or bool), found entries {bad!r:.80}.")
        B = B.astype(bool)
    empty = np.flatnonzero(~B.any(0))
    if empty.size:
        raise validate.TopologyError(f"Groups {empty.tolist()[:10]} have no workers.")
    lonely = np.flatnonzero(~B.any(1))
    if lonely.size:
        raise validate.TopologyError(
            f"Workers {lonely.tolist()[:10]} belong to no group; every worker needs a group.")
    return B.copy()


def as_structure(structure) -> GroupStructure:
    """Accepts a :class:`GroupStructure` or a raw membership matrix."""
    if isinstance(structure, GroupStructure):
        return structure
    return GroupStructure(validate_membership(structure))


def from_groups(groups: Sequence[Iterable[int]], num_workers: int | None = None, *,
                name: str = "custom") -> GroupStructure:
    """Builds a structure from member lists (worker indices are 0-based).

    Args:
      groups: one iterable of worker indices per group.
      num_workers: N (default: largest index + 1). Every worker must be in some group.
      name: label of the structure.
    """
    groups = [list(g) for g in groups]
    for m, g in enumerate(groups):
        for w in g:
            if isinstance(w, bool) or not isinstance(w, numbers.Integral | np.integer):
                raise validate.TopologyError(
                    f"Group {m} has a non-integer worker index {w!r}.")
    groups = [sorted({int(w) for w in g}) for g in groups]
    if not groups:
        raise validate.TopologyError("Expected at least one group.")
    for m, g in enumerate(groups):
        if not g:
            raise validate.TopologyError(f"Group {m} has no workers.")
        if g[0] < 0:
            raise validate.TopologyError(f"Group {m} has a negative worker index {g[0]}.")
    top = max(g[-1] for g in groups) + 1
    n = top if num_workers is None else validate.positive_int("num_workers", num_workers)
    if n < top:
        raise validate.TopologyError(f"Worker index {top - 1} is out of range for N={n}.")
    B = np.zeros((n, len(groups)), bool)
    for m, g in enumerate(groups):
        B[g, m] = True
    return GroupStructure(B, name=name, kind="custom")


def gl(num_workers: int) -> GroupStructure:
    """GL: a single group holding all workers (DP-FedAvg)."""
    n = validate.positive_int("num_workers", num_workers)
    return GroupStructure(np.ones((n, 1), bool), name=f"GL({n})", kind="gl")


def cl(num_workers: int, num_groups: int) -> GroupStructure:
    """CL: ``num_groups`` disjoint clusters of ``N/M`` consecutive workers (requires M | N)."""
    n = validate.positive_int("num_workers", num_workers)
    m = validate.positive_int("num_groups", num_groups)
    if n % m:
        raise validate.TopologyError(f"CL needs num_groups | num_workers, got N={n}, M={m}.")
    B = np.zeros((n, m), bool)
    B[np.arange(n), np.arange(n) // (n // m)] = True
    return GroupStructure(B, name=f"CL({n},{m})", kind="cl")


def ring(num_workers: int, num_groups: int) -> GroupStructure:
    """RI: group m = ``{(m N/M + k) mod N : k = 0..N/M}`` (size ``N/M + 1``, requires M | N).

    Adjacent groups share exactly one worker and group M-1 shares worker 0 with group 0. For
    N=100, M=4 the overlap workers are 25, 50, 75 and 0. ``num_groups`` must be at least 3 so
    that the ring is a genuine cycle (with M=2 the two groups would share two workers).
    """
    n = validate.positive_int("num_workers", num_workers)
    m = validate.positive_int("num_groups", num_groups, minimum=3)
    if n % m:
        raise validate.TopologyError(f"RI needs num_groups | num_workers, got N={n}, M={m}.")
    block = n // m
    if block < 2:
        raise validate.TopologyError(f"RI needs N/M >= 2, got N={n}, M={m}.")
    B = np.zeros((n, m), bool)
    for g in range(m):  # host-side construction over a handful of groups
        B[(g * block + np.arange(block + 1)) % n, g] = True
    return GroupStructure(B, name=f"RI({n},{m})", kind="ring")


def string(num_workers: int, num_groups: int) -> GroupStructure:
    """String (Def. 7): groups of consecutive workers on a line, neighbours share one worker.

    Boundaries ``b_0 = 0 < b_1 < ... < b_M = N - 1`` are spread evenly and group m is
    ``{b_m, ..., b_{m+1}}``, so groups m and m+1 share exactly worker ``b_{m+1}``. With N=3, M=2
    this is the system of the paper's Examples 2-3: ``{0, 1}, {1, 2}``.
    """
    n = validate.positive_int("num_workers", num_workers)
    m = validate.positive_int("num_groups", num_groups)
    if n - 1 < m:
        raise validate.TopologyError(f"String needs N - 1 >= M, got N={n}, M={m}.")
    bounds = np.round(np.linspace(0, n - 1, m + 1)).astype(int)
    B = np.zeros((n, m), bool)
    for g in range(m):
        B[bounds[g]:bounds[g + 1] + 1, g] = True
    return GroupStructure(B, name=f"String({n},{m})", kind="string")


def label_based(label_counts, num_groups: int) -> GroupStructure:
    """LB: worker n joins group ``y mod M`` for every label y with ``label_counts[n, y] > 0``.

    Args:
      label_counts: ``[N, num_labels]`` per-worker label histogram (from the partition), or a
        list of per-worker label arrays.
      num_groups: M.
    """
    m = validate.positive_int("num_groups", num_groups)
    if isinstance(label_counts, np.ndarray) and label_counts.ndim == 2:
        counts = label_counts
    else:
        labels = [np.asarray(y).astype(np.int64).ravel() for y in label_counts]
        k = max((int(y.max()) + 1 for y in labels if y.size), default=1)
        counts = np.stack([np.bincount(y, minlength=k) for y in labels])
    counts = np.asarray(counts)
    if np.any(counts < 0):
        raise validate.JaxflValueError("Expected non-negative label counts.")
    present = counts > 0
    B = np.zeros((counts.shape[0], m), bool)
    for y in range(counts.shape[1]):  # host-side loop over a handful of labels
        B[:, y % m] |= present[:, y]
    return GroupStructure(B, name=f"LB({counts.shape[0]},{m})", kind="label_based")


KINDS = ("gl", "cl", "ring", "label_based", "string")


def make(kind: str, num_workers: int, num_groups: int, *, label_counts=None) -> GroupStructure:
    """A structure by name (configs store the name): ``gl``, ``cl``, ``ring``, ``string`` or
    ``label_based`` (which needs the ``[N, labels]`` ``label_counts`` of the partition).

    >>> make("ring", 100, 4).name
    'RI(100,4)'
    """
    validate.one_of("kind", kind, KINDS)
    if kind == "gl":
        return gl(num_workers)
    if kind == "label_based":
        if label_counts is None:
            raise validate.JaxflValueError("Expected label_counts for a label_based structure.")
        counts = np.asarray(label_counts)
        if counts.shape[0] != num_workers:
            raise validate.ShapeError(
                f"Expected label_counts for {num_workers} workers, got shape {counts.shape}.")
        return label_based(counts, num_groups)
    return {"cl": cl, "ring": ring, "string": string}[kind](num_workers, num_groups)


def group_adjacency(structure) -> np.ndarray:
    """``A[m, m'] = 1`` iff ``m != m'`` and groups m, m' share a worker; ``[M, M]`` bool."""
    B = as_structure(structure).membership.astype(np.int64)
    A = (B.T @ B) > 0
    np.fill_diagonal(A, False)
    return A


def group_graph(structure) -> nx.Graph:
    """The group adjacency as a networkx graph on nodes ``0..M-1``."""
    A = group_adjacency(structure)
    g = nx.Graph()
    g.add_nodes_from(range(A.shape[0]))
    g.add_edges_from(zip(*np.nonzero(np.triu(A)), strict=True))
    return g


def group_distances(structure) -> np.ndarray:
    """Hop distance ``rho[m, m']`` in the group graph (Eq. 16); ``[M, M]`` float, ``inf`` if
    no path."""
    g = group_graph(structure)
    M = g.number_of_nodes()
    rho = np.full((M, M), np.inf)
    for src, lengths in nx.all_pairs_shortest_path_length(g):
        for dst, d in lengths.items():
            rho[src, dst] = d
    return rho


def group_to_worker_distances(structure) -> np.ndarray:
    """GtoH distance ``rho_hat[m', i] = min_{m in M_i} rho[m', m]``; ``[M, N]`` float."""
    s = as_structure(structure)
    rho = group_distances(s)
    return np.where(s.membership[None, :, :], rho[:, None, :], np.inf).min(-1)


def worker_distances(structure) -> np.ndarray:
    """``min_{m' in M_n} rho_hat[m', i]``; ``[N (target n), N (HbC i)]`` float.

    Equals the co-membership-graph distance minus one for ``n != i``.
    """
    s = as_structure(structure)
    rho_hat = group_to_worker_distances(s)  # [M, N]
    return np.where(s.membership[:, :, None], rho_hat[None, :, :], np.inf).min(1)


def co_membership_graph(structure) -> nx.Graph:
    """Workers as nodes, an edge between two workers iff they share a group."""
    B = as_structure(structure).membership.astype(np.int64)
    C = (B @ B.T) > 0
    np.fill_diagonal(C, False)
    g = nx.Graph()
    g.add_nodes_from(range(C.shape[0]))
    g.add_edges_from(zip(*np.nonzero(np.triu(C)), strict=True))
    return g


def in_group_peers(structure) -> np.ndarray:
    """``[N, N]`` bool, true iff workers n and i share at least one group (incl. ``n == i``)."""
    B = as_structure(structure).membership.astype(np.int64)
    return (B @ B.T) > 0


def string_order(structure) -> np.ndarray | None:
    """A group order making the structure a string (Def. 7), or None if it is not one.

    A string: every worker is in at most two groups and the group graph is a disjoint union of
    paths (so a relabelling makes ``A`` tridiagonal). A ring (cycle) is not a string.
    """
    s = as_structure(structure)
    if np.any(s.worker_degrees > 2):
        return None
    g = group_graph(s)
    if any(d > 2 for _, d in g.degree()) or not nx.is_forest(g):
        return None
    order = []
    for comp in nx.connected_components(g):
        ends = sorted(v for v in comp if g.degree(v) <= 1)
        order.extend(nx.dfs_preorder_nodes(g.subgraph(comp), source=ends[0]))
    return np.asarray(order, dtype=np.int64)


def is_string(structure) -> bool:
    return string_order(structure) is not None


def summary(structure) -> dict:
    """JSON-friendly description (sizes, overlaps, diameter) for logs and reports."""
    s = as_structure(structure)
    rho = group_distances(s)
    finite = rho[np.isfinite(rho)]
    return {"name": s.name, "kind": s.kind, "num_workers": s.num_workers,
            "num_groups": s.num_groups, "num_pairs": s.num_pairs,
            "group_sizes": s.group_sizes.tolist(),
            "overlap_workers": int(np.sum(s.worker_degrees > 1)),
            "max_groups_per_worker": int(s.worker_degrees.max()),
            "group_graph_diameter": float(finite.max()) if finite.size else 0.0,
            "connected": bool(np.all(np.isfinite(rho)))}


__all__ = [
    "GroupStructure", "validate_membership", "as_structure", "from_groups", "gl", "cl", "ring",
    "string", "label_based", "KINDS", "make", "group_adjacency", "group_graph", "group_distances",
    "group_to_worker_distances", "worker_distances", "co_membership_graph", "in_group_peers",
    "string_order", "is_string", "summary",
]
