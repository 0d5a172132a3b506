"""The command-line entry points ask XLA:CPU for one host device per core."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import host_devices

ROOT = Path(__file__).resolve().parents[2]


def test_configure_puts_the_flag_first_and_keeps_an_explicit_one():
    env = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "JAXFL_HOST_DEVICES": "3",
           "JAX_PLATFORMS": "cpu"}
    assert host_devices.configure(env) == 3
    # XLA stops reading XLA_FLAGS at a token it does not know: the count goes first
    assert env["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=3",
                                        "--xla_cpu_multi_thread_eigen=false"]
    assert host_devices.configure(env) is None  # already set: left as it is
    env = {"JAX_PLATFORMS": "cpu"}
    assert host_devices.configure(env) == host_devices.default_count() >= 1
    for bad in ("0", "-2", "two"):
        with pytest.raises(SystemExit, match="JAXFL_HOST_DEVICES"):
            host_devices.configure({"JAXFL_HOST_DEVICES": bad, "JAX_PLATFORMS": "cpu"})


@pytest.mark.parametrize("platforms", ["cuda", "gpu", "cuda,cpu", "tpu", "rocm"])
def test_configure_adds_no_host_devices_when_jax_platforms_names_an_accelerator(platforms):
    env = {"JAX_PLATFORMS": platforms, "JAXFL_HOST_DEVICES": "4", "XLA_FLAGS": "--xla_dump_to=x"}
    assert host_devices.accelerator(env) == platforms.split(",")[0]
    assert host_devices.configure(env) is None
    assert env == {"JAX_PLATFORMS": platforms, "JAXFL_HOST_DEVICES": "4",
                   "XLA_FLAGS": "--xla_dump_to=x --xla_gpu_deterministic_ops=true"}
    env = {"JAX_PLATFORMS": platforms, "JAXFL_DETERMINISTIC": "0"}  # opted out
    assert host_devices.configure(env) is None and "XLA_FLAGS" not in env


def test_configure_adds_no_host_devices_with_an_installed_gpu_plugin(monkeypatch):
    # No JAX_PLATFORMS: JAX's default backend is the installed accelerator plugin's, if its
    # device is attached; an explicit JAX_PLATFORMS=cpu still wins.
    monkeypatch.setattr(host_devices, "installed_plugins", lambda: ["cuda"])
    monkeypatch.setattr(host_devices, "device_attached", lambda platform: platform == "cuda")
    env = {}
    assert host_devices.accelerator(env) == "cuda"
    assert host_devices.configure(env) is None and host_devices.FLAG not in env["XLA_FLAGS"]
    env = {"CUDA_VISIBLE_DEVICES": "-1"}  # GPUs hidden: JAX falls back to the CPU
    assert host_devices.configure(env) is not None and host_devices.FLAG in env["XLA_FLAGS"]
    env = {"JAX_PLATFORMS": "cpu"}
    assert host_devices.configure(env) is not None
    monkeypatch.setattr(host_devices, "device_attached", lambda platform: False)
    env = {}  # plugin installed, no GPU attached: the CPU backend
    assert host_devices.configure(env) is not None


def test_installed_plugins_finds_a_jax_plugins_module_without_importing_jax(tmp_path):
    plugin = tmp_path / "jax_plugins" / "xla_cuda13"  # how jax-cuda13-pjrt lays itself out
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("raise RuntimeError('imported')\n")
    code = ("import sys; from experiments import host_devices; "
            "print(host_devices.installed_plugins(), 'jax' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["['cuda']", "False"]


def test_a_configured_process_has_the_host_devices():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAXFL_HOST_DEVICES="2", JAX_PLATFORMS="cpu")
    code = ("from experiments import host_devices; host_devices.configure(); import jax; "
            "from jaxfl import layout; print(jax.local_device_count(), layout.unit_shards())")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", "2"]


def test_installed_plugins_finds_a_plugin_registered_as_an_entry_point(tmp_path):
    dist = tmp_path / "jax_cuda13_pjrt-0.11.2.dist-info"  # no jax_plugins module, metadata only
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda13-pjrt\n"
                                   "Version: 0.11.2\n")
    (dist / "entry_points.txt").write_text("[jax_plugins]\nxla_cuda13 = jax_plugins.x\n")
    code = "from experiments import host_devices; print(host_devices.installed_plugins())"
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["['cuda']"]
