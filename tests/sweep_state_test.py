"""A sweep's state lives in memory while it runs: each point is built once, its records are
kept as they are written (no metrics.jsonl is read back), and a resume after a kill between
batches reads the disk and ends where the uninterrupted sweep ends."""

import collections
import csv
import json
import os

import pytest

from jaxfl import checkpoint, metrics, sweep, vmapped_runs
from tests import _sweep_toy as toy

# Two batches of two points (chunk_size=2), differing in traced fields only.
POINTS = [dict(seed=0), dict(seed=1, noise_multiplier=1.6), dict(seed=2, clip_norm=0.2),
          dict(seed=3, client_lr=0.1)]
CFG = toy.ToyConfig(rounds=2, checkpoint_every=1)


def _rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in csv.DictReader(f)]


def _counting(monkeypatch):
    """Counts builder calls per point (by seed) and reads of any metrics.jsonl."""
    built, reads = collections.Counter(), []
    real_read = metrics.read_jsonl

    def read(path):
        if str(path).endswith("metrics.jsonl") and os.path.exists(path):  # a file read
            reads.append(str(path))
        return real_read(path)

    monkeypatch.setattr(metrics, "read_jsonl", read)

    def build(c):
        built[c.seed] += 1
        return toy.build(c)

    return build, built, reads


def test_points_are_built_once_and_no_log_is_read_back(tmp_path, monkeypatch):
    build, built, reads = _counting(monkeypatch)
    points = sweep.expand(CFG, POINTS)
    res = sweep.run_sweep(points, build, tmp_path, chunk_size=2, progress=False)
    assert res.groups == [[0, 1], [2, 3]] and len(res.finished) == 4
    assert built == {0: 1, 1: 1, 2: 1, 3: 1}  # planning, batching and running: one build
    assert reads == []  # the table and the summaries come from memory
    # ... and equal what the files hold
    assert len(_rows(res.table)) == 8
    text = res.table.read_text()
    monkeypatch.undo()
    assert sweep.write_table(tmp_path, points).read_text() == text  # as from the logs on disk
    for p in points:  # each summary's final record is the log's last one
        summary = json.loads((tmp_path / "points" / p.id / "summary.json").read_text())
        assert summary["final"] == metrics.read_jsonl(
            tmp_path / "points" / p.id / "metrics.jsonl")[-1]


class Killed(Exception):
    pass


def test_kill_between_batches_resumes_to_the_uninterrupted_sweep(tmp_path, monkeypatch):
    points = sweep.expand(CFG, POINTS)
    ref = sweep.run_sweep(points, toy.build, tmp_path / "ref", chunk_size=2, progress=False)
    real = vmapped_runs.run_batch
    batches = []

    def dies_before_the_second_batch(batch, *args, **kw):
        if batches:
            raise Killed  # a kill between batches: batch 1 written, batch 2 never started
        batches.append([p.index for p in batch.points])
        return real(batch, *args, **kw)

    monkeypatch.setattr(vmapped_runs, "run_batch", dies_before_the_second_batch)
    work = tmp_path / "killed"
    with pytest.raises(Killed):
        sweep.run_sweep(points, toy.build, work, chunk_size=2, progress=False)
    assert batches == [[0, 1]]
    assert [sweep.is_finished(work, p) for p in points] == [True, True, False, False]
    assert len(_rows(work / "results.csv")) == 4  # written after batch 1
    monkeypatch.undo()

    build, built, reads = _counting(monkeypatch)
    resumed = sweep.run_sweep(points, build, work, chunk_size=2, progress=False)
    assert resumed.ran == [points[2].id, points[3].id] and len(resumed.finished) == 4
    assert built == {2: 1, 3: 1}  # finished points are not rebuilt; the others once
    # the resume reads the finished points' logs (for the table) once, nothing else
    assert sorted(reads) == sorted(str(work / "points" / p.id / "metrics.jsonl")
                                   for p in points[:2])
    assert _rows(resumed.table) == _rows(ref.table)
    header = lambda path: path.read_text().splitlines()[0]  # noqa: E731
    assert header(resumed.table) == header(ref.table)  # the same columns, in the same order
    for p in points:
        a = checkpoint.latest(work / "points" / p.id / "checkpoints")
        b = checkpoint.latest(tmp_path / "ref" / "points" / p.id / "checkpoints")
        assert a[1]["round"] == b[1]["round"] == 2 and a[0].read_bytes() == b[0].read_bytes()
