"""Smoke tests of the subject-level DP configs and reproduction driver (seconds each)."""

import json
import math

import numpy as np
import pytest

from experiments import config as config_lib
from experiments import run as run_lib
from experiments.reproduce import subject_dp as repro

CONFIG_DIR = "experiments/configs/subject_dp"
CONFIGS = ("femnist_like", "skewed", "shakespeare", "parkinsons")


@pytest.mark.parametrize("name", CONFIGS)
def test_configs_load_with_variants_and_sweeps(name):
    module = config_lib.load_module(f"{CONFIG_DIR}/{name}.py")
    for variant in ("smoke", "cpu"):
        cfg = module.get_config(f"variant={variant}")
        assert cfg.variant == variant and cfg.mode in ("strict", "paper")
        assert cfg.target_epsilon == 4.0 and cfg.delta == 1e-5
    for override in module.get_sweep():
        cfg = config_lib.apply_overrides(module.get_config("variant=smoke"), override)
        assert cfg.method in repro.NAMES
    assert module.get_config().num_users in (16,)


@pytest.mark.slow
def test_smoke_run_records_mode_and_privacy(tmp_path):
    summary = run_lib.main([
        "--config", f"{CONFIG_DIR}/femnist_like.py:variant=smoke,mode=paper",
        "--set", "nominal_rounds=4", "--set", "method=higradavg_dp", "--workdir", str(tmp_path)])
    assert summary["rounds_run"] == 2  # R / sqrt(s) with s = 4 users
    p = summary["privacy"]
    assert p["mode"] == "paper" and p["reported"]["mode"] == "paper"
    assert p["reported"]["epsilon"] == pytest.approx(4.0, abs=1e-3)
    assert p["strict"]["mode"] == "strict" and p["strict"]["epsilon"] > 4.0
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert records and all(r["mode"] == "paper" for r in records)
    assert all(math.isfinite(r["test_accuracy"]) for r in records)


def test_driver_pieces():
    rng = np.random.default_rng(0)
    d = repro.lognormal_layout(rng, num_subjects=30, total=16 * 200, sigma_log=1.0)
    row = repro.batch_stats_row("tiny", d, 20, 5, rng)
    assert row[1] == 30 and 1 <= row[4] <= 20 and row[5] >= 1
    md = repro.table(["a", "b"], [[1.0, float("inf")]])
    assert "inf" in md and md.count("|") == 9
