"""Accounting of DP-FTRL (one Gaussian with mu = sens / sigma) and of adaptive clipping (the
update's and the count's Gaussians composed), against dp-accounting."""

import math

import dp_accounting
import numpy as np
import pytest

from jaxfl.accounting import conversions
from jaxfl.accounting import dp_ftrl as acc


def _rdp(event, delta):
    a = dp_accounting.rdp.RdpAccountant()
    a.compose(event)
    return a.get_epsilon(delta)


def _pld(event, delta):
    a = dp_accounting.pld.PLDAccountant()
    a.compose(event)
    return a.get_epsilon(delta)


@pytest.mark.parametrize("sigma,min_sep,rounds", [(1.0, 4, 20), (2.5, 3, 10), (0.8, 1, 5)])
def test_bands_one_equals_composed_gaussian(sigma, min_sep, rounds):
    """bands = 1 (C = I): sens = sqrt(k); DP-FedAvg without amplification composes k
    Gaussians of multiplier sigma."""
    k = acc.cyclic_participation(rounds, min_sep)
    for final, of in (("rdp", _rdp), ("pld", _pld)):
        a = acc.FtrlAccountant(noise_multiplier=sigma, sensitivity=lambda r: math.sqrt(
            acc.cyclic_participation(r, min_sep)), strategy="bandmf", final=final)
        composed = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), k)
        got = a.epsilons([rounds], 1e-5)[0]
        np.testing.assert_allclose(got, of(composed, 1e-5), rtol=1e-9 if final == "rdp" else
                                   2e-3)
        if final == "pld":
            np.testing.assert_allclose(got, conversions.gaussian_epsilon(math.sqrt(k) / sigma, 1e-5),
                                       rtol=2e-3)
    rep = a.report(rounds, 1e-5)
    assert rep.dp_event == dp_accounting.GaussianDpEvent(sigma / math.sqrt(k))
    assert rep.details["mu"] == pytest.approx(math.sqrt(k) / sigma)
    assert rep.unit == "client" and rep.sound


def test_curve_uses_prefix_sensitivity():
    sens = {1: 0.5, 2: 1.0, 3: 2.0}
    a = acc.FtrlAccountant(noise_multiplier=3.0, sensitivity=sens.__getitem__,
                           strategy="tree", final="rdp")
    eps = a.epsilons([0, 1, 2, 3], 1e-6)
    assert eps[0] == 0.0
    for r in (1, 2, 3):
        assert eps[r] == pytest.approx(_rdp(dp_accounting.GaussianDpEvent(3.0 / sens[r]), 1e-6),
                                       rel=1e-12)


@pytest.mark.parametrize("sigma,count_noise", [(1.0, 1.0), (2.0, 5.0), (0.7, 0.3)])
def test_adaptive_clip_event_is_the_composition_of_both_gaussians(sigma, count_noise):
    """Without sampling, the round event equals dp-accounting's composition of the update's
    Gaussian (sigma) and the centred count's (std count_noise, sensitivity 1/2)."""
    T = 30
    ours = dp_accounting.SelfComposedDpEvent(
        acc.adaptive_clip_round_event(sampling_rate=1.0, noise_multiplier=sigma,
                                      count_noise=count_noise), T)
    theirs = dp_accounting.SelfComposedDpEvent(dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(sigma), dp_accounting.GaussianDpEvent(2 * count_noise)]),
        T)
    assert _rdp(ours, 1e-5) == pytest.approx(_rdp(theirs, 1e-5), rel=1e-9)
    assert _pld(ours, 1e-5) == pytest.approx(_pld(theirs, 1e-5), rel=2e-3)


def test_adaptive_clip_dp_fedavg_accountant():
    pytest.importorskip("jax")
    from jaxfl.algorithms import dp_fedavg
    from tests import _toy

    q, sigma, sb, T = 0.1, 1.1, 2.0, 50
    kw = dict(num_clients=100, local_steps=1, batch_size=1, client_lr=0.1, clip_norm=1.0,
              noise_multiplier=sigma, sampling_rate=q)
    plain = dp_fedavg.dp_fedavg(_toy.logreg(2, 2), **kw)
    adaptive = dp_fedavg.dp_fedavg(_toy.logreg(2, 2), **kw,
                                   adaptive_clip=dp_fedavg.AdaptiveClip(count_noise=sb))
    eff = (sigma ** -2 + (2 * sb) ** -2) ** -0.5
    expected = dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        q, dp_accounting.GaussianDpEvent(eff)), T)
    assert adaptive.accountant.dp_event(T) == expected
    e_ad = adaptive.accountant.epsilons([T], 1e-5)[0]
    assert e_ad == pytest.approx(_rdp(expected, 1e-5), rel=1e-9)
    assert e_ad > plain.accountant.epsilons([T], 1e-5)[0]


def test_paper_effective_noise_multiplier_round_trip():
    for target, sb in ((1.0, 5.0), (0.5, 1.0)):
        s = acc.update_noise_multiplier(target, sb)
        assert s > target
        assert acc.combined_noise_multiplier(s, 2 * sb) == pytest.approx(target, rel=1e-12)
    with pytest.raises(ValueError):
        acc.update_noise_multiplier(1.0, 0.4)


@pytest.mark.parametrize("sigma,sens,count_noise,k", [(1.0, 2.0, 5.0, 4), (0.6, 1.3, 0.4, 1),
                                                      (3.0, 1.0, 1.0, 7)])
def test_ftrl_adaptive_clip_event_is_the_composition_of_both_gaussians(sigma, sens,
                                                                       count_noise, k):
    """DP-FTRL + adaptive clipping: the MF Gaussian (sigma / sens) composed with the k counts'
    Gaussians (2 count_noise each), as dp-accounting composes them."""
    ours = acc.ftrl_adaptive_clip_event(noise_multiplier=sigma, sensitivity=sens,
                                        count_noise=count_noise, participations=k)
    theirs = dp_accounting.ComposedDpEvent([
        dp_accounting.GaussianDpEvent(sigma / sens),
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2 * count_noise), k)])
    assert _rdp(ours, 1e-5) == pytest.approx(_rdp(theirs, 1e-5), rel=1e-9)
    assert _pld(ours, 1e-5) == pytest.approx(_pld(theirs, 1e-5), rel=2e-3)
    mu = math.hypot(sens / sigma, math.sqrt(k) / (2 * count_noise))
    assert _pld(ours, 1e-5) == pytest.approx(conversions.gaussian_epsilon(mu, 1e-5), rel=2e-3)


def test_ftrl_accountant_with_counts_uses_prefix_participations():
    sens = lambda r: math.sqrt(-(-r // 3))  # bands=1-like: sqrt(k)
    parts = lambda r: -(-r // 3)
    plain = acc.FtrlAccountant(noise_multiplier=1.5, sensitivity=sens, strategy="bandmf")
    counted = acc.FtrlAccountant(noise_multiplier=1.5, sensitivity=sens, strategy="bandmf",
                                 count_noise=2.0, participations=parts)
    for r in (1, 3, 4, 10):
        mu = math.hypot(sens(r) / 1.5, math.sqrt(parts(r)) / 4.0)
        assert counted.dp_event(r) == dp_accounting.GaussianDpEvent(1.0 / mu)
        assert counted.epsilons([r], 1e-5)[0] > plain.epsilons([r], 1e-5)[0]
    again = counted.replace(noise_multiplier=1.5)
    assert again.epsilons([10], 1e-5)[0] == counted.epsilons([10], 1e-5)[0]
    assert counted.replace(noise_multiplier=3.0).epsilons([10], 1e-5)[0] < \
        counted.epsilons([10], 1e-5)[0]
    rep = counted.report(10, 1e-5)
    assert rep.details["participations"] == 4
    assert rep.details["mu_total"] == pytest.approx(math.hypot(2 / 1.5, 2 / 4.0))
    with pytest.raises(ValueError, match="participations"):
        acc.FtrlAccountant(noise_multiplier=1.0, sensitivity=sens, strategy="x", count_noise=1.0)
