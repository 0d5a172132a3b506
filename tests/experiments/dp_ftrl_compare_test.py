"""The DP-FedAvg vs DP-FTRL comparison: its smoke sweep runs with every point calibrated to its
target epsilon by its own accountant, and the reproduction script renders the table."""

import csv
import json
from pathlib import Path

import pytest

pytest.importorskip("jax_privacy")

from experiments import builders  # noqa: E402
from experiments import config as config_lib  # noqa: E402
from experiments import sweep as sweep_cli  # noqa: E402
from experiments.reproduce import dp_ftrl as reproduce  # noqa: E402
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
def test_smoke_sweep_points_are_calibrated_to_their_targets(tmp_path):
    require_data()
    res = sweep_cli.main(["--config", f"{CONFIG}:variant=smoke", "--workdir", str(tmp_path)])
    assert not res.stopped and len(res.finished) == 2
    rows = reproduce.per_seed(tmp_path)
    assert {r["method"] for r in rows} == {"dpfedavg", "bandmf"} and len(rows) == 2
    for r in rows:
        assert r["epsilon"] <= r["target_epsilon"]
        assert r["epsilon"] >= 0.98 * r["target_epsilon"], r
    summaries = {r["method"]: json.loads((tmp_path / "points" / r["point_id"] /
                                          "summary.json").read_text()) for r in rows}
    assert summaries["dpfedavg"]["info"]["sampling_rate"] == pytest.approx(5 / 20)
    assert summaries["bandmf"]["privacy"]["details"]["count_noise"] == 5.0
    out = reproduce.export(tmp_path, tmp_path / "t.csv")
    assert len(out) == 2 and "DP-FTRL BandMF" in reproduce.from_data(tmp_path / "t.csv")


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


def _fixture(workdir: Path, accuracies: dict, *, epsilon=1.99, unfinished=()):
    """A tiny sweep workdir: results.csv plus each point's summary.json / config.json."""
    (workdir / "points").mkdir(parents=True)
    header = ["point", "point_id", "method", "target_epsilon", "adaptive_clip", "seed", "round",
              "test_accuracy", "epsilon"]
    rows, points = [], []
    for i, ((method, seed), acc) in enumerate(sorted(accuracies.items())):
        pid = f"p{i:02d}"
        points.append({"index": i, "id": pid})
        for rnd, a in ((1, 0.1), (4, acc)):
            rows.append([i, pid, method, 2.0, False, seed, rnd, a, epsilon])
        done = 2 if pid in unfinished else 4
        pdir = workdir / "points" / pid
        pdir.mkdir()
        (pdir / "summary.json").write_text(json.dumps({
            "rounds": 4, "rounds_completed": done,
            "privacy": {"epsilon": epsilon, "accountant": "pld"},
            "info": {"noise_multiplier": 1.25, "clip_norm": 0.5}, "final": {}}))
        (pdir / "config.json").write_text(json.dumps({"config": {
            "dataset": "mnist", "model": "logreg", "num_clients": 20, "partition": "dirichlet",
            "alpha": 0.5, "clients_per_round": 5, "rounds": 4, "local_steps": 2,
            "batch_size": 32, "client_lr": 0.2, "clip_norm": 0.5, "target_quantile": 0.5,
            "clip_lr": 0.2, "count_noise": 5.0, "delta": 1e-5}}))
    with (workdir / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    (workdir / "sweep.json").write_text(json.dumps({"points": points + [{"index": 99,
                                                                          "id": "missing"}]}))


def test_reproduce_renders_table_and_verdicts_from_a_fixture(tmp_path):
    accs = {("bandmf", s): 0.90 + 0.001 * s for s in range(3)}
    accs |= {("dpfedavg", s): 0.80 + 0.001 * s for s in range(3)}
    accs |= {("tree", s): a for s, a in enumerate((0.70, 0.95, 0.85))}
    _fixture(tmp_path / "sweep", accs, unfinished=("p08",))
    csv_path, md_path = tmp_path / "out" / "c.csv", tmp_path / "out" / "r.md"
    reproduce.export(tmp_path / "sweep", csv_path)
    md_path.write_text(reproduce.from_data(csv_path))
    table = reproduce.summarize(reproduce.read(csv_path))
    by = {r["method"]: r for r in table}
    assert by["bandmf"]["n"] == 3 and by["tree"]["n"] == 2  # p08 (tree seed 2) unfinished
    assert by["bandmf"]["mean"] == pytest.approx(0.901)
    half = 4.302652729911275 * 0.001 / 3 ** 0.5  # t_{0.975, 2} * sd / sqrt(n), sd = 0.001
    assert by["bandmf"]["hi"] - by["bandmf"]["mean"] == pytest.approx(half, rel=1e-6)
    v = {c["claim"]: c["verdict"] for c in reproduce.comparisons(table)}
    assert v["DP-FTRL BandMF beats DP-FedAvg (Poisson)"] == "holds"
    assert v["DP-FTRL BandMF beats DP-FTRL tree"].startswith("inconclusive")
    assert v["DP-FTRL tree beats DP-FedAvg (Poisson)"].startswith("inconclusive")
    swapped = reproduce.comparisons([dict(r, accuracies={s: 1.7 - a for s, a in r[
        "accuracies"].items()}) for r in table])  # every order reversed
    assert {c["claim"]: c["verdict"] for c in swapped}[
        "DP-FTRL BandMF beats DP-FedAvg (Poisson)"].startswith("does not hold")
    md = md_path.read_text()
    assert "Partial: 8 of 10 runs finished" in md
    assert "| DP-FTRL BandMF beats DP-FedAvg (Poisson) | 2 | off | 0.9010 | 0.8010 | holds |" in md
    with csv_path.open() as f:
        per_seed = list(csv.DictReader(f))
    from experiments.reproduce import _common

    assert len(per_seed) == 8  # the columns, and the exporter's provenance block
    assert set(per_seed[0]) == set(reproduce.COLUMNS) | set(_common.PROVENANCE_FIELDS)


def test_reproduce_refuses_an_epsilon_above_the_target(tmp_path):
    _fixture(tmp_path, {("bandmf", 0): 0.9, ("bandmf", 1): 0.91}, epsilon=2.01)
    with pytest.raises(ValueError, match="above its target"):
        reproduce.export(tmp_path, tmp_path / "c.csv")
    assert not (tmp_path / "c.csv").exists()  # refused before anything is written
    with pytest.raises(FileNotFoundError, match="run the sweep"):
        reproduce.export(tmp_path / "nowhere")
