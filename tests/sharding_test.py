"""Sharding over 8 fake CPU devices gives the numbers of one device (checked in a subprocess,
as the device count must be set before JAX starts); mesh and multi-host helpers."""

import jax
import numpy as np
import pytest

from jaxfl import sharding, validate
from tests import _multidevice, _toy


@pytest.mark.slow
def test_sharded_equals_unsharded_on_8_devices(tmp_path):
    _multidevice.check_in_subprocess("sharded", tmp_path, devices=8)


def test_uldp_pairs_over_2_devices_equal_one_device(tmp_path):
    _multidevice.check_in_subprocess("uldp_pairs", tmp_path, devices=2)


def test_unit_shards_policy_and_bad_requests():
    from jaxfl import layout

    assert layout.unit_shards() == jax.local_device_count()
    assert layout.unit_shards(1) == 1
    for bad in (0, -1, jax.local_device_count() + 1, "all"):
        with pytest.raises(validate.JaxflValueError):
            layout.unit_shards(bad)


def test_mesh_and_placement_on_the_local_devices():
    mesh = sharding.make_mesh(sweep=1)
    assert mesh.axis_names == (sharding.SWEEP, sharding.CLIENTS)
    assert sharding.axis_size(mesh, sharding.CLIENTS) == jax.device_count()
    assert sharding.axis_size(None, sharding.SWEEP) == 1
    with pytest.raises(validate.JaxflValueError):
        sharding.make_mesh(sweep=jax.device_count() + 1, clients=1)
    data = _toy.blobs(sizes=[3, 5, 2])
    padded = sharding.pad_clients(data, 4)
    assert padded.num_clients == 4 and int(padded.num_examples[3]) == 0
    assert not np.asarray(padded.mask[3]).any()
    assert np.asarray(padded.extras[sharding.PADDED])[:, 0].tolist() == [False] * 3 + [True]
    placed = sharding.shard_data(data, mesh)
    np.testing.assert_array_equal(np.asarray(placed.x)[:3], np.asarray(data.x))
    stacked = sharding.shard_sweep({"a": np.arange(6.0).reshape(2, 3)}, mesh)
    np.testing.assert_array_equal(sharding.to_host(stacked)["a"], np.arange(6.0).reshape(2, 3))
    # Without a mesh in context the constraint is the identity.
    x = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(jax.jit(sharding.constrain_clients)(x), x)


def test_cluster_detection_and_initialize_validation():
    assert sharding.detect_cluster({}) == "single"
    assert sharding.detect_cluster({"SLURM_JOB_ID": "1", "SLURM_NTASKS": "4"}) == "slurm"
    assert sharding.detect_cluster({"SLURM_JOB_ID": "1", "SLURM_NTASKS": "1"}) == "single"
    assert sharding.detect_cluster({"TPU_WORKER_HOSTNAMES": "a,b"}) == "tpu"
    assert sharding.detect_cluster({"JAXFL_COORDINATOR_ADDRESS": "h:1"}) == "explicit"
    with pytest.raises(validate.JaxflValueError):
        sharding.initialize(coordinator_address="127.0.0.1:1", num_processes=2)
    with pytest.raises(validate.JaxflValueError):
        sharding.initialize(coordinator_address="127.0.0.1:1", num_processes=2, process_id=2)
    assert sharding.is_main_process()
