"""Notebook 02 (overlapping groups, DP-OGL / DP-OGL+): structure and its small setting.

The printed privacy numbers are recomputed here without the library's accountant: the ring's
mechanism counts from its geometry by hand, the sampled-Gaussian RDP by numerical quadrature,
and the (epsilon, delta) conversions with dp-accounting (default recipe) and Opacus' formula
(paper recipe).
"""

import functools
import math

import numpy as np

from tests.notebooks import _run

STEM = "02_overlapping_groups"
MNIST = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz")

# The notebook's small setting: RI(40, 4), sigma = 2, pi = 0.7, delta = 1e-5; heatmap at
# t = 20 with S = 10; target 5 (group 0), attackers 7 (group 0), 15 (group 1), 25 (group 2).
N, M, BLOCK = 40, 4, 10
Q, SIGMA, DELTA = 0.7, 2.0, 1e-5
HEAT_T, HEAT_S = 20, 10
RHO_FAR = 2
DELAY_T = 30
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


@functools.cache
def _sgm_rdp(alpha):
    """RDP of one Poisson-sampled Gaussian at order alpha, by quadrature over the noise z.

    ``exp((alpha - 1) RDP) = E_{z ~ N(0, sigma^2)} [((1 - q) + q exp((2z - 1) / (2 sigma^2)))^alpha]``;
    the integrand peaks near ``z = alpha``, so it is integrated in log space around there.
    """
    from scipy import integrate

    def log_f(z):
        log_mix = np.logaddexp(math.log(1 - Q), math.log(Q) + (2 * z - 1) / (2 * SIGMA**2))
        return alpha * log_mix - z * z / (2 * SIGMA**2) - 0.5 * math.log(2 * math.pi * SIGMA**2)

    peak = log_f(float(alpha))
    value, _ = integrate.quad(lambda z: math.exp(log_f(z) - peak), -40 * SIGMA,
                              alpha + 40 * SIGMA, points=[0.0, float(alpha)], limit=500,
                              epsabs=0, epsrel=1e-12)
    return (math.log(value) + peak) / (alpha - 1)


def _eps_default(k):
    """dp-accounting's conversion of k-fold SGM RDP on its default order grid.

    Orders above 63 are left out: they are never optimal for these k (it would only raise
    epsilon, so a match shows the optimum lies below).
    """
    from dp_accounting.rdp import rdp_privacy_accountant

    if k == 0:
        return 0.0
    orders = [a for a in rdp_privacy_accountant.DEFAULT_RDP_ORDERS if a <= 63]
    rdp = np.array([k * _sgm_rdp(a) for a in orders])
    eps, _ = rdp_privacy_accountant.compute_epsilon(orders, rdp, DELTA)
    return eps


def _eps_paper(k):
    """Opacus >= 1.0 ``get_privacy_spent`` (Balle et al. 2020) on the Opacus order grid."""
    if k == 0:
        return 0.0
    a = np.array(OPACUS_ORDERS, dtype=float)
    rdp = np.array([k * _sgm_rdp(x) for x in OPACUS_ORDERS])
    return float(np.min(rdp + np.log((a - 1) / a) - (np.log(DELTA) + np.log(a)) / (a - 1)))


def _ring_membership():
    B = np.zeros((N, M), bool)
    for g in range(M):
        B[(g * BLOCK + np.arange(BLOCK + 1)) % N, g] = True
    return B


def test_structure():
    _run.check_structure(STEM)


def test_reference_rdp_matches_dp_accounting_at_integer_orders():
    # The quadrature used below agrees with dp-accounting where dp-accounting is exact.
    from dp_accounting.rdp import rdp_privacy_accountant

    orders = [2.0, 3.0, 8.0, 32.0]
    ref = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(Q, SIGMA, orders)
    np.testing.assert_allclose([_sgm_rdp(a) for a in orders], ref, rtol=1e-8)


# Executed now (slow) and as committed; _check_outputs is looked up when a test runs.
test_small_setting_runs, test_committed_outputs = _run.output_tests(
    STEM, lambda nb: _check_outputs(nb), MNIST)


def _check_outputs(nb):
    text = _run.outputs_text(nb)
    find = _run.find_number

    # Training: personalized accuracy well above chance (0.1) for both structures.
    for name in ("RI", "CL"):
        assert find(text, f"final test accuracy {name} =") > 0.2

    # Heatmap entries at t = 20, S = 10 (counts from the ring geometry, Theorem 1).
    k_t = math.ceil((HEAT_T - 1) / HEAT_S)
    counts = {"in-group": HEAT_T - 1, "neighbour-group": HEAT_S * max(0, k_t - 1),
              "opposite-group": HEAT_S * max(0, k_t - 2)}
    assert counts == {"in-group": 19, "neighbour-group": 10, "opposite-group": 0}
    for label, k in counts.items():
        np.testing.assert_allclose(find(text, f"{label} pair eps (default) ="), _eps_default(k),
                                   atol=2e-6)
        np.testing.assert_allclose(find(text, f"{label} pair eps (paper) ="), _eps_paper(k),
                                   atol=2e-6)
    assert find(text, "opposite-group pair eps (default) =") == 0.0  # before the delay
    assert math.isnan(find(text, "in-group pair eps DP-OGL+ ="))  # trusted under TM2
    np.testing.assert_allclose(find(text, "neighbour-group pair eps DP-OGL+ ="),
                               _eps_default(k_t - 1), atol=2e-6)  # one window mechanism
    assert find(text, "opposite-group pair eps DP-OGL+ =") == 0.0
    assert find(text, "max |default - paper| over pairs =") < 1e-3

    # Threat-model masks and the zero blocks, from the membership built here.
    B = _ring_membership().astype(int)
    share = (B @ B.T) > 0
    reach = (B @ ((B.T @ B) > 0) @ B.T) > 0  # i's groups at most one hop from n's groups
    np.testing.assert_equal(find(text, "DP-OGL, default recipe: excluded (NaN) pairs ="), N)
    np.testing.assert_equal(find(text, "DP-OGL+ (TM2), default recipe: excluded (NaN) pairs ="),
                            share.sum())
    np.testing.assert_equal(find(text, "zero-leakage pairs ="), (~reach).sum())  # first: DP-OGL

    # Propagation delay of the opposite-group pair: onset t* = S * rho + 2, zero before it.
    for S in (1, 2, 4):
        onset = S * RHO_FAR + 2
        for name, k_onset in (("DP-OGL", S), ("DP-OGL+", 1)):
            assert find(text, f"{name} onset t* (S={S}) =") == onset
            assert find(text, f"{name} max epsilon before onset (S={S}) =") == 0.0
            np.testing.assert_allclose(find(text, f"{name} epsilon at onset (S={S}) ="),
                                       _eps_default(k_onset), atol=2e-6)
        k_end = max(0, math.ceil((DELAY_T - 1) / S) - RHO_FAR)
        np.testing.assert_allclose(find(text, f"DP-OGL epsilon at t={DELAY_T} (S={S}) ="),
                                   _eps_default(S * k_end), atol=2e-4)
        np.testing.assert_allclose(find(text, f"DP-OGL+ epsilon at t={DELAY_T} (S={S}) ="),
                                   _eps_default(k_end), atol=2e-4)

    # DP-OGL+ as published (shared window updates) is flagged unsound; the default is sound.
    assert "sound (window_updates='local') = True" in text
    assert "sound (window_updates='shared') = False" in text

    assert _run.count_images(nb) >= 5
