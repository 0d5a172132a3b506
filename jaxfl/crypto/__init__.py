"""Cryptographic protocols (host-side, exact integers; never jitted).

Modules:
  encoding  fixed-point encoding into Z_n, C_LCM, capacity checks (ULDP-FL Algorithm 5).
  keys      X25519 + HKDF pairwise keys, ChaCha20 masks, the shared seed (Protocol 1 setup).
  protocol  ULDP-FL's private weighting protocol (Protocol 1) with Paillier from ``phe``.
  pairwise  per-pair seeds for LightDP-FL's pairwise noise (X25519 + HKDF).

Requires the ``crypto`` extra (``phe``, ``cryptography``).
"""

from jaxfl.crypto import encoding, keys, protocol
from jaxfl.crypto.encoding import ProtocolError

__all__ = ["encoding", "keys", "protocol", "ProtocolError"]
