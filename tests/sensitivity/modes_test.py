"""Worst-case pattern modes: brute force, bounds, chain, jnp/NumPy agreement."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import validate
from jaxfl.sensitivity import modes


def _psd(T, seed, scale=1.0):
    A = np.random.default_rng(seed).normal(size=(T, T))
    M = A @ A.T
    return scale * M / np.linalg.eigvalsh(M)[-1]   # 0 ≼ M ≼ I like a sensitivity matrix


def test_sign_exact_matches_brute_force():
    for seed in range(4):
        M = _psd(7, seed)
        best = max(np.array(d) @ M @ np.array(d)
                   for d in itertools.product((1.0, -1.0), repeat=7))
        val, pat = modes.sign_exact(M)
        assert abs(val - best) < 1e-12 and abs(pat @ M @ pat - best) < 1e-12
        with jax.enable_x64(True):
            jval, _ = jax.jit(modes.sign_exact)(jnp.asarray(M))
        assert abs(float(jval) - best) < 1e-12


def test_chain_and_sdp_bounds():
    for seed in range(4):
        M = _psd(6, seed, scale=0.8)
        T = 6
        sign = modes.sign_exact(M)[0]
        lo, hi = modes.sdp_bounds(M)
        cert = modes.certified(M)
        assert modes.paper(M) <= sign + 1e-12 <= hi + 2e-12
        assert lo <= hi + 1e-12 and hi <= cert + 1e-12 <= T + 2e-12
        # the dual value is a valid upper bound of every feasible X = V Vᵀ (random ones)
        V = np.random.default_rng(seed).normal(size=(T, T))
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        assert np.sum(M * (V @ V.T)) <= hi + 1e-12


def test_nonnegative_M_all_modes_equal():
    M = np.abs(_psd(5, 1))
    M = M / np.linalg.eigvalsh(M)[-1]     # entrywise >= 0 and PSD up to scaling
    M = 0.5 * (M + M.T)
    if np.linalg.eigvalsh(M)[0] < 0:      # make it PSD while keeping M >= 0
        M = M + abs(np.linalg.eigvalsh(M)[0]) * np.eye(5)
    assert abs(modes.paper(M) - modes.sign_exact(M)[0]) < 1e-12
    assert abs(modes.paper(M) - modes.abs_sum(M)) < 1e-12
    assert modes.certified(M) <= modes.abs_sum(M) + 1e-12


def test_certified_numpy_equals_jnp_and_horizon():
    M = _psd(5, 2)
    with jax.enable_x64(True):
        j = float(jax.jit(modes.certified)(jnp.asarray(M)))
        padded = np.zeros((8, 8))
        padded[:5, :5] = M
        jp = float(jax.jit(modes.certified)(jnp.asarray(padded), 5.0))
    assert abs(j - modes.certified(M)) < 1e-12 and abs(jp - j) < 1e-12


def test_sign_exact_rejects_long_horizon():
    with pytest.raises(validate.JaxflValueError, match="sign_exact"):
        modes.mode_value(np.eye(21), "sign_exact")
    with pytest.raises(validate.JaxflValueError):
        modes.mode_value(np.eye(3), "bogus")
