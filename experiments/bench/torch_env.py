"""The PyTorch virtual environment of the side-by-side benchmarks (never a jaxfl dependency).

  python -m experiments.bench.torch_env            # create it (if missing), print its python

One place decides which python runs the PyTorch side: ``JAXFL_TORCH_PYTHON`` when set (an
existing interpreter with torch and opacus), else ``.venv-torch/bin/python`` at the repository
root (gitignored), created on demand with ``python3 -m venv`` and ``pip install`` of the pinned
:data:`REQUIREMENTS` (the CPU torch wheel comes from the local wheel directory pip is configured
with). Used by :mod:`experiments.bench.bench_torch` and the Opacus row of
:mod:`experiments.bench.bench_scale`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV = ROOT / ".venv-torch"
# Exact pins: torch 2.13.0 is the local CPU wheel; opacus 1.6.0 supports torch >= 2.6 (its
# latest release; `pip check` passes against torch 2.13.0).
TORCH_VERSION = "2.13.0"
OPACUS_VERSION = "1.6.0"
REQUIREMENTS = (f"torch=={TORCH_VERSION}", f"opacus=={OPACUS_VERSION}")
ENV_VAR = "JAXFL_TORCH_PYTHON"


def torch_python() -> Path:
    """The interpreter of the PyTorch side (it may not exist yet)."""
    override = os.environ.get(ENV_VAR)
    return Path(override) if override else DEFAULT_VENV / "bin" / "python"


def available() -> bool:
    """Whether the PyTorch interpreter exists (without creating it)."""
    return torch_python().exists()


def ensure(*, quiet: bool = True) -> Path:
    """The PyTorch interpreter, creating the default venv with the pinned packages if missing.

    Raises:
      FileNotFoundError: ``JAXFL_TORCH_PYTHON`` names an interpreter that does not exist.
      subprocess.CalledProcessError: venv creation or ``pip install`` failed.
    """
    py = torch_python()
    if py.exists():
        return py
    if os.environ.get(ENV_VAR):
        raise FileNotFoundError(f"{ENV_VAR}={py} does not exist; unset it to create "
                                f"{DEFAULT_VENV} with {' '.join(REQUIREMENTS)}.")
    q = ["--quiet"] if quiet else []
    subprocess.run(["python3", "-m", "venv", str(DEFAULT_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", *q, *REQUIREMENTS], check=True)
    return py


if __name__ == "__main__":
    print(ensure(quiet="-v" not in sys.argv))
