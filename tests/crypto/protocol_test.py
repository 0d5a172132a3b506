"""Protocol 1 (private weighting): round trips against the plaintext ULDP-AVG-w aggregate,
what each party sees (Kato et al. 2023, Sec. 4.1, Protocol 1), tampering, and the authors' 2048-bit unit test."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from phe import paillier
from scipy import stats

from jaxfl import clipping, validate
from jaxfl.algorithms import uldp, uldp_data

pytest.importorskip("cryptography",
                    reason="the crypto extra (pip install jaxfl[crypto]) is not installed")

from jaxfl.crypto import encoding, keys, protocol  # noqa: E402
from jaxfl.crypto.encoding import ProtocolError  # noqa: E402
from jaxfl.data import uldp_records  # noqa: E402

S, U, D = 3, 6, 4
CFG = protocol.ProtocolConfig(key_bits=256, n_max=24, clip_norm=1.0, noise_multiplier=2.0,
                              insecure_for_tests=True)


def _hist(seed=0, users=U):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 4, size=(S, users))
    h[0, h.sum(0) == 0] = 1  # every user present
    return h


def _inputs(seed=0, users=U):
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(S, users, D))
    clipped = raw * np.minimum(1.0, CFG.clip_norm / np.linalg.norm(raw, axis=-1,
                                                                   keepdims=True))
    return clipped, rng.normal(size=(S, D)) * 2.0 / math.sqrt(S)


def _tolerance(users=U):
    return CFG.precision * (users + S) * 1.0001


def test_round_trip_equals_plaintext_weighted_aggregate_with_and_without_sampling():
    hist = _hist()
    run = protocol.setup(CFG, hist)
    for t in range(2):
        clipped, noise = _inputs(seed=t)
        got = protocol.run_round(run, t, clipped, noise)
        want = protocol.plaintext_aggregate(hist, clipped, noise)
        assert np.max(np.abs(got - want)) <= _tolerance()
    mask = np.array([1, 0, 1, 1, 0, 0], np.float32)
    clipped, noise = _inputs(seed=5)
    got = protocol.run_round(run, 2, clipped, noise, user_mask=mask)
    want = protocol.plaintext_aggregate(hist, clipped, noise, user_mask=mask)
    assert np.max(np.abs(got - want)) <= _tolerance()
    assert len(run.timings["rounds"]) == 3


def test_protocol_equals_jax_silo_sums():
    """Oracle 13: the same clipped pair vectors and noise through the vmapped ULDP-AVG-w
    aggregation (float32) and through Protocol 1."""
    rng = np.random.default_rng(1)
    n = 40
    data = uldp_records.UldpData(rng.normal(size=(n, D)).astype(np.float32), np.zeros(n, np.int32),
                              rng.integers(0, S, n), rng.integers(0, U, n), S, U).validate()

    def unit_fn(params, x, y, mask, key):  # a deterministic vector per pair
        del y, key
        m = mask[:, None].astype(jnp.float32)
        return {"w": params["w"] + jnp.sum(x * m, 0)}, jnp.zeros(()), jnp.bool_(True)

    params = {"w": jnp.zeros(D)}
    sums, _ = jax.jit(lambda d: uldp.silo_sums(unit_fn, params, d, jnp.ones(U),
                                               jax.random.key(0), clip_norm=1.0,
                                               weighting="optimal"))(
        uldp_data.pair_data(data).to_device())
    hist = uldp_records.histogram(data)
    clipped = np.zeros((S, U, D))
    for s in range(S):
        for u in range(U):
            rows = data.x[(data.silo == s) & (data.user == u)]
            if len(rows):
                clipped[s, u] = np.asarray(clipping.clip_pytree(
                    {"w": jnp.asarray(rows.sum(0))}, 1.0)[0]["w"])
    noise = np.asarray(uldp.silo_noise(params, jax.random.key(3), S, 0.5)["w"], np.float64)
    run = protocol.setup(CFG, hist)
    got = protocol.run_round(run, 0, clipped, noise)
    want = np.asarray(sums["w"]).sum(0) + noise.sum(0)
    np.testing.assert_allclose(got, want, atol=1e-5)  # float32 JAX vs exact integers


def test_server_never_sees_counts_in_the_clear():
    """Across 300 users the server's blinded values are uniform in Z_n and uncorrelated with
    the counts; no server-side integer equals a count; it learns only which N_u are nonzero."""
    users = 300
    hist = _hist(seed=2, users=users)
    hist[:, 7] = 0  # a user without records
    run = protocol.setup(protocol.ProtocolConfig(key_bits=256, n_max=24, insecure_for_tests=True),
                         hist)
    log, n = run.transcript, run.server.n
    blinded = [v for _, vals in log.values("server", "blinded_histogram") for v in vals]
    totals = log.values("server", "blinded_totals")[0]
    counts = set(hist.ravel().tolist()) | set(hist.sum(0).tolist())
    assert not counts & (set(blinded) | set(totals) - {0})
    for sample in (blinded, [t for t in totals if t]):
        assert stats.kstest(np.array(sample, float) / n, "uniform").pvalue > 1e-3
    u_present = hist.sum(0) > 0
    assert np.corrcoef(np.array([t / n for t in totals])[u_present],
                       hist.sum(0)[u_present])[0, 1] ** 2 < 0.05
    assert log.values("server", "users_present")[0] == u_present.tolist()
    # The seed travels encrypted: the server's bytes never contain it.
    seed = log.values("silo 0", "seed")[0]
    assert all(seed not in blob for _, blob in log.values("server", "seed_ciphertext"))
    # Silos see their own histogram, the Paillier public key, the DH keys and R; never another
    # silo's counts or any N_u.
    for s in range(S):
        view = run.transcript.view(f"silo {s}")
        names = {name for _, name, _ in view}
        assert names == {"paillier_public_key", "own_histogram", "dh_publics", "seed"}
        assert log.values(f"silo {s}", "own_histogram")[0] == hist[s].tolist()


def test_encrypted_inverses_fresh_when_sampling_and_unreadable():
    hist = _hist()
    run = protocol.setup(CFG, hist)
    clipped, noise = _inputs()
    ones = np.ones(U)
    protocol.run_round(run, 0, clipped, noise, user_mask=ones)
    protocol.run_round(run, 1, clipped, noise, user_mask=ones)
    a, b = (run.transcript.values("silo 1", "encrypted_inverses")[i] for i in (0, 1))
    assert all(x != y for x, y in zip(a, b, strict=True))  # same plaintexts, fresh randomness
    inv = [pow(int(r) * int(t), -1, run.server.n) for r, t in
           zip(keys.multiplicative_masks(run.transcript.values("silo 0", "seed")[0],
                                         run.server.n, U), hist.sum(0), strict=True)]
    assert not set(inv) & set(a)
    # The server records the sampling outcome it chose.
    assert len(run.transcript.values("server", "user_mask")) == 2


def test_collusion_reveals_totals():
    """Non-collusion is necessary: with R (from any silo) the server recovers every N_u."""
    hist = _hist(seed=4)
    run = protocol.setup(CFG, hist)
    n = run.server.n
    r = keys.multiplicative_masks(run.transcript.values("silo 2", "seed")[0], n, U)
    totals = run.transcript.values("server", "blinded_totals")[0]
    assert [b * pow(ru, -1, n) % n for b, ru in zip(totals, r, strict=True)] == hist.sum(
        0).tolist()


def test_primitive_identities():
    """Oracle 16: B(N_u) B_inv(N_u) = 1 mod n; pairwise masks cancel over silos."""
    hist = _hist()
    run = protocol.setup(CFG, hist)
    n = run.server.n
    totals = run.transcript.values("server", "blinded_totals")[0]
    assert all(t * pow(t, -1, n) % n == 1 for t in totals)
    sums = [0] * 5
    for silo in run.silos:
        sums = [(a + b) % n for a, b in zip(sums, silo._mask_sum(5, "round", 9), strict=True)]
    assert sums == [0] * 5


def test_tampered_or_missing_messages_raise():
    hist = _hist()
    run = protocol.setup(CFG, hist)
    clipped, noise = _inputs()
    enc = run.server.encrypted_inverses(0)
    msgs = {s.s: s.round_message(0, enc, clipped[s.s], noise[s.s]) for s in run.silos}
    with pytest.raises(ProtocolError, match="Missing"):
        run.server.aggregate(0, {0: msgs[0], 1: msgs[1]}, D)
    bad = dict(msgs)
    bad[1] = [run.server.public_key.raw_encrypt(12345)] + msgs[1][1:]
    with pytest.raises(ProtocolError, match="bound"):
        run.server.aggregate(0, bad, D)
    with pytest.raises(ProtocolError, match="Malformed"):
        run.server.aggregate(0, {**msgs, 2: msgs[2][:-1]}, D)
    with pytest.raises(ProtocolError, match="Malformed"):
        run.server.aggregate(0, {**msgs, 2: [run.server.nsq + 1] * D}, D)
    # Replay: round-0 messages in round 1 carry the wrong masks.
    enc1 = run.server.encrypted_inverses(1)
    replay = {s.s: s.round_message(1, enc1, clipped[s.s], noise[s.s]) for s in run.silos}
    replay[2] = msgs[2]
    with pytest.raises(ProtocolError, match="bound"):
        run.server.aggregate(1, replay, D)
    # Setup messages: a flipped byte in the encrypted seed, a missing blinded histogram.
    silos = run.silos
    blob = keys.encrypt_seed(b"\x01" * 32, silos[1]._pair_keys[0], 0, 1)
    with pytest.raises(ProtocolError, match="tampered"):
        silos[1].receive_seed(blob[:-1] + bytes([blob[-1] ^ 1]))
    with pytest.raises(ProtocolError, match="Missing"):
        run.server.receive_blinded_histograms({0: silos[0].blinded_histogram()})
    with pytest.raises(ProtocolError):
        silos[0].receive_public_keys({1: b"short"})


def test_config_validation():
    with pytest.raises(validate.JaxflValueError, match="insecure_for_tests"):
        protocol.ProtocolConfig(key_bits=512)
    with pytest.raises(ProtocolError, match="cannot hold"):
        protocol.setup(protocol.ProtocolConfig(key_bits=128, n_max=200, insecure_for_tests=True),
                       _hist())
    with pytest.raises(ProtocolError, match="n_max"):
        protocol.setup(protocol.ProtocolConfig(key_bits=256, n_max=2, insecure_for_tests=True),
                       np.full((2, 3), 3))


def test_authors_unit_test_with_2048_bit_key():
    """Oracle 15 with the default 2048-bit key: N = 900, n = 90, w = +-0.0123456789...:
    Enc((N r)^-1)^(n r C_LCM Encode(w)) decrypts and decodes to +-0.00123456789 (1e-7)."""
    cfg = protocol.ProtocolConfig()
    assert cfg.key_bits == 2048 and not cfg.insecure_for_tests
    pk, sk = paillier.generate_paillier_keypair(n_length=cfg.key_bits)
    n, c = pk.n, encoding.c_lcm(cfg.n_max)
    r = keys.multiplicative_masks(keys.new_seed(), n, 1)[0]
    enc_inv = pk.raw_encrypt(pow(900 * r, -1, n))
    for w in (0.0123456789123, -0.0123456789123):
        e = 90 * r * c * encoding.encode(w, n=n, precision=cfg.precision) % n
        out = encoding.decode(sk.raw_decrypt(pow(enc_inv, e, pk.nsquare)), n=n, c_lcm_value=c,
                              precision=cfg.precision)
        assert out == pytest.approx(w / 10, abs=1e-7)
