"""LightDP-FL masked uploads under the worst colluder/straggler sets: audit below the claims."""

import jax
import numpy as np
import pytest

from jaxfl.accounting import lightdp as lightdp_accounting
from jaxfl.audit import lightdp as audit_lightdp

CFG = dict(epsilon=2.0, delta=1e-2, num_clients=6, max_colluders=2, max_stragglers=1)


@pytest.fixture(scope="module")
def result():
    return audit_lightdp.audit_lightdp(**CFG, trials=12_000, key=jax.random.key(8))


def test_audit_below_strict_and_paper_claims(result):
    assert result.epsilon_lb <= result.claimed["strict"] <= result.claimed["paper"]
    assert result.epsilon_lb >= 0.6 * result.claimed["strict"], result


def test_audited_view_is_the_worst_admissible_view(result):
    """The audited configuration attains the brute-force maximum over all colluder and
    straggler subsets, and its covariance is the library's Lemma 1 covariance."""
    su, sk = result.info["sigma_u"], result.info["sigma_k"]
    N = CFG["num_clients"]
    pair = np.full((N, N), sk)
    worst = lightdp_accounting.brute_force_worst(pair, np.full(N, su),
                                                 max_colluders=CFG["max_colluders"],
                                                 max_stragglers=CFG["max_stragglers"])
    assert result.info["mu"] ** 2 == pytest.approx(worst["v_exact"], rel=1e-9)
    assert result.info["mu"] == pytest.approx(result.info["mu_design"], rel=1e-9)
    col = result.info["colluders"]
    _, Cm = lightdp_accounting.view_covariance(pair, np.full(N, su), col, col[:1])
    np.testing.assert_allclose(
        Cm, audit_lightdp.honest_covariance(num_clients=N, num_colluders=len(col), sigma_u=su,
                                            sigma_k=sk), rtol=1e-12)
