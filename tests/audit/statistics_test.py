"""Likelihood-ratio statistics against scipy densities and the Gaussian LLR law of the projected
Gaussian mechanism (Koskela & Kulkarni 2025, Lemma 6)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxfl import validate
from jaxfl.audit import statistics


def test_gaussian_llr_equals_the_log_density_ratio():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=4), rng.normal(size=4)
    m = rng.normal(size=(4, 4))
    cov = m @ m.T + 0.5 * np.eye(4)
    stat, mu = statistics.gaussian_llr(a, b, cov)
    y = rng.normal(size=(6, 4))
    expect = (stats.multivariate_normal(a, cov).logpdf(y)
              - stats.multivariate_normal(b, cov).logpdf(y))
    got = np.array([float(stat(jnp.asarray(v))) for v in y])
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    assert mu == pytest.approx(np.sqrt((a - b) @ np.linalg.solve(cov, a - b)), rel=1e-10)


def test_gaussian_llr_singular_covariance_range_check():
    cov = np.diag([1.0, 4.0, 0.0])
    _, mu = statistics.gaussian_llr([1.0, 2.0, 0.0], np.zeros(3), cov)
    assert mu == pytest.approx(np.sqrt(1 + 1))
    _, mu_inf = statistics.gaussian_llr([0.0, 0.0, 1.0], np.zeros(3), cov)
    assert mu_inf == np.inf


def test_gaussian_llr_law_under_d_matches_spec_6_12():
    """Under D the LLR is N(mu^2/2, mu^2) (the projected Gaussian of Koskela & Kulkarni 2025, Lemma 6)."""
    rng = np.random.default_rng(1)
    a = np.array([0.8, -0.3, 0.5])
    cov = np.array([[1.0, 0.3, 0.0], [0.3, 2.0, 0.4], [0.0, 0.4, 0.5]])
    stat, mu = statistics.gaussian_llr(a, np.zeros(3), cov)
    y = rng.multivariate_normal(a, cov, size=40000)
    llr = np.asarray(jax.vmap(stat)(jnp.asarray(y)))
    se = mu / np.sqrt(len(y))
    assert abs(llr.mean() - mu**2 / 2) < 5 * se
    assert llr.var() == pytest.approx(mu**2, rel=0.03)


def test_mixture_llr_matches_scipy():
    mus, probs = np.array([0.0, 1.0, 2.5]), np.array([0.5, 0.3, 0.2])
    stat = statistics.mixture_llr(mus, probs, scale=2.0, offset=1.0)
    y = np.array([0.3, -1.0, 4.0])
    z = (y - 1.0) / 2.0
    per = np.log(np.sum(probs[None] * stats.norm.pdf(z[:, None], mus[None]), 1)
                 / stats.norm.pdf(z))
    assert float(stat(jnp.asarray(y))) == pytest.approx(per.sum(), rel=1e-5)


def test_subsampled_llr_q1_is_linear_and_projection_of_pytrees():
    stat = statistics.subsampled_gaussian_llr(mu=2.0, q=1.0)
    assert float(stat(jnp.array([1.0, 0.0]))) == pytest.approx(2.0 - 2.0 + 0.0 - 2.0)
    proj = statistics.projection({"a": jnp.ones(2), "b": jnp.array([3.0])},
                                 offset={"a": jnp.zeros(2), "b": jnp.array([1.0])})
    assert float(proj({"a": jnp.array([1.0, 2.0]), "b": jnp.array([2.0])})) == 6.0


def test_bad_inputs():
    with pytest.raises(validate.PrivacyParameterError):
        statistics.mixture_llr([0.0, 1.0], [0.5, 0.6])
    with pytest.raises(validate.ShapeError):
        statistics.mixture_llr([0.0, 1.0], [1.0])
    with pytest.raises(validate.ShapeError):
        statistics.gaussian_llr(np.zeros(2), np.zeros(3), np.eye(2))
    with pytest.raises(validate.PrivacyParameterError):
        statistics.subsampled_gaussian_llr(mu=1.0, q=0.0)
