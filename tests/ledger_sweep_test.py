"""The privacy ledger in sweeps (issue 35): a budget stops each vmapped point where it would stop
alone, and a sweep rerun with another config is refused, finished or not."""

import json

import pytest

from jaxfl import ledger, sweep
from jaxfl.accounting import accountants
from tests import _sweep_toy as toy
from tests import _toy

POINTS = [{"noise_multiplier": 1.0}, {"noise_multiplier": 3.0}]


def test_max_epsilon_stops_each_vmapped_point_like_a_single_run(tmp_path):
    base = toy.ToyConfig(rounds=6, final_accountant="pld")
    points = sweep.expand(base, POINTS)
    step = toy.build(points[0].config).algorithm.accountant.round_event
    curve = accountants.epsilon_curve(step, [2, 3], 1e-5)
    budget = float(curve.mean())  # sigma 1 stops after 2 rounds; sigma 3 runs all 6
    res = sweep.run_sweep(points, toy.build, tmp_path / "sweep", progress=False,
                          max_epsilon=budget)
    assert res.groups == [[0, 1]] and not res.stopped
    done = []
    for p in points:
        pdir = tmp_path / "sweep" / "points" / p.id
        summary = json.loads((pdir / "summary.json").read_text())
        single = sweep.run_single(toy.build(p.config), tmp_path / "single" / p.id,
                                  progress=False, max_epsilon=budget)
        ref = json.loads((tmp_path / "single" / p.id / "summary.json").read_text())
        toy.float_close(summary, ref)
        assert summary["epsilon"] <= budget
        done.append((summary["rounds_completed"], summary.get("stopped")))
        assert single.summary["rounds_completed"] == summary["rounds_completed"]
    assert done == [(2, "max_epsilon"), (6, None)]


def test_sweep_resume_with_other_data_under_the_same_config_is_refused(tmp_path, monkeypatch):
    points = sweep.expand(toy.ToyConfig(rounds=4), POINTS)
    res = sweep.run_sweep(points, toy.build, tmp_path, progress=False, stop_after=2)
    assert res.stopped
    other = _toy.blobs(num_clients=8, dim=5, classes=3, seed=12)
    monkeypatch.setattr(toy, "_data", lambda n: (other, None))
    with pytest.raises(ledger.ResumeMismatchError, match="data"):
        sweep.run_sweep(points, toy.build, tmp_path, progress=False)
    monkeypatch.undo()
    res = sweep.run_sweep(points, toy.build, tmp_path, progress=False)  # unchanged: resumes
    assert len(res.finished) == 2


def test_sweep_workdir_is_locked_and_must_not_be_empty(tmp_path):
    points = sweep.expand(toy.ToyConfig(rounds=1), POINTS[:1])
    with ledger.WorkdirLock(tmp_path):
        with pytest.raises(ledger.WorkdirLockedError):
            sweep.run_sweep(points, toy.build, tmp_path, progress=False)
    with pytest.raises(Exception, match="non-empty sweep workdir"):
        sweep.run_sweep(points, toy.build, "", progress=False)


def test_sweep_point_rerun_elsewhere_is_refused_or_charged_with_fresh_noise(tmp_path):
    points = sweep.expand(toy.ToyConfig(rounds=4), POINTS)
    sweep.run_sweep(points, toy.build, tmp_path, progress=False, stop_after=3)
    for p in points:  # the newest checkpoint lost: round 3 is logged but must run again
        pdir = tmp_path / "points" / p.id
        for f in (pdir / "checkpoints").glob("ckpt_00000003*"):
            f.unlink()
        book = json.loads((pdir / ledger.LEDGER).read_text())
        book["platform"]["jax"] = "0.0.1"  # released on another platform
        (pdir / ledger.LEDGER).write_text(json.dumps(book))
    with pytest.raises(ledger.ResumeMismatchError, match="rounds 3-3 .*jax"):
        sweep.run_sweep(points, toy.build, tmp_path, progress=False)
    res = sweep.run_sweep(points, toy.build, tmp_path, progress=False, allow_change=True)
    assert len(res.finished) == 2
    for p in points:
        book = json.loads((tmp_path / "points" / p.id / ledger.LEDGER).read_text())
        assert book["generation"] == 1 and book["rounds_charged"] == 5
        assert [(s["start"], s["end"]) for s in book["segments"]] == [(0, 3), (2, 4)]
