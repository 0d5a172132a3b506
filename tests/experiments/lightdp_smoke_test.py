"""LightDP-FL experiment configs, builder and reproduction driver (smoke variants, real MNIST)."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from experiments import config as config_lib
from experiments.configs.lightdp import cifar10_resnet18, fashion_mnist_cnn, mnist_cnn
from experiments.papers import lightdp as papers_lightdp
from jaxfl import builders
from jaxfl.accounting import lightdp as acct
from jaxfl.tasks import images
from tests.conftest import require_data

CONFIGS = [cifar10_resnet18, mnist_cnn, fashion_mnist_cnn]
MNIST = "mnist/train-images-idx3-ubyte.gz"


def _full(module):
    return "full" if module is cifar10_resnet18 else "cpu"


@pytest.mark.parametrize("module", CONFIGS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_configs_parse_and_designs_exist(module):
    for variant in ("smoke", _full(module)):
        cfg = module.get_config(f"variant={variant},epsilon=6")
        assert cfg.epsilon == 6.0 and cfg.variant == variant
        d = papers_lightdp.noise_design(cfg)
        assert d.mode == "strict" and acct.accountant(d).report(cfg.rounds, cfg.delta).epsilon \
            <= 6.0 + 1e-9
    sweep = module.get_sweep()
    names = [r["name"] for r in sweep]
    assert len(names) == len(set(names)) == 12 + 12 + 6 + 2
    assert module.get_sweep(f"variant={_full(module)}") == sweep
    full = module.get_config("variant=" + _full(module))
    for row in sweep:  # every cell has a valid noise design at full / cpu scale
        cfg = config_lib.apply_overrides(full, {k: v for k, v in row.items() if k != "name"})
        if papers_lightdp.design_scheme(cfg) == "smpc_dp" and cfg.num_clients \
                - cfg.max_colluders - cfg.max_stragglers <= 0:
            continue
        assert papers_lightdp.noise_design(cfg).sigma_u > 0


@pytest.mark.parametrize("module", CONFIGS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_smoke_sweeps_are_small_and_vmappable(module):
    """>= 2 points differing only in the seed: one vmapped batch."""
    rows = module.get_sweep("variant=smoke")
    assert len(rows) >= 2 and all(set(r) == {"seed"} for r in rows)


@pytest.mark.parametrize("module", CONFIGS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_configs_are_data(module):
    """Fields, validation and the builder's name; no methods (build/run/privacy/...)."""
    cfg = module.get_config("variant=smoke")
    assert type(cfg).builder == "experiments.papers.lightdp:run_spec"
    assert builders.builder_of(cfg) is papers_lightdp.run_spec
    # ``check`` is the family's cross-field validation hook (experiments.configs.base)
    own = {k for k, v in vars(type(cfg)).items() if callable(v) and not k.startswith("__")}
    assert own <= {"check"}, own
    with pytest.raises(ValueError):
        dataclasses.replace(cfg, scheme="secagg")
    with pytest.raises(ValueError):
        dataclasses.replace(cfg, batch_size=cfg.examples_per_client + 1)


def test_full_scale_config_is_the_papers_setting():
    cfg = cifar10_resnet18.get_config()
    assert (cfg.num_clients, cfg.rounds, cfg.batch_size, cfg.client_lr) == (50, 150, 32, 0.05)
    assert cfg.model == "resnet18_gn" and papers_lightdp.local_steps(cfg) == 31
    assert papers_lightdp.sensitivity(cfg) == pytest.approx(2 * cfg.clip_norm / 1000)
    assert cfg.client_map is None  # the library chooses the execution layout


def test_get_config_overrides_and_bad_input():
    cfg = mnist_cnn.get_config("variant=smoke,epsilon=3,mode=paper,test_examples=none")
    assert (cfg.epsilon, cfg.mode, cfg.test_examples, cfg.variant) == (3.0, "paper", None, "smoke")
    cfg = config_lib.apply_overrides(cfg, ["max_colluders=4", "stragglers=bernoulli"])
    assert cfg.max_colluders == 4 and cfg.stragglers == "bernoulli"
    with pytest.raises(ValueError, match="epsilonn"):
        mnist_cnn.get_config("epsilonn=3")
    with pytest.raises(ValueError, match="variant"):
        mnist_cnn.get_config("variant=huge")


def test_missing_cifar10_names_the_files(monkeypatch, tmp_path):
    from jaxfl import validate

    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    images.standardized_arrays.cache_clear()
    with pytest.raises(validate.DataNotFoundError, match="data_batch_1"):
        builders.run_spec(cifar10_resnet18.get_config("variant=smoke"))
    images.standardized_arrays.cache_clear()


def test_mnist_smoke_run_learns_and_accounts(tmp_path):
    require_data(MNIST)
    from jaxfl import vmapped_runs

    cfg = mnist_cnn.get_config("variant=smoke,rounds=3")
    spec = builders.run_spec(cfg)
    result = vmapped_runs.run_single(spec, tmp_path / "run")
    summary = result.summary
    hist = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [h["round"] for h in hist] == [1, 2, 3]
    # The logged accuracy is the final model's on the configured test examples, recomputed
    # here by one plain forward pass and a NumPy argmax (wrong implementation caught: an
    # evaluation of the initial parameters, of other examples, or a mis-scaled mean).
    _, _, xte, yte = images.standardized_arrays(cfg.dataset, cfg.image_pool)
    sel = images.test_subset(len(xte), cfg.test_examples, cfg.seed)
    model = images.cached_model(cfg.model, cfg.model_kwargs)
    logits = np.asarray(model.apply(spec.algorithm.params_of(result.state), xte[sel]))
    want = float(np.mean(np.argmax(logits, -1) == np.asarray(yte)[sel]))
    assert hist[-1]["test_accuracy"] == pytest.approx(want, abs=0.5 / len(sel))
    assert summary["final"]["test_accuracy"] == hist[-1]["test_accuracy"]
    design = papers_lightdp.noise_design(cfg)
    want = acct.accountant(design).report(3, cfg.delta)
    assert summary["epsilon"] == pytest.approx(want.epsilon, rel=1e-12)
    assert summary["epsilon"] <= cfg.epsilon + 1e-9
    assert [h["epsilon"] for h in hist] == pytest.approx(
        list(acct.accountant(design).epsilons([1, 2, 3], cfg.delta)), rel=1e-12)
    p, pp = summary["privacy"], summary["privacy_paper"]
    assert (p["mode"], p["sound"], p["unit"]) == ("strict", True, "client")
    assert (pp["mode"], pp["sound"]) == ("paper", False)
    assert pp["epsilon"] == pytest.approx(cfg.epsilon, rel=1e-9)  # the nominal target
    assert p["details"]["sigma_u"] == pytest.approx(design.sigma_u)
    frozen = json.loads((tmp_path / "run" / "config.json").read_text())
    assert frozen["config"]["epsilon"] == cfg.epsilon and frozen["config"]["variant"] == "smoke"


@pytest.mark.slow
def test_cifar10_smoke_builds_and_runs_on_stand_in_arrays(tmp_path, monkeypatch):
    """The ResNet-18 wiring on random CIFAR-shaped arrays (the real pickles may be absent)."""
    rng = np.random.default_rng(0)
    fake = (rng.normal(size=(200, 32, 32, 3)).astype(np.float32),
            np.tile(np.arange(10, dtype=np.int32), 20),
            rng.normal(size=(64, 32, 32, 3)).astype(np.float32),
            np.tile(np.arange(10, dtype=np.int32), 7)[:64])
    monkeypatch.setattr(images, "standardized_arrays", lambda dataset, pool=1: fake)
    cfg = cifar10_resnet18.get_config("variant=smoke,rounds=1")
    spec = builders.run_spec(cfg)
    assert spec.algorithm.accountant.num_clients == 6
    summary = builders.run(cfg, tmp_path)
    assert summary["privacy"]["sound"] and summary["epsilon"] <= cfg.epsilon


@pytest.mark.slow
def test_reproduction_driver_smoke(tmp_path, monkeypatch):
    require_data(MNIST)
    from experiments.reproduce import lightdp as repro

    drawn = {}
    save = repro._figures.save

    def keep(fig, path, **kw):  # the figures' plotted data, read before they are closed
        drawn[Path(path).name] = [{ln.get_label(): (ln.get_xdata(), ln.get_ydata())
                                   for ln in ax.get_lines()} for ax in fig.axes]
        save(fig, path, **kw)

    monkeypatch.setattr(repro._figures, "save", keep)
    from experiments.reproduce import lightdp as lightdp_report
    from experiments.reproduce.__main__ import main

    def run(*figures):
        assert main(["lightdp", "--scale", "smoke", *(f"--figure={f}" for f in figures),
                     "--workdir", str(tmp_path), "--data", str(tmp_path),
                     "--figures", str(tmp_path / "figures")]) == 0
        rows, meta = lightdp_report.read_data(tmp_path)
        acc = lightdp_report.accuracies(rows)
        return {"final_accuracy": {n: float(np.mean(list(v.values()))) for n, v in acc.items()},
                "costs": meta["costs"], "fig4": meta["fig4"]}

    out = run("table2", "table3", "fig3", "fig4")
    doc = (tmp_path / "lightdp.md").read_text()
    assert "<!-- BEGIN GENERATED: lightdp -->" in doc and "Fig. 3" in doc and "Claims" in doc
    # The tables ran over their own seeds into their own CSV (every smoke cell, 2 seeds).
    tables = lightdp_report.read_data(tmp_path, lightdp_report.TABLES_CSV)[0]
    want = {c.name for t in ("table2", "table3") for c in lightdp_report.configs("smoke", t)}
    assert {r["name"] for r in tables} == want and len(tables) == 2 * len(want)
    assert "<!-- BEGIN GENERATED: lightdp_tables_seeds -->" in doc and "over 2 seeds" in doc
    import experiments.reproduce  # noqa: F401  (registers the papers)
    from jaxfl.repro import declare

    committed = (declare.DATA / lightdp_report.TABLES_CSV).read_text().splitlines()[0]
    for name in (lightdp_report.SEEDS_CSV, lightdp_report.TABLES_CSV):  # the committed columns
        assert (tmp_path / name).read_text().splitlines()[0] == committed, name
    # The figures draw the runs' numbers: each Fig. 3 curve ends at its runs' mean final
    # accuracy (in %), and Fig. 4 draws the modelled time (rounds x round seconds, in h)
    # against the accuracy the driver returns (wrong implementation caught: a curve of
    # another run or scheme, a missing x100 or an unscaled time axis).
    assert {p.name for p in (tmp_path / "figures").glob("*.png")} == {"fig3.png", "fig4.png"}
    final = out["final_accuracy"]
    (fig3,) = drawn["fig3.png"]
    for label, name in (("LightDP-FL", "table2_eps3_C10"), ("LDP", "fig3_eps3_ldp"),
                        ("SMPC+DP", "fig3_eps3_smpc_dp")):
        assert fig3[label][1][-1] == pytest.approx(final[name], rel=1e-6), label  # in %
    (fig4,) = drawn["fig4.png"]
    for label, scheme in (("LightDP-FL", "lightdp"), ("HE+DP", "he_dp")):
        c = out["fig4"][scheme]
        np.testing.assert_allclose(fig4[label][1], c["accuracy"], rtol=1e-12)
        np.testing.assert_allclose(fig4[label][0], np.asarray(c["rounds"]) * c["round_seconds"]
                                   / 3600, rtol=1e-12)
    # The SecAgg verdict comes from the dropout-recovery model at the run's N (a driver that
    # decides it on the every-link reading, or on another N, fails here).
    from jaxfl.algorithms import lightdp_cost

    n = repro.base_config("smoke").num_clients
    assert out["costs"]["secagg_recovery_success_rate"] == lightdp_cost.secagg_success_rate(
        n, 0.05, rounds=200, seed=0, recovery_threshold=lightdp_cost.SECAGG_THRESHOLD)
    verdict = ("does not hold (with dropout recovery)"
               if out["costs"]["secagg_recovery_success_rate"] > 0.5 else "holds")
    assert f"| SecAgg cannot train with 5% link failures | {verdict} | rounds recovered " in doc
    assert np.isfinite(out["fig4"]["lightdp"]["round_seconds"])
    # Resume: a second call reads the finished runs instead of training again.
    again = run("fig3")
    assert again["final_accuracy"] == {k: v for k, v in out["final_accuracy"].items()
                                       if not k.startswith("fig4")}
