"""The command-line entry points ask XLA:CPU for one host device per core."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import host_devices

ROOT = Path(__file__).resolve().parents[2]


def test_configure_puts_the_flag_first_and_keeps_an_explicit_one():
    env = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "JAXFL_HOST_DEVICES": "3"}
    assert host_devices.configure(env) == 3
    # XLA stops reading XLA_FLAGS at a token it does not know: the count goes first
    assert env["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=3",
                                        "--xla_cpu_multi_thread_eigen=false"]
    assert host_devices.configure(env) is None  # already set: left as it is
    env = {}
    assert host_devices.configure(env) == host_devices.default_count() >= 1
    for bad in ("0", "-2", "two"):
        with pytest.raises(SystemExit, match="JAXFL_HOST_DEVICES"):
            host_devices.configure({"JAXFL_HOST_DEVICES": bad})


def test_a_configured_process_has_the_host_devices():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAXFL_HOST_DEVICES="2", JAX_PLATFORMS="cpu")
    code = ("from experiments import host_devices; host_devices.configure(); import jax; "
            "from jaxfl import layout; print(jax.local_device_count(), layout.unit_shards())")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", "2"]
