"""The DP-FedAvg vs DP-FTRL comparison: its smoke run has every point calibrated to its target
epsilon by its own accountant, and the declaration exports the per-seed data and renders the
table from it."""

import csv
import json
from pathlib import Path

import pytest

pytest.importorskip("jax_privacy")

from experiments import config as config_lib  # noqa: E402
from experiments.reproduce import __main__ as entry  # noqa: E402
from experiments.reproduce import dp_ftrl as reproduce  # noqa: E402
from jaxfl import builders  # noqa: E402
from jaxfl.repro import declare  # noqa: E402
from jaxfl.repro import runs as _runs  # noqa: E402
from tests.conftest import require_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "experiments" / "configs" / "dp_ftrl" / "compare.py"


def test_full_sweep_is_the_issue_table():
    module = config_lib.load_module(str(CONFIG))
    points = module.get_sweep("variant=cpu")
    keys = {(p["method"], p["target_epsilon"], p["adaptive_clip"], p["seed"]) for p in points}
    assert len(keys) == len(points) == 3 * 2 * 2 * 3
    assert {k[0] for k in keys} == {"dpfedavg", "bandmf", "tree"}
    assert {k[1] for k in keys} == {2.0, 8.0}
    cfg = module.get_config("variant=cpu")
    assert (cfg.num_clients, cfg.clients_per_round, cfg.delta) == (1000, 100, 1e-5)
    with pytest.raises(ValueError, match="method"):
        config_lib.apply_overrides(cfg, {"method": "dpsgd"})


@pytest.mark.slow
def test_smoke_run_calibrates_every_point_and_renders_the_page(tmp_path):
    """The entry point's smoke run: both points finish at their target epsilon (within 2%,
    never above), the per-seed CSV has its columns, and the page beside it names both methods."""
    require_data()
    data = tmp_path / "data"
    assert entry.main(["dp_ftrl", "--scale", "smoke", "--workdir", str(tmp_path),
                       "--data", str(data)]) == 0
    rows = _runs.read_rows(data / reproduce.CSV, types=reproduce.COLUMNS)
    assert [(r["method"], r["seed"]) for r in rows] == [("dpfedavg", 0), ("bandmf", 1)]
    for r in rows:
        assert 0.98 * r["target_epsilon"] <= r["epsilon"] <= r["target_epsilon"], r
    summaries = {r["method"]: json.loads((tmp_path / "compare" / "points" / r["point_id"] /
                                          "summary.json").read_text()) for r in rows}
    assert summaries["dpfedavg"]["info"]["sampling_rate"] == pytest.approx(5 / 20)
    assert summaries["bandmf"]["privacy"]["details"]["count_noise"] == 5.0
    with (data / reproduce.CSV).open() as f:
        assert list(csv.DictReader(f).fieldnames) == [*reproduce.COLUMNS,
                                                      *_runs.PROVENANCE_FIELDS]
    page = (data / "dp_ftrl.md").read_text()
    assert "| DP-FTRL BandMF | 8 | on | " in page and "20 clients (dirichlet" in page


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dpfedavg", "tree"])
def test_builder_calibrates_the_methods_own_accountant(method):
    """No training: the built algorithm's report gives the target (within 2%, never above) for
    the plain and adaptive variants."""
    require_data()
    base = config_lib.load_module(str(CONFIG)).get_config("variant=smoke")
    sigmas = {}
    for adaptive in (False, True):
        cfg = config_lib.apply_overrides(base, {"method": method, "target_epsilon": 2.0,
                                                "adaptive_clip": adaptive})
        alg = builders.run_spec(cfg).algorithm
        eps = alg.accountant.report(cfg.rounds, cfg.delta).epsilon
        assert 0.98 * 2.0 <= eps <= 2.0
        sigmas[adaptive] = alg.info["noise_multiplier"]
    assert sigmas[True] > sigmas[False]  # the counts cost budget: more update noise


def _fixture(workdir: Path, accuracies: dict, *, epsilon=1.99, unfinished=(), unevaluated=(),
             planned=()):
    """A run of the compare figure without training: one point per key of ``accuracies``
    ((method, seed): target epsilon 2, no adaptive clipping; or (method, epsilon, adaptive,
    seed)) with its summary.json (noise multiplier 1.25, BandMF's seed 2: 1.5; ``unfinished``:
    stopped at round 2 of 4; ``unevaluated``: its last round without a test accuracy), then
    the configs ``planned`` that never ran."""
    base = config_lib.load_module(str(CONFIG)).get_config("variant=smoke")
    ran = {(k[0], 2.0, False, k[1]) if len(k) == 2 else k: a for k, a in accuracies.items()}
    order = sorted(ran, key=lambda k: (reproduce.METHODS.index(k[0]), *k[1:]))  # the sweep's
    keys = order + list(planned)
    configs = [config_lib.apply_overrides(base, dict(zip(
        ("method", "target_epsilon", "adaptive_clip", "seed"), k))) for k in keys]
    dirs = [workdir / "points" / f"p{i:02d}" for i in range(len(keys))]
    for key, d in zip(order, dirs, strict=False):
        d.mkdir(parents=True)
        done = 2 if d.name in unfinished else 4
        final = {"round": done} | ({} if d.name in unevaluated else {"test_accuracy": ran[key]})
        (d / "summary.json").write_text(json.dumps({
            "rounds": 4, "rounds_completed": done, "final": final,
            "privacy": {"epsilon": epsilon, "accountant": "pld"},
            "info": {"noise_multiplier": 1.5 if key == ("bandmf", 2.0, False, 2) else 1.25,
                     "clip_norm": 0.5}}))
    return declare.Run(None, "smoke", configs, dirs, workdir, workdir / "data", workdir)


def test_reproduce_renders_table_and_verdicts_from_a_fixture(tmp_path):
    accs = {("bandmf", s): 0.90 + 0.001 * s for s in range(3)}
    accs |= {("dpfedavg", s): 0.80 + 0.001 * s for s in range(3)}
    accs |= {("tree", s): a for s, a in enumerate((0.70, 0.95, 0.85))}
    accs[("dpfedavg", 2.0, True, 0)] = 0.85  # its cell's claims have one cell that ran
    run = _fixture(tmp_path, accs, unfinished=("p09",), planned=[("bandmf", 2.0, True, 0)])
    assert len(reproduce.export(run)) == 9
    md = reproduce.PAPER.pages[0].render(declare.Inputs(run.data), "")
    # a cell's interval is the t-interval over its finished seeds: t_{0.975, 2} * 0.001 / sqrt(3)
    # = 0.0025 either side of BandMF's mean; p09 (tree seed 2) unfinished: two tree seeds
    assert "| DP-FTRL tree | 2 | off | 0.8250 | [-0.7633, 2.4133] | 2 | 1.9900 | 1.2500 |" in md
    meta = json.loads((run.data / reproduce.META).read_text())
    rows = _runs.read_rows(run.data / reproduce.CSV, reproduce.COLUMNS)
    swapped = reproduce.render(meta, [dict(r, test_accuracy=1.7 - r["test_accuracy"])
                                      for r in rows])  # every order reversed
    assert ("| DP-FTRL BandMF beats DP-FedAvg (Poisson) | 2 | off | 0.7990 | 0.8990 | does not "
            "hold |") in swapped
    assert "Partial: 9 of 11 runs finished" in md
    assert ("| DP-FTRL BandMF | 2 | off | 0.9010 | [0.8985, 0.9035] | 3 | 1.9900 | 1.2500, 1.5000 |"
            in md)
    assert "| DP-FTRL BandMF | 2 | on | not run yet | | 0 | | |" in md
    assert "| DP-FTRL BandMF beats DP-FedAvg (Poisson) | 2 | off | 0.9010 | 0.8010 | holds |" in md
    # the page's verdict is the interval rule, not the paired test's
    assert ("| DP-FTRL BandMF beats DP-FTRL tree | 2 | off | 0.9010 | 0.8250 | inconclusive at "
            "this scale (intervals overlap) |") in md
    assert ("| DP-FTRL tree beats DP-FedAvg (Poisson) | 2 | off | 0.8250 | 0.8010 | inconclusive "
            "at this scale (intervals overlap) |") in md
    assert "| DP-FTRL tree beats DP-FedAvg (Poisson) | 2 | on | - | 0.8500 | not run |" in md
    assert "Scale: mnist, model logreg, 20 clients (dirichlet label skew, alpha=0.5), 5 clients " \
           "per round (DP-FedAvg: Poisson rate 0.25; DP-FTRL: 4 cyclic groups), 4 rounds" in md
    with (run.data / reproduce.CSV).open() as f:
        per_seed = list(csv.DictReader(f))
    assert [(r["method"], r["adaptive_clip"], r["seed"]) for r in per_seed] == [
        ("dpfedavg", "False", "0"), ("dpfedavg", "False", "1"), ("dpfedavg", "False", "2"),
        ("dpfedavg", "True", "0"), *[("bandmf", "False", str(s)) for s in range(3)],
        ("tree", "False", "0"), ("tree", "False", "1")]
    assert list(per_seed[0]) == [*reproduce.COLUMNS, *_runs.PROVENANCE_FIELDS]
    assert set(meta["provenance"]) == set(_runs.PROVENANCE_FIELDS)
    assert meta["planned"][-1] == ["bandmf", 2.0, True, 0] and len(meta["planned"]) == 11
    assert meta["scale"]["num_clients"] == 20 and set(meta["scale"]) == set(reproduce.SCALE_KEYS)


def test_reproduce_refuses_an_epsilon_above_the_target(tmp_path):
    run = _fixture(tmp_path, {("bandmf", 0): 0.9, ("bandmf", 1): 0.91}, epsilon=2.01)
    with pytest.raises(ValueError, match="above its target"):
        reproduce.export(run)
    assert not run.data.exists()  # refused before anything is written


def test_a_run_with_no_finished_point_says_so(tmp_path):
    """Points without a summary.json, stopped early or without a test accuracy at their last
    round are left out; the page names no scale and every planned cell 'not run yet'."""
    run = _fixture(tmp_path, {("tree", 0): 0.9, ("tree", 1): 0.9}, unfinished=("p00",),
                   unevaluated=("p01",), planned=[("dpfedavg", 8.0, True, 1)])
    assert reproduce.export(run) == []
    md = reproduce.PAPER.pages[0].render(declare.Inputs(run.data), "")
    assert "Scale: no finished point." in md and "Partial: 0 of 3 runs finished" in md
    assert "| DP-FedAvg (Poisson) | 8 | on | not run yet | | 0 | | |" in md
    assert "| DP-FTRL tree | 2 | off | not run yet | | 0 | | |" in md
