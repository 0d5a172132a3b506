"""Per-round cost model of LightDP-FL and its baselines (Hong et al. 2024, Sec. VI, Fig. 4;
the paper gives no time model, bandwidths or key sizes: the model here is ours).

Wall-clock time of one round, clients working in parallel::

    t_round = t_train + t_privacy_client + bits_up / BW_up + bits_down / BW_down + t_server
              (+ HE's extra round: aggregate ciphertext down, partial decryptions, shares up)

* ``lightdp``: N d Gaussian draws per client (N - 1 pairwise vectors + 1 individual), one
  upload of 32 d bits, no client-to-client traffic; the server adds what arrives.
* ``ldp`` / ``smpc_dp`` accuracy baselines: d draws (SMPC's masking cost is modelled by
  ``secagg`` below).
* ``he_dp`` (Truex et al., threshold Paillier): d encryptions per client, 4096-bit ciphertexts
  (2048-bit modulus, no packing), ``(N - S) d`` homomorphic additions at the server, one extra
  round for threshold partial decryption (``d`` partial decryptions per client).
* ``secagg`` / ``swiftagg``: the paper's reading: need every client's P2S link and all its
  N - 1 P2P links in each round; with independent link failures ``p`` a client is usable
  w.p. ``(1 - p)^N`` and the round fails when fewer than ``N - S_bar`` clients are usable
  (:func:`p2p_round_success`). SecAgg as published (Bonawitz et al. 2017) has no direct
  client-to-client links and recovers from dropouts by Shamir secret sharing
  (:func:`secagg_recovery_round_success`); :func:`secagg_success_rate` gives either.

Per-operation times are *measured*: Gaussian generation with jaxfl's own pairwise-noise code
(:func:`measure_noise_rate`) and Paillier operations with ``phe`` (:func:`measure_paillier`),
extrapolated linearly to ``d`` coordinates. Bandwidths are configuration (documented in
``docs/reproduction/lightdp.md``). :func:`he_aggregate` runs a real (small-scale) HE + DP
aggregation with ``phe`` to validate the pipeline being costed.

Fig. 4 of the paper, on plain numbers (the reproduction driver ``experiments/reproduce/
lightdp.py`` only passes its config's values): :func:`measure_costs` gathers the measured inputs
(a run's elapsed times, :func:`measure_noise_rate`, :func:`measure_paillier`,
:func:`secagg_rates`); :func:`fig4_round_times` and :func:`fig4_cost_rows` turn them into round
times (the measured model and ResNet-18 extrapolated; :func:`fig4_table`: in the page's units);
:func:`fig4_time_ratio` is HE+DP's time to 90% of LightDP-FL's final accuracy over
LightDP-FL's; :func:`fig4_measure` does a run's export (costs and priced curves) in one call.
The paper's two Fig. 4 claims are decided here: :func:`secagg_claim` (SecAgg at N = 50) and
:func:`fig4_he_claim` (HE+DP's 10x, reported only: a cost model).

Example Usage:
  >>> costs = {"dim": 1000, "t_train_client": 0.5, "t_gauss": 1e-8,
  ...          "paillier": {"encrypt": 1e-2, "add": 1e-5, "decrypt": 1e-2}}
  >>> t = fig4_round_times(costs, num_clients=50)
  >>> round(t["lightdp"]["total"], 6), round(t["he_dp"]["server"], 4)  # 47 uploads added
  (0.50114, 0.47)
"""

# pylint: disable=invalid-name
from __future__ import annotations

import dataclasses
import fractions
import math
import time

import numpy as np

from jaxfl import validate

SCHEMES = ("lightdp", "ldp", "smpc_dp", "he_dp")
BANDWIDTH = 100e6  # bit/s per client, each way: the model's default bandwidth


@dataclasses.dataclass(frozen=True, kw_only=True)
class CostParams:
    """Inputs of the time model (seconds, bits, bits per second)."""

    dim: int  # d, number of model parameters
    num_clients: int  # N
    t_train: float  # local training time of one client for one round (measured)
    t_gauss: float  # seconds per Gaussian draw incl. accumulation (measured)
    t_encrypt: float = 0.0  # Paillier encryption per coordinate (measured)
    t_he_add: float = 0.0  # ciphertext multiplication (homomorphic add) per coordinate
    t_decrypt: float = 0.0  # (partial) decryption per coordinate
    float_bits: int = 32
    ciphertext_bits: int = 4096
    bandwidth_up: float = BANDWIDTH  # bit/s per client
    bandwidth_down: float = BANDWIDTH  # bit/s per client

    def __post_init__(self):
        validate.positive_int("dim", self.dim)
        validate.positive_int("num_clients", self.num_clients, minimum=2)
        for name in ("t_train", "t_gauss", "t_encrypt", "t_he_add", "t_decrypt"):
            validate.non_negative(name, getattr(self, name), validate.JaxflValueError)
        validate.positive("bandwidth_up", self.bandwidth_up, validate.JaxflValueError)
        validate.positive("bandwidth_down", self.bandwidth_down, validate.JaxflValueError)


def round_cost(scheme: str, p: CostParams, *, num_uploads: int | None = None) -> dict:
    """Time components (seconds) of one round of ``scheme``; ``total`` is their sum."""
    validate.one_of("scheme", scheme, SCHEMES)
    N, d = p.num_clients, p.dim
    k = N if num_uploads is None else int(num_uploads)
    plain = p.float_bits * d
    out = {"train": p.t_train, "download": plain / p.bandwidth_down}
    if scheme == "lightdp":
        out.update(privacy=N * d * p.t_gauss, upload=plain / p.bandwidth_up)
    elif scheme in ("ldp", "smpc_dp"):
        out.update(privacy=d * p.t_gauss, upload=plain / p.bandwidth_up)
    else:
        cipher = p.ciphertext_bits * d
        out.update(privacy=d * (p.t_gauss + p.t_encrypt), upload=cipher / p.bandwidth_up,
                   server=k * d * p.t_he_add,
                   extra_round=(cipher / p.bandwidth_down + d * p.t_decrypt
                                + cipher / p.bandwidth_up))
    out["total"] = float(sum(out.values()))
    return out


def bits_per_round(scheme: str, p: CostParams) -> dict:
    """Client upload / download volume per round (bits)."""
    validate.one_of("scheme", scheme, SCHEMES)
    plain = p.float_bits * p.dim
    if scheme == "he_dp":
        cipher = p.ciphertext_bits * p.dim
        return {"up": 2 * cipher, "down": cipher + plain}
    return {"up": plain, "down": plain}


# ------------------------------------------------------------------ link-failure model


def client_usable_prob(num_clients: int, failure_prob: float) -> float:
    """P(a client's P2S link and its N - 1 P2P links all work) = (1 - p)^N."""
    N = validate.positive_int("num_clients", num_clients, minimum=2)
    p = validate.probability("failure_prob", failure_prob, allow_zero=True)
    return (1.0 - p) ** N


def p2p_round_success(rng: np.random.Generator, *, num_clients: int, failure_prob: float,
                      max_stragglers: int, rounds: int) -> np.ndarray:
    """Monte Carlo: does SecAgg / SwiftAgg+ recover the aggregate in each of ``rounds`` rounds?

    Every unordered P2P link and every P2S link fails independently with ``failure_prob``; a
    client is usable iff its P2S link and all its P2P links work; the round succeeds iff at
    least ``N - S_bar`` clients are usable. Returns ``bool[rounds]``.
    """
    N = validate.positive_int("num_clients", num_clients, minimum=2)
    p = validate.probability("failure_prob", failure_prob, allow_zero=True)
    R = validate.positive_int("rounds", rounds)
    S_bar = validate.positive_int("max_stragglers", max_stragglers, minimum=0)
    up = np.triu(rng.random((R, N, N)) >= p, 1)
    links = up | np.swapaxes(up, 1, 2) | np.eye(N, dtype=bool)[None]
    p2s = rng.random((R, N)) >= p
    usable = links.all(axis=2) & p2s
    return usable.sum(axis=1) >= N - S_bar


# Bonawitz et al. (CCS 2017) secret-share each client's mask seeds with threshold t; t > 2N/3
# is their setting against an active server, so the model takes the same fraction.
SECAGG_THRESHOLD_FRACTION = fractions.Fraction(2, 3)  # as the page writes it: 2/3
SECAGG_THRESHOLD = float(SECAGG_THRESHOLD_FRACTION)


def secagg_recovery_round_success(rng: np.random.Generator, *, num_clients: int,
                                  failure_prob: float, rounds: int,
                                  threshold: float = SECAGG_THRESHOLD) -> np.ndarray:
    """Monte Carlo of SecAgg with its dropout recovery: does each of ``rounds`` rounds recover
    the sum of the surviving clients' inputs?

    Clients talk only to the server (it relays the key agreement and the encrypted Shamir
    shares), so a client drops out of a round iff its P2S link fails (independently, w.p.
    ``failure_prob``); the server unmasks the survivors' sum, reconstructing the dropped
    clients' pairwise masks from the survivors' shares, iff at least ``ceil(threshold N)``
    clients survive. One link draw per client and round (a failure between the protocol's
    message rounds counts as a dropout too, which only lowers the surviving count it uses).
    Returns ``bool[rounds]``.
    """
    N = validate.positive_int("num_clients", num_clients, minimum=2)
    p = validate.probability("failure_prob", failure_prob, allow_zero=True)
    R = validate.positive_int("rounds", rounds)
    t = validate.probability("threshold", threshold)
    survivors = (rng.random((R, N)) >= p).sum(axis=1)
    return survivors >= math.ceil(t * N)


def secagg_success_rate(num_clients: int, failure_prob: float, *, rounds: int, seed: int,
                        max_stragglers: int = 0,
                        recovery_threshold: float | None = None) -> float:
    """Fraction of ``rounds`` simulated rounds that recover the aggregate (``numpy`` generator
    seeded with ``seed``): :func:`secagg_recovery_round_success` with ``recovery_threshold``,
    else the paper's every-link reading :func:`p2p_round_success`."""
    rng = np.random.default_rng(seed)
    if recovery_threshold is None:
        ok = p2p_round_success(rng, num_clients=num_clients, failure_prob=failure_prob,
                               max_stragglers=max_stragglers, rounds=rounds)
    else:
        ok = secagg_recovery_round_success(rng, num_clients=num_clients,
                                           failure_prob=failure_prob, rounds=rounds,
                                           threshold=recovery_threshold)
    return float(ok.mean())


# --------------------------------------------------------------------------- measurement


def measure_paillier(*, key_bits: int = 2048, ops: int = 4, seed: int = 0) -> dict:
    """Seconds per Paillier encryption / ciphertext addition / decryption (``phe``)."""
    from phe import paillier

    key_bits = validate.positive_int("key_bits", key_bits, minimum=128)
    ops = validate.positive_int("ops", ops)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    pk, sk = paillier.generate_paillier_keypair(n_length=key_bits)
    keygen = time.perf_counter() - t0
    vals = rng.integers(0, 2**31, size=ops).tolist()
    t0 = time.perf_counter()
    cs = [pk.encrypt(v) for v in vals]
    t_enc = (time.perf_counter() - t0) / ops
    t0 = time.perf_counter()
    acc = cs[0]
    for c in cs[1:] * 8:
        acc = acc + c
    t_add = (time.perf_counter() - t0) / max(1, 8 * (ops - 1))
    t0 = time.perf_counter()
    for c in cs:
        sk.decrypt(c)
    t_dec = (time.perf_counter() - t0) / ops
    return {"key_bits": key_bits, "keygen": keygen, "encrypt": t_enc, "add": t_add,
            "decrypt": t_dec}


def measure_noise_rate(*, num_clients: int = 16, dim: int = 20_000, repeats: int = 2) -> float:
    """Seconds per pairwise Gaussian draw of jaxfl's LightDP-FL code (jit, warm)."""
    import jax

    from jaxfl.algorithms import lightdp

    N = validate.positive_int("num_clients", num_clients, minimum=2)
    key = jax.random.key(0)
    f = jax.jit(lambda t: lightdp.pair_masks(key, t, num_clients=N, dim=dim, sigma_k=1.0))
    jax.block_until_ready(f(0))
    t0 = time.perf_counter()
    for r in range(repeats):
        jax.block_until_ready(f(r + 1))
    per_round = (time.perf_counter() - t0) / repeats
    return per_round / (N * (N - 1) / 2 * dim)


def he_aggregate(values, *, key_bits: int = 512, fraction_bits: int = 16):
    """Real HE aggregation with ``phe``: encrypt fixed-point rows, add, decrypt the sum.

    Args:
      values: ``[K, d]`` float updates (already noised), small d.
      key_bits: Paillier modulus size (small keys for tests only).
      fraction_bits: fixed-point fraction bits of the encoding.

    Returns:
      ``(sum [d], seconds)``; the sum equals the fixed-point sum of the rows exactly.
    """
    from phe import paillier

    x = np.asarray(values, dtype=np.float64)
    validate.shape("values", x, (None, None))
    scale = 2**fraction_bits
    ints = np.round(x * scale).astype(np.int64)
    t0 = time.perf_counter()
    pk, sk = paillier.generate_paillier_keypair(n_length=key_bits)
    enc = [[pk.encrypt(int(v)) for v in row] for row in ints]  # each client encrypts its row
    total = enc[0]
    for row in enc[1:]:
        total = [a + b for a, b in zip(total, row, strict=True)]
    dec = np.array([sk.decrypt(c) for c in total], dtype=np.float64) / scale
    return dec, time.perf_counter() - t0


def time_to_accuracy(round_times, accuracies, target: float) -> float:
    """Cumulative time until accuracy first reaches ``target`` (inf if never)."""
    t = np.cumsum(np.asarray(round_times, dtype=np.float64))
    acc = np.asarray(accuracies, dtype=np.float64)
    hit = np.flatnonzero(acc >= target)
    return float(t[hit[0]]) if hit.size else math.inf


# --------------------------------------------------------------- the paper's Fig. 4 setting

FIG4_SCHEMES = ("lightdp", "he_dp", "ldp")  # the schemes whose round Fig. 4 times
FIG4_FAILURE_PROB = 0.05  # Fig. 4's link-failure probability p
# Uploads the HE server adds per round: N - 3 (about N p = 2.5 of the paper's N = 50 clients
# straggle at p = 0.05, rounded up).
FIG4_STRAGGLERS = 3
RESNET18_DIM = 11_173_962  # parameters of the paper's ResNet-18 (GroupNorm) on CIFAR-10
RESNET18_T_TRAIN = 60.0  # s of local training per client per round assumed for ResNet-18


def fig4_round_times(costs: dict, *, num_clients: int, dim: int | None = None,
                     t_train: float | None = None, num_uploads: int | None = None,
                     schemes=FIG4_SCHEMES) -> dict:
    """:func:`round_cost` of each of ``schemes`` with the measured per-op times ``costs`` (the
    dict of :func:`measure_costs`: ``t_gauss``, ``paillier`` ``encrypt`` / ``add`` /
    ``decrypt``; ``dim`` and ``t_train`` default to its ``dim`` and ``t_train_client``);
    ``num_uploads`` defaults to ``num_clients -`` :data:`FIG4_STRAGGLERS`. Returns
    ``scheme -> {component: seconds, ..., "total": seconds}``."""
    pai = costs["paillier"]
    p = CostParams(dim=costs["dim"] if dim is None else dim, num_clients=num_clients,
                   t_train=costs["t_train_client"] if t_train is None else t_train,
                   t_gauss=costs["t_gauss"], t_encrypt=pai["encrypt"], t_he_add=pai["add"],
                   t_decrypt=pai["decrypt"])
    k = num_clients - FIG4_STRAGGLERS if num_uploads is None else num_uploads
    return {s: round_cost(s, p, num_uploads=k) for s in schemes}


def fig4_cost_rows(costs: dict, *, num_clients: int, schemes=("lightdp", "he_dp")) -> list[dict]:
    """The round-time table of Fig. 4: for the measured model (``model: "measured"``, its
    ``dim`` and ``t_train_client`` from ``costs``) and for ResNet-18 extrapolated
    (``"resnet18"``: :data:`RESNET18_DIM`, :data:`RESNET18_T_TRAIN`), one row per scheme with
    every time component of :func:`fig4_round_times` (``server`` and ``extra_round`` 0 where
    the scheme has none), ``model``, ``dim`` and ``scheme``."""
    out = []
    for model, dim, t_train in (("measured", costs["dim"], costs["t_train_client"]),
                                ("resnet18", RESNET18_DIM, RESNET18_T_TRAIN)):
        times = fig4_round_times(costs, num_clients=num_clients, dim=dim, t_train=t_train)
        out += [{"server": 0, "extra_round": 0, **times[s], "model": model, "dim": dim,
                 "scheme": s} for s in schemes]
    return out


def fig4_table(costs: dict, *, num_clients: int) -> dict:
    """Fig. 4's cost table as the page prints it: ``rows`` (:func:`fig4_cost_rows`, each with
    ``measured``: the row of the measured model, not ResNet-18's) and the measured per-op times
    in the page's units: ``gauss_ns`` (one Gaussian draw), Paillier's ``encrypt_ms``,
    ``add_us`` and ``decrypt_ms``."""
    pai = costs["paillier"]
    return dict(rows=[dict(r, measured=r["model"] == "measured")
                      for r in fig4_cost_rows(costs, num_clients=num_clients)],
                gauss_ns=costs["t_gauss"] * 1e9, encrypt_ms=pai["encrypt"] * 1e3,
                add_us=pai["add"] * 1e6, decrypt_ms=pai["decrypt"] * 1e3)


def fig4_time_ratio(lightdp: dict, he_dp: dict, *, fraction: float = 0.9) -> tuple[float, float]:
    """``(target, ratio)``: the target accuracy (``fraction`` of LightDP-FL's final accuracy)
    and HE+DP's modelled time to reach it over LightDP-FL's (:func:`time_to_accuracy`; nan when
    LightDP-FL's is 0). Each curve is ``{"rounds", "accuracy", "round_seconds"}``, one accuracy
    per recorded round, each costing ``round_seconds``."""
    validate.probability("fraction", fraction)
    for name, c in (("lightdp", lightdp), ("he_dp", he_dp)):
        if not len(c["accuracy"]) or len(c["accuracy"]) != len(c["rounds"]):
            raise validate.JaxflValueError(
                f"Expected {name}'s curve to have one accuracy per round (at least one), got "
                f"{len(c['accuracy'])} accuracies for {len(c['rounds'])} rounds.")
    target = fraction * lightdp["accuracy"][-1]
    tl, th = (time_to_accuracy([c["round_seconds"]] * len(c["rounds"]), c["accuracy"], target)
              for c in (lightdp, he_dp))
    return target, th / tl if tl > 0 else math.nan


def fig4_curves(curves: dict, round_times: dict) -> dict:
    """Fig. 4's curves: ``scheme -> {"rounds", "accuracy", "round_seconds"}`` for LightDP-FL
    and HE+DP where ``curves`` has them (``scheme -> (rounds, accuracy)``; None: not run), each
    round costing the scheme's modelled ``round_times[scheme]["total"]``
    (:func:`fig4_round_times`); with both, ``target_accuracy`` and
    ``time_ratio_he_over_lightdp`` (:func:`fig4_time_ratio`)."""
    out = {s: {"rounds": np.asarray(c[0]).tolist(), "accuracy": np.asarray(c[1]).tolist(),
               "round_seconds": round_times[s]["total"]}
           for s in ("lightdp", "he_dp") if (c := curves.get(s)) is not None}
    if len(out) == 2:
        out["target_accuracy"], out["time_ratio_he_over_lightdp"] = fig4_time_ratio(
            out["lightdp"], out["he_dp"])
    return out


def round_seconds(elapsed) -> float:
    """One simulated round's seconds from a run's cumulative ``elapsed_s`` per record: the
    median of the differences (warm rounds, the first round's compilation left out) with more
    than two records, else the last value (nan with none)."""
    e = np.asarray(elapsed, dtype=np.float64)
    validate.shape("elapsed", e, (None,))
    if e.size > 2:
        return float(np.median(np.diff(e)))
    return float(e[-1]) if e.size else math.nan


def secagg_rates(num_clients: int, failure_prob: float = FIG4_FAILURE_PROB, *,
                 max_stragglers: int, rounds: int = 200, seed: int = 0) -> dict:
    """Fig. 4's SecAgg numbers at ``num_clients``: the fraction of ``rounds`` rounds that
    recover the aggregate under the paper's every-link reading (``every_link``,
    :func:`p2p_round_success` with ``max_stragglers``) and with Shamir dropout recovery at
    :data:`SECAGG_THRESHOLD` (``recovered``), each from the generator seeded with ``seed``."""
    return {"every_link": secagg_success_rate(num_clients, failure_prob, rounds=rounds,
                                              seed=seed, max_stragglers=max_stragglers),
            "recovered": secagg_success_rate(num_clients, failure_prob, rounds=rounds, seed=seed,
                                             recovery_threshold=SECAGG_THRESHOLD)}


def secagg_claim(num_clients: int = 50, *, max_stragglers: int = 10) -> dict:
    """The paper's claim "SecAgg cannot train with 5% link failures" at ``num_clients`` (default:
    the paper's N = 50, S_bar = 10): :func:`secagg_rates`, the recovery ``threshold`` and
    ``holds``: at most half of the rounds recover the aggregate even with Shamir dropout
    recovery."""
    rates = secagg_rates(num_clients, max_stragglers=max_stragglers)
    return dict(rates, threshold=SECAGG_THRESHOLD, holds=not rates["recovered"] > 0.5)


def fig4_he_claim(fig4: dict | None, *, times: float = 10.0) -> list[dict]:
    """The paper's claim "HE+DP needs >= ``times`` x LightDP-FL's wall-clock time" on
    :func:`fig4_curves`' output ``fig4`` (None: Fig. 4 not run): [] without HE+DP's time ratio,
    else one row, ``fig4`` with ``meets`` (its modelled ratio is at least ``times``; a cost
    model, so the claim is reported, not tested)."""
    if "time_ratio_he_over_lightdp" not in (fig4 or {}):
        return []
    return [dict(fig4, meets=fig4["time_ratio_he_over_lightdp"] >= times)]


def measure_costs(elapsed, *, num_clients: int, max_stragglers: int, dim: int,
                  key_bits: int = 2048, failure_prob: float = FIG4_FAILURE_PROB,
                  noise_clients: int = 16, noise_dim: int = 20_000,
                  paillier_ops: int = 3) -> dict:
    """The measured inputs of Fig. 4's cost model for a ``dim``-parameter model trained by
    ``num_clients`` clients, whose LightDP-FL run recorded the cumulative seconds ``elapsed``.

    One client's local training time is a warm simulated round (:func:`round_seconds`: all N
    clients sequential on this host, incl. evaluation and noise) over N, as clients train in
    parallel; the Gaussian draw time is :func:`measure_noise_rate` (``noise_clients`` clients,
    ``min(dim, noise_dim)`` coordinates); Paillier's times are :func:`measure_paillier` at
    ``key_bits``; the SecAgg rates are :func:`secagg_rates` at ``failure_prob``.

    Returns:
      ``{"dim", "t_round_measured", "t_train_client", "t_gauss", "paillier",
      "secagg_round_success_rate", "secagg_recovery_success_rate", "client_usable_prob"}``
      (seconds; the rates in [0, 1]), the ``costs`` of :func:`fig4_round_times`.
    """
    N = validate.positive_int("num_clients", num_clients, minimum=2)
    validate.positive_int("max_stragglers", max_stragglers, minimum=0)
    d = validate.positive_int("dim", dim)
    validate.probability("failure_prob", failure_prob, allow_zero=True)
    validate.positive_int("key_bits", key_bits, minimum=128)
    validate.positive_int("noise_clients", noise_clients, minimum=2)
    validate.positive_int("noise_dim", noise_dim)
    validate.positive_int("paillier_ops", paillier_ops)
    per_round = round_seconds(elapsed)
    secagg = secagg_rates(N, failure_prob, max_stragglers=max_stragglers)
    return {"dim": d, "t_round_measured": per_round, "t_train_client": per_round / N,
            "t_gauss": measure_noise_rate(num_clients=noise_clients, dim=min(d, noise_dim)),
            "paillier": measure_paillier(key_bits=key_bits, ops=paillier_ops),
            "secagg_round_success_rate": secagg["every_link"],
            "secagg_recovery_success_rate": secagg["recovered"],
            "client_usable_prob": client_usable_prob(N, failure_prob)}


def fig4_measure(histories: dict, curves: dict, *, num_clients: int, max_stragglers: int,
                 dim: int, key_bits: int = 2048) -> tuple[dict, dict]:
    """``(costs, curves)`` of Fig. 4: :func:`measure_costs` from the cumulative ``elapsed_s``
    of the first seed of ``histories["fig4_lightdp"]`` (run name -> one metrics record list
    per seed) and :func:`fig4_curves` of ``curves`` (``scheme -> (rounds, accuracy)``), each
    round costing its scheme's modelled time (:func:`fig4_round_times`)."""
    first = (histories.get("fig4_lightdp") or [[]])[0]
    costs = measure_costs([h["elapsed_s"] for h in first], num_clients=num_clients,
                          max_stragglers=max_stragglers, dim=dim, key_bits=key_bits)
    return costs, fig4_curves(curves, fig4_round_times(costs, num_clients=num_clients))


__all__ = ["SCHEMES", "BANDWIDTH", "CostParams", "round_cost", "bits_per_round",
           "client_usable_prob", "p2p_round_success", "secagg_recovery_round_success",
           "secagg_success_rate", "measure_paillier", "measure_noise_rate", "he_aggregate",
           "time_to_accuracy", "FIG4_SCHEMES", "FIG4_FAILURE_PROB", "FIG4_STRAGGLERS",
           "RESNET18_DIM", "RESNET18_T_TRAIN", "fig4_round_times", "fig4_cost_rows",
           "fig4_time_ratio", "fig4_curves", "round_seconds", "secagg_rates", "measure_costs",
           "fig4_table", "fig4_measure", "SECAGG_THRESHOLD_FRACTION", "secagg_claim",
           "fig4_he_claim"]
