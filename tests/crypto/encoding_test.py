"""Fixed-point encoding and C_LCM (Kato et al. 2023, Alg. 5) and the capacity check."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("cryptography",
                    reason="the crypto extra (pip install jaxfl[crypto]) is not installed")

from jaxfl.crypto import encoding  # noqa: E402
from jaxfl.crypto.encoding import ProtocolError  # noqa: E402

N = (1 << 255) - 19  # a large odd modulus (prime; any odd n works for encoding)


def test_c_lcm_2000_has_867_digits_and_is_divisible():
    c = encoding.c_lcm(2000)
    assert len(str(c)) == 867
    assert 2877 <= math.log2(c) <= 2879
    assert all(c % k == 0 for k in range(1, 2001))
    assert encoding.c_lcm(10) == 2520


@settings(max_examples=60, deadline=None, derandomize=True)
@given(x=st.floats(-1e3, 1e3, allow_nan=False), n_max=st.integers(1, 40))
def test_decode_encode_roundtrip_within_precision(x, n_max):
    P = 1e-10
    c = encoding.c_lcm(n_max)
    y = encoding.encode(x, n=N, precision=P) * c % N
    assert abs(encoding.decode(y, n=N, c_lcm_value=c, precision=P) - x) <= P * (1 + 1e-6) + abs(
        x) * 1e-15


def test_negative_values_and_truncation_toward_zero():
    assert encoding.encode(-2.5e-10, n=N, precision=1e-10) == N - 2
    assert encoding.encode(2.9e-10, n=N, precision=1e-10) == 2
    assert encoding.signed(N - 5, N) == -5
    assert encoding.decode(N - 30, n=N, c_lcm_value=3, precision=0.5) == -5.0


def test_weighted_sum_is_exact_through_c_lcm():
    """Encode(d) n_su C_LCM / N_u summed over silos decodes to w-weighted sums (|err| <= P)."""
    P, c = 1e-10, encoding.c_lcm(12)
    rng = np.random.default_rng(0)
    counts = np.array([3, 5, 4])  # N_u = 12
    deltas = rng.normal(size=3)
    total = sum(encoding.encode(d, n=N, precision=P) * int(k) * (c // 12)
                for d, k in zip(deltas, counts, strict=True)) % N
    value = encoding.decode(total, n=N, c_lcm_value=c, precision=P)
    assert abs(value - np.sum(counts / 12 * deltas)) <= 3 * P


def test_overflow_and_bad_values_raise():
    with pytest.raises(ProtocolError):
        encoding.encode(float("nan"), n=N)
    with pytest.raises(ProtocolError):
        encoding.encode(1e70, n=N, precision=1e-10)
    with pytest.raises(ProtocolError):
        encoding.decode(N // 3, n=N, c_lcm_value=1, precision=1e-10, bound=1e3)
    with pytest.raises(ProtocolError):
        encoding.check_capacity(n=(1 << 2047) + 1, c_lcm_value=encoding.c_lcm(2000), bound=10.0,
                                precision=1e-10)
    head = encoding.check_capacity(n=(1 << 2047) + 1, c_lcm_value=encoding.c_lcm(1000),
                                   bound=1e3, precision=1e-10)
    assert 500 < head < 600
