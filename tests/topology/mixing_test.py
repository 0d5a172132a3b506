"""Mixing matrices: formulas, stochasticity, symmetry, validation, spectral warning."""

import warnings

import numpy as np
import pytest
from scipy import sparse

from jaxfl import validate
from jaxfl.topology import graphs, mixing


def test_max_degree_formula_and_properties():
    A = graphs.erdos_renyi(20, 0.3, seed=3)
    W = mixing.max_degree(A)
    d = A.sum(1)
    for i, j in zip(*np.nonzero(A)):
        assert W[i, j] == pytest.approx(1 / max(d[i], d[j]))
    np.testing.assert_allclose(np.diag(W), 1 - (W.sum(1) - np.diag(W)), atol=1e-12)
    mixing.validate_mixing(W, adjacency=A, doubly_stochastic=True, symmetric=True)
    Ws = mixing.max_degree(sparse.csr_matrix(A))
    np.testing.assert_allclose(Ws.toarray(), W, atol=1e-15)


def test_closed_neighbourhood_is_row_stochastic_not_symmetric():
    A = graphs.star(5)
    W = mixing.closed_neighbourhood(A)
    np.testing.assert_allclose(W[0], np.full(5, 0.2))
    np.testing.assert_allclose(W[1], [0.5, 0.5, 0, 0, 0])
    mixing.validate_mixing(W, adjacency=A)
    with pytest.raises(validate.TopologyError, match="column"):
        mixing.validate_mixing(W, doubly_stochastic=True)
    with pytest.raises(validate.TopologyError, match="symmetric"):
        mixing.validate_mixing(W, symmetric=True)
    Ws = mixing.closed_neighbourhood(sparse.csr_matrix(A))
    np.testing.assert_allclose(Ws.toarray(), W)


def test_metropolis_hastings():
    A = graphs.erdos_renyi(15, 0.3, seed=1)
    W = mixing.metropolis_hastings(A)
    d = A.sum(1)
    i, j = np.argwhere(A)[0]
    assert W[i, j] == pytest.approx(1 / (1 + max(d[i], d[j])))
    assert np.all(np.diag(W) > 0)
    mixing.validate_mixing(W, adjacency=A, doubly_stochastic=True, symmetric=True)
    assert mixing.second_eigenvalue_modulus(W) < 1


def test_edge_sampled_time_varying():
    A = graphs.erdos_renyi(10, 0.5, seed=0)
    Ws = mixing.edge_sampled(A, 4, keep_prob=0.5, seed=7)
    assert Ws.shape == (4, 10, 10)
    for W in Ws:
        mixing.validate_mixing(W, adjacency=A, doubly_stochastic=True, symmetric=True,
                               connected=False)
    np.testing.assert_array_equal(Ws, mixing.edge_sampled(A, 4, keep_prob=0.5, seed=7))


def test_validation_errors_and_periodic_warning():
    A = graphs.path(4)
    W = mixing.max_degree(A)
    with pytest.raises(validate.TopologyError, match="not an edge"):
        mixing.validate_mixing(np.full((4, 4), 0.25), adjacency=A)
    with pytest.raises(validate.TopologyError, match="row sums"):
        mixing.validate_mixing(0.9 * W)
    with pytest.raises(validate.TopologyError, match=">= 0"):
        mixing.validate_mixing(np.array([[1.5, -0.5], [-0.5, 1.5]]))
    with pytest.raises(validate.TopologyError, match="connected"):
        mixing.validate_mixing(np.eye(3))
    ring = mixing.max_degree(graphs.ring(6))      # bipartite 2-regular: W_ii = 0, eig -1
    with pytest.warns(RuntimeWarning, match="second eigenvalue"):
        mixing.validate_mixing(ring, doubly_stochastic=True, symmetric=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mixing.validate_mixing(mixing.max_degree(graphs.ring(5)))
