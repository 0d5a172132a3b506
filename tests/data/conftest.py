"""Fixtures for the data tests: real datasets (loaded once per module) and fixture writers.

Real-data fixtures go through ``tests.conftest.require_data``: they skip with a reason when
``JAXFL_DATA_DIR`` lacks the files, and fail instead when ``JAXFL_REQUIRE_DATA=1``.
"""

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_data


def write_idx(path: Path, array: np.ndarray, *, compress: bool = True) -> Path:
    """Writes ``array`` (uint8) as an IDX file, gzip-compressed by default."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    header += struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.tobytes()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.fixture
def real_dir():
    """``JAXFL_DATA_DIR`` (skip/fail per the real-data policy when unset)."""
    return require_data()


def require(*relative: str) -> Path:
    return require_data(*relative)
