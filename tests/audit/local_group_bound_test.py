"""The finite LocalGroupDP (batch sigma_Z) epsilon of jaxfl.accounting.local_group_bound."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from jaxfl import validate
from jaxfl.accounting import local_group_bound as lg
from jaxfl.accounting import subject_dp_bounds


@pytest.mark.parametrize("sp,sq,mu,alpha,dim", [(1.3, 1.0, 0.7, 1.5, 1), (1.0, 1.3, 0.7, 3.0, 1),
                                                (1.2, 1.0, 0.0, 2.5, 3)])
def test_gaussian_rdp_matches_numerical_integral(sp, sq, mu, alpha, dim):
    def one_d(x, m):  # in log space (the densities underflow in the tails)
        return math.exp(alpha * stats.norm.logpdf(x, m, sp)
                        + (1 - alpha) * stats.norm.logpdf(x, 0, sq))

    # Isotropic: the d-dim integral factorises into coordinate 0 (shift) and d - 1 others.
    logint = math.log(integrate.quad(one_d, -25, 25, args=(mu,))[0]) + (dim - 1) * math.log(
        integrate.quad(one_d, -25, 25, args=(0.0,))[0])
    ref = logint / (alpha - 1)
    got = float(lg.gaussian_rdp_isotropic(alpha, shift=mu, sigma_p=sp, sigma_q=sq, dim=dim))
    assert got == pytest.approx(ref, rel=1e-6, abs=1e-9)


def test_inadmissible_order_is_infinite():
    # s*^2 = alpha * 1 + (1 - alpha) * 2 <= 0 for alpha >= 2.
    assert np.isinf(lg.gaussian_rdp_isotropic(2.5, shift=0.0, sigma_p=math.sqrt(2), sigma_q=1.0,
                                              dim=1))


def test_equal_sigmas_bound_the_subsampled_gaussian():
    """With one item and a constant sigma the mechanism IS the Poisson-subsampled Gaussian:
    the bound must not be below its exact RDP (dp-accounting)."""
    orders = np.array([2.0, 4.0, 8.0])
    ours = lg.local_group_batch_rdp(orders, group_noise_multipliers=[1.2], items=1,
                                    sampling_rate=0.2, model_dim=50)
    exact = subject_dp_bounds.step_rdp(0.2, 1.2, tuple(orders))
    assert np.all(ours >= exact - 1e-12)


def _eps_at(p, q, dx, delta):
    """Smallest eps with hockey-stick divergence <= delta (bisection on a density grid)."""
    lo, hi = 0.0, 20.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.sum(np.maximum(p - math.exp(mid) * q, 0.0)) * dx > delta \
            else (lo, mid)
    return hi


def test_bound_is_above_the_exact_one_step_curve():
    """d = 1, k = 2, q = 0.3, sigma = (1, 1.6): exact delta(eps) of the worst conditional pair
    (z0 = 1, aligned shifts), both directions, by quadrature; the RDP bound's epsilon at that
    delta must be at least the exact one."""
    sig, k, q = [1.0, 1.6], 2, 0.3
    x = np.linspace(-30, 30, 60_001)
    dx = x[1] - x[0]
    b = stats.binom.pmf(np.arange(k + 1), k, q)
    Q = stats.norm.pdf(x, 0, sig[0])
    P = b[0] * Q + b[1] * stats.norm.pdf(x, 1, sig[0]) + b[2] * stats.norm.pdf(x, 2, sig[1])
    delta = 1e-3
    exact = max(_eps_at(P, Q, dx, delta), _eps_at(Q, P, dx, delta))
    bound = lg.local_group_batch_epsilon(group_noise_multipliers=sig, items=k, sampling_rate=q,
                                         steps=1, delta=delta, model_dim=1)
    assert exact > 0.5 and bound >= exact


def test_finite_grows_with_model_size_and_rejects_decreasing_sigma():
    kw = dict(group_noise_multipliers=[0.69, 0.97, 1.2], items=3, sampling_rate=0.05,
              steps=100, delta=1e-5)
    e = [lg.local_group_batch_epsilon(model_dim=d, **kw) for d in (1, 100, 10_000)]
    assert all(np.isfinite(e)) and e[0] < e[1] < e[2]
    # Same sigma for every Z: no dimension term, so d does not matter.
    flat = dict(kw, group_noise_multipliers=[1.0])
    assert lg.local_group_batch_epsilon(model_dim=1, **flat) == pytest.approx(
        lg.local_group_batch_epsilon(model_dim=10_000, **flat))
    with pytest.raises(validate.PrivacyParameterError):
        lg.local_group_batch_epsilon(model_dim=5, **dict(kw, group_noise_multipliers=[1.0, 0.5]))
