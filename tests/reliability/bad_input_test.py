"""Malformed input to public entry points raises a typed error before any computation.

Hypothesis draws an entry point (accountants, events, conversions, partitioners, samplers,
loaders, algorithm builders, the training loop, the config layer) and a malformed value for
one of its arguments (NaN, inf, wrong sign, wrong type, out-of-range probability or delta,
fractional counts, ...). Each call must raise a ``jaxfl.validate`` error (a ``ValueError``
subclass) or a ``FileNotFoundError`` subclass, and must do so before the accountant composes an
event or jit traces a computation (the accountants are patched to fail loudly if reached).
Valid inputs, conversely, never produce NaN and never a smaller epsilon than a tighter
reference allows.
"""

import contextlib
import math
from pathlib import Path
from unittest import mock

import jax
import numpy as np
import optax
import pytest
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from jaxfl import training, validate
from jaxfl.accounting import accountants, conversions, events, recipes
from jaxfl.algorithms import dp_fedavg, fedavg
from jaxfl.data import catalog, federated, idx, partition, sampling
from tests import _toy

NAN, INF = float("nan"), float("inf")
SETTINGS = dict(derandomize=True, deadline=None, phases=[Phase.explicit, Phase.generate,
                                                         Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TYPED = (validate.JaxflValueError, FileNotFoundError)

# ---------------------------------------------------------------------------------------------
# Strategies of malformed values.
non_numbers = st.sampled_from([None, "1.0", "abc", [1.0], (0.5,), {}, b"1", True, False,
                               np.array([1.0, 2.0]), object()])
non_finite = st.sampled_from([NAN, INF, -INF, np.float32(NAN), np.float64(INF)])
bad_positive = st.one_of(non_numbers, non_finite, st.floats(max_value=0.0, allow_nan=False),
                         st.integers(max_value=0))
bad_non_negative = st.one_of(non_numbers, non_finite,
                             st.floats(max_value=-1e-12, allow_nan=False, allow_infinity=False),
                             st.integers(max_value=-1))
bad_probability = st.one_of(non_numbers, non_finite, st.floats(max_value=0.0, allow_nan=False),
                            st.floats(min_value=1.0, exclude_min=True, allow_nan=False))
bad_delta = st.one_of(non_numbers, non_finite, st.floats(max_value=0.0, allow_nan=False),
                      st.floats(min_value=1.0, allow_nan=False))
fractional = st.integers(-10**6, 10**6).flatmap(
    lambda i: st.sampled_from([i + 0.5, i + 0.25, i + 1e-3]))


def bad_count(minimum=1):
    return st.one_of(non_numbers, non_finite, fractional, st.integers(max_value=minimum - 1))


def bad_choice(choices):
    return st.one_of(st.text(max_size=8), non_numbers).filter(
        lambda v: not isinstance(v, str) or v not in choices)


@contextlib.contextmanager
def no_accounting():
    """Makes any accountant composition fail loudly: validation must come first."""

    def boom(*args, **kwargs):
        raise AssertionError("an accountant was reached with malformed input")

    with mock.patch.object(dp_rdp.RdpAccountant, "compose", boom), \
            mock.patch.object(dp_pld.PLDAccountant, "compose", boom):
        yield


def raises_typed(fn):
    with pytest.raises(TYPED):
        fn()


# ---------------------------------------------------------------------------------------------
# Accounting: events, accountants, recipes, conversions.
G = events.gaussian(1.0)
SGD = events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.01, steps=10)

ACCOUNTING = {
    "gaussian.noise_multiplier": (bad_positive, lambda v: events.gaussian(v)),
    "poisson_gaussian.sampling_rate": (
        bad_probability, lambda v: events.poisson_gaussian(sampling_rate=v, noise_multiplier=1.0)),
    "poisson_gaussian.noise_multiplier": (
        bad_positive, lambda v: events.poisson_gaussian(sampling_rate=0.1, noise_multiplier=v)),
    "dp_sgd.steps": (bad_count(0), lambda v: events.dp_sgd(noise_multiplier=1.0,
                                                            sampling_rate=0.1, steps=v)),
    "repeated.count": (bad_count(0), lambda v: events.repeated(G, v)),
    "composed.events": (non_numbers, lambda v: events.composed([G, v])),
    "mixture.sensitivities": (bad_non_negative, lambda v: events.mixture_of_gaussians(
        noise_multiplier=1.0, sensitivities=[0.0, v], sampling_probs=[0.5, 0.5])),
    "mixture.sampling_probs": (bad_probability, lambda v: events.mixture_of_gaussians(
        noise_multiplier=1.0, sensitivities=[0.0, 1.0], sampling_probs=[0.5, v])),
    "epsilon.delta": (bad_delta, lambda v: accountants.epsilon(SGD, v)),
    "epsilon.delta.rdp": (bad_delta, lambda v: accountants.epsilon(SGD, v, accountant="rdp")),
    "epsilon.event": (non_numbers, lambda v: accountants.epsilon(v, 1e-5)),
    "epsilon.accountant": (bad_choice(("pld", "rdp")),
                           lambda v: accountants.epsilon(SGD, 1e-5, accountant=v)),
    "epsilon.conversion": (bad_choice(recipes.CONVERSIONS),
                           lambda v: accountants.epsilon(SGD, 1e-5, accountant="rdp",
                                                         conversion=v)),
    "epsilon.orders": (st.one_of(st.just([]), st.lists(st.one_of(
        non_finite, st.floats(max_value=1.0, allow_nan=False)), min_size=1, max_size=3).map(
            lambda bad: bad + [2.0])),
        lambda v: accountants.epsilon(G, 1e-5, accountant="rdp", orders=v)),
    "epsilon.value_discretization_interval": (
        bad_positive, lambda v: accountants.epsilon(G, 1e-5, value_discretization_interval=v)),
    "delta_for_epsilon.epsilon": (bad_non_negative,
                                  lambda v: accountants.delta_for_epsilon(G, v)),
    "delta_for_epsilon.event": (non_numbers, lambda v: accountants.delta_for_epsilon(v, 1.0)),
    "epsilon_curve.steps": (st.one_of(non_finite, fractional, st.integers(max_value=-1)),
                            lambda v: accountants.epsilon_curve(G, [1, v], 1e-5)),
    "epsilon_curve.delta": (bad_delta, lambda v: accountants.epsilon_curve(G, [1, 2], v)),
    "calibrate.target_epsilon": (bad_positive, lambda v: accountants.calibrate_noise_multiplier(
        events.gaussian, target_epsilon=v, delta=1e-5)),
    "calibrate.delta": (bad_delta, lambda v: accountants.calibrate_noise_multiplier(
        events.gaussian, target_epsilon=1.0, delta=v)),
    "calibrate.lower": (bad_positive, lambda v: accountants.calibrate_noise_multiplier(
        events.gaussian, target_epsilon=1.0, delta=1e-5, lower=v)),
    "calibrate.upper": (st.one_of(bad_positive, st.floats(0.001, 0.05)),
                        lambda v: accountants.calibrate_noise_multiplier(
                            events.gaussian, target_epsilon=1.0, delta=1e-5, upper=v)),
    "calibrate.tol": (bad_positive, lambda v: accountants.calibrate_noise_multiplier(
        events.gaussian, target_epsilon=1.0, delta=1e-5, tol=v)),
    "epsilon_from_rdp.rdp": (st.one_of(st.just(NAN), st.floats(max_value=-1e-9,
                                                               allow_nan=False)),
                             lambda v: recipes.epsilon_from_rdp([2.0, 3.0], [v, 1.0], 1e-5)),
    "epsilon_from_rdp.delta": (bad_delta,
                               lambda v: recipes.epsilon_from_rdp([2.0, 3.0], [1.0, 1.0], v)),
    "gaussian_epsilon.mu": (st.one_of(non_numbers, st.just(NAN), st.floats(
        max_value=-1e-12, allow_nan=False)), lambda v: conversions.gaussian_epsilon(v, 1e-5)),
    "gaussian_epsilon.delta": (bad_delta, lambda v: conversions.gaussian_epsilon(1.0, v)),
    "gaussian_delta.epsilon": (bad_non_negative, lambda v: conversions.gaussian_delta(1.0, v)),
    "gaussian_noise_multiplier.epsilon": (
        bad_positive, lambda v: conversions.gaussian_noise_multiplier(v, 1e-5)),
    "composed_gaussian_mu": (st.one_of(st.just(NAN), st.floats(max_value=0.0, allow_nan=False)),
                             lambda v: conversions.composed_gaussian_mu([1.0, v])),
    "group_epsilon_delta.group_size": (
        bad_count(1), lambda v: conversions.group_epsilon_delta(1.0, 1e-5, v)),
    "group_epsilon_delta.epsilon": (
        bad_non_negative, lambda v: conversions.group_epsilon_delta(v, 1e-5, 2)),
    "rdp_group_mironov.rdp": (st.one_of(st.just(NAN), st.floats(max_value=-1e-9,
                                                                allow_nan=False)),
                              lambda v: conversions.rdp_group_mironov([4.0, 8.0], [v, 1.0], 2)),
}


@settings(max_examples=400, **SETTINGS)
@given(st.data())
def test_accounting_rejects_malformed_input_before_composing(data):
    name = data.draw(st.sampled_from(sorted(ACCOUNTING)), label="entry")
    strategy, call = ACCOUNTING[name]
    value = data.draw(strategy, label="value")
    with no_accounting():
        raises_typed(lambda: call(value))


@settings(max_examples=20, **SETTINGS)
@given(sigma=st.floats(0.5, 10.0), q=st.one_of(st.floats(1e-3, 0.3), st.just(1.0)),
       steps=st.integers(1, 200), delta=st.floats(1e-10, 0.1))
def test_valid_accounting_is_finite_and_ordered(sigma, q, steps, delta):
    """No NaN; more noise never costs more; RDP never claims less than the Gaussian bound."""
    ev = events.dp_sgd(noise_multiplier=sigma, sampling_rate=q, steps=steps)
    eps = accountants.epsilon(ev, delta, accountant="rdp")
    more_noise = accountants.epsilon(
        events.dp_sgd(noise_multiplier=sigma * 1.5, sampling_rate=q, steps=steps), delta,
        accountant="rdp")
    assert math.isfinite(eps) and eps >= 0.0
    assert more_noise <= eps + 1e-9
    if q == 1.0:  # the composed Gaussian is exactly mu-GDP: RDP may only be looser
        exact = conversions.gaussian_epsilon(math.sqrt(steps) / sigma, delta)
        assert eps >= exact - 1e-6
    curve = accountants.epsilon_curve(ev, [0, 1, steps], delta)
    assert np.all(np.isfinite(curve)) and np.all(np.diff(curve) >= -1e-12)


# ---------------------------------------------------------------------------------------------
# Data: partitioners, samplers, containers, loaders.
RNG = np.random.default_rng(0)
LABELS = np.arange(60) % 3

DATA = {
    "iid.num_clients": (bad_count(1), lambda v: partition.iid(RNG, 30, v)),
    "iid.num_examples": (bad_count(1), lambda v: partition.iid(RNG, v, 3)),
    "iid.rng": (st.one_of(non_numbers, st.integers()), lambda v: partition.iid(v, 30, 3)),
    "dirichlet.alpha": (bad_positive, lambda v: partition.dirichlet(RNG, LABELS, 3, alpha=v)),
    "dirichlet.labels": (st.sampled_from([np.zeros((3, 3), int), np.full(6, 0.5), -np.ones(6,
                         int), np.array(["a", "b"])]),
                         lambda v: partition.dirichlet(RNG, v, 2, alpha=1.0)),
    "dirichlet.num_clients": (bad_count(1),
                              lambda v: partition.dirichlet(RNG, LABELS, v, alpha=1.0)),
    "shards.num_clients": (st.one_of(bad_count(1), st.integers(61, 10**6)),
                           lambda v: partition.shards(RNG, LABELS, v)),
    "poisson.rate": (bad_probability, lambda v: sampling.Poisson(v)),
    "fixed_size.size": (st.one_of(bad_count(1), st.integers(11, 10**6)),
                        lambda v: sampling.FixedSize(v).sample(RNG, 10)),
    "cohort_indices.capacity": (bad_count(0), lambda v: sampling.cohort_indices(
        np.ones(4, bool), v)),
    "from_partition.indices": (st.sampled_from([np.array([0.5]), np.array([7]), np.array([-1]),
                                                np.array([1.0, 2.0])]),
                               lambda v: federated.from_partition(np.zeros((5, 2), np.float32),
                                                                  np.zeros(5), [v])),
    "from_partition.x": (st.sampled_from([NAN, INF, -INF]), lambda v: federated.from_partition(
        np.full((3, 2), v, np.float32), np.zeros(3), [np.array([0, 1])])),
    "from_partition.clients": (st.just([]), lambda v: federated.from_partition(
        np.zeros((3, 2)), np.zeros(3), v)),
    "catalog.load.name": (bad_choice(catalog.names()),
                          lambda v: catalog.load(v)),
    "load_mnist.split": (bad_choice(("train", "test")),
                         lambda v: idx.load_mnist(v, path="/nonexistent")),
    "load_mnist.path": (st.text(alphabet="abcxyz_/", min_size=1, max_size=12),
                        lambda v: idx.load_mnist("train", path=Path("/nonexistent") / v)),
    "parse_idx.bytes": (st.binary(max_size=64), lambda v: idx.parse_idx(v)),
}


@settings(max_examples=250, **SETTINGS)
@given(st.data())
def test_data_entry_points_reject_malformed_input(data):
    name = data.draw(st.sampled_from(sorted(DATA)), label="entry")
    strategy, call = DATA[name]
    value = data.draw(strategy, label="value")
    if name == "parse_idx.bytes":  # the rare random payload that is a valid IDX file is fine
        try:
            idx.parse_idx(value)
            return
        except TYPED:
            return
    raises_typed(lambda: call(value))


# ---------------------------------------------------------------------------------------------
# Topology constructors and the paper accountants built on them.
from jaxfl.accounting import dp_ogl as ogl_accounting  # noqa: E402
from jaxfl.accounting import gossip as gossip_accounting  # noqa: E402
from jaxfl.accounting import lightdp as lightdp_accounting  # noqa: E402
from jaxfl.accounting import uldp as uldp_accounting  # noqa: E402
from jaxfl.sensitivity import gossip_sensitivity  # noqa: E402
from jaxfl.topology import graphs, groups, mixing  # noqa: E402

RING_W = mixing.max_degree(graphs.ring(5))
STRING = groups.string(4, 2)
bad_matrix = st.sampled_from([np.array([[0, 1], [0, 0]]), np.array([[1, 1], [1, 0]]),
                              np.array([[0.0, NAN], [NAN, 0.0]]), np.array([[0, 2], [2, 0]]),
                              np.zeros((3, 2)), np.zeros(4), np.zeros((3, 3))])
TOPOLOGY = {
    "erdos_renyi.n": (bad_count(2), lambda v: graphs.erdos_renyi(v, 0.5, seed=0)),
    "erdos_renyi.p": (bad_probability, lambda v: graphs.erdos_renyi(6, v, seed=0)),
    "erdos_renyi.seed": (st.one_of(non_finite, fractional, st.text(max_size=3)),
                         lambda v: graphs.erdos_renyi(6, 0.5, seed=v)),
    "ring.n": (bad_count(3), lambda v: graphs.ring(v)),
    "grid.rows": (bad_count(1), lambda v: graphs.grid(v, 3)),
    "random_regular.degree": (st.integers(5, 50), lambda v: graphs.random_regular(v, 5, seed=0)),
    "validate_adjacency": (bad_matrix, lambda v: graphs.validate_adjacency(v)),
    "max_degree": (bad_matrix.filter(lambda m: m.shape != (3, 3)), mixing.max_degree),
    "metropolis_hastings": (bad_matrix.filter(lambda m: m.shape != (3, 3)),
                            mixing.metropolis_hastings),
    "edge_sampled.keep_prob": (bad_probability, lambda v: mixing.edge_sampled(
        graphs.ring(4), 3, keep_prob=v, seed=0)),
    "load_edge_list.path": (st.text(alphabet="abcxyz_", min_size=1, max_size=8),
                            lambda v: graphs.load_edge_list(Path("/nonexistent") / v)),
    "from_groups": (st.sampled_from([[], [[-1, 0]], [[0, 2]], [[0.5, 1]], [[]], [["a"]]]),
                    lambda v: groups.from_groups(v)),
    "cl": (st.tuples(st.integers(1, 30), st.integers(2, 7)).filter(lambda t: t[0] % t[1]),
           lambda v: groups.cl(*v)),
    "string": (st.integers(5, 40), lambda v: groups.string(3, v)),
    "gossip_sensitivity.target": (st.one_of(st.integers(5, 99), st.integers(-99, -1)),
                                  lambda v: gossip_sensitivity(RING_W, target=v, observer=0,
                                                               T=2)),
    "gossip_sensitivity.T": (bad_count(1), lambda v: gossip_sensitivity(RING_W, target=1,
                                                                        observer=0, T=v)),
    "gossip_sensitivity.W": (st.sampled_from([np.full((3, 3), NAN), np.ones((3, 2))]),
                             lambda v: gossip_sensitivity(v, target=1, observer=0, T=2)),
    "gossip.pair_epsilon": (st.one_of(st.just(NAN), st.floats(max_value=-1e-9,
                                                              allow_nan=False)),
                            lambda v: gossip_accounting.pair_epsilon(
                                v, noise_multiplier=1.0, delta=1e-5)),
    "dp_ogl.pairwise_epsilon.sampling_rates": (st.one_of(  # numeric: arrays are accepted
        non_finite, st.floats(max_value=-1e-9, allow_nan=False),
        st.floats(min_value=1.0, exclude_min=True, allow_nan=False)),
        lambda v: ogl_accounting.pairwise_epsilon(
            STRING, t=3, period=2, delta=1e-5, noise_multipliers=1.0, sampling_rates=v)),
    "dp_ogl.pairwise_epsilon.t": (bad_count(1), lambda v: ogl_accounting.pairwise_epsilon(
        STRING, t=v, period=2, delta=1e-5, noise_multipliers=1.0, sampling_rates=0.5)),
    "uldp.uldp_epsilon.rounds": (st.one_of(fractional, st.integers(max_value=-1)),
                                 lambda v: uldp_accounting.uldp_epsilon(
                                     rounds=v, noise_multiplier=1.0, delta=1e-5)),
    "lightdp.design.max_colluders": (st.integers(5, 50), lambda v: lightdp_accounting.design(
        epsilon=1.0, delta=1e-5, num_clients=5, max_colluders=v, max_stragglers=1,
        sensitivity=1.0)),
    "lightdp.design.sensitivity": (bad_positive, lambda v: lightdp_accounting.design(
        epsilon=1.0, delta=1e-5, num_clients=5, max_colluders=1, max_stragglers=1,
        sensitivity=v)),
}


@settings(max_examples=250, **SETTINGS)
@given(st.data())
def test_topology_and_paper_accountants_reject_malformed_input(data):
    name = data.draw(st.sampled_from(sorted(TOPOLOGY)), label="entry")
    strategy, call = TOPOLOGY[name]
    value = data.draw(strategy, label="value")
    with no_accounting():
        raises_typed(lambda: call(value))


# ---------------------------------------------------------------------------------------------
# Algorithm builders and the training loop.
MODEL = _toy.logreg(5, 3)
GOOD = dict(num_clients=4, local_steps=1, batch_size=2, client_lr=0.1)
DP_GOOD = dict(GOOD, clip_norm=1.0, noise_multiplier=1.0, sampling_rate=0.5)
BUILDER_SLOTS = {
    "num_clients": bad_count(1), "local_steps": bad_count(0),
    "batch_size": st.one_of(st.just(0), st.just(-3), fractional, non_finite, st.text(max_size=3)),
    "client_lr": bad_positive, "sampling_rate": bad_probability,
    "sampling": bad_choice(("shuffle", "uniform")),
    "server_opt": st.sampled_from(["sgd", 1.0, object(), (1, 2)]),
}
DP_SLOTS = dict(BUILDER_SLOTS, clip_norm=bad_positive, noise_multiplier=bad_positive)


@settings(max_examples=150, **SETTINGS)
@given(st.data())
def test_algorithm_builders_reject_malformed_input(data):
    private = data.draw(st.booleans(), label="private")
    slots = DP_SLOTS if private else dict(BUILDER_SLOTS, weighting=bad_choice(("examples",
                                                                              "uniform")))
    slot = data.draw(st.sampled_from(sorted(slots)), label="slot")
    value = data.draw(slots[slot], label="value")
    kwargs = dict(DP_GOOD if private else GOOD, **{slot: value})
    builder = dp_fedavg.dp_fedavg if private else fedavg.fedavg
    with no_accounting(), mock.patch.object(jax, "jit", side_effect=AssertionError("jit")):
        raises_typed(lambda: builder(MODEL, **kwargs))
    raises_typed(lambda: builder(None, **dict(DP_GOOD if private else GOOD)))


RUN_SLOTS = {
    "rounds": bad_count(0), "eval_every": bad_count(1), "checkpoint_every": bad_count(1),
    "delta": bad_delta.filter(lambda v: v is not None),
}


@settings(max_examples=40, **SETTINGS)
@given(data=st.data())
def test_training_run_rejects_malformed_input_before_writing(data, tmp_path_factory):
    slot = data.draw(st.sampled_from(sorted(RUN_SLOTS)), label="slot")
    value = data.draw(RUN_SLOTS[slot], label="value")
    alg = dp_fedavg.dp_fedavg(MODEL, **DP_GOOD)
    workdir = tmp_path_factory.mktemp("run") / "w"
    kwargs = dict(params=MODEL.init(jax.random.key(0)), rounds=2, seed=0, workdir=workdir)
    kwargs[slot] = value
    raises_typed(lambda: training.run(alg, _toy.blobs(num_clients=4), **kwargs))
    assert not workdir.exists()  # nothing written, nothing computed


@pytest.mark.parametrize("clients", [3, 6])
def test_data_and_algorithm_client_counts_must_agree(clients):
    """A mismatch would gather clamped indices (a client counted twice): a wrong epsilon."""
    alg = dp_fedavg.dp_fedavg(MODEL, **DP_GOOD)
    state = alg.init(MODEL.init(jax.random.key(0)))
    data = _toy.blobs(num_clients=clients).to_device()
    cohort = alg.prepare(0, np.random.default_rng(0))
    with pytest.raises(validate.ShapeError):
        jax.jit(alg.apply)(state, data, cohort, jax.random.key(0))


# ---------------------------------------------------------------------------------------------
# Config layer (experiments/config.py).
CONFIG = "experiments/configs/dp_fedavg/mnist.py"
config_lib = pytest.importorskip("experiments.config")


@settings(max_examples=60, **SETTINGS)
@given(field=st.sampled_from(["rounds", "num_clients", "local_steps", "batch_size", "seed"]),
       text=st.text(alphabet="abcxyz.-+ ", min_size=1, max_size=6))
def test_config_overrides_with_unparsable_values_are_rejected(field, text):
    assume(text.strip().lower() != "none")
    with pytest.raises(ValueError):
        config_lib.load_config(CONFIG, [f"{field}={text}"])


@settings(max_examples=30, **SETTINGS)
@given(key=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10))
def test_config_unknown_fields_are_rejected(key):
    cfg = config_lib.load_config(CONFIG)
    assume(not hasattr(cfg, key))
    with pytest.raises(ValueError):
        config_lib.load_config(CONFIG, [f"{key}=1"])


def test_config_missing_file_and_malformed_set():
    with pytest.raises(FileNotFoundError):
        config_lib.load_config("experiments/configs/dp_fedavg/nope.py")
    with pytest.raises(ValueError):
        config_lib.load_config(CONFIG, ["rounds"])


@pytest.mark.parametrize("override", ["noise_multiplier=-1", "noise_multiplier=nan",
                                      "sampling_rate=2", "delta=0"])
def test_config_values_are_validated_when_loaded(override):
    with pytest.raises(validate.JaxflValueError):
        config_lib.load_config(CONFIG, [override])


def test_valid_smoke_config_still_loads():
    cfg = config_lib.load_config(CONFIG + ":variant=smoke", ["rounds=2"])
    assert cfg.rounds == 2 and cfg.variant == "smoke"
    assert isinstance(optax.sgd(cfg.server_lr), optax.GradientTransformation)
