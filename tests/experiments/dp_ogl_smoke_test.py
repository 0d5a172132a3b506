"""Smoke tests of the DP-OGL experiment configs (Figs. 3, 4, 5), their builder and the
reproduction driver.

Configs are data (no methods); ``experiments.papers.dp_ogl.run_spec`` builds every curve's
run; the Fig. 4 privacy studies are accounting-only specs; every config file's smoke sweep
equals single runs of its points. Real MNIST files are required (skip otherwise, fail with
JAXFL_REQUIRE_DATA=1); Fashion-MNIST (Fig. 5) is not shipped, so fig5's sweep runs on MNIST
(``--set dataset=mnist``: the same code path).
"""

import dataclasses
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from experiments import config as config_lib
from experiments import run as run_lib
from experiments.configs.dp_ogl import _common, fig3, fig4, fig5
from experiments.papers import dp_ogl as papers_dp_ogl
from jaxfl import builders
from jaxfl.repro import declare
from tests.conftest import require_data

CFG = "experiments/configs/dp_ogl"


@pytest.fixture(scope="module")
def mnist():
    return require_data("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz")


def test_configs_are_data():
    for cls in (_common.DpOglConfig, _common.DpOglPrivacyConfig):
        assert cls.builder == "experiments.papers.dp_ogl:run_spec"
        methods = {k for k, v in vars(cls).items() if callable(v) and not k.startswith("__")}
        assert methods <= {"check"}, methods  # check: cross-field validation (configs/base.py)
    with pytest.raises(ValueError):
        _common.make_config("ri4_s10", mode="nonsense")
    for module in (fig3, fig4, fig5):
        assert len(module.get_sweep("variant=smoke")) >= 2
        assert len(module.get_sweep()) >= len(_common.FIG4A)


def test_every_curve_has_a_smoke_config_and_accountant(mnist):
    del mnist
    counts = None
    for curve in _common.CURVES:
        cfg = config_lib.load_config(f"{CFG}/fig3.py:curve={curve},variant=smoke")
        assert cfg.variant == "smoke" and cfg.epochs <= 2 and cfg.curve == curve
        if cfg.structure == "label_based" and counts is None:
            counts = papers_dp_ogl.task(cfg).info["label_counts"]
        s = papers_dp_ogl.group_structure(
            cfg, counts if cfg.structure == "label_based" else None)
        assert s.num_workers == cfg.num_workers
        acc = papers_dp_ogl.accountant(cfg, s)
        assert acc.mode == "strict" and acc.epsilons([0], 1e-5)[0] == 0.0
    for panel in _common.FIG3.values():
        assert set(panel) <= set(_common.CURVES)
    assert set(_common.FIG4_CURVES) <= set(_common.CURVES)


def test_fig4_panels_are_accounting_only_specs(mnist, tmp_path):
    del mnist
    spec = builders.run_spec(fig4.get_config("panel=e,mode=paper"))
    assert spec.algorithm is None and spec.rounds == 199
    r = spec.privacy.report(spec.rounds, spec.delta)
    assert r.mode == "paper" and r.sound
    np.testing.assert_allclose(r.details["max"], 57.160, atol=2e-3)  # reference table
    np.testing.assert_allclose(r.details["mean"], 36.694, atol=2e-3)
    plus = builders.run_spec(fig4.get_config("curve=plus_ri4_s10,mode=paper")).privacy
    assert plus.mode == "paper" and not plus.sound  # shared in-window updates
    summary = builders.run(fig4.get_config("panel=c"), tmp_path)
    eps = np.array(summary["privacy"]["per_unit"], dtype=float)
    assert np.sum(eps == 0) == 100 * 75  # cross-cluster pairs leak nothing
    assert summary["privacy_paper"]["mode"] == "paper"
    recs = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(recs) == 199 and recs[-1]["epsilon"] == summary["epsilon"]


def _records(path):
    return [{k: v for k, v in json.loads(x).items() if k != "elapsed_s"}
            for x in (path / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_paper_mode_training_run(mnist, tmp_path):
    del mnist
    summary = run_lib.main(["--config", f"{CFG}/fig3.py:curve=plus_ri4_s2,variant=smoke,"
                            "mode=paper", "--workdir", str(tmp_path)])
    assert summary["rounds_completed"] == 2
    recs = _records(tmp_path)
    assert recs[-1]["mode"] == "paper" and recs[-1]["privacy_mode"] == "paper"
    # The logged test accuracy recomputed from the final group models (read back from the
    # run's checkpoint: a second run_single resumes and trains nothing): worker n's model is
    # the uniform mean of its groups' models (Eq. 1), scored by a forward pass and a NumPy
    # argmax on n's own test examples, averaged over the workers that have some. Wrong
    # implementation caught: an evaluation of another worker's or group's model, of the
    # training examples, or a mean that counts empty workers.
    from jaxfl import models, vmapped_runs
    from jaxfl.algorithms import dp_ogl

    cfg = config_lib.load_config(f"{CFG}/fig3.py:curve=plus_ri4_s2,variant=smoke,mode=paper")
    spec = builders.run_spec(cfg)
    groups = spec.algorithm.params_of(vmapped_runs.run_single(spec, tmp_path).state)
    t = papers_dp_ogl.task(cfg)
    test, counts = t.test, t.info["label_counts"]
    weights = dp_ogl.personalization_weights(papers_dp_ogl.group_structure(cfg, counts))
    model = models.get_model(cfg.model, num_classes=10, input_shape=(28, 28, 1),
                             hidden=tuple(cfg.model_hidden))
    accs = []
    for n, w in enumerate(weights):
        keep = np.asarray(test.mask[n], bool)
        if not keep.any():
            continue
        phi = jax.tree.map(lambda t, w=w: np.tensordot(w, np.asarray(t), axes=1), groups)
        logits = np.asarray(model.apply(phi, np.asarray(test.x[n])[keep]))
        accs.append(np.mean(np.argmax(logits, -1) == np.asarray(test.y[n])[keep]))
    assert recs[-1]["test_accuracy"] == pytest.approx(np.mean(accs), abs=1e-5)
    assert np.isfinite(recs[-1]["train_loss"])
    assert summary["privacy"]["sound"] is False and "privacy_strict" not in summary
    # t = 3: DP-OGL+ (S=2) has no out-of-group leakage before t = 4
    assert summary["privacy"]["details"]["mean"] == 0.0


def test_reproduce_driver_claims_without_training(mnist, tmp_path, monkeypatch):
    del mnist
    from experiments.reproduce import dp_ogl as repro
    drawn = {}
    save = repro._figures.save

    def keep(fig, path, **kw):  # the heatmaps' images, read before the figure is closed
        drawn[Path(path).name] = [(ax.get_title(), [np.ma.filled(im.get_array(), np.nan)
                                                    for im in ax.get_images()])
                                  for ax in fig.axes]
        save(fig, path, **kw)

    monkeypatch.setattr(repro._figures, "save", keep)
    from experiments.reproduce.__main__ import main

    data = tmp_path / "data"
    assert main(["dp_ogl", "--figure", "fig4", "--scale", "smoke", "--workdir", str(tmp_path),
                 "--data", str(data)]) == 0
    numbers = json.loads((data / repro.FIG4_JSON).read_text())
    assert set(numbers["provenance"]) == set(repro._runs.PROVENANCE_FIELDS)
    rows = repro.context(declare.Inputs(data))["fig4_rows"]
    by = {r["claim"]: r for r in rows}
    assert by["CL heatmap: GL's worst case plus exact-zero cross-cluster blocks"]["holds"]
    heat = next(r for r in rows if r["claim"].startswith("DP-OGL+ heatmap cells"))
    assert heat["holds"] is False  # (ε, δ) ratio ~0.24, not 1/S = 0.1
    # The exported numbers are those of the runs' reports; each heatmap panel draws its
    # curve's per-pair epsilon of privacy_paper.json, exact zeros in the black overlay (wrong
    # implementation caught: a panel of another curve or of the strict recipe, a stale file).
    assert numbers["gl_max"] == json.loads((tmp_path / "fig4" / "privacy_paper.json")
                                           .read_text())["heatmaps"]["b"]["stats"]["max"]
    heat = json.loads((tmp_path / "fig4" / "privacy_paper.json").read_text())["heatmaps"]
    panels = [(t, ims) for t, ims in drawn["fig4_heatmaps.png"] if ims]
    assert [t for t, _ in panels] == [f"({p}) {repro.LABELS[h['curve']]}"
                                      for p, h in heat.items()]
    for (_, (image, zeros)), h in zip(panels, heat.values(), strict=True):
        eps = np.asarray(h["epsilon"], dtype=float)
        np.testing.assert_array_equal(image, eps)
        np.testing.assert_array_equal(np.isfinite(zeros), eps == 0)
    assert dataclasses.is_dataclass(_common.make_privacy_config("gl"))
