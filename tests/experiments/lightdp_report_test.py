"""LightDP report: the per-seed CSV round trip, the verdict rules and the setting check (no
training)."""

import json
import shutil

import numpy as np
import pytest

from experiments.reproduce import lightdp as lr
from jaxfl.repro import declare, stats


def _rows(acc_of, seeds):
    """CSV rows (``lr.FIELDS``) for every Table II/III and Fig. 3 run; ``acc_of(name, seed)``."""
    names = lr.table_names("table2") + lr.table_names("table3") + [
        f"fig3_eps{e}_{s}" for e in lr.EPS for s in ("ldp", "smpc_dp")]
    return [{"name": n, "scheme": "ldp" if n.endswith("ldp") else "lightdp", "epsilon": 3.0,
             "max_colluders": 10, "max_stragglers": 10, "stragglers": "uniform", "seed": s,
             "final_test_accuracy": acc_of(n, s), "reported_epsilon": 2.5,
             "privacy_mode": "strict", "train_seconds": 1.0}
            for n in names for s in range(seeds)]


def _claims(acc_of, seeds):
    """``claim -> claim dict`` of :func:`lr.claims` on :func:`_rows`."""
    acc = lr.accuracies(_rows(acc_of, seeds))
    return {c["claim"]: c for c in lr.claims(acc, acc)}


def _eps(name):
    return int(name.split("_eps")[1].split("_")[0])


def test_table_layout_and_claim_pairs():
    """The seeded tables' and Fig. 3's cells as printed (rows by ε, the paper's value beside
    each run) and their claims' pairs of runs. Wrong implementation caught: a paper value under
    another column, a trend pair reversed (the lower ε claimed higher), pairs that are not
    adjacent, or a Fig. 3 comparison at an ε whose baseline did not run."""
    from experiments.configs.lightdp import _common

    t = _common.table_layout("table3", str.upper)
    assert t["cols"] == [0, 10, 20, 30] and [r["e"] for r in t["rows"]] == [3, 6, 9]
    assert t["rows"][1]["cells"][2] == {"ci": "TABLE3_EPS6_S20", "paper": 50.4}
    assert lr.table_names("table2")[:5] == ["table2_eps3_C10", "table2_eps3_C20",
                                            "table2_eps3_C30", "table2_eps3_C40", "table2_eps6_C10"]
    (up_claim, up, _), (down_claim, down, _) = _common.trend_pairs("table2")
    assert up_claim == "Table II: accuracy increases with ε" and len(up) == 8
    assert up[:2] == [("table2_eps6_C10", "table2_eps3_C10", "ε=6 > ε=3 at C̄=10"),
                      ("table2_eps9_C10", "table2_eps6_C10", "ε=9 > ε=6 at C̄=10")]
    assert down_claim == "Table II: accuracy decreases with C̄" and len(down) == 9
    assert down[0] == ("table2_eps3_C10", "table2_eps3_C20", "C̄=10 > C̄=20 at ε=3")
    assert _common.fig3_layout(str.upper)[2] == {
        "e": 9, "cells": ["TABLE2_EPS9_C10", "FIG3_EPS9_LDP", "FIG3_EPS9_SMPC_DP"]}
    ran = ["fig3_eps3_ldp", "fig3_eps9_ldp"]  # SMPC+DP not run: its claim left out
    assert _common.fig3_pairs(ran) == [
        (claim, [("table2_eps3_C10", "fig3_eps3_ldp", "ε=3"),
                 ("table2_eps9_C10", "fig3_eps9_ldp", "ε=9")],
         dict(short=short, label="LDP", margin=margin))
        for claim, short, _, _, margin in _common.FIG3_CLAIMS[:2]]


def test_model_facts():
    """The page's image side and CNN widths of the cpu config (MNIST pooled to 14x14, a 2-conv
    CNN) and of the ResNet-18 config (no conv widths). Wrong implementation caught: the side
    not divided by the pooling, or the widths of another model field."""
    from experiments.configs.lightdp import _common

    facts = _common.model_facts(_common.scale_config("cpu"))
    assert facts == dict(side=14, convs=2, kw=dict(features=[4, 8], hidden=facts["kw"]["hidden"]))
    assert facts["kw"]["hidden"] == list(dict(_common.scale_config("cpu").model_kwargs)["hidden"])
    assert _common.model_facts(_common.scale_config("full")) == dict(
        side=28, convs=0, kw=dict(features=[], hidden=[]))


def test_csv_round_trip(tmp_path):
    from jaxfl.repro import runs as _runs

    rows = _rows(lambda n, s: 0.5 + 0.01 * s, 2)
    _runs.write_rows(tmp_path / lr.SEEDS_CSV, rows[::-1], lr.FIELDS)
    (tmp_path / lr.COSTS_JSON).write_text('{"scale": "smoke"}')
    back, meta = lr.read_data(tmp_path)
    assert meta == {"scale": "smoke"}
    assert back == sorted(rows, key=lambda r: (r["name"], r["seed"]))
    acc = lr.accuracies(back)
    assert acc["fig3_eps3_ldp"] == {0: 50.0, 1: 51.0}


def test_fig3_verdicts_follow_the_interval_rule():
    rng = np.random.default_rng(0)
    noise = {s: rng.normal(0, 0.02) for s in range(3)}  # shared per seed (paired)

    def acc(gap):
        return lambda n, s: 0.7 + noise[s] + (gap if n.startswith("table2") else 0.0) + (
            0.001 * s if "ldp" in n else 0.0)

    # the verdict is the Holm-corrected paired test; the interval rule is reported beside it
    for gap, want, want_interval in [(0.2, stats.HOLDS, stats.HOLDS),
                                     (-0.2, stats.FAILS, stats.FAILS),
                                     (0.005, stats.INCONCLUSIVE, stats.OVERLAP)]:
        beats = _claims(acc(gap), 3)["LightDP-FL beats vanilla LDP at every ε (Fig. 3)"]
        assert beats["verdict"] == want, (gap, beats)
        assert beats["paired"].startswith(f"interval rule: {want_interval}; paired: "), beats
    # "more than 15 points": a 20-point gap in every seed holds, a 10-point one does not.
    for gap, want in [(0.20, stats.HOLDS), (0.10, stats.FAILS)]:
        assert _claims(acc(gap), 3)["... by more than 15 points"]["verdict"] == want, gap


def test_table_trends_with_one_seed_get_no_verdict():
    # Accuracy rising with epsilon everywhere: no inversion, still no verdict on one seed.
    row = _claims(lambda n, s: 0.5 + 0.01 * _eps(n), 1)["Table II: accuracy increases with ε"]
    assert row["verdict"] == stats.ONE_SEED and row["evidence"].startswith("0 inversions of 8")
    flat = _claims(lambda n, s: 0.5, 1)["Table II: accuracy increases with ε"]
    assert flat["evidence"].startswith("8 inversions of 8")
    three = _claims(lambda n, s: 0.5 + 0.05 * _eps(n) + 0.001 * s, 3)
    assert three["Table II: accuracy increases with ε"]["verdict"] == stats.HOLDS


def test_data_of_another_setting_is_refused(tmp_path):
    """The committed data folder renders; with its costs JSON's setting edited (T = 21, not the
    cpu config's 20) the context is refused, naming both settings. Wrong implementation caught:
    a page rendered from the runs of another config (the setting check dropped or comparing the
    wrong config)."""
    for name in (lr.SEEDS_CSV, lr.COSTS_JSON, lr.TABLES_CSV):
        shutil.copy(declare.DATA / name, tmp_path / name)
    assert lr.context(declare.Inputs(tmp_path))["base"].rounds == 20
    meta = json.loads((tmp_path / lr.COSTS_JSON).read_text())
    meta["setting"]["rounds"] = 21
    (tmp_path / lr.COSTS_JSON).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"written for .*'rounds': 21.*this setting .*'rounds': 20"):
        lr.context(declare.Inputs(tmp_path))
