"""HiGradAvgDP with a subject spread over users: the strict claim holds, the paper's claim
(item sampling rate q_i, sqrt(s) round cut) is exceeded."""

import jax
import pytest

from jaxfl.algorithms import subject_dp
from jaxfl.audit import subject_dp as audit_sdp


@pytest.fixture(scope="module")
def result():
    return audit_sdp.audit_higradavg(noise_multiplier=2.0, items_per_user=10, num_users=2,
                                     rounds=4, trials=12_000, delta=1e-3, key=jax.random.key(4))


def test_paper_claim_exceeded_strict_claim_holds(result):
    assert result.info["subject_inclusion"] > 5 * result.info["item_sampling_rate"]
    assert result.epsilon_lb > 2 * result.claimed["paper"]
    assert result.epsilon_lb <= result.claimed["strict"]


def test_canary_federation_layout():
    fd = audit_sdp.canary_federation(num_users=2, items_per_user=3, examples_per_user=5, dim=2)
    sid = fd.extras[subject_dp.SUBJECT_KEY]
    assert (sid[:, :3] == audit_sdp.CANARY_SUBJECT).all()
    assert len(set(sid[:, 3:].ravel().tolist())) == 4  # fillers are singleton subjects
