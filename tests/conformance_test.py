"""The plug-in contract: one suite over every registered algorithm (jaxfl.algorithms.registry).

Each registered example is checked for:

1. the accountant matches the hyperparameters: ``accountant.hparams`` are the builder's, the
   epsilon recomputed from them alone (a rebuild) is the same, more noise gives a smaller
   epsilon, and where the accountant gives a DpEvent its epsilon agrees with dp-accounting's
   own RDP accountant on that event (for DP-FedAvg the event is also built here from the
   hyperparameters);
2. the vmapped round equals a per-unit loop: two rounds with every unit axis of the round
   (cohort clients, users, pairs, groups, nodes, silos) computed one unit at a time (the
   memory-fitted layouts narrowed to one unit, :func:`jaxfl.layout.narrowed`, and the
   algorithm modules' own ``jax.vmap`` replaced by a ``lax.map`` loop) equal the same point
   of the sweep batch of check 4, where every unit axis is fully vmapped;
3. the noise's standard deviation passes a Kolmogorov-Smirnov test: the std of every privacy
   draw of the first round, recorded where :mod:`jaxfl.noise` / :mod:`jaxfl.privatizer` makes
   it, is the one computed from the accountant's numbers, and the draw function at that std
   passes a KS test against N(0, std^2) and fails one against a 10% larger std;
4. every traced hyperparameter batches in a sweep: a 2-point batch [A, B] of
   :func:`jaxfl.vmapped_runs.block_fn` compiled from B's builder (every traced hyperparameter
   different at B, bound by :func:`jaxfl.algorithms.base.bind_hparams`) equals the single
   runs: A's own (its builder, unbatched) and B's (the batch [B, B]);
5. the audit bound stays under the claim (a small :mod:`jaxfl.audit` run where the library
   has an audit of the algorithm; skipped with the reason otherwise);
6. the precision walk passes (:mod:`jaxfl.precision`; not vacuous: the round has a marked
   sensitive computation and noise added to it).

Variants (``registry.register(..., variant=True)``) get checks 1 and 6 only. Tiny shapes, two
rounds; tolerances tied to the dtype (:mod:`tests._tolerance`). Checks 2-4 share two compiled
programs per example (:func:`_runs`: A alone, looped; the sweep block on [A, B] and [B, B]):
compiling is most of the suite's time. So check 2 also fails when a builder computes with its
own value of a traced hyperparameter (its vmapped side is B's builder at A's values).
"""

import contextlib
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxfl import layout, precision, vmapped_runs
from jaxfl import random as jrandom
from jaxfl.algorithms import base, registry
from tests import _precision, _tolerance

pytest.importorskip("jax_privacy")

NAMES = registry.names()
PRIMARY = registry.names(variants=False)
PRIVATE_PRIMARY = [n for n in PRIMARY if registry.entry(n).noise is not None]
DELTA = 1e-5


@functools.cache
def _example(name, **hparams):
    return registry.example(name, **hparams)


def _state(ex):
    return ex.algorithm.init(ex.initial_params())


def _round(alg, state, data, rin, key):
    return base.call_apply(alg, state, data, rin, key)


# The std of every privacy draw a compiled round made (name -> draw function -> values), recorded
# by a host callback where jaxfl.noise / jaxfl.privatizer makes the draw (check 3).
STDS: dict = {}
DRAWS = ("gaussian_like", "pair_noise", "local_noise")


def _draw_module(draw):
    from jaxfl import noise, privatizer
    return noise if hasattr(noise, draw) else privatizer


@contextlib.contextmanager
def _recording_stds(name):
    """Inside, the draw functions record the std of each draw they make for ``name``."""
    record = STDS.setdefault(name, {d: [] for d in DRAWS})
    originals = {d: getattr(_draw_module(d), d) for d in DRAWS}

    def recorded(draw, fn):
        def wrapped(*args, **kwargs):
            std = kwargs["stddev"] if "stddev" in kwargs else args[2]
            jax.debug.callback(lambda v: record[draw].append(np.ravel(np.asarray(v, float))),
                               jnp.asarray(std))
            return fn(*args, **kwargs)
        return wrapped

    try:
        for d, fn in originals.items():
            setattr(_draw_module(d), d, recorded(d, fn))
        yield
    finally:
        for d, fn in originals.items():
            setattr(_draw_module(d), d, fn)


def _assert_trees_close(a, b, dtype=jnp.float32, what=""):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb), what
    for x, y in zip(la, lb, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            continue
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=_tolerance.rtol(dtype),
                                       atol=_tolerance.atol(dtype), err_msg=what)
        else:
            np.testing.assert_array_equal(x, y, err_msg=what)


# ---------------------------------------------------------------------------------------------
# 1. The accountant matches the hyperparameters.
# ---------------------------------------------------------------------------------------------


def _dp_fedavg_event(h, rounds):
    import dp_accounting
    return dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        h["sampling_rate"], dp_accounting.GaussianDpEvent(h["noise_multiplier"])), rounds)


# The DpEvent of a run, built here from the hyperparameters alone (where it is that simple).
EXPECTED_EVENTS = {"dp_fedavg": _dp_fedavg_event}


@pytest.mark.parametrize("name", NAMES)
def test_the_accountant_matches_the_hyperparameters(name):
    import dp_accounting

    ex = _example(name)
    alg, acc = ex.algorithm, ex.algorithm.accountant
    if not acc.private:
        assert dict(acc.hparams) == {} and np.all(np.isinf(acc.epsilons([1, 2], DELTA)))
        return
    accounted = dict(acc.hparams)
    # every privacy hparam the algorithm traces is one its accountant was built from, equal
    assert set(alg.hparams) & set(base.PRIVACY_HPARAMS) <= set(accounted), name
    for k, v in accounted.items():
        builder = alg.hparams.get(k, alg.info.get(k))
        if builder is not None:
            assert float(builder) == v, (name, k, builder, v)
    assert acc.privatizer is not None and acc.privatizer.clip_norm == accounted["clip_norm"]
    base.bind_hparams(alg)  # refuses an algorithm whose hparams its accountant did not see
    rounds = [1, 6]  # (DP-OGL+ releases when a window closes; DP-FTRL's horizon is 6)
    eps = np.asarray(acc.epsilons(rounds, DELTA), float)
    assert np.all(np.isfinite(eps)) and eps[1] > 0 and eps[1] >= eps[0], eps
    # recomputed from the accounted values alone: the same numbers
    again = _example(name, **{k: v for k, v in accounted.items() if k in alg.hparams})
    np.testing.assert_array_equal(again.algorithm.accountant.epsilons(rounds, DELTA), eps)
    # the accountant reads sigma: more noise, less epsilon
    if "noise_multiplier" in alg.hparams:
        more = _example(name, noise_multiplier=1.25 * accounted["noise_multiplier"])
        assert more.algorithm.accountant.epsilons(rounds, DELTA)[-1] < eps[-1], name
    # an independent computation of the same event (dp-accounting's RDP accountant)
    event = acc.dp_event(rounds[-1])
    if name in EXPECTED_EVENTS:
        assert event == EXPECTED_EVENTS[name](accounted, rounds[-1]), event
    if event is not None and acc.name in ("rdp", "pld") and \
            getattr(acc, "per_round", None) == "rdp":
        rdp = dp_accounting.rdp.RdpAccountant()
        independent = rdp.compose(event).get_epsilon(DELTA)
        # the library's RDP orders differ from dp-accounting's default grid: within 3%
        assert eps[-1] == pytest.approx(independent, rel=0.03), (eps[-1], independent)


# ---------------------------------------------------------------------------------------------
# 2. The vmapped round equals a per-unit loop.
# ---------------------------------------------------------------------------------------------


class _Looped:
    """The ``jax`` module as the algorithm modules see it, with ``vmap`` a ``lax.map`` loop:
    each unit of the mapped axis computed alone, one after the other."""

    def __init__(self):
        self.loops = 0

    def __getattr__(self, name):
        return getattr(jax, name)

    def vmap(self, fun, in_axes=0, out_axes=0, **kwargs):
        axes_ok = lambda a: a is None or isinstance(a, int)  # noqa: E731
        if kwargs or out_axes != 0 or not (
                axes_ok(in_axes) or all(axes_ok(a) for a in in_axes)):
            return jax.vmap(fun, in_axes, out_axes, **kwargs)

        def looped(*args):
            axes = tuple(in_axes) if isinstance(in_axes, tuple | list) else (in_axes,) * len(args)
            mapped = [i for i, a in enumerate(axes) if a is not None]
            xs = tuple(jax.tree.map(lambda x, a=axes[i]: jnp.moveaxis(x, a, 0) if a else x,
                                    args[i]) for i in mapped)

            def one(sl):
                full = list(args)
                for i, s in zip(mapped, sl, strict=True):
                    full[i] = s
                return fun(*full)

            self.loops += 1
            return jax.lax.map(one, xs)

        return looped


def _algorithm_modules():
    import importlib
    import pkgutil

    import jaxfl.algorithms as package
    return [importlib.import_module(f"jaxfl.algorithms.{m.name}")
            for m in pkgutil.iter_modules(package.__path__)]


@contextlib.contextmanager
def _looping():
    """Inside, every unit axis is computed one unit at a time: the memory-fitted layouts
    narrowed to one unit and the algorithm modules' own ``jax.vmap`` a ``lax.map`` loop.
    Yields the :class:`_Looped` stand-in and the layouts recorded while tracing."""
    looped = _Looped()
    modules = [m for m in _algorithm_modules() if getattr(m, "jax", None) is jax]
    for module in modules:
        module.jax = looped
    try:
        with layout.narrowed(1), layout.recording() as unit_axes:
            yield looped, unit_axes
    finally:
        for module in modules:
            module.jax = jax


# ---------------------------------------------------------------------------------------------
# The two compiled programs of an example, shared by checks 2, 3 and 4 (one compile each).
# ---------------------------------------------------------------------------------------------

ROUNDS = 2
KEY_DATA = [np.asarray(jax.random.key_data(jax.random.key(s))) for s in (11, 12)]


def _other(name, value):
    """A second point's value: rates stay in (0, 1]."""
    return 0.8 * value if name == "sampling_rate" else 1.25 * value


def _inputs(alg, r):
    return alg.prepare(r, np.random.default_rng([7, r]))


def _point(tree, p):
    return jax.tree.map(lambda x: x[p], tree)


class _Runs(NamedTuple):
    a: registry.Example  # point A: the registered example
    b: registry.Example  # point B: every traced hyperparameter another value (its builder)
    single: tuple  # A alone, each unit axis looped: (state, diag) after ROUNDS rounds
    loops: int  # the vmaps the looped run replaced by a loop
    unit_axes: list  # the layouts of the looped run's unit axes: (kind, units, chunk)
    full_axes: list  # the layouts of the batch's unit axes (chunk None: fully vmapped)
    batch: tuple  # the batch [A, B]: (states, last diagnostics), unit axes fully vmapped
    batch_b: tuple  # the same compiled batch on [B, B]
    stds: dict  # the std of every privacy draw of A's first round, by draw function


@functools.cache
def _runs(name) -> _Runs:
    """Example ``name``'s two compiled programs and what they compute (cached; checks 2-4
    assert on it). A alone runs ROUNDS rounds with every unit axis one unit at a time,
    recording its draws' stds (check 3); the library's sweep block
    (:func:`jaxfl.vmapped_runs.block_fn`) compiled from B's builder, every unit axis fully
    vmapped, runs the points [A, B] (A's traced values bound into B's builder) and, as B's
    single run, [B, B] (the same compiled program)."""
    a = _example(name)
    values = {k: _other(k, v) for k, v in a.algorithm.hparams.items()}
    b = _example(name, **values)
    assert dict(b.algorithm.hparams) == pytest.approx(values), (b.algorithm.hparams, values)
    data, alg = a.device_data(), a.algorithm
    with _looping() as (looped, unit_axes), _recording_stds(name):
        step = jax.jit(functools.partial(_round, alg))
        state, diag = _state(a), None
        for r in range(ROUNDS):
            key = jrandom.round_key(jax.random.wrap_key_data(KEY_DATA[0]), r)
            state, diag = step(state, data, _inputs(alg, r), key)
            if r == 0:  # the first round's draws (an adaptive clip moves the std later)
                jax.effects_barrier()
                stds = {d: list(v) for d, v in STDS[name].items()}
    block = vmapped_runs.block_fn(b.algorithm, data_axis=None, spmd=False)

    def batch(*points):
        inputs = vmapped_runs.stack_round_inputs(
            [vmapped_runs.stack_round_inputs([_inputs(ex.algorithm, r) for ex in points])
             for r in range(ROUNDS)])
        keys = np.stack([KEY_DATA[0 if ex is a else 1] for ex in points])
        states = jax.tree.map(lambda *x: jnp.stack(x), *[_state(ex) for ex in points])
        return block(states, data, inputs, keys,
                     base.bind_hparams([ex.algorithm for ex in points]), jnp.arange(ROUNDS))

    with layout.narrowed(10**9), layout.recording() as full_axes:
        mixed = batch(a, b)
    return _Runs(a, b, (state, diag), looped.loops, unit_axes, full_axes, mixed, batch(b, b),
                 stds)


# ---------------------------------------------------------------------------------------------
# 2. The vmapped round equals a per-unit loop.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRIMARY)
def test_the_vmapped_round_equals_a_per_unit_loop(name):
    """A's ROUNDS rounds with every unit axis one unit at a time equal point A of the sweep
    batch, where every unit axis is fully vmapped."""
    runs = _runs(name)
    assert runs.loops + len(runs.unit_axes) > 0, f"{name}: no unit axis was looped"
    assert all(chunk is None for _, _, chunk in runs.full_axes), runs.full_axes
    assert all(chunk in (1, None) and (chunk == 1 or units == 1)
               for _, units, chunk in runs.unit_axes), runs.unit_axes
    _assert_trees_close(_point(runs.batch, 0), runs.single, what=name)


# ---------------------------------------------------------------------------------------------
# 3. The noise's standard deviation passes a KS test.
# ---------------------------------------------------------------------------------------------

SAMPLES = 16000  # a 10% larger std is rejected: KS distance ~0.037, sqrt(n) x 0.037 ~ 4.6


@functools.partial(jax.jit, static_argnums=0)
def _redraw(draw, std, key):
    """``SAMPLES`` draws of the library's draw function ``draw`` at ``std`` (one compile per
    draw function)."""
    fn = getattr(_draw_module(draw), draw)
    if draw == "gaussian_like":
        return fn(jnp.zeros(SAMPLES), key, std)
    if draw == "pair_noise":
        return fn(key, (SAMPLES,), std)
    return fn(key[None], (SAMPLES,), std)[0]


@pytest.mark.parametrize("name", PRIVATE_PRIMARY)
def test_the_noise_std_passes_a_ks_test(name):
    """The std of every privacy draw of a round (recorded where the draw is made) is the one
    the accountant's numbers give, and the draw function at that std is N(0, std^2): a KS
    test accepts it and rejects 1.1 x std."""
    runs = _runs(name)  # (A's looped run recorded the stds)
    expected = registry.entry(name).noise.std(runs.a.algorithm)
    recorded = {d: np.unique(np.concatenate(v)) for d, v in runs.stds.items() if v}
    assert set(recorded) == set(expected), (name, sorted(recorded), sorted(expected))
    for k, (draw, stds) in enumerate(sorted(recorded.items())):
        std = float(expected[draw])  # a Python float: scipy's array-API layer takes jax scalars
        for s in stds:
            z = np.asarray(_redraw(draw, s, jax.random.key(100 + k)), np.float64)
            right = stats.kstest(z, "norm", args=(0.0, std)).pvalue
            wrong = stats.kstest(z, "norm", args=(0.0, 1.1 * std)).pvalue
            assert right > 1e-3, (name, draw, std, s, np.std(z), right)
            assert wrong < 1e-3, (name, draw, std, s, np.std(z), wrong)


# ---------------------------------------------------------------------------------------------
# 4. Every traced hyperparameter batches in a sweep.
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PRIMARY)
def test_every_traced_hparam_batches_in_a_sweep(name):
    """A 2-point batch [A, B] (every traced hyperparameter different at B) of the sweep block
    compiled from B's builder equals the single runs: A's own (its builder, unbatched) and B's
    (the batch [B, B]): so the traced values, not the builder's, are the ones computed with,
    and a point does not see the other."""
    runs = _runs(name)
    assert runs.a.algorithm.hparams, f"{name} declares no traced hyperparameter"
    _assert_trees_close(_point(runs.batch, 0), runs.single, what=f"{name} point A")
    for p in (0, 1):
        _assert_trees_close(_point(runs.batch, 1), _point(runs.batch_b, p),
                            what=f"{name} point B")
    # not vacuous: the two points differ
    pa, pb = (np.concatenate([np.ravel(x) for x in jax.tree.leaves(
        runs.a.algorithm.params_of(_point(runs.batch[0], p)))]) for p in (0, 1))
    assert not np.allclose(pa, pb), name


# ---------------------------------------------------------------------------------------------
# 5. The audit bound stays under the claim.
# ---------------------------------------------------------------------------------------------

TRIALS = 3000


def _sigma(ex):
    return ex.algorithm.accountant.hparams["noise_multiplier"]


def _audit_dp_fedavg(ex):
    from jaxfl.audit import dp_fedavg
    h = ex.algorithm.accountant.hparams
    return dp_fedavg.audit_dp_fedavg(noise_multiplier=h["noise_multiplier"],
                                     sampling_rate=h["sampling_rate"], rounds=1, trials=TRIALS,
                                     delta=1e-2, key=jax.random.key(7))


def _audit_uldp_avg(ex):
    from jaxfl.audit import uldp
    return uldp.audit_uldp_avg(noise_multiplier=_sigma(ex), num_silos=3, rounds=1,
                               trials=TRIALS, delta=1e-2, key=jax.random.key(9),
                               sampling_rate=ex.algorithm.accountant.hparams["sampling_rate"])


def _audit_uldp_naive(ex):
    from jaxfl.audit import uldp
    return uldp.audit_uldp_naive(noise_multiplier=_sigma(ex), num_silos=3, rounds=1,
                                 trials=TRIALS, delta=1e-2, key=jax.random.key(0))


def _audit_dp_ogl(ex):
    from jaxfl.audit import dp_ogl
    return dp_ogl.audit_dp_ogl_pair(noise_multiplier=_sigma(ex), trials=TRIALS, delta=1e-2,
                                    key=jax.random.key(5))


def _audit_gossip(ex):
    from jaxfl.audit import gossip
    from jaxfl.topology import graphs, mixing
    W = mixing.closed_neighbourhood(graphs.ring(6))
    return gossip.audit_gossip_pair(W, target=0, observer=2, T=2, noise_multiplier=_sigma(ex),
                                    trials=TRIALS, delta=1e-2, key=jax.random.key(11))


def _audit_higradavg(ex):
    from jaxfl.audit import subject_dp
    return subject_dp.audit_higradavg(noise_multiplier=ex.algorithm.info["noise_multipliers"][0],
                                      items_per_user=10, num_users=2, rounds=2, trials=TRIALS,
                                      delta=1e-2, key=jax.random.key(4))


def _audit_lightdp(ex):
    from jaxfl.audit import lightdp
    return lightdp.audit_lightdp(epsilon=2.0, delta=1e-2, num_clients=6, max_colluders=2,
                                 max_stragglers=1, trials=TRIALS, key=jax.random.key(8))


AUDITS = {"dp_fedavg": _audit_dp_fedavg, "uldp_avg": _audit_uldp_avg,
          "uldp_naive": _audit_uldp_naive, "dp_ogl": _audit_dp_ogl, "gossip": _audit_gossip,
          "higradavg_dp": _audit_higradavg, "lightdp_aggregate": _audit_lightdp}
NO_AUDIT = {
    "dp_fedavg_adaptive_clip": "jaxfl.audit has no audit of the adaptive clip's count",
    "dp_ftrl": "jaxfl.audit has no audit of the matrix mechanism (correlated noise)",
    "dp_ogl_plus": "jaxfl.audit audits DP-OGL+ only with the paper's shared window updates",
    "fedavg": "non-private: no claim to audit",
    "gossip_fedavg_round": "jaxfl.audit has no audit of full-batch DP-FedAvg over nodes",
    "lightdp_faithful": "the LightDP audit (lightdp_aggregate) covers the masking of both paths",
    "local_item_dp": "jaxfl.audit has no item-level audit of LocalItemDP",
    "local_group_dp": "the LocalGroupDP audit calibrates its own design (tests/audit)",
    "user_ldp": "the UserLDP audit attacks a calibrated subject-level budget (tests/audit)",
    "silo_level_dp": "jaxfl.audit has no silo-level audit",
    "uldp_group": "the group audit is a coupled-pair construction (tests/audit)",
    "uldp_sgd_optimal_weights": "jaxfl.audit audits ULDP-AVG, not ULDP-SGD",
}


def test_every_primary_algorithm_has_an_audit_or_a_reason():
    assert set(AUDITS) | set(NO_AUDIT) == set(PRIMARY)
    assert not set(AUDITS) & set(NO_AUDIT)


@pytest.mark.parametrize("name", PRIMARY)
def test_the_audit_bound_stays_under_the_claim(name):
    if name not in AUDITS:
        pytest.skip(NO_AUDIT.get(name, "no audit registered"))
    result = AUDITS[name](_example(name))
    assert 0.0 <= result.epsilon_lb <= result.claimed["strict"], result


# ---------------------------------------------------------------------------------------------
# 6. The precision walk passes.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_the_precision_walk_passes(name):
    ex = _example(name)
    if not ex.algorithm.accountant.private:
        pytest.skip("non-private: no noise for the walk to reach")
    jaxpr = _precision.round_jaxpr(ex.algorithm, ex.device_data(), ex.initial_params())
    assert precision.violations(jaxpr) == []
    counts = precision.summary(jaxpr)
    # Not vacuous: the round has a marked sensitive computation and its noise is added to it.
    assert counts["sensitivity_eqns"] > 0 and counts["noise_additions"] > 0, counts
