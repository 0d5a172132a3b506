"""Multi-host: a sharded sweep run by 2 processes on localhost (jax.distributed over a free
port on 127.0.0.1, 2 CPU devices each) writes the same results as one process."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxfl import metrics, sweep
from tests import _multidevice
from tests import _sweep_toy as toy

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(workdir: Path) -> list:
    try:
        port = _free_port()
    except OSError as e:  # no loopback networking in this sandbox
        pytest.skip(f"cannot bind a port on 127.0.0.1: {e}")
    env = _multidevice.subprocess_env(2)
    procs = [subprocess.Popen([sys.executable, "-m", "tests._multidevice", "multihost",
                               str(workdir), str(port), str(i)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    deadline = time.time() + TIMEOUT_S
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1.0, deadline - time.time())))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
                q.communicate()
            pytest.fail(f"2-process run did not finish in {TIMEOUT_S} s")
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    results = _launch(tmp_path / "multi")
    for i, (code, out, err) in enumerate(results):
        if code != 0 and "distributed" in err and "UNIMPLEMENTED" in err:
            pytest.skip(f"this platform cannot run multi-process JAX: {err[-500:]}")
        assert code == 0, f"process {i}:\n{out[-2000:]}\n{err[-4000:]}"
        assert f"OK multihost {i}" in out
    points = sweep.expand(_multidevice.CONFIG, _multidevice.POINTS[:2])
    ref = sweep.run_sweep(points, toy.build, tmp_path / "single", progress=False)
    for p in points:
        got = metrics.read_jsonl(tmp_path / "multi" / "points" / p.id / "metrics.jsonl")
        assert len(got) == _multidevice.CONFIG.rounds
        toy.float_close(got, metrics.read_jsonl(ref.workdir / "points" / p.id /
                                                "metrics.jsonl"))
    assert len(sweep.read_table(tmp_path / "multi")) == 2 * _multidevice.CONFIG.rounds
