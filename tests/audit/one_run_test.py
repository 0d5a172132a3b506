"""One-run estimator (Steinke, Nasr, Jagielski 2023) through jax_privacy: monotone, zero at
chance, equal to the paper's binomial tail, valid and tight in simulation."""

import numpy as np
import pytest
from jax_privacy import auditing
from scipy import optimize, special, stats

from jaxfl import validate
from jaxfl.audit import one_run


def test_monotone_in_correct_guesses():
    eps = [one_run.epsilon_from_guesses(1000, 100, v, delta=1e-5) for v in range(0, 101, 5)]
    assert all(b >= a for a, b in zip(eps[:-1], eps[1:], strict=True))
    assert eps[-1] > eps[-3] > eps[-5] > 0.0


@pytest.mark.parametrize("r", [10, 100, 400])
def test_zero_at_chance(r):
    assert one_run.epsilon_from_guesses(1000, r, r // 2, delta=1e-5) == 0.0
    assert one_run.epsilon_from_guesses(1000, r, 0, delta=1e-5) == 0.0


def _paper_tail_eps(r, v, alpha):
    """Largest eps with P[Binomial(r, e^eps / (1 + e^eps)) >= v] <= alpha (delta = 0)."""
    f = lambda e: stats.binom.sf(v - 1, r, special.expit(e)) - alpha  # noqa: E731
    return 0.0 if f(0.0) > 0 else optimize.brentq(f, 0.0, 50.0, xtol=1e-10)


@pytest.mark.parametrize("r,v", [(20, 20), (100, 80), (100, 97), (500, 300)])
def test_matches_binomial_tail_of_the_theorem(r, v):
    # At a negligible delta the bound is the root of the binomial tail (Theorem 3.1).
    got = one_run.epsilon_from_guesses(1000, r, v, delta=1e-15, confidence=0.95)
    assert got == pytest.approx(_paper_tail_eps(r, v, 0.05), abs=1e-4)
    # delta > 0 only weakens the bound.
    assert one_run.epsilon_from_guesses(1000, r, v, delta=1e-3) <= got + 1e-9
    # The delta term (2 m delta times a factor <= 1) weakens it as delta approaches 1 / m.
    assert one_run.epsilon_from_guesses(1000, r, v, delta=5e-4) < got
    assert one_run.epsilon_from_guesses(1000, 20, 20, delta=5e-4) == 0.0


def test_encoding_equals_jax_privacy_on_real_scores():
    rng = np.random.default_rng(1)
    inc = rng.random(600) < 0.5
    scores = inc * 1.5 + rng.normal(size=600)
    k = 40
    b = one_run.one_run_bound(scores, inc, k_pos=k, delta=1e-5)
    thr = np.sort(scores)[-k]
    ref = auditing.CanaryScoreAuditor(scores[inc], scores[~inc]).epsilon_one_run(
        0.05, 1e-5, threshold_strategy=auditing.Explicit(thr))
    assert b.guesses == k and b.epsilon_lb == pytest.approx(ref, abs=1e-9) and ref > 0.5


def _rr_run(rng, m, eps0):
    """One run of eps0-DP randomized response on each canary's inclusion bit."""
    inc = rng.random(m) < 0.5
    keep = rng.random(m) < special.expit(eps0)
    scores = np.where(keep == inc, 1.0, -1.0) + 1e-6 * rng.random(m)
    return scores, inc


def test_simulation_valid_and_tight():
    rng = np.random.default_rng(0)
    eps0 = 1.0
    # Validity: the bound exceeds the true epsilon with probability <= 1 - confidence.
    over = 0
    for _ in range(300):
        s, inc = _rr_run(rng, 200, eps0)
        b = one_run.one_run_bound(s, inc, k_pos=60, k_neg=60, delta=1e-6, confidence=0.9)
        over += b.epsilon_lb > eps0
    assert over <= 300 * 0.1 + 3 * np.sqrt(300 * 0.1 * 0.9)
    # Tightness: with many guesses the bound approaches eps0 from below.
    s, inc = _rr_run(rng, 40_000, eps0)
    b = one_run.one_run_bound(s, inc, k_pos=15_000, k_neg=15_000, delta=1e-9)
    assert 0.85 * eps0 < b.epsilon_lb <= eps0


def test_guesses_and_errors():
    g = one_run.guesses_from_scores([3.0, 1.0, 2.0, 0.0], k_pos=1, k_neg=2)
    assert g.tolist() == [1, -1, 0, -1]
    with pytest.raises(validate.JaxflValueError):
        one_run.guesses_from_scores([1.0, 2.0], k_pos=1, k_neg=1)  # no abstention
    with pytest.raises(validate.JaxflValueError):
        one_run.one_run_bound([1.0, 2.0, 3.0], [1, 0, 1], k_pos=1, delta=1e-5)  # not bool
    with pytest.raises(validate.ShapeError):
        one_run.one_run_bound([1.0, 2.0, 3.0], [True, False], k_pos=1, delta=1e-5)
    with pytest.raises(validate.PrivacyParameterError):
        one_run.epsilon_from_guesses(10, 4, 3, delta=0.0)
    with pytest.raises(validate.JaxflValueError):
        one_run.epsilon_from_guesses(10, 4, 5, delta=1e-5)
