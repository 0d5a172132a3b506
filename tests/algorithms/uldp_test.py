"""ULDP-FL methods: oracles (weights, flags, sensitivity, noise calibration,
equivalences), vmap-vs-loop, NaN handling and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxfl import clipping, validate
from jaxfl import tree as jtree
from jaxfl.algorithms import base, uldp, uldp_data, uldp_local, uldp_silo
from jaxfl.models import Model
from tests import _tolerance, _toy

S, U, DIM, CLASSES = 3, 6, 4, 3


def _records(n=60, seed=0, silos=S, users=U):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    y = rng.integers(0, CLASSES, n).astype(np.int32)
    return uldp_data.UldpData(x, y, rng.integers(0, silos, n), rng.integers(0, users, n),
                              silos, users).validate()


def _pairs(data, min_length=32):
    return uldp_data.pair_data(data, min_length=min_length).to_device()


def _constant_model(dim=2000):
    """Loss independent of the parameters: every local delta and gradient is zero."""

    def init(key):
        del key
        return {"w": jnp.zeros(dim)}

    def apply(params, x, *, train=False, key=None):
        del train, key
        return jnp.zeros((x.shape[0], 1)) + 0.0 * params["w"][0]

    def loss(out, y):
        del y
        return jnp.zeros(out.shape[0]) + 0.0 * out[:, 0]

    return Model("constant", init, apply, loss, lambda o, y: {}, (DIM,))


def _avg(model, **kw):
    args = dict(num_silos=S, num_users=U, local_epochs=2, batch_size=64, local_lr=0.1,
                global_lr=1.0, clip_norm=1.0, noise_multiplier=1e-9)
    args.update(kw)
    return uldp.uldp_avg(model, **args)


def _run(alg, params, data, key=1, round_input=None):
    ri = alg.prepare(0, np.random.default_rng(0)) if round_input is None else round_input
    state, diag = jax.jit(alg.apply)(alg.init(params), data, ri, jax.random.key(key))
    return state.params, diag


def _close(a, b, rtol=None, atol=None):
    """Equal to float32 rounding; the compared runs train locally at the default matmul
    precision, so on GPUs / TPUs the tolerance is that of their default matmul."""
    rtol = _tolerance.rtol(float32=1e-5 if rtol is None else rtol)
    atol = _tolerance.atol(float32=1e-6 if atol is None else atol)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# Weights (oracles 1-3) and flags (oracles 4-5).
# ---------------------------------------------------------------------------------------------

AUTHORS_HIST = {0: {0: 3, 1: 1, 3: 3, 4: 1, 6: 2, 7: 2, 8: 3, 9: 2},
                1: {1: 2, 2: 5, 3: 2, 4: 2, 5: 2, 6: 3, 7: 3, 8: 2},
                2: {0: 2, 1: 2, 4: 2, 5: 3, 9: 3}}
AUTHORS_WEIGHTS = {0: {0: .6, 1: .2, 2: 0, 3: .6, 4: .2, 5: 0, 6: .4, 7: .4, 8: .6, 9: .4},
                   1: {0: 0, 1: .4, 2: 1, 3: .4, 4: .4, 5: .4, 6: .6, 7: .6, 8: .4, 9: 0},
                   2: {0: .4, 1: .4, 2: 0, 3: 0, 4: .4, 5: .6, 6: 0, 7: 0, 8: 0, 9: .6}}


def test_optimal_weights_authors_oracle():
    hist = np.zeros((3, 10), np.int64)
    for s, h in AUTHORS_HIST.items():
        for u, c in h.items():
            hist[s, u] = c
    w = uldp_data.optimal_weights(hist)
    for s in range(3):
        np.testing.assert_allclose(w[s], [AUTHORS_WEIGHTS[s][u] for u in range(10)], atol=1e-12)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(hist=st.lists(st.lists(st.integers(0, 5), min_size=7, max_size=7), min_size=1,
                     max_size=5))
def test_weight_invariants(hist):
    hist = np.asarray(hist)
    w = uldp_data.optimal_weights(hist)
    present = hist.sum(0) > 0
    np.testing.assert_allclose(w.sum(0)[present], 1.0, atol=1e-12)
    assert np.all(w.sum(0)[~present] == 0)
    assert np.array_equal(w == 0, hist == 0) and np.all((w >= 0) & (w <= 1))
    uni = uldp_data.uniform_weights(hist)
    assert np.all(uni == 1 / hist.shape[0]) and np.all(uni.sum(0) <= 1 + 1e-12)


def test_user_sampling_zeroes_columns_only():
    rng = np.random.default_rng(3)
    mask = uldp_data.sample_users(rng, 1000, 0.3)
    assert set(np.unique(mask)) <= {0.0, 1.0} and 0.25 < mask.mean() < 0.35
    assert np.all(uldp_data.sample_users(rng, 10, 1.0) == 1)
    hist = np.arange(30).reshape(3, 10) % 4
    w = uldp_data.optimal_weights(hist) * mask[:10][None]
    kept = mask[:10] == 1
    np.testing.assert_array_equal(w[:, kept], uldp_data.optimal_weights(hist)[:, kept])
    assert np.all(w[:, ~kept] == 0)


FLAG_HIST = [{0: 1, 1: 3, 2: 5, 4: 1}, {0: 1, 1: 3, 2: 5, 4: 1}, {0: 3, 1: 2, 3: 3, 4: 1, 5: 5}]


def test_flags_authors_oracles():
    assert uldp_data.bound_histogram(FLAG_HIST, 3) == [
        {0: 1, 1: 1, 2: 2, 4: 1}, {0: 1, 1: 1, 2: 1, 4: 1}, {0: 1, 1: 1, 3: 3, 4: 1, 5: 3}]
    assert uldp_data.bound_histogram(FLAG_HIST, 4, min_unit=2) == [
        {0: 2, 1: 2, 2: 2}, {0: 2, 2: 2, 4: 2}, {1: 2, 4: 2, 3: 4, 5: 4}]


@settings(max_examples=25, deadline=None, derandomize=True)
@given(hist=st.lists(st.dictionaries(st.integers(0, 8), st.integers(1, 6), max_size=6),
                     min_size=1, max_size=4), k=st.integers(1, 9))
def test_flags_cap_every_user_at_k(hist, k):
    quota = uldp_data.bound_histogram(hist, k)
    totals, kept = {}, {}
    for h, qd in zip(hist, quota, strict=True):
        for u, c in h.items():
            totals[u] = totals.get(u, 0) + c
        for u, c in qd.items():
            assert c <= h[u]
            kept[u] = kept.get(u, 0) + c
    for u, total in totals.items():
        assert kept.get(u, 0) == min(k, total)


def _without(hist, user):
    return [{u: c for u, c in h.items() if u != user} for h in hist]


def _changed_records(a, b):
    """Kept records that differ between two flag sets (per silo, per user)."""
    return sum(abs(qa.get(u, 0) - qb.get(u, 0)) for qa, qb in zip(a, b, strict=True)
               for u in set(qa) | set(qb))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(hist=st.lists(st.dictionaries(st.integers(0, 6), st.integers(1, 5), max_size=6),
                     min_size=2, max_size=4), k=st.integers(1, 6), data=st.data())
def test_per_user_flags_change_at_most_k_records_when_a_user_leaves(hist, k, data):
    users = sorted({u for h in hist for u in h})
    if not users:
        return
    gone = data.draw(st.sampled_from(users))
    full = uldp_data.bound_histogram(hist, k, pointer="per_user")
    less = uldp_data.bound_histogram(_without(hist, gone), k, pointer="per_user")
    assert _changed_records(full, less) <= k  # only the leaving user's <= k kept records


def test_the_authors_global_pointer_couples_users():
    # Removing user 0 shifts the pointer, so user 1 keeps its record in another silo: three
    # records of the bounded silos change for a group size of 1.
    hist = [{0: 1, 1: 1}, {1: 1}]
    full = uldp_data.bound_histogram(hist, 1, pointer="global")
    less = uldp_data.bound_histogram(_without(hist, 0), 1, pointer="global")
    assert _changed_records(full, less) == 3
    assert _changed_records(uldp_data.bound_histogram(hist, 1, pointer="per_user"),
                            uldp_data.bound_histogram(_without(hist, 0), 1,
                                                      pointer="per_user")) == 1
    with pytest.raises(validate.JaxflValueError, match="pointer"):
        uldp_data.bound_histogram(hist, 1, pointer="random")


def test_strict_group_accounting_of_coupled_flags_is_inf():
    from jaxfl.accounting import uldp as acc

    kw = dict(silo_sizes=[40, 50], batch_size=8, local_epochs=1, noise_multiplier=5.0,
              group_size=2, user_records=[3, 0, 1])
    per_user = acc.GroupAccountant(**kw, bounding="per_user", mog=False).report(2, 1e-5)
    coupled = acc.GroupAccountant(**kw, bounding="global", mog=False).report(2, 1e-5)
    assert np.isfinite(per_user.epsilon) and np.isinf(coupled.epsilon) and coupled.sound
    np.testing.assert_array_equal(per_user.per_unit, [per_user.epsilon, 0.0, per_user.epsilon])
    assert np.isinf(coupled.per_unit[[0, 2]]).all() and coupled.per_unit[1] == 0
    paper = acc.GroupAccountant(**kw, bounding="global", mode="paper").report(2, 1e-5)
    assert np.isfinite(paper.epsilon) and not paper.sound  # the authors' number, labelled


def test_bound_records_keeps_everything_at_max_and_first_records():
    data = _records()
    k = uldp_data.group_size(uldp_data.histogram(data), "max")
    kept, keep = uldp_data.bound_records(data, k)
    assert keep.all() and len(kept.x) == len(data.x)
    kept2, keep2 = uldp_data.bound_records(data, 2)
    assert np.all(uldp_data.histogram(kept2).sum(0) <= 2)
    # Within a (silo, user) pair the kept records are the first ones in the silo's order.
    for s in range(S):
        for u in range(U):
            rows = np.flatnonzero((data.silo == s) & (data.user == u))
            flags = keep2[rows]
            assert np.all(flags[: flags.sum()])
    assert uldp_data.group_size(uldp_data.histogram(data), "median") >= 1
    with pytest.raises(validate.JaxflValueError):
        uldp_data.bound_records(_records(n=4, silos=4, users=1), 1)


# ---------------------------------------------------------------------------------------------
# Local training semantics.
# ---------------------------------------------------------------------------------------------

def _linear_loss(params, xb, yb, mb, key):
    del yb, key
    return jnp.sum(mb * (xb[:, 0] * 0 + 1.0) * jnp.sum(params["w"])) / jnp.maximum(mb.sum(), 1)


def test_epoch_trainer_steps_per_epoch_and_empty_unit():
    """Gradient 1 per step whatever the batch: the delta counts the steps, ceil(n/B) per epoch
    with the last partial batch kept."""
    train = jax.jit(uldp_local.epoch_trainer(_linear_loss, learning_rate=0.5, epochs=3,
                                             batch_size=2, length=8))
    params = {"w": jnp.zeros(1)}
    x, y = jnp.ones((8, 1)), jnp.zeros(8)
    for n in (0, 1, 2, 5, 8):
        delta, _, finite = train(params, x, y, jnp.arange(8) < n, jax.random.key(0))
        assert float(delta["w"][0]) == pytest.approx(-0.5 * 3 * (-(-n // 2)))
        assert bool(finite)


def test_epoch_trainer_full_batch_is_gradient_descent():
    model = _toy.logreg(DIM, CLASSES)
    data = _records(n=10)
    params = model.init(jax.random.key(0))
    train = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=0.3, epochs=4,
                                     batch_size=16, length=12)
    x = jnp.concatenate([jnp.asarray(data.x), jnp.zeros((2, DIM))])
    y = jnp.concatenate([jnp.asarray(data.y), jnp.zeros(2, jnp.int32)])
    mask = jnp.arange(12) < 10
    delta, _, _ = jax.jit(train)(params, x, y, mask, jax.random.key(5))
    p = params
    for _ in range(4):
        g = jax.grad(lambda q: model.batch_loss(q, x, y, mask))(p)
        p = jax.tree.map(lambda a, b: a - 0.3 * b, p, g)
    _close(delta, jtree.sub(p, params))


def test_nonfinite_steps_skipped_and_nonfinite_pairs_dropped():
    model = _toy.logreg(DIM, CLASSES)
    data = _records(n=40)
    x = data.x.copy()
    x[data.user == 2] = 1e30  # user 2's updates overflow to inf
    bad = data._replace(x=x)
    alg = _avg(model, local_lr=1e30)
    _, diag = _run(alg, model.init(jax.random.key(0)), _pairs(bad))
    assert float(diag["dropped_pairs"]) >= 1
    assert float(diag["dropped_pairs"]) <= float(diag["active_pairs"])


# ---------------------------------------------------------------------------------------------
# Vectorisation, sensitivity (oracle 7) and noise (oracle 8).
# ---------------------------------------------------------------------------------------------

def _unit(model, epochs=2, batch_size=4, lr=0.1):
    trainers = {}

    def unit_fn(params, x, y, mask, key):
        L = mask.shape[0]
        if L not in trainers:
            trainers[L] = uldp_local.epoch_trainer(uldp._batch_loss(model), learning_rate=lr,
                                                   epochs=epochs, batch_size=batch_size, length=L)
        return trainers[L](params, x, y, mask, key)

    return unit_fn


def _pair_contributions(model, params, data, key, weighting, C=0.5):
    """Per-pair w * clip(delta) computed one pair at a time (Python loop, same jitted unit)."""
    unit = jax.jit(_unit(model))
    pd = uldp_data.pair_data(data, min_length=16)
    hist = uldp_data.histogram(data)
    w = uldp_data.optimal_weights(hist) if weighting == "optimal" else \
        uldp_data.uniform_weights(hist)
    out = {}
    base_key = base.substream(key, "pairs")
    for b in pd.buckets:
        for i in range(b.index.shape[0]):
            if b.count[i] == 0:
                continue
            s, u = int(b.silo[i]), int(b.user[i])
            k = jax.random.fold_in(base.substream(base_key, "clients"), int(b.pair_id[i]))
            delta, _, _ = unit(params, pd.x[b.index[i]], pd.y[b.index[i]], b.mask[i], k)
            out[(s, u)] = jtree.scale(clipping.clip_pytree(delta, C)[0], w[s, u])
    return out


@pytest.mark.parametrize("weighting", ["uniform", "optimal"])
def test_vmapped_silo_sums_equal_per_pair_loop_and_sensitivity(weighting):
    model = _toy.logreg(DIM, CLASSES)
    data = _records(n=36, seed=1)
    params = model.init(jax.random.key(0))
    key = jax.random.key(7)
    f = jax.jit(lambda p, d, m, k: uldp.silo_sums(_unit(model), p, d, m, k, clip_norm=0.5,
                                                  weighting=weighting))
    sums, _ = f(params, _pairs(data, 16), jnp.ones(U), base.substream(key, "pairs"))
    per_pair = _pair_contributions(model, params, data, key, weighting)
    for s in range(S):
        ref = jtree.zeros_like(params)
        for (ps, _), v in per_pair.items():
            if ps == s:
                ref = jtree.add(ref, v)
        _close(jax.tree.map(lambda a, s=s: a[s], sums), ref)
    # Oracle 7: removing user u changes the pre-noise aggregate by sum_s w clip(delta), <= C.
    u = 3
    without, _ = f(params, _pairs(data.subset(data.user != u), 16), jnp.ones(U),
                   base.substream(key, "pairs"))
    diff = jax.tree.map(lambda a, b: jnp.sum(a, 0) - jnp.sum(b, 0), sums, without)
    expected = jtree.zeros_like(params)
    for (_, pu), v in per_pair.items():
        if pu == u:
            expected = jtree.add(expected, v)
    _close(diff, expected)
    assert float(jtree.l2_norm(diff)) <= 0.5 * (1 + 1e-5)


def _ks_ok(samples, std):
    return stats.kstest(samples / std, "norm").pvalue > 1e-3


@pytest.mark.parametrize("method", ["avg", "sgd", "naive"])
def test_noise_calibration(method):
    """Oracle 8: zero deltas, sigma = 3, C = 2: the summed noise has std sigma C (AVG/SGD) or
    sigma C |S| (NAIVE); KS accepts it and rejects 2/3 and 3/2 of it."""
    model = _constant_model()
    params = model.init(None)
    sigma, C = 3.0, 2.0
    data = _records(n=30)
    if method == "naive":
        alg = uldp_silo.uldp_naive(model, num_silos=S, local_epochs=1, batch_size=8,
                                   local_lr=0.1, global_lr=1.0, clip_norm=C,
                                   noise_multiplier=sigma)
        new, _ = _run(alg, params, uldp_data.silo_data(data).to_device())
        total = np.asarray(new["w"]) * S  # the server applied the silo mean
        std = sigma * C * S
    else:
        build = uldp.uldp_avg if method == "avg" else uldp.uldp_sgd
        kw = dict(local_epochs=1, batch_size=8, local_lr=0.1) if method == "avg" else {}
        alg = build(model, num_silos=S, num_users=U, global_lr=1.0, clip_norm=C,
                    noise_multiplier=sigma, **kw)
        new, _ = _run(alg, params, _pairs(data))
        sign = 1.0 if method == "avg" else -1.0
        total = sign * np.asarray(new["w"]) * U * S
        std = sigma * C
    assert _ks_ok(total, std)
    assert not _ks_ok(total, std * 2 / 3) and not _ks_ok(total, std * 1.5)


def test_per_silo_noise_std():
    params = {"w": jnp.zeros(3000)}
    z = uldp.silo_noise(params, jax.random.key(0), 4, 0.7)["w"]
    for s in range(4):
        assert _ks_ok(np.asarray(z[s]), 0.7)
    assert abs(np.corrcoef(np.asarray(z[0]), np.asarray(z[1]))[0, 1]) < 0.08


# ---------------------------------------------------------------------------------------------
# Equivalences (oracles 9-12) and sampling.
# ---------------------------------------------------------------------------------------------

def test_naive_equals_default_without_noise_and_clipping():
    model = _toy.logreg(DIM, CLASSES)
    data = uldp_data.silo_data(_records()).to_device()
    params = model.init(jax.random.key(0))
    kw = dict(num_silos=S, local_epochs=2, batch_size=4, local_lr=0.1, global_lr=1.5)
    a, _ = _run(uldp_silo.default(model, **kw), params, data)
    b, _ = _run(uldp_silo.uldp_naive(model, clip_norm=1e9, noise_multiplier=1e-17, **kw),
                params, data)
    _close(a, b)


def test_single_user_avg_equals_default():
    """Oracle 10: |U| = 1 owns every record, w = 1/|S|, full batches: ULDP-AVG with eta_g |S|
    equals DEFAULT with eta_g."""
    model = _toy.logreg(DIM, CLASSES)
    data = _records(n=30, users=1)._replace(num_users=1)
    params = model.init(jax.random.key(0))
    a, _ = _run(uldp_silo.default(model, num_silos=S, local_epochs=3, batch_size=64,
                                  local_lr=0.2, global_lr=1.5), params,
                uldp_data.silo_data(data).to_device())
    b, _ = _run(_avg(model, num_users=1, local_epochs=3, local_lr=0.2, global_lr=1.5 * S,
                     clip_norm=1e9, noise_multiplier=1e-17), params, _pairs(data))
    _close(a, b)


def test_avg_one_step_equals_sgd():
    """Oracle 11: Q = 1, B >= n: ULDP-AVG == ULDP-SGD with C' = C/eta_l, eta_g' = eta_g eta_l."""
    model = _toy.logreg(DIM, CLASSES)
    data = _records(n=40, seed=2)
    params = model.init(jax.random.key(0))
    eta_l, C = 0.05, 0.02
    a, _ = _run(_avg(model, local_epochs=1, local_lr=eta_l, clip_norm=C, global_lr=2.0,
                     weighting="optimal"), params, _pairs(data))
    b, _ = _run(uldp.uldp_sgd(model, num_silos=S, num_users=U, global_lr=2.0 * eta_l,
                              clip_norm=C / eta_l, noise_multiplier=1e-9, weighting="optimal"),
                params, _pairs(data))
    _close(a, b, rtol=1e-4)


def test_one_user_per_silo_avg_w_equals_per_silo_computation():
    """Oracle 12 / issue: every user in exactly one silo, w_opt = 1: ULDP-AVG-w is cross-device
    DP-FedAvg over silos, i.e. SILO-LEVEL-DP with eta_g' = eta_g |S| (|U| = |S|)."""
    model = _toy.logreg(DIM, CLASSES)
    rng = np.random.default_rng(4)
    n = 24
    silo = rng.integers(0, S, n)
    data = uldp_data.UldpData(rng.normal(size=(n, DIM)).astype(np.float32),
                              rng.integers(0, CLASSES, n).astype(np.int32), silo, silo, S, S)
    params = model.init(jax.random.key(0))
    a, _ = _run(_avg(model, num_users=S, weighting="optimal", clip_norm=0.3, global_lr=1.0 * S,
                     local_epochs=2), params, _pairs(data))
    b, _ = _run(uldp_silo.silo_level_dp(model, num_silos=S, local_epochs=2, batch_size=64,
                                        local_lr=0.1, global_lr=1.0, clip_norm=0.3,
                                        noise_multiplier=1e-9), params,
                uldp_data.silo_data(data).to_device())
    _close(a, b)


def test_sampling_q1_equals_unsampled_and_all_ones_mask_rescales():
    model = _toy.logreg(DIM, CLASSES)
    data = _pairs(_records())
    params = model.init(jax.random.key(0))
    w, _ = _run(_avg(model, weighting="optimal"), params, data)
    ws1, _ = _run(_avg(model, weighting="optimal", sampling_rate=1.0), params, data)
    _close(w, ws1, rtol=0, atol=0)
    q = 0.4
    ws, diag = _run(_avg(model, weighting="optimal", sampling_rate=q), params, data,
                    round_input=np.ones(U, np.float32))
    _close(jtree.sub(ws, params), jtree.scale(jtree.sub(w, params), 1 / q), rtol=1e-4)
    none, diag = _run(_avg(model, weighting="optimal", sampling_rate=q), params, data,
                      round_input=np.zeros(U, np.float32))
    _close(none, params, atol=1e-6)
    assert float(diag["active_pairs"]) == 0


def test_repo_compat_denominators_and_modes():
    model = _toy.logreg(DIM, CLASSES)
    paper = _avg(model, weighting="optimal")
    code = _avg(model, weighting="optimal", repo_compat=True)
    assert paper.info["denominator"] == U * S and paper.info["mode"] == "paper"
    assert code.info["denominator"] == pytest.approx(0.1 * U * S)
    assert code.info["mode"] == "repo_compat"
    assert _avg(model, sampling_rate=0.3, repo_compat=True).info["denominator"] == int(
        0.3 * U * S)
    assert _avg(model, repo_compat=True).info["denominator"] == U * S  # uniform: no q


def test_repo_compat_sgd_scaling():
    """The code's gradient equals the mean gradient divided by n for a pair with n <= B."""
    model = _toy.logreg(DIM, CLASSES)
    params = model.init(jax.random.key(0))
    x = jnp.asarray(_records(n=8).x)
    y = jnp.asarray(_records(n=8).y)
    mask = jnp.arange(8) < 5
    g, _, _ = uldp_local.pair_gradient(uldp._batch_loss(model), length=8)(params, x, y, mask,
                                                                         jax.random.key(0))
    gc, _, _ = uldp_local.pair_gradient(uldp._batch_loss(model), length=8, repo_compat=True,
                                        batch_size=64)(params, x, y, mask, jax.random.key(0))
    _close(gc, jtree.scale(g, 1 / 5))


# ---------------------------------------------------------------------------------------------
# DP-SGD silos (GROUP / RECORD), accounting events, bad input.
# ---------------------------------------------------------------------------------------------

def test_dp_sgd_noise_scale_and_group_event():
    """Silos with n <= B: q = 1, one step per epoch, E = n: delta = -lr N(0, sigma^2 C^2) / n."""
    model = _constant_model(3000)
    data = _records(n=24)
    sizes = np.bincount(data.silo, minlength=S)
    alg = uldp_silo.dp_sgd_silos(model, silo_sizes=sizes, local_epochs=1, batch_size=64,
                                 local_lr=0.5, global_lr=1.0, clip_norm=2.0, noise_multiplier=3.0,
                                 group_size=2)
    assert alg.info["sampling_rates"] == [1.0] * S
    new, diag = _run(alg, model.init(None), uldp_data.silo_data(data).to_device())
    # Mean over silos of independent noises with std lr sigma C / n_s.
    std = np.sqrt(np.sum((0.5 * 3.0 * 2.0 / sizes) ** 2)) / S
    assert _ks_ok(np.asarray(new["w"]), std)
    assert not _ks_ok(np.asarray(new["w"]), std * 1.5)
    assert int(diag["batch_overflow"]) == 0
    ev = alg.accountant.dp_event(3)
    assert len(ev.events) == S


def test_uldp_avg_event_independent_of_users_silos_clip_weights():
    """Oracle 20."""
    model = _toy.logreg(DIM, CLASSES)
    ref = _avg(model, noise_multiplier=5.0).accountant.dp_event(50)
    for kw in (dict(num_users=99), dict(num_silos=7), dict(clip_norm=3.0),
               dict(weighting="optimal")):
        assert _avg(model, noise_multiplier=5.0, **kw).accountant.dp_event(50) == ref
    naive = uldp_silo.uldp_naive(model, num_silos=S, local_epochs=1, batch_size=4, local_lr=0.1,
                                 global_lr=1.0, clip_norm=1.0, noise_multiplier=5.0)
    paper = uldp_silo.uldp_naive(model, num_silos=S, local_epochs=1, batch_size=4, local_lr=0.1,
                                 global_lr=1.0, clip_norm=1.0, noise_multiplier=5.0,
                                 accounting="paper")
    assert paper.accountant.dp_event(50) == ref
    assert naive.info["accounted_noise_multiplier"] == 2.5
    # The strict accountant is sound (sensitivity 2C|S|), the paper's is labelled unsound.
    assert naive.accountant.sound and naive.accountant.mode == "strict"
    assert not naive.accountant.other_modes()["paper"].sound
    assert paper.accountant.epsilons([50], 1e-5)[0] == pytest.approx(7.0774, abs=1e-4)


def test_every_builder_sets_an_accountant_and_traced_hparams():
    """The accountant comes from the builder's own values; apply takes traced hparams and a
    vmapped apply over two learning rates equals the two single applies."""
    model = _toy.logreg(DIM, CLASSES)
    data = _records(n=36, seed=2)
    sizes = np.bincount(data.silo, minlength=S)
    common = dict(local_epochs=1, batch_size=4, local_lr=0.1, global_lr=1.0)
    algs = {
        "avg": (_avg(model, noise_multiplier=2.0, sampling_rate=0.5), _pairs(data)),
        "sgd": (uldp.uldp_sgd(model, num_silos=S, num_users=U, global_lr=1.0, clip_norm=1.0,
                              noise_multiplier=2.0), _pairs(data)),
        "default": (uldp_silo.default(model, num_silos=S, **common),
                    uldp_data.silo_data(data).to_device()),
        "silo": (uldp_silo.silo_level_dp(model, num_silos=S, clip_norm=1.0,
                                         noise_multiplier=2.0, **common),
                 uldp_data.silo_data(data).to_device()),
        "group": (uldp_silo.dp_sgd_silos(model, silo_sizes=sizes, clip_norm=1.0,
                                         noise_multiplier=2.0, group_size=2,
                                         user_records=np.full(U, 3), group_mog=False,
                                         **common), uldp_data.silo_data(data).to_device()),
    }
    units = {"avg": "user", "sgd": "user", "default": "user", "silo": "silo", "group": "user"}
    params = model.init(jax.random.key(0))
    for name, (alg, dev) in algs.items():
        with self_subtest(name):
            assert alg.accountant.unit == units[name]
            assert "global_lr" in alg.hparams
            state = alg.init(params)
            rin = alg.prepare(0, np.random.default_rng(0))
            key = jax.random.key(3)
            lrs = jnp.array([0.5, 2.0])
            # Jitted (one program each instead of op-by-op dispatch); the single applies keep a
            # concrete Python learning rate, the vmapped one a traced one. The two single
            # applies are one program (one compile; XLA computes what they share once).
            vm = jax.jit(jax.vmap(lambda lr, a=alg, st=state, d=dev, r=rin, k=key: a.apply(
                st, d, r, k, hparams={"global_lr": lr})[0].params))(lrs)
            singles = jax.jit(lambda a=alg, st=state, d=dev, r=rin, k=key: [a.apply(
                st, d, r, k, hparams={"global_lr": lr})[0].params for lr in (0.5, 2.0)])()
            for i, one in enumerate(singles):
                _close(jax.tree.map(lambda v, i=i: v[i], vm), one)
    group = algs["group"][0].accountant.report(2, 1e-5)
    # every user holds 3 > k = 2 records: truncated by the per-user flags, still protected
    assert np.all(group.per_unit == group.epsilon) and group.details["truncated_users"] == U
    assert algs["default"][0].accountant.epsilons([1], 1e-5)[0] == np.inf


class self_subtest:  # noqa: N801  (a tiny context manager naming the failing case)
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        if value is not None:
            raise AssertionError(f"case {self.name!r} failed") from value
        return False


def test_bad_input_raises():
    model = _toy.logreg(DIM, CLASSES)
    with pytest.raises(validate.JaxflValueError):
        _avg(model, weighting="magic")
    with pytest.raises(validate.PrivacyParameterError):
        _avg(model, clip_norm=0.0)
    with pytest.raises(validate.JaxflValueError):
        _avg(model, sampling_rate=1.5)
    with pytest.raises(validate.JaxflValueError):
        _avg(model, local_epochs=0)
    with pytest.raises(validate.JaxflValueError):
        uldp_silo.default(model, num_silos=S, local_epochs=1, batch_size=4, local_lr=0.1,
                          mode="naive")
    with pytest.raises(validate.ShapeError):
        uldp_data.UldpData(np.zeros((3, 2)), np.zeros(2), np.zeros(3, int), np.zeros(3, int),
                           1, 1).validate()
    with pytest.raises(validate.JaxflValueError):
        uldp_data.UldpData(np.zeros((3, 2)), np.zeros(3), np.array([0, 1, 2]), np.zeros(3, int),
                           2, 1).validate()


def test_coupled_loss_grads_are_the_per_example_grads_of_an_uncoupled_loss():
    """For a per-example loss, DP-SGD's pull-back form equals jaxfl.clipping.per_example_grads
    (padding rows get zero gradients)."""
    from jaxfl import models

    model = models.get_model("logreg", num_classes=3, input_shape=(5,))
    params = model.init(jax.random.key(0))
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(4, 5)).astype(np.float32))
    y = jnp.asarray(rng.integers(0, 3, size=4).astype(np.int32))
    valid = jnp.array([True, True, True, False])
    keys = jax.random.split(jax.random.key(2), 4)
    got = uldp_local.coupled_loss_grads(model, params, x, y, valid, keys)
    want = clipping.per_example_grads(model.example_loss, params, x, y)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(g[:3], w[:3], rtol=1e-5, atol=1e-6)
        assert not np.any(np.asarray(g[3]))
