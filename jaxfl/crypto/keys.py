"""Key agreement, pseudorandom masks and the shared seed of ULDP-FL's Protocol 1 (setup 1a-1d).

* Pairwise keys: X25519 Diffie-Hellman between every two silos (public keys relayed by the
  server), the shared secret expanded with HKDF-SHA256 bound to the ordered pair (s, s')
  (:func:`jaxfl.crypto.pairwise.derive_shared_key`, shared with LightDP-FL's pair seeds).
  (The authors used 3072-bit finite-field DH and SHA-256; X25519 gives ~128-bit security.)
* Masks: a ChaCha20 keystream keyed by a pairwise (or shared) key, with a nonce derived from
  the round and a label, read as integers of ``bytes(n) + 16`` bytes reduced mod n (statistical
  distance to uniform < 2^-128 per value).
* Seed R: drawn by silo 0 from the OS CSPRNG and sent to every other silo through the server
  encrypted with ChaCha20-Poly1305 under the pairwise key (authenticated: tampering raises).
  The authors XOR a 32-bit R with the key; here R has 256 bits.

Example Usage:
  >>> a, b = PairwiseParty(), PairwiseParty()
  >>> a.shared_key(b.public_bytes(), 0, 1) == b.shared_key(a.public_bytes(), 0, 1)
  True
"""

from __future__ import annotations

import hashlib
import math
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric import x25519
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from jaxfl.crypto import pairwise
from jaxfl.crypto.encoding import ProtocolError

KEY_BYTES = 32
SEED_BYTES = 32
_INFO = b"jaxfl/uldp-fl/protocol1"


class PairwiseParty:
    """One silo's X25519 key pair (key agreement: :func:`jaxfl.crypto.pairwise.derive_shared_key`).

    Args:
      private_key: the X25519 private key (default: a fresh one from the OS CSPRNG).
    """

    def __init__(self, private_key: x25519.X25519PrivateKey | None = None):
        self._private = pairwise.generate_private_key() if private_key is None else private_key

    def public_bytes(self) -> bytes:
        return pairwise.public_bytes(self._private)

    def shared_key(self, peer_public: bytes, low: int, high: int) -> bytes:
        """HKDF-SHA256 of the X25519 secret, bound to the silo pair (low < high)."""
        return pairwise.derive_shared_key(self._private, peer_public,
                                          info=_INFO + f"|pair|{low}|{high}".encode(),
                                          salt=None, length=KEY_BYTES, error=ProtocolError)


def _nonce(*parts) -> bytes:
    return hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:16]


def prg_mod(key: bytes, n: int, count: int, *parts) -> list[int]:
    """``count`` pseudorandom integers in [0, n) from ChaCha20(key, nonce(parts))."""
    width = (n.bit_length() + 7) // 8 + 16
    stream = Cipher(algorithms.ChaCha20(key, _nonce(*parts)), mode=None).encryptor().update(
        bytes(width * count))
    return [int.from_bytes(stream[i * width:(i + 1) * width], "big") % n for i in range(count)]


def multiplicative_masks(seed: bytes, n: int, count: int) -> list[int]:
    """The silos' shared blinding factors r_u in Z*_n (setup 1d)."""
    masks = prg_mod(seed, n, count, "r_u")
    for r in masks:
        if r == 0 or math.gcd(r, n) != 1:  # probability ~ 2^-(|n|/2): would factor n
            raise ProtocolError("Blinding factor not invertible mod n.")
    return masks


def new_seed() -> bytes:
    return secrets.token_bytes(SEED_BYTES)


def encrypt_seed(seed: bytes, key: bytes, sender: int, receiver: int) -> bytes:
    nonce = secrets.token_bytes(12)
    aad = f"seed|{sender}|{receiver}".encode()
    return nonce + ChaCha20Poly1305(key).encrypt(nonce, seed, aad)


def decrypt_seed(blob: bytes, key: bytes, sender: int, receiver: int) -> bytes:
    if not isinstance(blob, bytes) or len(blob) < 12 + 16:
        raise ProtocolError("Malformed encrypted seed.")
    try:
        seed = ChaCha20Poly1305(key).decrypt(blob[:12], blob[12:],
                                             f"seed|{sender}|{receiver}".encode())
    except InvalidTag as err:
        raise ProtocolError("Encrypted seed failed authentication (tampered).") from err
    if len(seed) != SEED_BYTES:
        raise ProtocolError("Seed has the wrong length.")
    return seed
