"""No builder, layout rule or entry point assumes the CPU: the accelerator answers of the
layout policy, checked on CPU with the backend name monkeypatched (the cost-analysis-free
FLOP count is in tests/models/conv_test.py)."""

import jax
import numpy as np
import pytest

from jaxfl import layout
from jaxfl.algorithms import uldp_data


@pytest.fixture(params=["gpu", "tpu"])
def accelerator(request, monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: request.param)
    return request.param


def test_layout_policy_on_an_accelerator(accelerator):
    heavy = 10 * layout.HEAVY_FLOPS
    for kind in layout.KINDS:  # the full vmap, whatever the model
        assert layout.resolve("auto", kind) is None
        assert layout.resolve("auto", kind, unit_flops=heavy) is None
        assert layout.resolve(3, kind) == 3  # an explicit request is kept
    assert layout.chunk_rows(784 * 4) is None
    assert layout.unit_shards("auto") == 1  # no host-device split off the CPU
    assert layout.conv_impl("auto") == ("patches" if accelerator == "gpu" else "xla")


def test_pair_data_on_an_accelerator_is_one_full_vmap(accelerator):
    rng = np.random.default_rng(0)
    n = 200
    data = uldp_data.UldpData(rng.normal(size=(n, 6)).astype(np.float32),
                              rng.integers(0, 2, n).astype(np.int32), rng.integers(0, 3, n),
                              rng.integers(0, 20, n), 3, 20).validate()
    pairs = uldp_data.pair_data(data, min_length=8, unit_flops=10 * layout.HEAVY_FLOPS)
    for bucket in pairs.buckets:
        assert bucket.shards == 1
        assert bucket.chunk == bucket.index.shape[0]  # one chunk: every pair in one vmap


def test_request_determinism_adds_the_gpu_flag_once_and_respects_opt_out(monkeypatch):
    from jax._src import xla_bridge

    monkeypatch.setattr(xla_bridge, "backends_are_initialized", lambda: False)
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    assert layout.request_determinism(env)  # in time: XLA reads the flag when it starts
    layout.request_determinism(env)
    flags = env["XLA_FLAGS"].split()
    assert flags == ["--xla_force_host_platform_device_count=2",
                     *layout.DETERMINISTIC_XLA_FLAGS]
    env = {"XLA_FLAGS": "--xla_gpu_deterministic_ops=false"}  # an explicit choice is kept
    layout.request_determinism(env)
    assert env["XLA_FLAGS"] == "--xla_gpu_deterministic_ops=false"
    env = {"JAXFL_DETERMINISTIC": "0"}
    assert not layout.request_determinism(env) and "XLA_FLAGS" not in env


def test_determinism_is_reported_per_backend(accelerator, monkeypatch):
    # off the CPU only the flag decides, and a flag added after the backend started is too late
    jax.devices()  # start the backend
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert not layout.deterministic()
    assert not layout.request_determinism()
    monkeypatch.setenv("XLA_FLAGS", " ".join(layout.DETERMINISTIC_XLA_FLAGS))
    assert layout.deterministic()
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    monkeypatch.delenv("XLA_FLAGS")
    assert layout.deterministic()
