"""Data checked against the algorithm before any work (issue 35, items 3, 4 and 7):
:func:`jaxfl.algorithms.base.check_run_data`, the builders' ``DataSpec``s, the trace-time size
checks of ULDP / gossip / LightDP, and :meth:`FederatedData.validate`'s content checks.

Each case here ran silently (or crashed with a JAX / numpy / flax error) before these checks.
"""

import dataclasses

import jax
import numpy as np
import pytest

from jaxfl import sharding, validate
from jaxfl.algorithms import base, dp_fedavg, fedavg, gossip, uldp, uldp_data, uldp_silo
from jaxfl.data import federated
from jaxfl.models import get_model
from jaxfl.topology import graphs, mixing
from tests import _toy, precision_test

# ---------------------------------------------------------------------------------------------
# Every builder declares its data and accepts its own.
# ---------------------------------------------------------------------------------------------

SLOW = ("dp_ftrl", "dp_ftrl_adaptive_clip", "gossip_model_path")  # strategy optimisation


def _extra_builders():
    """Builders that precision_test.ALGORITHMS leaves out (non-private or slow there)."""
    from jaxfl.algorithms import dp_ftrl

    m = _toy.logreg(5, 3)
    blobs = _toy.blobs(num_clients=6, seed=1, sizes=[6] * 6)
    records = precision_test._uldp_records()
    silos = uldp_data.silo_data(records)
    local = dict(local_epochs=1, batch_size=4, local_lr=0.1, global_lr=1.0)
    return {
        "fedavg": lambda: (fedavg.fedavg(m, num_clients=6, local_steps=1, batch_size=3,
                                         client_lr=0.1), blobs),
        "dp_ftrl_tree": lambda: (dp_ftrl.dp_ftrl(
            m, num_clients=6, clients_per_round=3, rounds=4, local_steps=1, batch_size=4,
            client_lr=0.1, clip_norm=0.5, noise_multiplier=1.0, strategy="tree"), blobs),
        "uldp_default": lambda: (uldp_silo.default(_toy.logreg(4, 3), num_silos=3, **local),
                                 silos),
        "record_level_dp": lambda: (uldp_silo.dp_sgd_silos(
            _toy.logreg(4, 3), silo_sizes=np.bincount(records.silo, minlength=3),
            clip_norm=1.0, noise_multiplier=2.0, group_mog=False, **local), silos),
    }


BUILDERS = sorted(set(precision_test.ALGORITHMS) - set(SLOW)) + sorted(_extra_builders())


def _build(name):
    if name in precision_test.ALGORITHMS:
        built = precision_test.ALGORITHMS[name]()
        return built[1], built[2]
    return _extra_builders()[name]()


@pytest.mark.parametrize("name", BUILDERS)
def test_every_builder_declares_its_data_and_accepts_its_own(name):
    alg, data = _build(name)
    assert isinstance(alg.data_spec, base.DataSpec), name
    assert alg.data_spec.layout in base.LAYOUTS
    assert alg.data_spec.sizes, name  # every builder counts its units
    assert base.check_run_data(alg, data) is data


def test_the_families_of_every_registered_algorithm_are_covered():
    """Every module of jaxfl.algorithms that builds an Algorithm has a builder above."""
    families = {"dp_fedavg", "fedavg", "dp_ftrl", "dp_ogl", "subject_dp", "uldp", "uldp_silo",
                "gossip", "lightdp"}
    names = " ".join(BUILDERS)
    for fam, probe in {"dp_fedavg": "dp_fedavg", "fedavg": "fedavg", "dp_ftrl": "dp_ftrl",
                       "dp_ogl": "dp_ogl", "subject_dp": "higradavg_dp", "uldp": "uldp_sgd",
                       "uldp_silo": "uldp_naive", "gossip": "gossip", "lightdp": "lightdp"
                       }.items():
        assert fam in families and probe in names, fam


# ---------------------------------------------------------------------------------------------
# ULDP: users and silos (issue 35, item 3).
# ---------------------------------------------------------------------------------------------

def _records(users, silos, n=24, dim=4, seed=0):
    rng = np.random.default_rng(seed)
    # every user and every silo holds records, so the counts come from the data
    user = np.arange(n) % users
    silo = (np.arange(n) // users) % silos
    return uldp_data.UldpData(rng.normal(size=(n, dim)).astype(np.float32),
                              rng.integers(0, 3, n).astype(np.int32), silo, user, silos,
                              users).validate()


def _abstract_apply(alg, data, round_input, params):
    """Traces one round without compiling it (shapes only)."""
    return jax.eval_shape(lambda s, d: alg.apply(s, d, round_input, jax.random.key(0)),
                          alg.init(params), data)


def test_uldp_sgd_built_for_three_users_refuses_data_of_four():
    """Before: rc 0, user 3's weight read at the clamped index of user 2 (sampled exactly when
    user 2 is), not the independent Poisson sampling the accountant priced."""
    m = _toy.logreg(4, 3)
    alg = uldp.uldp_sgd(m, num_silos=2, num_users=3, global_lr=1.0, clip_norm=1.0,
                        noise_multiplier=1.0, sampling_rate=0.5)
    data = uldp_data.pair_data(_records(users=4, silos=2), min_length=4)
    with pytest.raises(validate.ShapeError, match="built for 3 users.*data of 4 users"):
        base.check_run_data(alg, data)
    mask = alg.prepare(0, np.random.default_rng(0))
    with pytest.raises(validate.ShapeError, match="3 users"):
        _abstract_apply(alg, data, mask, m.init(jax.random.key(0)))
    ok = uldp_data.pair_data(_records(users=3, silos=2), min_length=4)
    assert base.check_run_data(alg, ok) is ok


def test_uldp_methods_refuse_more_silos_than_built_for():
    """Before: 3 silos for a 2-silo builder crashed in a JAX broadcast (silo level) or summed
    a silo out of range (pairs)."""
    m = _toy.logreg(4, 3)
    records = _records(users=3, silos=3)
    pairs = uldp_data.pair_data(records, min_length=4)
    silos = uldp_data.silo_data(records)
    avg = uldp.uldp_avg(m, num_silos=2, num_users=3, local_epochs=1, batch_size=4,
                        local_lr=0.1, global_lr=1.0, clip_norm=1.0, noise_multiplier=1.0)
    naive = uldp_silo.uldp_naive(m, num_silos=2, local_epochs=1, batch_size=4, local_lr=0.1,
                                 clip_norm=1.0, noise_multiplier=1.0)
    params = m.init(jax.random.key(0))
    for alg, data in ((avg, pairs), (naive, silos)):
        with pytest.raises(validate.ShapeError, match="built for 2 silos.*data of 3 silos"):
            base.check_run_data(alg, data)
        with pytest.raises(validate.ShapeError, match="2 silos"):
            _abstract_apply(alg, data, alg.prepare(0, np.random.default_rng(0)), params)
    # the other layout is refused by name
    with pytest.raises(validate.JaxflValueError, match="PairData"):
        base.check_run_data(avg, silos)


def test_record_level_dp_refuses_silos_of_other_sizes_than_accounted():
    m = _toy.logreg(4, 3)
    records = _records(users=3, silos=2)
    sizes = np.bincount(records.silo, minlength=2)
    alg = uldp_silo.dp_sgd_silos(m, silo_sizes=sizes + 1, local_epochs=1, batch_size=4,
                                 local_lr=0.1, global_lr=1.0, clip_norm=1.0,
                                 noise_multiplier=1.0, group_mog=False)
    with pytest.raises(validate.ShapeError, match="silo sizes"):
        base.check_run_data(alg, uldp_data.silo_data(records))


def test_uldp_data_without_records_is_refused_before_work():
    """Before: numpy's "zero-size array to reduction operation maximum" from group_size."""
    with pytest.raises(validate.JaxflValueError, match="at least one user with records"):
        uldp_data.group_size(np.zeros((2, 3), np.int64), "max")
    with pytest.raises(validate.JaxflValueError, match="at least one user with records"):
        uldp_data.group_size(np.zeros((2, 3), np.int64), "median")
    with pytest.raises(validate.JaxflValueError, match="at least one record"):
        uldp_data.UldpData(np.zeros((0, 2), np.float32), np.zeros(0, np.int32),
                           np.zeros(0, int), np.zeros(0, int), 2, 3).validate()


# ---------------------------------------------------------------------------------------------
# Gossip, LightDP, subject DP: nodes / clients / sizes.
# ---------------------------------------------------------------------------------------------

def _nodes(n, per=4, dim=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n * per, dim)).astype(np.float32)
    y = rng.integers(0, 3, n * per).astype(np.int32)
    return federated.from_partition(x, y, [np.arange(per * k, per * (k + 1)) for k in range(n)])


@pytest.mark.parametrize("kind", ["gossip", "fedavg"])
def test_gossip_refuses_a_node_count_other_than_w(kind):
    """Before: a vmap size error from inside the round."""
    W = mixing.closed_neighbourhood(graphs.ring(4))
    common = dict(clip_norm=1.0, noise_multiplier=0.5, learning_rate=0.5, normalizer=4.0)
    alg = (gossip.dp_gossip_avg(mixing_matrix=W, **common) if kind == "gossip" else
           gossip.dp_fedavg_full_batch(num_nodes=4, **common))
    data = _nodes(5)
    with pytest.raises(validate.ShapeError, match="built for 4 nodes.*data of 5 nodes"):
        base.check_run_data(alg, data)
    with pytest.raises(validate.ShapeError, match="4 nodes"):
        _abstract_apply(alg, data, None, gossip.logreg_init(6, 3))


def test_gossip_with_its_model_checks_labels():
    W = mixing.closed_neighbourhood(graphs.ring(4))
    alg = gossip.dp_gossip_avg(mixing_matrix=W, clip_norm=1.0, noise_multiplier=0.5,
                               learning_rate=0.5, normalizer=4.0,
                               model=gossip.logreg_model(6, 3))
    data = _nodes(4)
    base.check_run_data(alg, data)
    y = np.array(data.y)
    y[1, 0] = 3
    with pytest.raises(validate.JaxflValueError, match=r"labels in \[0, 3\)"):
        base.check_run_data(alg, dataclasses.replace(data, y=y))


def test_lightdp_refuses_another_client_count():
    name = "lightdp_aggregate"
    alg = precision_test.ALGORITHMS[name]()[1]
    data = _toy.blobs(num_clients=7, seed=1, sizes=[6] * 7)
    with pytest.raises(validate.ShapeError, match="built for 6 clients.*data of 7 clients"):
        base.check_run_data(alg, data)
    with pytest.raises(validate.ShapeError, match="6 clients"):
        _abstract_apply(alg, data.to_device(), alg.prepare(0, np.random.default_rng(0)),
                        _toy.logreg(5, 3).init(jax.random.key(0)))


def test_subject_dp_refuses_data_of_other_sizes_than_built_from():
    model, alg, data = precision_test._subject("higradavg_dp")
    host = jax.tree.map(np.asarray, data)
    base.check_run_data(alg, host)
    shorter = dataclasses.replace(
        host, mask=np.arange(host.max_examples)[None, :] < np.array([[6], [4]]),
        num_examples=np.array([6, 4], np.int32))
    with pytest.raises(validate.ShapeError, match=r"num_examples\[1\]=5.*num_examples\[1\]=4"):
        base.check_run_data(alg, shorter)


def test_clients_padded_for_the_mesh_are_accepted_but_extra_real_ones_are_not():
    m = _toy.logreg(5, 3)
    alg = dp_fedavg.dp_fedavg(m, num_clients=6, local_steps=1, batch_size=3, client_lr=0.3,
                              clip_norm=0.5, noise_multiplier=1.0, sampling_rate=0.5)
    data = _toy.blobs(num_clients=6, seed=1, sizes=[6] * 6)
    padded = sharding.pad_clients(data, 4)
    assert padded.num_clients == 8
    base.check_run_data(alg, padded)
    with pytest.raises(validate.ShapeError, match="built for 6 clients.*data of 8 clients"):
        base.check_run_data(alg, _toy.blobs(num_clients=8, seed=1, sizes=[6] * 8))


# ---------------------------------------------------------------------------------------------
# Data content (issue 35, item 4) and the model's input.
# ---------------------------------------------------------------------------------------------

def _classifier(classes=3, dim=5):
    model = get_model("logreg", num_classes=classes, input_shape=(dim,))
    alg = dp_fedavg.dp_fedavg(model, num_clients=4, local_steps=1, batch_size=3, client_lr=0.3,
                              clip_norm=0.5, noise_multiplier=1.0, sampling_rate=0.5)
    return model, alg


def _data(dim=5, classes=3, seed=0):
    return _toy.blobs(num_clients=4, dim=dim, classes=classes, seed=seed, sizes=[5, 3, 4, 2])


def test_a_mask_that_marks_padding_is_refused():
    """Before: training.run never validated, and validate compared only row sums."""
    data = _data()
    mask = np.array(data.mask)
    mask[1, 3] = True  # one padding slot more than num_examples[1] = 3
    with pytest.raises(validate.JaxflValueError, match=r"disagrees with num_examples.*\[1\]"):
        dataclasses.replace(data, mask=mask).validate()
    moved = np.array(data.mask)
    moved[1, 0], moved[1, 3] = False, True  # same row sum, but a padding slot marked
    with pytest.raises(validate.JaxflValueError, match="disagrees with num_examples"):
        dataclasses.replace(data, mask=moved).validate()
    _, alg = _classifier()
    with pytest.raises(validate.JaxflValueError, match="disagrees with num_examples"):
        base.check_run_data(alg, dataclasses.replace(data, mask=moved))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_features_are_refused(value):
    """Before: every parameter became NaN, the run exited 0 with an epsilon."""
    data = _data()
    x = np.array(data.x)
    x[2, 1, 3] = value
    bad = dataclasses.replace(data, x=x)
    with pytest.raises(validate.JaxflValueError, match="finite x.*client 2"):
        bad.validate()
    _, alg = _classifier()
    with pytest.raises(validate.JaxflValueError, match="finite x"):
        base.check_run_data(alg, bad)
    pad = np.array(data.x)
    pad[3, 4, 0] = np.nan  # in client 3's padding: NaN * 0 is still NaN
    with pytest.raises(validate.JaxflValueError, match="client 3"):
        dataclasses.replace(data, x=pad).validate()


@pytest.mark.parametrize("label", [7, 3, -1])
def test_labels_outside_the_models_classes_are_refused(label):
    """Before: label 7 (or 3) of a 3-class model gave a NaN loss every round; -1 trained as the
    last class."""
    model, alg = _classifier(classes=3)
    data = _data()
    base.check_run_data(alg, data)  # labels 0..2 pass
    y = np.array(data.y)
    y[2, 1] = label
    bad = dataclasses.replace(data, y=y)
    with pytest.raises(validate.JaxflValueError,
                       match=rf"labels in \[0, 3\).*label {label} at client 2"):
        base.check_run_data(alg, bad)
    with pytest.raises(validate.JaxflValueError, match=r"labels in \[0, 3\)"):
        bad.validate(num_classes=3)
    y = np.array(data.y)
    y[1, 4] = label  # padding slots (clients 1 and 3 hold 3 and 2 examples): never read
    y[3, 2] = label
    dataclasses.replace(data, y=y).validate(num_classes=3)


def test_binary_models_take_labels_zero_and_one():
    model = get_model("binary_logreg", input_shape=(5,))
    assert base.model_classes(model, (5,), np.float32) == 2
    assert base.model_classes(get_model("linear", output_dim=1, input_shape=(5,)), (5,),
                              np.float32) is None  # regression: no label range


def test_examples_that_do_not_fit_the_model_are_a_shape_error():
    """Before: a flax shape error in the first round (after compiling)."""
    _, alg = _classifier(dim=5)
    with pytest.raises(validate.ShapeError, match=r"shape \(5,\).*got data whose examples have "
                                                  r"shape \(4,\)"):
        base.check_run_data(alg, _data(dim=4))


def test_a_hand_built_algorithm_record_gets_the_datas_own_validation():
    _, alg = _classifier()
    record = alg._replace(data_spec=None)
    data = _data()
    base.check_run_data(record, data)
    x = np.array(data.x)
    x[0, 0, 0] = np.nan
    with pytest.raises(validate.JaxflValueError, match="finite x"):
        base.check_run_data(record, dataclasses.replace(data, x=x))


def test_validate_keeps_valid_real_layouts():
    """No false alarm on the layouts the library builds: from_partition with empty clients,
    pad_examples, padded clients."""
    data = _toy.blobs(num_clients=4, sizes=[3, 0, 2, 1])
    data.validate(num_classes=3)
    federated.pad_examples(data, 7).validate(num_classes=3)
    sharding.pad_clients(data, 3).validate(num_classes=3)
    data.to_device().validate(num_classes=3)
