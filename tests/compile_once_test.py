"""A jitted round compiles once per shape: the training loop never retraces between rounds."""

import logging

import jax
import pytest

from jaxfl import training
from jaxfl.algorithms import dp_fedavg
from tests import _multidevice, _toy


@pytest.fixture
def compiles(caplog):
    jax.config.update("jax_log_compiles", True)
    caplog.set_level(logging.DEBUG)
    try:
        yield lambda name: sum(f"jit({name})" in r.getMessage() and "Compiling" in
                               r.getMessage() for r in caplog.records)
    finally:
        jax.config.update("jax_log_compiles", False)


def _alg(num_clients=8, sampling_rate=1.0):
    return dp_fedavg.dp_fedavg(_toy.logreg(5, 3), num_clients=num_clients, local_steps=2,
                               batch_size=4, client_lr=0.3, clip_norm=0.5, noise_multiplier=1.0,
                               sampling_rate=sampling_rate)


def test_round_compiles_once_over_many_rounds(compiles):
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=8, dim=5, classes=3, seed=1)
    training.run(_alg(), data, params=model.init(jax.random.key(0)), rounds=6, seed=0,
                 progress=False)
    assert compiles("round_step") == 1


def test_poisson_cohorts_of_one_capacity_compile_once(compiles, tmp_path):
    # Poisson participation: the realised cohort size varies per round, the padded capacity
    # does not, so the round compiles once.
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=8, dim=5, classes=3, seed=1)
    res = training.run(_alg(sampling_rate=0.5), data, params=model.init(jax.random.key(0)),
                       rounds=6, seed=3, progress=False, workdir=tmp_path)
    sizes = {r["cohort_size"] for r in res.history}
    assert len(sizes) > 1  # the cohorts really differ
    assert compiles("round_step") == 1


def test_round_spanning_two_host_devices_compiles_once(tmp_path):
    # ULDP's pairs split over 2 host devices: round 1's state is on one device and the round
    # returns it replicated over both; the round still compiles once (in a subprocess: the
    # device count is fixed before JAX starts).
    _multidevice.check_in_subprocess("round_compiles_once", tmp_path, devices=2)
