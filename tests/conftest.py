"""Test configuration: the real-data policy.

Real-data tests call :func:`data_dir` (or use the ``data_dir`` fixture): they read
``JAXFL_DATA_DIR``; when files are missing they skip with a reason, except when
``JAXFL_REQUIRE_DATA=1`` (CI), where they fail.
"""

import os
from pathlib import Path

import pytest

from jaxfl import layout

# Deterministic GPU programs for the whole suite (before any test starts a JAX backend): the
# tests that compare two runs bit for bit (resume, the DP-OGL information-flow oracles, a sweep
# point against its single run) rely on it off the CPU. Tests that assert exact equality say so;
# the others compare to a tolerance of the dtype and backend.
layout.request_determinism()
# The entry points' persistent compilation cache (jaxfl.compilation_cache) stays off in tests and
# in the processes they start: no test writes into the user's ~/.cache/jaxfl/xla. (This process
# keeps its own temporary cache, below, which the entry points' setup leaves as it is.)
os.environ.setdefault("JAXFL_COMPILATION_CACHE", "0")


def _persistent_compilation_cache() -> None:
    """Gives this test process a persistent XLA compilation cache in a fresh temporary directory
    (removed at exit), unless ``JAXFL_TEST_COMPILATION_CACHE=0`` or ``JAX_COMPILATION_CACHE_DIR``
    names one already.

    Most of the suite's time is XLA compiling, and many tests compile a program the process has
    compiled before under another function object (a sweep point's single run after its sibling's,
    a notebook-free rebuild of the same algorithm), which JAX's in-memory caches miss; the disk
    cache is keyed by the lowered module, compile options and XLA flags, so a hit loads the same
    executable. One directory per process (each pytest-xdist worker has its own): JAX writes
    entries without a lock, so two processes never share one, and test subprocesses (SIGKILLed
    runs, notebook kernels) do not inherit it. Compile-counting tests are unaffected: JAX logs
    "Compiling <name>" when it lowers a function, before it looks in the cache.
    """
    if os.environ.get("JAXFL_TEST_COMPILATION_CACHE", "1") == "0" or \
            os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    import atexit
    import shutil
    import tempfile

    import jax

    path = tempfile.mkdtemp(prefix="jaxfl-test-xla-cache-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # Executables only: no XLA-side caches (on a GPU JAX would add an autotuning cache, which
    # changes the compile options), so a miss compiles exactly what a run without the cache does.
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")


_persistent_compilation_cache()


def require_data(*relative: str) -> Path:
    """Returns ``JAXFL_DATA_DIR`` after checking ``relative`` files exist there."""
    root = os.environ.get("JAXFL_DATA_DIR")
    required = os.environ.get("JAXFL_REQUIRE_DATA") == "1"
    missing = []
    if not root:
        missing = ["JAXFL_DATA_DIR is not set"]
    else:
        missing = [r for r in relative if not (Path(root) / r).exists()]
    if missing:
        msg = f"real data not available: {missing} (JAXFL_DATA_DIR={root!r})"
        if required:
            pytest.fail(msg + "; JAXFL_REQUIRE_DATA=1 makes this a failure")
        pytest.skip(msg)
    return Path(root)


@pytest.fixture
def data_dir():
    return require_data()
