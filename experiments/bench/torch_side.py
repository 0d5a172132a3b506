"""The PyTorch side of ``experiments.bench.bench_torch`` (run by the torch venv's python).

  .venv-torch/bin/python experiments/bench/torch_side.py WORKLOAD INPUT.npz --threads 2 \
      [--variant loop] [--device cpu|cuda]
  python3 experiments/bench/torch_side.py probe --device cuda   # versions, device, opacus?

Imports torch, opacus and numpy only (never jaxfl: the venv does not have it; opacus only in
the variants that use it, so the others run where it is not installed). Reads the
workload's arrays and hyperparameters from the ``.npz`` the driver wrote with jaxfl's loaders
(the initial parameters are jaxfl's, converted here to PyTorch layouts), runs one warm-up unit
of work and ``reps`` timed ones, and prints one JSON line: ``seconds`` per unit (mean of the
timed units), ``per_unit`` (every timed unit), ``loss`` and ``loss_se`` of the first unit (its
mean train loss and the standard error over its pairs / clients / steps / nodes), versions and
threads. ``--device cuda`` puts every model, tensor and generator on the GPU
(``torch.set_default_device``, generators made on the device, ``.to(device)`` for the arrays
read from the ``.npz``) and synchronises before every clock read. Workloads (variant in
brackets; the first is the default):

* ``uldp_avg`` [``loop``, ``vmap``]: a straightforward ULDP-AVG round: for every (silo, user) pair,
  a deep copy of the global model, Q epochs of SGD over the pair's records (reshuffled each
  epoch, the last partial batch kept, as a shuffled ``DataLoader``), the delta clipped to C,
  weighted 1/|S|, summed per silo; each silo adds N(0, sigma^2 C^2 / |S|);
  ``x += eta_g sum / (|U||S|)``.
* ``dp_sgd`` [``opacus``, ``opacus_functorch``, ``opacus_ghost``, ``vmap``]: Opacus
  (``GradSampleModule`` + ``DPOptimizer``) DP-SGD steps, in Opacus' three per-sample modes
  (:func:`dp_sgd`), or torch.func per-example gradients; unit = ``steps`` steps.
* ``dp_fedavg`` [``loop``, ``vmap``]: a DP-FedAvg round as a loop over clients (deep copy, local SGD
  with fixed steps over wrap-around shuffled batches, clip, sum, one Gaussian noise,
  ``x += sum / (qN)``).
* ``gossip`` [``loop``, ``vmap``]: one DP-GD gossip round of logistic regression as a loop
  over nodes (per-example clipped gradient sum via ``torch.func``, noise
  ``N(0, sigma^2 C^2)``, ``w - lr (g + xi) / B``), then ``W @ w`` over the node axis.

``vmap`` is the vectorized form of each loop: the same work with torch.func over the unit axis
(see "vectorized" below: padding and masks as jaxfl, the same clipping and noise).
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, grad_and_value, vmap

DEVICE = torch.device("cpu")  # set by main() (--device)
# --profile: seconds per phase of a unit, summed over the timed units (uldp_avg vmap only)
PROFILE: dict[str, float] | None = None


def _lap(name: str, t0: float) -> float:
    """Adds the time since ``t0`` to ``PROFILE[name]`` (after a device sync); the new ``t0``."""
    if PROFILE is None:
        return t0
    _sync()
    now = time.perf_counter()
    PROFILE[name] = PROFILE.get(name, 0.0) + now - t0
    return now


def _t(a, dtype):
    """A tensor on ``DEVICE`` from an array of the ``.npz``."""
    return torch.from_numpy(np.asarray(a, dtype)).to(DEVICE)


def _sync():
    """Waits for the device's queued work (a no-op on the CPU): called before clock reads."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


# ----------------------------------------------------------------------------- models

class CNN(nn.Module):
    """jaxfl's ConvNet (``fedavg_cnn`` / ``uldp_cnn``) in NCHW; flattening in NHWC order so
    jaxfl's dense kernels load unchanged (transposed)."""

    def __init__(self, arch: str):
        super().__init__()
        if arch == "uldp_cnn":
            feats, hidden, pad, drop = (10, 20), (50,), 0, 0.5
        elif arch == "fedavg_cnn":
            feats, hidden, pad, drop = (32, 64), (512,), 2, 0.0
        else:
            raise ValueError(f"Unknown CNN {arch!r}.")
        self.drop = drop
        self.convs = nn.ModuleList()
        cin, size = 1, 28
        for f in feats:
            self.convs.append(nn.Conv2d(cin, f, 5, padding=pad))
            size = (size + 2 * pad - 4) // 2
            cin = f
        widths = (cin * size * size,) + hidden
        self.dense = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.head = nn.Linear(widths[-1], 10)

    def forward(self, x):  # x: [B, 28, 28, 1] (jaxfl layout)
        x = x.permute(0, 3, 1, 2)
        for i, conv in enumerate(self.convs):
            x = conv(x)
            if self.drop and i == len(self.convs) - 1:
                x = F.dropout2d(x, self.drop, self.training)
            x = F.relu(F.max_pool2d(x, 2))
        x = x.permute(0, 2, 3, 1).flatten(1)
        for d in self.dense:
            x = F.relu(d(x))
            if self.drop:
                x = F.dropout(x, self.drop, self.training)
        return self.head(x)


class MLP(nn.Module):
    """``logreg`` (no hidden layer) or ``mlp`` (784-200-200-10)."""

    def __init__(self, hidden=()):
        super().__init__()
        widths = (784,) + tuple(hidden)
        self.dense = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.head = nn.Linear(widths[-1], 10)

    def forward(self, x):
        x = x.flatten(1)
        for d in self.dense:
            x = F.relu(d(x))
        return self.head(x)


def build_model(arch: str) -> nn.Module:
    if arch in ("uldp_cnn", "fedavg_cnn"):
        return CNN(arch)
    if arch == "logreg":
        return MLP()
    if arch == "mlp":
        return MLP((200, 200))
    raise ValueError(f"Unknown architecture {arch!r}.")


def load_jaxfl_params(model: nn.Module, z) -> None:
    """Copies jaxfl's parameters (``param:<layer>/<kernel|bias>`` entries; layers ``conv_i``,
    ``dense_i``, ``head``; logistic regression has one layer of any name, maybe ``""``)."""
    targets = [(f"conv_{i}", m) for i, m in enumerate(getattr(model, "convs", []))]
    targets += [(f"dense_{i}", m) for i, m in enumerate(model.dense)]
    targets.append(("head", model.head))
    layers = {k[len("param:"):].rpartition("/")[0] for k in z.files if k.startswith("param:")}
    if len(targets) == 1 and len(layers) == 1:  # logistic regression: its one affine layer
        targets = [(layers.pop(), model.head)]
    with torch.no_grad():
        for name, mod in targets:
            prefix = f"{name}/" if name else ""
            k = np.asarray(z[f"param:{prefix}kernel"], np.float32)
            b = np.asarray(z[f"param:{prefix}bias"], np.float32)
            w = k.transpose(3, 2, 0, 1) if k.ndim == 4 else k.T  # HWIO -> OIHW; [in,out] -> T
            if tuple(mod.weight.shape) != w.shape:
                raise ValueError(f"Parameter {prefix}kernel: jaxfl {k.shape} does not fit "
                                 f"torch {tuple(mod.weight.shape)}.")
            mod.weight.copy_(_t(np.ascontiguousarray(w), np.float32))
            mod.bias.copy_(_t(b, np.float32))


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def set_flat(model, vec):
    with torch.no_grad():
        i = 0
        for p in model.parameters():
            n = p.numel()
            p.copy_(vec[i:i + n].view_as(p))
            i += n


def clip(v, c):
    return v * min(1.0, c / max(float(v.norm()), 1e-12))


def _se(values) -> float:
    v = np.asarray(values, np.float64)
    return float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0


# ----------------------------------------------------------------------------- workloads

def _uldp_inputs(z):
    """What both ULDP-AVG variants read: the ULDP CNN with jaxfl's initial parameters, the
    records, silo and user ids, and the round's hyperparameters."""
    model = build_model("uldp_cnn")
    load_jaxfl_params(model, z)
    x, y = _t(z["x"], np.float32), _t(z["y"], np.int64)
    silo, user = np.asarray(z["silo"]), np.asarray(z["user"])
    S, U = int(z["num_silos"]), int(z["num_users"])
    Q, B = int(z["local_epochs"]), int(z["batch_size"])
    lr_l, lr_g = float(z["local_lr"]), float(z["global_lr"])
    C, sigma = float(z["clip_norm"]), float(z["noise_multiplier"])
    return model, x, y, silo, user, S, U, Q, B, lr_l, lr_g, C, sigma


def uldp_avg(z, gen):
    """Returns ``(round_fn, units)``: one ULDP-AVG round (``round_fn() -> (loss, loss_se)``)."""
    (model, x, y, silo, user, S, U, Q, B, lr_l, lr_g, C, sigma) = _uldp_inputs(z)
    pairs = [(s, u, np.flatnonzero((silo == s) & (user == u)))
             for s in range(S) for u in range(U)]
    pairs = [(s, u, _t(idx, np.int64)) for s, u, idx in pairs if len(idx)]

    def one_round():
        glob = flat_params(model)
        silo_sum = torch.zeros(S, glob.numel())
        losses = []
        for s, u, idx in pairs:
            local = copy.deepcopy(model)
            local.train()
            opt = torch.optim.SGD(local.parameters(), lr=lr_l)
            step_losses = []
            for _ in range(Q):
                perm = idx[torch.randperm(len(idx), generator=gen)]
                for b in range(0, len(perm), B):
                    bi = perm[b:b + B]
                    opt.zero_grad()
                    loss = F.cross_entropy(local(x[bi]), y[bi])
                    loss.backward()
                    opt.step()
                    step_losses.append(loss.item())
            losses.append(np.mean(step_losses))
            silo_sum[s] += clip(flat_params(local) - glob, C) / S
        std = sigma * C / np.sqrt(S)
        silo_sum += torch.randn(silo_sum.shape, generator=gen) * std
        set_flat(model, glob + lr_g * silo_sum.sum(0) / (U * S))
        return float(np.mean(losses)), _se(losses)

    return one_round, len(pairs)


def dp_sgd(z, gen, mode="hooks"):
    """Opacus DP-SGD; one unit = ``steps`` steps (batches cycle through the given records).

    ``mode``: ``hooks`` (``GradSampleModule`` + ``DPOptimizer``, Opacus' default per-sample
    gradients), ``functorch`` (the same with ``force_functorch=True``: per-sample gradients by
    ``torch.func`` for every layer) or ``ghost`` (``GradSampleModuleFastGradientClipping`` +
    ``DPOptimizerFastGradientClipping`` + ``DPLossFastGradientClipping``: ghost clipping, what
    ``make_private(grad_sample_mode="ghost")`` builds; norms without per-sample gradients,
    then a second, reweighted backward pass).
    """
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    arch = str(z["arch"])
    B, steps = int(z["batch_size"]), int(z["steps"])
    C, sigma = float(z["clip_norm"]), float(z["noise_multiplier"])
    net = build_model(arch)
    load_jaxfl_params(net, z)
    net.train()
    if mode == "ghost":
        from opacus.grad_sample import GradSampleModuleFastGradientClipping
        from opacus.optimizers import DPOptimizerFastGradientClipping
        from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

        model = GradSampleModuleFastGradientClipping(net, max_grad_norm=C,
                                                     use_ghost_clipping=True)
        opt = DPOptimizerFastGradientClipping(
            torch.optim.SGD(model.parameters(), lr=float(z["lr"])), noise_multiplier=sigma,
            max_grad_norm=C, expected_batch_size=B, generator=gen)
        criterion = DPLossFastGradientClipping(model, opt, nn.CrossEntropyLoss(), "mean")
    else:
        model = GradSampleModule(net, force_functorch=mode == "functorch")
        opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=float(z["lr"])),
                          noise_multiplier=sigma, max_grad_norm=C, expected_batch_size=B,
                          generator=gen)
        criterion = nn.CrossEntropyLoss()
    x, y = _t(z["x"], np.float32), _t(z["y"], np.int64)
    nb = len(x) // B
    state = {"b": 0}

    def unit():
        losses = []
        for _ in range(steps):
            b = state["b"] % nb
            state["b"] += 1
            opt.zero_grad()
            loss = criterion(model(x[b * B:(b + 1) * B]), y[b * B:(b + 1) * B])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return float(np.mean(losses)), _se(losses)

    return unit, steps * B


def dp_fedavg(z, gen):
    model = build_model(str(z["arch"]))
    load_jaxfl_params(model, z)
    x, y = _t(z["x"], np.float32), _t(z["y"], np.int64)
    offsets = np.asarray(z["offsets"])  # client c owns rows offsets[c]:offsets[c + 1]
    N = len(offsets) - 1
    steps, B = int(z["local_steps"]), int(z["batch_size"])
    lr, C, sigma, q = (float(z[k]) for k in ("client_lr", "clip_norm", "noise_multiplier",
                                              "sampling_rate"))
    rng = np.random.default_rng(int(gen.initial_seed()))

    def one_round():
        glob = flat_params(model)
        cohort = np.arange(N) if q == 1.0 else np.flatnonzero(rng.random(N) < q)
        total = torch.zeros_like(glob)
        losses = []
        for c in cohort:
            lo, hi = int(offsets[c]), int(offsets[c + 1])
            local = copy.deepcopy(model)
            opt = torch.optim.SGD(local.parameters(), lr=lr)
            perm = lo + torch.randperm(hi - lo, generator=gen)
            step_losses = []
            for t in range(steps):
                bi = perm[(torch.arange(t * B, (t + 1) * B)) % (hi - lo)]
                opt.zero_grad()
                loss = F.cross_entropy(local(x[bi]), y[bi])
                loss.backward()
                opt.step()
                step_losses.append(loss.item())
            losses.append(np.mean(step_losses))
            total += clip(flat_params(local) - glob, C)
        total += torch.randn(total.shape, generator=gen) * sigma * C
        set_flat(model, glob + total / (q * N))
        return float(np.mean(losses)), _se(losses)

    return one_round, N


def gossip(z, gen):
    W = _t(z["W"], np.float32)
    x = _t(z["x"], np.float32)  # [n, m, 784]
    y = _t(z["y"], np.int64)  # [n, m]
    n = W.shape[0]
    C, sigma = float(z["clip_norm"]), float(z["noise_multiplier"])
    lr, normalizer = float(z["learning_rate"]), float(z["normalizer"])
    nodes = [build_model("logreg") for _ in range(n)]
    for m in nodes:
        load_jaxfl_params(m, z)

    def example_loss(params, m, xi, yi):
        out = functional_call(m, params, (xi[None],))
        return F.cross_entropy(out, yi[None])

    def one_round():
        new, losses = [], []
        for k, m in enumerate(nodes):
            params = {name: p.detach() for name, p in m.named_parameters()}
            g = vmap(grad(example_loss), in_dims=(None, None, 0, 0))(params, m, x[k], y[k])
            norms = torch.sqrt(sum(v.flatten(1).pow(2).sum(1) for v in g.values()))
            factor = torch.clamp(C / torch.clamp(norms, min=1e-12), max=1.0)
            with torch.no_grad():
                losses.append(float(F.cross_entropy(m(x[k]), y[k])))
            step = []
            for name, p in params.items():
                gs = torch.einsum("b,b...->...", factor, g[name])
                gs = gs + torch.randn(gs.shape, generator=gen) * sigma * C
                step.append((p - lr * gs / normalizer).reshape(-1))
            new.append(torch.cat(step))
        mixed = W @ torch.stack(new)
        for k, m in enumerate(nodes):
            set_flat(m, mixed[k])
        return float(np.mean(losses)), _se(losses)

    return one_round, n


# ----------------------------------------------------------------------------- vectorized
#
# The same workloads with torch.func over the unit axis (pairs, clients, nodes, examples):
# the model's parameters stacked on a leading unit axis, ``vmap(grad_and_value(loss))`` of a
# masked mean loss (padding as jaxfl pads: records gathered by padded index arrays, a mask
# for the padding), then the same clipping, weighting and noise as the loops, as whole-axis
# tensor ops. Units run in chunks sized to a memory budget (``_chunk``).

# Per vmapped chunk of units: a memory budget, and on the CPU at most 64 units (a ULDP CNN
# pair-step of 2 records cost the same per pair vmapped 32 or 128 at a time).
CHUNK_BYTES = {"cpu": 256 << 20, "cuda": 8 << 30}
CHUNK_UNITS = {"cpu": 64, "cuda": 1 << 20}


def _chunk(units: int, bytes_per_unit: int) -> int:
    fit = CHUNK_BYTES[DEVICE.type] // max(bytes_per_unit, 1)
    return int(max(1, min(units, fit, CHUNK_UNITS[DEVICE.type])))


def _masked_loss(model):
    """One unit's loss: the mean cross-entropy over the unmasked records of its batch."""
    def loss(params, xb, yb, mb):
        out = functional_call(model, params, (xb,))
        ce = F.cross_entropy(out, yb, reduction="none")
        return (ce * mb).sum() / mb.sum().clamp(min=1.0)
    return loss


def _stacked(glob: dict, units: int) -> dict:
    return {n: g.unsqueeze(0).repeat(units, *([1] * g.ndim)) for n, g in glob.items()}


def _flat_units(params: dict, glob: dict) -> torch.Tensor:
    """``[units, num_params]``: each unit's parameters minus the global ones, flattened."""
    return torch.cat([(params[n] - glob[n]).reshape(params[n].shape[0], -1) for n in glob], 1)


def _clip_factors(delta: torch.Tensor, c: float) -> torch.Tensor:
    return torch.clamp(c / torch.clamp(delta.norm(dim=1), min=1e-12), max=1.0)


def _activation_floats(arch: str, batch: int) -> int:
    """Rough per-unit activation floats of a forward + backward pass (chunk sizing only)."""
    per_example = {"uldp_cnn": 6 * (10 * 24 * 24 + 20 * 8 * 8), "fedavg_cnn":
                   6 * (32 * 28 * 28 + 64 * 14 * 14), "logreg": 4 * 794, "mlp": 4 * 1194}
    return per_example[arch] * batch


def uldp_avg_vmap(z, gen):
    """ULDP-AVG with the (silo, user) pairs vmapped: pairs bucketed by their number of batches
    per epoch (pairs of one batch by their record count rounded up to a power of two), padded
    within a bucket, each pair's records reshuffled per epoch by a masked argsort; then the
    deltas clipped, weighted 1/|S| and summed per silo (``index_add_``) as in the loop."""
    (model, x, y, silo, user, S, U, Q, B, lr_l, lr_g, C, sigma) = _uldp_inputs(z)
    model.train()
    order = np.lexsort((user, silo))
    keys = silo[order].astype(np.int64) * U + user[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    groups = np.split(order, starts[1:])
    buckets: dict[tuple[int, int], list] = {}
    for idx in groups:
        n = len(idx)
        nb = -(-n // B)
        width = B if nb > 1 else min(B, 1 << (n - 1).bit_length())
        buckets.setdefault((nb, width), []).append(idx)
    prepared = []
    for (nb, width), members in sorted(buckets.items()):
        L = nb * width
        index = np.zeros((len(members), L), np.int64)
        valid = np.zeros((len(members), L), bool)
        for i, idx in enumerate(members):
            index[i, :len(idx)], valid[i, :len(idx)] = idx, True
        prepared.append((nb, width, _t(index, np.int64), _t(valid, bool),
                         _t([int(silo[m[0]]) for m in members], np.int64)))
    names = [n for n, _ in model.named_parameters()]
    numel = sum(p.numel() for p in model.parameters())
    step = vmap(grad_and_value(_masked_loss(model)), randomness="different")
    num_pairs = len(groups)

    def one_round():
        glob = {n: p.detach().clone() for n, p in model.named_parameters()}
        gflat = flat_params(model)
        silo_sum = torch.zeros(S, numel)
        losses = []
        t0 = _lap("rest", time.perf_counter())
        for nb, width, index, valid, silos in prepared:
            chunk = _chunk(len(index), 4 * (4 * numel + _activation_floats("uldp_cnn", width)))
            name = f"{len(index)}x{nb * width} / {chunk} / {-(-len(index) // chunk) * Q * nb}"
            for c0 in range(0, len(index), chunk):
                ip, vp = index[c0:c0 + chunk], valid[c0:c0 + chunk]
                params = _stacked(glob, len(ip))
                step_losses = []
                for _ in range(Q):
                    keys = torch.rand(ip.shape, generator=gen).masked_fill(~vp, 2.0)
                    perm = keys.argsort(dim=1)  # padding last: real records first, shuffled
                    oi, ov = ip.gather(1, perm), vp.gather(1, perm)
                    for b in range(nb):
                        bi = oi[:, b * width:(b + 1) * width]
                        bm = ov[:, b * width:(b + 1) * width].to(x.dtype)
                        g, loss = step(params, x[bi], y[bi], bm)
                        params = {n: params[n] - lr_l * g[n] for n in names}
                        step_losses.append(loss)
                losses.append(torch.stack(step_losses, 1).mean(1))
                delta = _flat_units(params, glob)
                weighted = delta * (_clip_factors(delta, C) / S)[:, None]
                silo_sum.index_add_(0, silos[c0:c0 + chunk], weighted)
            t0 = _lap(name, t0)
        std = sigma * C / np.sqrt(S)
        silo_sum += torch.randn(silo_sum.shape, generator=gen) * std
        set_flat(model, gflat + lr_g * silo_sum.sum(0) / (U * S))
        per = torch.cat(losses).cpu().numpy()
        _lap("rest", t0)
        return float(per.mean()), _se(per)

    return one_round, num_pairs


def dp_sgd_vmap(z, gen):
    """DP-SGD with torch.func per-example gradients (``vmap(grad)`` over the batch, dropout
    different per example), flat clipping to C, one Gaussian noise, ``p -= lr (sum + xi) / B``
    (what Opacus' ``DPOptimizer`` does with ``expected_batch_size=B``)."""
    arch = str(z["arch"])
    B, steps = int(z["batch_size"]), int(z["steps"])
    C, sigma, lr = float(z["clip_norm"]), float(z["noise_multiplier"]), float(z["lr"])
    model = build_model(arch)
    load_jaxfl_params(model, z)
    model.train()
    x, y = _t(z["x"], np.float32), _t(z["y"], np.int64)
    nb = len(x) // B

    def example_loss(params, xi, yi):
        return F.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])

    per_example = vmap(grad_and_value(example_loss), in_dims=(None, 0, 0),
                       randomness="different")
    state = {"b": 0, "p": {n: p.detach().clone() for n, p in model.named_parameters()}}

    def unit():
        losses = []
        for _ in range(steps):
            b = state["b"] % nb
            state["b"] += 1
            params = state["p"]
            g, loss = per_example(params, x[b * B:(b + 1) * B], y[b * B:(b + 1) * B])
            norms = torch.sqrt(sum(v.reshape(B, -1).pow(2).sum(1) for v in g.values()))
            factor = torch.clamp(C / torch.clamp(norms, min=1e-12), max=1.0)
            new = {}
            for n, p in params.items():
                total = torch.einsum("b,b...->...", factor, g[n])
                total = total + torch.randn(total.shape, generator=gen) * sigma * C
                new[n] = p - lr * total / B
            state["p"] = new
            losses.append(loss.mean().item())
        return float(np.mean(losses)), _se(losses)

    return unit, steps * B


def dp_fedavg_vmap(z, gen):
    """DP-FedAvg with the clients vmapped (equal-size clients: the same fixed local steps over
    each client's own shuffled, wrap-around batches as the loop), then clip, sum, noise."""
    arch = str(z["arch"])
    model = build_model(arch)
    load_jaxfl_params(model, z)
    x, y = _t(z["x"], np.float32), _t(z["y"], np.int64)
    offsets = np.asarray(z["offsets"])
    N = len(offsets) - 1
    sizes = np.diff(offsets)
    if not (sizes == sizes[0]).all():
        raise ValueError("dp_fedavg vmap: clients of unequal size are not supported.")
    m = int(sizes[0])
    steps, B = int(z["local_steps"]), int(z["batch_size"])
    lr, C, sigma, q = (float(z[k]) for k in ("client_lr", "clip_norm", "noise_multiplier",
                                              "sampling_rate"))
    rng = np.random.default_rng(int(gen.initial_seed()))
    rows = _t(offsets[:-1, None] + np.arange(m)[None], np.int64)  # [N, m]
    names = [n for n, _ in model.named_parameters()]
    numel = sum(p.numel() for p in model.parameters())
    step = vmap(grad_and_value(_masked_loss(model)))
    per_client = 4 * (4 * numel + _activation_floats(arch, B))
    ones = torch.ones(B)

    def one_round():
        glob = {n: p.detach().clone() for n, p in model.named_parameters()}
        gflat = flat_params(model)
        cohort = np.arange(N) if q == 1.0 else np.flatnonzero(rng.random(N) < q)
        cohort_t = _t(cohort, np.int64)
        total = torch.zeros(numel)
        losses = []
        chunk = _chunk(len(cohort), per_client)
        for c0 in range(0, len(cohort), chunk):
            ci = cohort_t[c0:c0 + chunk]
            P = len(ci)
            order = rows[ci].gather(1, torch.rand(P, m, generator=gen).argsort(dim=1))
            params = _stacked(glob, P)
            step_losses = []
            for t in range(steps):
                bi = order[:, torch.arange(t * B, (t + 1) * B) % m]
                g, loss = step(params, x[bi], y[bi], ones.expand(P, B))
                params = {n: params[n] - lr * g[n] for n in names}
                step_losses.append(loss)
            losses.append(torch.stack(step_losses, 1).mean(1))
            delta = _flat_units(params, glob)
            total += (delta * _clip_factors(delta, C)[:, None]).sum(0)
        total += torch.randn(total.shape, generator=gen) * sigma * C
        set_flat(model, gflat + total / (q * N))
        per = torch.cat(losses).cpu().numpy()
        return float(per.mean()), _se(per)

    return one_round, N


def gossip_vmap(z, gen):
    """The gossip round with the nodes vmapped as well: per-example gradients of every node at
    once (``vmap`` over nodes of ``vmap(grad)`` over examples), the same clipping and noise,
    then ``W @ w``; node parameters stay stacked ``[n, ...]`` between rounds."""
    W = _t(z["W"], np.float32)
    x, y = _t(z["x"], np.float32), _t(z["y"], np.int64)  # [n, m, 784], [n, m]
    n, m = x.shape[:2]
    C, sigma = float(z["clip_norm"]), float(z["noise_multiplier"])
    lr, normalizer = float(z["learning_rate"]), float(z["normalizer"])
    model = build_model("logreg")
    load_jaxfl_params(model, z)
    names = [k for k, _ in model.named_parameters()]
    numel = sum(p.numel() for p in model.parameters())
    state = {"p": _stacked({k: p.detach() for k, p in model.named_parameters()}, n)}

    def example_loss(params, xi, yi):
        return F.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])

    def node_loss(params, xk, yk):
        return F.cross_entropy(functional_call(model, params, (xk,)), yk)

    per_example = vmap(vmap(grad(example_loss), in_dims=(None, 0, 0)))
    losses_of = vmap(node_loss)
    chunk = _chunk(n, 4 * 3 * numel * m)

    def one_round():
        new, losses = [], []
        for c0 in range(0, n, chunk):
            params = {k: v[c0:c0 + chunk] for k, v in state["p"].items()}
            xc, yc = x[c0:c0 + chunk], y[c0:c0 + chunk]
            P = xc.shape[0]
            g = per_example(params, xc, yc)  # [P, m, ...]
            norms = torch.sqrt(sum(v.reshape(P, m, -1).pow(2).sum(2) for v in g.values()))
            factor = torch.clamp(C / torch.clamp(norms, min=1e-12), max=1.0)  # [P, m]
            losses.append(losses_of(params, xc, yc))
            step = []
            for k in names:
                gs = torch.einsum("pb,pb...->p...", factor, g[k])
                gs = gs + torch.randn(gs.shape, generator=gen) * sigma * C
                step.append((params[k] - lr * gs / normalizer).reshape(P, -1))
            new.append(torch.cat(step, 1))
        mixed = W @ torch.cat(new, 0)  # [n, numel]
        i = 0
        for k in names:
            size = state["p"][k][0].numel()
            state["p"][k] = mixed[:, i:i + size].reshape(state["p"][k].shape)
            i += size
        per = torch.cat(losses).cpu().numpy()
        return float(per.mean()), _se(per)

    return one_round, n


# Workload -> variant -> implementation (the first variant is the default).
WORKLOADS = {
    "uldp_avg": {"loop": uldp_avg, "vmap": uldp_avg_vmap},
    "dp_sgd": {"opacus": dp_sgd,
               "opacus_functorch": lambda z, gen: dp_sgd(z, gen, "functorch"),
               "opacus_ghost": lambda z, gen: dp_sgd(z, gen, "ghost"),
               "vmap": dp_sgd_vmap},
    "dp_fedavg": {"loop": dp_fedavg, "vmap": dp_fedavg_vmap},
    "gossip": {"loop": gossip, "vmap": gossip_vmap},
}


def opacus_version() -> tuple[str | None, str | None]:
    """``(version, None)`` when opacus imports, else ``(None, why)``."""
    try:
        import opacus
    except Exception as e:  # noqa: BLE001 - any import failure means "not usable here"
        return None, f"{type(e).__name__}: {e}"
    return opacus.__version__, None


def probe(device: str) -> dict:
    """What this interpreter offers: versions, the device and its name, and opacus."""
    ver, why = opacus_version()
    cuda = torch.cuda.is_available()
    name = (torch.cuda.get_device_name(0) if cuda and device == "cuda"
            else platform.processor() or platform.machine())
    return {"torch": torch.__version__, "cuda_available": cuda, "device": device,
            "device_name": name, "cuda_version": torch.version.cuda, "opacus": ver,
            "opacus_error": why, "python": platform.python_version()}


def main(argv=None) -> dict:
    global DEVICE, PROFILE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(WORKLOADS) + ["probe"])
    ap.add_argument("npz", nargs="?")
    ap.add_argument("--variant", default=None, help="default: the workload's first")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2, help="timed units after one warm-up")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true",
                    help="uldp_avg vmap: seconds per bucket of pairs and for the rest, per unit")
    a = ap.parse_args(argv)
    if a.workload == "probe":
        out = probe(a.device)
        print(json.dumps(out))
        return out
    variants = WORKLOADS[a.workload]
    variant = a.variant or next(iter(variants))
    if variant not in variants or a.npz is None:
        ap.error(f"{a.workload} needs an npz and a variant in {sorted(variants)}")
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch.cuda.is_available() is False "
                         f"(torch {torch.__version__}).")
    warnings.filterwarnings("ignore")
    DEVICE = torch.device(a.device)
    torch.set_default_device(DEVICE)
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(a.seed)
    gen = torch.Generator(device=DEVICE).manual_seed(a.seed)
    with np.load(a.npz, allow_pickle=False) as z:
        unit, size = variants[variant](z, gen)
        _sync()
        t0 = time.perf_counter()
        loss, loss_se = unit()  # warm-up (its loss is the one compared: same initial model)
        _sync()
        warm = time.perf_counter() - t0
        PROFILE = {} if a.profile else None
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            unit()
            _sync()
            times.append(time.perf_counter() - t0)
    out = {"side": "torch", "workload": a.workload, "variant": variant,
           "seconds": float(np.mean(times)), "per_unit": times, "warmup_s": warm, "size": size,
           "loss": loss, "loss_se": loss_se, "torch": torch.__version__,
           "opacus": opacus_version()[0], "device": str(DEVICE),
           "threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads()}
    if PROFILE is not None:
        out["profile"] = {k: v / a.reps for k, v in PROFILE.items()}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
