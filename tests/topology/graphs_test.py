"""Graph constructors, validation and the SNAP edge-list loader."""

from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from scipy import sparse

from jaxfl import validate
from jaxfl.topology import graphs

FIXTURE = __file__.replace("graphs_test.py", "data/snap_tiny.txt")


def _check(A, n):
    assert A.shape == (n, n)
    graphs.validate_adjacency(A)


def test_erdos_renyi_first_attempt_is_networkx_and_connected():
    A = graphs.erdos_renyi(100, 0.2, seed=1)
    ref = nx.to_numpy_array(nx.erdos_renyi_graph(100, 0.2, seed=1), nodelist=range(100))
    np.testing.assert_array_equal(A, ref)
    _check(A, 100)
    # Sparse p: resampling until connected, deterministic in the seed.
    B1 = graphs.erdos_renyi(30, 0.08, seed=5)
    B2 = graphs.erdos_renyi(30, 0.08, seed=5)
    np.testing.assert_array_equal(B1, B2)
    _check(B1, 30)
    with pytest.raises(validate.TopologyError):
        graphs.erdos_renyi(40, 0.001, seed=0, max_tries=3)


def test_deterministic_constructors():
    _check(graphs.ring(6), 6)
    assert graphs.ring(6).sum() == 12
    _check(graphs.path(5), 5)
    assert graphs.path(5).sum() == 8
    _check(graphs.complete(4), 4)
    assert graphs.complete(4).sum() == 12
    _check(graphs.star(5), 5)
    G = graphs.grid(3, 4)
    _check(G, 12)
    assert G.sum() == 2 * (3 * 3 + 2 * 4)
    assert graphs.grid(3, 4, periodic=True).sum(1).tolist() == [4] * 12
    R = graphs.random_regular(3, 10, seed=2)
    _check(R, 10)
    assert set(R.sum(1)) == {3}
    with pytest.raises(validate.TopologyError):
        graphs.random_regular(3, 7, seed=0)


def test_validate_adjacency_rejects():
    A = graphs.path(4)
    bad = A.copy()
    bad[0, 1] = 0
    with pytest.raises(validate.TopologyError, match="symmetric"):
        graphs.validate_adjacency(bad)
    loops = A + np.eye(4)
    with pytest.raises(validate.TopologyError, match="self-loops"):
        graphs.validate_adjacency(loops)
    with pytest.raises(validate.TopologyError, match="0/1"):
        graphs.validate_adjacency(0.5 * A)
    disc = np.zeros((4, 4))
    disc[0, 1] = disc[1, 0] = 1
    with pytest.raises(validate.TopologyError, match="connected"):
        graphs.validate_adjacency(disc)
    graphs.validate_adjacency(disc, require_connected=False)
    with pytest.raises(validate.ShapeError):
        graphs.validate_adjacency(np.ones((2, 3)))


def test_snap_loader_on_fixture():
    A, labels = graphs.load_edge_list(FIXTURE)
    assert sparse.issparse(A)
    # Largest component {10, 20, 30, 40, 50}; {70, 80} dropped; loop 30-30 and the
    # duplicate/directed 10-20 pair collapse to one undirected edge.
    assert labels.tolist() == [10, 20, 30, 40, 50]
    dense = A.toarray()
    graphs.validate_adjacency(dense)
    edges = {(int(labels[a]), int(labels[b])) for a, b in zip(*np.nonzero(np.triu(dense)))}
    assert edges == {(10, 20), (20, 30), (30, 40), (10, 40), (10, 50)}
    full, lab_all = graphs.load_edge_list(FIXTURE, dense=True, connected_component=False)
    assert full.shape == (7, 7) and lab_all.tolist() == [10, 20, 30, 40, 50, 70, 80]
    assert not graphs.is_connected(full)


def test_facebook_missing_file_error(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    with pytest.raises(validate.DataNotFoundError, match="facebook_combined"):
        graphs.facebook()
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / graphs.FACEBOOK_FILE).write_bytes(Path(FIXTURE).read_bytes())
    A, labels = graphs.facebook()
    assert A.shape == (5, 5)
    with pytest.raises(validate.DataNotFoundError):
        graphs.load_edge_list(tmp_path / "nope.txt")
