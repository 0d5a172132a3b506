"""Smoke tests of the gossip-DP configs (Fig. 1-3 of Koskela & Kulkarni 2025): each config's
smoke sweep runs through the one driver and every point equals a single run."""

import json

import numpy as np
import pytest

from experiments import config as config_lib
from experiments import run as run_driver
from experiments import sweep as sweep_driver
from jaxfl import builders, metrics, validate

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


def test_fig3_plot_draws_the_methods_that_ran(tmp_path, monkeypatch):
    """Fig. 3 is drawn from the per-seed cells: a grid where one method ran draws that method
    only (it used to stop with a KeyError on the first method that had not run), at the
    learning rate chosen on validation, its mean test accuracy per epsilon."""
    from experiments.reproduce import gossip

    rows = [{"method": "gossip_ss_thm3_certified", "target_epsilon": e, "learning_rate": lr,
             "seed": s, "noise_multiplier": 3.0, "val_accuracy": val, "test_accuracy": acc + s}
            for e, lr, val, acc in ((1.0, 0.1, 0.5, 0.55), (1.0, 0.3, 0.6, 0.45),
                                    (4.0, 0.1, 0.7, 0.7)) for s in (0.0, 0.02)]
    drawn = []
    save = gossip._figures.save

    def keep(fig, path, **kw):  # the error-bar series drawn, read before the figure is closed
        drawn.extend((c.get_label(), list(c[0].get_xdata()), list(c[0].get_ydata()))
                     for ax in fig.axes for c in ax.containers)
        save(fig, path, **kw)

    monkeypatch.setattr(gossip._figures, "save", keep)
    gossip.plot({}, gossip.select_fig3(rows), tmp_path)
    # one line: the method that ran, at lr 0.3 for eps 1 (best validation, not best test) and
    # its seeds' mean test accuracy (wrong implementation caught: the best test accuracy's
    # learning rate, the first seed only, a method drawn twice)
    ((label, x, y),) = drawn
    assert label == "gossip_ss_thm3_certified"
    assert x == pytest.approx([0.96, 3.84])  # first of three methods: shifted left by 4%
    assert y == pytest.approx([0.46, 0.71])
    assert (tmp_path / "fig3_mnist_seeds.png").is_file()
    assert not (tmp_path / "fig2_adaptive.png").exists()  # no exact data: not drawn

