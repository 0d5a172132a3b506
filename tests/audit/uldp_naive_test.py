"""ULDP-NAIVE counterexample (issue 16 a): a user in every silo moves the sum by 2C|S|."""

import jax

from jaxfl.audit import uldp


def test_naive_attack_exceeds_the_paper_claim_not_the_strict_one():
    r = uldp.audit_uldp_naive(noise_multiplier=1.0, num_silos=3, rounds=1, trials=3000,
                              delta=1e-2, key=jax.random.key(0))
    assert r.info["mu_true"] == 2 * r.info["mu_paper"]
    assert r.claimed["paper"] < r.epsilon_lb <= r.claimed["strict"]
