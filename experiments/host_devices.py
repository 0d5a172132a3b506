"""One XLA:CPU host device per core for the command-line entry points.

XLA:CPU gives a process one device unless ``XLA_FLAGS`` asks for more before JAX starts, so
this has to happen in the ``__main__`` block of an entry point, not at library import. With
several host devices the engine splits unit axes over them (:func:`jaxfl.layout.unit_shards`);
everything else still runs on device 0 with XLA's intra-op threads. On 2 cores a ULDP-AVG
round of the ULDP CNN (MNIST, 100 users over 5 silos) takes 7.8 s over 2 host devices against
12.0 s on one (docs/scale.md, "Pairs over host devices").

``JAXFL_HOST_DEVICES=N`` sets the count (1: one device); an explicit
``--xla_force_host_platform_device_count`` in ``XLA_FLAGS`` is left as it is.
"""

from __future__ import annotations

import os

FLAG = "--xla_force_host_platform_device_count"


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
    when ``XLA_FLAGS`` already had one). Call before the first JAX computation.

    >>> env = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=true", "JAXFL_HOST_DEVICES": "2"}
    >>> configure(env), env["XLA_FLAGS"]
    (2, '--xla_force_host_platform_device_count=2 --xla_cpu_multi_thread_eigen=true')
    """
    environ = os.environ if environ is None else environ
    flags = environ.get("XLA_FLAGS", "")
    if FLAG in flags:
        return None
    n = default_count(environ)
    # first: XLA stops reading flags at a token it does not know
    environ["XLA_FLAGS"] = f"{FLAG}={n} {flags}".strip()
    return n
