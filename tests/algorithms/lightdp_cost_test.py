"""Cost model of Fig. 4: link-failure model, time components, real phe aggregation."""

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.algorithms import lightdp_cost as C


def test_link_failure_probabilities():
    assert C.client_usable_prob(50, 0.05) == pytest.approx(0.076945, abs=1e-6)
    assert 0.95**49 == pytest.approx(0.080995, abs=1e-6)
    rng = np.random.default_rng(0)
    ok = C.p2p_round_success(rng, num_clients=50, failure_prob=0.05, max_stragglers=10, rounds=40)
    assert not ok.any()  # SecAgg / SwiftAgg+ never recover the sum: "fail to train"
    assert C.p2p_round_success(rng, num_clients=50, failure_prob=0.0, max_stragglers=0,
                               rounds=5).all()


def test_p2p_success_matches_exact_small_case():
    """N = 3, S_bar = 0: success iff all 3 P2P and 3 P2S links work: (1 - p)^6."""
    p = 0.1
    ok = C.p2p_round_success(np.random.default_rng(1), num_clients=3, failure_prob=p,
                             max_stragglers=0, rounds=40_000)
    want = (1 - p) ** 6
    assert ok.mean() == pytest.approx(want, abs=4 * np.sqrt(want * (1 - want) / ok.size))


def test_round_cost_components_and_he_overhead():
    p = C.CostParams(dim=11_173_962, num_clients=50, t_train=30.0, t_gauss=2e-9,
                     t_encrypt=5e-3, t_he_add=5e-6, t_decrypt=2e-3)
    light = C.round_cost("lightdp", p)
    assert light["upload"] == pytest.approx(32 * p.dim / 100e6)
    assert light["privacy"] == pytest.approx(50 * p.dim * 2e-9)
    assert light["total"] == pytest.approx(sum(v for k, v in light.items() if k != "total"))
    he = C.round_cost("he_dp", p, num_uploads=48)
    assert he["upload"] == pytest.approx(128 * light["upload"])
    assert he["total"] > 10 * light["total"]
    assert C.bits_per_round("he_dp", p)["up"] == 2 * 4096 * p.dim
    assert C.round_cost("ldp", p)["privacy"] == pytest.approx(light["privacy"] / 50)


def test_time_to_accuracy():
    assert C.time_to_accuracy([1, 2, 3], [0.1, 0.5, 0.6], 0.5) == 3.0
    assert C.time_to_accuracy([1, 2, 3], [0.1, 0.5, 0.6], 0.9) == float("inf")


def _phe():
    """The ``crypto`` extra's Paillier library: these tests skip (with the reason) where it is
    not installed (the GPU check's machine); CI installs the extra, so there they run."""
    pytest.importorskip("phe", reason="phe (the crypto extra: pip install jaxfl[crypto]) is "
                        "not installed")


def test_real_he_aggregation_equals_fixed_point_sum():
    _phe()
    x = np.random.default_rng(2).normal(size=(3, 4))
    got, secs = C.he_aggregate(x, key_bits=256, fraction_bits=16)
    np.testing.assert_array_equal(got, np.round(x * 2**16).astype(np.int64).sum(0) / 2**16)
    assert secs > 0


def test_measure_paillier_small_key():
    _phe()
    m = C.measure_paillier(key_bits=256, ops=2)
    assert m["encrypt"] > 0 and m["decrypt"] > 0 and m["add"] > 0


def test_bad_input():
    with pytest.raises(validate.JaxflValueError):
        C.CostParams(dim=0, num_clients=5, t_train=1.0, t_gauss=1e-9)
    with pytest.raises(validate.JaxflValueError):
        C.round_cost("secagg", C.CostParams(dim=5, num_clients=5, t_train=1.0, t_gauss=1e-9))
    with pytest.raises(validate.PrivacyParameterError):
        C.client_usable_prob(5, 1.5)


def test_secagg_with_dropout_recovery_survives_five_percent_link_failure():
    """Fig. 4's "SecAgg fails at 5% link failure" is decided on SecAgg with its Shamir dropout
    recovery. Wrong implementation caught: the every-link reading (a client needs its P2S and
    all N - 1 P2P links, no recovery), under which every round fails by the model's own rule;
    with recovery (survivors >= 2N/3 of N = 50) every simulated round completes."""
    ok = C.secagg_success_rate(50, 0.05, rounds=200, seed=0,
                               recovery_threshold=C.SECAGG_THRESHOLD)
    assert ok == 1.0
    assert C.secagg_success_rate(50, 0.05, rounds=200, seed=0, max_stragglers=10) == 0.0
    # recovery is a threshold, not a free pass: with 60% of the links down no round completes
    assert C.secagg_success_rate(50, 0.6, rounds=200, seed=0,
                                 recovery_threshold=C.SECAGG_THRESHOLD) == 0.0
    rng = np.random.default_rng(3)
    got = C.secagg_recovery_round_success(rng, num_clients=3, failure_prob=0.4, rounds=4000,
                                          threshold=2 / 3)
    # 3 clients, threshold 2: P(at least 2 survive) = 0.6^3 + 3 * 0.6^2 * 0.4 = 0.648
    assert abs(got.mean() - 0.648) < 0.03


# ------------------------------------------------------------------ Fig. 4 (moved from the driver)

# Measured per-op times of the shape measure_costs returns (numbers chosen, not measured).
COSTS = {"dim": 3578, "t_train_client": 0.0173, "t_gauss": 5.45e-8,
         "paillier": {"encrypt": 0.245, "add": 4.5e-5, "decrypt": 0.068}}


def _by_hand(scheme, *, N, d, t_train, uploads):
    """The round time written out from the module docstring's formula (100 Mbit/s each way,
    32-bit floats, 4096-bit ciphertexts), independently of CostParams / round_cost."""
    pai, bw, plain, cipher = COSTS["paillier"], 100e6, 32 * d, 4096 * d
    if scheme == "lightdp":
        return t_train + N * d * COSTS["t_gauss"] + plain / bw + plain / bw
    if scheme == "ldp":
        return t_train + d * COSTS["t_gauss"] + plain / bw + plain / bw
    return (t_train + d * (COSTS["t_gauss"] + pai["encrypt"]) + cipher / bw + plain / bw
            + uploads * d * pai["add"] + cipher / bw + d * pai["decrypt"] + cipher / bw)


def test_fig4_round_times_match_the_formula():
    """Wrong implementation caught: the HE server adding all N uploads instead of N - 3
    (num_uploads left at round_cost's default), or the measured costs read into the wrong
    per-op time (e.g. ``add`` and ``decrypt`` swapped)."""
    got = C.fig4_round_times(COSTS, num_clients=50)
    assert set(got) == {"lightdp", "he_dp", "ldp"}
    for s in got:
        want = _by_hand(s, N=50, d=3578, t_train=0.0173, uploads=47)
        assert got[s]["total"] == pytest.approx(want, rel=1e-12), s
    assert got["he_dp"]["server"] == pytest.approx(47 * 3578 * 4.5e-5, rel=1e-12)
    other = C.fig4_round_times(COSTS, num_clients=10, dim=100, t_train=2.0, num_uploads=4,
                               schemes=("he_dp",))
    assert other["he_dp"]["total"] == pytest.approx(
        _by_hand("he_dp", N=10, d=100, t_train=2.0, uploads=4), rel=1e-12)


def test_fig4_cost_rows_cover_both_models():
    rows = C.fig4_cost_rows(COSTS, num_clients=50)
    assert [(r["model"], r["scheme"]) for r in rows] == [
        ("measured", "lightdp"), ("measured", "he_dp"), ("resnet18", "lightdp"),
        ("resnet18", "he_dp")]
    for r in rows:
        d, t = (3578, 0.0173) if r["model"] == "measured" else (11_173_962, 60.0)
        assert r["dim"] == d
        assert r["total"] == pytest.approx(
            _by_hand(r["scheme"], N=50, d=d, t_train=t, uploads=47), rel=1e-12)
        assert r["total"] == pytest.approx(sum(
            r[k] for k in ("train", "privacy", "upload", "download", "server", "extra_round")))
    assert rows[0]["server"] == 0 and rows[0]["extra_round"] == 0


def test_fig4_table_in_the_pages_units():
    """The cost rows of :func:`fig4_cost_rows` flagged ``measured`` (the ResNet-18 rows not)
    and the per-op times in ns / ms / µs. Wrong implementation caught: a unit factor off (ms
    written as µs) or the ResNet-18 rows flagged as measured."""
    t = C.fig4_table(COSTS, num_clients=50)
    assert [r["measured"] for r in t["rows"]] == [True, True, False, False]
    assert [{k: v for k, v in r.items() if k != "measured"} for r in t["rows"]] == \
        C.fig4_cost_rows(COSTS, num_clients=50)
    assert (t["gauss_ns"], t["encrypt_ms"], t["add_us"], t["decrypt_ms"]) == pytest.approx(
        (54.5, 245.0, 45.0, 68.0), rel=1e-12)


def test_fig4_measure(monkeypatch):
    """The costs from the first LightDP-FL seed's elapsed times, the curves priced by the
    modelled round times. Wrong implementation caught: the elapsed times of another seed or
    of HE+DP, or a scheme's rounds priced at the other's time."""
    monkeypatch.setattr(C, "measure_noise_rate", lambda **kw: 5.45e-8)
    monkeypatch.setattr(C, "measure_paillier", lambda **kw: dict(COSTS["paillier"], key_bits=512))
    hist = {"fig4_lightdp": [[{"elapsed_s": t} for t in (4.0, 6.0, 8.0)],
                             [{"elapsed_s": t} for t in (1.0, 9.0, 30.0)]],
            "fig4_he_dp": [[{"elapsed_s": t} for t in (1.0, 50.0, 99.0)]]}
    curves = {"lightdp": ([1, 2, 3], [10.0, 50.0, 90.0]), "he_dp": ([1, 2, 3], [5.0, 20.0, 85.0])}
    costs, fig4 = C.fig4_measure(hist, curves, num_clients=20, max_stragglers=4, dim=3578,
                                 key_bits=512)
    assert costs["t_round_measured"] == 2.0 and costs["dim"] == 3578
    times = C.fig4_round_times(costs, num_clients=20)
    assert fig4 == C.fig4_curves(curves, times)
    assert fig4["lightdp"]["round_seconds"] == times["lightdp"]["total"]
    assert fig4["he_dp"]["round_seconds"] == times["he_dp"]["total"]


def test_secagg_and_he_claims(monkeypatch):
    """SecAgg's claim at the paper's N = 50, S̄ = 10 holds while at most half the rounds recover
    the aggregate; HE+DP's 10x claim is met at a modelled ratio of 10 or more and has no row
    without a ratio. Wrong implementation caught: the every-link rate decided instead of the
    recovered one, another setting than the paper's, or a strict 10x comparison."""
    calls = []

    def rates(n, **kw):
        calls.append((n, kw))
        return {"every_link": 0.0, "recovered": recovered}

    monkeypatch.setattr(C, "secagg_rates", rates)
    recovered = 0.5
    assert C.secagg_claim() == dict(every_link=0.0, recovered=0.5, threshold=2 / 3, holds=True)
    recovered = 0.51
    assert C.secagg_claim()["holds"] is False and calls[0] == (50, {"max_stragglers": 10})
    assert str(C.SECAGG_THRESHOLD_FRACTION) == "2/3" and C.SECAGG_THRESHOLD == 2 / 3
    assert C.fig4_he_claim(None) == [] == C.fig4_he_claim({"lightdp": {}})
    fig4 = {"target_accuracy": 70.0, "time_ratio_he_over_lightdp": 10.0}
    assert C.fig4_he_claim(fig4) == [dict(fig4, meets=True)]
    assert C.fig4_he_claim(dict(fig4, time_ratio_he_over_lightdp=9.99))[0]["meets"] is False


def test_fig4_time_ratio():
    """Target 0.9 x 90 = 81: LightDP-FL reaches it at its 4th round (4 x 2 s), HE+DP at its
    3rd (3 x 100 s). Wrong implementation caught: the target taken from HE+DP's curve or from
    the best instead of the final accuracy, or the ratio inverted."""
    light = {"rounds": [1, 2, 3, 4], "accuracy": [10.0, 50.0, 80.0, 90.0], "round_seconds": 2.0}
    he = {"rounds": [1, 2, 3, 4], "accuracy": [10.0, 20.0, 85.0, 95.0], "round_seconds": 100.0}
    target, ratio = C.fig4_time_ratio(light, he)
    assert target == pytest.approx(81.0) and ratio == pytest.approx(300.0 / 8.0)
    assert C.fig4_time_ratio(light, {**he, "accuracy": [1.0] * 4})[1] == float("inf")
    peak = {**light, "accuracy": [10.0, 95.0, 50.0, 40.0]}  # final 40: target 36, round 2
    assert C.fig4_time_ratio(peak, he) == pytest.approx((36.0, 300.0 / 4.0))
    with pytest.raises(validate.JaxflValueError, match="he_dp's curve"):
        C.fig4_time_ratio(light, {**he, "accuracy": [1.0]})
    with pytest.raises(validate.JaxflValueError):
        C.fig4_time_ratio(light, he, fraction=1.5)


def test_fig4_curves():
    """Each scheme's curve costs its own modelled round (``total``), kept as JSON types; the
    ratio only with both schemes. Wrong implementation caught: another scheme's round time,
    the ratio without HE+DP, or numpy values in the exported JSON."""
    times = {"lightdp": {"total": 2.0}, "he_dp": {"total": 100.0}, "ldp": {"total": 1.0}}
    light = (np.arange(1, 5), np.array([10.0, 50.0, 80.0, 90.0]))
    only = C.fig4_curves({"lightdp": light, "he_dp": None}, times)
    assert only == {"lightdp": {"rounds": [1, 2, 3, 4], "accuracy": [10.0, 50.0, 80.0, 90.0],
                                "round_seconds": 2.0}}
    assert type(only["lightdp"]["rounds"][0]) is int
    both = C.fig4_curves({"lightdp": light, "he_dp": (np.arange(1, 5), [10.0, 20, 85, 95])},
                         times)
    assert both["he_dp"]["round_seconds"] == 100.0 and both["he_dp"]["accuracy"][2] == 85.0
    assert both["target_accuracy"] == pytest.approx(81.0)
    assert both["time_ratio_he_over_lightdp"] == pytest.approx(300.0 / 8.0)


def test_round_seconds():
    """The median of the per-record differences (one slow compiling round left out). Wrong
    implementation caught: the mean (2.75 here), or the last cumulative value."""
    assert C.round_seconds([5.0, 6.0, 7.0, 12.0]) == 1.0  # differences 1, 1, 5
    assert C.round_seconds([5.0, 6.0, 7.5, 12.0, 13.0]) == pytest.approx(1.25)
    assert C.round_seconds([3.0]) == 3.0 and np.isnan(C.round_seconds([]))
    with pytest.raises(validate.ShapeError):
        C.round_seconds(np.ones((2, 2)))


def test_secagg_rates_at_the_papers_setting():
    """N = 50, S̄ = 10, p = 0.05: every round fails under the every-link reading (a client is
    usable w.p. 0.95^50 = 0.077, so fewer than 40 of 50 ever are) and every round recovers with
    Shamir dropout recovery (>= 34 survivors: P(fewer) < 1e-9 per round)."""
    from scipy import stats as sps

    r = C.secagg_rates(50, max_stragglers=10)
    assert r == {"every_link": 0.0, "recovered": 1.0}
    assert sps.binom.sf(39, 50, 0.95**50) < 1e-30 and sps.binom.cdf(33, 50, 0.95) < 1e-9


def test_measure_costs(monkeypatch):
    """The deterministic fields against their definitions; the measured ones are the module's
    measurement functions at the requested sizes. Wrong implementation caught: the client's
    training time not divided by N, the draw rate measured at the full model size, or the
    SecAgg rate of the recovery model reported as the every-link one."""
    calls = {}
    monkeypatch.setattr(C, "measure_noise_rate",
                        lambda **kw: calls.setdefault("noise", kw) and 1e-9)
    monkeypatch.setattr(C, "measure_paillier", lambda **kw: calls.setdefault("pai", kw) and {
        "key_bits": kw["key_bits"], "encrypt": 1e-3, "add": 1e-6, "decrypt": 1e-3})
    got = C.measure_costs([4.0, 6.0, 8.0, 11.0], num_clients=20, max_stragglers=4, dim=50_000,
                          key_bits=512)
    assert calls == {"noise": {"num_clients": 16, "dim": 20_000},
                     "pai": {"key_bits": 512, "ops": 3}}
    assert got["dim"] == 50_000 and got["t_round_measured"] == 2.0
    assert got["t_train_client"] == 2.0 / 20 and got["t_gauss"] == 1e-9
    assert got["client_usable_prob"] == pytest.approx(0.95**20, rel=1e-12)
    ok = C.p2p_round_success(np.random.default_rng(0), num_clients=20, failure_prob=0.05,
                             max_stragglers=4, rounds=200)
    assert got["secagg_round_success_rate"] == ok.mean()
    survivors = (np.random.default_rng(0).random((200, 20)) >= 0.05).sum(axis=1)
    assert got["secagg_recovery_success_rate"] == np.mean(survivors >= 14)  # ceil(2/3 x 20)
    # the costs feed the time model directly
    assert C.fig4_round_times(got, num_clients=20)["lightdp"]["train"] == 0.1
    calls.clear()
    for bad in (dict(num_clients=1), dict(dim=0), dict(max_stragglers=-1), dict(key_bits=64),
                dict(failure_prob=1.5), dict(noise_clients=1)):
        with pytest.raises(validate.JaxflValueError):
            C.measure_costs([1.0], **{"num_clients": 4, "max_stragglers": 0, "dim": 10, **bad})
    assert calls == {}  # refused before measuring anything


def test_measure_costs_runs_the_real_measurements():
    _phe()
    got = C.measure_costs([1.0, 2.0, 3.0], num_clients=4, max_stragglers=1, dim=64, key_bits=256,
                          noise_clients=3)
    assert got["t_gauss"] > 0 and got["paillier"]["key_bits"] == 256
    assert got["paillier"]["encrypt"] > 0
