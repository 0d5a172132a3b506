"""Subject-level accounting (Marathe & Kanani v1): oracles and reference
values computed outside this repository (dp-accounting 0.6.0, delta = 1e-5, regression tolerance 1%)."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld, rdp
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl import validate
from jaxfl.accounting import conversions, events, recipes
from jaxfl.accounting import local_group_bound as lg
from jaxfl.accounting import subject_dp as sd

FEMNIST_Q = 512 / 35725  # FEMNIST: n_i = 35,725, B = 512
HYP = settings(derandomize=True, max_examples=12, deadline=None)
# A coarse order grid keeps property tests fast; every grid gives valid (looser) bounds.
ORDERS = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0, 128.0)


def _fed(users=16, k=10.2, T=1, s=None):
    return sd.Federation.uniform(num_users=users, examples_per_user=35725, batch_size=512,
                                 local_steps=T, items_per_subject_per_user=k,
                                 users_per_round=s)


@pytest.fixture(scope="module")
def sigma_t1():
    return sd.calibrate_noise_multiplier(target_epsilon=4.0, delta=1e-5,
                                         sampling_rate=FEMNIST_Q, steps=100)


# ---------------------------------------------------------------- calibration (3.3, 3.7)
def test_reference_sigma_t1(sigma_t1):
    assert sigma_t1 == pytest.approx(0.6881, rel=1e-3)
    # Private side: the calibrated sigma meets the target, 0.1% less noise does not.
    eps = lambda s: sd.item_epsilon(noise_multiplier=s, sampling_rate=FEMNIST_Q, steps=100,
                                    delta=1e-5)
    assert eps(sigma_t1) <= 4.0 < eps(sigma_t1 * 0.999)


def test_calibration_matches_dp_accounting(sigma_t1):
    def make(s):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(FEMNIST_Q, dp_accounting.GaussianDpEvent(s)), 100)
    ref = dp_accounting.calibrate_dp_mechanism(
        rdp.RdpAccountant, make, 4.0, 1e-5,
        bracket_interval=dp_accounting.LowerEndpointAndGuess(0.1, 1.0))
    assert sigma_t1 == pytest.approx(ref, rel=1e-3)
    acc = rdp.RdpAccountant()
    acc.compose(make(0.9))
    assert sd.item_epsilon(noise_multiplier=0.9, sampling_rate=FEMNIST_Q, steps=100,
                           delta=1e-5) == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)


@pytest.mark.slow
def test_reference_sigma_t70_and_tf_privacy_recipe():
    s70 = sd.calibrate_noise_multiplier(target_epsilon=4.0, delta=1e-5, sampling_rate=FEMNIST_Q,
                                        steps=7000)
    assert s70 == pytest.approx(1.5684, rel=1e-3)
    tf = sd.calibrate_noise_multiplier(target_epsilon=4.0, delta=1e-5, sampling_rate=FEMNIST_Q,
                                       steps=100, orders=sd.TF_PRIVACY_ORDERS, conversion="basic")
    assert tf == pytest.approx(0.7378, rel=1e-3)
    z3 = sd.group_noise_multiplier(target_epsilon=4.0, delta=1e-5, group_size=3,
                                   sampling_rate=FEMNIST_Q, steps=7000)
    assert z3 == pytest.approx(4.4936, rel=1e-3)


def test_group_sigmas_t1_reference_and_increasing(sigma_t1):
    ref = [0.6881, 0.9714, 1.1988, 1.3852]
    sig = [sd.group_noise_multiplier(target_epsilon=4.0, delta=1e-5, group_size=z,
                                     sampling_rate=FEMNIST_Q, steps=100) for z in range(1, 5)]
    np.testing.assert_allclose(sig, ref, rtol=1e-3)
    assert sig[0] == sigma_t1  # Z = 1 is LocalItemDP's sigma (same cached calibration)
    assert np.all(np.diff(sig) > 0)


def test_closed_form_sigmas():
    assert sd.dwork_roth_sigma(1.0, 1e-5) == pytest.approx(4.84481, abs=1e-5)
    assert conversions.gaussian_noise_multiplier(4.0, 1e-5) == pytest.approx(1.08116, abs=1e-4)


# ---------------------------------------------------------------- group privacy (oracle 11)
@HYP
@given(eps=st.floats(0.1, 10.0), logd=st.floats(-9, -3), g=st.integers(1, 12))
def test_paper_group_round_trip(eps, logd, g):
    delta = 10.0**logd
    e_item, d_item = sd.paper_group_target(eps, delta, g)
    e, d = sd.paper_group_privacy(e_item, d_item, g)
    assert e == pytest.approx(eps, rel=1e-12) and d == pytest.approx(delta, rel=1e-12)
    # Thm 3.4 (Dwork-Roth) is never tighter than the tight group conversion: it is valid.
    _, d_tight = conversions.group_epsilon_delta(e_item, d_item, g)
    assert d_tight <= d * (1 + 1e-12)


def test_paper_group_targets_reference():
    targets = [sd.paper_group_target(4.0, 1e-5, z) for z in (2, 3, 4, 5, 6)]
    np.testing.assert_allclose([t[0] for t in targets], [2, 4 / 3, 1, 0.8, 2 / 3], rtol=1e-12)
    np.testing.assert_allclose([t[1] for t in targets],
                               [6.767e-7, 2.316e-7, 1.245e-7, 8.152e-8, 5.946e-8], rtol=1e-3)
    assert sd.paper_group_target(4.0, 1e-5, 1) == (4.0, 1e-5)


# ---------------------------------------------------------------- monotonicity (oracle 12)
@HYP
@given(q=st.floats(0.001, 0.3), sigma=st.floats(0.5, 5.0), steps=st.integers(1, 500))
def test_epsilon_monotone(q, sigma, steps):
    e = lambda **kw: sd.item_epsilon(**{"noise_multiplier": sigma, "sampling_rate": q,
                                        "steps": steps, "delta": 1e-5, "orders": ORDERS, **kw})
    base = e()
    assert e(noise_multiplier=sigma * 1.2) <= base
    assert e(sampling_rate=min(1.0, q * 1.5)) >= base
    assert e(steps=steps + 10) >= base


def test_calibrated_sigma_monotone():
    cal = lambda **kw: sd.calibrate_noise_multiplier(**{
        "target_epsilon": 2.0, "delta": 1e-5, "sampling_rate": 0.02, "steps": 50,
        "orders": ORDERS, **kw})
    base = cal()
    assert cal(steps=100) > base and cal(sampling_rate=0.04) > base
    assert cal(target_epsilon=3.0) < base and cal(delta=1e-3) < base


# ---------------------------------------------------------------- horizontal composition (13)
def test_horizontal_reference_values(sigma_t1):
    fed1 = _fed(k=1)  # one item per user: subject inclusion = item inclusion
    sig = np.full(16, sigma_t1)
    e = lambda fed, r: sd.epsilon("higradavg_dp", fed, rounds=r, delta=1e-5,
                                  noise_multipliers=sig[:fed.num_users]).epsilon
    assert e(fed1, 25) == pytest.approx(5.648, rel=1e-3)  # paper's R/sqrt(s) schedule
    assert e(fed1, 6) == pytest.approx(3.968, rel=1e-3)   # ~R/s
    assert e(_fed(users=1, k=1), 25) == pytest.approx(3.231, rel=1e-3)


@HYP
@given(s=st.integers(2, 8), rounds_per_user=st.integers(1, 6), q=st.floats(0.005, 0.2),
       sigma=st.floats(0.6, 3.0))
def test_s_users_times_r_over_s_rounds_equals_one_user(s, rounds_per_user, q, sigma):
    fs = sd.Federation(sampling_rates=np.full(s, q), local_steps=2,
                       subject_counts=np.ones((1, s)), users_per_round=s)
    f1 = sd.Federation(sampling_rates=[q], local_steps=2, subject_counts=[[1.0]],
                       users_per_round=1)
    a = sd.epsilon("higradavg_dp", fs, rounds=rounds_per_user, delta=1e-5, noise_multipliers=sigma)
    b = sd.epsilon("higradavg_dp", f1, rounds=rounds_per_user * s, delta=1e-5,
                   noise_multipliers=sigma)
    assert a.epsilon == pytest.approx(b.epsilon, rel=1e-12)
    paper_rounds = math.ceil(rounds_per_user * s / math.sqrt(s))
    c = sd.epsilon("higradavg_dp", fs, rounds=paper_rounds, delta=1e-5, noise_multipliers=sigma)
    assert c.epsilon > b.epsilon  # R / sqrt(s) rounds overspend (Thm 3.10 under-compensates)


def test_subject_at_one_user_is_parallel_composition(sigma_t1):
    counts = np.zeros((3, 4))
    counts[0, 2] = 5  # subject 0 only at user 2
    counts[1, 0] = counts[2, 1] = 1
    fed = sd.Federation(sampling_rates=[0.01, 0.02, 0.03, 0.04], local_steps=1,
                        subject_counts=counts, users_per_round=4)
    r = sd.epsilon("higradavg_dp", fed, rounds=30, delta=1e-5, noise_multipliers=sigma_t1)
    single = sd.item_epsilon(noise_multiplier=sigma_t1,
                             sampling_rate=sd.subject_inclusion_probability(0.03, 5), steps=30,
                             delta=1e-5)
    assert r.details["worst_subject"] == 0 and r.epsilon == pytest.approx(single, rel=1e-12)


def test_horizontal_rdp_top_s():
    curves = np.array([[1.0, 5.0], [3.0, 1.0], [2.0, 2.0]])
    np.testing.assert_allclose(sd.horizontal_rdp(curves, 2), [5.0, 7.0])
    np.testing.assert_allclose(sd.horizontal_rdp(curves, 3), [6.0, 8.0])


# ---------------------------------------------------------------- oracle 14
def test_self_composed_gaussian_pld_matches_closed_form():
    sigma, k = 3.0, 20
    acc = pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(events.repeated(events.gaussian(sigma), k))
    closed = dp_accounting.get_epsilon_gaussian(sigma / math.sqrt(k), 1e-5)
    assert acc.get_epsilon(1e-5) == pytest.approx(closed, rel=2e-3)
    rdp_eps = recipes.epsilon_from_rdp(recipes.DEFAULT_ORDERS,
                                       k * np.asarray(recipes.DEFAULT_ORDERS) / (2 * sigma**2),
                                       1e-5)[0]
    assert rdp_eps > closed


# ---------------------------------------------------------------- strict per method (3.5, 3.7)
def test_higradavg_strict_reference(sigma_t1):
    one = sd.epsilon("higradavg_dp", _fed(users=1), rounds=100, delta=1e-5,
                     noise_multipliers=sigma_t1)
    assert one.epsilon == pytest.approx(22.78, rel=2e-3) and one.mode == "strict"
    many = sd.epsilon("higradavg_dp", _fed(), rounds=25, delta=1e-5, noise_multipliers=sigma_t1)
    assert many.epsilon == pytest.approx(52.03, rel=2e-3)
    paper = sd.epsilon("higradavg_dp", _fed(), mode="paper", rounds=25, delta=1e-5,
                       noise_multipliers=sigma_t1)
    assert paper.epsilon == pytest.approx(4.0, abs=1e-3) and paper.mode == "paper"
    assert sd.subject_inclusion_probability(FEMNIST_Q, 10.2) == pytest.approx(0.1370, abs=2e-4)


def test_user_ldp_strict_sigma_reference():
    for T, ref in [(1, 43.25), (70, 361.8)]:
        fed = _fed(T=T)
        sigma = sd.strict_noise_multiplier("user_ldp", fed, target_epsilon=4.0, delta=1e-5,
                                           rounds=25)
        assert sigma == pytest.approx(ref, rel=1e-3)
        r = sd.epsilon("user_ldp", fed, rounds=25, delta=1e-5, noise_multipliers=sigma)
        assert r.epsilon == pytest.approx(4.0, rel=1e-6)


def test_local_group_dp_batch_noise_strict_is_the_variance_mismatch_bound(sigma_t1):
    table = lambda user, z: sigma_t1 * (1 + 0.1 * (z - 1))
    kw = dict(rounds=25, delta=1e-5, group_noise_multiplier=table, group_sizes=[1, 2, 3])
    unknown = sd.epsilon("local_group_dp", _fed(), **kw)  # no model_dim: inf (sound)
    assert unknown.epsilon == math.inf and unknown.sound and "model_dim" in unknown.details[
        "notes"][-1]
    strict = sd.epsilon("local_group_dp", _fed(), model_dim=100, **kw)
    # Independent: 16 identical users each holding ceil(10.2) = 11 of the subject's items.
    want = lg.local_group_batch_epsilon(
        group_noise_multipliers=[table(0, z) for z in range(1, 12)], items=11,
        sampling_rate=FEMNIST_Q, steps=25, users=16, delta=1e-5, model_dim=100)
    assert math.isfinite(want) and strict.epsilon == pytest.approx(want, rel=1e-9)
    assert strict.mode == "strict" and strict.sound and strict.details["model_dim"] == 100
    assert strict.details["bound"] == "variance-mismatch"
    paper_table = sd.paper_group_table(_fed(), target_epsilon=4.0, delta=1e-5, nominal_rounds=100)
    paper = sd.epsilon("local_group_dp", _fed(), mode="paper", rounds=25, delta=1e-5,
                       group_noise_multiplier=paper_table, group_sizes=[1, 2, 3])
    assert paper.epsilon == pytest.approx(4.0, abs=2e-3)


def test_strict_calibration_meets_target():
    fed = _fed(users=4, k=3)
    for method in ("higradavg_dp", "local_group_dp"):
        sigma = sd.strict_noise_multiplier(method, fed, target_epsilon=4.0, delta=1e-5, rounds=5,
                                           orders=ORDERS)
        e = lambda s, m=method: sd.epsilon(m, fed, rounds=5, delta=1e-5, noise_multipliers=s,
                                      group_noise="fixed", orders=ORDERS).epsilon
        assert e(sigma) <= 4.0 < e(sigma * 0.99)


def test_mixture_event_k1_is_poisson_gaussian():
    mix = sd.mixture_epsilon_pld(noise_multiplier=1.0, sampling_rate=0.05, items=1, steps=20,
                                 delta=1e-5)
    acc = pld.PLDAccountant(value_discretization_interval=1e-3)
    acc.compose(events.poisson_gaussian(sampling_rate=0.05, noise_multiplier=1.0), 20)
    assert mix == pytest.approx(acc.get_epsilon(1e-5), rel=1e-6)


@pytest.mark.slow
def test_mixture_reference_and_tight_route():
    # Reference: LocalItemDP at subject level, k = 10, MoG (PLD 1e-3), sigma(T=70), 100 rounds.
    assert sd.mixture_epsilon_pld(noise_multiplier=1.5684, sampling_rate=FEMNIST_Q, items=10,
                                  steps=7000, delta=1e-5) == pytest.approx(72.62, rel=2e-3)
    fed = _fed(users=1, k=10, T=70)
    r = sd.epsilon("local_item_dp", fed, rounds=100, delta=1e-5, noise_multipliers=1.5684,
                   tight=True)
    assert r.accountant == "pld" and r.epsilon == pytest.approx(72.62, rel=2e-3)
    assert r.details["rdp_route_epsilon"] > r.epsilon
    assert r.details["item_epsilon"] == pytest.approx(4.0, abs=1e-3)


# ---------------------------------------------------------------- strict >= paper (oracle 17)
@settings(derandomize=True, max_examples=8, deadline=None)
@given(q=st.floats(0.002, 0.2), sigma=st.floats(0.6, 4.0), T=st.integers(1, 3),
       users=st.integers(1, 6), rounds=st.integers(1, 30), data=st.data())
def test_strict_at_least_paper(q, sigma, T, users, rounds, data):
    s = data.draw(st.integers(1, users))
    k = np.array(data.draw(st.lists(st.integers(1, 6), min_size=users, max_size=users)), float)
    fed = sd.Federation(sampling_rates=np.full(users, q), local_steps=T,
                        subject_counts=k[None], users_per_round=s)
    for method in ("higradavg_dp", "user_ldp", "local_item_dp"):
        kw = dict(rounds=rounds, delta=1e-5, noise_multipliers=sigma, orders=ORDERS)
        strict = sd.epsilon(method, fed, **kw)
        paper = sd.epsilon(method, fed, mode="paper", **kw)
        assert strict.epsilon >= paper.epsilon * (1 - 1e-9), (method, strict, paper)
    table = lambda user, z: sigma * (1 + 0.3 * (z - 1))
    zs = list(range(1, int(k.max()) + 1))
    strict = sd.epsilon("local_group_dp", fed, rounds=rounds, delta=1e-5,
                        group_noise_multiplier=table, group_sizes=zs, orders=ORDERS)
    paper = sd.epsilon("local_group_dp", fed, mode="paper", rounds=rounds, delta=1e-5,
                       group_noise_multiplier=table, group_sizes=zs, orders=ORDERS)
    assert strict.epsilon >= paper.epsilon


# ---------------------------------------------------------------- misc
def test_inclusion_probability_matches_simulation():
    rng = np.random.default_rng(0)
    q, k, n = 0.03, 7, 100_000
    freq = (rng.random((n, k)) < q).any(axis=1).mean()
    p = sd.subject_inclusion_probability(q, k)
    assert abs(freq - p) < 3 * math.sqrt(p * (1 - p) / n)
    assert sd.subject_inclusion_probability(0.03, 1) == pytest.approx(0.03)


def test_rounds_for_target(sigma_t1):
    assert sd.paper_rounds(100, 16) == 25 and sd.paper_rounds(200, 16) == 50
    kw = dict(target_epsilon=4.0, delta=1e-5, noise_multipliers=sigma_t1, max_rounds=200)
    assert sd.rounds_for_target("higradavg_dp", _fed(k=1), mode="paper", **kw) in (25, 26)
    assert sd.rounds_for_target("higradavg_dp", _fed(k=1), **kw) == 6


def test_federation_from_layout_and_errors():
    sid = np.array([0, 0, 1, 1, 1, 2])
    uid = np.array([0, 1, 1, 1, 0, 1])
    fed = sd.Federation.from_layout(subject_ids=sid, user_ids=uid, num_users=2, batch_size=2,
                                    local_steps="epoch")
    np.testing.assert_array_equal(fed.subject_counts, [[1, 1], [1, 2], [0, 1]])
    np.testing.assert_allclose(fed.sampling_rates, [1.0, 0.5])
    np.testing.assert_array_equal(fed.local_steps, [1, 2])
    with pytest.raises(validate.PrivacyParameterError):
        sd.Federation(sampling_rates=[0.0], local_steps=1, subject_counts=None, users_per_round=1)
    with pytest.raises(validate.JaxflValueError):
        sd.Federation(sampling_rates=[0.1], local_steps=1, subject_counts=None, users_per_round=2)
    with pytest.raises(validate.ShapeError):
        sd.Federation(sampling_rates=[0.1], local_steps=1, subject_counts=[[1, 2]],
                      users_per_round=1)
    with pytest.raises(validate.JaxflValueError, match="mode"):
        sd.epsilon("higradavg_dp", fed, mode="loose", rounds=1, delta=1e-5, noise_multipliers=1.0)
    with pytest.raises(validate.JaxflValueError, match="subject_counts"):
        sd.epsilon("higradavg_dp", _fed(k=None), rounds=1, delta=1e-5, noise_multipliers=1.0)
    r = sd.epsilon("fedavg", fed, rounds=3, delta=1e-5)
    assert r.epsilon == math.inf and r.to_json()["mode"] == "strict"


# ---------------------------------------------------------------- the accountant (engine contract)
def _layout_fed():
    counts = np.array([[3, 0, 1], [1, 2, 2], [0, 0, 4], [5, 1, 0]], float)  # [subjects, users]
    return sd.Federation(sampling_rates=np.array([0.05, 0.08, 0.04]), local_steps=2,
                         subject_counts=counts, users_per_round=3)


def test_accountant_headline_is_worst_subject_by_dp_accounting():
    fed, sigma, rounds = _layout_fed(), 1.3, 7
    acc = sd.SubjectDPAccountant("higradavg_dp", fed, noise_multipliers=sigma, orders=ORDERS)
    rep = acc.report(rounds, 1e-5)
    assert (rep.unit, rep.mode, rep.sound, rep.per_unit_axes) == ("subject", "strict", True,
                                                                   ("subject",))
    # Independent: per subject, dp-accounting RDP of the subject's inclusion at every user.
    want = []
    for k in fed.subject_counts:
        a = rdp.RdpAccountant(orders=list(ORDERS))
        for q, ki in zip(fed.sampling_rates, k, strict=True):
            if ki > 0:
                p = 1 - (1 - q) ** ki
                a.compose(dp_accounting.PoissonSampledDpEvent(
                    p, dp_accounting.GaussianDpEvent(sigma)), 2 * rounds)
        want.append(a.get_epsilon(1e-5))
    np.testing.assert_allclose(rep.per_unit, want, rtol=1e-6)
    assert rep.epsilon == pytest.approx(max(want), rel=1e-6)
    assert rep.details["worst_subject"] == int(np.argmax(want))
    np.testing.assert_allclose(acc.epsilons([1, rounds], 1e-5),
                               [sd.epsilon("higradavg_dp", fed, rounds=1, delta=1e-5,
                                           noise_multipliers=sigma, orders=ORDERS).epsilon,
                                rep.epsilon], rtol=1e-12)


def test_accountant_paper_mode_is_labelled_unsound():
    fed = _layout_fed()
    for method in ("higradavg_dp", "user_ldp", "local_item_dp"):
        acc = sd.SubjectDPAccountant(method, fed, noise_multipliers=1.3, orders=ORDERS)
        paper = acc.other_modes()["paper"]
        rep = paper.report(5, 1e-5)
        assert rep.mode == "paper" and paper.other_modes()["strict"].mode == "strict"
        if method == "local_item_dp":  # the paper's item-level DP-SGD claim is sound
            assert rep.sound and rep.unit == "item"
        else:
            assert not rep.sound and rep.unit == "subject"
        assert rep.epsilon == pytest.approx(sd.epsilon(
            method, fed, mode="paper", rounds=5, delta=1e-5, noise_multipliers=1.3,
            orders=ORDERS).epsilon, rel=1e-12)
        assert rep.dp_event is not None and acc.report(5, 1e-5).dp_event is None
    # Paper HiGradAvgDP: the worst user's item-level RDP over sqrt(s) x T x rounds steps.
    fed4 = sd.Federation(sampling_rates=np.array([0.05, 0.08, 0.04, 0.02]), local_steps=2,
                         subject_counts=np.ones((1, 4)), users_per_round=4)
    a = rdp.RdpAccountant(orders=list(ORDERS))
    a.compose(dp_accounting.PoissonSampledDpEvent(0.08, dp_accounting.GaussianDpEvent(1.3)),
              2 * 5 * 2)
    rep = sd.SubjectDPAccountant("higradavg_dp", fed4, mode="paper", noise_multipliers=1.3,
                                 orders=ORDERS).report(5, 1e-5)
    assert rep.epsilon == pytest.approx(a.get_epsilon(1e-5), rel=1e-9)


def _lg_table(user, z):
    return 1.0 + 0.15 * (z - 1) + 0.05 * user  # nondecreasing in Z


def test_accountant_local_group_dp_strict_is_the_local_group_bound():
    fed, rounds, delta = _layout_fed(), 3, 1e-5
    acc = sd.SubjectDPAccountant("local_group_dp", fed, group_noise_multiplier=_lg_table,
                                 group_sizes=(1, 2), orders=ORDERS, model_dim=50)
    rep = acc.report(rounds, delta)
    assert rep.sound and rep.mode == "strict" and rep.details["model_dim"] == 50
    assert "variance-mismatch" in rep.details["route"] and "d = 50" in rep.details["route"]
    q, T = fed.sampling_rates, 2
    # Subject 2 sits at user 2 only (4 items): the colleague's function directly.
    one = lg.local_group_batch_epsilon(group_noise_multipliers=[_lg_table(2, z)
                                                                for z in range(1, 5)],
                                       items=4, sampling_rate=q[2], steps=T * rounds,
                                       delta=delta, model_dim=50)
    assert math.isfinite(one) and rep.per_unit[2] == pytest.approx(one, rel=1e-9)
    # Subject 3: 5 items at user 0, 1 at user 1: summed per-user RDP, then converted.
    orders = lg.default_orders(None, 1)
    total = sum(T * rounds * lg.local_group_batch_rdp(
        orders, group_noise_multipliers=[_lg_table(u, z) for z in range(1, k + 1)], items=k,
        sampling_rate=q[u], model_dim=50) for u, k in ((0, 5), (1, 1)))
    fin = np.isfinite(total)
    two = min(recipes.epsilon_from_rdp(orders[fin], total[fin], delta, c)[0]
              for c in ("improved", "basic"))
    assert rep.per_unit[3] == pytest.approx(two, rel=1e-9) and two > one
    assert rep.epsilon == pytest.approx(max(rep.per_unit)) and math.isfinite(rep.epsilon)
    assert acc.epsilons([rounds], delta)[0] == rep.epsilon
    # Larger d, larger epsilon; without d the sound fallback is inf.
    big = acc.replace(model_dim=5000).report(rounds, delta)
    assert math.isfinite(big.epsilon) and big.epsilon > rep.epsilon
    nod = acc.replace(model_dim=None).report(rounds, delta)
    assert nod.epsilon == math.inf and nod.sound and nod.details["model_dim"] is None
    paper = acc.other_modes()["paper"].report(3, 1e-5)
    assert paper.details["group_sizes"] == [1, 2] and not paper.sound


def test_local_group_bound_uses_basic_conversion_when_orders_are_near_one():
    """Steep sigma_Z: every finite order is below 1.01, where the improved conversion is not
    evaluated; the basic conversion (valid for every order > 1) still gives a finite bound."""
    fed = sd.Federation(sampling_rates=np.array([0.05]), local_steps=1,
                        subject_counts=np.array([[30.0]]), users_per_round=1)
    sig = lambda u, z: 0.7 * z
    rep = sd.epsilon("local_group_dp", fed, rounds=2, delta=1e-5, group_noise_multiplier=sig,
                     model_dim=100)
    kw = dict(group_noise_multipliers=[0.7 * z for z in range(1, 31)], items=30,
              sampling_rate=0.05, steps=2, delta=1e-5, model_dim=100)
    assert lg.local_group_batch_epsilon(**kw) == math.inf
    basic = lg.local_group_batch_epsilon(conversion="basic", **kw)
    assert math.isfinite(basic) and rep.epsilon == pytest.approx(basic, rel=1e-9)
    assert rep.details["conversions"] == ["basic"]


def test_noise_plan_meets_the_target_in_each_mode():
    fed = _fed(users=4, k=3)
    kw = dict(target_epsilon=4.0, delta=1e-5, nominal_rounds=16, orders=ORDERS)
    paper = sd.noise_plan("higradavg_dp", fed, mode="paper", **kw)
    assert sd.paper_rounds(16, 4) == sd.run_rounds("higradavg_dp", 16, 4) == 8
    rep = sd.SubjectDPAccountant("higradavg_dp", fed, mode="paper", orders=ORDERS,
                                 **paper).report(8, 1e-5)
    assert rep.epsilon == pytest.approx(4.0, abs=1e-3)
    strict = sd.noise_plan("local_group_dp", fed, mode="strict", **kw)
    assert strict["group_noise"] == "fixed"
    rep = sd.SubjectDPAccountant("local_group_dp", fed, orders=ORDERS, **strict).report(8, 1e-5)
    assert rep.epsilon <= 4.0 + 1e-6 and rep.sound
    assert sd.noise_plan("fedavg", fed, **kw) == {}
    table = sd.noise_plan("local_group_dp", fed, mode="paper", **kw)["group_noise_multiplier"]
    assert table(0, 2) > table(0, 1)


def test_group_sizes_are_fixed_when_the_accountant_is_built():
    """A claim must not change with the batches drawn: no callable (running record)."""
    with pytest.raises(validate.JaxflValueError, match="fixed when the accountant is built"):
        sd.SubjectDPAccountant("local_group_dp", _layout_fed(), group_noise_multiplier=_lg_table,
                               group_sizes=lambda: (1, 2), mode="paper")


# ------------------------------------------------- the reproduction's tables (docs/reproduction)


def test_setting_table_matches_the_committed_data():
    """T = 1 of docs/reproduction/data/subject_dp.json (the paper's FEMNIST setting): sigma,
    TF-Privacy's sigma, sigma_{0,Z} (Z = 1 is the item-level sigma) and HiGradAvgDP's strict
    epsilons."""
    (row,) = sd.setting_table((1,), num_users=16, examples_per_user=35725, batch_size=512,
                              target_epsilon=4.0, delta=1e-5, nominal_rounds=100,
                              group_sizes=(1, 2))
    assert row["T"] == 1 and row["sigma_z"][0] == row["sigma"]
    assert (row["sigma"], row["sigma_tf"], row["sigma_z"][1]) == pytest.approx(
        (0.6880941191126807, 0.7378072130717778, 0.9713736042739821), rel=1e-9)
    assert (row["eps_16x25"], row["eps_16x6"]) == pytest.approx(
        (5.648214156956163, 3.9681709210791976), rel=1e-9)


def test_method_table_paper_mode_meets_target_and_strict_rounds_are_the_largest():
    """On a small federation: the paper-mode epsilon is the calibrated target, the rounds
    are the recipe's, and the strict rounds for the budget are the largest that meet it."""
    fed = sd.Federation.uniform(num_users=4, examples_per_user=200, batch_size=20,
                                local_steps=1, items_per_subject_per_user=2)
    rows = sd.method_table(fed, methods=("user_ldp", "higradavg_dp"), target_epsilon=4.0,
                           delta=1e-5, nominal_rounds=40, model_dim=10)
    sig = sd.paper_noise_multiplier(fed, target_epsilon=4.0, delta=1e-5, nominal_rounds=40)
    for r in rows:
        assert r["rounds"] == sd.run_rounds(r["method"], 40, 4)
        assert r["paper"]["epsilon"] == pytest.approx(4.0, abs=1e-4)
        assert r["paper"]["epsilon"] <= 4.0 and r["strict"]["unit"] == "subject"
        acc = sd.SubjectDPAccountant(r["method"], fed, noise_multipliers=sig)
        k = r["strict_rounds_for_eps4"]
        assert r["strict"]["epsilon"] == acc.report(r["rounds"], 1e-5).epsilon
        if k:
            assert acc.report(k, 1e-5).epsilon <= 4.0
        if k < 40:
            assert acc.report(k + 1, 1e-5).epsilon > 4.0


# ------------------------------------------------- the reproduction's accounting section
def _committed_accounting() -> dict:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs/reproduction/data/subject_dp.json"
    return json.loads(path.read_text())["accounting"]


def test_paper_accounting_on_a_hand_made_layout_equals_the_committed_setting(monkeypatch):
    """The uniform setting at T = 1 is the committed one (the paper's N, B, users and budget);
    the layout numbers are the hand-made counts'; the paper-mode LocalItemDP epsilon is the
    committed one (it sees only the paper's uniform rate B / N, not the layout's own rates).
    Two of the four methods, to stay cheap."""
    old = _committed_accounting()
    assert sd.PAPER_METHODS == tuple(m["method"] for m in old["methods"])
    monkeypatch.setattr(sd, "PAPER_METHODS", ("local_item_dp", "higradavg_dp"))
    counts = np.zeros((3, 16))
    counts[0, :] = 2.0
    counts[1, :4] = 5.0
    counts[2, 7] = 9.0
    fed = sd.Federation(sampling_rates=np.full(16, 0.5), local_steps=1,
                          subject_counts=counts, users_per_round=16)
    res = sd.paper_accounting(fed, num_subjects=3, local_steps=(1,), group_sizes=(1, 2),
                                tight_item=False)
    (t1,) = res["T"]
    want = old["T"][0]
    assert t1["T"] == want["T"] == 1
    for k in ("sigma", "sigma_tf", "eps_16x25", "eps_16x6"):
        assert t1[k] == pytest.approx(want[k], rel=1e-9), k
    assert t1["sigma_z"] == pytest.approx(want["sigma_z"][:2], rel=1e-9)
    assert res["layout"] == {"T": 1, "subjects": 3, "items": 32 + 20 + 9,
                             "k_mean": (32 + 20 + 9) / 48, "k_max": 9}
    assert [m["method"] for m in res["methods"]] == ["local_item_dp", "higradavg_dp"]
    item = res["methods"][0]
    assert item["paper"]["unit"] == old["methods"][0]["paper"]["unit"] == "item"
    assert item["paper"]["epsilon"] == pytest.approx(old["methods"][0]["paper"]["epsilon"],
                                                     rel=1e-9)


def test_batch_summary_by_hand():
    """Means of K and Z, the modal Z and the frequencies of the observed Z, most frequent
    first (an unobserved Z is left out)."""
    b = sd.batch_summary([[4, 6], [5, 5]], [[1, 1, 1], [2, 2, 3]])
    assert (b["K"], b["Z"], b["mode"]) == (5.0, 10 / 6, 1)
    assert b["freq"] == "1: 0.50, 2: 0.33, 3: 0.17"
