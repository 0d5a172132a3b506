"""Pairwise seed agreement for LightDP-FL (Sec. IV-A: one Diffie-Hellman round at setup).

Every client ``i`` holds an X25519 key pair; the server relays the public keys (so no
client-to-client link is needed). For each peer ``j``, client ``i`` computes the X25519 shared
secret and expands it with HKDF-SHA256 into the pair seed ``s_ij``::

    s_ij = HKDF(ikm=X25519(sk_i, pk_j), salt=session, info="jaxfl/lightdp/pair" || min || max)

Both ends obtain the same bytes, which become a threefry PRNG key; the round-``t`` pairwise
term is then ``sigma_K * normal(fold_in(s_ij, t))`` (:mod:`jaxfl.algorithms.lightdp`), so the
simulation and a deployment share one derivation. The simulation's default
``fold_in(fold_in(k, min), max)`` seeds are a stand-in with the same interface.

Uses the ``cryptography`` package (the ``crypto`` extra). ``jax.random`` (threefry) expands the
seed; it is not a vetted CSPRNG, so the derived noise is research grade.

Example Usage:
  >>> import numpy as np
  >>> sks = simulated_private_keys(3, np.random.default_rng(0))
  >>> pks = [public_bytes(k) for k in sks]
  >>> pair_seed(sks[0], pks[2], 0, 2) == pair_seed(sks[2], pks[0], 2, 0)
  True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import x25519
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from jaxfl import validate

INFO_PREFIX = b"jaxfl/lightdp/pair"
SEED_BYTES = 8  # two uint32 words: a threefry2x32 key


def generate_private_key() -> x25519.X25519PrivateKey:
    """A fresh X25519 private key from the OS CSPRNG (deployment)."""
    return x25519.X25519PrivateKey.generate()


def simulated_private_keys(num_clients: int, rng: np.random.Generator
                           ) -> list[x25519.X25519PrivateKey]:
    """Reproducible private keys from a seeded generator (simulation only, not secret)."""
    n = validate.positive_int("num_clients", num_clients)
    raw = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
    return [x25519.X25519PrivateKey.from_private_bytes(bytes(row)) for row in raw]


def public_bytes(private_key: x25519.X25519PrivateKey) -> bytes:
    """The 32-byte raw public key a client sends to the server for relay."""
    return private_key.public_key().public_bytes(encoding=serialization.Encoding.Raw,
                                                 format=serialization.PublicFormat.Raw)


def derive_shared_key(private_key: x25519.X25519PrivateKey, peer_public: bytes, *,
                      info: bytes, salt: bytes | None = None, length: int = 32,
                      error: type[Exception] = validate.JaxflValueError) -> bytes:
    """HKDF-SHA256 of the X25519 shared secret of ``private_key`` and ``peer_public``.

    The one X25519 + HKDF derivation of jaxfl: LightDP-FL's pair seeds (:func:`pair_seed`) and
    ULDP-FL's Protocol 1 pairwise keys (:class:`jaxfl.crypto.keys.PairwiseParty`) both call it,
    each with its own ``info`` label (domain separation).

    Args:
      private_key: this party's X25519 private key.
      peer_public: the peer's 32-byte raw public key (relayed by the server).
      info: HKDF info (binds the key to its protocol and party pair).
      salt: HKDF salt (None: no salt).
      length: output bytes.
      error: exception type raised for a malformed public key.
    """
    if not isinstance(peer_public, bytes | bytearray) or len(peer_public) != 32:
        size = len(peer_public) if hasattr(peer_public, "__len__") else "?"
        raise error(f"Malformed X25519 public key: expected a 32-byte key, got "
                    f"{type(peer_public).__name__} of length {size}.")
    shared = private_key.exchange(x25519.X25519PublicKey.from_public_bytes(bytes(peer_public)))
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(shared)


def _info(i: int, j: int) -> bytes:
    a, b = min(i, j), max(i, j)
    return INFO_PREFIX + a.to_bytes(4, "big") + b.to_bytes(4, "big")


def pair_seed(private_key: x25519.X25519PrivateKey, peer_public: bytes, me: int, peer: int, *,
              session: bytes = b"", length: int = SEED_BYTES) -> bytes:
    """``s_{me,peer}``: HKDF-SHA256 of the X25519 shared secret, bound to the unordered pair.

    Args:
      private_key: this client's X25519 private key.
      peer_public: the peer's 32-byte raw public key (relayed by the server).
      me, peer: client indices (the info string uses (min, max), so both ends agree).
      session: HKDF salt binding the seeds to one training run.
      length: output bytes.
    """
    if me == peer:
        raise validate.JaxflValueError(f"Expected two different clients, got me=peer={me}.")
    return derive_shared_key(private_key, peer_public, info=_info(me, peer),
                             salt=session or None, length=length)


def seed_to_key_data(seed: bytes) -> np.ndarray:
    """8 seed bytes -> ``uint32[2]`` threefry key data (big-endian words)."""
    if len(seed) != SEED_BYTES:
        raise validate.JaxflValueError(f"Expected {SEED_BYTES} seed bytes, got {len(seed)}.")
    return np.frombuffer(seed, dtype=">u4").astype(np.uint32)


def client_seeds(me: int, private_key: x25519.X25519PrivateKey, public_keys: Sequence[bytes], *,
                 session: bytes = b"") -> np.ndarray:
    """What client ``me`` derives at setup: ``uint32[N, 2]`` key data (row ``me`` is zero)."""
    out = np.zeros((len(public_keys), 2), np.uint32)
    for j, pk in enumerate(public_keys):  # one agreement per peer: the client's own setup work
        if j != me:
            out[j] = seed_to_key_data(pair_seed(private_key, pk, me, j, session=session))
    return out


def pair_seed_table(private_keys: Sequence[x25519.X25519PrivateKey], *, session: bytes = b""
                    ) -> np.ndarray:
    """All ``N (N - 1) / 2`` pair seeds as ``uint32[P, 2]`` in ``np.triu_indices(N, 1)`` order.

    Computed from the lower-index party of each pair (the simulation of N setups); the higher
    index derives the same bytes (tested).
    """
    n = len(private_keys)
    if n < 2:
        raise validate.JaxflValueError(f"Expected at least 2 clients, got {n}.")
    pubs = [public_bytes(k) for k in private_keys]
    ii, jj = np.triu_indices(n, 1)
    table = np.empty((ii.size, 2), np.uint32)
    for p, (i, j) in enumerate(zip(ii.tolist(), jj.tolist(), strict=True)):  # host setup, once
        table[p] = seed_to_key_data(pair_seed(private_keys[i], pubs[j], i, j, session=session))
    return table


def to_jax_keys(table: np.ndarray):
    """``uint32[P, 2]`` key data -> typed threefry keys ``[P]`` for ``lightdp_fl(pair_keys=)``."""
    import jax
    import jax.numpy as jnp

    table = np.asarray(table)
    validate.shape("table", table, (None, 2))
    return jax.random.wrap_key_data(jnp.asarray(table, jnp.uint32), impl="threefry2x32")


__all__ = ["generate_private_key", "simulated_private_keys", "public_bytes", "derive_shared_key",
           "pair_seed",
           "seed_to_key_data", "client_seeds", "pair_seed_table", "to_jax_keys"]
