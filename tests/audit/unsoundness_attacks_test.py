"""Attacks behind the reproduction's unsoundness claims (issue 26, point 7), at test size.

Each attack runs the library's own mechanism and must exceed the paper's epsilon while staying
below the strict claim; each test also runs the attack where the claim is sound (or says which
wrong implementation it catches), so it cannot pass by construction."""

import math

import jax
import numpy as np
import pytest

from jaxfl import validate
from jaxfl.algorithms import uldp_data
from jaxfl.audit import bounds, gossip, subject_dp, uldp
from jaxfl.topology import graphs, mixing


def test_coupled_group_federation_moves_many_records():
    full, without, changed = uldp.coupled_group_federation(group_size=2, pairs=6, dim=2)
    assert changed == 13 and len(full.x) == 19 and len(without.x) == 18
    # Under per-user flags the same pair differs in the leaving user's record only.
    hist = lambda d: [dict(zip(*np.unique(d.user[d.silo == s], return_counts=True)))  # noqa
                      for s in range(d.num_silos)]
    a = uldp_data.bound_histogram(hist(full), 2, pointer="per_user")
    b = uldp_data.bound_histogram(hist(without), 2, pointer="per_user")
    assert sum(abs(x.get(u, 0) - y.get(u, 0)) for x, y in zip(a, b, strict=True)
               for u in set(x) | set(y)) == 1
    with pytest.raises(validate.JaxflValueError):
        uldp.coupled_group_federation(group_size=0, pairs=3, dim=2)


def test_uldp_group_with_the_authors_flags_exceeds_the_paper_epsilon():
    """Wrong implementation caught: bounding flags that do not couple users (tried once with
    the per-user pointer patched into ``bound_histogram``: the neighbours then differ in one
    record, and the same attack gives 0.00 < 2.97, the paper's group-2 epsilon), so the first
    assertion fails."""
    r = uldp.audit_uldp_group_coupled(group_size=2, pairs=6, noise_multiplier=4.0, rounds=2,
                                      trials=4000, delta=1e-3, key=jax.random.key(0))
    assert r.claimed["paper"] < r.epsilon_lb and math.isinf(r.claimed["strict"])
    assert r.info["changed_kept_records"] == 13


def test_gossip_thm4_reduction_is_exceeded_by_the_exact_view():
    """The exact plain-message view beats Thm. 4's epsilon (T = 6: Delta^2 3.99571 vs 3.75765).
    Wrong implementation caught: an observer that learns no more than the reduction (tried once
    with ``view="reduction"``, j's messages only: the bound is then 7.01 < 7.28, the paper's
    epsilon), so the first assertion fails."""
    W = mixing.max_degree(graphs.path(4))
    kw = dict(target=1, observer=2, T=6, noise_multiplier=1.0, trials=20_000, delta=1e-3,
              key=jax.random.key(1))
    r = gossip.audit_gossip_thm4(W, **kw)
    i = r.info
    assert r.claimed["paper"] < r.epsilon_lb <= r.claimed["strict"]
    assert i["delta_sq_exact"] == pytest.approx(3.99571, abs=5e-6)
    assert i["delta_sq_thm4"] == pytest.approx(3.75765, abs=5e-6)
    assert i["mu"] == pytest.approx(i["mu_from_sensitivity"], rel=1e-9)  # Jacobians vs Kalman
    assert abs(i["llr_std"] / i["mu"] - 1) < 0.02 and i["cp_bound"] < r.claimed["paper"]
    with pytest.raises(validate.JaxflValueError):
        gossip.audit_gossip_thm4(W, **dict(kw, observer=1))


def test_gaussian_bound_is_conservative_and_tight():
    rng = np.random.default_rng(0)
    for mu in (0.5, 2.0):
        pos, neg = rng.normal(mu, 1.0, 50_000), rng.normal(0.0, 1.0, 50_000)
        b, est = bounds.gaussian_epsilon_lower_bound(pos, neg, delta=1e-3)
        from jaxfl.accounting import conversions

        true = conversions.gaussian_epsilon(mu, 1e-3)
        assert est["mu_lower"] < mu and b.epsilon_lb < true < b.epsilon_lb + 0.2
        assert b.selection == "gaussian"


def test_user_ldp_at_the_papers_sigma_exceeds_eps_4():
    """Wrong implementation caught: a UserLDP step whose noise already covers the true 2C
    sensitivity and the s-fold user composition (tried once with the library's Gaussian noise
    scaled by 2 sqrt(s) / s^(1/4): the bound is then 1.74 < 4), so the second assertion
    fails."""
    r = subject_dp.audit_user_ldp(target_epsilon=4.0, num_users=4, nominal_rounds=8,
                                  trials=5_000, delta=1e-3, key=jax.random.key(2))
    assert r.claimed["paper"] == pytest.approx(4.0, abs=1e-3)
    assert 4.0 < r.epsilon_lb <= r.claimed["strict"]
    assert r.info["rounds"] == 4
