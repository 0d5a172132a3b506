"""Tests of DP-OGL / DP-OGL+ (jaxfl.algorithms.dp_ogl): equivalences, information flow, DP
mechanics (Kiani et al. 2024, Sec. III, Alg. 1 and Eqs. 11-13)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxfl import training, validate
from jaxfl import tree as jtree
from jaxfl.accounting import dp_ogl as acc_dp_ogl
from jaxfl.algorithms import base, dp_fedavg, fedavg
from jaxfl.algorithms import dp_ogl as D
from jaxfl.data import federated
from jaxfl.topology import groups
from tests import _tolerance, _toy

MODEL = _toy.logreg(5, 3)
HP = dict(local_steps=3, batch_size=4, client_lr=0.3)


def _params():
    return MODEL.init(jax.random.key(0))


_ALGS, _JITS = {}, {}


def _alg(structure, **kw):
    """Algorithms (and their compiled apply) are cached across tests: compiling dominates."""
    key = (structure.name, tuple(sorted((k, str(v)) for k, v in kw.items())))
    if key not in _ALGS:
        _ALGS[key] = D.dp_ogl(MODEL, structure, **{**HP, **kw})
    return _ALGS[key]


def _jit(alg):
    if id(alg) not in _JITS:
        _JITS[id(alg)] = (alg, jax.jit(alg.apply))
    return _JITS[id(alg)][1]


def _run(alg, data, rounds, seed=0, state=None, inputs=None):
    """Runs ``rounds`` epochs with keys/generators as the training loop derives them."""
    state = alg.init(_params()) if state is None else state
    apply = _jit(alg)
    dev = data.to_device()
    states, diags, rins = [state], [], []
    for r in range(rounds):
        rin = alg.prepare(r, np.random.default_rng([seed, r])) if inputs is None else inputs[r]
        state, diag = apply(state, dev, rin, jax.random.key(1000 * seed + r))
        states.append(state)
        diags.append(diag)
        rins.append(rin)
    return states, diags, rins


def _assert_tree_equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _assert_tree_close(a, b):
    """Equal up to float32 rounding: the two programs are compiled separately, so XLA may fuse
    (e.g. into FMAs) differently; keys, participants and noise are the same."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y),
                                   rtol=_tolerance.rtol(float32=2e-6),
                                   atol=_tolerance.atol(float32=1e-8))


def _tree_equal(a, b):
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def test_gl_equals_dp_fedavg():
    N, q, C, sigma = 6, 0.5, 0.05, 1.3
    data = _toy.blobs(num_clients=N, seed=2)
    alg = _alg(groups.gl(N), period=1, clip_norms=C, noise_multipliers=sigma, sampling_rates=q)
    ref = dp_fedavg.dp_fedavg(MODEL, num_clients=N, clip_norm=C, noise_multiplier=sigma,
                              sampling_rate=q, sampling="uniform", **HP)
    states, _, rins = _run(alg, data, 4)
    cap = base.poisson_capacity(N, q)
    s_ref = ref.init(_params())
    apply_ref = jax.jit(ref.apply)
    for r, rin in enumerate(rins):
        cohort = base.cohort_from_mask(np.asarray(rin.mask), cap)
        s_ref, _ = apply_ref(s_ref, data.to_device(), cohort,
                             D.group_round_key(jax.random.key(r), 0))
        got = jax.tree.map(lambda x: x[0], states[r + 1].params)
        _assert_tree_close(got, s_ref.params)


def test_cl_equals_independent_dp_fedavg_runs():
    N, M, q, C, sigma = 8, 2, 0.7, 0.1, 1.0
    data = _toy.blobs(num_clients=N, seed=3)
    s = groups.cl(N, M)
    alg = _alg(s, period=2, clip_norms=C, noise_multipliers=sigma, sampling_rates=q)
    states, _, rins = _run(alg, data, 4)
    _, pg = s.pairs()
    ref = dp_fedavg.dp_fedavg(MODEL, num_clients=N // M, clip_norm=C, noise_multiplier=sigma,
                              sampling_rate=q, sampling="uniform", **HP)
    apply_ref = jax.jit(ref.apply)
    for m, members in enumerate(s.groups()):
        sub = data.select(np.asarray(members))
        cap = base.poisson_capacity(len(members), q)
        st = ref.init(_params())
        for r, rin in enumerate(rins):
            cohort = base.cohort_from_mask(np.asarray(rin.mask)[pg == m], cap)
            st, _ = apply_ref(st, sub.to_device(), cohort,
                              D.group_round_key(jax.random.key(r), m))
        _assert_tree_close(jax.tree.map(lambda x, m=m: x[m], states[-1].params), st.params)


@pytest.mark.parametrize("window_updates", ["local", "shared"])
def test_plus_with_period_one_equals_dp_ogl(window_updates):
    s = groups.ring(9, 3)
    data = _toy.blobs(num_clients=9, seed=4)
    kw = dict(period=1, clip_norms=0.05, noise_multipliers=2.0, sampling_rates=0.7)
    a, _, rins = _run(_alg(s, **kw), data, 4)
    b, _, _ = _run(_alg(s, plus=True, window_updates=window_updates, **kw), data, 4,
                   inputs=rins)
    for x, y in zip(a, b, strict=True):
        _assert_tree_equal(x.params, y.params)


def test_no_noise_full_participation_gl_is_fedavg():
    N = 5
    data = _toy.blobs(num_clients=N, seed=5)
    alg = D.dp_ogl(MODEL, groups.gl(N), period=1, clip_norms=1e9, noise_multipliers=1e-30,
                   sampling_rates=1.0, **HP)
    ref = fedavg.fedavg(MODEL, num_clients=N, weighting="uniform", sampling="uniform", **HP)
    states, _, _ = _run(alg, data, 3)
    st = ref.init(_params())
    for r in range(3):
        st, _ = jax.jit(ref.apply)(st, data.to_device(), base.full_cohort(N),
                                   D.group_round_key(jax.random.key(r), 0))
    for x, y in zip(jax.tree.leaves(states[-1].params), jax.tree.leaves(st.params),
                    strict=True):
        np.testing.assert_allclose(x[0], y, rtol=1e-5, atol=1e-6)


def _swap_worker_data(data, n, seed=7):
    rng = np.random.default_rng(seed)
    x = np.asarray(data.x).copy()
    y = np.asarray(data.y).copy()
    cnt = int(data.num_examples[n])
    x[n, :cnt] = rng.normal(size=x[n, :cnt].shape) * 5
    y[n, :cnt] = rng.integers(0, 3, size=cnt)
    return federated.FederatedData(x=x, y=y, mask=data.mask, num_examples=data.num_examples)


@pytest.mark.parametrize("variant,S", [("dp_ogl", 1), ("dp_ogl", 2), ("plus_shared", 2),
                                       ("plus_local", 2)])
def test_information_flow_oracle(variant, S):
    """Models at GtoH distance rho from the target's group are bitwise unchanged before the
    onset (the propagation delay of Thm. 1); with pi = 1 they change from the onset on."""
    s = groups.string(13, 6)  # groups on a line, sizes 3, one-worker overlaps
    target = 1  # a single-group worker of group 0
    assert s.worker_degrees[target] == 1
    data = _toy.blobs(num_clients=13, seed=6, sizes=[6] * 13)
    other = _swap_worker_data(data, target)
    plus = variant != "dp_ogl"
    alg = _alg(s, period=S, clip_norms=0.5, noise_multipliers=0.5, sampling_rates=1.0, plus=plus,
               window_updates="shared" if variant == "plus_shared" else "local")
    T = 3 * S + 4
    a, _, rins = _run(alg, data, T)
    b, _, _ = _run(alg, other, T, inputs=rins)
    rho = groups.group_distances(s)[0]
    for m in range(s.num_groups):
        r = int(rho[m])
        onset = S * r + 2 if r >= 1 else 2
        if variant == "plus_local" and r >= 1:
            onset = (r + 1) * S + 1  # nothing intermediate is released in local mode
        if variant != "dp_ogl" and r == 0:
            onset = S + 1 if variant == "plus_local" else 2
        for tau in range(1, T + 2):  # theta^tau = state after tau - 1 epochs
            same = _tree_equal(jax.tree.map(lambda x, m=m: x[m], a[tau - 1].params),
                               jax.tree.map(lambda x, m=m: x[m], b[tau - 1].params))
            if tau < max(onset, S * r + 2 if r >= 1 else 2):
                assert same, (m, tau)
            elif tau >= onset:
                assert not same, (m, tau, onset)


def test_cl_never_leaks_across_clusters():
    s = groups.cl(8, 2)
    data = _toy.blobs(num_clients=8, seed=8, sizes=[5] * 8)
    alg = _alg(s, period=2, clip_norms=0.5, noise_multipliers=0.5, sampling_rates=1.0)
    a, _, rins = _run(alg, data, 8)
    b, _, _ = _run(alg, _swap_worker_data(data, 0), 8, inputs=rins)
    for x, y in zip(a, b, strict=True):
        _assert_tree_equal(jax.tree.map(lambda v: v[1], x.params),
                           jax.tree.map(lambda v: v[1], y.params))
    assert not _tree_equal(a[-1].params, b[-1].params)


@pytest.mark.parametrize("plus", [False, True])
def test_update_norm_is_clipped(plus):
    """One worker, one group, pi = 1, negligible noise: the model moves by the clipped update
    (norm <= c per epoch for DP-OGL, <= sqrt(S) c per window for DP-OGL+)."""
    data = _toy.blobs(num_clients=1, seed=9, sizes=[10])
    S, c = 3, 0.01
    alg = D.dp_ogl(MODEL, groups.gl(1), period=S, clip_norms=c, noise_multipliers=1e-9,
                   sampling_rates=1.0, plus=plus, local_steps=5, batch_size=5, client_lr=1.0)
    states, diags, _ = _run(alg, data, 2 * S)
    ravel = lambda st: np.concatenate([np.ravel(x) for x in jax.tree.leaves(st.params)])
    if not plus:
        norms = [np.linalg.norm(ravel(b) - ravel(a)) for a, b in zip(states, states[1:])]
        np.testing.assert_allclose(norms, c, rtol=1e-4)
        assert float(diags[0]["clipped_fraction"]) == 1.0
    else:
        norms = [np.linalg.norm(ravel(states[k + S]) - ravel(states[k])) for k in (0, S)]
        np.testing.assert_allclose(norms, np.sqrt(S) * c, rtol=1e-4)
        # local window updates: the group model only moves when the window closes
        assert _tree_equal(states[1].params, states[0].params)


def test_noise_scale_per_group():
    """With zero updates theta^{t+1} - theta^t ~ N(0, (c sigma / (pi |N_m|))^2) per group."""
    model = _toy.logreg(40, 10)
    s = groups.from_groups([[0, 1], [1, 2, 3, 4, 5]])
    data = federated.from_client_arrays([np.ones((2, 40), np.float32)] * 6,
                                        [np.zeros(2, np.int32)] * 6)
    c, sigma, q = 0.5, 1.5, 0.5
    alg = D.dp_ogl(model, s, period=1, clip_norms=c, noise_multipliers=sigma, sampling_rates=q,
                   local_steps=0, batch_size=2, client_lr=0.1)  # L = 0: zero updates
    st = alg.init(model.init(jax.random.key(0)))
    apply = jax.jit(alg.apply)
    diffs = [[], []]
    for r in range(6):
        new, _ = apply(st, data.to_device(), alg.prepare(r, np.random.default_rng(r)),
                       jax.random.key(r))
        for m in range(2):
            diffs[m].append(np.concatenate([np.ravel(x[m] - y[m]) for x, y in zip(
                jax.tree.leaves(new.params), jax.tree.leaves(st.params), strict=True)]))
        st = new
    for m, size in enumerate((2, 5)):
        v = np.concatenate(diffs[m])
        std = c * sigma / (q * size)
        assert stats.kstest(v / std, "norm").pvalue > 1e-3
        for wrong in (2 / 3, 3 / 2):
            assert stats.kstest(v / (std * wrong), "norm").pvalue < 1e-6


def test_fixed_denominator_is_unbiased():
    """E over Poisson masks of sum_W Delta phi / (pi |N|) equals the mean member update."""
    s = groups.from_groups([[0, 1, 2, 3]])
    data = _toy.blobs(num_clients=4, seed=10, sizes=[6] * 4)
    kw = dict(period=1, clip_norms=1e6, noise_multipliers=1e-12, **HP)
    full = D.dp_ogl(MODEL, s, sampling_rates=1.0, **kw)
    st = full.init(_params())
    key = jax.random.key(3)
    target, _ = jax.jit(full.apply)(st, data.to_device(), D.RoundInput(np.ones(4, bool)), key)
    q = 0.4
    alg = D.dp_ogl(MODEL, s, sampling_rates=q, **kw)
    apply = jax.jit(alg.apply)
    rng = np.random.default_rng(0)
    draws = [jax.tree.map(lambda a, b: a - b, apply(st, data.to_device(), alg.prepare(0, rng),
                                                    key)[0].params, st.params)
             for _ in range(300)]
    mean = jax.tree.map(lambda *xs: np.mean(np.stack(xs), 0), *draws)
    sd = jax.tree.map(lambda *xs: np.std(np.stack(xs), 0), *draws)
    truth = jax.tree.map(lambda a, b: a - b, target.params, st.params)
    for mu, s_, t in zip(jax.tree.leaves(mean), jax.tree.leaves(sd), jax.tree.leaves(truth),
                         strict=True):
        assert np.all(np.abs(mu - t) <= 5 * s_ / np.sqrt(300) + 1e-7)


def test_start_points_single_group_exact_and_overlap_mean():
    s = groups.ring(9, 3)
    pw, pg, _, w_inter, _ = D._pair_tables(s)
    theta = {"w": jax.random.normal(jax.random.key(0), (3, 4, 2))}
    start = jtree.mix(jnp.asarray(w_inter), theta)["w"]
    for p in range(s.num_pairs):
        n, m = pw[p], pg[p]
        if s.worker_degrees[n] == 1:
            np.testing.assert_array_equal(start[p], theta["w"][m])
        else:
            mine = np.flatnonzero(s.membership[n])
            np.testing.assert_allclose(start[p], theta["w"][mine].mean(0), rtol=1e-6)


def test_plus_samples_once_per_window():
    s = groups.ring(9, 3)
    data = _toy.blobs(num_clients=9, seed=11)
    S = 3
    alg = D.dp_ogl_plus(MODEL, s, period=S, clip_norms=0.1, noise_multipliers=1.0,
                        sampling_rates=0.5, window_updates="shared", **HP)
    states, _, rins = _run(alg, data, 2 * S)
    masks = [np.asarray(st.window_mask) for st in states[1:]]
    for k in range(2):
        w = masks[k * S:(k + 1) * S]
        assert all(np.array_equal(w[0], x) for x in w)
        np.testing.assert_array_equal(w[0], np.asarray(rins[k * S].mask))
    # shared updates move the group models inside the window
    assert not _tree_equal(states[1].params, states[0].params)


def test_personalized_models_and_eval():
    s = groups.ring(9, 3)
    theta = {"w": jax.random.normal(jax.random.key(1), (3, 5, 3)), "b": jnp.zeros((3, 3))}
    phi = D.personalized_params(s, theta)
    np.testing.assert_allclose(phi["w"][0], np.asarray(theta["w"])[[0, 2]].mean(0), rtol=1e-6)
    np.testing.assert_array_equal(phi["w"][1], theta["w"][0])
    data = _toy.blobs(num_clients=9, seed=12, sizes=[4, 0, 5, 6, 3, 2, 7, 4, 3])
    ev = D.make_personalized_eval(MODEL, s, data.x, data.y, data.mask)
    out = ev(theta)
    accs = []
    for n in range(9):
        k = int(data.num_examples[n])
        if k == 0:
            continue
        pn = jax.tree.map(lambda x, n=n: x[n], phi)
        accs.append(np.mean(np.argmax(MODEL.apply(pn, data.x[n, :k]), -1) == data.y[n, :k]))
    np.testing.assert_allclose(out["test_accuracy"], np.mean(accs), rtol=1e-6)


def test_dp_event_and_info():
    s = groups.ring(12, 3)
    alg = D.dp_ogl(MODEL, s, period=2, clip_norms=0.05, noise_multipliers=2.0,
                   sampling_rates=0.7, **HP)
    assert alg.info["mode"] == "strict" and alg.info["threat_model"] == "tm1"
    from jaxfl.accounting import accountants
    eps_event = accountants.epsilon(alg.accountant.dp_event(20), 1e-5, accountant="rdp",
                                    orders=[float(a) for a in range(2, 64)])
    eps_pairs = acc_dp_ogl.pairwise_epsilon(s, t=21, period=2, delta=1e-5, noise_multipliers=2.0,
                                            sampling_rates=0.7,
                                            orders=[float(a) for a in range(2, 64)])
    np.testing.assert_allclose(eps_event, np.nanmax(eps_pairs), rtol=1e-9)
    plus = D.dp_ogl_plus(MODEL, s, period=2, clip_norms=0.05, noise_multipliers=2.0,
                         sampling_rates=0.7, window_updates="shared", **HP)
    assert plus.info["mode"] == "paper" and not plus.info["sound"]
    assert plus.info["threat_model"] == "tm2"


def test_accountant_is_built_from_the_mechanism_values():
    s = groups.ring(12, 3)
    kw = dict(clip_norms=0.05, noise_multipliers=[2.0, 2.5, 3.0], sampling_rates=0.6, **HP)
    alg = D.dp_ogl(MODEL, s, period=2, **kw)
    acc = alg.accountant
    assert isinstance(acc, acc_dp_ogl.PwPAccountant)
    assert (acc.unit, acc.mode, acc.sound, acc.threat_model) == ("worker", "strict", True, "tm1")
    r = acc.report(20, 1e-5)
    direct = acc_dp_ogl.pairwise_epsilon(s, t=21, period=2, delta=1e-5,
                                         noise_multipliers=[2.0, 2.5, 3.0], sampling_rates=0.6)
    np.testing.assert_array_equal(r.per_unit, direct)
    assert r.per_unit_axes == ("target", "observer")
    np.testing.assert_allclose(r.epsilon, np.nanmax(direct), rtol=1e-12)
    assert r.dp_event == alg.accountant.dp_event(20)
    assert acc.other_modes()["paper"].report(20, 1e-5).accountant == "pwp-rdp-opacus"
    # Per-group noise multipliers are constants; a uniform one is a traced hparam.
    assert set(alg.hparams) == {"client_lr"}
    plus = D.dp_ogl_plus(MODEL, s, period=2, clip_norms=0.05, noise_multipliers=2.0,
                         sampling_rates=0.7, window_updates="shared", **HP)
    assert set(plus.hparams) == {"client_lr", "clip_norm", "noise_multiplier"}
    pa = plus.accountant
    assert (pa.mode, pa.sound, pa.threat_model, pa.other_modes()) == ("paper", False, "tm2", {})
    local = D.dp_ogl_plus(MODEL, s, period=2, clip_norms=0.05, noise_multipliers=2.0,
                          sampling_rates=0.7, **HP).accountant
    assert (local.mode, local.sound) == ("strict", True)
    np.testing.assert_allclose(pa.epsilons([5, 20], 1e-5), local.epsilons([5, 20], 1e-5))


def test_training_loop_run_and_resume(tmp_path):
    s = groups.ring(9, 3)
    data = _toy.blobs(num_clients=9, seed=13)
    alg = D.dp_ogl_plus(MODEL, s, period=2, clip_norms=0.1, noise_multipliers=1.0,
                        sampling_rates=0.7, **HP)
    full = training.run(alg, data, params=_params(), rounds=5, seed=3, progress=False)
    training.run(alg, data, params=_params(), rounds=5, seed=3, workdir=tmp_path,
                 checkpoint_every=1, progress=False, stop_after=3)
    resumed = training.run(alg, data, params=_params(), rounds=5, seed=3, workdir=tmp_path,
                           checkpoint_every=1, progress=False)
    _assert_tree_equal(full.state.params, resumed.state.params)


def test_bad_arguments_are_rejected():
    s = groups.ring(9, 3)
    kw = dict(period=2, clip_norms=0.1, noise_multipliers=1.0, sampling_rates=0.7, **HP)
    with pytest.raises(validate.PrivacyParameterError):
        D.dp_ogl(MODEL, s, **{**kw, "noise_multipliers": 0.0})
    with pytest.raises(validate.PrivacyParameterError):
        D.dp_ogl(MODEL, s, **{**kw, "sampling_rates": 1.5})
    with pytest.raises(validate.ShapeError):
        D.dp_ogl(MODEL, s, **{**kw, "clip_norms": [0.1, 0.2]})
    with pytest.raises(validate.JaxflValueError):
        D.dp_ogl(MODEL, s, **{**kw, "period": 0})
    with pytest.raises(validate.JaxflValueError):
        D.dp_ogl(MODEL, s, window_updates="global", **kw)
    alg = D.dp_ogl(MODEL, s, **kw)
    with pytest.raises(validate.ShapeError):
        jax.jit(alg.apply)(alg.init(_params()), _toy.blobs(num_clients=4).to_device(),
                           D.RoundInput(np.ones(s.num_pairs, bool)), jax.random.key(0))


@pytest.mark.parametrize("window_updates", ["local", "shared"])
def test_plus_window_sums_of_others_depend_on_target_only_when_shared(window_updates):
    """The finding behind the default (docs/reproduction/dp_ogl.md): with Eq. 11's un-noised
    in-window updates ("shared"), the window sums of the target's group peers change when only
    the target's data change, so one window's release has sensitivity above sqrt(S) c. With
    "local" each pair's window sum depends on its own worker's data only (bitwise)."""
    import dataclasses

    s = groups.ring(9, 3)
    data = _toy.blobs(num_clients=9, seed=21, sizes=[8] * 9)
    target = 1
    x2 = np.array(data.x)
    x2[target] = -3.0 * x2[target] + 1.0  # change the target worker's data only
    data2 = dataclasses.replace(data, x=x2)
    alg = D.dp_ogl_plus(MODEL, s, period=2, clip_norms=10.0, noise_multipliers=1.0,
                        sampling_rates=1.0, window_updates=window_updates, **HP)
    inputs = [alg.prepare(r, np.random.default_rng([0, r])) for r in range(2)]
    a, _, _ = _run(alg, data, 2, inputs=inputs)
    b, _, _ = _run(alg, data2, 2, inputs=inputs)
    pw, pg = s.pairs()
    group = pg[pw == target][0]
    peers = np.flatnonzero((pg == group) & (pw != target))
    # The window sums as they stand when the window closes (epoch 2), before clipping/noise.
    diff = max(float(np.max(np.abs(np.asarray(x)[peers] - np.asarray(y)[peers])))
               for x, y in zip(jax.tree.leaves(a[2].acc), jax.tree.leaves(b[2].acc)))
    own = max(float(np.max(np.abs(np.asarray(x)[pw == target] - np.asarray(y)[pw == target])))
              for x, y in zip(jax.tree.leaves(a[2].acc), jax.tree.leaves(b[2].acc)))
    assert own > 1e-3  # the target's own window sum does change
    if window_updates == "local":
        assert diff == 0.0
    else:
        assert diff > 1e-3
