"""Scale benchmarks: client updates per second, vmapped sweeps, DP-SGD against Opacus.

  python -m experiments.bench.bench_scale [--out DIR] [--full]

Rows (written to ``DIR/bench_scale_detail.json`` and ``.md`` as they come, with the machine, the
JAX version and the load average during the run):

* ``client_updates``: one full-participation FedAvg round (``local_steps`` SGD steps per
  client) for 10 .. 10,000 clients, logistic regression and the FedAvg CNN, as client updates
  per second: ``vmap`` (the whole cohort vmapped in one jit, or chunks of ``chunk`` clients in
  a ``lax.scan`` when larger: ``client_batch``), ``scan`` (``client_batch=1``: one client at a
  time inside one jit, timed on at most ``scan_clients``) and ``loop`` (a Python loop over a
  jitted single-client update, timed on at most ``loop_clients``). On CPU ``scan`` beats
  ``vmap``: vmapped local training turns every per-client matmul/convolution into a batched
  one with per-client weights, which XLA:CPU runs slowly; accelerators favour ``vmap``.
  Bytes per client = the compiled round's argument + temporary memory over the clients.
* ``sweep_seeds``: 8 seeds of DP-FedAvg in one vmapped :func:`jaxfl.sweep.run_sweep` against
  8 sequential :func:`jaxfl.training.run` calls (wall time including compilation, and the
  steady-state time per round).
* ``dp_sgd``: per-example-clipped, noised SGD steps of the FedAvg CNN: jaxfl
  (:func:`jaxfl.clipping.clipped_grad_sum` under jit) against Opacus (``GradSampleModule`` +
  ``DPOptimizer``) on the same architecture, batch and thread count. ``clipped_grad_sum``
  defaults to two passes (norms, then one reweighted batch backward pass: equal by linearity);
  the ``one_pass`` row stores and reduces the per-example gradients (several times slower on
  CPU). Opacus runs in a separate
  virtual environment (:mod:`experiments.bench.torch_env`: ``JAXFL_TORCH_PYTHON`` or
  ``.venv-torch`` at the repository root, created by ``make bench-torch`` or
  ``python -m experiments.bench.torch_env``); when it is absent the row says so and is skipped.
  Torch is never a dependency of jaxfl. The side-by-side table against PyTorch on real
  workloads is :mod:`experiments.bench.bench_torch`.

Inputs are random arrays of the real shapes (throughput does not depend on pixel values).
The default run is short (a few minutes on 2 cores): the CNN stops at 100 clients; ``--full``
runs the CNN to 10,000 clients (about an hour on 2 cores) and a larger DP-SGD batch.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.bench import timing, torch_env
from jaxfl import ghost, noise, sweep
from jaxfl import tree as jtree
from jaxfl.algorithms import base, dp_fedavg, fedavg, local
from jaxfl.models import Model, get_model


def _logreg() -> Model:
    return get_model("logreg", num_classes=10, input_shape=(784,))


# ----------------------------------------------------------------------------- client updates

def _fedavg_round(model, num_clients, *, client_batch, local_steps, batch_size):
    alg = fedavg.fedavg(model, num_clients=num_clients, local_steps=local_steps,
                        batch_size=batch_size, client_lr=0.05, client_batch=client_batch)
    state = alg.init(model.init(jax.random.key(0)))
    cohort = alg.prepare(0, np.random.default_rng(0))
    return alg, state, cohort


def client_loop(model, params, data, key, *, clients: int, local_steps: int, batch_size: int):
    """A Python loop over one jitted single-client update (what a non-vectorized simulator
    does) for the first ``clients`` clients of ``data``: ``loop() -> summed update``, compiled
    before it returns."""
    update = jax.jit(local.client_update_fn(local.model_batch_loss(model),
                                            optimizer=optax.sgd(0.05), steps=local_steps,
                                            batch_size=batch_size))
    keys = base.client_keys(key, jnp.arange(clients))
    jax.block_until_ready(update(params, data.x[0], data.y[0], data.mask[0], keys[0]))

    def loop():
        total = jtree.zeros_like(params)
        for c in range(clients):
            d, _ = update(params, data.x[c], data.y[c], data.mask[c], keys[c])
            total = jtree.add(total, d)
        return total

    return loop


def client_updates(model, num_clients: int, *, examples=10, batch_size=10, local_steps=1,
                   chunk=1000, loop_clients=20, scan_clients=100) -> dict:
    """Client updates per second of one full-participation FedAvg round, three ways."""
    data = timing.random_clients(num_clients, examples, tuple(model.input_shape)).to_device()
    # vmap: the whole cohort (or chunks of `chunk` clients when it is larger), one jit.
    vb = None if num_clients <= chunk else chunk
    alg, state, cohort = _fedavg_round(model, num_clients, client_batch=vb,
                                       local_steps=local_steps, batch_size=batch_size)
    key = jax.random.key(1)
    compiled = jax.jit(alg.apply).lower(state, data, cohort, key).compile()
    t_vmap = timing.timed(lambda _: compiled(state, data, cohort, key), min_time=0.5,
                          max_calls=5, warmup=False).per_call_s
    mem = compiled.memory_analysis()
    mem_bytes = (getattr(mem, "temp_size_in_bytes", 0) + getattr(mem, "argument_size_in_bytes",
                                                                 0)) if mem is not None else 0
    # scan: one client at a time inside one jit (client_batch=1), on a prefix of the clients.
    n_scan = min(num_clients, scan_clients)
    sub = jax.tree.map(lambda a: a[:n_scan], data)
    alg1, state1, cohort1 = _fedavg_round(model, n_scan, client_batch=1,
                                          local_steps=local_steps, batch_size=batch_size)
    scanned = jax.jit(alg1.apply).lower(state1, sub, cohort1, key).compile()
    t_scan = timing.timed(lambda _: scanned(state1, sub, cohort1, key), min_time=0.3,
                          max_calls=3, warmup=False).per_call_s
    # loop: on a prefix of the clients.
    params = alg.params_of(state)
    n_loop = min(num_clients, loop_clients)
    loop = client_loop(model, params, data, key, clients=n_loop, local_steps=local_steps,
                       batch_size=batch_size)
    t_loop = timing.timed(lambda _: loop(), min_time=0.3, max_calls=3, warmup=False).per_call_s
    vmap_rate, loop_rate = num_clients / t_vmap, n_loop / t_loop
    return {"bench": "client_updates", "model": model.name, "clients": num_clients,
            "local_steps": local_steps, "batch_size": batch_size,
            "client_batch": "all" if vb is None else vb,
            "vmap_updates_per_s": vmap_rate, "scan_updates_per_s": n_scan / t_scan,
            "loop_updates_per_s": loop_rate, "vmap_vs_loop": vmap_rate / loop_rate,
            "timed_scan_loop_clients": f"{n_scan}/{n_loop}",
            "bytes_per_client": int(mem_bytes / num_clients),
            "params": jtree.num_params(params)}


# ----------------------------------------------------------------------------- 8 seeds

def _seed_build(num_clients=100, examples=20, rounds=10):
    model = _logreg()
    data = timing.random_clients(num_clients, examples, (784,))

    def build(cfg):
        alg = dp_fedavg.dp_fedavg(model, num_clients=num_clients, local_steps=2, batch_size=10,
                                  client_lr=0.1, clip_norm=1.0, noise_multiplier=1.0,
                                  sampling_rate=0.1)
        return sweep.RunSpec(algorithm=alg, data=data, params=model.init(jax.random.key(
            cfg["seed"])), rounds=rounds, seed=cfg["seed"], checkpoint_every=rounds,
            final_accountant=None, config=cfg)

    return build


def sweep_seeds(num_seeds=8, rounds=10) -> dict:
    """8 seeds in one vmapped sweep against 8 sequential single runs (wall time)."""
    build = _seed_build(rounds=rounds)
    points = sweep.expand({"seed": 0}, [{"seed": s} for s in range(num_seeds)])
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        res = sweep.run_sweep(points, build, Path(d) / "vmap", progress=False)
        t_vmap = time.perf_counter() - t0
        assert res.groups == [list(range(num_seeds))]
        t0 = time.perf_counter()
        sweep.run_sweep(points, build, Path(d) / "seq", vmap=False, progress=False)
        t_seq = time.perf_counter() - t0
    # Steady state (compiled): one round of 8 points vmapped vs 8 single-point rounds.
    specs = [build({"seed": s}) for s in range(num_seeds)]
    alg, data = specs[0].algorithm, specs[0].data.to_device()
    fn = sweep.block_fn(alg, data_axis=None, spmd=False)
    states = jax.tree.map(lambda *a: jnp.stack(a), *[alg.init(s.params) for s in specs])
    ri = sweep.stack_round_inputs([sweep.stack_round_inputs(
        [alg.prepare(0, np.random.default_rng(s)) for s in range(num_seeds)])])
    kd = jnp.stack([jax.random.key_data(jax.random.key(s)) for s in range(num_seeds)])
    hp = base.bind_hparams([s.algorithm for s in specs])  # each point's accounted values
    block0 = jnp.zeros(1, jnp.int32)
    t_round_vmap = timing.timed(lambda _: fn(states, data, ri, kd, hp, block0), min_time=0.5,
                                max_calls=20).per_call_s
    apply = jax.jit(alg.apply)
    st = alg.init(specs[0].params)
    cohort = alg.prepare(0, np.random.default_rng(0))
    key0 = jax.random.key(0)
    t_round_one = timing.timed(lambda _: apply(st, data, cohort, key0), min_time=0.5,
                               max_calls=20).per_call_s
    return {"bench": "sweep_seeds", "model": "logreg", "algorithm": "dp_fedavg",
            "seeds": num_seeds, "rounds": rounds, "clients": 100,
            "vmap_wall_s": t_vmap, "sequential_wall_s": t_seq, "wall_speedup": t_seq / t_vmap,
            "vmap_round_s": t_round_vmap, "sequential_round_s": num_seeds * t_round_one,
            "round_speedup": num_seeds * t_round_one / t_round_vmap}


# ----------------------------------------------------------------------------- DP-SGD

def jaxfl_dp_sgd(batch: int, *, steps_time=1.0, method="auto") -> float:
    """Examples per second of jit-compiled per-example-clipped, noised SGD on the FedAvg CNN
    (``method`` of :func:`jaxfl.ghost.model_clipped_grad_sum`; ``"auto"``: ghost norms)."""
    model = get_model("fedavg_cnn")
    params = model.init(jax.random.key(0))
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(batch, 28, 28, 1)).astype(np.float32))
    y = jnp.asarray(rng.integers(0, 10, size=batch).astype(np.int32))
    mask = jnp.ones(batch, bool)

    @jax.jit
    def step(params, key):
        total, _ = ghost.model_clipped_grad_sum(model, params, x, y, mask, clip_norm=1.0,
                                                   method=method)
        noisy = noise.add_gaussian(total, key, 1.0)
        return jax.tree.map(lambda p, g: p - 0.05 * g / batch, params, noisy)

    key = jax.random.key(1)
    return batch / timing.timed(lambda _: step(params, key), min_time=steps_time,
                                max_calls=10).per_call_s


_OPACUS = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import torch, torch.nn as nn, torch.nn.functional as F
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer
batch, threads, min_time = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
torch.set_num_threads(threads); torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.MaxPool2d(2), nn.ReLU(),
                    nn.Conv2d(32, 64, 5, padding=2), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(),
                    nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10))
model = GradSampleModule(net)
opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), noise_multiplier=1.0,
                  max_grad_norm=1.0, expected_batch_size=batch)
x = torch.randn(batch, 1, 28, 28); y = torch.randint(0, 10, (batch,))
def step():
    opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
step()
reps, t0 = 0, time.perf_counter()
while True:
    step(); reps += 1
    if time.perf_counter() - t0 >= min_time or reps >= 10: break
print(json.dumps({"examples_per_s": batch * reps / (time.perf_counter() - t0),
                  "torch": torch.__version__,
                  "opacus": __import__("opacus").__version__}))
"""


def opacus_dp_sgd(batch: int, *, threads: int, min_time=1.0) -> dict | None:
    """Opacus examples per second in the torch venv, or None when the venv is absent."""
    if not torch_env.available():
        return None
    proc = subprocess.run([str(torch_env.torch_python()), "-c", _OPACUS, str(batch), str(threads),
                           str(min_time)], capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr[-500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def dp_sgd(batch: int, *, repeats: int = 3) -> dict:
    """jaxfl vs Opacus, measured alternately ``repeats`` times (medians: the machine is shared
    and its load drifts)."""
    threads = os.cpu_count() or 1
    got = timing.alternate({"ours": lambda: jaxfl_dp_sgd(batch),
                            "one": lambda: jaxfl_dp_sgd(batch, method="one_pass"),
                            "theirs": lambda: opacus_dp_sgd(batch, threads=threads)}, repeats)
    ours, one, theirs = got["ours"], got["one"], got["theirs"]
    row = {"bench": "dp_sgd", "model": "fedavg_cnn", "batch": batch, "threads": threads,
           "repeats": repeats, "jaxfl_examples_per_s": float(np.median(ours)),
           "jaxfl_one_pass_examples_per_s": float(np.median(one))}
    if theirs[0] is None:
        row["note"] = f"Opacus skipped: no torch venv at {torch_env.torch_python()}"
    elif any("error" in t for t in theirs):
        row["note"] = "Opacus failed: " + next(t["error"] for t in theirs if "error" in t)
    else:
        rate = float(np.median([t["examples_per_s"] for t in theirs]))
        ratios = [a / t["examples_per_s"] for a, t in zip(ours, theirs, strict=True)]
        ratios1 = [a / t["examples_per_s"] for a, t in zip(one, theirs, strict=True)]
        row.update({"opacus_examples_per_s": rate,
                    "speedup_vs_opacus": float(np.median(ratios)),
                    "speedup_range": f"{min(ratios):.2f}-{max(ratios):.2f}",
                    "one_pass_speedup_vs_opacus": float(np.median(ratios1)),
                    "torch": theirs[0]["torch"], "opacus": theirs[0]["opacus"]})
    return row


# ----------------------------------------------------------------------------- driver

def main(out_dir, *, full: bool = False) -> list[dict]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    machine = timing.machine()
    jobs = [functools.partial(client_updates, _logreg(), c, chunk=10000)
            for c in (10, 100, 1000, 10000)]
    jobs += [functools.partial(client_updates, get_model("fedavg_cnn"), c, chunk=100,
                               scan_clients=20)
             for c in ((10, 100, 1000, 10000) if full else (10, 100))]
    jobs.append(sweep_seeds)
    jobs += [functools.partial(dp_sgd, b) for b in ((64, 256) if full else (64,))]
    rows = []
    for job in jobs:
        rows.append(job())
        machine["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
        for r in rows:
            r.update({k: v for k, v in machine.items() if k not in r or k == "load_avg_1m_end"})
        (out_dir / "bench_scale_detail.json").write_text(json.dumps(rows, indent=1))
        (out_dir / "bench_scale_detail.md").write_text(to_markdown(rows, machine))
    return rows


def to_markdown(rows, machine) -> str:
    lines = [f"# bench_scale on {machine['machine']} ({machine['cpus']} CPUs, "
             f"{machine['device']}, jax {machine['jax']}; load average "
             f"{machine['load_avg_1m']} -> {machine['load_avg_1m_end']})", ""]
    for bench in dict.fromkeys(r["bench"] for r in rows):
        sel = [{k: v for k, v in r.items() if k not in machine and k != "bench"}
               for r in rows if r["bench"] == bench]
        lines += [f"## {bench}", "", timing.table(sel)]
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench_results")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--only", default=None,
                    help="client_updates | sweep_seeds | dp_sgd (default: all)")
    a = ap.parse_args()
    if a.only:
        fn = {"client_updates": lambda: [client_updates(_logreg(), 1000)],
              "sweep_seeds": lambda: [sweep_seeds()],
              "dp_sgd": lambda: [dp_sgd(64)]}[a.only]
        result = fn()
    else:
        result = main(a.out, full=a.full)
    print(json.dumps(result, indent=1), file=sys.stdout)
