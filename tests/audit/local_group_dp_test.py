"""LocalGroupDP batch-noise counterexample (issue 16 b): the noise scale reveals Z."""

import jax

from jaxfl.audit import subject_dp


def test_noise_scale_attack_exceeds_paper_and_stays_below_the_finite_strict_bound():
    r = subject_dp.audit_local_group_dp(target_epsilon=2.0, items=4, examples=8, batch_size=4,
                                        dim=64, trials=3000, delta=1e-2, key=jax.random.key(1))
    assert r.info["sigma_table"][1] > r.info["sigma_table"][0]
    assert r.claimed["paper"] == 2.0 and r.claimed["strict"] < float("inf")
    assert r.claimed["paper"] < r.epsilon_lb <= r.claimed["strict"]
