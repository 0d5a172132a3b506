"""Fault tolerance: SIGKILLed runs resume bit-identically, corrupted checkpoints fall back,
results files are written atomically, and runs are deterministic across processes (CPU).

The subprocess tests run the real entry point
``python -m experiments.run --config experiments/configs/dp_fedavg/mnist.py:variant=smoke``
on the real MNIST files (skipped without ``JAXFL_DATA_DIR``). Kill points are drawn from a
seeded generator; hypothesis drives the corruption of checkpoints and of the metrics log.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from jaxfl import checkpoint, metrics, training
from jaxfl.algorithms import dp_fedavg
from tests import _toy
from tests.conftest import require_data

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = dict(derandomize=True, deadline=None, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])
SMOKE = ["--config", "experiments/configs/dp_fedavg/mnist.py:variant=smoke",
         "--set", "rounds=6", "--set", "checkpoint_every=1"]


def _strip(records):
    return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in records]


def _env(cache=None):
    """The subprocess environment; ``cache``: a persistent XLA compilation cache directory.

    The uninterrupted reference run writes its executables to ``cache`` and the processes of
    the killed run load them instead of compiling again: the programs are keyed by their
    lowered module (and compile options and XLA flags), so a process that lowered another
    program (a nondeterministic trace, other shapes) misses the cache, compiles it and must
    still give the same bits. An entry that a killed process left half-written fails to
    decompress when read, and JAX compiles that program again (with a warning).
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("JAX_PLATFORMS", "cpu")
    if cache is not None:
        env.update(JAX_COMPILATION_CACHE_DIR=str(cache),
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
                   JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES="none")
    return env


def _launch(workdir):
    return subprocess.Popen([sys.executable, "-m", "experiments.run", *SMOKE, "--workdir",
                             str(workdir)], cwd=ROOT, env=_env(workdir.parent / "xla-cache"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def _finish(proc, timeout=240):
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err.decode()[-2000:]


def _kill_when(proc, predicate, timeout=240):
    """SIGKILLs ``proc`` (by pid) as soon as ``predicate()`` holds; returns True if killed."""
    t0 = time.time()
    while proc.poll() is None and time.time() - t0 < timeout:
        if predicate():
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()  # reap it and close its pipe
            return True
        time.sleep(0.02)
    proc.communicate()
    return False


def _final_state_bytes(workdir):
    path, meta = checkpoint.latest(Path(workdir) / "checkpoints")
    return meta["round"], path.read_bytes()


@pytest.mark.slow
def test_sigkilled_run_resumes_bit_identical_across_processes(tmp_path):
    require_data("mnist/train-images-idx3-ubyte.gz")
    ref, run = tmp_path / "reference", tmp_path / "killed"
    _finish(_launch(ref))
    rng = np.random.default_rng(2024)
    # Kill 1: as soon as a random round's metrics line appears (mid-loop, possibly while the
    # next checkpoint is being written). Kill 2: at a random time after the restart.
    k = int(rng.integers(1, 5))
    log = run / "metrics.jsonl"
    killed = _kill_when(_launch(run), lambda: len(metrics.read_jsonl(log)) >= k)
    t_kill = time.time() + float(rng.uniform(0.5, 8.0))
    killed2 = _kill_when(_launch(run), lambda: time.time() >= t_kill)
    assert killed  # the first kill must have interrupted the run
    _finish(_launch(run))
    got, want = metrics.read_jsonl(log), metrics.read_jsonl(ref / "metrics.jsonl")
    assert [r["round"] for r in got] == list(range(1, 7))
    assert _strip(got) == _strip(want)  # bit-identical floats (JSON round-trips exactly)
    assert _final_state_bytes(run) == _final_state_bytes(ref)
    s_got = json.loads((run / "summary.json").read_text())
    s_want = json.loads((ref / "summary.json").read_text())
    s_got["final"].pop("elapsed_s")
    s_want["final"].pop("elapsed_s")
    assert s_got == s_want
    print(f"kills: after round {k}, then at a random time (interrupted={killed2})")


SWEEP = ["-m", "experiments.sweep", "--config", "tests/reliability/_sweep_config.py"]


def _launch_sweep(workdir):
    return subprocess.Popen([sys.executable, *SWEEP, "--workdir", str(workdir)], cwd=ROOT,
                            env=_env(workdir.parent / "xla-cache"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def _table(workdir):
    import csv

    with open(Path(workdir) / "results.csv", newline="") as f:
        return [{k: v for k, v in row.items() if k != "elapsed_s"} for row in csv.DictReader(f)]


@pytest.mark.slow
def test_sigkilled_sweep_resumes_to_the_same_table(tmp_path):
    """A vmapped sweep (4 points, toy data) killed mid-batch and at a random time resumes from
    its per-point checkpoints to the uninterrupted run's results.csv and final states."""
    ref, run = tmp_path / "reference", tmp_path / "killed"
    _finish(_launch_sweep(ref))
    rng = np.random.default_rng(99)
    k = int(rng.integers(1, 5))
    logs = lambda: list((run / "points").glob("*/metrics.jsonl")) if (run / "points").exists() \
        else []
    killed = _kill_when(_launch_sweep(run),
                        lambda: any(len(metrics.read_jsonl(p)) >= k for p in logs()))
    t_kill = time.time() + float(rng.uniform(0.5, 6.0))
    _kill_when(_launch_sweep(run), lambda: time.time() >= t_kill)
    assert killed
    _finish(_launch_sweep(run))
    assert _table(run) == _table(ref)  # every logged metric, bit for bit (CSV text)
    from flax import serialization

    for point in sorted((ref / "points").iterdir()):
        (r_run, b_run), (r_ref, b_ref) = (_final_state_bytes(run / "points" / point.name),
                                          _final_state_bytes(point))
        assert r_run == r_ref
        # The final states agree to float32 rounding, not bit for bit: a resumed sweep batches a
        # different set of points (and of rounds per block), so the vmapped computation has
        # other shapes and XLA's reductions round differently (docs/determinism.md).
        for a, b in zip(jax.tree.leaves(serialization.msgpack_restore(b_run)),
                        jax.tree.leaves(serialization.msgpack_restore(b_ref)), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Checkpoint corruption, end to end through training.run (in process, toy data).
TOY_MODEL = _toy.logreg(5, 3)
TOY_ALG = dp_fedavg.dp_fedavg(TOY_MODEL, num_clients=6, local_steps=2, batch_size=4,
                              client_lr=0.3, clip_norm=0.5, noise_multiplier=0.8,
                              sampling_rate=0.5)
TOY_DATA = _toy.blobs(num_clients=6, seed=5)


def _toy_run(workdir, seed=3, **kw):
    # One algorithm object for every run, so the jit cache is shared between runs.
    return training.run(TOY_ALG, TOY_DATA, params=TOY_MODEL.init(jax.random.key(0)), rounds=5,
                        seed=seed, workdir=workdir, checkpoint_every=1, delta=1e-5,
                        progress=False, final_accountant=None, **kw)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    return _toy_run(tmp_path_factory.mktemp("ref"))


corruption = st.one_of(
    st.tuples(st.just("flip"), st.floats(0.0, 0.999), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.floats(0.0, 0.999), st.just(0)),
    st.tuples(st.just("meta"), st.sampled_from(["", "{", '{"round": 4}', '{"sha256": "00"}']),
              st.just(0)),
    st.tuples(st.just("drop_meta"), st.just(0.0), st.just(0)),
)


def _corrupt(path: Path, kind, where, value):
    if kind == "flip":
        data = bytearray(path.read_bytes())
        data[int(where * len(data))] ^= value
        path.write_bytes(bytes(data))
    elif kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: int(where * len(data))])
    elif kind == "meta":
        path.with_suffix(".json").write_text(where)
    else:
        path.with_suffix(".json").unlink()


@settings(max_examples=12, **SETTINGS)
@given(spec=corruption, stop=st.integers(2, 4))
def test_corrupted_checkpoint_falls_back_and_run_finishes_identically(
        spec, stop, reference_run, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("corrupt")
    _toy_run(workdir, stop_after=stop)
    newest = checkpoint.list_checkpoints(workdir / "checkpoints")[-1]
    _corrupt(newest, *spec)
    found = checkpoint.latest(workdir / "checkpoints")
    assert found is not None and found[1]["round"] == stop - 1  # detected, fell back
    with pytest.warns(UserWarning, match=f"Corrupt checkpoint.*{newest.name}"):
        resumed = _toy_run(workdir)
    for a, b in zip(jax.tree.leaves(reference_run.state), jax.tree.leaves(resumed.state),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert _strip(resumed.history) == _strip(reference_run.history)


@settings(max_examples=60, **SETTINGS)
@given(spec=corruption, shape=st.tuples(st.integers(1, 5), st.integers(1, 4)))
def test_checkpoint_latest_never_returns_a_corrupted_payload(spec, shape, tmp_path_factory):
    d = tmp_path_factory.mktemp("ck")
    rng = np.random.default_rng(sum(shape))
    states = [{"w": rng.normal(size=shape).astype(np.float32), "r": np.int32(r)}
              for r in range(3)]
    for r, s in enumerate(states, start=1):
        checkpoint.save(d, r, s)
    newest = checkpoint.list_checkpoints(d)[-1]
    before = newest.read_bytes()
    _corrupt(newest, *spec)
    path, meta = checkpoint.latest(d)
    intact = newest.read_bytes() == before and checkpoint.verify(newest) is not None
    assert meta["round"] == (3 if intact else 2)
    restored = checkpoint.restore(path, states[0])
    np.testing.assert_array_equal(restored["w"], states[meta["round"] - 1]["w"])


@settings(max_examples=60, **SETTINGS)
@given(cut=st.floats(0.0, 1.0), n=st.integers(1, 8))
def test_torn_metrics_log_keeps_exactly_the_complete_records(cut, n, tmp_path_factory):
    path = tmp_path_factory.mktemp("log") / "metrics.jsonl"
    w = metrics.JsonlWriter(path)
    records = [{"round": r, "loss": 1.0 / (r + 3), "epsilon": 0.1 * r} for r in range(1, n + 1)]
    for rec in records:
        w.write(rec)
    text = path.read_bytes()
    keep = int(cut * len(text))
    path.write_bytes(text[:keep])
    complete = text[:keep].count(b"\n")
    got = metrics.read_jsonl(path)
    assert got[:complete] == records[:complete]
    assert len(got) in (complete, complete + 1)  # + a final line that lost only its newline
    w.truncate_after(2)
    assert [r["round"] for r in w.read()] == [r["round"] for r in got if r["round"] <= 2]


# ---------------------------------------------------------------------------------------------
# Atomic results files.
_WRITER = """
import sys
from pathlib import Path
from jaxfl import checkpoint
target = Path(sys.argv[1])
payloads = [("A" * 3_000_000), ("B" * 2_000_000)]
checkpoint.atomic_write_text(target, payloads[0])
print("ready", flush=True)
i = 1
while True:
    checkpoint.atomic_write_text(target, payloads[i % 2])
    i += 1
"""


def test_results_files_are_written_atomically_under_sigkill(tmp_path):
    target = tmp_path / "summary.json"
    rng = np.random.default_rng(7)
    for _ in range(2):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(target)], cwd=ROOT,
                                env=_env(), stdout=subprocess.PIPE, start_new_session=True)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(float(rng.uniform(0.05, 0.5)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        text = target.read_text()
        assert text in ("A" * 3_000_000, "B" * 2_000_000)  # never torn or mixed


def test_interrupted_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "config.json"
    checkpoint.atomic_write_text(target, "old")

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


# ---------------------------------------------------------------------------------------------
# Determinism on CPU.
def test_same_seed_same_bits_and_other_seed_differs(reference_run, tmp_path):
    again = _toy_run(tmp_path / "again")
    for a, b in zip(jax.tree.leaves(reference_run.state), jax.tree.leaves(again.state),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert _strip(again.history) == _strip(reference_run.history)
    other = _toy_run(tmp_path / "other", seed=4)
    assert not np.array_equal(np.asarray(other.state.params["w"]),
                              np.asarray(reference_run.state.params["w"]))
