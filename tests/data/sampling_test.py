"""Participation samplers: statistics, capacity bound, padded cohorts."""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from jaxfl import validate
from jaxfl.data import sampling

N, T = 40, 20000


def _draws(sampler, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([sampler.sample(rng, N) for _ in range(T)])


def _z(samples, mean):
    return (samples.mean() - mean) / (samples.std(ddof=1) / np.sqrt(len(samples)))


def test_poisson_marginal_and_pairwise():
    q = 0.25
    masks = _draws(sampling.Poisson(q))
    assert masks.dtype == np.bool_ and masks.shape == (T, N)
    # Marginal: per-draw fraction of clients included, mean q.
    frac = masks.mean(1)
    assert abs(_z(frac, q)) < 4 and abs(_z(frac, 1.05 * q)) > 4
    # Every client individually (Bonferroni over 40 clients).
    per_client = masks.mean(0)
    sigma = np.sqrt(q * (1 - q) / T)
    assert np.abs(per_client - q).max() < 4.5 * sigma
    # Pairwise: per-draw fraction of ordered pairs (i != j) both included, mean q^2
    # (independence), unlike fixed-size sampling whose pair rate is k(k-1)/(N(N-1)).
    m = masks.sum(1).astype(np.float64)
    pairs = m * (m - 1) / (N * (N - 1))
    assert abs(_z(pairs, q * q)) < 4
    k = q * N
    assert abs(_z(pairs, k * (k - 1) / (N * (N - 1)))) > 4
    # Cohort size is Binomial(N, q).
    assert abs(m.var(ddof=1) / (N * q * (1 - q)) - 1) < 0.05


def test_fixed_size_and_full():
    masks = _draws(sampling.FixedSize(10))
    assert (masks.sum(1) == 10).all()
    per_client = masks.mean(0)
    sigma = np.sqrt(0.25 * 0.75 / T)
    assert np.abs(per_client - 0.25).max() < 4.5 * sigma
    assert sampling.FixedSize(10).inclusion_probability(N) == 0.25
    assert sampling.Full().sample(np.random.default_rng(0), 5).all()
    assert sampling.Full().capacity(7) == 7
    with pytest.raises(validate.JaxflValueError, match="size <= num_clients"):
        sampling.FixedSize(50).sample(np.random.default_rng(0), N)


@pytest.mark.parametrize("n, q", [(100, 0.1), (1000, 0.01), (3400, 0.0294), (10, 0.5),
                                  (1, 0.3), (500, 1.0)])
@pytest.mark.parametrize("tail", [1e-12, 1e-3])
def test_capacity_is_binomial_quantile(n, q, tail):
    cap = sampling.Poisson(q).capacity(n, tail=tail)
    assert 0 <= cap <= n
    assert stats.binom.sf(cap, n, q) < tail  # realised cohort exceeds cap w.p. < tail
    if cap > 0:
        assert stats.binom.sf(cap - 1, n, q) >= tail  # and cap is the smallest such


def test_capacity_empirical():
    sampler = sampling.Poisson(0.2)
    cap = sampler.capacity(N, tail=0.01)
    sizes = _draws(sampler, seed=1).sum(1)
    exceed = (sizes > cap).mean()
    assert exceed < 0.01 + 4 * np.sqrt(0.01 / T)
    assert (sizes > cap - 1).mean() > 0.01 - 4 * np.sqrt(0.01 / T)
    assert sampler.capacity(N) >= cap  # smaller tail, larger capacity


def test_cohort_indices_padding_and_overflow():
    mask = np.array([False, True, False, True, True, False])
    idx, valid = sampling.cohort_indices(mask, 5)
    assert idx.tolist() == [1, 3, 4, 0, 0] and valid.tolist() == [True] * 3 + [False] * 2
    assert idx.dtype == np.int32
    # More participants than capacity: exact cohort of size num_clients, nobody dropped.
    idx, valid = sampling.cohort_indices(mask, 2)
    assert idx.tolist() == [1, 3, 4, 0, 0, 0] and valid.sum() == 3
    idx, valid = sampling.cohort_indices(np.zeros(4, bool), 0)
    assert idx.shape == (0,)
    with pytest.raises(validate.ShapeError):
        sampling.cohort_indices(np.array([0, 1]), 2)


def test_dataclasses_frozen_validated():
    s = sampling.Poisson(0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.rate = 0.2
    assert hash(s) == hash(sampling.Poisson(0.1)) and s == sampling.Poisson(0.1)
    for bad in (0.0, 1.5, float("nan"), -0.1):
        with pytest.raises(validate.PrivacyParameterError, match="rate"):
            sampling.Poisson(bad)
    with pytest.raises(validate.JaxflValueError, match="size"):
        sampling.FixedSize(0)
    with pytest.raises(validate.JaxflValueError, match="tail"):
        s.capacity(10, tail=1.0)
    with pytest.raises(validate.JaxflValueError, match="Generator"):
        s.sample(np.random.RandomState(0), 10)
    with pytest.raises(validate.JaxflValueError, match="num_clients"):
        s.sample(np.random.default_rng(0), 0)
    assert s.inclusion_probability(10) == 0.1 and s.expected_size(10) == pytest.approx(1.0)
