"""Worker for the sharding and multi-host tests; run as a subprocess, since the device count
(``XLA_FLAGS=--xla_force_host_platform_device_count``) must be fixed before JAX starts.

  python -m tests._multidevice sharded WORKDIR
  python -m tests._multidevice multihost WORKDIR PORT PROCESS_ID
  python -m tests._multidevice uldp_pairs WORKDIR
  python -m tests._multidevice round_compiles_once WORKDIR
"""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np

from jaxfl import metrics, sharding, sweep
from tests import _sweep_toy as toy

CONFIG = toy.ToyConfig(rounds=3, num_clients=12, checkpoint_every=3)
POINTS = [dict(seed=0), dict(seed=1, noise_multiplier=1.6, client_lr=0.1),
          dict(seed=2, clip_norm=0.2, sampling_rate=0.75)]


ROOT = Path(__file__).resolve().parents[1]


def check_in_subprocess(mode: str, workdir, *, devices: int) -> None:
    """Runs ``mode`` of this module in a fresh CPU process with ``devices`` host devices and
    asserts that it finished and printed ``OK <mode>``."""
    env = subprocess_env(devices)
    proc = subprocess.run([sys.executable, "-m", "tests._multidevice", mode, str(workdir)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"OK {mode}" in proc.stdout


def subprocess_env(devices: int) -> dict[str, str]:
    """The environment of a CPU subprocess with ``devices`` host devices. The test process's
    other XLA flags (``make test``: ``--xla_backend_optimization_level=1``) carry over: without
    them the subprocess would compile at XLA's default level, the slowest."""
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    return {**os.environ, "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": " ".join([*flags, f"--xla_force_host_platform_device_count={devices}"])}


def _close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-5, atol=2e-6)


def sharded(workdir: Path) -> None:
    assert jax.device_count() == 8, jax.devices()
    spec = toy.build(CONFIG)
    # One run, client axis over 8 devices (12 clients padded to 16: 2 per device).
    mesh = sharding.make_mesh(sweep=1)
    data = sharding.shard_data(spec.data, mesh)
    assert data.x.shape[0] == 16
    assert all(s.data.shape[0] == 2 for s in data.x.addressable_shards)
    plain = sweep.run_single(spec, None, progress=False)
    with jax.set_mesh(mesh):
        split = sweep.run_single(dataclasses.replace(
            spec, data=data, params=sharding.replicate(spec.params, mesh)), None,
            progress=False)
        probe = jax.jit(lambda x: sharding.constrain_clients(x * 2.0))(data.x)
        assert probe.sharding.spec[0] == sharding.CLIENTS, probe.sharding
    _close(plain.state, split.state)
    toy.float_close(plain.history, split.history)
    # A sweep: 3 points over a (sweep=2, clients=4) mesh equals the unsharded sweep.
    points = sweep.expand(CONFIG, POINTS)
    ref = sweep.run_sweep(points, toy.build, workdir / "plain", progress=False)
    got = sweep.run_sweep(points, toy.build, workdir / "mesh", progress=False,
                          mesh=sharding.make_mesh(sweep=2, clients=4))
    assert ref.groups == got.groups == [[0, 1, 2]]
    for p in points:
        toy.float_close(metrics.read_jsonl(ref.workdir / "points" / p.id / "metrics.jsonl"),
                        metrics.read_jsonl(got.workdir / "points" / p.id / "metrics.jsonl"))
    print("OK sharded")


def multihost(workdir: Path, port: int, process_id: int) -> None:
    info = sharding.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                               process_id=process_id, timeout_s=60)
    assert info["process_count"] == 2 and info["devices"] == 4, info
    mesh = sharding.make_mesh(sweep=2, clients=2)
    spec = toy.build(CONFIG)
    data = sharding.shard_data(spec.data, mesh)
    # This process holds 2 of the 4 devices, each with half of the clients.
    assert len(data.x.addressable_shards) == 2
    assert all(s.data.shape[0] == 6 for s in data.x.addressable_shards)
    res = sweep.run_sweep(sweep.expand(CONFIG, POINTS[:2]), toy.build, workdir, mesh=mesh,
                          progress=False)
    assert res.groups == [[0, 1]] and not res.stopped
    sharding.shutdown()
    print(f"OK multihost {process_id}")


def uldp_pairs(workdir: Path) -> None:
    """ULDP's (silo, user) pairs split over the local devices give the one-device round."""
    import jax.numpy as jnp

    from jaxfl import layout
    from jaxfl.algorithms import uldp, uldp_data
    from tests import _toy

    del workdir
    devices = jax.local_device_count()
    assert devices > 1 and layout.unit_shards() == devices, jax.devices()
    rng = np.random.default_rng(3)
    n, silos, users = 400, 3, 30
    data = uldp_data.UldpData(rng.normal(size=(n, 5)).astype(np.float32),
                              rng.integers(0, 4, n).astype(np.int32), rng.integers(0, silos, n),
                              rng.integers(0, users, n), silos, users).validate()
    model = _toy.logreg(5, 4)
    params = model.init(jax.random.key(0))
    split = uldp_data.pair_data(data, max_pairs_per_chunk=2).to_device()
    one = uldp_data.pair_data(data, max_pairs_per_chunk=2, shards=1).to_device()
    assert all(b.shards == devices for b in split.buckets if b.index.shape[0] >= devices)
    assert all(b.shards == 1 for b in one.buckets)
    # a bucket one device runs in a single chunk is not split (nothing to gain)
    assert all(b.shards == 1 for b in uldp_data.pair_data(data, max_pairs_per_chunk=None).buckets)
    args = dict(num_silos=silos, num_users=users, global_lr=1.0, clip_norm=0.2,
                noise_multiplier=0.7)
    for alg in (uldp.uldp_avg(model, local_epochs=2, batch_size=8, local_lr=0.3, **args),
                uldp.uldp_sgd(model, **args),
                uldp.uldp_avg(model, local_epochs=1, batch_size=4, local_lr=0.3,
                              weighting="optimal", sampling_rate=0.5, **args)):
        ri = alg.prepare(0, np.random.default_rng(0))
        run = jax.jit(alg.apply)
        a, da = run(alg.init(params), split, ri, jax.random.key(5))
        b, db = run(alg.init(params), one, ri, jax.random.key(5))
        _close(a.params, b.params)
        _close(da, db)
        moved = jax.tree.map(lambda p, q: jnp.max(jnp.abs(p - q)), a.params, params)
        assert max(float(v) for v in jax.tree.leaves(moved)) > 1e-3, moved
    print("OK uldp_pairs")


def round_compiles_once(workdir: Path) -> None:
    """Rounds of ULDP-AVG with its pairs split over 2 host devices compile the round once
    (round 1's state is on one device, the round returns it replicated over both)."""
    import logging

    from jaxfl import training
    from jaxfl.algorithms import uldp, uldp_data
    from tests import _toy

    assert jax.local_device_count() == 2, jax.devices()
    silos, users = 2, 4  # every (silo, user) pair has 4 records: one length bucket
    silo, user = np.divmod(np.arange(silos * users * 4) // 4, users)
    rng = np.random.default_rng(0)
    data = uldp_data.UldpData(rng.normal(size=(silo.size, 3)).astype(np.float32),
                              rng.integers(0, 2, silo.size).astype(np.int32), silo, user,
                              silos, users).validate()
    pairs = uldp_data.pair_data(data, max_pairs_per_chunk=2)
    assert [b.shards for b in pairs.buckets] == [2], pairs.buckets
    model = _toy.logreg(3, 2)
    alg = uldp.uldp_avg(model, local_epochs=1, batch_size=4, local_lr=0.3, num_silos=silos,
                        num_users=users, global_lr=1.0, clip_norm=0.5, noise_multiplier=0.5)
    messages = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: messages.append(record.getMessage())
    logging.getLogger("jax").addHandler(handler)
    logging.getLogger("jax").setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)
    res = training.run(alg, pairs, params=model.init(jax.random.key(0)), rounds=3, seed=0,
                       progress=False, workdir=workdir)
    jax.config.update("jax_log_compiles", False)
    compiles = sum("Compiling jit(round_step)" in m for m in messages)
    assert compiles == 1, compiles
    assert res.state.params["w"].sharding.device_set == set(jax.local_devices())
    assert len(res.history) == 3 and np.isfinite(res.history[-1]["train_loss"])
    print("OK round_compiles_once")


if __name__ == "__main__":
    mode, out = sys.argv[1], Path(sys.argv[2])
    if mode == "sharded":
        sharded(out)
    elif mode == "uldp_pairs":
        uldp_pairs(out)
    elif mode == "round_compiles_once":
        round_compiles_once(out)
    else:
        multihost(out, int(sys.argv[3]), int(sys.argv[4]))
