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
