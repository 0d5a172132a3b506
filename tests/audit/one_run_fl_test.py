"""End-to-end one-run audits: a noise-free run leaks its canaries (large bound); the private
runs stay below their accountant's claim."""

import math

import pytest

from jaxfl.audit import one_run_fl

SMALL = dict(canaries=200, dim=256, rounds=3, real_clients=10, sampling_rate=1.0)


def test_dp_fedavg_one_run():
    free = one_run_fl.audit_dp_fedavg_one_run(**SMALL, noise_multiplier=0.0)
    assert free.bound.correct == free.bound.guesses == 20 and free.epsilon_lb > 1.5
    assert math.isinf(free.claimed["strict"])
    dp = one_run_fl.audit_dp_fedavg_one_run(**SMALL, noise_multiplier=3.0)
    assert dp.epsilon_lb <= dp.claimed["strict"] < 5.0
    assert dp.epsilon_lb < free.epsilon_lb


@pytest.mark.slow
def test_uldp_avg_one_run():
    free = one_run_fl.audit_uldp_avg_one_run(canaries=100, dim=128, rounds=2, real_users=8,
                                             noise_multiplier=0.0, k_pos=10)
    assert free.bound.correct == free.bound.guesses == 20 and free.epsilon_lb > 1.5
    dp = one_run_fl.audit_uldp_avg_one_run(canaries=100, dim=128, rounds=2, real_users=8,
                                           noise_multiplier=3.0, k_pos=10)
    assert dp.epsilon_lb <= dp.claimed["strict"]
    assert dp.to_dict()["method"] == "one_run" and "ULDP-AVG" in dp.name


def test_bad_input():
    with pytest.raises(ValueError, match="dim >= canaries"):
        one_run_fl.audit_dp_fedavg_one_run(canaries=300, dim=256)
    with pytest.raises(ValueError, match="k_pos"):
        one_run_fl.audit_uldp_avg_one_run(canaries=10, k_pos=6)
