"""Clopper-Pearson intervals and the epsilon lower bound against known answers."""

import math

import numpy as np
import pytest
from scipy import stats

from jaxfl import validate
from jaxfl.accounting import conversions
from jaxfl.audit import bounds


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 1000), (999, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    lo, hi = bounds.clopper_pearson(k, n, 0.9)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    np.testing.assert_allclose([lo, hi], [ci.low, ci.high], rtol=1e-9, atol=1e-12)


def test_one_sided_closed_forms_at_the_extremes():
    n, alpha = 5000, 0.025
    assert bounds.cp_upper(0, n, alpha) == pytest.approx(1 - alpha ** (1 / n), rel=1e-10)
    assert bounds.cp_lower(n, n, alpha) == pytest.approx(alpha ** (1 / n), rel=1e-10)
    assert bounds.cp_lower(0, n, alpha) == 0.0 and bounds.cp_upper(n, n, alpha) == 1.0


def test_clopper_pearson_coverage_by_simulation():
    rng = np.random.default_rng(1)
    p, n, alpha = 0.03, 400, 0.05
    k = rng.binomial(n, p, size=4000)
    miss = np.mean(bounds.cp_upper(k, n, alpha) < p)
    assert miss <= alpha  # CP is conservative
    assert miss > 0.005  # ... but not vacuous


def test_rates_to_epsilon_both_forms():
    assert bounds.epsilon_from_rates(0.5, 0.1, 0.0) == pytest.approx(math.log(5))
    assert bounds.epsilon_from_rates(0.9, 0.5, 0.0, "complement") == pytest.approx(math.log(5))
    assert bounds.epsilon_from_rates(0.1, 0.2, 0.0) == 0.0
    assert bounds.epsilon_from_rates(0.05, 0.0, 0.1) == 0.0  # TPR below delta: vacuous
    assert bounds.epsilon_from_rates(0.5, 0.0, 0.0) == np.inf


def _gauss(mu, n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


@pytest.mark.parametrize("mu,delta", [(1.0, 1e-2), (2.0, 5e-2), (0.5, 5e-2)])
def test_gaussian_bound_is_below_and_close_to_the_true_epsilon(mu, delta):
    pos, neg = _gauss(mu, 200_000, 0)
    true_eps = conversions.gaussian_epsilon(mu, delta)
    r = bounds.epsilon_lower_bound(pos, neg, delta=delta)
    assert r.epsilon_lb <= true_eps
    assert r.epsilon_lb >= 0.85 * true_eps, (r, true_eps)
    assert r.epsilon_point >= r.epsilon_lb


def test_bound_is_valid_at_its_confidence_over_repetitions():
    """Over independent small audits the bound exceeds the truth at most ~alpha of the time."""
    mu, delta, conf = 1.0, 0.05, 0.9
    true_eps = conversions.gaussian_epsilon(mu, delta)
    lbs = np.array([bounds.epsilon_lower_bound(*_gauss(mu, 2000, s), delta=delta,
                                               confidence=conf).epsilon_lb for s in range(150)])
    assert np.mean(lbs > true_eps) <= 1 - conf
    assert np.median(lbs) > 0.5 * true_eps


def test_noiseless_mechanism_gives_the_count_limited_maximum():
    n = 100_000
    pos, neg = np.ones(n), np.zeros(n)
    r = bounds.epsilon_lower_bound(pos, neg, delta=1e-5, confidence=0.95)
    m = n // 2
    expect = math.log(((0.025) ** (1 / m) - 1e-5) / (1 - 0.025 ** (1 / m)))
    assert r.epsilon_lb == pytest.approx(expect, rel=1e-9)
    assert r.epsilon_lb > 9.0


def test_identical_distributions_give_about_zero():
    lbs = [bounds.epsilon_lower_bound(*_gauss(0.0, 10_000, s), delta=1e-5).epsilon_lb
           for s in range(12)]
    assert max(lbs) < 0.2
    assert sum(lb > 0 for lb in lbs) <= 2


def test_bonferroni_grid_is_valid_and_reasonable():
    mu, delta = 1.0, 1e-2
    pos, neg = _gauss(mu, 100_000, 3)
    r = bounds.epsilon_lower_bound(pos, neg, delta=delta, selection="bonferroni",
                                   thresholds=np.linspace(0.0, 4.0, 41))
    assert 0.8 * conversions.gaussian_epsilon(mu, delta) < r.epsilon_lb
    assert r.epsilon_lb <= conversions.gaussian_epsilon(mu, delta)
    assert r.n_pos == 100_000


def test_reversed_scores_are_detected_on_the_selection_split():
    pos, neg = _gauss(1.0, 100_000, 4)
    r = bounds.epsilon_lower_bound(-pos, -neg, delta=1e-2)  # scores point the wrong way
    assert r.orientation == -1
    assert 1.9 < r.epsilon_lb <= conversions.gaussian_epsilon(1.0, 1e-2)
    assert bounds.epsilon_lower_bound(pos, neg, delta=1e-2).orientation == 1


@pytest.mark.parametrize("kwargs,error", [
    (dict(delta=1.0), validate.PrivacyParameterError),
    (dict(delta=-0.1), validate.PrivacyParameterError),
    (dict(delta=1e-5, confidence=1.0), validate.PrivacyParameterError),
    (dict(delta=1e-5, selection="best"), validate.JaxflValueError),
    (dict(delta=1e-5, selection="bonferroni"), validate.JaxflValueError),
    (dict(delta=1e-5, holdout_fraction=1.0), validate.JaxflValueError),
])
def test_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        bounds.epsilon_lower_bound(np.ones(10), np.zeros(10), **kwargs)


def test_rejects_nan_and_tiny_samples():
    with pytest.raises(validate.JaxflValueError):
        bounds.epsilon_lower_bound(np.array([0.0, np.nan]), np.zeros(4), delta=1e-5)
    with pytest.raises(validate.ShapeError):
        bounds.epsilon_lower_bound(np.ones(1), np.zeros(4), delta=1e-5)


# ---- agreement with jax_privacy.auditing (same statistic, our API kept) ----------------------


@pytest.mark.parametrize("form", ["direct", "complement"])
@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_fixed_threshold_bound_agrees_with_jax_privacy(form, delta):
    from jax_privacy import auditing

    rng = np.random.default_rng(3)
    pos, neg = rng.normal(1.0, 1.0, 3000), rng.normal(0.0, 1.0, 2000)
    for thr in (-1.0, 0.5, 2.0):
        ours = bounds.epsilon_lower_bound_from_counts(
            int(np.sum(pos >= thr)), pos.size, int(np.sum(neg >= thr)), neg.size,
            delta=delta, confidence=0.9, form=form)
        aud = auditing.CanaryScoreAuditor(pos, neg)
        # jax_privacy's one_sided=False takes the better of the two forms at the threshold.
        both = aud.epsilon_clopper_pearson(0.1, delta, one_sided=False,
                                           threshold_strategy=auditing.Explicit(thr))
        if form == "direct":
            theirs = aud.epsilon_clopper_pearson(0.1, delta, one_sided=True,
                                                 threshold_strategy=auditing.Explicit(thr))
            assert ours.epsilon_lb == pytest.approx(theirs, rel=1e-9, abs=1e-12)
        assert ours.epsilon_lb <= both + 1e-9
