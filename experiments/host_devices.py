"""One XLA:CPU host device per core for the command-line entry points.

XLA:CPU gives a process one device unless ``XLA_FLAGS`` asks for more before JAX starts, so
this has to happen in the ``__main__`` block of an entry point, not at library import. With
several host devices the engine splits unit axes over them (:func:`jaxfl.layout.unit_shards`);
everything else still runs on device 0 with XLA's intra-op threads. On 2 cores a ULDP-AVG
round of the ULDP CNN (MNIST, 100 users over 5 silos) takes 7.8 s over 2 host devices against
12.0 s on one (docs/scale.md, "Pairs over host devices").

``JAXFL_HOST_DEVICES=N`` sets the count (1: one device); an explicit
``--xla_force_host_platform_device_count`` in ``XLA_FLAGS`` is left as it is. Where JAX's
default backend will be an accelerator (:func:`accelerator`), nothing is set: the flag is
XLA:CPU's alone, and the engine splits unit axes over host devices only on the CPU backend.
"""

from __future__ import annotations

import importlib.util
import os
import pkgutil

FLAG = "--xla_force_host_platform_device_count"

# PJRT plugin modules (``jax_plugins.<name>``, what ``pip install "jax[cuda13]"`` etc. install)
# by the accelerator platform they provide, and the device files that show such a device is
# attached to this machine (an installed CUDA plugin without a GPU falls back to the CPU).
_PLUGIN_PLATFORMS = (("xla_cuda", "cuda"), ("xla_rocm", "rocm"), ("xla_tpu", "tpu"))
_DEVICE_FILES = {"cuda": ("/dev/nvidiactl", "/dev/nvidia0"), "rocm": ("/dev/kfd",),
                 "tpu": ("/dev/accel0", "/dev/vfio/0")}


def installed_plugins() -> list[str]:
    """Accelerator platforms whose JAX plugin is installed (``cuda``, ``rocm``, ``tpu``), found
    without importing JAX or the plugins: the ``jax_plugins`` namespace package's modules, the
    ``jax_plugins`` entry points and ``libtpu``."""
    found = []
    spec = importlib.util.find_spec("jax_plugins")
    names = ([m.name for m in pkgutil.iter_modules(spec.submodule_search_locations)]
             if spec is not None and spec.submodule_search_locations else [])
    try:  # plugins registered as entry points (JAX reads both)
        from importlib.metadata import entry_points

        names += [e.name for e in entry_points(group="jax_plugins")]
    except Exception:  # noqa: BLE001 - broken metadata: the modules above still count
        pass
    for prefix, platform in _PLUGIN_PLATFORMS:
        if any(n.startswith(prefix) for n in names) and platform not in found:
            found.append(platform)
    if "tpu" not in found and importlib.util.find_spec("libtpu") is not None:
        found.append("tpu")
    return found


def device_attached(platform: str) -> bool:
    """Whether this machine exposes a device file of ``platform`` (see ``_DEVICE_FILES``)."""
    return any(os.path.exists(f) for f in _DEVICE_FILES.get(platform, ()))


def accelerator(environ=None, *, plugins=None, attached=None) -> str | None:
    """The accelerator platform JAX's default backend will be, or None for the CPU, decided
    without initialising a JAX backend (so it can run before ``XLA_FLAGS`` is read).

    ``JAX_PLATFORMS`` decides when set (its first entry: ``cpu`` or an accelerator name, e.g.
    ``cuda``); otherwise an installed accelerator plugin (:func:`installed_plugins`) whose
    device is attached (``CUDA_VISIBLE_DEVICES`` empty or ``-1`` hides CUDA devices).

    >>> accelerator({"JAX_PLATFORMS": "cuda,cpu"}), accelerator({"JAX_PLATFORMS": "cpu"})
    ('cuda', None)
    >>> accelerator({}, plugins=["cuda"], attached=lambda p: True)
    'cuda'
    >>> accelerator({"CUDA_VISIBLE_DEVICES": ""}, plugins=["cuda"], attached=lambda p: True)
    >>> accelerator({}, plugins=[], attached=lambda p: True)
    """
    environ = os.environ if environ is None else environ
    attached = device_attached if attached is None else attached
    platforms = [p.strip().lower() for p in environ.get("JAX_PLATFORMS", "").split(",")
                 if p.strip()]
    if platforms:
        return None if platforms[0] in ("cpu", "interpreter") else platforms[0]
    for platform in installed_plugins() if plugins is None else plugins:
        if platform == "cuda" and environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
            continue
        if attached(platform):
            return platform
    return None


def default_count(environ=None) -> int:
    """The cores this process may run on (``JAXFL_HOST_DEVICES`` overrides)."""
    env = (os.environ if environ is None else environ).get("JAXFL_HOST_DEVICES")
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise SystemExit(f"JAXFL_HOST_DEVICES must be a positive integer, got {env!r}.")
        return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def configure(environ=None) -> int | None:
    """Adds ``FLAG=<cores>`` to ``XLA_FLAGS`` unless it is there; returns the count set (None
    when ``XLA_FLAGS`` already had one, or when the default backend is an accelerator, see
    :func:`accelerator`: then only the deterministic-GPU flags of
    :func:`jaxfl.layout.request_determinism` are added). Call before the first JAX computation.

    >>> env = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=true", "JAXFL_HOST_DEVICES": "2",
    ...        "JAX_PLATFORMS": "cpu"}
    >>> configure(env), env["XLA_FLAGS"]
    (2, '--xla_force_host_platform_device_count=2 --xla_cpu_multi_thread_eigen=true')
    >>> env = {"JAX_PLATFORMS": "cuda"}
    >>> configure(env), env
    (None, {'JAX_PLATFORMS': 'cuda', 'XLA_FLAGS': '--xla_gpu_deterministic_ops=true'})
    """
    environ = os.environ if environ is None else environ
    if accelerator(environ) is not None:
        # bit-identical reruns and resumes on GPUs (jaxfl.layout.request_determinism;
        # JAXFL_DETERMINISTIC=0 opts out)
        from jaxfl import layout

        layout.request_determinism(environ)
        return None
    flags = environ.get("XLA_FLAGS", "")
    if FLAG in flags:
        return None
    n = default_count(environ)
    # first: XLA stops reading flags at a token it does not know
    environ["XLA_FLAGS"] = f"{FLAG}={n} {flags}".strip()
    return n
