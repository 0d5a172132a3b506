"""DP-FTRL (matrix-factorization DP-FedAvg) and adaptive clipping of DP-FedAvg."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization

pytest.importorskip("jax_privacy")

from jax_privacy.matrix_factorization import toeplitz  # noqa: E402

from jaxfl.algorithms import dp_fedavg, dp_ftrl  # noqa: E402
from tests import _toy  # noqa: E402

N_ROUNDS = 8


@pytest.fixture(scope="module")
def bandmf_coefs():
    with jax.enable_x64(True):
        return np.asarray(toeplitz.optimize_banded_toeplitz(n=N_ROUNDS, bands=2,
                                                            max_optimizer_steps=20))


@pytest.fixture(scope="module")
def blt_strategy():
    return dp_ftrl.make_strategy("blt", N_ROUNDS, min_sep=2, max_participations=3,
                                 optimizer_steps=10, blt_buffers=1)


def _patterns(n, k, b):
    """Every participation pattern: 1..k rounds of [0, n), consecutive ones >= b apart."""
    for size in range(1, k + 1):
        for combo in itertools.combinations(range(n), size):
            if all(j - i >= b for i, j in zip(combo, combo[1:], strict=False)):
                yield list(combo)


def _brute_force_sensitivity(C, k, b):
    X = C.T @ C
    assert (X >= -1e-12).all()  # non-negative Gram: the worst case is all-equal contributions
    return max(np.sqrt(X[np.ix_(p, p)].sum()) for p in _patterns(C.shape[1], k, b))


@pytest.mark.parametrize("b", [1, 2, 4])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_bandmf_and_tree_sensitivity_equal_brute_force(bandmf_coefs, k, b):
    kk = dp_ftrl.participations(N_ROUNDS, b, k)
    for kw in ({"coefs": bandmf_coefs}, {"bands": 1}):
        s = dp_ftrl.make_strategy("bandmf", N_ROUNDS, min_sep=b, max_participations=k, **kw)
        np.testing.assert_allclose(s.sensitivity(N_ROUNDS),
                                   _brute_force_sensitivity(s.matrix, kk, b), rtol=1e-6,
                                   err_msg=f"bandmf {kw.keys()} k={k} b={b}")
    # The tree is not Toeplitz: jax_privacy's min-sep bound (Alg. 4 of arXiv:2306.08153) is an
    # upper bound, exact for a single participation.
    s = dp_ftrl.make_strategy("tree", N_ROUNDS, min_sep=b, max_participations=k)
    brute = _brute_force_sensitivity(s.matrix, kk, b)
    assert s.sensitivity(N_ROUNDS) >= brute * (1 - 1e-9)
    if kk == 1:
        np.testing.assert_allclose(s.sensitivity(N_ROUNDS), brute, rtol=1e-9)


def test_prefix_sensitivity_is_leading_block(bandmf_coefs):
    s = dp_ftrl.make_strategy("bandmf", N_ROUNDS, min_sep=2, coefs=bandmf_coefs)
    for r in range(1, N_ROUNDS + 1):
        np.testing.assert_allclose(
            s.sensitivity(r), _brute_force_sensitivity(s.matrix[:r, :r],
                                                       dp_ftrl.participations(r, 2), 2),
            rtol=1e-6)


def test_blt_sensitivity_equals_brute_force(blt_strategy):
    s = blt_strategy
    blt = _blt_of(s)
    for k, b in ((3, 2), (2, 2), (1, 2), (3, 1), (2, 4)):
        got = dp_ftrl.make_strategy("blt", N_ROUNDS, min_sep=b, max_participations=k,
                                    blt=blt).sensitivity(N_ROUNDS)
        np.testing.assert_allclose(got, _brute_force_sensitivity(s.matrix, k, b), rtol=1e-6)


def _blt_of(strategy):
    from jax_privacy.matrix_factorization import buffered_toeplitz
    with jax.enable_x64(True):
        return buffered_toeplitz.BufferedToeplitz.build(strategy.info["buf_decay"],
                                                        strategy.info["output_scale"])


@pytest.mark.parametrize("name", ["bandmf", "tree", "blt"])
def test_noise_covariance_matches_strategy(name, bandmf_coefs, blt_strategy):
    if name == "blt":
        s = blt_strategy
    else:
        kw = {"coefs": bandmf_coefs} if name == "bandmf" else {}
        s = dp_ftrl.make_strategy(name, N_ROUNDS, min_sep=2, **kw)
    M = s.noising_matrix()
    np.testing.assert_allclose(M @ s.matrix, np.eye(N_ROUNDS), atol=1e-5)  # left inverse
    noise = dp_ftrl.correlated_noise(s)
    d, sigma = 20000, 1.5
    zeros = {"w": jnp.zeros((d,))}
    state = noise.init(zeros)
    key = jax.random.key_data(jax.random.key(3))
    add = jax.jit(noise.add)
    rows = []
    for _ in range(N_ROUNDS):
        out, state, key = add(zeros, state, key, sigma)
        rows.append(np.asarray(out["w"], np.float64))
    Z = np.stack(rows)
    emp = Z @ Z.T / d
    expected = sigma ** 2 * M @ M.T
    tol = 6 * sigma ** 2 * np.sqrt(2.0 / d) * np.sqrt(np.outer(np.diag(M @ M.T),
                                                               np.diag(M @ M.T)))
    assert (np.abs(emp - expected) <= tol).all(), np.abs(emp - expected) / tol


def test_bands_one_is_dp_fedavg_noise_bit_for_bit():
    s = dp_ftrl.make_strategy("bandmf", N_ROUNDS, min_sep=2, bands=1)
    assert np.array_equal(s.matrix, np.eye(N_ROUNDS))
    assert np.array_equal(s.noising_matrix(), np.eye(N_ROUNDS))
    noise = dp_ftrl.correlated_noise(s)
    zeros = {"w": jnp.zeros((1000,))}
    key = jax.random.key_data(jax.random.key(1))
    sigma_c = jnp.asarray(1.3, float) * jnp.asarray(0.7, float)  # dp_fedavg's sigma * C
    a, _, _ = noise.add(zeros, noise.init(zeros), key, sigma_c)
    unit, _, _ = noise.add(zeros, noise.init(zeros), key, jnp.asarray(1.0, float))
    assert np.array_equal(np.asarray(a["w"]), np.asarray(sigma_c * unit["w"]))
    np.testing.assert_allclose(np.std(np.asarray(a["w"])), 1.3 * 0.7, rtol=0.1)
    for r in range(1, N_ROUNDS + 1):
        assert s.sensitivity(r) == pytest.approx(np.sqrt(-(-r // 2)), rel=1e-12)


def _ftrl_alg(model, **kw):
    args = dict(num_clients=8, clients_per_round=2, rounds=6, local_steps=2, batch_size=3,
                client_lr=0.3, clip_norm=0.5, noise_multiplier=0.8, strategy="bandmf",
                bands=2, optimizer_steps=10)
    args.update(kw)
    return dp_ftrl.dp_ftrl(model, **args)


def test_cyclic_schedule_and_resume_is_exact():
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=8, seed=1).to_device()
    alg = _ftrl_alg(model)
    cohorts = [alg.prepare(r, np.random.default_rng(r)) for r in range(6)]
    for r, c in enumerate(cohorts):
        assert sorted(c.indices[c.mask].tolist()) == [r % 4, r % 4 + 4]
    apply = jax.jit(alg.apply)
    state = alg.init(model.init(jax.random.key(0)))
    states = []
    for r in range(6):
        state, diag = apply(state, data, cohorts[r], jax.random.key(100 + r))
        states.append(state)
        if r == 2:  # checkpoint round trip mid-run
            restored = serialization.from_bytes(state, serialization.to_bytes(state))
            resumed = restored
    for r in range(3, 6):
        resumed, _ = apply(resumed, data, cohorts[r], jax.random.key(100 + r))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(resumed), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    assert np.isfinite(float(diag["train_loss"]))
    assert alg.info["max_participations"] == 2 and alg.info["min_sep"] == 4
    rep = alg.accountant.report(6, 1e-5)
    assert rep.details["sensitivity"] == pytest.approx(np.sqrt(2), rel=1e-6)


# --- adaptive clipping --------------------------------------------------------------------


def _numpy_adaptive(norms_per_round, clip0, z, *, target, lr, count_noise, denominator):
    clip, out = clip0, []
    for norms, zt in zip(norms_per_round, z, strict=True):
        b = ((norms <= clip).sum() - 0.5 * len(norms) + count_noise * zt) / denominator + 0.5
        clip = clip * np.exp(-lr * (b - target))
        out.append(clip)
    return np.array(out)


def test_adaptive_clip_update_matches_numpy_and_tracks_quantile():
    rng = np.random.default_rng(0)
    T, n, target = 300, 50, 0.7
    norms = rng.lognormal(mean=0.0, sigma=0.5, size=(T, n))
    z = rng.normal(size=T)
    kw = dict(target_quantile=target, lr=0.2, count_noise=2.0, denominator=float(n))
    expected = _numpy_adaptive(norms, 0.1, z, target=target, lr=0.2, count_noise=2.0,
                               denominator=float(n))
    step = jax.jit(lambda c, u, v, d: dp_fedavg.adaptive_clip_update(c, u, v, d, **kw))
    clip, got = jnp.asarray(0.1, jnp.float32), []
    for t in range(T):
        clip, _ = step(clip, jnp.sum(norms[t] <= clip), float(n), z[t])
        got.append(float(clip))
    np.testing.assert_allclose(got, expected, rtol=2e-3)
    quantile = np.exp(0.5 * 0.5244)  # lognormal(0, 0.5) 0.7-quantile
    assert abs(np.mean(expected[-100:]) / quantile - 1) < 0.1


def test_adaptive_dp_fedavg_round_follows_update_rule():
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=8, seed=3).to_device()
    ac = dp_fedavg.AdaptiveClip(target_quantile=0.5, lr=0.3, count_noise=0.5)
    alg = dp_fedavg.dp_fedavg(model, num_clients=8, local_steps=2, batch_size=3, client_lr=0.3,
                              clip_norm=0.01, noise_multiplier=0.5, sampling_rate=1.0,
                              adaptive_clip=ac)
    state = alg.init(model.init(jax.random.key(0)))
    apply = jax.jit(alg.apply)
    clips = []
    for r in range(4):
        state, diag = apply(state, data, alg.prepare(r, np.random.default_rng(r)),
                            jax.random.key(r))
        clips.append((float(diag["clip_norm"]), float(diag["unclipped_estimate"]),
                      float(state.clip_norm)))
    assert clips[0][0] == pytest.approx(0.01)
    for (c, b, new), (c_next, _, _) in zip(clips, clips[1:], strict=False):
        assert new == pytest.approx(c * np.exp(-0.3 * (b - 0.5)), rel=1e-5)
        assert c_next == pytest.approx(new, rel=1e-6)
    assert clips[-1][2] > 0.01  # all updates clipped at 0.01: the clip norm grows


def test_adaptive_dp_ftrl_first_round_equals_fixed_clip_and_follows_update_rule():
    """Round 0 of adaptive DP-FTRL (normalised stream, rescaled by C_0) equals the fixed-clip
    round with the same key; later rounds use the geometric clip update on the group."""
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=8, seed=2).to_device()
    ac = dp_fedavg.AdaptiveClip(target_quantile=0.5, lr=0.3, count_noise=0.5)
    fixed, adaptive = _ftrl_alg(model), _ftrl_alg(model, adaptive_clip=ac)
    params = model.init(jax.random.key(0))
    cohort = fixed.prepare(0, None)
    a, _ = jax.jit(fixed.apply)(fixed.init(params), data, cohort, jax.random.key(7))
    b, diag = jax.jit(adaptive.apply)(adaptive.init(params), data, cohort, jax.random.key(7))
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)
    assert float(diag["clip_norm"]) == pytest.approx(0.5)
    state, apply = b, jax.jit(adaptive.apply)
    prev = float(state.clip_norm)
    assert prev == pytest.approx(0.5 * np.exp(-0.3 * (float(diag["unclipped_estimate"]) - 0.5)),
                                 rel=1e-5)
    for r in range(1, 4):
        state, diag = apply(state, data, adaptive.prepare(r, None), jax.random.key(7 + r))
        assert float(diag["clip_norm"]) == pytest.approx(prev, rel=1e-6)
        prev = float(state.clip_norm)
    assert adaptive.info["adaptive_clip"]["count_noise"] == 0.5
    # the accountant composes the counts of each client's k participations
    rep, plain = adaptive.accountant.report(6, 1e-5), fixed.accountant.report(6, 1e-5)
    assert rep.details["participations"] == 2 and rep.epsilon > plain.epsilon
    with pytest.raises(ValueError, match="AdaptiveClip"):
        _ftrl_alg(model, adaptive_clip={"lr": 0.1})


def test_prebuilt_strategy_is_reused_and_checked():
    model = _toy.logreg(5, 3)
    strat = dp_ftrl.make_strategy("tree", 6, min_sep=4)
    alg = _ftrl_alg(model, strategy=strat)
    assert alg.name == "dp_ftrl_tree" and alg.accountant.sensitivity is strat.sensitivity
    with pytest.raises(ValueError, match="min_sep=4"):
        _ftrl_alg(model, strategy=dp_ftrl.make_strategy("tree", 6, min_sep=2))
