"""Smoke tests of the gossip-DP configs (Fig. 1-3 of Koskela & Kulkarni 2025): each config's
smoke sweep runs through the one driver and every point equals a single run."""

import json

import numpy as np
import pytest

from experiments import builders
from experiments import config as config_lib
from experiments import run as run_driver
from experiments import sweep as sweep_driver
from jaxfl import metrics, validate

CFG = "experiments/configs/gossip"


def _points(workdir):
    out = {}
    for p in sorted((workdir / "points").iterdir()):
        summary = json.loads((p / "summary.json").read_text())
        out[p.name] = (summary, metrics.read_jsonl(p / "metrics.jsonl"))
    return out


def _same_records(a, b, keys):
    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        for k in keys:
            np.testing.assert_allclose(ra[k], rb[k], rtol=2e-6, atol=1e-6, err_msg=k)


def test_fig1_er_smoke_sweep_equals_single_runs(tmp_path):
    sweep_driver.main(["--config", f"{CFG}/fig1_er.py:variant=smoke",
                       "--workdir", str(tmp_path / "s")])
    assert "epsilon" in (tmp_path / "s" / "results.csv").read_text().splitlines()[0]
    pts = _points(tmp_path / "s")
    assert len(pts) == 2
    single = run_driver.main(["--config", f"{CFG}/fig1_er.py:variant=smoke", "--workdir",
                              str(tmp_path / "one")])
    cfg = config_lib.load_config(f"{CFG}/fig1_er.py:variant=smoke")
    summary, recs = pts[metrics.config_hash(cfg)]
    assert summary["privacy"] == single["privacy"]
    _same_records(recs, metrics.read_jsonl(tmp_path / "one" / "metrics.jsonl"), ["epsilon"])
    strict, paper = summary["privacy"], summary["privacy_paper"]
    assert strict["sound"] and not paper["sound"] and strict["unit"] == "node"
    nbr = np.array(paper["details"]["curve"]["delta_sq"])[:, 0, 0]     # observer 1, target 37
    assert abs(nbr[0] - 0.04077) < 5e-6                                 # Fig. 1 anchor, T = 1
    cert = np.array(strict["details"]["curve"]["delta_sq"])
    assert np.all(cert >= np.array(paper["details"]["curve"]["delta_sq"]) - 1e-12)


def test_fig1_facebook_needs_the_snap_file(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    cfg = config_lib.load_config(f"{CFG}/fig1_facebook.py:variant=smoke")
    assert cfg.target == 300 and cfg.observers_per_kind == 2
    with pytest.raises(validate.DataNotFoundError, match="facebook_combined"):
        builders.run_spec(cfg)


def test_configs_are_data():
    for name in ("fig1_er", "fig1_facebook", "fig2_adaptive", "fig3_mnist"):
        module = config_lib.load_module(f"{CFG}/{name}.py")
        cfg = module.get_config("variant=smoke")
        for attr in ("run", "build", "accounting", "methods", "privacy"):
            assert not hasattr(cfg, attr), (name, attr)
        assert len(module.get_sweep("variant=smoke")) >= 2


@pytest.mark.slow
def test_fig2_smoke_sweep(tmp_path):
    sweep_driver.main(["--config", f"{CFG}/fig2_adaptive.py:variant=smoke",
                       "--workdir", str(tmp_path)])
    by_view = {s["privacy"]["details"]["view"]: s for s, _ in _points(tmp_path).values()}
    assert set(by_view) == {"tm3", "tm4"}
    for view, s in by_view.items():
        cert, paper = s["privacy"]["details"]["curve"], s["privacy_paper"]["details"]["curve"]
        for T, e in zip(cert["T"], cert["mean_epsilon"], strict=True):
            assert e >= paper["mean_epsilon"][paper["T"].index(T)] - 1e-9, view
    assert not by_view["tm4"]["privacy"]["sound"]                     # Thm 4's reduction
    ldp1 = by_view["tm4"]["privacy_paper"]["details"]["curve"]["mean_epsilon"][0]
    from jaxfl.accounting import gossip as gacc
    assert ldp1 == pytest.approx(gacc.pair_epsilon(1.0, noise_multiplier=5.0, delta=1e-5))


def test_fig3_plot_draws_the_methods_a_smoke_grid_ran(tmp_path, monkeypatch):
    """The smoke Fig. 3 grid runs one method; the plot draws it and skips the others (it used
    to stop with a KeyError on the first method that had not run)."""
    from experiments.reproduce import gossip

    res = {"results": [
        {"method": "gossip_ss_thm3_certified", "epsilon": e, "learning_rate": lr,
         "test_accuracy": [0.1, acc]}
        for e, lr, acc in ((1.0, 0.1, 0.5), (1.0, 0.3, 0.6), (4.0, 0.1, 0.7))]}
    assert gossip.best_accuracy(res) == {"gossip_ss_thm3_certified": {1.0: (0.6, 0.3),
                                                                      4.0: (0.7, 0.1)}}
    drawn = []
    save = gossip._runs.save

    def keep(fig, path, **kw):  # the plotted lines, read before the figure is closed
        drawn.extend((ln.get_label(), list(ln.get_xdata()), list(ln.get_ydata()))
                     for ax in fig.axes for ln in ax.get_lines())
        save(fig, path, **kw)

    monkeypatch.setattr(gossip._runs, "save", keep)
    gossip.plot_fig3(res, tmp_path / "fig3.png")
    # one line: the method that ran, at its best learning rate per epsilon (wrong
    # implementation caught: the last or first learning rate's accuracy, a method drawn twice)
    assert drawn == [("gossip_ss_thm3_certified", [1.0, 4.0], [0.6, 0.7])]
    assert (tmp_path / "fig3.png").is_file()
