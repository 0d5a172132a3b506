"""Fixed-point encoding of reals into Z_n for Paillier plaintexts (ULDP-FL Algorithm 5).

``Encode(x) = trunc(x / P) mod n`` (float64 division, truncation toward zero) and
``Decode(y) = ((y - n if y > n // 2 else y) / C_LCM) * P`` with an exact rational division by
``C_LCM = lcm(1, ..., N_max)``: every user total N_u <= N_max divides C_LCM, so a silo can turn
the server's encrypted inverse of N_u into the integer weight numerator ``C_LCM n_{s,u} / N_u``.

Signed decoding is correct only while the true integer stays inside ``(-n/2, n/2)``:
:func:`check_capacity` verifies ``C_LCM * bound / P < n / 2`` before any work, and
:func:`decode` refuses values whose magnitude exceeds the bound (corruption or overflow).

Example Usage:
  >>> n = 2**127 - 1
  >>> y = encode(-0.25, n=n, precision=1e-6) * c_lcm(4) % n
  >>> decode(y, n=n, c_lcm_value=c_lcm(4), precision=1e-6)
  -0.25
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from jaxfl import validate

DEFAULT_PRECISION = 1e-10


class ProtocolError(validate.JaxflValueError):
    """A protocol message is missing, malformed or inconsistent, or a value overflows."""


@functools.lru_cache(maxsize=64)
def c_lcm(n_max: int) -> int:
    """``lcm(1, 2, ..., n_max)``: divisible by every user total N_u <= n_max."""
    n_max = validate.positive_int("n_max", n_max)
    return math.lcm(*range(1, n_max + 1))


def encode(x: float, *, n: int, precision: float = DEFAULT_PRECISION) -> int:
    """``int(x / P) mod n`` (truncation toward zero, as the authors' Algorithm 5)."""
    v = float(x)
    if not math.isfinite(v):
        raise ProtocolError(f"Cannot encode a non-finite value {x!r}.")
    scaled = v / precision
    if abs(scaled) >= n // 2:
        raise ProtocolError(f"|x| / P = {abs(scaled):.3g} does not fit the modulus.")
    return int(scaled) % n


def signed(y: int, n: int) -> int:
    """The representative of ``y mod n`` in ``(-n/2, n/2]``."""
    y %= n
    return y - n if y > n // 2 else y


def decode(y: int, *, n: int, c_lcm_value: int, precision: float = DEFAULT_PRECISION,
           bound: float | None = None) -> float:
    """Signed decode, exact division by C_LCM, times P. Raises when ``|value| > bound``."""
    value = float(Fraction(signed(int(y), n), c_lcm_value)) * precision
    if bound is not None and not abs(value) <= bound:
        raise ProtocolError(
            f"Decoded value {value:.6g} exceeds the a-priori bound {bound:.6g}: a message was "
            "corrupted, replayed or a user total exceeds N_max.")
    return value


def capacity_bits(*, c_lcm_value: int, bound: float, precision: float) -> float:
    """Bits needed by the signed aggregate ``C_LCM * bound / P`` (plus the sign)."""
    return math.log2(c_lcm_value) + math.log2(max(bound, precision) / precision) + 1.0


def check_capacity(*, n: int, c_lcm_value: int, bound: float, precision: float) -> float:
    """Raises if the aggregate may wrap around n; returns the headroom in bits."""
    need = capacity_bits(c_lcm_value=c_lcm_value, bound=bound, precision=precision)
    headroom = n.bit_length() - 1 - need
    if headroom < 1:
        raise ProtocolError(
            f"Paillier modulus of {n.bit_length()} bits cannot hold the aggregate: it needs "
            f"{need:.0f} bits (log2 C_LCM = {math.log2(c_lcm_value):.0f}). Use a larger key, a "
            "smaller n_max or a coarser precision.")
    return headroom
