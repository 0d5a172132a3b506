"""One X25519 + HKDF implementation for ULDP-FL's Protocol 1 keys and LightDP-FL's pair seeds.

The golden hex values below are regression anchors produced by the two separate derivations
that existed before they were merged (fixed private keys bytes(0..31) and bytes(32..63)):
merging must not change a single output byte.
"""

import pytest

pytest.importorskip("cryptography")
from cryptography.hazmat.primitives.asymmetric import x25519  # noqa: E402

from jaxfl import validate  # noqa: E402
from jaxfl.crypto import keys, pairwise  # noqa: E402
from jaxfl.crypto.encoding import ProtocolError  # noqa: E402

A = x25519.X25519PrivateKey.from_private_bytes(bytes(range(32)))
B = x25519.X25519PrivateKey.from_private_bytes(bytes(range(32, 64)))


def test_outputs_unchanged_by_the_merge():
    pa, pb = keys.PairwiseParty(A), keys.PairwiseParty(B)
    k01 = "eeb277c6edde52c70cca1c648965f446de73b87ccd718f9a166e5638ccbd5277"
    assert pa.shared_key(pb.public_bytes(), 0, 1).hex() == k01
    assert pb.shared_key(pa.public_bytes(), 0, 1).hex() == k01
    assert pa.shared_key(pb.public_bytes(), 3, 5).hex() == (
        "f69cf0cf9dbd1eae51d40d6280168c5bbd1f5a7dab7a6f579aac7bb225dd60c1")
    pub_a, pub_b = pairwise.public_bytes(A), pairwise.public_bytes(B)
    assert pairwise.pair_seed(A, pub_b, 0, 1).hex() == "a0ca505b151a2718"
    assert pairwise.pair_seed(B, pub_a, 1, 0).hex() == "a0ca505b151a2718"
    assert pairwise.pair_seed(A, pub_b, 7, 2, session=b"run-1", length=32).hex() == (
        "9b6d8321b19a13486d1981c2b251fd3d8ae0a2aefe4d7e62805420d8804a17a7")


def test_uldp_keys_use_the_pairwise_derivation(monkeypatch):
    calls = []
    real = pairwise.derive_shared_key

    def spy(*args, **kwargs):
        calls.append(kwargs["info"])
        return real(*args, **kwargs)

    monkeypatch.setattr(pairwise, "derive_shared_key", spy)
    pa, pb = keys.PairwiseParty(A), keys.PairwiseParty(B)
    pa.shared_key(pb.public_bytes(), 0, 1)
    pairwise.pair_seed(A, pairwise.public_bytes(B), 0, 1)
    assert calls == [b"jaxfl/uldp-fl/protocol1|pair|0|1", pairwise._info(0, 1)]
    assert not hasattr(keys, "HKDF")


def test_malformed_public_keys_raise_each_protocols_error():
    with pytest.raises(ProtocolError, match="Malformed X25519"):
        keys.PairwiseParty(A).shared_key(b"short", 0, 1)
    with pytest.raises(ProtocolError):
        keys.PairwiseParty(A).shared_key("x" * 32, 0, 1)
    with pytest.raises(validate.JaxflValueError, match="32-byte"):
        pairwise.pair_seed(A, b"\0" * 31, 0, 1)
