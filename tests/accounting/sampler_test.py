"""The truncation delta of a bounded-support Gaussian sampler (jaxfl.accounting.sampler) and
how the reports carry it."""

import itertools
import json
import math

import dp_accounting
import numpy as np
import pytest
from scipy import integrate, special, stats

from jaxfl import validate
from jaxfl.accounting import events, report, sampler
from jaxfl.accounting import uldp as uldp_accounting


def _exact_mass(a, S):
    """P(B minus (B + a)) for Z i.i.d. N(0, 1) conditioned on [-S, S] (exact, float64)."""
    c1 = 1.0 - 2.0 * special.ndtr(-S)
    inside = [1.0 - (special.ndtr(-(S - abs(x))) - special.ndtr(-S)) / c1 for x in a]
    return 1.0 - float(np.prod(inside))


def _mass_term(r, d, S):
    """The bound's non-overlap part (without the renormalisation term)."""
    return r * math.sqrt(d) * math.exp(-0.5 * (S - r) ** 2) / math.sqrt(2 * math.pi) / (
        1.0 - 2.0 * special.ndtr(-S))


@pytest.mark.parametrize("S", [3.0, 4.0, 5.2201])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_bound_dominates_the_exact_non_overlap_mass_on_a_grid(S, d):
    grid = np.linspace(-1.0, 1.0, 9)
    for r in (0.25, 1.0, 2.0):
        bound = sampler.per_release_delta(r, dim=d, support=S, margin=0.0)
        assert bound >= _mass_term(r, d, S)
        for a in itertools.product(grid * r, repeat=d):
            if np.linalg.norm(a) > r * (1 + 1e-12):
                continue
            assert _exact_mass(a, S) <= _mass_term(r, d, S) * (1 + 1e-12), (a, r)


@pytest.mark.parametrize("S", [3.0, 5.2201])
def test_bound_is_tight_for_one_coordinate_up_to_phi_over_phibar(S):
    for r in (0.1, 0.5, 1.0, 2.0):
        exact = _exact_mass([r], S)  # the worst shift of norm r in one dimension
        bound = _mass_term(r, 1, S)
        ratio = r * stats.norm.pdf(S - r) / (special.ndtr(-(S - r)) - special.ndtr(-S))
        assert exact <= bound <= exact * ratio * (1 + 1e-9)


def test_hockey_stick_of_truncated_gaussians_within_gaussian_plus_bound():
    """d = 1, numerically: delta_T(eps) <= delta_G(eps) / c + mass (the module's claim)."""
    S, a = 3.0, 1.0
    c1 = 1.0 - 2.0 * special.ndtr(-S)
    p = lambda x: stats.norm.pdf(x) / c1 * (abs(x) <= S)  # noqa: E731
    q = lambda x: stats.norm.pdf(x - a) / c1 * (abs(x - a) <= S)  # noqa: E731
    for eps in (0.0, 0.5, 1.0, 3.0):
        trunc, _ = integrate.quad(lambda x, e=eps: max(p(x) - math.exp(e) * q(x), 0.0), -S, S,
                                  points=[-S + a], limit=200)
        gauss = (special.ndtr(-eps / a + a / 2) - math.exp(eps) * special.ndtr(-eps / a - a / 2))
        assert trunc <= gauss / c1 + _exact_mass([a], S) + 1e-10
        assert trunc >= _exact_mass([a], S) - 1e-10  # the non-overlap mass is in it


def test_old_support_costs_delta_new_support_does_not():
    old = sampler.per_release_delta(1.0, dim=1, support=sampler.OLD_SUPPORT_HALF_WIDTH,
                                    margin=0.0)
    assert old > 1e-12 and old > 1e-5  # Phi_bar(4.22) = 1.2e-5 is in it
    new = sampler.per_release_delta(1.0)  # S lower bound, d = 2^32
    assert new < 1e-12 and sampler.per_release_delta(2.0) < 1e-12
    assert sampler.truncation_delta(1.0, releases=100) == pytest.approx(100 * new)
    assert sampler.truncation_delta(1.0, releases=0) == 0.0
    # ULDP at sigma = 5, 100 rounds with the old sampler: above delta = 1e-5 (issue 23)
    assert sampler.truncation_delta(0.2, 100, dim=1, support=5.2201, margin=0.0) > 1e-5


def test_ratio_too_close_to_the_support_is_an_error():
    with pytest.raises(validate.JaxflValueError, match="sensitivity / std"):
        sampler.per_release_delta(sampler.SUPPORT_HALF_WIDTH - 4.0)
    with pytest.raises(validate.JaxflValueError):
        sampler.per_release_delta(-1.0)


def test_dp_event_walk_counts_every_gaussian_release():
    g1, g2 = dp_accounting.GaussianDpEvent(2.0), dp_accounting.GaussianDpEvent(0.5)
    ev = dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(0.1, g1), 30),
        dp_accounting.SampledWithoutReplacementDpEvent(100, 10, g2),
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.ComposedDpEvent([g1, dp_accounting.NoOpDpEvent()]), 5)])
    assert sampler.gaussian_releases(ev) == [(0.5, 35), (2.0, 1)]
    expect = sampler.truncation_delta(0.5, 35) + sampler.truncation_delta(2.0, 1)
    assert sampler.event_truncation_delta(ev) == pytest.approx(expect, rel=1e-12)
    mog = events.mixture_of_gaussians(noise_multiplier=2.0, sensitivities=[0.0, 1.0, 3.0],
                                      sampling_probs=[0.5, 0.3, 0.2])
    assert sampler.gaussian_releases(events.repeated(mog, 4)) == [(1.5, 4)]
    with pytest.raises(sampler.Unbounded, match="Laplace"):
        sampler.gaussian_releases(dp_accounting.LaplaceDpEvent(1.0))
    with pytest.raises(sampler.Unbounded, match="not private"):
        sampler.gaussian_releases(dp_accounting.NonPrivateDpEvent())


def _check_fields(rep, rounds):
    assert rep.noise_sampler == sampler.NAME
    assert rep.truncation_delta is not None and 0 < rep.truncation_delta < 1e-12 * rounds
    assert rep.total_delta == rep.delta + rep.truncation_delta
    js = json.loads(json.dumps(report.PrivacyReport.to_json(rep)))
    assert js["noise_sampler"] == sampler.NAME and js["total_delta"] == rep.total_delta
    assert js["truncation_delta"] == rep.truncation_delta and js["truncation_note"]


def test_report_fields_event_accountant_and_dp_fedavg():
    from jaxfl.algorithms import dp_fedavg
    from tests import _toy
    alg = dp_fedavg.dp_fedavg(_toy.logreg(5, 3), num_clients=6, local_steps=1, batch_size=3,
                              client_lr=0.5, clip_norm=0.1, noise_multiplier=1.3,
                              sampling_rate=0.5)
    acc = report.of(alg)
    rep = acc.report(100, 1e-5)
    _check_fields(rep, 100)
    assert rep.truncation_delta == pytest.approx(sampler.truncation_delta(1 / 1.3, 100))
    # the headline is untouched: same as the accountant without the sampler
    assert rep.epsilon == report.EventAccountant(acc.event_fn).report(100, 1e-5).epsilon
    assert report.NonPrivateAccountant().report(5, 1e-5).truncation_delta is None


def test_report_fields_uldp_both_modes():
    acc = uldp_accounting.method_accountant("ULDP-AVG-w", noise_multiplier=5.0)
    out = report.reports(acc, 100, 1e-5)
    for key in ("privacy", "privacy_paper"):
        assert out[key]["noise_sampler"] == sampler.NAME
        assert 0 < out[key]["truncation_delta"] < 1e-12 * 100
    assert out["privacy"]["truncation_delta"] == pytest.approx(
        sampler.truncation_delta(0.2, 100))
    naive = uldp_accounting.method_accountant("ULDP-NAIVE", noise_multiplier=5.0)
    assert naive.report(100, 1e-5).truncation_delta == pytest.approx(
        sampler.truncation_delta(0.4, 100))  # strict: sensitivity 2C|S|


def test_report_fields_gossip():
    from jaxfl.algorithms import gossip
    from jaxfl.topology import graphs, mixing
    W = mixing.max_degree(graphs.ring(4))
    alg = gossip.dp_gossip_avg(mixing_matrix=W, clip_norm=1.0, noise_multiplier=0.8,
                               learning_rate=0.3, normalizer=12.0)
    out = report.reports(alg.accountant, 20, 1e-5)
    for key in ("privacy", "privacy_paper"):
        assert out[key]["truncation_delta"] == pytest.approx(
            sampler.truncation_delta(1 / 0.8, 20))
        assert "own noised gradient" in out[key]["truncation_note"]
    _check_fields(alg.accountant.report(20, 1e-5), 20)


def test_unbounded_is_none_with_a_reason_never_zero():
    acc = report.CurveAccountant(lambda r, d: np.ones(len(r)), unit="client", name="x")
    rep = acc.report(3, 1e-5)
    assert rep.truncation_delta is None and rep.total_delta is None
    assert rep.truncation_note.startswith("not bounded")
    tiny = report.EventAccountant.repeating(events.gaussian(0.05))  # r = 20 > S - 5
    rep = tiny.report(3, 1e-5)
    assert rep.truncation_delta is None and "sensitivity / std" in rep.truncation_note
    assert rep.to_json()["truncation_delta"] is None


def test_report_fields_subject_dp_and_lightdp():
    from jaxfl.accounting import lightdp
    from jaxfl.accounting import subject_dp as sd
    fed = sd.Federation.uniform(num_users=10, examples_per_user=100, batch_size=10,
                                local_steps=5, items_per_subject_per_user=2, users_per_round=5)
    acc = sd.SubjectDPAccountant("local_item_dp", fed, noise_multipliers=4.0)
    rep = acc.report(20, 1e-5)  # r = 2 * 2 items / 4, every step of 10 users: 50 per round
    assert rep.truncation_delta == pytest.approx(sampler.truncation_delta(1.0, 20 * 50))
    light = lightdp.LightDPAccountant(scheme="lightdp", sigma_u=1.0, sigma_k=1.0,
                                      num_clients=10, max_colluders=2, max_stragglers=1,
                                      sensitivity=1.0)
    rep = light.report(50, 1e-5)
    assert rep.truncation_delta == pytest.approx(
        sampler.truncation_delta(1.0 / light.noise_multiplier, 50))


def test_report_fields_dp_ogl_both_modes():
    """DP-OGL: every epoch a worker's data enters one release in each of its groups (group
    noise std sigma_m c_m on sensitivity c_m), so r = 1 / min sigma_m and a worker in the most
    groups takes part in that many releases per epoch; the paper mode (another analysis of the
    same noise) reports the same truncation."""
    from jaxfl.algorithms import dp_ogl
    from jaxfl.topology import groups
    from tests import _toy

    s = groups.string(13, 6)  # groups on a line, one-worker overlaps: degrees 1 and 2
    sigmas = np.linspace(0.5, 1.0, s.num_groups)
    alg = dp_ogl.dp_ogl(_toy.logreg(5, 3), s, period=1, local_steps=3, batch_size=4,
                        client_lr=0.3, clip_norms=0.5, noise_multipliers=sigmas,
                        sampling_rates=1.0)
    most = max(int(d) for d in s.worker_degrees)
    assert most == 2
    out = report.reports(alg.accountant, 10, 1e-5)
    for key in ("privacy", "privacy_paper"):
        assert out[key]["truncation_delta"] == pytest.approx(
            sampler.truncation_delta(1 / 0.5, 10 * most))
        assert out[key]["total_delta"] == pytest.approx(1e-5 + out[key]["truncation_delta"])
    assert alg.accountant.other_modes()["paper"].noise_spec is None  # reports() wrote nothing
