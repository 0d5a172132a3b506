"""Tests of jaxfl.topology.groups: constructors, validation, distances (Kiani et al. 2024, Sec. VI-A
and Def. 5)."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl import validate
from jaxfl.topology import groups


def test_gl_and_cl_shapes():
    s = groups.gl(7)
    assert s.membership.shape == (7, 1) and s.num_pairs == 7
    c = groups.cl(100, 4)
    assert c.group_sizes.tolist() == [25] * 4
    assert np.all(c.worker_degrees == 1)
    assert groups.group_adjacency(c).sum() == 0
    assert np.all(np.isinf(groups.group_distances(c)[~np.eye(4, dtype=bool)]))


@pytest.mark.parametrize("n,m,size,max_rho", [(100, 4, 26, 2), (100, 10, 11, 5), (40, 4, 11, 2)])
def test_ring_matches_spec(n, m, size, max_rho):
    s = groups.ring(n, m)
    assert s.group_sizes.tolist() == [size] * m
    assert s.membership.any(1).all()  # every worker covered
    overlap = np.flatnonzero(s.worker_degrees > 1)
    assert overlap.tolist() == sorted((np.arange(m) * (n // m)).tolist())
    A = groups.group_adjacency(s)
    assert np.all(A.sum(1) == 2)  # a cycle
    shared = s.membership.T.astype(int) @ s.membership.astype(int)
    for g in range(m):  # adjacent groups share exactly one worker
        assert shared[g, (g + 1) % m] == 1
    assert groups.worker_distances(s).max() == max_rho
    assert not groups.is_string(s)


def test_ring_overlap_workers_n100_m4():
    s = groups.ring(100, 4)
    assert np.flatnonzero(s.worker_degrees == 2).tolist() == [0, 25, 50, 75]
    assert s.num_pairs == 104


def test_string_examples_structure():
    s = groups.string(3, 2)
    assert s.groups() == [[0, 1], [1, 2]]
    assert groups.is_string(s)
    assert groups.string_order(s).tolist() in ([0, 1], [1, 0])
    big = groups.string(20, 6)
    A = groups.group_adjacency(big)
    assert np.array_equal(A, np.eye(6, k=1, dtype=bool) | np.eye(6, k=-1, dtype=bool))
    assert big.worker_degrees.max() == 2


def test_label_based_membership():
    counts = np.array([[5, 0, 1, 0, 0, 0, 0, 0, 0, 0],    # labels 0, 2 -> groups 0, 2
                       [0, 0, 0, 0, 0, 3, 0, 0, 0, 0],    # label 5 -> group 0
                       [0, 0, 0, 0, 0, 0, 0, 0, 0, 9]])   # label 9 -> group 4
    # group 1 and 3 would be empty: a structure needs non-empty groups
    with pytest.raises(validate.TopologyError, match="no workers"):
        groups.label_based(counts, 5)
    counts2 = np.vstack([counts, [[0, 1, 0, 1, 0, 0, 0, 0, 0, 0]]])
    s = groups.label_based(counts2, 5)
    assert s.groups() == [[0, 1], [3], [0], [3], [2]]
    s2 = groups.label_based([np.array([0, 2, 2]), np.array([5]), np.array([9]),
                             np.array([1, 3])], 5)
    assert np.array_equal(s.membership, s2.membership)


def test_from_groups_and_validation_errors():
    s = groups.from_groups([[0, 1], [1, 2, 3]], name="toy")
    assert s.num_workers == 4 and s.name == "toy"
    pw, pg = s.pairs()
    assert pw.tolist() == [0, 1, 1, 2, 3] and pg.tolist() == [0, 0, 1, 1, 1]
    with pytest.raises(validate.TopologyError, match="no workers"):
        groups.from_groups([[0, 1], []])
    with pytest.raises(validate.TopologyError, match="belong to no group"):
        groups.from_groups([[0, 1]], num_workers=3)
    with pytest.raises(validate.TopologyError, match="binary"):
        groups.GroupStructure(np.array([[1, 2], [0, 1]]))
    with pytest.raises(validate.TopologyError, match="shape"):
        groups.GroupStructure(np.ones(3))
    with pytest.raises(validate.TopologyError):
        groups.cl(10, 3)
    with pytest.raises(validate.TopologyError):
        groups.ring(10, 4)
    with pytest.raises(validate.JaxflValueError):
        groups.ring(10, 2)
    with pytest.raises(validate.TopologyError):
        groups.string(3, 3)


def test_distances_small_example():
    # 0-1-2 string of groups plus an isolated group 3.
    s = groups.from_groups([[0, 1], [1, 2], [2, 3], [4]])
    rho = groups.group_distances(s)
    assert rho[0].tolist() == [0, 1, 2, np.inf]
    rho_hat = groups.group_to_worker_distances(s)
    assert rho_hat[0].tolist() == [0, 0, 1, 2, np.inf]  # worker 2 is in groups 1 and 2
    wd = groups.worker_distances(s)
    assert wd[0, 3] == 2 and wd[3, 0] == 2 and wd[0, 0] == 0 and np.isinf(wd[0, 4])
    assert groups.is_string(s)


def _random_structure(draw_bits, n, m):
    B = np.asarray(draw_bits, dtype=bool).reshape(n, m)
    B[np.arange(n), np.arange(n) % m] = True  # every worker in some group, every group used
    return groups.GroupStructure(B)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(2, 8), m=st.integers(1, 4), data=st.data())
def test_worker_distance_equals_co_membership_bfs(n, m, data):
    """rho_hat(n, i) + 1 = BFS distance in the worker co-membership graph."""
    if m > n:
        m = n
    bits = data.draw(st.lists(st.booleans(), min_size=n * m, max_size=n * m))
    s = _random_structure(bits, n, m)
    wd = groups.worker_distances(s)
    g = groups.co_membership_graph(s)
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            expected = lengths[a].get(b, np.inf)
            assert wd[a, b] + 1 == expected
    # rho is symmetric with zero diagonal, satisfies the triangle inequality
    rho = groups.group_distances(s)
    assert np.array_equal(rho, rho.T) and np.all(np.diag(rho) == 0)
    for k in range(m):
        assert np.all(rho <= rho[:, [k]] + rho[[k], :])


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(3, 30), m=st.integers(1, 8))
def test_string_constructor_is_string(n, m):
    if n - 1 < m:
        with pytest.raises(validate.TopologyError):
            groups.string(n, m)
        return
    s = groups.string(n, m)
    assert groups.is_string(s)
    assert s.membership.any(1).all() and s.membership.any(0).all()


def test_summary_is_json_friendly():
    import json
    d = groups.summary(groups.ring(100, 4))
    json.dumps(d)
    assert d["overlap_workers"] == 4 and d["group_graph_diameter"] == 2 and d["connected"]
