"""``python -m experiments.plot_privacy``: heatmaps (2-D per-unit reports) and histograms (1-D)
from the summaries of smoke runs; a clear error on a report without per-unit epsilons."""

import json

import numpy as np
import pytest

from experiments import plot_privacy
from experiments import run as run_driver
from jaxfl import training
from jaxfl.accounting import events, report
from tests.conftest import require_data

PNG = b"\x89PNG\r\n\x1a\n"


def test_gossip_smoke_heatmap(tmp_path):
    run_driver.main(["--config", "experiments/configs/gossip/fig1_er.py:variant=smoke",
                     "--workdir", str(tmp_path / "g")])
    summary = plot_privacy.load_summary(tmp_path / "g")
    eps, axes = plot_privacy.per_unit(summary["privacy"])
    assert eps.ndim == 2 and axes == ("observer", "target")
    out = plot_privacy.main([str(tmp_path / "g"), "--out", str(tmp_path / "g.png")])
    assert out.read_bytes()[:8] == PNG
    paper = plot_privacy.plot(tmp_path / "g" / "summary.json", tmp_path / "p.png",
                              report_key="privacy_paper")
    assert paper.read_bytes()[:8] == PNG


@pytest.mark.slow
def test_subject_smoke_histogram(tmp_path):
    require_data("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz")
    run_driver.main(["--config", "experiments/configs/subject_dp/skewed.py:variant=smoke",
                     "--workdir", str(tmp_path / "s")])
    summary = plot_privacy.load_summary(tmp_path / "s")
    eps, axes = plot_privacy.per_unit(summary["privacy"])
    assert eps.ndim == 1 and axes == ("subject",)
    assert np.nanmax(eps) == pytest.approx(summary["privacy"]["epsilon"])
    fig = plot_privacy.figure(summary)
    assert "per-subject epsilon" in fig._suptitle.get_text()
    assert "mode strict, sound" in fig._suptitle.get_text()
    out = plot_privacy.plot(summary, tmp_path / "s.png")
    assert out.read_bytes()[:8] == PNG


def test_inf_and_nan_units(tmp_path):
    summary = {"algorithm": "toy", "privacy": {
        "epsilon": 2.0, "delta": 1e-5, "rounds": 3, "unit": "user", "accountant": "rdp",
        "mode": "paper", "sound": False, "per_unit": [1.0, "inf", 2.0, 0.5],
        "per_unit_axes": ["user"]}}
    eps, _ = plot_privacy.per_unit(summary["privacy"])
    assert np.isinf(eps[1]) and eps[2] == 2.0
    assert "NOT sound" in plot_privacy.title(summary, summary["privacy"])
    assert plot_privacy.plot(summary, tmp_path / "u.png").read_bytes()[:8] == PNG
    two = dict(summary["privacy"], per_unit=[["nan", 1.0], ["inf", "nan"]],
               per_unit_axes=["observer", "target"])
    assert plot_privacy.plot({"privacy": two}, tmp_path / "t.png").read_bytes()[:8] == PNG


def test_summary_without_per_unit_fails_clearly(tmp_path, capsys):
    acc = report.EventAccountant.repeating(
        events.poisson_gaussian(sampling_rate=0.1, noise_multiplier=1.0), unit="client")
    training.run_accounting(acc, rounds=3, delta=1e-5, workdir=tmp_path / "f")
    assert "per_unit" not in json.loads((tmp_path / "f" / "summary.json").read_text())["privacy"]
    with pytest.raises(SystemExit) as exc:
        plot_privacy.main([str(tmp_path / "f"), "--out", str(tmp_path / "f.png")])
    assert exc.value.code == 2
    assert "no per_unit epsilons" in capsys.readouterr().err
    assert not (tmp_path / "f.png").exists()
    with pytest.raises(plot_privacy.NoPerUnitError, match="no 'privacy_paper' report"):
        plot_privacy.figure(plot_privacy.load_summary(tmp_path / "f"), "privacy_paper")
    with pytest.raises(FileNotFoundError):
        plot_privacy.load_summary(tmp_path / "missing")
