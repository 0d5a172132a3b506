"""Smoke tests of the subject-level DP configs, builder, sweeps and reproduction driver."""

import dataclasses
import json
import math

import numpy as np
import pytest

from experiments import config as config_lib
from experiments import run as run_lib
from experiments.papers import subject_dp as papers_sdp
from experiments.reproduce import subject_dp as repro
from jaxfl import builders
from jaxfl import tree as jtree
from jaxfl.accounting import subject_dp as acct
from jaxfl.accounting.report import jsonable
from jaxfl.data import subjects
from jaxfl.repro import declare, stats
from jaxfl.repro import runs as _runs

CONFIG_DIR = "experiments/configs/subject_dp"
CONFIGS = ("femnist_like", "skewed", "shakespeare", "parkinsons")


def _data() -> dict:
    """The committed ``subject_dp.json``, its infinities as floats."""
    return _runs.from_json(json.loads((declare.DATA / repro.DATA).read_text()))


def _page(folder, data: dict) -> str:
    """The page rendered from ``data`` written as the data file of ``folder`` (a new Inputs:
    its context is computed afresh)."""
    folder.mkdir(exist_ok=True)
    (folder / repro.DATA).write_text(json.dumps(jsonable(data)))
    return repro.page(declare.Inputs(folder))


@pytest.mark.parametrize("name", CONFIGS)
def test_configs_are_data_with_variants_and_sweeps(name):
    module = config_lib.load_module(f"{CONFIG_DIR}/{name}.py")
    for variant in ("smoke", "cpu"):
        cfg = module.get_config(f"variant={variant}")
        assert cfg.variant == variant and cfg.mode in ("strict", "paper")
        assert cfg.target_epsilon == 4.0 and cfg.delta == 1e-5
        assert type(cfg).builder == "experiments.papers.subject_dp:run_spec"
    for banned in ("build", "run", "privacy", "plan", "data", "federation", "make_model"):
        assert not hasattr(cfg, banned), banned
    for override in module.get_sweep():
        cfg = config_lib.apply_overrides(module.get_config("variant=smoke"), override)
        assert cfg.method in repro.NAMES
    smoke = module.get_sweep("variant=smoke")
    assert len(smoke) >= 2
    assert module.get_sweep("seeds=2") == [{**o, "seed": s} for o in module.get_sweep()
                                           for s in (0, 1)]  # one computation per run
    assert module.get_config("seeds=2") == module.get_config()
    assert module.get_config().num_users in (16,)
    with pytest.raises(Exception, match="method"):
        dataclasses.replace(module.get_config(), method="dp_sgd")


@pytest.mark.slow
def test_smoke_run_records_mode_and_privacy(tmp_path):
    summary = run_lib.main([
        "--config", f"{CONFIG_DIR}/femnist_like.py:variant=smoke,mode=paper",
        "--set", "nominal_rounds=4", "--set", "method=higradavg_dp", "--workdir", str(tmp_path)])
    assert summary["rounds"] == 2  # R / sqrt(s) with s = 4 users
    p, strict = summary["privacy"], summary["privacy_strict"]
    assert p["mode"] == "paper" and not p["sound"] and p["unit"] == "subject"
    assert p["epsilon"] == pytest.approx(4.0, abs=1e-3) == summary["epsilon"]
    assert strict["mode"] == "strict" and strict["sound"] and strict["epsilon"] > 4.0
    assert len(strict["per_unit"]) == 12 and max(strict["per_unit"]) == strict["epsilon"]
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert records and all(r["mode"] == "paper" and r["privacy_mode"] == "paper"
                           for r in records)
    assert all(math.isfinite(r["test_accuracy"]) for r in records)


def test_local_group_dp_strict_report_gets_the_model_dim_from_the_builder():
    cfg = config_lib.load_config(f"{CONFIG_DIR}/femnist_like.py:variant=smoke",
                                 ["method=local_group_dp", "mode=paper", "nominal_rounds=4"])
    spec = builders.run_spec(cfg)
    d = jtree.num_params(spec.params)
    strict = spec.algorithm.accountant.other_modes()["strict"].report(spec.rounds, cfg.delta)
    assert strict.details["model_dim"] == d and strict.details["bound"] == "variance-mismatch"
    assert papers_sdp.model_dim(cfg) == d  # the model size section 3's rows record
    assert strict.sound and math.isfinite(strict.epsilon) and strict.epsilon > 4.0


def test_builder_wires_calibrated_noise_and_accountant():
    cfg = config_lib.load_config(f"{CONFIG_DIR}/femnist_like.py:variant=smoke,mode=paper",
                                 ["method=local_item_dp"])
    spec = builders.run_spec(cfg)
    assert spec.rounds == cfg.nominal_rounds and spec.delta == cfg.delta
    acc = spec.algorithm.accountant
    assert acc.mode == "paper" and acc.unit == "item" and acc.sound
    assert acc.report(spec.rounds, cfg.delta).epsilon == pytest.approx(4.0, abs=1e-3)
    assert set(spec.algorithm.hparams) == {"learning_rate", "clip_norm"}


def test_batch_row_and_rounds():
    rng = np.random.default_rng(0)
    d = subjects.lognormal_layout(rng, num_subjects=30, total=16 * 200, sigma_log=1.0)
    row = papers_sdp.batch_row("tiny", d, 20, 5, rng)
    assert list(row) == list(papers_sdp.BATCH_HEAD)
    assert row["subjects"] == 30 and 1 <= row["mean K"] <= 20 and row["mean Z"] >= 1
    assert row["mode Z"] >= 1 and row["B"] == 20 and row["layout"] == "tiny"
    assert acct.run_rounds("local_item_dp", 100, 16) == 100


def test_page_cells_are_written_as_the_tables_write_numbers(tmp_path):
    """A section-2 row with an infinite, a None and a long float cell: the page prints "inf",
    "-" and 4 significant digits (and an integer as it stands)."""
    data = _data()
    row = data["batch_statistics"]["rows"][0]
    row.update({"mean K": float("inf"), "mean Z": None, "mode Z": 3, "B": 0.123456})
    assert "| 3500 | 35929 | 0.1235 | inf | - | 3 |" in _page(tmp_path, data)


def test_sigma_row_compares_with_the_spec_at_the_printed_precision():
    """The summary's sigma row holds when each spec value is within 0.6 units of the last
    printed digit of the exact number. Wrong implementations caught: a looser or a zero
    tolerance, a tolerance from the spec's digits instead of the printed number's."""
    assert stats.matches_spec({"a": 0.6881, "b": 5.648, "_spec": {"a": 0.68814, "b": 5.648}})
    assert not stats.matches_spec({"a": 0.6881, "_spec": {"a": 0.68817}})
    assert not stats.matches_spec({"a": 0.6883, "_spec": {"a": 0.6881}})
    assert stats.matches_spec({"a": 5.6, "_spec": {"a": 5.648}})  # printed as 5.6: within 0.06


@pytest.mark.slow
def test_training_figure_runs_as_one_resumable_sweep(tmp_path):
    """The declared training figure's runs are points of one sweep, exported into the data
    file's ``training`` section; a second run trains nothing and exports the same rows."""
    import experiments.reproduce  # noqa: F401  (registers the papers)

    paper = declare.paper("subject_dp")
    args = (paper, ["training"], "smoke", tmp_path / "w", tmp_path / "data", tmp_path / "f")
    declare.run_figures(*args)
    train = json.loads((tmp_path / "data" / repro.DATA).read_text())["training"]
    assert [(r["method"], r["mode"]) for r in train["rows"]] == [
        ("FedAvg", "paper"), ("HiGradAvgDP", "paper"), ("HiGradAvgDP", "strict")]
    strict = train["rows"][2]
    assert 0 < strict["epsilon"] == strict["epsilon_strict"] <= 4.0 + 1e-9
    summaries = sorted((tmp_path / "w" / "training" / "points").glob("*/summary.json"))
    assert len(summaries) == 3
    # each row is its own run's log (wrong implementation caught: rows attached to another
    # point, or the first round's accuracy reported as final)
    for r in train["rows"]:
        s = json.loads((tmp_path / "w" / "training" / "points" / r["point_id"] /
                        "summary.json").read_text())
        assert r["test_accuracy"] == s["final"]["test_accuracy"] and r["rounds"] == s["rounds"]
    stamps = [p.stat().st_mtime_ns for p in summaries]
    declare.run_figures(*args)
    again = json.loads((tmp_path / "data" / repro.DATA).read_text())["training"]
    assert again["rows"] == train["rows"]
    assert [p.stat().st_mtime_ns for p in summaries] == stamps


def test_page_wording_branches_the_committed_page_does_not_reach(tmp_path):
    """The template blocks that the committed data does not select render with their numbers:
    no tiny-Shakespeare roles, LocalGroupDP below HiGradAvgDP, no training section."""
    data = _data()
    data["batch_statistics"]["shakespeare_roles"] = None
    for r in data["training"]["rows"]:
        if (r["method"], r["mode"]) == ("LocalGroupDP", "paper"):
            r["test_accuracy"] = 0.25
    text = _page(tmp_path, data)
    assert "  ordering is the reproduction target.\n  The LEAF loaders" in text
    assert "Tiny-Shakespeare" not in text
    assert ("LocalGroupDP ends below HiGradAvgDP (0.25 vs 0.528 test accuracy), as in the "
            "paper's v1 ordering.") in " ".join(text.split())
    del data["training"]
    page = _page(tmp_path / "b", data)
    assert "## 3. " not in page and "One seed per run" not in page
    assert page.endswith("is the (looser) RDP bound, to keep the run short.\n")
