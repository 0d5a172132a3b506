"""ULDP-FL's private weighting protocol (Kato et al., PVLDB 2024, Protocol 1 and Algorithm 5).

Computes ``sum_s sum_u (n_{s,u} / N_u) clip_C(Delta^{s,u}) + sum_s z_s`` (ULDP-AVG-w, and -ws
with user sampling) while the server learns no n_{s,u} or N_u and no silo learns another silo's
counts or any N_u:

Setup: (1a) the server makes a Paillier key pair (python-paillier ``phe``) and each silo an
X25519 key pair; (1b) the server relays the silos' public keys and every pair of silos derives a
shared key; (1c) silo 0 sends a random seed R to every silo, encrypted under the pairwise keys;
(1d) the silos derive blinding factors r_u from R and (1e) send their histograms blinded as
``r_u n_{s,u} + pairwise masks (mod n)`` for *every* user; the server sums them into
``r_u N_u`` and (1f) inverts those mod n.
Round t: (2a) the server sends ``Enc((r_u N_u)^{-1})`` (Enc(0) for unsampled users);
(2b) silo s raises it to ``Encode(Delta_j) n_{s,u} r_u C_LCM`` per coordinate j, multiplies over
its users, adds its encoded noise and (2c) its pairwise masks for round t; the server multiplies
the silos' ciphertexts, decrypts and decodes.

Every message is recorded in a :class:`Transcript` (party, step, name, value) so tests can check
what each party sees (Kato et al. 2023, Sec. 4.1, Protocol 1). Security is against semi-honest,
non-colluding parties: a server that learns R (collusion with any silo) recovers every N_u.

Keys: 2048-bit Paillier moduli by default; smaller keys need ``insecure_for_tests=True``.
Decoding checks the a-priori bound ``|U| C + 10 sigma C`` per coordinate, so corrupted,
replayed or missing messages raise :class:`~jaxfl.crypto.encoding.ProtocolError`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np
from phe import paillier

from jaxfl import validate
from jaxfl.crypto import encoding, keys
from jaxfl.crypto.encoding import ProtocolError

MIN_SECURE_BITS = 2048


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProtocolConfig:
    """Public parameters of Protocol 1.

    Attributes:
      key_bits: Paillier modulus size (>= 2048 unless ``insecure_for_tests``).
      precision: fixed-point precision P.
      n_max: public upper bound on any user's total record count N_u (C_LCM = lcm(1..n_max)).
      clip_norm, noise_multiplier: C and sigma (for the decoding bound).
      insecure_for_tests: allow small keys (fast tests only; never for real data).
    """

    key_bits: int = 2048
    precision: float = encoding.DEFAULT_PRECISION
    n_max: int = 1000
    clip_norm: float = 1.0
    noise_multiplier: float = 5.0
    insecure_for_tests: bool = False

    def __post_init__(self):
        validate.positive_int("key_bits", self.key_bits, minimum=64)
        if self.key_bits < MIN_SECURE_BITS and not self.insecure_for_tests:
            raise validate.JaxflValueError(
                f"Expected key_bits >= {MIN_SECURE_BITS}, got {self.key_bits}; pass "
                "insecure_for_tests=True to use small keys in tests.")
        validate.positive("precision", self.precision, validate.JaxflValueError)
        validate.positive_int("n_max", self.n_max)
        validate.positive("clip_norm", self.clip_norm)
        validate.non_negative("noise_multiplier", self.noise_multiplier)

    def bound(self, num_users: int) -> float:
        """Per-coordinate bound on the true aggregate (norm <= C per user, 10-sigma noise)."""
        # in units of C: one C per user plus 10 noise stds (sigma C each); a decoding range,
        # not a noise std (the protocol adds the noise vectors it is given)
        return (num_users + 10.0 * self.noise_multiplier) * self.clip_norm + 1.0


class Transcript:
    """Everything each party receives or computes, in order: ``(step, name, value)``."""

    def __init__(self):
        self.entries: dict[str, list[tuple[str, str, Any]]] = {}

    def record(self, party: str, step: str, name: str, value) -> None:
        self.entries.setdefault(party, []).append((step, name, value))

    def view(self, party: str) -> list[tuple[str, str, Any]]:
        return list(self.entries.get(party, []))

    def values(self, party: str, name: str) -> list:
        return [v for _, n, v in self.view(party) if n == name]


def _check_complete(messages: dict, expected: int, what: str) -> None:
    missing = sorted(set(range(expected)) - set(messages))
    if missing:
        raise ProtocolError(f"Missing {what} from silos {missing}.")


def _check_ints(values, length: int, modulus: int, what: str) -> list[int]:
    if not isinstance(values, list | tuple) or len(values) != length:
        raise ProtocolError(f"Malformed {what}: expected {length} integers.")
    out = []
    for v in values:
        if not isinstance(v, int) or not 0 <= v < modulus:
            raise ProtocolError(f"Malformed {what}: value out of range.")
        out.append(v)
    return out


def _plain_add(c: int, m: int, n: int, nsq: int) -> int:
    """Enc(a) -> Enc(a + m): multiply by g^m = 1 + m n (mod n^2) for g = n + 1."""
    return c * (1 + (m % n) * n) % nsq


class Server:
    """The aggregation server A (holds the Paillier secret key)."""

    def __init__(self, config: ProtocolConfig, *, num_silos: int, num_users: int,
                 transcript: Transcript):
        self.config = config
        self.S = validate.positive_int("num_silos", num_silos, minimum=2)
        self.U = validate.positive_int("num_users", num_users)
        self.log = transcript
        self.public_key, self._secret_key = paillier.generate_paillier_keypair(
            n_length=config.key_bits)
        self.n = self.public_key.n
        self.nsq = self.public_key.nsquare
        self.c_lcm = encoding.c_lcm(config.n_max)
        self.headroom_bits = encoding.check_capacity(
            n=self.n, c_lcm_value=self.c_lcm, bound=config.bound(self.U),
            precision=config.precision)
        self._inverses: list[int] | None = None
        self._cached: list[int] | None = None

    def relay_public_keys(self, messages: dict[int, bytes]) -> dict[int, bytes]:
        """(1a-1b) Collects and broadcasts the silos' X25519 public keys."""
        _check_complete(messages, self.S, "DH public keys")
        for s, pk in messages.items():
            self.log.record("server", "setup", "dh_public", (s, pk))
        return dict(messages)

    def relay_seed(self, blobs: dict[int, bytes]) -> dict[int, bytes]:
        """(1c) Relays silo 0's encrypted seed (the server cannot read it)."""
        _check_complete({0: None, **blobs}, self.S, "encrypted seeds")
        for s, blob in blobs.items():
            self.log.record("server", "setup", "seed_ciphertext", (s, blob))
        return dict(blobs)

    def receive_blinded_histograms(self, messages: dict[int, list[int]]) -> None:
        """(1e-1f) Sums the double-blinded histograms into r_u N_u and inverts them."""
        _check_complete(messages, self.S, "blinded histograms")
        totals = [0] * self.U
        for s in range(self.S):
            vals = _check_ints(messages[s], self.U, self.n, "blinded histogram")
            self.log.record("server", "setup", "blinded_histogram", (s, vals))
            totals = [(a + b) % self.n for a, b in zip(totals, vals, strict=True)]
        self.log.record("server", "setup", "blinded_totals", totals)
        self._inverses = [pow(b, -1, self.n) if b else 0 for b in totals]
        self.log.record("server", "setup", "users_present", [b != 0 for b in totals])

    def encrypted_inverses(self, round_index: int, user_mask=None) -> list[int]:
        """(2a) ``Enc(B_inv(N_u))`` (Enc(0) for unsampled users). Re-encrypted every round when
        sampling; encrypted once otherwise, as the authors' code does (the paper's
        step 2(a) re-encrypts every round; same security)."""
        if self._inverses is None:
            raise ProtocolError("Setup is not complete.")
        if user_mask is None:
            if self._cached is None:
                self._cached = [self.public_key.raw_encrypt(v) for v in self._inverses]
            out = self._cached
        else:
            mask = np.asarray(user_mask).astype(bool)
            if mask.shape != (self.U,):
                raise ProtocolError("Malformed user sampling mask.")
            self.log.record("server", f"round {round_index}", "user_mask", mask.copy())
            out = [self.public_key.raw_encrypt(v if m else 0)
                   for v, m in zip(self._inverses, mask, strict=True)]
        return list(out)

    def aggregate(self, round_index: int, messages: dict[int, list[int]], dim: int
                  ) -> np.ndarray:
        """(2c) Multiplies the silos' ciphertexts, decrypts and decodes sum_s Delta^s."""
        _check_complete(messages, self.S, f"round {round_index} messages")
        prod = [1] * dim
        for s in range(self.S):
            cts = _check_ints(messages[s], dim, self.nsq, "silo ciphertexts")
            if any(c == 0 or math.gcd(c, self.n) != 1 for c in cts):
                raise ProtocolError("Malformed silo ciphertexts: not in Z*_{n^2}.")
            self.log.record("server", f"round {round_index}", "silo_ciphertexts", (s, cts))
            prod = [a * b % self.nsq for a, b in zip(prod, cts, strict=True)]
        bound = self.config.bound(self.U)
        out = np.array([encoding.decode(self._secret_key.raw_decrypt(c), n=self.n,
                                        c_lcm_value=self.c_lcm,
                                        precision=self.config.precision, bound=bound)
                        for c in prod], np.float64)
        self.log.record("server", f"round {round_index}", "aggregate", out.copy())
        return out


class Silo:
    """Silo s: holds its histogram row n_{s,.} and, each round, its users' clipped deltas."""

    def __init__(self, index: int, config: ProtocolConfig, public_key, counts, *,
                 num_silos: int, transcript: Transcript):
        self.s = index
        self.config = config
        self.S = num_silos
        self.pk = public_key
        self.n = public_key.n
        self.nsq = public_key.nsquare
        self.counts = [int(c) for c in np.asarray(counts)]
        if any(c < 0 or c > config.n_max for c in self.counts):
            raise ProtocolError(f"Silo {index}: counts must lie in [0, n_max={config.n_max}].")
        self.U = len(self.counts)
        self.c_lcm = encoding.c_lcm(config.n_max)
        self.log = transcript
        self.name = f"silo {index}"
        self.log.record(self.name, "setup", "paillier_public_key", self.n)
        self.log.record(self.name, "setup", "own_histogram", list(self.counts))
        self._dh = keys.PairwiseParty()
        self._pair_keys: dict[int, bytes] = {}
        self._seed: bytes | None = None
        self._r: list[int] | None = None

    def dh_public(self) -> bytes:
        return self._dh.public_bytes()

    def receive_public_keys(self, publics: dict[int, bytes]) -> None:
        self.log.record(self.name, "setup", "dh_publics", dict(publics))
        for t, pk in publics.items():
            if t != self.s:
                self._pair_keys[t] = self._dh.shared_key(pk, min(t, self.s), max(t, self.s))

    def seed_messages(self) -> dict[int, bytes]:
        """(1c) Silo 0 draws R and encrypts it to every other silo."""
        if self.s != 0:
            raise ProtocolError("Only silo 0 draws the shared seed.")
        self._set_seed(keys.new_seed())
        return {t: keys.encrypt_seed(self._seed, self._pair_keys[t], 0, t)
                for t in range(1, self.S)}

    def receive_seed(self, blob: bytes) -> None:
        self._set_seed(keys.decrypt_seed(blob, self._pair_keys[0], 0, self.s))

    def _set_seed(self, seed: bytes) -> None:
        self._seed = seed
        self._r = keys.multiplicative_masks(seed, self.n, self.U)
        self.log.record(self.name, "setup", "seed", seed)

    def _mask_sum(self, count: int, *label) -> list[int]:
        """sum_{t > s} m_{s,t} - sum_{t < s} m_{t,s} (mod n): cancels over silos."""
        total = [0] * count
        for t, key in self._pair_keys.items():
            m = keys.prg_mod(key, self.n, count, *label)
            sign = 1 if t > self.s else -1
            total = [(a + sign * b) % self.n for a, b in zip(total, m, strict=True)]
        return total

    def blinded_histogram(self) -> list[int]:
        """(1d-1e) ``r_u n_{s,u} + masks (mod n)`` for every user, including absent ones."""
        if self._r is None:
            raise ProtocolError("Seed not received.")
        masks = self._mask_sum(self.U, "histogram")
        return [(r * c + m) % self.n for r, c, m in zip(self._r, self.counts, masks, strict=True)]

    def round_message(self, round_index: int, encrypted_inverses: list[int], clipped,
                      noise_vector) -> list[int]:
        """(2b-2c) One ciphertext per coordinate of ``Delta^s`` + noise + round masks.

        Args:
          round_index: t (masks are bound to it).
          encrypted_inverses: the server's ``Enc(B_inv(N_u))`` for all users.
          clipped: ``[U, d]`` unweighted clipped deltas clip_C(Delta^{s,u}) (rows of users not
            in this silo are ignored).
          noise_vector: ``[d]`` this silo's Gaussian noise z_s.
        """
        enc = _check_ints(encrypted_inverses, self.U, self.nsq, "encrypted inverses")
        self.log.record(self.name, f"round {round_index}", "encrypted_inverses", list(enc))
        clipped = np.asarray(clipped, np.float64)
        z = np.asarray(noise_vector, np.float64)
        if clipped.ndim != 2 or clipped.shape[0] != self.U or z.shape != (clipped.shape[1],):
            raise validate.ShapeError(
                f"Expected clipped [{self.U}, d] and noise [d], got {clipped.shape}, {z.shape}.")
        d = clipped.shape[1]
        P = self.config.precision
        out = []
        masks = self._mask_sum(d, "round", round_index)
        for j in range(d):
            c = self.pk.raw_encrypt(0)  # fresh randomness even for a silo without users
            for u in range(self.U):
                if self.counts[u] == 0:
                    continue
                e = (encoding.encode(clipped[u, j], n=self.n, precision=P) * self.counts[u]
                     * self._r[u] * self.c_lcm) % self.n
                c = c * pow(enc[u], e, self.nsq) % self.nsq
            plain = encoding.encode(z[j], n=self.n, precision=P) * self.c_lcm + masks[j]
            out.append(_plain_add(c, plain, self.n, self.nsq))
        return out


@dataclasses.dataclass
class ProtocolRun:
    """Parties of one protocol instance after setup, with timings (seconds)."""

    server: Server
    silos: list[Silo]
    transcript: Transcript
    timings: dict


def setup(config: ProtocolConfig, histogram) -> ProtocolRun:
    """Runs Protocol 1's setup (1a-1f) for a histogram ``n[s, u]``."""
    hist = np.asarray(histogram)
    if hist.ndim != 2:
        raise validate.ShapeError(f"Expected histogram [S, U], got shape {hist.shape}.")
    S, U = hist.shape
    log = Transcript()
    t0 = time.perf_counter()
    server = Server(config, num_silos=S, num_users=U, transcript=log)
    silos = [Silo(s, config, server.public_key, hist[s], num_silos=S, transcript=log)
             for s in range(S)]
    publics = server.relay_public_keys({s.s: s.dh_public() for s in silos})
    for silo in silos:
        silo.receive_public_keys(publics)
    relayed = server.relay_seed(silos[0].seed_messages())
    for t, blob in relayed.items():
        silos[t].receive_seed(blob)
    t1 = time.perf_counter()
    server.receive_blinded_histograms({s.s: s.blinded_histogram() for s in silos})
    t2 = time.perf_counter()
    return ProtocolRun(server, silos, log, {"paillier_keygen_and_key_exchange": t1 - t0,
                                            "blinded_histogram": t2 - t1})


def run_round(run: ProtocolRun, round_index: int, clipped, noise_vectors, user_mask=None
              ) -> np.ndarray:
    """One round: returns the decrypted ``sum_s Delta^s`` (before division by |U||S|).

    Args:
      run: the parties after :func:`setup`.
      round_index: t.
      clipped: ``[S, U, d]`` clipped per-pair deltas.
      noise_vectors: ``[S, d]`` per-silo noise.
      user_mask: ``[U]`` sampled users (None: all, ULDP-AVG-w).
    """
    t0 = time.perf_counter()
    enc = run.server.encrypted_inverses(round_index, user_mask)
    t1 = time.perf_counter()
    messages, per_silo = {}, []
    for silo in run.silos:
        a = time.perf_counter()
        messages[silo.s] = silo.round_message(round_index, enc, clipped[silo.s],
                                              noise_vectors[silo.s])
        per_silo.append(time.perf_counter() - a)
    t2 = time.perf_counter()
    out = run.server.aggregate(round_index, messages, np.asarray(clipped).shape[-1])
    run.timings.setdefault("rounds", []).append(
        {"encrypt_inverses": t1 - t0, "silo": per_silo, "aggregation": time.perf_counter() - t2})
    return out


def plaintext_aggregate(histogram, clipped, noise_vectors, user_mask=None) -> np.ndarray:
    """The value Protocol 1 computes, in the clear (float64): ULDP-AVG-w's noisy silo sum."""
    hist = np.asarray(histogram, np.float64)
    totals = hist.sum(0)
    w = np.divide(hist, totals, out=np.zeros_like(hist), where=totals > 0)
    if user_mask is not None:
        w = w * np.asarray(user_mask, np.float64)[None]
    return np.einsum("su,sud->d", w, np.asarray(clipped, np.float64)) + np.asarray(
        noise_vectors, np.float64).sum(0)
