"""Small graphs and mixing matrices shared by the sensitivity tests."""

import numpy as np

from jaxfl.topology import graphs, mixing


def er(n, p, seed, kind="maxdeg"):
    A = graphs.erdos_renyi(n, p, seed=seed)
    return A, (mixing.max_degree(A) if kind == "maxdeg" else mixing.closed_neighbourhood(A))


def path_maxdeg(n):
    return mixing.max_degree(graphs.path(n))


def complete_avg(n):
    return np.full((n, n), 1.0 / n)


def nbr_and_far(A, j):
    """(smallest-index neighbour, smallest-index non-neighbour) of j."""
    nbrs = np.flatnonzero(A[j])
    far = [k for k in range(A.shape[0]) if k != j and A[j, k] == 0]
    return int(nbrs[0]), int(far[0])
