"""Argument validators shared by every public entry point.

Each validator raises a subclass of :class:`JaxflValueError` (itself a ``ValueError``) whose
message names the offending argument and its value, in the form ``Expected name=value ...``.
Validators run on the host before any computation starts, so bad input never reaches jit.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np


class JaxflValueError(ValueError):
    """Bad argument to a jaxfl function."""


class PrivacyParameterError(JaxflValueError):
    """A privacy parameter (sigma, delta, epsilon, sampling rate, clip norm) is out of range."""


class ShapeError(JaxflValueError):
    """Arrays with the wrong rank or shape."""


class TopologyError(JaxflValueError):
    """A graph, group structure or mixing matrix that violates its contract."""


class DataNotFoundError(FileNotFoundError):
    """A dataset file is missing; the message names the file and where to obtain it."""


class ChecksumError(JaxflValueError):
    """A dataset or checkpoint file does not match its recorded checksum."""


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _finite(name: str, value, error=JaxflValueError) -> float:
    if not _is_real(value) and not (isinstance(value, np.ndarray) and value.shape == ()):
        raise error(f"Expected {name} to be a real number, got {name}={value!r}.")
    value = float(value)
    if not math.isfinite(value):
        raise error(f"Expected {name} to be finite, got {name}={value!r}.")
    return value


def positive(name: str, value, error=PrivacyParameterError) -> float:
    """Returns ``value`` as a float, raising unless it is finite and > 0."""
    value = _finite(name, value, error)
    if value <= 0:
        raise error(f"Expected {name} > 0, got {name}={value!r}.")
    return value


def non_negative(name: str, value, error=PrivacyParameterError) -> float:
    value = _finite(name, value, error)
    if value < 0:
        raise error(f"Expected {name} >= 0, got {name}={value!r}.")
    return value


def delta(value, name: str = "delta") -> float:
    """Validates a DP delta: a real number strictly inside (0, 1)."""
    value = _finite(name, value, PrivacyParameterError)
    if not 0.0 < value < 1.0:
        raise PrivacyParameterError(f"Expected {name} in (0, 1), got {name}={value!r}.")
    return value


def probability(name: str, value, *, allow_zero: bool = False) -> float:
    """Validates a sampling probability in (0, 1] (or [0, 1] with ``allow_zero``)."""
    value = _finite(name, value, PrivacyParameterError)
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 1.0):
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise PrivacyParameterError(f"Expected {name} in {interval}, got {name}={value!r}.")
    return value


def positive_int(name: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise JaxflValueError(f"Expected {name} to be an integer, got {name}={value!r}.")
    if value < minimum:
        raise JaxflValueError(f"Expected {name} >= {minimum}, got {name}={value!r}.")
    return int(value)


def one_of(name: str, value, choices: Sequence):
    try:
        ok = bool(value in choices)
    except (TypeError, ValueError):  # arrays and other values without a plain truth value
        ok = False
    if not ok:
        raise JaxflValueError(f"Expected {name} in {list(choices)}, got {name}={value!r}.")
    return value


def shape(name: str, array, expected: tuple) -> None:
    """Checks ``array.shape`` against ``expected`` (``None`` entries match any size)."""
    actual = tuple(np.shape(array))
    ok = len(actual) == len(expected) and all(
        e is None or a == e for a, e in zip(actual, expected, strict=True)
    )
    if not ok:
        raise ShapeError(f"Expected {name}.shape={expected}, got {name}.shape={actual}.")


def generator(rng, hint: str = "np.random.default_rng(seed)") -> np.random.Generator:
    """``rng`` when it is a ``np.random.Generator`` (``hint``: how to build one, in the error)."""
    if not isinstance(rng, np.random.Generator):
        raise JaxflValueError(
            f"Expected rng to be a np.random.Generator, got {type(rng).__name__}; {hint}.")
    return rng


def x64_enabled() -> None:
    """Raises unless jax runs with 64-bit floats (needed by the float64 jnp paths)."""
    import jax

    if not jax.config.jax_enable_x64:
        raise JaxflValueError(
            "This computation needs float64. Enable it with "
            "`jax.config.update('jax_enable_x64', True)` or JAX_ENABLE_X64=1, "
            "or call the NumPy (host) variant."
        )
