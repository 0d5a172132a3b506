"""JAX's persistent compilation cache for jaxfl's command-line entry points.

A ULDP-AVG round of the ULDP CNN compiles for 10-55 s on a GPU and a second process of the same
run compiles it again. With JAX's persistent compilation cache on, the second process loads the
executable from disk instead (the cache key is the lowered program, the compile options, the
XLA flags and the jax / jaxlib versions and device, so a changed program or flag misses and
compiles afresh; results are the same executable either way).

Importing :mod:`jaxfl` never turns the cache on: :func:`setup` is called by the entry points
(``python -m experiments.run``, ``experiments.sweep``, the benchmarks and the reproduction
drivers, through :func:`experiments.host_devices.configure`'s callers), and by a user's own
script if it wants one.

Where: ``JAXFL_COMPILATION_CACHE`` unset (or ``1``) puts it in :func:`default_dir`
(``$XDG_CACHE_HOME/jaxfl/xla``, by default ``~/.cache/jaxfl/xla``); a path puts it there;
``0`` (or the entry points' ``--no-compilation-cache``) turns it off. A cache directory that JAX
was already given (``JAX_COMPILATION_CACHE_DIR``, or ``jax.config`` set earlier in the process,
as the test suite's per-process cache is) is left as it is.

Size: every program that compiles for at least :data:`MIN_COMPILE_SECONDS` is written, one
compressed file per program (see docs/scale.md for measured sizes). Where the ``filelock``
package is installed, JAX evicts the least recently used entries beyond
``JAXFL_COMPILATION_CACHE_MAX_BYTES`` (default :data:`MAX_BYTES`); without it (JAX needs it for
eviction) the directory grows until cleared. Clear it by deleting the directory
(``rm -rf ~/.cache/jaxfl/xla``); the next run recompiles and refills it.

The cache is local state, never part of a released result: compiled shapes can reveal batch
and cohort sizes, so it lives in the user's cache directory, not in a run's workdir.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ENV = "JAXFL_COMPILATION_CACHE"
MAX_BYTES_ENV = "JAXFL_COMPILATION_CACHE_MAX_BYTES"
# 4 GiB: hundreds of compiled rounds; JAX's LRU eviction keeps the directory below it.
MAX_BYTES = 4 << 30
# Programs that compile faster than this are not worth a disk entry (JAX's default is 1 s; the
# entry points compile many sub-second programs, data loaders' and evaluation's, whose sum is
# most of a small run's start).
MIN_COMPILE_SECONDS = 0.1
_OFF = ("0", "off", "false", "no")


def default_dir(environ=None) -> Path:
    """``$XDG_CACHE_HOME/jaxfl/xla`` (``~/.cache/jaxfl/xla``): beside jaxfl's downloads
    (:func:`jaxfl.data.download` puts them in ``$XDG_CACHE_HOME/jaxfl``)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(base) / "jaxfl" / "xla"


def resolve(disabled: bool = False, environ=None) -> Path | None:
    """The directory the entry points use (None: off), from ``--no-compilation-cache``
    (``disabled``) and ``JAXFL_COMPILATION_CACHE`` (module docstring).

    >>> resolve(environ={"JAXFL_COMPILATION_CACHE": "0"}) is None
    True
    >>> str(resolve(environ={"JAXFL_COMPILATION_CACHE": "/tmp/xla"}))
    '/tmp/xla'
    >>> resolve(disabled=True, environ={}) is None
    True
    """
    environ = os.environ if environ is None else environ
    value = environ.get(ENV, "").strip()
    if disabled or value.lower() in _OFF:
        return None
    if value in ("", "1", "on", "true", "yes"):
        return default_dir(environ)
    return Path(value).expanduser()


def current_dir() -> str | None:
    """The persistent cache directory JAX uses in this process (None: none)."""
    import jax

    return jax.config.jax_compilation_cache_dir or None


def setup(disabled: bool = False, environ=None) -> str | None:
    """Turns JAX's persistent compilation cache on for this process at :func:`resolve`'s
    directory, unless JAX has one already; returns the directory in use (None: off). Call
    before the first compilation (JAX opens the cache then)."""
    import jax

    environ = os.environ if environ is None else environ
    if current_dir():
        return current_dir()
    path = resolve(disabled, environ)
    if path is None:
        return None
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    if importlib.util.find_spec("filelock") is not None:  # JAX's LRU eviction needs it
        jax.config.update("jax_compilation_cache_max_size",
                          int(environ.get(MAX_BYTES_ENV, MAX_BYTES)))
    return str(path)


def add_argument(parser) -> None:
    """Adds ``--no-compilation-cache`` to an entry point's argument parser."""
    parser.add_argument("--no-compilation-cache", action="store_true",
                        help=f"do not use JAX's persistent compilation cache (default: on, in "
                             f"${ENV} or ~/.cache/jaxfl/xla; {ENV}=0 turns it off too)")


__all__ = ["ENV", "MAX_BYTES_ENV", "MAX_BYTES", "MIN_COMPILE_SECONDS", "default_dir",
           "resolve", "current_dir", "setup", "add_argument"]
