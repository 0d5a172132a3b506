"""ULDP-FL experiment configs: every config parses in every variant, sweeps have the paper's
grids, and smoke runs train end to end with exact privacy numbers (real data; skipped when
absent)."""

import json

import pytest

from experiments import config as config_lib
from tests.conftest import require_data

CONFIGS = {"fig4_creditcard": 9 * 2 * 2 * 5, "fig5_mnist": 8 * 2 * 3 * 5,
           "fig6_heart": 9 * 2 * 2 * 5, "fig7_tcga": 9 * 2 * 2 * 5,
           "fig8_weighting": 3 * 2 * 2 * 5, "fig9_subsampling": (5 + 20) + (5 + 15)}


def _path(name):
    return f"experiments/configs/uldp/{name}.py"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_configs_parse_and_sweeps(name):
    module = config_lib.load_module(_path(name))
    assert len(module.get_sweep()) == CONFIGS[name]
    for variant in ("full", "cpu", "smoke"):
        cfg = module.get_config(f"variant={variant}")
        assert cfg.variant == variant and cfg.noise_multiplier == 5.0 and cfg.delta == 1e-5
        cfg.parsed_method()
    full = module.get_config(None)
    for override in module.get_sweep()[:3]:
        config_lib.apply_overrides(full, {k: v for k, v in override.items() if k != "dataset"})


def test_paper_hyperparameters():
    mod = config_lib.load_module(_path("fig7_tcga"))
    group = mod.get_config("method=ULDP-GROUP-2")
    assert (group.global_lr, group.clip_norm, group.batch_size) == (0.1, 100.0, 8)
    avg = mod.get_config("method=ULDP-AVG-w")
    assert (avg.global_lr, avg.clip_norm, avg.local_lr, avg.local_epochs) == (10.0, 0.1, 0.001, 50)
    mnist = config_lib.load_module(_path("fig5_mnist"))
    assert mnist.get_config("num_users=10000,method=ULDP-AVG").global_lr == 100.0
    assert mnist.get_config("num_users=100,method=ULDP-AVG").global_lr == 10.0
    cc = config_lib.load_module(_path("fig4_creditcard")).get_config("method=ULDP-AVG")
    assert (cc.local_epochs, cc.rounds) == (30, 100)
    sub = config_lib.load_module(_path("fig9_subsampling")).get_config(
        "dataset=creditcard,method=ULDP-AVG-ws,sampling_rate=0.3")
    assert (sub.clip_norm, sub.sampling_rate, sub.num_users) == (1.0, 0.3, 1000)


def test_heart_smoke_run_writes_exact_privacy(tmp_path):
    root = require_data("heart_disease")
    cfg = config_lib.load_config(_path("fig6_heart") + ":variant=smoke,method=ULDP-AVG-w",
                                 [f"data_dir={root / 'heart_disease'}"])
    summary = cfg.run(tmp_path)
    privacy = json.loads((tmp_path / "privacy.json").read_text())
    assert privacy["paper"] == pytest.approx([0.794522032537103, 1.1581505950444586])
    assert all(s <= p for s, p in zip(privacy["sound"], privacy["paper"], strict=True))
    assert 0.0 <= summary["final"]["test_accuracy"] <= 1.0
    assert (tmp_path / "metrics.jsonl").exists() and (tmp_path / "summary.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ULDP-GROUP-2", "ULDP-NAIVE"])
def test_tcga_smoke_baselines(method, tmp_path):
    root = require_data("tcga_brca")
    cfg = config_lib.load_config(_path("fig7_tcga") + f":variant=smoke,method={method}",
                                 [f"data_dir={root / 'tcga_brca'}"])
    summary = cfg.run(None)
    assert 0.0 <= summary["final"]["test_c_index"] <= 1.0
    p = summary["privacy"]
    if method == "ULDP-NAIVE":  # strict accounting doubles the sensitivity
        assert p["sound"][-1] > p["paper"][-1]
    else:
        assert p["group_size"] == 2 and p["paper"][-1] > 1.0


@pytest.mark.slow
def test_mnist_subsampling_smoke(tmp_path):
    root = require_data("mnist")
    cfg = config_lib.load_config(_path("fig9_subsampling") + ":variant=smoke,sampling_rate=0.5",
                                 [f"data_dir={root / 'mnist'}"])
    summary = cfg.run(None)
    assert summary["final"]["sampled_users"] < cfg.num_users
    assert summary["privacy"]["paper"][-1] < 1.1581505950444586  # q = 0.5 after 2 rounds
