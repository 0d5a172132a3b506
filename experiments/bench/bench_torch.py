"""Side-by-side benchmark against PyTorch: jaxfl and a PyTorch implementation, alternately.

  make bench-torch
  python -m experiments.bench.bench_torch --out bench_results [--quick] [--pairs K]
      [--threads 2] [--only uldp_avg_100,dp_sgd_fedavg_cnn,...]
      [--torch-device cpu|cuda] [--torch-python python3]

On a GPU (docs/scale.md, "On a GPU"): ``--torch-device cuda`` runs the PyTorch side on the GPU,
the jaxfl side runs on JAX's default backend (no XLA:CPU flags are passed to it when that is an
accelerator, :func:`experiments.host_devices.accelerator`), and ``--torch-python python3`` uses
an existing interpreter with torch instead of creating ``.venv-torch``. A PyTorch variant whose
dependency is missing there (the Opacus ones without opacus) is reported as skipped, with the
reason, instead of failing the table.

Every row is one workload on real MNIST (``JAXFL_DATA_DIR``), prepared once here with jaxfl's
loaders and builders and written to an ``.npz`` (records, labels, ULDP users and silos, client
offsets, the mixing matrix, jaxfl's initial parameters and the hyperparameters). Then ``K``
pairs of fresh subprocesses run A B A B ...: the jaxfl side (``--side jaxfl``, this module, in
the jaxfl venv) and the PyTorch side (:mod:`experiments.bench.torch_side`, in the torch venv of
:mod:`experiments.bench.torch_env`). Each side runs one warm-up unit of work (jaxfl: after
compiling; its compile time is reported separately) and ``reps`` timed units.

The jaxfl side calls the library only through its public builders with their default
(``"auto"``) layouts, so engine changes show up here without edits:
:func:`experiments.papers.uldp.algorithm_and_data` (ULDP-AVG and its pair layout, as the
Fig. 5(a) experiment builds them), :func:`jaxfl.algorithms.dp_fedavg.dp_fedavg`,
:func:`jaxfl.algorithms.gossip.dp_gossip_avg` and :func:`jaxfl.ghost.model_clipped_grad_sum`
(``"auto"``: ghost norms for the CNNs).

Rows: ULDP-AVG (Fig. 5(a): MNIST, 100 / 1000 users uniform over 5 silos, ULDP CNN, Q = 2,
B = 64, the config's learning rates, sigma = 5, C = 0.1), DP-SGD (FedAvg CNN and ULDP CNN,
batch 64, against Opacus), DP-FedAvg (1000 clients, logreg and MLP 784-200-200-10, one local
epoch of batch-10 steps, full participation) and a DP-GD gossip round (100 nodes, logreg, an
Erdos-Renyi graph). ``--quick`` shrinks the data (seconds to minutes). Each row runs every
PyTorch variant of its kind (:data:`TORCH_VARIANTS`, ``--variants`` to pick): the loop (or
Opacus' default hooks), the vectorized ``torch.func`` form (``vmap``) and, for DP-SGD, Opacus'
functorch and ghost-clipping modes; one table line per variant, against the same jaxfl runs.

Reported per row: each side's median seconds per unit (round or step), the median of the
per-pair speed ratios (jaxfl speed / torch speed = torch seconds / jaxfl seconds) with its
range, the jaxfl compile time, and the loss check: both sides start from the same parameters
(jaxfl's init, converted) and data, so their first unit's mean train loss differs only by the
randomness of shuffling, dropout and noise; they agree when ``|diff| <= 4 * sqrt(2) * se``
(``se``: the torch side's standard error of that mean over its pairs / clients / steps /
nodes; 4 sigma of a difference of two independent means) or within 0.5% (float rounding, for
deterministic losses). Written to ``OUT/bench_torch.md`` and ``OUT/bench_torch.json`` with the
versions, threads, machine and the load average before and after each row.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments import host_devices
from experiments.bench import timing, torch_env

TORCH_SIDE = Path(__file__).with_name("torch_side.py")
SEED = 0


@dataclasses.dataclass(frozen=True)
class Row:
    """One workload: ``kind`` selects the preparation and both sides' code; ``unit`` is what
    one timed unit of work is (``round`` or ``step``); ``params`` its sizes."""

    name: str
    kind: str  # uldp_avg | dp_sgd | dp_fedavg | gossip
    title: str
    unit: str
    params: dict
    reps: int = 2
    work: str = "units"  # what ``size`` (per unit, from the torch side) counts, for throughput
    torch_variants: tuple[str, ...] = ()  # the PyTorch implementations; () = the kind's own

    @property
    def variants(self) -> tuple[str, ...]:
        return self.torch_variants or TORCH_VARIANTS[self.kind]


# The PyTorch side's implementations of each kind (torch_side.WORKLOADS; the first is the
# default), and what a variant needs beyond torch.
TORCH_VARIANTS = {"uldp_avg": ("loop", "vmap"),
                  "dp_sgd": ("opacus", "opacus_functorch", "opacus_ghost", "vmap"),
                  "dp_fedavg": ("loop", "vmap"), "gossip": ("loop", "vmap")}


def variant_requires(variant: str) -> str | None:
    """The module a PyTorch variant needs beyond torch and numpy (None: nothing)."""
    return "opacus" if variant.startswith("opacus") else None


def skipped_variants(row: Row, probe: dict) -> dict[str, str]:
    """The row's variants that cannot run with the probed torch interpreter, with the reason."""
    out = {}
    for v in row.variants:
        need = variant_requires(v)
        if need and not probe.get(need):
            why = probe.get(f"{need}_error") or "not installed"
            out[v] = f"{need} not importable in the torch python ({why})"
    return out


def rows(quick: bool) -> list[Row]:
    """The table's rows (``quick``: small data, fewer timed units)."""
    recs = 3000 if quick else None
    reps = 1 if quick else 2
    uldp_reps = 1  # a full-MNIST round of the ULDP CNN takes minutes
    dps = dict(batch_size=64, steps=2 if quick else 10)
    dps_unit = f"{dps['steps']} steps"
    fed = dict(num_clients=200 if quick else 1000, per_client=60, local_steps=6, batch_size=10,
               sampling_rate=1.0)
    return [
        Row("uldp_avg_100", "uldp_avg", "ULDP-AVG MNIST, 100 users / 5 silos, ULDP CNN", "round",
            dict(num_users=100, max_records=recs), uldp_reps, "pairs"),
        Row("uldp_avg_1000", "uldp_avg", "ULDP-AVG MNIST, 1000 users / 5 silos, ULDP CNN",
            "round", dict(num_users=1000, max_records=recs), uldp_reps, "pairs"),
        Row("dp_sgd_fedavg_cnn", "dp_sgd", "DP-SGD FedAvg CNN, batch 64", dps_unit,
            dict(arch="fedavg_cnn", **dps), reps, "examples"),
        Row("dp_sgd_uldp_cnn", "dp_sgd", "DP-SGD ULDP CNN, batch 64", dps_unit,
            dict(arch="uldp_cnn", **dps), reps, "examples"),
        Row("dp_fedavg_logreg", "dp_fedavg",
            f"DP-FedAvg {fed['num_clients']} clients, logreg", "round",
            dict(arch="logreg", **fed), reps, "clients"),
        Row("dp_fedavg_mlp", "dp_fedavg", f"DP-FedAvg {fed['num_clients']} clients, MLP",
            "round", dict(arch="mlp", **fed), reps, "clients"),
        Row("gossip_logreg", "gossip", "DP-GD gossip round, 100 nodes, logreg", "round",
            dict(nodes=100, per_node=100 if quick else 600), reps, "nodes"),
    ]


# ----------------------------------------------------------------------------- preparation

def _param_name(path) -> str:
    """The ``.npz`` entry of a parameter: ``param:<layer>/<kernel|bias>`` (torch_side reads it)."""
    return "param:" + "/".join(str(getattr(k, "key", getattr(k, "name", k))) for k in path)


def _flat_params(params) -> dict:
    import jax

    return {_param_name(path): np.asarray(leaf, np.float32)
            for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]}


def _unflat_params(template, z):
    import jax

    paths, treedef = jax.tree_util.tree_flatten_with_path(template)
    return jax.tree_util.tree_unflatten(treedef, [np.asarray(z[_param_name(p)]) for p, _ in paths])


def _mnist_train():
    from jaxfl.tasks import images

    return images.classification_arrays("mnist")[:2]


def _uldp_config(num_users, max_records):
    from experiments import config as config_lib
    from experiments.configs.uldp import fig5_mnist

    cfg = fig5_mnist.get_config(f"method=ULDP-AVG,num_users={num_users}")
    return config_lib.apply_overrides(cfg, {"local_epochs": 2, "max_records": max_records})


def prepare(row: Row, path: Path) -> dict:
    """Writes the row's ``.npz`` (arrays for both sides + ``meta`` JSON); returns the meta."""
    import jax

    from jaxfl import models

    p = dict(row.params)
    meta = {"kind": row.kind, **p}
    arrays = {}
    if row.kind == "uldp_avg":
        from experiments.papers import uldp as uldp_paper

        cfg = _uldp_config(p["num_users"], p["max_records"])
        t = uldp_paper.task(cfg)
        train = t.train
        arrays.update(x=train.x, y=train.y, silo=train.silo, user=train.user)
        model = t.model
        hp = dict(num_silos=train.num_silos, num_users=train.num_users,
                  local_epochs=cfg.local_epochs, batch_size=cfg.batch_size,
                  local_lr=cfg.local_lr, global_lr=cfg.global_lr, clip_norm=cfg.clip_norm,
                  noise_multiplier=cfg.noise_multiplier)
        meta.update(hp, records=len(train.x), arch="uldp_cnn")
    else:
        x, y = _mnist_train()
        if row.kind == "dp_sgd":
            n = p["batch_size"] * p["steps"] * 2
            arrays.update(x=x[:n], y=y[:n])
            model = models.get_model(p["arch"])
            hp = dict(lr=0.05, clip_norm=1.0, noise_multiplier=1.0)
        elif row.kind == "dp_fedavg":
            N, m = p["num_clients"], p["per_client"]
            rng = np.random.default_rng(SEED)
            sel = rng.permutation(len(x))[:N * m]
            arrays.update(x=x[sel].reshape(N * m, 784), y=y[sel],
                          offsets=np.arange(N + 1) * m)
            model = models.get_model(p["arch"])
            hp = dict(client_lr=0.05, clip_norm=1.0, noise_multiplier=1.0)
        elif row.kind == "gossip":
            from jaxfl.topology import graphs, mixing

            n, m = p["nodes"], p["per_node"]
            sel = np.random.default_rng(SEED).permutation(len(x))[:n * m]
            arrays.update(x=x[sel].reshape(n, m, 784), y=y[sel].reshape(n, m),
                          W=mixing.max_degree(graphs.erdos_renyi(n, 0.1, seed=1)))
            model = models.get_model("logreg")
            hp = dict(clip_norm=1.0, noise_multiplier=1.0, learning_rate=1.0,
                      normalizer=float(m))
        else:
            raise ValueError(f"Unknown row kind {row.kind!r}.")
        meta.update(hp)
    params = model.init(jax.random.key(SEED))
    if row.kind == "gossip":
        params = params["dense"]  # the gossip algorithms take {"kernel", "bias"}
    meta["num_params"] = int(sum(np.size(v) for v in jax.tree.leaves(params)))
    scalars = {k: np.asarray(v) for k, v in meta.items() if v is not None}
    np.savez(path, meta=json.dumps(meta), **scalars, **arrays, **_flat_params(params))
    return meta


# ----------------------------------------------------------------------------- jaxfl side

def uldp_built(z, meta: dict):
    """The jaxfl side of a ``uldp_avg`` row: ``(algorithm, pair data, initial params)`` built
    from the row's ``.npz`` by the paper builder, with the engine's layout."""
    import types

    import jax

    from experiments.papers import uldp as uldp_paper
    from jaxfl.algorithms import uldp_data
    from jaxfl.tasks import silos

    model = silos.model_of("mnist")
    cfg = _uldp_config(meta["num_users"], meta["max_records"])
    train = uldp_data.UldpData(x=z["x"], y=z["y"], silo=z["silo"], user=z["user"],
                               num_silos=meta["num_silos"], num_users=meta["num_users"])
    alg, data, _ = uldp_paper.algorithm_and_data(cfg, types.SimpleNamespace(train=train), model)
    return alg, data, _unflat_params(model.init(jax.random.key(SEED)), z)


def fedavg_built(z, meta: dict, client_batch="auto"):
    """The jaxfl side of a ``dp_fedavg`` row: ``(algorithm, client data, model)`` from the
    row's arrays (``client_batch``: the cohort layout request, the engine's by default)."""
    from jaxfl import models
    from jaxfl.algorithms import dp_fedavg
    from jaxfl.data import federated

    model = models.get_model(meta.get("arch", "mlp"))
    off = z["offsets"]
    parts = [np.arange(off[c], off[c + 1]) for c in range(len(off) - 1)]
    data = federated.from_partition(z["x"], z["y"], parts)
    alg = dp_fedavg.dp_fedavg(
        model, num_clients=len(parts), local_steps=meta["local_steps"],
        batch_size=meta["batch_size"], client_lr=meta["client_lr"],
        clip_norm=meta["clip_norm"], noise_multiplier=meta["noise_multiplier"],
        sampling_rate=meta["sampling_rate"], client_batch=client_batch)
    return alg, data, model


def jaxfl_side(kind: str, npz: str, reps: int) -> dict:
    """Runs one workload on the jaxfl side; returns the side's JSON record."""
    import jax
    import jax.numpy as jnp

    from jaxfl import compilation_cache, ghost, layout, models, noise
    from jaxfl.algorithms import gossip
    from jaxfl.data import federated

    compilation_cache.setup()  # the driver's per-run directory (JAXFL_COMPILATION_CACHE)
    z = np.load(npz, allow_pickle=False)
    meta = json.loads(str(z["meta"]))
    rng = np.random.default_rng(SEED)
    extra = {}
    if kind in ("uldp_avg", "dp_fedavg", "gossip"):
        if kind == "uldp_avg":
            alg, data, params = uldp_built(z, meta)
            extra["buckets"] = [[int(b.index.shape[0]), int(b.index.shape[1]), int(b.chunk),
                                 int(b.shards)]
                                for b in data.buckets]
        elif kind == "dp_fedavg":
            alg, data, model = fedavg_built(z, meta)
            params = _unflat_params(model.init(jax.random.key(SEED)), z)
        else:
            n, m = z["x"].shape[:2]
            data = federated.from_client_arrays(list(z["x"]), list(z["y"]))
            alg = gossip.dp_gossip_avg(mixing_matrix=z["W"], clip_norm=meta["clip_norm"],
                                       noise_multiplier=meta["noise_multiplier"],
                                       learning_rate=meta["learning_rate"],
                                       normalizer=meta["normalizer"])
            params = _unflat_params(gossip.logreg_init(784, 10), z)
        data = data.to_device()
        state = {"s": alg.init(params)}
        apply = jax.jit(alg.apply)
        key = jax.random.key(SEED + 1)
        ri0 = alg.prepare(0, rng)
        t0 = time.perf_counter()
        compiled = apply.lower(state["s"], data, ri0, key).compile()
        compile_s = time.perf_counter() - t0

        def run(r, ri=None):
            ri = alg.prepare(r, rng) if ri is None else ri
            state["s"], diag = compiled(state["s"], data, ri, jax.random.fold_in(key, r))
            return diag

        t = timing.timed(lambda r: run(0, ri0) if r == 0 else run(r), repeats=reps)
        diag, warm, times = t.first_out, t.first_s, t.times_s
        loss = float(diag["train_loss"])
        extra["cost"] = program_cost(apply, (state["s"], data, ri0, key), compiled)
        if os.environ.get("JAXFL_BENCH_TRACE"):  # after the timed rounds: a device trace
            from experiments.bench import trace_phases

            extra["trace"] = trace_phases.record(
                os.environ["JAXFL_BENCH_TRACE"], kind, compiled,
                lambda: jax.block_until_ready(run(reps + 1)))
    elif kind == "dp_sgd":
        model = models.get_model(meta["arch"])
        params = _unflat_params(model.init(jax.random.key(SEED)), z)
        B, steps = meta["batch_size"], meta["steps"]
        C, sigma, lr = meta["clip_norm"], meta["noise_multiplier"], meta["lr"]
        x, y = jnp.asarray(z["x"]), jnp.asarray(z["y"])
        nb = x.shape[0] // B
        mask = jnp.ones(B, bool)

        @jax.jit
        def step(p, b, key):
            xb = jax.lax.dynamic_slice_in_dim(x, b * B, B)
            yb = jax.lax.dynamic_slice_in_dim(y, b * B, B)
            keys = jax.random.split(jax.random.fold_in(key, 0), B)  # training mode (dropout)
            total, _ = ghost.model_clipped_grad_sum(model, p, xb, yb, mask, clip_norm=C,
                                                       keys=keys)
            noisy = noise.add_gaussian(total, jax.random.fold_in(key, 1), sigma * C)
            return jax.tree.map(lambda a, g: a - lr * g / B, p, noisy)

        @jax.jit
        def batch_loss(p, b, key):
            xb = jax.lax.dynamic_slice_in_dim(x, b * B, B)
            yb = jax.lax.dynamic_slice_in_dim(y, b * B, B)
            return model.batch_loss(p, xb, yb, mask, key=key)

        key = jax.random.key(SEED + 1)
        t0 = time.perf_counter()
        compiled = step.lower(params, 0, key).compile()
        compile_s = time.perf_counter() - t0
        holder = {"p": params, "b": 0}

        def unit(_, losses=None):
            for _ in range(steps):
                b = holder["b"] % nb
                k = jax.random.fold_in(key, holder["b"])
                if losses is not None:  # the loss check (the warm-up unit only: untimed work)
                    losses.append(float(batch_loss(holder["p"], b, k)))
                holder["p"] = compiled(holder["p"], b, k)
                holder["b"] += 1
            return holder["p"]

        first_losses = []
        t = timing.timed(lambda r: unit(0, first_losses) if r == 0 else unit(r), repeats=reps)
        warm, times = t.first_s, t.times_s
        loss = float(np.mean(first_losses))
        one = program_cost(step, (params, 0, key), compiled)  # one step; a unit is `steps`
        extra["cost"] = {k: (v * steps if k in ("flops", "dot_flops", "bytes", "kernels",
                                                 "xla_flops", "xla_bytes") and v is not None
                             else v) for k, v in one.items()}
    else:
        raise ValueError(f"Unknown workload {kind!r}.")
    import jaxlib

    return {"side": "jaxfl", "workload": kind, "seconds": float(np.mean(times)),
            "per_unit": times, "warmup_s": warm, "compile_s": compile_s, "loss": loss,
            "loss_se": None, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "backend": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
            "device_count": jax.device_count(), "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "compilation_cache": compilation_cache.current_dir(),
            "deterministic": layout.deterministic(), **extra}


def program_cost(fn, args, compiled) -> dict:
    """The work of one call of a jaxfl side's program (:func:`jaxfl.roofline.count`: on an
    accelerator, FLOPs and bytes from a CPU lowering of the same function)."""
    from jaxfl import roofline

    return roofline.count(fn, args, compiled)


# ----------------------------------------------------------------------------- driver

def thread_env(threads: int, accelerator: str | None = None, environ=None) -> dict:
    """The environment of both sides' subprocesses: ``threads`` intra-op threads each.

    On the CPU backend (``accelerator`` None) the jaxfl side gets XLA:CPU's thread flag and one
    host device per thread. When JAX's default backend is an accelerator (``"cuda"``, ...) it
    gets no CPU-only flag: XLA:CPU flags are dropped from an inherited ``XLA_FLAGS`` and
    ``JAXFL_HOST_DEVICES`` is unset, so the side runs on the accelerator as JAX starts it.
    """
    env = dict(os.environ if environ is None else environ)
    if accelerator is None:
        env["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}"
        env["JAXFL_HOST_DEVICES"] = str(threads)  # the jaxfl side: one host device per thread
    else:
        flags = [f for f in env.get("XLA_FLAGS", "").split()
                 if not f.startswith(("--xla_cpu_", host_devices.FLAG))]
        if flags:
            env["XLA_FLAGS"] = " ".join(flags)
        else:
            env.pop("XLA_FLAGS", None)
        env.pop("JAXFL_HOST_DEVICES", None)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env.setdefault("PYTHONPATH", str(torch_env.ROOT))
    return env


def side_command(side: str, kind: str, npz: str, reps: int, threads: int,
                 torch_python: str | None = None, device: str = "cpu") -> list[str]:
    """The command of one side run: ``jaxfl``, or ``torch`` / ``torch:<variant>``."""
    if side == "jaxfl":
        return [sys.executable, "-m", "experiments.bench.bench_torch", "--side", "jaxfl",
                "--workload", kind, "--npz", npz, "--reps", str(reps)]
    cmd = [str(torch_python), str(TORCH_SIDE), kind, npz, "--threads", str(threads),
           "--reps", str(reps), "--seed", str(SEED), "--device", device]
    if ":" in side:
        cmd += ["--variant", side.split(":", 1)[1]]
    return cmd


def alternation(pairs: int, torch_sides=("torch",)) -> list[tuple[int, str]]:
    """The run order: (pair, side) for A B A B ... (jaxfl first in every pair, then each
    PyTorch variant)."""
    return [(i, side) for i in range(pairs) for side in ("jaxfl", *torch_sides)]


def resolve_torch_python(arg: str | None) -> Path:
    """The torch interpreter: ``--torch-python`` (a path or a name on ``PATH``) as given, else
    :func:`experiments.bench.torch_env.ensure` (``JAXFL_TORCH_PYTHON`` or ``.venv-torch``)."""
    if arg is None:
        return torch_env.ensure()
    found = shutil.which(arg)
    if found is None:
        raise SystemExit(f"--torch-python {arg!r}: no such interpreter.")
    return Path(found)


def probe_torch(torch_python, device: str, env: dict, timeout: float = 300.0) -> dict:
    """Asks the torch interpreter for its versions, device name and opacus (torch_side probe);
    exits with the reason when torch does not import or ``device`` is not usable there."""
    cmd = [str(torch_python), str(TORCH_SIDE), "probe", "--device", device]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False, cwd=str(torch_env.ROOT))
    if proc.returncode != 0:
        raise SystemExit(f"The torch python {torch_python} failed its probe "
                         f"({' '.join(cmd)}):\n{(proc.stderr or proc.stdout)[-1500:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    if device == "cuda" and not info["cuda_available"]:
        raise SystemExit(f"--torch-device cuda: torch {info['torch']} in {torch_python} sees "
                         "no CUDA device (torch.cuda.is_available() is False).")
    return info


def run_side(cmd, env, timeout) -> dict:
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False, cwd=str(torch_env.ROOT))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s (--timeout)"}
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout)[-1500:]}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": f"no JSON result: {(proc.stdout + proc.stderr)[-1500:]}"}


def loss_check(jax_out: dict, torch_out: dict) -> dict:
    """Whether both sides' first-unit mean train losses agree to sampling noise (docstring)."""
    a, b = jax_out["loss"], torch_out["loss"]
    ses = [s for s in (jax_out.get("loss_se"), torch_out.get("loss_se")) if s is not None]
    se = float(np.sqrt(2.0) * max(ses)) if ses else 0.0
    tol = max(4.0 * se, 0.005 * abs(b))
    return {"jaxfl_loss": a, "torch_loss": b, "diff": a - b, "tolerance": tol,
            "agree": bool(abs(a - b) <= tol)}


def _variant_of(row: Row, side: str) -> str:
    return side.split(":", 1)[1] if ":" in side else row.variants[0]


def summarize(row: Row, outs: list[tuple[str, dict]], skipped: dict | None = None) -> dict:
    """The table row of one workload from its side outputs (in run order).

    ``outs``: ``("jaxfl", out)`` and ``("torch" | "torch:<variant>", out)`` entries; ``skipped``:
    variant -> reason for the PyTorch variants that were not run. ``res["variants"]`` holds one
    entry per variant (its seconds, per-pair ratios against the jaxfl run of the same pair, loss
    check); the top-level torch fields repeat the first variant that ran.
    """
    skipped = dict(skipped or {})
    jx_all = [o for s, o in outs if s == "jaxfl"]
    jx = [o for o in jx_all if "error" not in o]
    errors = [f"{s}: {o['error']}" for s, o in outs if "error" in o]
    res = {"row": row.name, "title": row.title, "unit": row.unit, "work": row.work,
           "params": row.params, "pairs": len(jx_all), "errors": errors, "skipped": skipped,
           "variants": []}
    if jx:
        res["jaxfl_s"] = float(np.median([o["seconds"] for o in jx]))
        res["jaxfl_compile_s"] = float(np.median([o["compile_s"] for o in jx]))
        # The sides share the run's compilation cache: the first compiles, the rest load.
        res["jaxfl_compile_cold_s"] = jx[0]["compile_s"]
        if len(jx) > 1:
            res["jaxfl_compile_cached_s"] = float(np.median([o["compile_s"] for o in jx[1:]]))
        if jx[0].get("cost") and "error" not in jx[0]["cost"]:
            res["jaxfl_cost"] = jx[0]["cost"]
        res["jaxfl_runs_s"] = [o["seconds"] for o in jx]
        res.update({k: jx[0][k] for k in ("jax", "jaxlib", "xla_flags", "backend",
                                          "device_kind", "device_count") if k in jx[0]})
    for variant in row.variants:
        if variant in skipped:
            res["variants"].append({"variant": variant, "skipped": skipped[variant]})
            continue
        mine = [o for s, o in outs if s != "jaxfl" and _variant_of(row, s) == variant]
        th = [o for o in mine if "error" not in o]
        v = {"variant": variant, "runs": len(mine)}
        if th:
            v["torch_s"] = float(np.median([o["seconds"] for o in th]))
            v["torch_runs_s"] = [o["seconds"] for o in th]
            v.update({k: th[0][k] for k in ("torch", "opacus", "threads", "interop_threads",
                                            "device") if k in th[0]})
            v["size"] = th[0]["size"]  # work per unit (pairs, examples, clients, nodes)
        # Pairs in run order: the i-th jaxfl output with this variant's i-th output.
        pair_list = [(a, b) for a, b in zip(jx_all, mine, strict=False)
                     if "error" not in a and "error" not in b]
        if pair_list:
            ratios = [b["seconds"] / a["seconds"] for a, b in pair_list]
            v.update(ratio=float(np.median(ratios)), ratio_min=min(ratios),
                     ratio_max=max(ratios), ratios=ratios,
                     loss=loss_check(pair_list[0][0], pair_list[0][1]))
        res["variants"].append(v)
    ran = [v for v in res["variants"] if "torch_s" in v]
    if ran:
        res.update({k: val for k, val in ran[0].items() if k not in ("variant", "runs")})
        res["torch_variant"] = ran[0]["variant"]
    return res


def _peaks(side: dict) -> dict:
    """The peak row of the jaxfl side's device (:data:`jaxfl.roofline.PEAKS`; a CPU measured
    once per benchmark run, in this process)."""
    from jaxfl import roofline

    return roofline.peaks(side.get("device_kind", "cpu"), side.get("backend", "cpu"))


def roofline_of(res: dict, peak: dict) -> dict:
    """The row's roofline (:func:`jaxfl.roofline.roofline`) from its counted work and median
    seconds per unit."""
    from jaxfl import roofline

    return roofline.roofline(res["jaxfl_cost"], res["jaxfl_s"], peak)


def _fmt(v, digits=3):
    if v is None:
        return ""
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def header(info: dict, results: list[dict]) -> list[str]:
    """The report's versions and devices: the torch interpreter's probe and the jaxfl side's
    backend (from its first successful run)."""
    jx = next((r for r in results if r.get("backend")), {})
    probe = info.get("torch_probe") or {}
    accel = info.get("accelerator")
    if accel is None:
        threads = (f"threads per side {info['threads']} (XLA_FLAGS `{info['xla_flags']}`, "
                   f"`torch.set_num_threads({info['threads']})`; jaxfl runs on "
                   f"{info['threads']} host device(s), `JAXFL_HOST_DEVICES`)")
    else:
        threads = (f"jaxfl on JAX's default backend (no XLA:CPU flags), PyTorch with "
                   f"`torch.set_num_threads({info['threads']})` for its host work")
    return [
        f"Machine {info['machine']} ({info['processor']}, {info['cpus']} CPUs), python "
        f"{info['python']}, {threads}, {info['pairs']} alternating pair(s) per "
        f"row{' (--quick sizes)' if info['quick'] else ''}, {info['date']}.",
        f"jaxfl: jax {jx.get('jax', info.get('jax', '?'))}, jaxlib {jx.get('jaxlib', '?')}, "
        f"backend {jx.get('backend', '?')}, device {jx.get('device_kind', '?')} "
        f"(x{jx.get('device_count', '?')}). PyTorch: torch {probe.get('torch', '?')} on "
        f"{info.get('torch_device', 'cpu')} ({probe.get('device_name', '?')}), opacus "
        f"{probe.get('opacus') or 'not installed'}, python {probe.get('python', '?')} "
        f"(`{info.get('torch_python', '?')}`).",
    ]


def _peaks_line(p: dict) -> str:
    tf32 = f", TF32 dots {p['tf32_flops'] / 1e12:.4g} TFLOP/s" if p.get("tf32_flops") else ""
    return (f"float32 {p['fp32_flops'] / 1e12:.4g} TFLOP/s{tf32}, memory "
            f"{p['mem_bytes_s'] / 1e9:.4g} GB/s, {p['launch_s'] * 1e6:.3g} us per kernel")


def _compile_cell(r: dict) -> str:
    if "jaxfl_compile_cold_s" not in r:
        return _fmt(r.get("jaxfl_compile_s"))
    return (f"{_fmt(r['jaxfl_compile_cold_s'])} / "
            f"{_fmt(r.get('jaxfl_compile_cached_s')) or '-'}")  # '-': one pair, no cached run


def _roofline_cells(r: dict) -> str:
    """The three roofline cells of a row (blank for runs saved before they existed)."""
    c, f = r.get("jaxfl_cost"), r.get("roofline")
    if not c:
        return " | "
    work = f"{c['flops'] / 1e9:.3g} / {c['bytes'] / 1e9:.3g} / {c['kernels']:.0f}"
    if not f:
        return f"{work} |  | "
    from jaxfl import roofline

    rates = (f"{f['flop_s'] / 1e9:.3g} ({100 * f['of_fp32_peak']:.3g}%), "
             f"{f['bytes_s'] / 1e9:.3g} ({100 * f['of_mem_peak']:.3g}%)")
    return f"{work} | {rates} | {roofline.summary(f)}"


def to_markdown(results: list[dict], info: dict) -> str:
    # Runs saved before the counts and the shared compilation cache render as they did.
    counted = any(r.get("jaxfl_cost") for r in results)
    cached = any("jaxfl_compile_cold_s" in r for r in results)
    lines = [
        "# jaxfl vs PyTorch, side by side",
        "",
        *header(info, results),
        "Seconds per unit (round or step) after a warm-up unit (jaxfl: after compiling); "
        "ratio = jaxfl speed / torch speed, the median of the per-pair ratios (min-max). One "
        "line per PyTorch variant of a workload, against the same jaxfl runs.",
        "",
        "| workload | unit | torch variant | jaxfl s | torch s | ratio (min-max) | "
        f"throughput jaxfl / torch | jaxfl compile s{' (cold / cached)' if cached else ''} | "
        "loss jaxfl / torch (tol) | load before -> after |"
        + (" jaxfl GFLOP / GB / kernels per unit | jaxfl GFLOP/s, GB/s (of peak) | bound (of "
           "limit) |" if counted else ""),
        "|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if counted else ""),
    ]
    for r in results:
        variants = r.get("variants") or [{"variant": r.get("torch_variant", ""), **r}]
        load = (f"{r['load_before']:.2f} -> {r['load_after']:.2f}"
                if "load_before" in r else "")
        for v in variants:
            loss = v.get("loss")
            lc = (f"{loss['jaxfl_loss']:.4f} / {loss['torch_loss']:.4f} "
                  f"({loss['tolerance']:.3g}) {'ok' if loss['agree'] else 'DIFFER'}"
                  if loss else "")
            if "skipped" in v:
                ratio = f"skipped: {v['skipped']}"
            elif "ratio" in v:
                ratio = f"**{v['ratio']:.2f}x** ({v['ratio_min']:.2f}-{v['ratio_max']:.2f})"
            else:
                ratio = "; ".join(e[:80].replace("\n", " ") for e in r["errors"]) or ""
            thr = ""
            if v.get("size") and r.get("jaxfl_s") and v.get("torch_s"):
                thr = (f"{v['size'] / r['jaxfl_s']:.4g} / {v['size'] / v['torch_s']:.4g} "
                       f"{r.get('work', 'units')}/s")
            lines.append(
                f"| {r['title']} | {r['unit']} | {v.get('variant', '')} | "
                f"{_fmt(r.get('jaxfl_s'))} | {_fmt(v.get('torch_s'))} | {ratio} | {thr} | "
                f"{_compile_cell(r)} | {lc} | {load} |"
                + (f" {_roofline_cells(r)} |" if counted else ""))
    if counted:
        lines += ["", "Roofline columns (jaxfl.roofline): the jaxfl program's FLOPs, bytes "
                  "and kernel launches per unit, counted on its compiled HLO with loop trip "
                  "counts (off the CPU: FLOPs and bytes from a CPU lowering of the same "
                  "program); achieved rates with the fraction of the device's peak (float32 "
                  "FLOP/s; memory bandwidth); bound = the largest of the compute, bandwidth "
                  "and launch floors, and how close the measured time is to it."
                  + (f" Peaks ({info['peaks']['name']}): {_peaks_line(info['peaks'])}."
                     if info.get("peaks") else "")]
    lines += ["",
              "Loss check: both sides start from jaxfl's initial parameters on the same "
              "records; the first unit's mean train loss agrees when |diff| <= "
              "4 sqrt(2) se (se: the torch side's standard error over its pairs / clients / "
              "steps / nodes) or within 0.5%.", ""]
    return "\n".join(lines)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench_results")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pairs", type=int, default=None, help="default 3 (--quick: 1)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default=None, help="comma-separated row names")
    ap.add_argument("--variants", default=None,
                    help="comma-separated PyTorch variants to run (default: all of each row: "
                         "loop / opacus, opacus_functorch, opacus_ghost, vmap)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per side run")
    ap.add_argument("--torch-device", choices=("cpu", "cuda"), default="cpu",
                    help="where the PyTorch side runs (the jaxfl side: JAX's default backend)")
    ap.add_argument("--torch-python", default=None,
                    help="an existing interpreter with torch (path or name on PATH, e.g. "
                         "python3) instead of .venv-torch / JAXFL_TORCH_PYTHON")
    ap.add_argument("--render", default=None, metavar="JSON",
                    help="print the table of a saved bench_torch.json (e.g. one committed "
                         "under docs/scale/) and exit; nothing is run")
    ap.add_argument("--no-compilation-cache", action="store_true",
                    help="the jaxfl sides compile every time (default: they share one "
                         "persistent compilation cache per benchmark run, in its temporary "
                         "directory: the first pair's compile is cold, the others load)")
    # Internal: one jaxfl side run (a subprocess of the driver).
    ap.add_argument("--side", choices=("jaxfl",), default=None, help=argparse.SUPPRESS)
    ap.add_argument("--workload", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--npz", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=2, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def select_rows(quick: bool, only: str | None, variants: str | None = None) -> list[Row]:
    """The rows to run (``only``: row names) with their PyTorch variants (``variants``: the
    variant names to keep; a row left without any is dropped)."""
    selected = rows(quick)
    if only:
        names = only.split(",")
        unknown = sorted(set(names) - {r.name for r in selected})
        if unknown:
            raise SystemExit(f"Unknown rows {unknown}; expected some of "
                             f"{[r.name for r in selected]}.")
        selected = [r for r in selected if r.name in names]
    if variants:
        keep = variants.split(",")
        known = {v for vs in TORCH_VARIANTS.values() for v in vs}
        unknown = sorted(set(keep) - known)
        if unknown:
            raise SystemExit(f"Unknown variants {unknown}; expected some of {sorted(known)}.")
        selected = [dataclasses.replace(r, torch_variants=tuple(v for v in r.variants
                                                                if v in keep))
                    for r in selected if any(v in keep for v in r.variants)]
    return selected


def main(argv=None) -> list[dict]:
    a = parse_args(argv)
    if a.side == "jaxfl":
        print(json.dumps(jaxfl_side(a.workload, a.npz, a.reps)))
        return []
    if a.render:
        saved = json.loads(Path(a.render).read_text())
        print(to_markdown(saved["rows"], saved["info"]))
        return saved["rows"]
    pairs = a.pairs if a.pairs is not None else (1 if a.quick else 3)
    if pairs < 1 or a.threads < 1:
        raise SystemExit("--pairs and --threads must be >= 1.")
    selected = select_rows(a.quick, a.only, a.variants)
    if not os.environ.get("JAXFL_DATA_DIR"):
        raise SystemExit("Set JAXFL_DATA_DIR (real MNIST is loaded from it).")
    accel = host_devices.accelerator()
    env = thread_env(a.threads, accel)
    torch_python = resolve_torch_python(a.torch_python)
    probe = probe_torch(torch_python, a.torch_device, env)
    if accel is not None:
        # This process only prepares the data: on the CPU, leaving the accelerator's memory to
        # the side runs (set before JAX starts a backend here).
        import jax

        jax.config.update("jax_platforms", "cpu")
    info = {**timing.machine(), "threads": a.threads, "xla_flags": env.get("XLA_FLAGS", ""),
            "pairs": pairs, "quick": a.quick, "date": time.strftime("%Y-%m-%d %H:%M"),
            "torch_python": str(torch_python), "torch_device": a.torch_device,
            "torch_probe": probe, "accelerator": accel, "argv": sys.argv[1:] if argv is None
            else list(argv)}
    print("\n".join(header(info, [])), flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        env["JAXFL_COMPILATION_CACHE"] = ("0" if a.no_compilation_cache
                                          else str(Path(tmp) / "xla"))
        peak = None
        for row in selected:
            skipped = skipped_variants(row, probe)
            sides = [f"torch:{v}" for v in row.variants if v not in skipped]
            for v, why in skipped.items():
                print(f"[{row.name}] {v}: skipped, {why}", flush=True)
            load_before = os.getloadavg()[0]
            outs, meta = [], None
            if sides:  # nothing to compare with: the jaxfl side is not run either
                npz = str(Path(tmp) / f"{row.name}.npz")
                meta = prepare(row, Path(npz))
                for i, side in alternation(pairs, sides):
                    cmd = side_command(side, row.kind, npz, row.reps, a.threads, torch_python,
                                       a.torch_device)
                    res = run_side(cmd, env, a.timeout)
                    outs.append((side, res))
                    print(f"[{row.name}] pair {i} {side}: "
                          f"{res.get('seconds', res.get('error', '')[-300:])}", flush=True)
            res = summarize(row, outs, skipped)
            if "jaxfl_cost" in res:
                jx = next(o for s, o in outs if s == "jaxfl" and "error" not in o)
                peak = peak or _peaks(jx)
                info["peaks"] = {k: v for k, v in peak.items() if k != "source"}
                info["peaks_source"] = peak.get("source")
                res["roofline"] = roofline_of(res, peak)
            res.update(meta=meta, load_before=load_before, load_after=os.getloadavg()[0],
                       sides=[{"side": s, **o} for s, o in outs])
            results.append(res)
            timing.write_run(a.out, "bench_torch", info, results, to_markdown(results, info))
    print(to_markdown(results, info))
    return results


if __name__ == "__main__":
    host_devices.configure()  # before JAX starts: one host device per core (CPU backend only)
    main()
