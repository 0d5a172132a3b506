"""LightDP-FL mechanism: cancellation, pair symmetry, Eq. 9 variance, Lemma 1, baselines."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import training, validate
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import base
from jaxfl.algorithms import lightdp as L
from tests import _tolerance, _toy


def _design(N=6, C_bar=1, S_bar=2, **kw):
    return acct.design(epsilon=kw.pop("epsilon", 50.0), delta=1e-5, num_clients=N,
                       max_colluders=C_bar, max_stragglers=S_bar, sensitivity=0.01, **kw)


def _with_sigmas(d, sigma_u, sigma_k, scheme=None):
    return dataclasses.replace(d, sigma_u=sigma_u, sigma_k=sigma_k, scheme=scheme or d.scheme)


def _root(seed=0):
    return base.substream(jax.random.key(seed), "pairs")


# --------------------------------------------------------------------- pair symmetry (I2)


@pytest.mark.parametrize("table", [False, True])
def test_pair_terms_are_symmetric_bitwise(table):
    N, d = 7, 33
    keys = _root(3)
    if table:
        I, J = np.triu_indices(N, 1)
        keys = jax.vmap(lambda a, b: L.pair_key(_root(3), a, b, N))(I, J)
    f = jax.jit(lambda i, j: L.pair_term(keys, i, j, 4, num_clients=N, dim=d, sigma_k=1.7))
    for i, j in [(0, 1), (2, 6), (5, 3), (1, 4)]:
        np.testing.assert_array_equal(f(i, j), f(j, i))
    assert not np.array_equal(f(0, 1), f(0, 2))
    # Fresh every round.
    g = jax.jit(lambda t: L.pair_term(keys, 1, 2, t, num_clients=N, dim=d, sigma_k=1.0))
    assert not np.array_equal(g(0), g(1))


def test_pair_table_equals_derived_seeds():
    N = 6
    I, J = np.triu_indices(N, 1)
    table = jax.vmap(lambda a, b: L.pair_key(_root(1), a, b, N))(I, J)
    np.testing.assert_array_equal(
        L.pair_masks(table, 2, num_clients=N, dim=17, sigma_k=1.0),
        L.pair_masks(_root(1), 2, num_clients=N, dim=17, sigma_k=1.0))
    assert list(L.pair_index(I, J, N)) == list(range(len(I)))


def test_protocol_view_equals_pair_generation():
    """Client i computing its own N-1 terms (each pair drawn twice) = the pairwise scan."""
    N, d = 6, 40
    with jax.enable_x64(True):
        masks = L.pair_masks(_root(), 3, num_clients=N, dim=d, sigma_k=2.0, dtype=jnp.float64,
                             fixed_point_bits=30)
        per_client = jax.vmap(lambda i: L.client_mask(_root(), i, 3, num_clients=N, dim=d,
                                                      sigma_k=2.0, dtype=jnp.float64,
                                                      fixed_point_bits=30))(jnp.arange(N))
        np.testing.assert_array_equal(np.asarray(masks), np.asarray(per_client))


# -------------------------------------------------------------- exact cancellation (I1)


def test_exact_cancellation_bit_for_bit_in_float64():
    N, d = 9, 2000
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        U = jnp.asarray(np.round(rng.normal(size=(N, d)) * 2**40) / 2**40)
        n = L.individual_noise(jax.random.key(5), jnp.arange(N), dim=d, sigma_u=0.8,
                               dtype=jnp.float64, fixed_point_bits=40)
        masks = L.pair_masks(_root(), 7, num_clients=N, dim=d, sigma_k=25.0, dtype=jnp.float64,
                             fixed_point_bits=40)
        assert float(jnp.abs(masks).max()) > 50.0  # the masks are large ...
        uploads = U + n + masks
        aggregate = np.asarray(jnp.sum(uploads, axis=0))
        clean = np.asarray(jnp.sum(U, axis=0) + jnp.sum(n, axis=0))
        np.testing.assert_array_equal(aggregate, clean)  # ... and cancel exactly
        # Without the fixed-point grid: cancellation up to float64 rounding.
        masks_f = L.pair_masks(_root(), 7, num_clients=N, dim=d, sigma_k=25.0, dtype=jnp.float64)
        err = np.abs(np.asarray(jnp.sum(U + n + masks_f, axis=0)) - clean).max()
        assert err < 16 * np.finfo(np.float64).eps * 25.0 * N**1.5


def test_cancellation_float32_tolerance():
    N, d, sk = 10, 5000, 3.0
    U = jax.random.normal(jax.random.key(1), (N, d))
    masks = L.pair_masks(_root(), 0, num_clients=N, dim=d, sigma_k=sk)
    err = np.abs(np.asarray(jnp.sum(U + masks, 0) - jnp.sum(U, 0))).max()
    assert err < 16 * np.finfo(np.float32).eps * sk * N**1.5
    assert err > 0  # float32 rounding is visible: this is what fixed_point_bits removes


def test_full_round_without_stragglers_equals_local_dp_bitwise():
    """S = 0: a LightDP-FL round (any sigma_K) = the same round with sigma_K = 0, bit for bit."""
    with jax.enable_x64(True):
        model = _toy.logreg(5, 3)
        data = _toy.blobs(num_clients=6, seed=3, sizes=[8] * 6)
        params = model.init(jax.random.key(0))
        d0 = _design()
        out = []
        for sk in (4.0, 0.0):
            alg = L.lightdp_fl(model, design=_with_sigmas(d0, 0.05, sk), num_clients=6,
                               local_steps=2, batch_size=4, client_lr=0.1, clip_norm=1.0,
                               stragglers="none", path="faithful", fixed_point_bits=40)
            st = alg.init(params)
            st, _ = jax.jit(alg.apply)(st, data.to_device(), alg.prepare(0, np.random.default_rng(0)),
                                       jax.random.key(2))
            out.append(st.params)
        for a, b in zip(jax.tree.leaves(out[0]), jax.tree.leaves(out[1]), strict=True):
            assert a.dtype == jnp.float64
            np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------ Eq. 9 with stragglers (I3, I4)


def _stragglers(N, ids, cap):
    alive = np.ones(N, bool)
    alive[ids] = False
    sidx = np.zeros(cap, np.int32)
    sidx[: len(ids)] = ids
    return alive, sidx, np.arange(cap) < len(ids)


def test_eq9_sign_convention_by_hand():
    N, d, sk = 4, 5, 1.0
    alive, sidx, valid = _stragglers(N, [2], 2)
    got = L.uncancelled_pair_sum(_root(), 1, alive, sidx, valid, num_clients=N, dim=d, sigma_k=sk)
    r = lambda i, j: L.pair_term(_root(), i, j, 1, num_clients=N, dim=d, sigma_k=sk)
    # Alive 0, 1 are below straggler 2 (they added +r); alive 3 is above (it subtracted r_23).
    want = r(0, 2) + r(1, 2) - r(2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_aggregate_path_equals_faithful_path():
    N, d = 9, 300
    alive, sidx, valid = _stragglers(N, [1, 4, 8], 4)
    masks = L.pair_masks(_root(), 5, num_clients=N, dim=d, sigma_k=1.3)
    faithful = jnp.sum(masks * alive[:, None], axis=0)
    fast = L.uncancelled_pair_sum(_root(), 5, alive, sidx, valid, num_clients=N, dim=d,
                                  sigma_k=1.3)
    np.testing.assert_allclose(fast, faithful, atol=50 * np.finfo(np.float32).eps * 1.3 * N)


def test_aggregate_noise_variance_with_stragglers():
    """Var n_D = (S sigma_K^2 + sigma_U^2) / (N - S): MC over d coordinates."""
    N, sk, su, d = 8, 0.7, 1.3, 200_000
    ids = [2, 5]
    alive, sidx, valid = _stragglers(N, ids, 2)
    n = L.individual_noise(jax.random.key(11), jnp.arange(N), dim=d, sigma_u=su)
    pair = L.uncancelled_pair_sum(_root(4), 3, alive, sidx, valid, num_clients=N, dim=d,
                                  sigma_k=sk)
    nD = (jnp.sum(n * alive[:, None], axis=0) + pair) / (N - len(ids))
    var = float(jnp.var(nD))
    want = float(acct.aggregate_variance(2, num_clients=N, sigma_u=su, sigma_k=sk))
    assert want == pytest.approx(0.445, abs=1e-3)
    tol = 4 * math.sqrt(2 / d)
    assert var == pytest.approx(want, rel=tol)
    assert abs(float(jnp.mean(nD))) < 5 * math.sqrt(want / d)
    # Wrong models are rejected: all pairs cancelled, or stds off by 2/3 or 3/2.
    for wrong in (su**2 / (N - 2), want * (2 / 3) ** 2, want * 1.5**2):
        assert abs(var / wrong - 1) > 3 * tol


# -------------------------------------------------------------- Lemma 1 (colluders, I5)


def test_colluders_view_covariance_matches_lemma1():
    N, sk, su, d = 8, 0.7, 1.3, 200_000
    colluders, stragglers = [0, 6], [2, 5]
    indiv = L.individual_noise(jax.random.key(7), jnp.arange(N), dim=d, sigma_u=su)
    m = L.colluder_view(_root(9), indiv, 2, colluders, num_clients=N, sigma_k=sk)
    I1, Cm = acct.view_covariance(np.full((N, N), sk), np.full(N, su), colluders, stragglers)
    assert list(I1) == [1, 3, 4, 7]
    emp = np.cov(np.asarray(m)[I1])
    assert Cm[0, 0] == pytest.approx((N - 2 - 1) * sk**2 + su**2)
    assert Cm[0, 1] == pytest.approx(-(sk**2))
    se = np.sqrt((np.outer(np.diag(Cm), np.diag(Cm)) + Cm**2) / d)
    assert np.all(np.abs(emp - Cm) < 5 * se), np.abs(emp - Cm).max()
    # Without the colluders' subtraction the diagonal would be (N-1) sk^2 + su^2: rejected.
    assert abs(emp[0, 0] - ((N - 1) * sk**2 + su**2)) > 10 * se[0, 0]


# -------------------------------------------------------------------- the Algorithm


def _rin(alg, N, ids, cap):
    alive, sidx, valid = _stragglers(N, ids, cap)
    return alg.prepare(0, np.random.default_rng(0))._replace(
        alive=alive, straggler_idx=sidx, straggler_valid=valid)


_MODEL = _toy.logreg(5, 3)  # shared: rounds with the same static configuration compile once


def _alg(design, **kw):
    model = _MODEL
    base_kw = dict(num_clients=design.num_clients, local_steps=3, batch_size=4, client_lr=0.2,
                   clip_norm=1.0)
    return model, L.lightdp_fl(model, design=design, **{**base_kw, **kw})


def test_round_paths_agree_with_stragglers():
    d0 = _with_sigmas(_design(N=6, S_bar=3), 0.02, 0.5)
    data = _toy.blobs(num_clients=6, seed=1, sizes=[8] * 6).to_device()
    res = []
    for path in L.PATHS:
        model, alg = _alg(d0, path=path)
        rin = _rin(alg, 6, [0, 3], 3)
        st = alg.init(model.init(jax.random.key(0)))
        st, diag = jax.jit(alg.apply)(st, data, rin, jax.random.key(1))
        assert float(diag["uploads"]) == 4.0
        res.append(st.params)
    for a, b in zip(jax.tree.leaves(res[0]), jax.tree.leaves(res[1]), strict=True):
        np.testing.assert_allclose(a, b, atol=_tolerance.atol(float32=1e-5))


def test_ldp_baseline_is_zero_pair_noise_bitwise():
    d0 = _design()
    data = _toy.blobs(num_clients=6, seed=1, sizes=[8] * 6).to_device()
    out = []
    for dz in (_with_sigmas(d0, 0.03, 0.0), _with_sigmas(d0, 0.03, 0.0, scheme="ldp")):
        model, alg = _alg(dz)
        rin = _rin(alg, 6, [2], 2)
        st, _ = jax.jit(alg.apply)(alg.init(model.init(jax.random.key(0))), data, rin,
                                   jax.random.key(4))
        out.append(st.params)
    for a, b in zip(jax.tree.leaves(out[0]), jax.tree.leaves(out[1]), strict=True):
        np.testing.assert_array_equal(a, b)


def test_smpc_masks_cancel():
    d0 = acct.design(epsilon=50.0, delta=1e-5, num_clients=6, max_colluders=1, max_stragglers=2,
                     sensitivity=0.01, scheme="smpc_dp")
    data = _toy.blobs(num_clients=6, seed=1, sizes=[8] * 6).to_device()
    out = []
    for mask_std in (0.0, 5.0):
        model, alg = _alg(d0, smpc_mask_std=mask_std)
        rin = _rin(alg, 6, [1, 4], 2)
        st, _ = jax.jit(alg.apply)(alg.init(model.init(jax.random.key(0))), data, rin,
                                   jax.random.key(4))
        out.append(st.params)
    for a, b in zip(jax.tree.leaves(out[0]), jax.tree.leaves(out[1]), strict=True):
        np.testing.assert_allclose(a, b, atol=5e-5)


def test_straggler_sampling_models():
    rng = np.random.default_rng(0)
    pmf = acct.uniform_pmf(4)
    counts = np.array([(~L.sample_stragglers(rng, num_clients=10, model="design", pmf=pmf,
                                             capacity=4).alive).sum() for _ in range(5000)])
    freq = np.bincount(counts, minlength=5) / counts.size
    np.testing.assert_allclose(freq, 0.2, atol=0.03)
    rin = L.sample_stragglers(rng, num_clients=10, model="design", pmf=pmf, capacity=4)
    assert set(rin.straggler_idx[rin.straggler_valid]) == set(np.flatnonzero(~rin.alive))
    b = [L.sample_stragglers(rng, num_clients=50, model="bernoulli", failure_prob=0.05,
                             capacity=12) for _ in range(2000)]
    assert np.mean([(~r.alive).sum() for r in b]) == pytest.approx(2.5, abs=0.15)
    big = L.sample_stragglers(rng, num_clients=20, model="bernoulli", failure_prob=0.9,
                              capacity=2)
    assert big.straggler_idx.shape == (20,)  # exact: grows instead of truncating


def test_training_learns_and_reports_epsilon():
    d0 = _design(N=6, epsilon=30.0, rounds=12)
    model, alg = _alg(d0)
    data = _toy.blobs(num_clients=6, seed=2, sizes=[10] * 6)
    res = training.run(alg, data, params=model.init(jax.random.key(0)), rounds=12, seed=0,
                       delta=1e-5, accountant="rdp", final_accountant=None)
    hist = res.history
    want = acct.accountant(d0).report(12, 1e-5)
    assert res.summary["epsilon"] == pytest.approx(want.epsilon, rel=1e-12)
    assert res.summary["epsilon"] == pytest.approx(d0.exact_epsilon(12), rel=1e-12)
    assert res.summary["privacy"]["mode"] == "strict" and res.summary["privacy"]["sound"]
    assert res.summary["privacy_paper"]["sound"] is False
    assert res.summary["info"]["mode"] == "strict"
    assert [h["privacy_mode"] for h in hist] == ["strict"] * len(hist)
    assert hist[-1]["train_loss"] < hist[0]["train_loss"] if len(hist) > 1 else True
    assert 0 <= res.summary["final"]["stragglers"] <= 2


def test_runs_differing_in_noise_share_one_compiled_round():
    a = _alg(_design(epsilon=3.0))[1]
    b = _alg(_design(epsilon=9.0, C_bar=2))[1]
    assert a.apply.args[0] is b.apply.args[0]  # the same cached round function
    ra, rb = a.prepare(0, np.random.default_rng(0)), b.prepare(0, np.random.default_rng(0))
    assert float(ra.sigma_u) > float(rb.sigma_u) > 0
    assert _alg(_design(), path="faithful")[1].apply.args[0] is not a.apply.args[0]


def test_accountant_is_built_from_the_mechanisms_values():
    d0 = _design(epsilon=3.0, rounds=5)
    alg = _alg(d0)[1]
    rin = alg.prepare(0, np.random.default_rng(0))
    acc = alg.accountant
    assert acc.sigma_u == pytest.approx(float(rin.sigma_u), rel=1e-7)
    assert acc.sigma_k == pytest.approx(float(rin.pair_std), rel=1e-7)
    assert acc.sensitivity == d0.sensitivity and acc.num_clients == 6
    assert alg.accountant.dp_event(5) == acc.report(5, 1e-5).dp_event


def test_bad_input():
    d0 = _design()
    with pytest.raises(validate.JaxflValueError, match="num_clients"):
        _alg(d0, num_clients=7)
    with pytest.raises(validate.JaxflValueError):
        _alg(d0, path="fast")
    with pytest.raises(validate.ShapeError):
        _alg(d0, pair_keys=jax.random.split(jax.random.key(0), 3))
    with pytest.raises(validate.PrivacyParameterError):
        _alg(d0, failure_prob=1.5)


def test_quantized_updates_stay_within_the_clip_norm():
    """Rounding to the fixed-point grid after clipping to C can leave a row above C (here
    1.11 C); clip_and_quantize clips to C minus the rounding's reach first."""
    import jax.numpy as jnp
    import numpy as np

    from jaxfl.algorithms import lightdp as ld

    d, bits, C = 316, 6, 1.0
    # clipped to C, every coordinate is 1/sqrt(316) = 3.6 grid steps: rounded up to 4 steps
    x = jnp.full((2, d), 5.0)
    naive = ld._quantize(x / jnp.linalg.norm(x[0]) * C, bits)
    assert float(jnp.linalg.norm(naive[0])) > C  # what plain clip-then-round does
    rows, norms = ld.clip_and_quantize(x, C, bits)
    assert np.all(np.linalg.norm(np.asarray(rows, np.float64), axis=1) <= C)
    np.testing.assert_allclose(norms, jnp.linalg.norm(x, axis=1), rtol=1e-6)
    with pytest.raises(Exception, match="too coarse"):
        ld.clip_and_quantize(x, 0.05, 2)
