"""X25519 + HKDF pair seeds: agreement, independence, RFC 5869 cross-check, use in LightDP-FL."""

import hashlib
import hmac

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import validate
from jaxfl.algorithms import lightdp

pytest.importorskip("cryptography",
                    reason="the crypto extra (pip install jaxfl[crypto]) is not installed")

from jaxfl.crypto import pairwise as P  # noqa: E402


def _keys(n, seed=0):
    return P.simulated_private_keys(n, np.random.default_rng(seed))


def test_both_ends_derive_the_same_seed():
    sks = _keys(5)
    pks = [P.public_bytes(k) for k in sks]
    rows = np.stack([P.client_seeds(i, sks[i], pks, session=b"run-1") for i in range(5)])
    np.testing.assert_array_equal(rows, rows.transpose(1, 0, 2))  # s_ij == s_ji
    off = rows[~np.eye(5, dtype=bool)].reshape(-1, 2)
    assert len({tuple(r) for r in off.tolist()}) == 5 * 4 // 2  # distinct per pair


def test_table_matches_client_rows_and_session_binding():
    sks = _keys(6, seed=1)
    pks = [P.public_bytes(k) for k in sks]
    table = P.pair_seed_table(sks, session=b"s")
    I, J = np.triu_indices(6, 1)
    for p, (i, j) in enumerate(zip(I, J, strict=True)):
        np.testing.assert_array_equal(table[p], P.client_seeds(int(j), sks[j], pks,
                                                               session=b"s")[i])
    assert not np.array_equal(table, P.pair_seed_table(sks, session=b"other"))
    np.testing.assert_array_equal(table, P.pair_seed_table(_keys(6, seed=1), session=b"s"))


def test_hkdf_matches_rfc5869_by_hand():
    """The library derivation equals HKDF-SHA256 written out from RFC 5869 with hmac."""
    a, b = _keys(2, seed=3)
    shared = a.exchange(b.public_key())
    salt, info = b"salt", P.INFO_PREFIX + (0).to_bytes(4, "big") + (1).to_bytes(4, "big")
    prk = hmac.new(salt, shared, hashlib.sha256).digest()
    okm = hmac.new(prk, info + b"\x01", hashlib.sha256).digest()[:8]
    assert P.pair_seed(a, P.public_bytes(b), 0, 1, session=salt) == okm
    assert P.pair_seed(b, P.public_bytes(a), 1, 0, session=salt) == okm


def test_fresh_os_keys_agree():
    a, b = P.generate_private_key(), P.generate_private_key()
    assert P.pair_seed(a, P.public_bytes(b), 3, 9) == P.pair_seed(b, P.public_bytes(a), 9, 3)


def test_x25519_table_drives_lightdp_pair_terms():
    N, d = 5, 64
    keys = P.to_jax_keys(P.pair_seed_table(_keys(N, seed=2), session=b"t"))
    assert keys.shape == (N * (N - 1) // 2,)
    r = lambda i, j: lightdp.pair_term(keys, i, j, 3, num_clients=N, dim=d, sigma_k=1.0)
    np.testing.assert_array_equal(r(1, 4), r(4, 1))
    with jax.enable_x64(True):
        masks = lightdp.pair_masks(keys, 3, num_clients=N, dim=d, sigma_k=4.0,
                                   dtype=jnp.float64, fixed_point_bits=40)
        np.testing.assert_array_equal(np.asarray(jnp.sum(masks, axis=0)), np.zeros(d))
        assert float(jnp.abs(masks).max()) > 1.0


def test_bad_input():
    a, b = _keys(2)
    with pytest.raises(validate.JaxflValueError, match="32-byte"):
        P.pair_seed(a, b"short", 0, 1)
    with pytest.raises(validate.JaxflValueError, match="different"):
        P.pair_seed(a, P.public_bytes(b), 1, 1)
    with pytest.raises(validate.JaxflValueError):
        P.pair_seed_table([a])
    with pytest.raises(validate.ShapeError):
        P.to_jax_keys(np.zeros((3, 3), np.uint32))
