"""LightDP-FL noise design and accounting: reference values and invariants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from jaxfl import validate
from jaxfl.accounting import accountants, conversions, events
from jaxfl.accounting import lightdp as L

# Reference values of Example 1's design (Sec. V-C; N = 50, uniform g): C_bar, S_bar, mu, gamma0, h, sigma_u/s0, sigma_k/s0,
# E[v]/s0^2 for LightDP, LDP, SMPC+DP (nan = undefined).
REFERENCE = [
    (0, 10, 5.2231, 0.076492, 0.294867, 0.54302, 0.15018, 0.009216, 0.022333, 0.000558),
    (10, 10, 5.2231, 0.079656, 0.331139, 0.57545, 0.16241, 0.010472, 0.022333, 0.000744),
    (15, 10, 5.2231, 0.081156, 0.355010, 0.59583, 0.16974, 0.011289, 0.022333, 0.000893),
    (20, 10, 5.2231, 0.082398, 0.384800, 0.62032, 0.17806, 0.012292, 0.022333, 0.001117),
    (30, 10, 5.2231, 0.082011, 0.476552, 0.69033, 0.19769, 0.015202, 0.022333, 0.002233),
    (40, 10, 5.2231, 0.057681, 0.701805, 0.83774, 0.20120, 0.020395, 0.022333, math.nan),
    (10, 0, 0.0, 0.131762, 0.305691, 0.55289, 0.20070, 0.006114, 0.020000, 0.000500),
    (15, 0, 0.0, 0.138861, 0.325306, 0.57036, 0.21254, 0.006506, 0.020000, 0.000571),
    (15, 20, 10.9340, 0.058483, 0.398088, 0.63094, 0.15258, 0.016706, 0.025598, 0.001707),
    (15, 30, 17.4187, 0.041768, 0.457041, 0.67605, 0.13816, 0.024233, 0.030692, 0.006138),
    (49, 10, 5.2231, 0.0, 1.0, 1.0, 0.0, 0.022333, 0.022333, math.nan),
]
KEYS = ("mu", "gamma0", "h", "sigma_u", "sigma_k", "ev_lightdp", "ev_ldp", "ev_smpc")


def _digits_tol(printed: float) -> float:
    """Half a unit in the last printed decimal of a reference value (5-6 significant digits)."""
    s = f"{printed:.6f}".rstrip("0")
    decimals = len(s.split(".")[1]) if "." in s else 0
    return 0.5 * 10.0 ** (-max(decimals, 4)) + 1e-12


@pytest.mark.parametrize("row", REFERENCE, ids=lambda r: f"C{r[0]}_S{r[1]}")
def test_reference_table(row):
    got = L.reference_row(num_clients=50, max_colluders=row[0], max_stragglers=row[1])
    for key, want in zip(KEYS, row[2:], strict=True):
        if math.isnan(want):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(want, abs=_digits_tol(want)), key


@pytest.mark.parametrize("row", REFERENCE, ids=lambda r: f"C{r[0]}_S{r[1]}")
def test_optimum_sits_on_privacy_constraint(row):
    """max V_paper * sigma_0^2 = 1 at the design point (the constraint binds), paper mode."""
    d = L.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=row[0],
                 max_stragglers=row[1], sensitivity=0.7, rounds=150, mode="paper")
    assert d.v_paper_max * d.sigma_0**2 == pytest.approx(1.0, abs=1e-9)
    # Any smaller sigma_U at the same gamma violates Prop. 1.
    wc = L.worst_case(num_clients=50, max_colluders=row[0], max_stragglers=row[1],
                      sigma_u=0.999 * d.sigma_u, sigma_k=0.999 * d.sigma_k)
    assert wc["v_paper"] * d.sigma_0**2 > 1.0


@pytest.mark.parametrize("C_bar,S_bar,want", [(10, 10, 0.0796556), (40, 10, 0.0576815),
                                              (15, 0, 0.1388613), (15, 30, 0.0417677)])
def test_quartic_root_is_the_minimiser(C_bar, S_bar, want):
    m = 50 - C_bar
    mu = L.mu_of(L.uniform_pmf(S_bar), 50)
    g0 = L.solve_gamma(m, mu)
    assert g0 == pytest.approx(want, abs=1e-7)
    assert abs(np.polyval(L.quartic_coeffs(m, mu), g0)) < 1e-8 * np.abs(
        L.quartic_coeffs(m, mu)).max()
    grid = np.linspace(0, 1, 20001)
    assert L.objective(g0, m, mu) <= L.objective(grid, m, mu).min() + 1e-15
    res = optimize.minimize_scalar(lambda g: L.objective(g, m, mu), bounds=(0, 1),
                                   method="bounded", options={"xatol": 1e-12})
    assert res.x == pytest.approx(g0, abs=1e-8)
    assert L.objective(g0, m, mu) <= 1.0  # never worse than local DP (Phi(0) = 1)


def test_quartic_is_derivative_numerator():
    """G(gamma) has the sign of dPhi/dgamma and vanishes with it (finite differences)."""
    for m, mu in [(40, 5.2231), (35, 0.0), (10, 3.0)]:
        g = np.linspace(0.01, 2.0, 200)
        dphi = (L.objective(g + 1e-7, m, mu) - L.objective(g - 1e-7, m, mu)) / 2e-7
        G = np.polyval(L.quartic_coeffs(m, mu), g)
        ok = np.abs(dphi) > 1e-6
        assert np.all(np.sign(dphi[ok]) == np.sign(G[ok]))


# ----------------------------------------------------------------- limiting cases (I11)


def test_gamma_zero_is_local_dp():
    kw = dict(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=10, max_stragglers=10,
              sensitivity=0.3, rounds=4, mode="paper")
    d = L.design(gamma=0.0, **kw)
    ldp = L.design(scheme="ldp", **kw)
    assert d.sigma_k == 0.0 and d.sigma_u == pytest.approx(d.sigma_0, rel=1e-14)
    assert d.sigma_u == pytest.approx(ldp.sigma_u, rel=1e-14)
    assert d.exact_epsilon() == pytest.approx(ldp.exact_epsilon(), rel=1e-10)


def test_all_but_one_colluding_gives_local_dp():
    g = np.linspace(0, 5, 101)
    np.testing.assert_allclose(L.h(g, 1), 1.0, rtol=1e-14)
    d = L.design(epsilon=2.0, delta=1e-5, num_clients=20, max_colluders=19, max_stragglers=3,
                 sensitivity=1.0, mode="paper")
    assert d.gamma == 0.0 and d.sigma_u == pytest.approx(d.sigma_0)


def test_no_stragglers_cubic():
    m = 35
    g0 = L.solve_gamma(m, 0.0)
    assert g0 == pytest.approx(0.138861, abs=1e-6)
    assert m**2 * g0**3 + 3 * m * g0**2 - (m - 4) * g0 - 1 == pytest.approx(0.0, abs=1e-10)
    # G / (m - 1) is that cubic when mu = 0.
    np.testing.assert_allclose(L.quartic_coeffs(m, 0.0)[1:] / (m - 1),
                               [m**2, 3 * m, -(m - 4), -1], rtol=1e-12)
    assert L.quartic_coeffs(m, 0.0)[0] == 0.0


def test_many_stragglers_falls_back_to_local_dp():
    # m = 4, S_bar = 9 of N = 10: mu >= m - 1, so no positive gamma helps.
    mu = L.mu_of(L.uniform_pmf(9), 10)
    assert mu >= 3
    assert L.solve_gamma(4, mu) == 0.0
    d = L.design(epsilon=1.0, delta=1e-5, num_clients=10, max_colluders=6, max_stragglers=9,
                 sensitivity=1.0, mode="paper")
    assert d.gamma == 0.0 and d.sigma_k == 0.0


def test_no_stragglers_aggregate_variance():
    assert L.aggregate_variance(0, num_clients=50, sigma_u=2.0, sigma_k=9.0) == pytest.approx(
        4.0 / 50)


@pytest.mark.parametrize("composition,factor", [("sqrt_T_std", 3.0), ("sqrt_T_var", 3.0**0.5),
                                                ("none", 1.0)])
def test_scaling_with_sensitivity_epsilon_and_rounds(composition, factor):
    kw = dict(delta=1e-5, num_clients=50, max_colluders=15, max_stragglers=20, mode="paper",
              composition=composition)
    a = L.design(epsilon=3.0, sensitivity=1.0, rounds=1, **kw)
    b = L.design(epsilon=1.5, sensitivity=2.0, rounds=9, **kw)
    assert b.sigma_u / a.sigma_u == pytest.approx(4.0 * factor, rel=1e-12)
    assert b.sigma_k / a.sigma_k == pytest.approx(4.0 * factor, rel=1e-12)
    assert b.gamma == pytest.approx(a.gamma, rel=1e-12)


# ------------------------------------------------------ closed forms vs matrices (I6-I8)


def test_closed_form_example_values():
    k, u, N, C, n2 = 0.7, 1.0, 50, 10, 3
    assert float(L.v_paper(C, n2, k, u, N)) == pytest.approx(0.1123315, abs=1e-7)
    assert float(L.v_exact(C, n2, k, u, N)) == pytest.approx(0.0422692, abs=1e-7)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(N=st.integers(3, 14), data=st.data(), k=st.floats(0.0, 3.0), u=st.floats(0.05, 3.0))
def test_closed_form_matches_matrix_inverse(N, data, k, u):
    C = data.draw(st.integers(0, N - 1))
    n2 = data.draw(st.integers(0, N - C - 1))
    sp = np.full((N, N), math.sqrt(k))
    si = np.full(N, math.sqrt(u))
    col, strag = list(range(C)), list(range(C, C + n2))
    I1, Cm = L.view_covariance(sp, si, col, strag)
    assert I1.size == N - C - n2
    vp, ve = L.variances_from_covariance(Cm)
    np.testing.assert_allclose(vp, float(L.v_paper(C, n2, k, u, N)), rtol=1e-9)
    np.testing.assert_allclose(ve, float(L.v_exact(C, n2, k, u, N)), rtol=1e-9)
    # C_m is an M-matrix: its inverse is entrywise non-negative.
    assert np.all(np.linalg.inv(Cm) >= -1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(N=st.integers(3, 9), seed=st.integers(0, 2**31 - 1))
def test_paper_variance_is_conservative_for_nonuniform_variances(N, seed):
    rng = np.random.default_rng(seed)
    A = rng.uniform(0, 2, (N, N))
    sp = np.triu(A, 1) + np.triu(A, 1).T
    si = rng.uniform(0.1, 2, N)
    col = rng.choice(N, rng.integers(0, N - 1), replace=False)
    rest = np.setdiff1d(np.arange(N), col)
    strag = rng.choice(rest, rng.integers(0, rest.size), replace=False)
    I1, Cm = L.view_covariance(sp, si, col, strag)
    vp, ve = L.variances_from_covariance(Cm)
    assert np.all(vp >= ve * (1 - 1e-12))


@pytest.mark.parametrize("gamma", [0.05, 0.3, 0.7])
def test_brute_force_worst_case_matches_closed_form(gamma):
    N, C_bar, S_bar = 6, 2, 2
    sp = np.full((N, N), math.sqrt(gamma))
    si = np.ones(N)
    bf = L.brute_force_worst(sp, si, max_colluders=C_bar, max_stragglers=S_bar)
    wc = L.worst_case(num_clients=N, max_colluders=C_bar, max_stragglers=S_bar, sigma_u=1.0,
                      sigma_k=math.sqrt(gamma))
    assert bf["v_paper"] == pytest.approx(wc["v_paper"], rel=1e-12)
    assert bf["v_exact"] == pytest.approx(wc["v_exact"], rel=1e-12)
    assert wc["argmax_exact"] == (C_bar, 0)
    assert bf["v_paper"] == pytest.approx(float(L.h(gamma, N - C_bar)), rel=1e-12)


def test_worst_case_for_large_gamma_is_at_least_the_c_bar_formula():
    for gamma in (0.8, 1.5, 4.0):
        hm = L.h_max(gamma, num_clients=50, max_colluders=20, max_stragglers=10)
        assert hm >= float(L.h(gamma, 30)) * (1 - 1e-14)
    # ... and strictly above it somewhere (the max moves to C < C_bar).
    assert L.h_max(4.0, num_clients=50, max_colluders=20, max_stragglers=10) > float(
        L.h(4.0, 30)) * (1 + 1e-6)


def test_fixed_large_gamma_design_still_satisfies_constraint():
    d = L.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=20, max_stragglers=10,
                 sensitivity=1.0, gamma=4.0, mode="paper")
    assert d.v_paper_max * d.sigma_0**2 == pytest.approx(1.0, abs=1e-12)


# ----------------------------------------------------------------- trends (I12, I13)


def test_monotone_trends():
    su = [L.reference_row(num_clients=50, max_colluders=c, max_stragglers=10)
          for c in (0, 10, 15, 20, 30, 40)]
    assert np.all(np.diff([r["sigma_u"] for r in su]) > 0)
    assert np.all(np.diff([r["sigma_k"] for r in su]) > 0)
    ss = [L.reference_row(num_clients=50, max_colluders=15, max_stragglers=s)
          for s in (0, 10, 20, 30)]
    assert np.all(np.diff([r["sigma_u"] for r in ss]) > 0)
    assert np.all(np.diff([r["sigma_k"] for r in ss]) < 0)


@pytest.mark.parametrize("row", [r for r in REFERENCE if not math.isnan(r[-1])],
                         ids=lambda r: f"C{r[0]}_S{r[1]}")
def test_aggregate_noise_ordering(row):
    """E[v]: SMPC+DP < LightDP-FL <= LDP (why Fig. 3's SMPC ordering cannot hold per round)."""
    kw = dict(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=row[0],
              max_stragglers=row[1], sensitivity=1.0, mode="paper")
    ev = {s: L.design(scheme=s, **kw).expected_variance() for s in L.SCHEMES}
    assert ev["smpc_dp"] < ev["lightdp"] <= ev["ldp"]


def test_smpc_undefined_without_honest_survivors():
    with pytest.raises(validate.JaxflValueError, match="undefined"):
        L.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=40, max_stragglers=10,
                 sensitivity=1.0, scheme="smpc_dp")


# -------------------------------------------------------------------- accounting (I14)


@pytest.mark.parametrize("eps,want", [(3, 2.4779), (6, 5.4896), (9, 8.9153)])
def test_paper_calibration_exact_epsilon_at_1e5(eps, want):
    d = L.design(epsilon=eps, delta=1e-5, num_clients=50, max_colluders=10, max_stragglers=10,
                 sensitivity=0.01, rounds=150, scheme="ldp", mode="paper")
    assert d.exact_epsilon() == pytest.approx(want, abs=1e-4)
    strict = L.design(epsilon=eps, delta=1e-5, num_clients=50, max_colluders=10,
                      max_stragglers=10, sensitivity=0.01, rounds=150, scheme="ldp")
    assert strict.scale == 1.0 and strict.sigma_u == d.sigma_u


def test_paper_calibration_fails_exact_accounting_at_eps9_delta1e2():
    kw = dict(epsilon=9.0, delta=1e-2, num_clients=50, max_colluders=10, max_stragglers=10,
              sensitivity=1.0, rounds=150, scheme="ldp")
    paper = L.design(mode="paper", **kw)
    assert paper.exact_epsilon() == pytest.approx(9.5356, abs=1e-4)
    r = L.accountant(paper).report(150, 1e-2)
    assert not r.details["paper_claim_holds"]
    assert r.details["epsilon_paper"] == pytest.approx(9.0, rel=1e-12)
    strict = L.design(mode="strict", **kw)
    assert strict.scale > 1.0 and strict.mode == "strict"
    assert strict.exact_epsilon() <= 9.0
    assert strict.exact_epsilon() == pytest.approx(9.0, abs=1e-6)
    # The strict noise is also accepted by dp-accounting's PLD accountant (pessimistic).
    pld = accountants.epsilon(strict.dp_event(150), 1e-2, accountant="pld")
    assert pld == pytest.approx(9.0, abs=0.02)


@pytest.mark.parametrize("C_bar,S_bar,v,z,eps", [(10, 10, 0.77885, 1.8662, 2.1535),
                                                 (40, 10, 0.95578, 1.6846, 2.4156),
                                                 (15, 0, 0.59741, 2.1308, 1.8571)])
def test_lightdp_exact_accounting_at_optimum(C_bar, S_bar, v, z, eps):
    d = L.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=C_bar,
                 max_stragglers=S_bar, sensitivity=1.0, rounds=1, mode="paper")
    assert d.v_exact_max * d.sigma_0**2 == pytest.approx(v, abs=1e-5)
    assert d.noise_multiplier == pytest.approx(z, abs=1e-4)
    assert d.exact_epsilon() == pytest.approx(eps, abs=1e-4)
    assert d.noise_multiplier >= d.paper_noise_multiplier


@pytest.mark.parametrize("rounds", [1, 25])
def test_exact_epsilon_cross_checked_against_pld_and_rdp(rounds):
    d = L.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=10, max_stragglers=10,
                 sensitivity=0.5, rounds=rounds)
    analytic = d.exact_epsilon()
    pld = accountants.epsilon(d.dp_event(rounds), 1e-5, accountant="pld")
    rdp = accountants.epsilon(d.dp_event(rounds), 1e-5, accountant="rdp")
    assert analytic <= pld <= analytic + 0.02
    assert rdp >= analytic


def test_exact_privacy_loss_distribution_by_simulation():
    """Monte Carlo of the log-likelihood ratio of the colluders' view (N = 6, C = {0}, S = {})."""
    N, k, u, Delta = 6, 0.4, 1.0, 1.0
    I1, Cm = L.view_covariance(np.full((N, N), math.sqrt(k)), np.full(N, math.sqrt(u)), [0], [])
    rng = np.random.default_rng(0)
    x = rng.multivariate_normal(np.zeros(I1.size), Cm, size=200_000)
    shift = np.zeros(I1.size)
    shift[0] = Delta
    p = stats.multivariate_normal(np.zeros(I1.size), Cm)
    loss = p.logpdf(x) - p.logpdf(x + shift)
    ve = float(L.v_exact(1, 0, k, u, N))
    vp = float(L.v_paper(1, 0, k, u, N))
    tol = 4 * math.sqrt(2 / x.shape[0])
    assert loss.var() == pytest.approx(ve, rel=tol)
    assert loss.mean() == pytest.approx(0.5 * ve, abs=4 * math.sqrt(ve / x.shape[0]))
    assert vp > ve * (1 + 3 * tol)  # the paper's variance is distinguishably larger


def test_binomial_link_failure_pmf():
    assert 1 - L.binomial_pmf(50, 0.05, 50)[:11].sum() == pytest.approx(2.96e-5, rel=1e-2)
    assert L.mu_of(L.binomial_pmf(50, 0.05, 10), 50) == pytest.approx(2.5508, abs=1e-4)


def test_dp_event_is_composed_gaussian():
    d = L.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=10, max_stragglers=10,
                 sensitivity=1.0, rounds=7)
    ev = d.dp_event(7)
    assert ev == events.repeated(events.gaussian(d.noise_multiplier), 7)
    assert d.exact_epsilon(7) == pytest.approx(
        conversions.gaussian_epsilon(math.sqrt(7) / d.noise_multiplier, 1e-5))
    assert d.mode == "strict" and L.accountant(d).dp_event(7) == ev


@pytest.mark.parametrize("kw,err", [
    (dict(epsilon=0.0), validate.PrivacyParameterError),
    (dict(delta=1.5), validate.PrivacyParameterError),
    (dict(max_colluders=50), validate.JaxflValueError),
    (dict(max_stragglers=-1), validate.JaxflValueError),
    (dict(mode="loose"), validate.JaxflValueError),
    (dict(composition="sqrt"), validate.JaxflValueError),
    (dict(sensitivity=-1.0), validate.PrivacyParameterError),
    (dict(straggler_pmf=[0.5, 0.6]), validate.JaxflValueError),
])
def test_bad_input(kw, err):
    base = dict(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=10, max_stragglers=10,
                sensitivity=1.0)
    with pytest.raises(err):
        L.design(**{**base, **kw})


def test_literal_sqrt_t_variance_scaling_is_repaired_by_strict_mode():
    """Footnote 3 read literally (variance x sqrt(T)) under-noises T rounds: strict fixes it."""
    kw = dict(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=10, max_stragglers=10,
              sensitivity=1.0, rounds=100, composition="sqrt_T_var")
    paper = L.design(mode="paper", **kw)
    strict = L.design(mode="strict", **kw)
    assert paper.exact_epsilon() > 3.0 * 2  # far above nominal over 100 rounds
    assert strict.scale > 1.0 and strict.exact_epsilon() == pytest.approx(3.0, abs=1e-6)
    assert strict.gamma == paper.gamma
    # sqrt_T_std is conservative at delta = 1e-5 (exact eps < 3), so the exactly calibrated
    # strict sqrt_T_var design sits between the literal and the sqrt(T)-std noise.
    std = L.design(mode="strict", **{**kw, "composition": "sqrt_T_std"})
    assert paper.sigma_u < strict.sigma_u < std.sigma_u


# ----------------------------------------------------------------- the accountant (reports)


def _gdp(z, t, delta):
    """Independent closed form: (eps, delta) of a mu-GDP mechanism, mu = sqrt(t) / z, solved
    from delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong-Roth-Su)."""
    mu = math.sqrt(t) / z
    f = lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(
        -e / mu - mu / 2) - delta
    return optimize.brentq(f, 0.0, 200.0, xtol=1e-12)


@pytest.mark.parametrize("scheme", ["lightdp", "ldp", "smpc_dp"])
@pytest.mark.parametrize("mode", ["strict", "paper"])
def test_accountant_headline_equals_closed_forms(scheme, mode):
    """Strict headline = GDP of the worst view (closed form, independent of the library);
    paper headline = the nominal epsilon the design targeted; both labelled."""
    d = L.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=10, max_stragglers=10,
                 sensitivity=0.02, rounds=40, scheme=scheme, mode=mode)
    acc = L.accountant(d)
    assert (acc.mode, acc.sound, acc.unit) == ("strict", True, "client")
    paper = acc.other_modes()["paper"]
    assert (paper.mode, paper.sound) == ("paper", False)
    assert paper.other_modes()["strict"].epsilons([40], 1e-5)[0] == acc.epsilons([40], 1e-5)[0]
    # Worst view by brute force over (C, n2) from the stds alone.
    N, k, u = 50, d.sigma_k**2, d.sigma_u**2
    if scheme == "lightdp":
        ve = max(float(L.v_exact(c, n2, k, u, N)) for c in range(11) for n2 in range(11))
    else:
        ve = 1.0 / (u * (1 if scheme == "ldp" else 30))
    z = 1.0 / (math.sqrt(ve) * d.sensitivity)
    curve = acc.epsilons([0, 1, 10, 40], 1e-5)
    assert curve[0] == 0.0
    for t, e in zip([1, 10, 40], curve[1:], strict=True):
        assert e == pytest.approx(_gdp(z, t, 1e-5), abs=1e-6)
    r = acc.report(40, 1e-5)
    assert r.epsilon == pytest.approx(_gdp(z, 40, 1e-5), abs=1e-6)
    assert r.epsilon <= 3.0 + 1e-9  # strict designs (and the paper's at delta=1e-5) hold
    assert r.dp_event.count == 40
    assert r.dp_event.event.noise_multiplier == pytest.approx(z, rel=1e-12)
    assert r.details["sigma_u"] == d.sigma_u and r.details["gamma"] == pytest.approx(d.gamma)
    # Paper mode: c(delta) Delta sqrt(max V_paper) sqrt(T) = the nominal target at the design.
    assert paper.report(40, 1e-5).epsilon == pytest.approx(3.0 / d.scale, rel=1e-9)
    assert paper.report(40, 1e-5).dp_event is None


def test_accountant_paper_mode_unsound_where_the_spec_shows_it():
    """eps = 9, delta = 1e-2, T = 150: the paper claims 9, the exact view 9.5356."""
    d = L.design(epsilon=9.0, delta=1e-2, num_clients=50, max_colluders=10, max_stragglers=10,
                 sensitivity=1.0, rounds=150, scheme="ldp", mode="paper")
    reports = L.accountant(d).other_modes()["paper"].report(150, 1e-2), L.accountant(d).report(
        150, 1e-2)
    paper, strict = reports
    assert paper.mode == "paper" and paper.sound is False
    assert paper.epsilon == pytest.approx(9.0, rel=1e-12)
    assert strict.sound and strict.epsilon == pytest.approx(9.5356, abs=1e-4)
    assert strict.epsilon == pytest.approx(_gdp(1.0 / (d.sensitivity / d.sigma_u), 150, 1e-2),
                                           abs=1e-6)
    # ... and the PLD accountant of the report's DpEvent agrees (dp-accounting, independent).
    assert accountants.epsilon(strict.dp_event, 1e-2, accountant="pld") == pytest.approx(
        strict.epsilon, abs=0.02)


def test_accountant_worst_view_matches_brute_force_subsets():
    """Small N: the accountant's worst V equals the enumeration over all colluder and
    straggler subsets (Lemma 1 with uniform variances)."""
    acc = L.LightDPAccountant(scheme="lightdp", sigma_u=1.0, sigma_k=0.6, num_clients=6,
                              max_colluders=2, max_stragglers=2, sensitivity=1.0)
    bf = L.brute_force_worst(np.full((6, 6), 0.6), np.ones(6), max_colluders=2,
                             max_stragglers=2)
    assert acc.view["v_exact"] == pytest.approx(bf["v_exact"], rel=1e-12)
    assert acc.view["v_paper"] == pytest.approx(bf["v_paper"], rel=1e-12)
    with pytest.raises(validate.JaxflValueError, match="SMPC"):
        L.LightDPAccountant(scheme="smpc_dp", sigma_u=1.0, sigma_k=0.0, num_clients=6,
                            max_colluders=3, max_stragglers=3, sensitivity=1.0)


def test_sensitivity_conventions():
    assert L.sensitivity(clip_norm=0.5, examples_per_client=64) == pytest.approx(1 / 64)
    assert L.sensitivity(clip_norm=0.5, examples_per_client=64, mode="replace") == 1.0
    with pytest.raises(validate.JaxflValueError):
        L.sensitivity(clip_norm=0.5, examples_per_client=64, mode="add")


# ------------------------------------------------- the reproduction's tables (docs/reproduction)


def test_design_table_matches_the_committed_page():
    """Two cells of docs/reproduction/lightdp.md's design table (N 50, T 20, Delta 1/64,
    delta 1e-5): Example 1's gamma_0 and stds, the exact epsilons and E[v]; SMPC+DP without an
    honest uploader is nan."""
    rows = L.design_table((("II", 10, 10), ("II", 40, 10)), (3, 9), delta=1e-5,
                          sensitivity=0.015625, rounds=20)
    assert [(r["C"], r["S"], r["epsilon"]) for r in rows] == [(10, 10, 3), (10, 10, 9),
                                                              (40, 10, 3), (40, 10, 9)]
    r = rows[0]
    assert (r["sigma_u"], r["sigma_k"], r["gamma"]) == pytest.approx(
        (0.57545, 0.16241, 0.079656), abs=5e-6)
    assert (r["exact_paper"], r["exact_strict"], r["scale"]) == pytest.approx(
        (2.1535, 2.1535, 1.0), abs=5e-5)
    assert r["ev"] == pytest.approx([0.010472, 0.022333, 0.000744], abs=5e-7)
    assert rows[3]["exact_strict"] == pytest.approx(8.6731, abs=5e-5)
    assert math.isnan(rows[3]["ev"][2]) and rows[3]["ev"][1] == pytest.approx(0.022333, abs=5e-7)


def test_calibration_table_matches_the_committed_page():
    """The paper's LDP calibration over 150 rounds: holds at delta 1e-5, fails at 1e-2, eps 9
    (exact 9.5356), where strict mode scales the noise up."""
    rows = L.calibration_table((3, 9), (1e-5, 1e-2), rounds=150)
    assert [(r["delta"], r["epsilon"]) for r in rows] == [(1e-5, 3), (1e-5, 9), (1e-2, 3),
                                                          (1e-2, 9)]
    assert [r["exact"] for r in rows] == pytest.approx([2.4779, 8.9153, 2.0773, 9.5356],
                                                       abs=5e-5)
    assert [r["scale"] == 1.0 for r in rows] == [True, True, True, False]


def test_example1_equals_the_reference_table_and_matches_count_cells():
    """EXAMPLE1 is REFERENCE's (gamma_0, sigma_U/sigma_0, sigma_K/sigma_0) at the design cells;
    rows equal to it match every cell; a row off by 1e-5 in one std (twice the printed
    precision), or a missing cell, is a miss."""
    ref = {(r[0], r[1]): (r[3], r[5], r[6]) for r in REFERENCE}
    assert L.EXAMPLE1 == {cell: ref[cell] for cell in L.EXAMPLE1}
    assert [(c, s) for _, c, s in L.DESIGN_CELLS] == list(L.EXAMPLE1)
    rows = [dict(C=c, S=s, epsilon=e, gamma=g, sigma_u=u, sigma_k=k)
            for (c, s), (g, u, k) in L.EXAMPLE1.items() for e in L.PAPER_EPSILONS]
    assert L.example1_matches(rows) == (4, 4)
    rows[1] = dict(rows[1], sigma_k=rows[1]["sigma_k"] + 1e-5)  # one epsilon of cell (10, 10)
    assert L.example1_matches(rows) == (3, 4)
    assert L.example1_matches(rows[3:]) == (3, 4)
    # example1_check: the count and the Prop. 1 constraint's largest deviation, either sign
    rows = [dict(r, constraint=1.0 + 1e-12 * (i % 3 - 1)) for i, r in enumerate(rows)]
    rows[5] = dict(rows[5], constraint=1.0 - 3e-10)
    assert L.example1_check(rows) == dict(match=3, cells=4, dev=pytest.approx(3e-10, rel=1e-5))


def test_paper_designs_match_example1_and_the_committed_calibration():
    """The page's design cells at its run (N 50, T 20, Delta 1/64, delta 1e-5) reproduce every
    Example 1 cell, and the calibration over 150 rounds is the committed exact epsilons."""
    designs = L.paper_designs(delta=1e-5, rounds=20, sensitivity=0.015625)
    assert len(designs) == 12 and L.example1_matches(designs) == (4, 4)
    checks = L.paper_calibration()
    assert [(r["delta"], r["epsilon"]) for r in checks] == [
        (d, e) for d in (1e-5, 1e-2) for e in (3, 6, 9)]
    assert [checks[i]["exact"] for i in (0, 2, 3, 5)] == pytest.approx(
        [2.4779, 8.9153, 2.0773, 9.5356], abs=5e-5)
    assert [r["scale"] for r in checks[:5]] == [1.0] * 5
    assert checks[5]["scale"] == pytest.approx(1.0406, abs=5e-5) and L.CHECK_ROUNDS == 150
    assert [r["meets"] for r in checks] == [True] * 5 + [False]  # eps 9 at delta 1e-2 fails


def test_calibration_numbers_on_hand_made_rows():
    """Each number read from its own (delta, epsilon) check, in the order exact_numbers.json
    keeps. Wrong implementation caught: the deltas swapped (eps9 at 1e-2 read from 1e-5), the
    scale read from the exact column, or a row picked by position."""
    checks = [dict(delta=d, epsilon=e, exact=10 * e + i, scale=1 + i / 10)
              for i, d in enumerate((1e-2, 1e-5)) for e in (9, 6, 3)]
    assert L.calibration_numbers(checks) == {
        "exact_1e-5_eps3": 31, "exact_1e-5_eps6": 61, "exact_1e-5_eps9": 91,
        "exact_1e-2_eps9": 90, "strict_scale_1e-2_eps9": 1.0}
    assert list(L.calibration_numbers(checks)) == [
        "exact_1e-5_eps3", "exact_1e-5_eps6", "exact_1e-5_eps9", "exact_1e-2_eps9",
        "strict_scale_1e-2_eps9"]


def test_calibration_claim_on_the_committed_numbers():
    """The summary's claim on the (rounded) calibration numbers: it holds at 1e-5 while every
    exact epsilon is at most its nominal one, at 1e-2 while the eps-9 one is. Wrong
    implementation caught: a strict inequality (an exact epsilon equal to its target is no
    violation), or the 1e-5 verdict taken from one epsilon only."""
    x = {"exact_1e-5_eps3": 2.4779, "exact_1e-5_eps6": 5.4896, "exact_1e-5_eps9": 8.9153,
         "exact_1e-2_eps9": 9.5356, "strict_scale_1e-2_eps9": 1.0406}
    c = L.calibration_claim(x)
    assert c == dict(nominal=[2.4779, 5.4896, 8.9153], eps9=9.5356, scale=1.0406, holds_5=True,
                     holds_2=False)
    assert L.calibration_claim(x | {"exact_1e-5_eps6": 6.0, "exact_1e-2_eps9": 9.0})[
        "holds_5"] is True and L.calibration_claim(x | {"exact_1e-2_eps9": 9.0})["holds_2"]
    assert not L.calibration_claim(x | {"exact_1e-5_eps6": 6.0001})["holds_5"]


def test_calibration_findings_on_hand_made_rows():
    """Smallest-delta checks, the failing ones (exact > nominal), the (10, 10) cell at the
    smallest epsilon, gamma's range and the LightDP / SMPC+DP variance ratio (nan: skipped),
    computed by hand."""
    checks = [dict(delta=1e-5, epsilon=3, exact=2.5, scale=1.0),
              dict(delta=1e-2, epsilon=3, exact=3.0, scale=1.0),
              dict(delta=1e-2, epsilon=9, exact=9.5, scale=1.1)]
    designs = [dict(C=10, S=10, epsilon=9, gamma=0.2, ev=[1.0, 2.0, 0.5], exact_strict=9.0),
               dict(C=10, S=10, epsilon=3, gamma=0.1, ev=[1.0, 2.0, 0.25], exact_strict=2.4),
               dict(C=15, S=0, epsilon=3, gamma=0.1, ev=[1.0, 2.0, 0.5], exact_strict=2.9),
               dict(C=40, S=10, epsilon=3, gamma=0.05, ev=[3.0, 2.0, math.nan], exact_strict=3)]
    f = L.calibration_findings(checks, designs)
    assert f["low"] == checks[:1] and f["fail"] == checks[2:] and f["holds"] is True
    assert f["cell"] is designs[1] and (f["gamma_lo"], f["gamma_hi"]) == (0.05, 0.2)
    assert f["ratio"] == {(10, 10): 4.0, (15, 0): 2.0}
    assert (f["ratio_lo"], f["ratio_hi"], f["ratio_cell"]) == (2.0, 4.0, 4.0)
    assert f["worst_lower"] is True  # 2.4 (the cell's strict epsilon) < 2.5 (the check's)
    designs[1] = dict(designs[1], exact_strict=2.6)
    assert L.calibration_findings(checks, designs)["worst_lower"] is False
    assert L.calibration_findings([dict(checks[0], exact=3.01)], designs)["holds"] is False
