"""Subject-level DP local rules (Marathe & Kanani v1, Alg. 1-3): oracles,
HiGradAvgDP's subject sensitivity (Lemma 3.7), LocalGroupDP's noise and the reported events."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxfl import tree as jtree
from jaxfl import validate
from jaxfl.accounting import accountants, conversions, report
from jaxfl.accounting import subject_dp as sda
from jaxfl.algorithms import base
from jaxfl.algorithms import subject_dp as sd
from jaxfl.data import federated
from jaxfl.models import Model
from tests import _tolerance, _toy

HYP = settings(derandomize=True, max_examples=25, deadline=None)


def subject_data(sizes=(12, 9, 15), num_subjects=5, dim=4, classes=3, seed=0, distinct=False):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(classes, dim)) * 2
    xs, ys, ss = [], [], []
    for n in sizes:
        y = rng.integers(0, classes, size=n)
        xs.append((centers[y] + rng.normal(size=(n, dim))).astype(np.float32))
        ys.append(y.astype(np.int32))
        ss.append(np.arange(n) if distinct else rng.integers(0, num_subjects, size=n))
    return federated.from_client_arrays(xs, ys, extras={"subject_id": ss})


def identity_grad_model(dim):
    """loss_j = <p, x_j>: the per-example gradient is x_j itself (any gradient layout)."""
    def apply(params, x, *, train=False, key=None):
        del train, key
        return x @ params["w"]

    return Model("identity", lambda k: {"w": jnp.zeros(dim)}, apply,
                 lambda out, y: out, lambda out, y: {"loss": out}, (dim,))


def run_round(alg, data, params, seed=0, round_index=0):
    state = alg.init(params)
    ri = alg.prepare(round_index, np.random.default_rng(seed))
    state, diag = jax.jit(alg.apply)(state, data.to_device(), ri, jax.random.key(seed))
    return state.params, diag, ri


def assert_tree_close(a, b, **kw):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(x, y, **kw)


# ---------------------------------------------------------------- batch statistics
_stats = jax.jit(sd.subject_batch_stats)


@HYP
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=1, max_size=24))
def test_subject_batch_stats_match_loop(rows):
    sid = np.zeros(24, np.int64)
    mask = np.zeros(24, bool)
    sid[:len(rows)] = [r[0] for r in rows]
    mask[:len(rows)] = [r[1] for r in rows]
    s = _stats(jnp.asarray(sid), jnp.asarray(mask))
    real = sid[mask]
    counts = np.array([np.sum(real == v) if m else 0 for v, m in zip(sid, mask, strict=True)])
    np.testing.assert_array_equal(s.counts, counts)
    np.testing.assert_allclose(s.weights, np.where(mask, 1 / np.maximum(counts, 1), 0))
    assert int(s.num_subjects) == len(set(real.tolist()))
    assert float(jnp.sum(s.weights)) == pytest.approx(len(set(real.tolist())))  # sum 1/c_j = K
    z = np.bincount(real).max(initial=0) if real.size else 0
    assert int(s.max_group) == z
    assert int(sd.max_multiplicity(sid, mask)) == z


# ---------------------------------------------------------------- Lemma 3.7 (property)
B_MAX, DIM = 16, 3


@jax.jit
def _identity_total(g, sid, mask):
    model = identity_grad_model(DIM)
    w = sd.subject_batch_stats(sid, mask).weights
    return sd.clipped_weighted_sum(lambda p, x, y: model.example_loss(p, x, y), model.init(None),
                                   g, jnp.zeros(B_MAX), w, clip_norm=1.0)[0]["w"]


@HYP
@given(st.data())
def test_higradavg_subject_contribution_at_most_c(data):
    B = data.draw(st.integers(1, B_MAX))
    sid = np.zeros(B_MAX, np.int32)
    sid[:B] = data.draw(st.lists(st.integers(0, 4), min_size=B, max_size=B))
    mask = np.zeros(B_MAX, bool)
    mask[:B] = data.draw(st.lists(st.booleans(), min_size=B, max_size=B))
    scale = data.draw(st.floats(0.01, 100.0))
    g = np.random.default_rng(B).normal(size=(B_MAX, DIM)).astype(np.float32) * scale
    C = 1.0
    full = _identity_total(g, sid, mask)
    clipped = g / np.maximum(1.0, np.linalg.norm(g, axis=1, keepdims=True) / C)
    loop = np.zeros(DIM)
    for a in set(sid[mask].tolist()):
        members = mask & (sid == a)
        g_a = clipped[members].mean(axis=0)
        assert np.linalg.norm(g_a) <= C * (1 + 1e-5)
        loop += g_a
        # Removing all of subject a's items moves the sum by at most C (Lemma 3.7).
        without = _identity_total(g, sid, mask & (sid != a))
        assert float(jnp.linalg.norm(full - without)) <= C * (1 + 1e-5)
    np.testing.assert_allclose(full, loop, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- per-example gradients
@pytest.mark.parametrize("microbatch", [None, 4])
def test_per_example_grads_equal_loop(microbatch):
    model = _toy.logreg(4, 3)
    params = model.init(jax.random.key(0))
    data = subject_data()
    x, y = data.x[0][:8], data.y[0][:8]
    w = jnp.linspace(0.2, 1.0, 8)
    C = 0.3
    loss = lambda p, xi, yi: model.example_loss(p, xi, yi)
    got, norms, _ = jax.jit(lambda p: sd.clipped_weighted_sum(
        loss, p, x, y, w, clip_norm=C, microbatch_size=microbatch))(params)
    want = jtree.zeros_like(params)
    grad = jax.jit(jax.grad(loss))
    for j in range(8):
        with jax.default_matmul_precision("highest"):  # like the clipped sum, on any backend
            gj = grad(params, x[j], y[j])
        nj = float(jtree.l2_norm(gj))
        assert norms[j] == pytest.approx(nj, rel=1e-5)
        want = jtree.add(want, jtree.scale(gj, float(w[j]) * min(1.0, C / nj)))
    assert_tree_close(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- oracles 3-6, 8
def _alg(method, data, **kw):
    kw = {"batch_size": 6, "local_steps": 3, "learning_rate": 0.5, "clip_norm": 0.5,
          "mode": "paper", **kw}
    if method not in ("fedavg",) and "noise_multipliers" not in kw \
            and "group_noise_multiplier" not in kw:
        kw["noise_multipliers"] = 0.8
    return sd.subject_dp(_toy.logreg(4, 3), data, method=method, **kw)


@functools.cache
def _step_fn(method):
    """One jitted noisy gradient per method; sigma and C are traced (one compile each)."""
    model = _toy.logreg(4, 3)

    def f(params, x, y, sid, mask, sigma, clip_norm, key):
        return sd.private_gradient(method, model, params, x, y, sid, mask, sigma, key,
                                   clip_norm=clip_norm, batch_size=x.shape[0])[0]

    return jax.jit(f)


def _batch(distinct=False, n=8, seed=0):
    data = subject_data(sizes=(n,), distinct=distinct, seed=seed)
    params = _toy.logreg(4, 3).init(jax.random.key(seed))
    return params, data.x[0], data.y[0], data.extras["subject_id"][0], data.mask[0]


def test_distinct_subjects_make_private_methods_coincide():
    params, x, y, sid, mask = _batch(distinct=True)
    args = (params, x, y, sid, mask, 0.8, 0.5, jax.random.key(3))
    item = _step_fn("local_item_dp")(*args)
    assert_tree_close(item, _step_fn("higradavg_dp")(*args), rtol=0, atol=0)
    # LocalGroupDP's gradient is LocalItemDP's; with Z = 1 its host-side sigma is sigma_{i,1}.
    data = subject_data(distinct=True)
    alg = _alg("local_group_dp", data, group_noise_multiplier=lambda u, z: 0.8 * z)
    ri = alg.prepare(0, np.random.default_rng(0))
    np.testing.assert_allclose(ri.sigma, 0.8)


def test_one_subject_batch_signal_is_mean_over_b():
    model = identity_grad_model(3)
    g = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32) * 4
    out, _ = jax.jit(lambda gg: sd.private_gradient(
        "higradavg_dp", model, model.init(None), gg, jnp.zeros(5), jnp.zeros(5, jnp.int32),
        jnp.ones(5, bool), 0.0, jax.random.key(0), clip_norm=1.0, batch_size=5))(jnp.asarray(g))
    clipped = g / np.maximum(1, np.linalg.norm(g, axis=1, keepdims=True))
    np.testing.assert_allclose(out["w"], clipped.mean(0) / 5, rtol=1e-5)
    assert np.linalg.norm(out["w"]) <= 1.0 / 5 * (1 + 1e-6)


def test_sigma0_no_clip_is_sgd_and_higradavg_is_not():
    params, x, y, sid, mask = _batch()
    sgd = _step_fn("fedavg")(params, x, y, sid, mask, 0.0, 1e9, jax.random.key(0))
    for m in ("local_item_dp", "user_ldp"):
        g = _step_fn(m)(params, x, y, sid, mask, 0.0, 1e9, jax.random.key(0))
        # SGD's gradient is a default-precision model pass, the clipped sum a full one.
        assert_tree_close(g, sgd, rtol=_tolerance.rtol(), atol=_tolerance.atol())
    hi = _step_fn("higradavg_dp")(params, x, y, sid, mask, 0.0, 1e9, jax.random.key(0))
    assert not np.allclose(hi["w"], sgd["w"], atol=1e-4)  # weights 1/c_j, subjects repeat


def test_user_ldp_signal_at_most_c():
    params, x, y, sid, mask = _batch()
    g = _step_fn("user_ldp")(params, x, y, sid, mask, 0.0, 0.01, jax.random.key(1))
    assert float(jtree.l2_norm(g)) <= 0.01 * (1 + 1e-6)


def test_scale_invariance():
    # Every clipped norm exceeds both C and kC: (C, eta) -> (kC, eta / k) gives the same step.
    params, x, y, sid, mask = _batch()
    for m in ("local_item_dp", "higradavg_dp", "user_ldp"):
        a = _step_fn(m)(params, x, y, sid, mask, 0.7, 1e-4, jax.random.key(2))
        b = _step_fn(m)(params, x, y, sid, mask, 0.7, 1e-3, jax.random.key(2))
        assert_tree_close(jtree.scale(a, 100.0), jtree.scale(b, 10.0), rtol=1e-4, atol=1e-7)


# ---------------------------------------------------------------- oracle 7: noise law
def _zero_model(dim):
    return Model("zero", lambda k: {"w": jnp.zeros(dim)},
                 lambda p, x, *, train=False, key=None: x @ p["w"] * 0.0,
                 lambda out, y: out, lambda out, y: {"loss": out}, (dim,))


@pytest.mark.parametrize("method", ["local_item_dp", "higradavg_dp", "user_ldp"])
def test_noise_std(method):
    d, B, sigma, C = 100_000, 8, 1.3, 0.7
    model = _zero_model(d)
    x = jnp.ones((B, d))
    g, _ = jax.jit(lambda k: sd.private_gradient(
        method, model, model.init(None), x, jnp.zeros(B), jnp.arange(B) % 3, jnp.ones(B, bool),
        sigma, k, clip_norm=C, batch_size=B))(jax.random.key(5))
    v = np.asarray(g["w"], np.float64)
    std = sigma * C if method == "user_ldp" else sigma * C / B
    assert abs(v.mean()) < 5 * std / math.sqrt(d)
    assert stats.kstest(v / std, "norm").pvalue > 1e-3
    for wrong in (2 / 3, 3 / 2):
        assert stats.kstest(v / (std * wrong), "norm").pvalue < 1e-6


# ---------------------------------------------------------------- LocalGroupDP noise
def _paper_local_group_dp():
    """Two users of 6 items with subject ids giving group sizes Z = 3 and 2; LocalGroupDP in
    paper mode with full batches, its noise multipliers from ``paper_group_table`` (epsilon 4
    at 1e-5 over 10 nominal rounds). Returns ``(subject ids, data, table, algorithm)``."""
    sid = [np.array([0, 0, 0, 1, 2, 3]), np.array([5, 5, 6, 6, 7, 8])]
    data = federated.from_client_arrays([np.zeros((6, 4), np.float32)] * 2,
                                        [np.zeros(6, np.int32)] * 2, extras={"subject_id": sid})
    fed = sd.federation_of(data, batch_size=6, local_steps=2)
    table = sda.paper_group_table(fed, target_epsilon=4.0, delta=1e-5, nominal_rounds=10)
    alg = sd.subject_dp(_toy.logreg(4, 3), data, method="local_group_dp", batch_size=6,
                        local_steps=2, learning_rate=0.1, mode="paper",
                        group_noise_multiplier=table)
    return sid, data, table, alg


def test_local_group_dp_sigma_follows_batch_group_and_conversion():
    # Full batches (n_i = B, fixed sampling): Z is each user's largest subject count.
    sid, data, table, alg = _paper_local_group_dp()
    ri = alg.prepare(0, np.random.default_rng(0))
    for u, z in ((0, 3), (1, 2)):
        want = sda.group_noise_multiplier(target_epsilon=4.0, delta=1e-5, group_size=z,
                                          sampling_rate=1.0, steps=20)
        np.testing.assert_allclose(ri.sigma[u], want, rtol=1e-6)
    # Realised noise on a zero-gradient model has std sigma_Z C / B.
    d, C = 50_000, 0.5
    zdata = federated.from_client_arrays([np.ones((6, d), np.float32)] * 2,
                                         [np.zeros(6, np.int32)] * 2, extras={"subject_id": sid})
    alg = sd.subject_dp(_zero_model(d), zdata, method="local_group_dp", batch_size=6,
                        local_steps=1, learning_rate=1.0, mode="paper", clip_norm=C,
                        group_noise_multiplier=lambda u, z: 0.5 * z, users_per_round=1)
    ri = alg.prepare(0, np.random.default_rng(3))
    state, _ = jax.jit(alg.apply)(alg.init(_zero_model(d).init(None)), zdata.to_device(), ri,
                                  jax.random.key(0))
    z = 3 if int(ri.users[0]) == 0 else 2
    v = np.asarray(state.params["w"], np.float64)
    assert stats.kstest(v / (0.5 * z * C / 6), "norm").pvalue > 1e-3
    assert stats.kstest(v / (0.5 * (z - 1) * C / 6), "norm").pvalue < 1e-6


# ---------------------------------------------------------------- oracles 8-10
@pytest.mark.slow
def test_users_vmapped_equal_single_user_rounds_mean_and_determinism():
    data = subject_data()
    params = _toy.logreg(4, 3).init(jax.random.key(2))
    alg = _alg("higradavg_dp", data)
    full, _, ri = run_round(alg, data, params, seed=4)
    again, _, _ = run_round(alg, data, params, seed=4)
    assert_tree_close(full, again, rtol=0, atol=0)  # bit-identical on CPU
    rule = jax.jit(sd.local_rule("higradavg_dp", _toy.logreg(4, 3), optimizer=optax.sgd(0.5),
                                 clip_norm=0.5, batch_size=6))
    keys = base.client_keys(jax.random.key(4), jnp.asarray(ri.users))
    per_user = [rule(params, data.x[u], data.y[u], data.extras["subject_id"][u], ri.idx[u],
                     ri.mask[u], ri.sigma[u], ri.active[u], keys[u])[0] for u in range(3)]
    mean = jtree.scale(jtree.add(jtree.add(per_user[0], per_user[1]), per_user[2]), 1 / 3)
    assert_tree_close(full, mean, rtol=_tolerance.rtol(), atol=_tolerance.atol())
    # s = 1: the server returns that user's parameters.
    one = _alg("higradavg_dp", data, users_per_round=1)
    p1, _, ri1 = run_round(one, data, params, seed=4)
    u = int(ri1.users[0])
    k1 = base.client_keys(jax.random.key(4), jnp.asarray(ri1.users))[0]
    solo = rule(params, data.x[u], data.y[u], data.extras["subject_id"][u], ri1.idx[0],
                ri1.mask[0], ri1.sigma[0], ri1.active[0], k1)[0]
    assert_tree_close(p1, solo, rtol=_tolerance.rtol(), atol=_tolerance.atol())
    sub = _alg("higradavg_dp", data, users_per_round=2).prepare(0, np.random.default_rng(1))
    assert sub.users.shape == (2,) and len(set(sub.users.tolist())) == 2


# ---------------------------------------------------------------- sampling
def test_batch_samplers():
    rng = np.random.default_rng(0)
    idx, mask = sd.sample_batches(rng, 20, batch_size=6, steps=50, capacity=6, sampling="fixed")
    assert mask.all() and all(len(set(r)) == 6 for r in idx) and idx.max() < 20
    cap = sd.poisson_batch_capacity([20], 6)
    idx, mask = sd.sample_batches(rng, 20, batch_size=6, steps=4000, capacity=cap,
                                  sampling="poisson")
    counts = mask.sum(1)
    assert abs(counts.mean() - 6) < 4 * math.sqrt(6 * 0.7 / 4000)
    assert all(len(set(r[m])) == m.sum() for r, m in zip(idx, mask, strict=True))


@pytest.mark.slow
def test_poisson_round_shapes_and_diagnostics():
    data = subject_data(sizes=(30, 25, 40))
    alg = _alg("higradavg_dp", data, mode="strict", microbatch_size=4)
    params = _toy.logreg(4, 3).init(jax.random.key(0))
    _, diag, ri = run_round(alg, data, params)
    assert ri.idx.shape[2] % 4 == 0 and ri.idx.shape[:2] == (3, 3)
    assert 0 < float(diag["num_subjects"]) <= 5 and float(diag["max_group"]) >= 1


# ---------------------------------------------------------------- events and modes
def test_paper_event_reproduces_target_and_strict_is_larger():
    data = subject_data(sizes=(40, 40, 40, 40), num_subjects=6)
    fed = sd.federation_of(data, batch_size=4, local_steps=2)
    sigma = sda.paper_noise_multiplier(fed, target_epsilon=4.0, delta=1e-5, nominal_rounds=8)
    rounds = sda.paper_rounds(8, 4)
    eps = {}
    for mode in ("paper", "strict"):
        alg = _alg("higradavg_dp", data, batch_size=4, local_steps=2, mode=mode,
                   noise_multipliers=sigma)
        assert alg.info["mode"] == mode
        eps[mode] = accountants.epsilon(alg.accountant.events()[0](rounds), 1e-5, accountant="rdp")
    assert eps["paper"] == pytest.approx(4.0, abs=1e-3)
    assert eps["strict"] > 2 * eps["paper"]
    # The algorithm's strict event (envelope subject) dominates every real subject.
    exact = sda.epsilon("higradavg_dp", fed, rounds=rounds, delta=1e-5, noise_multipliers=sigma)
    assert eps["strict"] >= exact.epsilon * (1 - 1e-9)
    # UserLDP without subject ids: a subject may sit at every user (no free epsilon).
    nosub = _toy.blobs(num_clients=4, dim=4, sizes=[40] * 4)
    u = sd.subject_dp(_toy.logreg(4, 3), nosub, method="user_ldp", batch_size=4, local_steps=2,
                      learning_rate=0.1, noise_multipliers=50.0)
    closed = conversions.gaussian_epsilon(2 * math.sqrt(4 * 2 * rounds) / 50.0, 1e-5)
    assert accountants.epsilon(u.accountant.events()[0](rounds), 1e-5, accountant="pld") == pytest.approx(
        closed, rel=1e-2)
    strict = _alg("local_group_dp", data, mode="strict",
                  group_noise_multiplier=lambda u, z: 1.0 + 0.2 * z)
    assert strict.accountant.events()[0](1).__class__.__name__ == "NonPrivateDpEvent"
    # Its strict headline is the variance-mismatch bound at the model's own d (from its params).
    d = jtree.num_params(_toy.logreg(4, 3).init(jax.random.key(0)))
    rep = strict.accountant.report(2, 1e-5)
    assert rep.details["model_dim"] == d and rep.sound and math.isfinite(rep.epsilon)
    assert rep.epsilon == pytest.approx(sda.epsilon(
        "local_group_dp", strict.accountant.fed, rounds=2, delta=1e-5, model_dim=d,
        group_noise_multiplier=lambda u, z: 1.0 + 0.2 * z).epsilon, rel=1e-12)


def test_bad_input():
    data = subject_data()
    with pytest.raises(validate.JaxflValueError, match="poisson"):
        _alg("higradavg_dp", data, mode="strict", sampling="fixed")
    with pytest.raises(validate.JaxflValueError, match="method"):
        _alg("dp_sgd", data)
    with pytest.raises(validate.PrivacyParameterError):
        _alg("local_item_dp", data, noise_multipliers=-1.0)
    with pytest.raises(validate.JaxflValueError, match="group_noise_multiplier"):
        sd.subject_dp(_toy.logreg(4, 3), data, method="local_group_dp", batch_size=4,
                      local_steps=1, learning_rate=0.1)
    nosub = _toy.blobs(num_clients=2, dim=4, sizes=[5, 6])
    with pytest.raises(validate.JaxflValueError, match="subject_id"):
        _alg("higradavg_dp", nosub)


# ---------------------------------------------------------------- engine contract
def test_traced_hparams_equal_built_values():
    data = subject_data()
    params = _toy.logreg(4, 3).init(jax.random.key(0))
    a = _alg("higradavg_dp", data, learning_rate=0.5, clip_norm=0.5)
    b = _alg("higradavg_dp", data, learning_rate=0.2, clip_norm=0.3)
    assert a.hparams == {"clip_norm": 0.5, "learning_rate": 0.5}
    ri = b.prepare(0, np.random.default_rng(0))
    dev, key, st0 = data.to_device(), jax.random.key(1), a.init(params)
    want, _ = jax.jit(b.apply)(st0, dev, ri, key)
    got, _ = jax.jit(lambda s, d, r, k, h: a.apply(s, d, r, k, hparams=h))(
        st0, dev, ri, key, base.bind_hparams(b))  # b's values, seen by b's accountant
    assert_tree_close(got.params, want.params, rtol=1e-6, atol=1e-7)
    other, _ = jax.jit(a.apply)(st0, dev, ri, key)
    assert not np.allclose(other.params["w"], want.params["w"])  # the hparams matter
    fixed = _alg("fedavg", data, optimizer=optax.sgd(0.1))
    assert fixed.hparams == {"clip_norm": 0.5}  # a given transformation: lr not traceable


def test_accountant_is_built_from_the_mechanism_values():
    data = subject_data(sizes=(40, 40, 40, 40), num_subjects=6)
    fed = sd.federation_of(data, batch_size=4, local_steps=2)
    alg = _alg("higradavg_dp", data, batch_size=4, local_steps=2, mode="strict",
               target_epsilon=4.0, nominal_rounds=8)
    acc = alg.accountant
    assert isinstance(acc, sda.SubjectDPAccountant) and acc.mode == "strict"
    sigma = sda.strict_noise_multiplier("higradavg_dp", fed, target_epsilon=4.0, delta=1e-5,
                                        rounds=sda.paper_rounds(8, 4))
    np.testing.assert_allclose(alg.info["noise_multipliers"], sigma)
    rep = acc.report(4, 1e-5)
    want = sda.epsilon("higradavg_dp", fed, rounds=4, delta=1e-5, noise_multipliers=sigma)
    assert rep.epsilon == want.epsilon <= 4.0 + 1e-6 and rep.per_unit.shape == (6,)
    paper = _alg("higradavg_dp", data, batch_size=4, local_steps=2, target_epsilon=4.0,
                 nominal_rounds=8)
    assert paper.accountant.report(4, 1e-5).epsilon == pytest.approx(4.0, abs=1e-3)
    assert not paper.accountant.sound and paper.accountant.other_modes()["strict"].sound
    fedavg = _alg("fedavg", data).accountant
    assert isinstance(fedavg, report.NonPrivateAccountant) and fedavg.unit == "subject"


def test_poisson_capacity_is_the_binomial_capacity():
    from jaxfl.data import sampling
    assert sd.poisson_batch_capacity([20, 50, 0], 6) == max(
        sampling.binomial_capacity(20, 0.3), sampling.binomial_capacity(50, 0.12))
    assert sd.poisson_batch_capacity([20], 6, multiple=4) % 4 == 0


def test_paper_group_dp_per_round_epsilon_equals_the_summarys(tmp_path):
    """LocalGroupDP (paper mode, batch policy) claims the max over the group sizes Z: the
    per-round epsilon in metrics.jsonl is the one summary.json reports (no state that
    ``prepare`` fills after the curve was logged), and ``prepare`` leaves the claim alone."""
    from jaxfl import training

    _, data, table, alg = _paper_local_group_dp()  # Z = 3 and 2
    before = alg.accountant.epsilons([1], 1e-5)[0]
    run = training.run(alg, data, params=_toy.logreg(4, 3).init(jax.random.key(0)), rounds=1,
                       seed=0, delta=1e-5, workdir=tmp_path, progress=False)
    assert run.history[-1]["epsilon"] == run.summary["epsilon"] == before
    # the claim covers the largest group met (Z = 3), not only Z = 1
    z3 = sda.paper_group_epsilon(table(0, 3), 1.0, 2 * math.sqrt(2), 1e-5, 3,
                                 alg.accountant._kw["orders"], "improved")
    assert before >= z3 * (1 - 1e-12)


@pytest.mark.parametrize("method", ["higradavg_dp", "user_ldp"])
def test_padded_data_and_round_inputs_compute_the_same_round(method):
    """A sweep batches points of different partitions (seeds) by padding their data's example
    axis and their round inputs (``paddable``, :meth:`RoundInput.pad_common`): the padded round
    is the unpadded one up to float rounding."""
    data = subject_data(sizes=(12, 9, 15))
    params = _toy.logreg(4, 3).init(jax.random.key(2))
    alg = _alg(method, data, mode="strict", sampling="poisson")
    assert alg.paddable
    ri = alg.prepare(0, np.random.default_rng(3))
    wider = ri._replace(idx=np.zeros(ri.idx.shape[:1] + (ri.idx.shape[1] + 1,
                                                         ri.idx.shape[2] + 3), np.int32))
    padded, other = sd.RoundInput.pad_common([ri, wider])
    assert padded.idx.shape == other.idx.shape == wider.idx.shape
    assert padded.sigma.shape == padded.active.shape == wider.idx.shape[:2]
    assert not padded.mask[:, -1].any() and not padded.mask[..., -3:].any()
    assert not padded.active[:, -1].any()
    stacked = sd.RoundInput.pad_common([jax.tree.map(lambda a: a[None], ri), wider])[0]
    assert stacked.idx.shape == (1,) + wider.idx.shape  # leading (points, rounds) axes
    apply = jax.jit(alg.apply)
    key = jax.random.key(5)
    ref, d_ref = apply(alg.init(params), data.to_device(), ri, key)
    got, d_got = apply(alg.init(params), federated.pad_examples(data, 20).to_device(), padded,
                       key)
    assert_tree_close(ref.params, got.params, rtol=_tolerance.rtol(), atol=_tolerance.atol())
    assert_tree_close(d_ref, d_got, rtol=_tolerance.rtol(), atol=_tolerance.atol())
