"""Sweeps: vmapped points equal single runs; grouping, chunking, resume and the table."""

import csv
import dataclasses
import types

import jax
import numpy as np
import pytest

from jaxfl import checkpoint, layout, metrics, sweep, validate
from jaxfl.algorithms import base
from tests import _sweep_toy as toy

# Seeds, noise multiplier, clip norm, learning rates and sampling rate all vary in one batch.
POINTS = [dict(seed=0), dict(seed=1, noise_multiplier=1.6, client_lr=0.1),
          dict(seed=2, clip_norm=0.2, sampling_rate=0.75)]



def _restore(directory, template):
    path, meta = checkpoint.latest(directory / "checkpoints")
    return meta["round"], checkpoint.restore(path, template)


def _table(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_vmapped_points_equal_single_runs(tmp_path):
    points = sweep.expand(toy.ToyConfig(rounds=3, final_accountant="pld"), POINTS)
    res = sweep.run_sweep(points, toy.build, tmp_path / "sweep", progress=False)
    assert res.groups == [[0, 1, 2]] and not res.stopped  # one vmapped batch
    for p in points:
        spec = toy.build(p.config)
        single = sweep.run_single(spec, tmp_path / "single" / p.id, progress=False)
        pdir = tmp_path / "sweep" / "points" / p.id
        toy.float_close(metrics.read_jsonl(pdir / "metrics.jsonl"), single.history)
        import json
        summary = json.loads((pdir / "summary.json").read_text())
        ref = json.loads((tmp_path / "single" / p.id / "summary.json").read_text())
        toy.float_close(summary, ref)  # same epsilon (rdp and pld), dp_event, info
        template = spec.algorithm.init(spec.params)
        r, state = _restore(pdir, template)
        assert r == 3
        for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(single.state), strict=True):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
        assert json.loads((pdir / "config.json").read_text())["config_hash"] == \
            metrics.config_hash(p.config)
    rows = _table(res.table)
    assert len(rows) == 9 and {r["point"] for r in rows} == {"0", "1", "2"}
    assert [r["noise_multiplier"] for r in rows if r["round"] == "3"] == ["1.0", "1.6", "1.0"]


@pytest.mark.slow
def test_shape_changing_parameters_run_as_separate_groups(tmp_path):
    cfg = toy.ToyConfig(rounds=2, algorithm="fedavg")
    points = sweep.expand(cfg, [dict(seed=0), dict(seed=1, client_lr=0.1),
                                dict(seed=0, num_clients=6), dict(seed=0, local_steps=1)])
    groups = sweep.plan(points, toy.build)
    assert sorted(sorted(p.index for p in g) for g in groups) == [[0, 1], [2], [3]]
    res = sweep.run_sweep(points, toy.build, tmp_path, progress=False)
    assert len(res.finished) == 4
    p = points[2]  # the sequential fallback is the single run itself
    single = sweep.run_single(toy.build(p.config), None, progress=False)
    got = metrics.read_jsonl(tmp_path / "points" / p.id / "metrics.jsonl")
    toy.float_close(got[-1], single.history[-1], rtol=0, atol=0)


def test_hparam_names_not_declared_by_the_algorithm_are_not_batched():
    # fedavg declares no clip_norm: points differing in it must not share a batch.
    points = sweep.expand(toy.ToyConfig(algorithm="fedavg"),
                          [dict(clip_norm=0.1), dict(clip_norm=0.2), dict(clip_norm=0.1, seed=3)])
    groups = sweep.plan(points, toy.build)
    assert sorted(sorted(p.index for p in g) for g in groups) == [[0, 2], [1]]
    only_seeds = sweep.plan(sweep.expand(toy.ToyConfig(), POINTS), toy.build,
                            vmappable=["seed"])
    assert len(only_seeds) == 3


def test_plan_batches_whatever_the_built_algorithm_declares():
    # No list of names: a hyperparameter named like no other (a ULDP-style global_lr, or a
    # brand-new one) is batched once the algorithm declares it, and only then.
    @dataclasses.dataclass(frozen=True)
    class Cfg:
        seed: int = 0
        global_lr: float = 1.0
        brand_new_rate: float = 0.1
        width: int = 2
        declares: tuple = ("global_lr", "brand_new_rate")

    built = []

    def build(c):
        built.append(c)
        alg = types.SimpleNamespace(hparams={k: getattr(c, k) for k in c.declares})
        return sweep.RunSpec(algorithm=alg, data=None, params=None, rounds=1, seed=c.seed)

    points = sweep.expand(Cfg(), [{"global_lr": 1.0}, {"global_lr": 3.0, "seed": 1},
                                  {"brand_new_rate": 0.2}, {"width": 3}, {"width": 3, "seed": 2}])
    groups = sweep.plan(points, build)
    assert sorted(sorted(p.index for p in g) for g in groups) == [[0, 1, 2], [3, 4]]
    assert len(built) == 2  # one build per group
    undeclared = sweep.expand(Cfg(declares=("global_lr",)), [{}, {"brand_new_rate": 0.2}])
    assert len(sweep.plan(undeclared, build)) == 2
    # finished points are not rebuilt and still join the group they match
    built.clear()
    groups = sweep.plan(points, build, pending={points[1].id, points[4].id})
    assert sorted(sorted(p.index for p in g) for g in groups) == [[0, 1, 2], [3, 4]]
    assert [c.seed for c in built] == [1, 2]


@pytest.mark.slow
def test_points_with_different_data(tmp_path):
    """Seed-dependent data: stacked along the sweep axis when shapes agree, else sequential.
    Rounds run in blocks of 2 (one scan) with cohorts of different capacities."""
    cfg = toy.ToyConfig(rounds=2, algorithm="fedavg", eval_every=2, sampling_rate=0.4)
    points = sweep.expand(cfg, [dict(seed=0), dict(seed=1, sampling_rate=0.6)])
    res = sweep.run_sweep(points, toy.build_seeded_data, tmp_path / "a", progress=False)
    assert res.groups == [[0, 1]]
    for p in points:
        single = sweep.run_single(toy.build_seeded_data(p.config), None, progress=False)
        toy.float_close(metrics.read_jsonl(tmp_path / "a" / "points" / p.id / "metrics.jsonl"),
                        single.history)
    ragged = lambda c: toy.build_seeded_data(c, ragged=True)
    res = sweep.run_sweep(points, ragged, tmp_path / "b", progress=False)
    assert res.groups == [[0], [1]] and len(res.finished) == 2


@pytest.mark.slow
def test_resume_equals_uninterrupted_and_finished_points_never_rerun(tmp_path):
    cfg = toy.ToyConfig(rounds=4, checkpoint_every=2)
    overrides = POINTS + [dict(seed=5, noise_multiplier=2.0)]
    points = sweep.expand(cfg, overrides)
    ref = sweep.run_sweep(points, toy.build, tmp_path / "ref", chunk_size=2, progress=False)
    assert ref.groups == [[0, 1], [2, 3]]

    work = tmp_path / "resumed"
    first = sweep.run_sweep(points[:2], toy.build, work, progress=False)
    assert not first.stopped
    built = []

    def counting_build(c):
        built.append(c.seed)
        return toy.build(c)

    killed = sweep.run_sweep(points, counting_build, work, chunk_size=2, stop_after=3,
                             progress=False)
    assert killed.stopped and killed.ran == [points[2].id, points[3].id]
    assert set(built) == {2, 5}  # finished points are neither rebuilt nor rerun
    assert not sweep.is_finished(work, points[2])
    assert len(_table(work / "results.csv")) == 8  # only finished points in the table
    built.clear()
    resumed = sweep.run_sweep(points, counting_build, work, chunk_size=2, progress=False)
    assert not resumed.stopped and set(built) == {2, 5}
    a, b = _table(ref.table), _table(resumed.table)
    assert len(a) == len(b) == 16
    for ra, rb in zip(a, b, strict=True):
        ra.pop("elapsed_s"), rb.pop("elapsed_s")
        assert ra == rb  # resumed equals uninterrupted, to the printed digit


@pytest.mark.slow
def test_kill_between_a_batchs_writes_resumes_the_same_program(tmp_path, monkeypatch):
    """A kill while a batch writes its points' checkpoints and summaries one after another
    leaves them out of step (one point finished, one a round behind): the resume runs the same
    batch width from the common round, so results and final states are bit-identical."""
    import shutil

    from jaxfl import vmapped_runs

    points = sweep.expand(toy.ToyConfig(rounds=4, checkpoint_every=1), POINTS)
    ref = sweep.run_sweep(points, toy.build, tmp_path / "ref", progress=False)
    assert ref.groups == [[0, 1, 2]]
    work = tmp_path / "killed"
    shutil.copytree(tmp_path / "ref", work)
    for p in points[1:]:  # point 0's summary was written; the kill came before 1's and 2's
        (work / "points" / p.id / "summary.json").unlink()
    ckpts = work / "points" / points[2].id / "checkpoints"
    for f in ckpts.glob("ckpt_00000004.*"):  # ... and before point 2's last checkpoint
        f.unlink()
    calls = []
    real = vmapped_runs.run_batch

    def spy(batch, start, *args, width=None, **kw):
        calls.append((len(batch.points), start, width))
        return real(batch, start, *args, width=width, **kw)

    monkeypatch.setattr(vmapped_runs, "run_batch", spy)
    resumed = sweep.run_sweep(points, toy.build, work, progress=False)
    assert calls == [(2, 3, 3)] and resumed.ran == [points[1].id, points[2].id]
    assert (work / "results.csv").read_text().splitlines()[0] == \
        (tmp_path / "ref" / "results.csv").read_text().splitlines()[0]
    strip = lambda rows: [{k: v for k, v in r.items() if k != "elapsed_s"} for r in rows]
    assert strip(_table(work / "results.csv")) == strip(_table(ref.table))  # CSV text
    for p in points:
        a = checkpoint.latest(work / "points" / p.id / "checkpoints")
        b = checkpoint.latest(tmp_path / "ref" / "points" / p.id / "checkpoints")
        assert a[1]["round"] == b[1]["round"] == 4 and a[0].read_bytes() == b[0].read_bytes()


def test_stack_round_inputs_pads_cohorts():
    c1 = base.Cohort(np.array([3, 1], np.int32), np.array([True, True]))
    c2 = base.Cohort(np.array([2, 0, 0], np.int32), np.array([True, False, False]))
    s = sweep.stack_round_inputs([c1, c2])
    assert s.indices.shape == (2, 3) and s.mask.tolist() == [[True, True, False],
                                                            [True, False, False]]
    with pytest.raises(validate.ShapeError):
        sweep.stack_round_inputs([np.zeros(2), np.zeros(3)])
    # Stacks of cohorts (one per round of a block) are padded along the slot axis.
    s2 = sweep.stack_round_inputs([s, sweep.stack_round_inputs([c1, c1])])
    assert s2.indices.shape == (2, 2, 3) and not s2.mask[1, :, 2].any()


def test_overrides_and_bad_input():
    cfg = toy.ToyConfig()
    assert sweep.with_overrides(cfg, {"seed": 4}).seed == 4
    assert sweep.with_overrides({"a": {"b": 1}}, {"a.b": 2}) == {"a": {"b": 2}}
    with pytest.raises(validate.JaxflValueError):
        sweep.expand(cfg, [dict(nope=1)])
    with pytest.raises(validate.JaxflValueError):
        sweep.expand(cfg, [dict(seed=1), dict(seed=1)])
    with pytest.raises(validate.JaxflValueError):
        sweep.expand(cfg, [])
    with pytest.raises(validate.JaxflValueError):
        sweep.run_sweep(sweep.expand(cfg, [{}]), toy.build, "/nonexistent/x", chunk_size=0)


def test_cli_runs_get_sweep_and_resumes(tmp_path):
    from experiments import sweep as cli
    cfg = tmp_path / "toy_config.py"
    cfg.write_text(
        "import dataclasses\n"
        "from tests import _sweep_toy as toy\n"
        "def get_config(arg=None):\n"
        "    return toy.ToyConfig(algorithm='fedavg', rounds=int(arg or 1))\n"
        "def get_sweep():\n"
        "    return [dict(seed=0), dict(seed=1, client_lr=0.1)]\n")
    argv = ["--config", f"{cfg}:1", "--workdir", str(tmp_path / "w"), "--set", "local_steps=1"]
    plan = cli.main([*argv, "--dry-run"])
    assert [[p["index"] for p in g] for g in plan] == [[0, 1]]
    res = cli.main(argv)
    assert len(res.finished) == 2 and res.groups == [[0, 1]]
    rows = sweep.read_table(tmp_path / "w")
    assert [(r["point"], r["seed"], r["client_lr"]) for r in rows] == [("0", "0", "0.3"),
                                                                      ("1", "1", "0.1")]
    assert "epsilon" not in rows[0]  # fedavg: non-private, no epsilon column
    again = cli.main(argv)
    assert again.ran == [] and len(again.finished) == 2
    assert cli.parse_mesh(None) is None


@pytest.mark.slow
def test_memory_budget_sets_the_chunk_size():
    spec = toy.build(toy.ToyConfig(algorithm="fedavg", local_steps=1))
    fixed, per = sweep.vmapped_runs.point_memory(spec)
    assert per > 0 and fixed > 0
    assert sweep.fit_chunk_size(spec, fixed + 5 * per) == 5
    with pytest.raises(layout.MemoryBudgetError, match=r"sweep point needs \d+ bytes"):
        sweep.fit_chunk_size(spec, fixed + per - 1)  # not even one point: refused
