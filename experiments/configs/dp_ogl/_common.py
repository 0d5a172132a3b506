"""Shared experiment config of the DP-OGL reproduction (Kiani, Boenisch, Draper, JSAIT 2024,
Sec. VI, Figs. 3-5), the registry of every curve, and the three scales.

Setup (spec 5.1): MNIST / Fashion-MNIST, 100 workers with Dirichlet(0.1) label skew ("N=40" =
the first 40 workers of the 100-worker partition), each worker's share split 80/20 into local
train / test data; FedAvg CNN; plain SGD lr 0.001, batch 200, L = 10; c = 0.05, pi = 0.7,
sigma in {1.3, 2, 3}; T = 200 epochs. Metrics: mean over workers of the personalized model's
test accuracy (local test split) and training loss (local train data); privacy: the per-worker
PwP curve (Theorem 1) and its mean/std/max over workers.

Scales (``variant``):
* ``full``: the paper's setting (accelerator; hours on CPU).
* ``cpu``: a scaled-down setting for 2 CPU cores: the same N, M, S, sigma, c, pi, L and
  structures, 20,000 training examples, an MLP 784-64-10 (vmapped per-pair convolutions run at
  about 1 GFLOP/s on the shared CPU, which makes even a small CNN take minutes per epoch),
  batch 16, lr 0.05, 100 epochs, evaluation every 5 epochs.
* ``smoke``: seconds: 5,000 examples, an MLP 784-8-10, 2 epochs, L = 2, batch 8.

Modes (``mode``): ``strict`` (default; DP-OGL+ with local window updates, dp-accounting order
grid and conversion) or ``paper`` (DP-OGL+ with the paper's shared intermediate updates, Eq. 11,
and the Opacus recipe). Every output records its mode.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from jaxfl import models, training
from jaxfl import random as jrandom
from jaxfl.accounting import dp_ogl as accounting
from jaxfl.algorithms import dp_ogl
from jaxfl.data import federated, idx, partition
from jaxfl.topology import groups

MODES = ("strict", "paper")
VARIANTS = ("full", "cpu", "smoke")
STRUCTURES = ("gl", "cl", "ring", "label_based", "string")

_BASE = dict(noise_multiplier=2.0, algorithm="dp_ogl", num_workers=100)
# Every curve of Figs. 3-5: field overrides of DpOglConfig (spec 5.2-5.3).
CURVES = {
    "gl": dict(structure="gl", num_groups=1, period=1),
    "gl_n40": dict(structure="gl", num_groups=1, period=1, num_workers=40),
    "cl4_s2": dict(structure="cl", num_groups=4, period=2),
    "lb5_s10_sig3": dict(structure="label_based", num_groups=5, period=10, noise_multiplier=3.0),
    "lb5_s2_sig3": dict(structure="label_based", num_groups=5, period=2, noise_multiplier=3.0),
    "ri4_s10": dict(structure="ring", num_groups=4, period=10),
    "ri4_s2": dict(structure="ring", num_groups=4, period=2),
    "ri4_s25": dict(structure="ring", num_groups=4, period=25),
    "ri10_s10": dict(structure="ring", num_groups=10, period=10),
    "ri4_s10_n40": dict(structure="ring", num_groups=4, period=10, num_workers=40),
    "ri10_s10_sig1.3": dict(structure="ring", num_groups=10, period=10, noise_multiplier=1.3),
    "ri4_s10_n40_sig1.3": dict(structure="ring", num_groups=4, period=10, num_workers=40,
                               noise_multiplier=1.3),
    "plus_ri4_s2": dict(structure="ring", num_groups=4, period=2, algorithm="dp_ogl_plus"),
    "plus_ri4_s4": dict(structure="ring", num_groups=4, period=4, algorithm="dp_ogl_plus"),
    "plus_ri4_s10": dict(structure="ring", num_groups=4, period=10, algorithm="dp_ogl_plus"),
    "plus_ri10_s2": dict(structure="ring", num_groups=10, period=2, algorithm="dp_ogl_plus"),
    "plus_ri4_s2_n40": dict(structure="ring", num_groups=4, period=2, num_workers=40,
                            algorithm="dp_ogl_plus"),
    "plus_ri4_s2_n40_sig1.3": dict(structure="ring", num_groups=4, period=2, num_workers=40,
                                   algorithm="dp_ogl_plus", noise_multiplier=1.3),
    "plus_ri10_s2_sig1.3": dict(structure="ring", num_groups=10, period=2,
                                algorithm="dp_ogl_plus", noise_multiplier=1.3),
}
# Training panels of Fig. 3 (Fig. 5 = the same on Fashion-MNIST).
FIG3 = {
    "ab": ["gl", "cl4_s2", "lb5_s10_sig3", "ri4_s10", "plus_ri4_s2"],
    "cd": ["gl", "gl_n40", "ri4_s10", "ri10_s10", "ri4_s10_n40", "plus_ri4_s2",
           "plus_ri10_s2", "plus_ri4_s2_n40_sig1.3"],
    "ef": ["lb5_s2_sig3", "lb5_s10_sig3", "ri4_s2", "ri4_s10", "plus_ri4_s2", "plus_ri4_s4"],
    "gh": ["ri10_s10", "ri10_s10_sig1.3", "ri4_s10_n40", "ri4_s10_n40_sig1.3", "plus_ri10_s2",
           "plus_ri10_s2_sig1.3", "plus_ri4_s2_n40", "plus_ri4_s2_n40_sig1.3"],
}
# Fig. 4(a): PwP curves; Fig. 4(b)-(h): heatmaps at t = 200.
FIG4A = ["gl", "cl4_s2", "ri4_s2", "ri4_s10", "lb5_s2_sig3", "lb5_s10_sig3", "plus_ri4_s2",
         "plus_ri4_s4"]
FIG4_HEATMAPS = {"b": "gl", "c": "cl4_s2", "d": "lb5_s10_sig3", "e": "ri4_s10", "f": "ri4_s25",
                 "g": "ri10_s10", "h": "plus_ri4_s10"}

_SCALES = {
    "full": {},
    "cpu": dict(max_train_examples=20000, model="mlp", model_hidden=(64,), batch_size=16,
                client_lr=0.05, epochs=100, eval_every=5, checkpoint_every=25),
    "smoke": dict(max_train_examples=5000, min_examples=2, model="mlp", model_hidden=(8,),
                  batch_size=8, local_steps=2, client_lr=0.05, epochs=2, eval_every=1,
                  checkpoint_every=1),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpOglConfig:
    """One DP-OGL / DP-OGL+ training run (one curve). All fields are ``--set`` overridable."""

    name: str = "dp_ogl"
    curve: str = "ri4_s10"
    variant: str = "full"
    mode: str = "strict"
    dataset: str = "mnist"
    data_dir: str | None = None
    max_train_examples: int | None = None
    partition_workers: int = 100
    num_workers: int = 100
    dirichlet_alpha: float = 0.1
    min_examples: int = 10
    test_fraction: float = 0.2
    structure: str = "ring"
    num_groups: int = 4
    period: int = 10
    algorithm: str = "dp_ogl"
    noise_multiplier: float = 2.0
    clip_norm: float = 0.05
    sampling_rate: float = 0.7
    local_steps: int = 10
    batch_size: int = 200
    client_lr: float = 0.001
    epochs: int = 200
    model: str = "fedavg_cnn"
    model_features: tuple = (32, 64)
    model_hidden: tuple = (512,)
    delta: float = 1e-5
    seed: int = 0
    eval_every: int = 1
    checkpoint_every: int = 20

    # ----------------------------------------------------------------- data and structure
    def _split(self):
        """``(x, y, train_idx, test_idx)``: first ``num_workers`` of the Dirichlet partition,
        each worker's share split ``1 - test_fraction`` / ``test_fraction``."""
        if self.dataset not in ("mnist", "fashion_mnist"):
            raise ValueError(f"Unknown dataset {self.dataset!r}.")
        loader = idx.load_mnist if self.dataset == "mnist" else idx.load_fashion_mnist
        x, y = loader("train", path=self.data_dir)
        y = y.astype(np.int32)
        if self.max_train_examples is not None and self.max_train_examples < len(x):
            keep = np.sort(jrandom.host_rng(self.seed, "subsample").permutation(len(x))[
                : self.max_train_examples])
            x, y = x[keep], y[keep]
        parts = partition.dirichlet(jrandom.host_rng(self.seed, "partition"), y,
                                    self.partition_workers, alpha=self.dirichlet_alpha,
                                    min_examples=self.min_examples)[: self.num_workers]
        rng = jrandom.host_rng(self.seed, "test_split")
        train, test = [], []
        for ix in parts:  # host-side split of each worker's share (same label distribution)
            ix = rng.permutation(ix)
            cut = min(max(1, int(round(len(ix) * self.test_fraction))), len(ix) - 1)
            test.append(np.sort(ix[:cut]))
            train.append(np.sort(ix[cut:]))
        return x, y, train, test

    def load_partition(self):
        """``(train FederatedData, test FederatedData, label_counts [N, 10])``."""
        x, y, train, test = self._split()
        x = idx.normalize_images(x)
        return (federated.from_partition(x, y, train), federated.from_partition(x, y, test),
                np.stack([np.bincount(y[ix], minlength=10) for ix in train]))

    def label_counts(self) -> np.ndarray:
        """Per-worker train label histograms (LB membership), without padding the data."""
        _, y, train, _ = self._split()
        return np.stack([np.bincount(y[ix], minlength=10) for ix in train])

    def group_structure(self, label_counts=None) -> groups.GroupStructure:
        n, m = self.num_workers, self.num_groups
        if self.structure == "gl":
            return groups.gl(n)
        if self.structure == "cl":
            return groups.cl(n, m)
        if self.structure == "ring":
            return groups.ring(n, m)
        if self.structure == "string":
            return groups.string(n, m)
        if self.structure == "label_based":
            counts = self.label_counts() if label_counts is None else label_counts
            return groups.label_based(counts, m)
        raise ValueError(f"Unknown structure {self.structure!r}; expected one of {STRUCTURES}.")

    # ----------------------------------------------------------------- algorithm and run
    @property
    def window_updates(self) -> str:
        return "shared" if self.mode == "paper" else "local"

    @property
    def recipe(self) -> str:
        return "paper" if self.mode == "paper" else "default"

    def build(self):
        """Returns ``(algorithm, train_data, params, eval_fn, structure)``."""
        if self.mode not in MODES:
            raise ValueError(f"Expected mode in {MODES}, got {self.mode!r}.")
        train, test, counts = self.load_partition()
        s = self.group_structure(counts)
        kw = {"hidden": tuple(self.model_hidden)}
        if self.model == "fedavg_cnn":
            kw["features"] = tuple(self.model_features)
        model = models.get_model(self.model, num_classes=10, input_shape=(28, 28, 1), **kw)
        alg = dp_ogl.dp_ogl(model, s, period=self.period, local_steps=self.local_steps,
                            batch_size=self.batch_size, client_lr=self.client_lr,
                            clip_norms=self.clip_norm, noise_multipliers=self.noise_multiplier,
                            sampling_rates=self.sampling_rate,
                            plus=self.algorithm == "dp_ogl_plus",
                            window_updates=self.window_updates)
        params = model.init(jrandom.key_streams(self.seed, ("init",))["init"])
        test_eval = dp_ogl.make_personalized_eval(model, s, test.x, test.y, test.mask,
                                                  prefix="test")
        train_eval = dp_ogl.make_personalized_eval(model, s, train.x, train.y, train.mask,
                                                   prefix="train")

        def eval_fn(group_params):
            return {**test_eval(group_params), **train_eval(group_params)}

        return alg, train, params, eval_fn, s

    def privacy(self, structure=None, epochs=None) -> dict:
        """PwP mean/std/max over workers at every epoch t = 1..T+1 (Theorem 1)."""
        s = self.group_structure() if structure is None else structure
        ts = list(range(1, self.epochs + 2)) if epochs is None else list(epochs)
        curve = accounting.pwp_curve(s, epochs=ts, period=self.period, delta=self.delta,
                                     noise_multipliers=self.noise_multiplier,
                                     sampling_rates=self.sampling_rate,
                                     algorithm=self.algorithm, recipe=self.recipe)
        stats = accounting.curve_stats(curve)
        sound = not (self.algorithm == "dp_ogl_plus" and self.window_updates == "shared")
        return {"t": ts, **{k: v.tolist() for k, v in stats.items()},
                "threat_model": accounting.default_threat_model(self.algorithm),
                "recipe": self.recipe, "mode": self.mode, "sound": sound,
                "delta": self.delta}

    def run(self, workdir, **kwargs) -> dict:
        alg, data, params, eval_fn, s = self.build()
        extra = {"mode": self.mode, "curve": self.curve}
        res = training.run(alg, data, params=params, rounds=self.epochs, seed=self.seed,
                           workdir=workdir, eval_fn=eval_fn, eval_every=self.eval_every,
                           checkpoint_every=self.checkpoint_every, delta=None, config=self,
                           extra_record=extra, **kwargs)
        priv = self.privacy(s)
        summary = dict(res.summary)
        summary["pwp_final"] = {k: priv[k][-1] for k in ("mean", "std", "max")}
        summary["privacy_recipe"] = priv["recipe"]
        if workdir is not None:
            Path(workdir, "privacy.json").write_text(json.dumps(priv))
            Path(workdir, "structure.json").write_text(json.dumps(groups.summary(s)))
        return summary


def make_config(curve: str, *, variant: str = "full", mode: str = "strict",
                dataset: str = "mnist", **overrides) -> DpOglConfig:
    """The config of one registered curve at one scale."""
    if curve not in CURVES:
        raise ValueError(f"Unknown curve {curve!r}; available: {sorted(CURVES)}.")
    if variant not in VARIANTS:
        raise ValueError(f"Expected variant in {VARIANTS}, got {variant!r}.")
    if mode not in MODES:
        raise ValueError(f"Expected mode in {MODES}, got {mode!r}.")
    fields = {**_BASE, **CURVES[curve], **_SCALES[variant], **overrides}
    if fields.get("algorithm") == "dp_ogl_plus" and "eval_every" not in overrides:
        # Evaluate DP-OGL+ at window closes (the released, noised models) only.
        fields["eval_every"] = math.lcm(fields.get("eval_every", 1), fields["period"])
    return DpOglConfig(name=f"dp_ogl_{curve}", curve=curve, variant=variant, mode=mode,
                       dataset=dataset, **fields)


def curve_overrides(curve: str, variant: str = "full") -> dict:
    """Field overrides turning any DpOglConfig into ``curve`` (for ``get_sweep``)."""
    return {"curve": curve, "name": f"dp_ogl_{curve}",
            **{**_BASE, **CURVES[curve], **_SCALES[variant]}}


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpOglPrivacyConfig:
    """Fig. 4 (privacy only, no training): PwP curves (panel a) or a heatmap (b-h) at t."""

    name: str = "dp_ogl_privacy"
    panel: str = "e"
    variant: str = "full"
    mode: str = "strict"
    dataset: str = "mnist"
    data_dir: str | None = None
    t: int = 200
    delta: float = 1e-5

    def curves(self) -> list[DpOglConfig]:
        names = FIG4A if self.panel == "a" else [FIG4_HEATMAPS[self.panel]]
        scale = "smoke" if self.variant == "smoke" else "full"  # privacy needs no downscaling
        return [make_config(c, variant=scale, mode=self.mode, dataset=self.dataset,
                            data_dir=self.data_dir, epochs=self.t - 1) for c in names]

    def run(self, workdir=None) -> dict:
        out = {"panel": self.panel, "mode": self.mode, "t": self.t, "delta": self.delta}
        for cfg in self.curves():
            s = cfg.group_structure()
            if self.panel == "a":
                out[cfg.curve] = cfg.privacy(s)
                continue
            rep = accounting.privacy_report(
                s, t=self.t, period=cfg.period, delta=self.delta,
                noise_multipliers=cfg.noise_multiplier, sampling_rates=cfg.sampling_rate,
                algorithm=cfg.algorithm, recipe=cfg.recipe, window_updates=cfg.window_updates)
            rdp = accounting.pairwise_rdp(s, t=self.t, period=cfg.period,
                                          noise_multipliers=cfg.noise_multiplier,
                                          sampling_rates=cfg.sampling_rate,
                                          algorithm=cfg.algorithm, orders=[8.0])[..., 0]
            out[cfg.curve] = {"epsilon": rep.epsilon.tolist(), "counts": rep.counts.tolist(),
                              "rdp_order8": rdp.tolist(), "stats": rep.stats(),
                              "settings": rep.settings, "structure": groups.summary(s)}
        if workdir is not None:
            Path(workdir).mkdir(parents=True, exist_ok=True)
            from jaxfl import metrics
            Path(workdir, f"fig4{self.panel}.json").write_text(metrics.to_json(out))
        return {k: v for k, v in out.items() if not isinstance(v, dict)} | {
            "curves": [k for k, v in out.items() if isinstance(v, dict)]}
