"""Pairwise gossip accounting: analytic-Gaussian conversion, DpEvents, summaries, calibration."""

import json

import dp_accounting
import numpy as np
import pytest

from jaxfl import validate
from jaxfl.accounting import accountants, conversions, events
from jaxfl.accounting import gossip as ga
from jaxfl.accounting import report as report_lib

ANCHORS = {0.1: 0.340669, 0.5: 1.993091, 1.0: 4.377178, 2.0: 9.997256}   # reference ε(μ)


def test_conversion_anchors_scalar_and_vectorised():
    for mu, eps in ANCHORS.items():
        assert abs(ga.pair_epsilon(mu**2, noise_multiplier=1.0, delta=1e-5) - eps) < 5e-7
        assert abs(ga.pair_epsilon(4 * mu**2, noise_multiplier=2.0, delta=1e-5) - eps) < 5e-7
    vec = conversions.gaussian_epsilons(np.array(list(ANCHORS)), 1e-5)
    np.testing.assert_allclose(vec, list(ANCHORS.values()), atol=5e-7)


def test_vectorised_matches_core_conversion():
    mus = np.concatenate([[0.0, 1e-4], np.geomspace(1e-3, 50, 60), [np.inf]])
    for delta in (1e-5, 1e-3):
        vec = conversions.gaussian_epsilons(mus, delta)
        ref = np.array([conversions.gaussian_epsilon(m, delta) for m in mus])
        fin = np.isfinite(ref)
        np.testing.assert_allclose(vec[fin], ref[fin], rtol=1e-9, atol=1e-12)
        assert np.isinf(vec[~fin]).all()


def test_monotonicity():
    d2 = np.linspace(0, 4, 9)
    e = ga.pair_epsilons(d2, noise_multiplier=1.5, delta=1e-5)
    assert np.all(np.diff(e) > 0) and e[0] == 0
    sig = np.array([0.5, 1, 2, 4])
    e_sig = [ga.pair_epsilon(1.0, noise_multiplier=s, delta=1e-5) for s in sig]
    assert np.all(np.diff(e_sig) < 0)


def test_ldp_view_equals_pld_composition():
    """ε(μ = √T/σ) equals the T-fold PLD composition of GaussianDpEvent(σ)."""
    sigma, T = 3.0, 10
    gdp = ga.pair_epsilon(T, noise_multiplier=sigma, delta=1e-5)
    pld = accountants.epsilon(ga.ldp_event(noise_multiplier=sigma, rounds=T), 1e-5,
                              value_discretization_interval=1e-5)
    assert abs(gdp - pld) < 1e-3 * gdp and pld >= gdp - 1e-9   # PLD rounds pessimistically
    fed = accountants.epsilon(ga.fedavg_event(noise_multiplier=sigma, rounds=T), 1e-5,
                              value_discretization_interval=1e-5)
    assert abs(fed - pld) < 1e-12


def test_view_dp_events():
    ev = ga.view_dp_event(0.25, noise_multiplier=1.0)
    assert isinstance(ev, dp_accounting.GaussianDpEvent) and ev.noise_multiplier == 2.0
    comp = ga.view_dp_event(0.25, noise_multiplier=1.0, rounds=5)
    e1 = accountants.epsilon(ev, 1e-5, value_discretization_interval=1e-5)
    e2 = accountants.epsilon(comp, 1e-5, value_discretization_interval=1e-5)
    assert abs(e1 - e2) < 2e-3 * e1
    assert abs(e1 - ANCHORS[0.5]) < 2e-3 * e1
    assert isinstance(ga.view_dp_event(0.0, noise_multiplier=1.0), dp_accounting.NoOpDpEvent)
    assert isinstance(ga.view_dp_event(np.inf, noise_multiplier=1.0),
                      dp_accounting.NonPrivateDpEvent)
    rdp = accountants.epsilon(events.gaussian(2.0), 1e-5, accountant="rdp")
    assert abs(rdp - 2.166) < 1e-3         # RDP is looser (2.166 vs tight 1.993)


def test_summary_and_calibration():
    d2 = np.array([0.0, 0.5, 1.0, 2.0, np.nan])
    s = ga.summary(d2, noise_multiplier=2.0, delta=1e-5, mode="certified", view="tm3")
    assert s["mode"] == "certified" and s["pairs"] == 4 and s["min_epsilon"] == 0.0
    eps = ga.pair_epsilons(d2[:4], noise_multiplier=2.0, delta=1e-5)
    assert s["mean_epsilon"] == pytest.approx(eps.mean()) and s["max_epsilon"] == eps.max()
    for stat, target in (("mean", 1.0), ("max", 2.0)):
        sig = ga.calibrate_noise_multiplier(d2, target_epsilon=target, delta=1e-5,
                                            statistic=stat)
        got = getattr(np, stat)(ga.pair_epsilons(d2[:4], noise_multiplier=sig, delta=1e-5))
        assert got <= target and got > target - 1e-6
    with pytest.raises(validate.PrivacyParameterError):
        ga.calibrate_noise_multiplier([np.inf], target_epsilon=1.0, delta=1e-5)
    with pytest.raises(validate.PrivacyParameterError):
        ga.pair_epsilons([-1.0], noise_multiplier=1.0, delta=1e-5)
    with pytest.raises(validate.PrivacyParameterError):
        ga.pair_epsilon(1.0, noise_multiplier=0.0, delta=1e-5)
    assert ga.central_delta_sq(10, 5) == 2.0


def _old_calibration(delta_sq, *, target_epsilon, delta, statistic="mean", rtol=1e-9):
    """The former gossip-specific bisection (kept here as the reference)."""
    import math
    d2 = np.asarray(delta_sq, dtype=np.float64)
    d2 = d2[~np.isnan(d2)]
    reduce = np.mean if statistic == "mean" else np.max
    stat = lambda s: reduce(ga.pair_epsilons(d2, noise_multiplier=s, delta=delta))
    lo, hi = 1e-3, 1.0
    while stat(hi) > target_epsilon:
        lo, hi = hi, hi * 4
    while stat(lo) <= target_epsilon and lo > 1e-8:
        lo /= 4
    while hi / lo - 1 > rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if stat(mid) > target_epsilon else (lo, mid)
    return hi


def test_calibration_wrapper_equals_former_bisection():
    rng = np.random.default_rng(0)
    d2 = np.concatenate([rng.uniform(0, 3, 40), [np.nan]])
    for stat in ("mean", "max"):
        for target in (0.5, 2.0, 8.0):
            new = ga.calibrate_noise_multiplier(d2, target_epsilon=target, delta=1e-5,
                                                statistic=stat)
            old = _old_calibration(d2, target_epsilon=target, delta=1e-5, statistic=stat)
            assert new == pytest.approx(old, rel=1e-8), (stat, target)


def _table(horizons):
    # observer x target, nan on the diagonal; Δ² grows with T.
    base = np.array([[np.nan, 0.2, 0.5], [0.3, np.nan, 0.1], [0.4, 0.6, np.nan]])
    return np.stack([h * base for h in horizons])


def test_pairwise_accountant_headline_is_the_worst_pair():
    acc = ga.PairwiseAccountant(_table, noise_multiplier=2.0, view="tm3",
                                sensitivity_mode="certified", observers=range(3),
                                targets=range(3), curve_horizons=(1, 2))
    eps = acc.epsilons([1, 3], 1e-5)
    for T, e in zip((1, 3), eps, strict=True):
        ref = dp_accounting.get_epsilon_gaussian(2.0 / np.sqrt(0.6 * T), 1e-5)  # independent
        assert e == pytest.approx(ref, rel=1e-7)
    rep = acc.report(3, 1e-5)
    assert rep.unit == "node" and rep.mode == "strict" and rep.sound
    assert rep.per_unit_axes == ("observer", "target") and np.isnan(rep.per_unit[0, 0])
    assert rep.per_unit[2, 1] == pytest.approx(rep.epsilon)
    assert isinstance(rep.dp_event, dp_accounting.GaussianDpEvent)
    assert rep.dp_event.noise_multiplier == pytest.approx(2.0 / np.sqrt(1.8))
    assert rep.details["curve"]["T"] == [1, 2] and len(rep.details["curve"]["delta_sq"]) == 2
    mean = np.nanmean(ga.pair_epsilons(_table([3])[0], noise_multiplier=2.0, delta=1e-5))
    assert rep.details["mean_epsilon"] == pytest.approx(mean)
    sig = acc.noise_for(1.0, rounds=3, delta=1e-5, statistic="max")
    assert ga.pair_epsilon(1.8, noise_multiplier=sig, delta=1e-5) == pytest.approx(1.0, abs=1e-6)


def test_paper_modes_and_unsound_views_are_labelled():
    kw = dict(noise_multiplier=1.0, observers=range(3), targets=range(3))
    assert not ga.PairwiseAccountant(_table, view="tm3", sensitivity_mode="paper", **kw).sound
    assert not ga.PairwiseAccountant(_table, view="tm4", sensitivity_mode="certified",
                                     **kw).sound            # Thm 4 reduction
    assert ga.PairwiseAccountant(_table, view="tm3", sensitivity_mode="certified", **kw).sound
    ldp = ga.ldp_accountant(noise_multiplier=3.0, num_nodes=4)
    assert ldp.sound and ldp.epsilons([5], 1e-5)[0] == pytest.approx(
        ga.pair_epsilon(5, noise_multiplier=3.0, delta=1e-5))
    fed = ga.fedavg_accountant(noise_multiplier=3.0)
    assert fed.unit == "record"
    assert ga.fedavg_noise_multiplier(2.0, rounds=9, delta=1e-5) == pytest.approx(
        3 * conversions.gaussian_noise_multiplier(2.0, 1e-5))


# ------------------------------------------------------------------------------ report curves

def _one_target(scale, power):
    """A one-target table (observers 0, 1, 3, target 3): Δ² = scale_a * T ** power."""
    base = np.array([[0.5], [0.2], [np.nan]])

    def fn(horizons):
        return np.stack([scale * base * h ** power for h in horizons])

    return fn


def _study(view, *, certified_power=1.5, horizons=(1, 2, 4), noise=2.0):
    """A run summary as a gossip study writes it (``report.reports``: the certified report
    under ``privacy``, the paper one under ``privacy_paper``)."""
    kw = dict(noise_multiplier=noise, view=view, observers=(0, 1, 3), targets=(3,),
              curve_horizons=horizons)
    paper = ga.PairwiseAccountant(_one_target(1.0, 1.0), sensitivity_mode="paper", **kw)
    acc = ga.PairwiseAccountant(_one_target(1.5, certified_power), sensitivity_mode="certified",
                                alternatives={"paper": paper}, **kw)
    return report_lib.reports(acc, max(horizons), 1e-5)


def test_observer_curves_read_each_pair_of_the_reports():
    """Δ²/T per observer in both modes, read from the JSON reports (a wrong axis, Δ² not divided
    by T, the modes swapped or the neighbour count ignored are caught); the target's own row is
    None; a report without its curve is refused."""
    summary = json.loads(json.dumps(_study("tm1")))  # as read back from summary.json
    curves = ga.observer_curves(summary, neighbours=1)
    assert [c["observer"] for c in curves] == [0, 1, 3]
    assert [c["kind"] for c in curves] == ["neighbour", "non-neighbour", "non-neighbour"]
    T = np.array([1.0, 2.0, 4.0])
    for c, b in zip(curves[:2], (0.5, 0.2), strict=True):
        assert c["T"] == c["paper_T"] == c["certified_T"] == [1, 2, 4]
        np.testing.assert_allclose(c["paper_over_T"], b, rtol=1e-12)
        np.testing.assert_allclose(c["certified_over_T"], 1.5 * b * T ** 0.5, rtol=1e-12)
    assert curves[2]["paper_over_T"] == curves[2]["certified_over_T"] == [None] * 3
    summary["privacy_paper"]["details"].pop("curve")
    with pytest.raises(validate.JaxflValueError, match="privacy_paper"):
        ga.observer_curves(summary)


def test_view_series_reads_the_mean_epsilon_per_view_and_mode():
    """Fig. 2's series: each view's mean pairwise ε per horizon and mode, recomputed here from
    the tables (a mode read from the other report, the LDP run keyed by mode or the exact view
    kept at its own horizons are caught)."""
    runs = [_study("tm3"), _study("tm4_exact", horizons=(1, 2, 3, 4)),
            report_lib.reports(ga.ldp_accountant(
                noise_multiplier=2.0, num_nodes=3, curve_horizons=(1, 2, 4)), 4, 1e-5)]
    series = ga.view_series(runs)
    assert list(series) == ["tm3_paper", "tm3_certified", "tm4_exact_paper",
                            "tm4_exact_certified", "ldp"]
    for mode, scale, power in (("paper", 1.0, 1.0), ("certified", 1.5, 1.5)):
        s = series[f"tm3_{mode}"]
        want = [np.mean(ga.pair_epsilons(scale * np.array([0.5, 0.2]) * h ** power,
                                         noise_multiplier=2.0, delta=1e-5)) for h in (1, 2, 4)]
        assert s["mode"] == mode and s["T"] == [1, 2, 4]
        np.testing.assert_allclose(s["mean_eps"], want, rtol=1e-12)
        np.testing.assert_allclose(s["mean_delta_sq_over_T"],
                                   [scale * 0.35 * h ** (power - 1) for h in (1, 2, 4)],
                                   rtol=1e-12)
    assert series["tm4_exact_paper"]["T"] == [1, 2, 4]  # at tm3_certified's horizons
    assert series["tm4_exact_paper"]["mean_eps"] == series["tm3_paper"]["mean_eps"]
    assert series["tm4_exact_certified"]["T"] == [1, 2, 3, 4]
    ldp = series["ldp"]
    assert ldp["mode"] == "certified"
    np.testing.assert_allclose(ldp["mean_eps"], [ga.pair_epsilon(h, noise_multiplier=2.0,
                                                                 delta=1e-5) for h in (1, 2, 4)])
