"""Smoke tests of the gossip-DP experiment configs (Fig. 1-3 of Koskela & Kulkarni 2025)."""

import json

import pytest

from experiments import config as config_lib
from jaxfl import _validate
from tests.conftest import require_data

CFG = "experiments/configs/gossip"


def test_fig1_er_smoke(tmp_path):
    cfg = config_lib.load_config(f"{CFG}/fig1_er.py:variant=smoke")
    out = cfg.run(tmp_path)
    saved = json.loads((tmp_path / f"{cfg.name}.json").read_text())
    assert saved["modes"] == ["paper", "certified"] and len(out["curves"]) == 2
    nbr = next(c for c in out["curves"] if c["kind"] == "neighbour")
    assert abs(nbr["paper_over_T"][0] - 0.04077) < 5e-6          # spec 5.1, T = 1
    assert all(c >= p - 1e-12 for p, c in zip(nbr["paper_over_T"], nbr["certified_over_T"]))


def test_fig1_facebook_needs_the_snap_file(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    cfg = config_lib.load_config(f"{CFG}/fig1_facebook.py:variant=smoke")
    assert cfg.target == 300 and cfg.observers_per_kind == 2
    with pytest.raises(_validate.DataNotFoundError, match="facebook_combined"):
        cfg.run(tmp_path)


@pytest.mark.slow
def test_fig2_smoke(tmp_path):
    out = config_lib.load_config(f"{CFG}/fig2_adaptive.py:variant=smoke").run(tmp_path)
    s = out["series"]
    for key in ("tm3_paper", "tm3_certified", "tm4_paper", "tm4_certified", "ldp"):
        assert all(e >= 0 for e in s[key]["mean_eps"]), key
    k = s["tm3_paper"]["T"].index(s["tm3_certified"]["T"][-1])
    assert s["tm3_certified"]["mean_eps"][-1] >= s["tm3_paper"]["mean_eps"][k] - 1e-9
    assert s["tm4_paper"]["mean_eps"][0] == pytest.approx(s["ldp"]["mean_eps"][0])  # Δ = 1


@pytest.mark.slow
def test_fig3_smoke(tmp_path):
    data = require_data("mnist/train-images-idx3-ubyte.gz")
    cfg = config_lib.load_config(f"{CFG}/fig3_mnist.py:variant=smoke")
    import dataclasses
    out = dataclasses.replace(cfg, data_dir=str(data / "mnist")).run(tmp_path)
    methods = {r["method"] for r in out["results"]}
    assert methods == {"gossip_ss_thm3_paper", "gossip_p_thm4_paper",
                       "gossip_ss_thm3_certified", "gossip_ldp", "fedavg"}
    sig = out["sigmas"]["4.0"]
    assert sig["gossip_ss_thm3_paper"] <= sig["gossip_ss_thm3_certified"] <= sig["gossip_ldp"]
    assert all(0.1 < r["test_accuracy"][-1] <= 1 for r in out["results"])
    assert (tmp_path / f"{cfg.name}_sensitivity_n{cfg.n}_T{cfg.rounds}.npz").exists()
