"""Shared experiment configs of the DP-OGL reproduction (Kiani, Boenisch, Draper, JSAIT 2024,
Sec. VI, Figs. 3-5): the registry of every curve (and its legend), the panels of the figures
and the paper's utility claims on them, the three scales, and two config classes (data only;
their builder is :func:`experiments.papers.dp_ogl.run_spec`).

Setup (Kiani et al. 2024, Sec. VI-A): MNIST / Fashion-MNIST, 100 workers with Dirichlet(0.1) label
skew ("N=40" = the first 40 workers of the 100-worker partition), each worker's share split 80/20
into local train / test data; FedAvg CNN; plain SGD lr 0.001, batch 200, L = 10; c = 0.05, pi = 0.7,
sigma in {1.3, 2, 3}; T = 200 epochs. Metrics: mean over workers of the personalized model's
test accuracy (local test split) and training loss (local train data); privacy: the
algorithm's PwP accountant (Theorem 1): headline = worst (target, observer) pair, the per-pair
matrix and the per-worker mean/std/max in the report.

Scales (``variant``):
* ``full``: the paper's setting (accelerator; hours on CPU).
* ``cpu``: a scaled-down setting for 2 CPU cores: the same N, M, S, sigma, c, pi, L and
  structures, 20,000 training examples, an MLP 784-64-10 (vmapped per-pair convolutions run at
  about 1 GFLOP/s on the shared CPU, which makes even a small CNN take minutes per epoch),
  batch 16, lr 0.05, 100 epochs, evaluation every 5 epochs.
* ``smoke``: seconds: 5,000 examples, an MLP 784-8-10, 2 epochs, L = 2, batch 8.

Modes (``mode``): ``strict`` (default; DP-OGL+ with local window updates, dp-accounting order
grid and conversion; the paper recipe is in every summary as ``privacy_paper``) or ``paper``
(DP-OGL+ with the paper's shared intermediate updates, Eq. 11, and the Opacus recipe; DP-OGL+
reports ``sound: false``).

Seeds: ``data_seed`` fixes the subsample, the Dirichlet partition and the test split (and so
the LB structure); ``seed`` the initialization and training randomness, so seed sweeps share
the data and are vmapped.
"""

from __future__ import annotations

import dataclasses
import math

from experiments.configs.base import RunConfig, checked
from jaxfl import validate

MODES = ("strict", "paper")
VARIANTS = ("full", "cpu", "smoke")
STRUCTURES = ("gl", "cl", "ring", "label_based", "string")
ALGORITHMS = ("dp_ogl", "dp_ogl_plus")
DATASETS = ("mnist", "fashion_mnist")
BUILDER = "experiments.papers.dp_ogl:run_spec"

_BASE = dict(noise_multiplier=2.0, algorithm="dp_ogl", num_workers=100)
# Every curve of Figs. 3-5: field overrides of the configs (Sec. VI-B).
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
FIG3_CURVES = list(dict.fromkeys(c for panel in FIG3.values() for c in panel))
_SMALL = ["ri10_s10", "ri4_s10_n40", "plus_ri10_s2", "plus_ri4_s2_n40_sig1.3"]  # N/M = 10
# The utility claims of Sec. VI-B on Fig. 3's panels: (claim, panel, [(a, b, metric): "curve a
# ends better than curve b"]), metric "acc" (test accuracy) or "loss" (training loss); decided
# by ``experiments.reproduce.dp_ogl`` on the runs over seeds.
FIG3_CLAIMS = [
    ("All multi-group structures beat GL (loss and accuracy)", "ab",
     [(n, "gl", k) for n in FIG3["ab"] if n != "gl" for k in ("acc", "loss")]),
    ("RI DP-OGL is best (lowest loss, highest accuracy)", "ab",
     [("ri4_s10", n, k) for n in FIG3["ab"] if n != "ri4_s10" for k in ("acc", "loss")]),
    ("DP-OGL+ worse than DP-OGL (RI)", "ab", [("ri4_s10", "plus_ri4_s2", "acc")]),
    ("DP-OGL+ better than GL", "ab", [("plus_ri4_s2", "gl", "acc")]),
    ("DP-OGL: S=10 converges better than S=2 (RI and LB)", "ef",
     [("ri4_s10", "ri4_s2", "acc"), ("lb5_s10_sig3", "lb5_s2_sig3", "acc")]),
    ("DP-OGL+: S=2 beats S=4", "ef", [("plus_ri4_s2", "plus_ri4_s4", "acc")]),
    ("N/M=10 runs end worse than RI N/M=25 and GL", "cd",
     [(ref, n, "acc") for n in _SMALL for ref in ("ri4_s10", "gl")]),
    ("DP-OGL with N/M=25 is best in the last epochs", "cd",
     [("ri4_s10", n, "acc") for n in FIG3["cd"] if n != "ri4_s10"]),
    ("sigma 2 -> 1.3 fixes the N/M=10 convergence", "gh", [  # each σ=1.3 curve vs its σ=2
        (n, n.removesuffix("_sig1.3"), "acc") for n in FIG3["gh"] if n.endswith("_sig1.3")]),
    # The paper: "slightly better ... in some epochs". A rule "better in at least one logged
    # epoch" holds for any two noisy curves that cross once; decided on the last quarter.
    ("GL N=40 slightly better than GL N=100", "cd", [("gl_n40", "gl", "acc")]),
]
# Fig. 4(a): PwP curves; Fig. 4(b)-(h): heatmaps at t = 200.
FIG4A = ["gl", "cl4_s2", "ri4_s2", "ri4_s10", "lb5_s2_sig3", "lb5_s10_sig3", "plus_ri4_s2",
         "plus_ri4_s4"]
FIG4_HEATMAPS = {"b": "gl", "c": "cl4_s2", "d": "lb5_s10_sig3", "e": "ri4_s10", "f": "ri4_s25",
                 "g": "ri10_s10", "h": "plus_ri4_s10"}
FIG4_CURVES = list(dict.fromkeys([*FIG4A, *FIG4_HEATMAPS.values()]))


def _label(structure, num_groups, period, algorithm="dp_ogl", num_workers=None,
           noise_multiplier=None) -> str:
    """A curve's legend from its fields of :data:`CURVES`: "DP-OGL+ RI N=40 M=4 S=2 σ=1.3"."""
    kind = {"gl": "GL", "cl": "CL", "label_based": "LB", "ring": "RI"}[structure]
    return " ".join([*(["DP-OGL+"] if algorithm == "dp_ogl_plus" else []), kind,
                     *([f"N={num_workers}"] if num_workers else []),
                     *([f"M={num_groups}", f"S={period}"] if structure != "gl" else []),
                     *([f"σ={noise_multiplier:g}"] if noise_multiplier else [])])


LABELS = {name: _label(**fields) for name, fields in CURVES.items()}  # the figures' legends
# Smoke sweeps: a DP-OGL+ curve x two seeds (training, one vmapped pair); three privacy curves.
SMOKE_TRAIN_CURVES = ("plus_ri4_s2",)
SMOKE_SEEDS = (0, 1)
SMOKE_PRIVACY_CURVES = ("gl", "ri4_s10", "plus_ri4_s2")

_SCALES = {
    "full": {},
    "cpu": dict(max_train_examples=20000, model="mlp", model_hidden=(64,), batch_size=16,
                client_lr=0.05, epochs=100, eval_every=5, checkpoint_every=25),
    "smoke": dict(max_train_examples=5000, min_examples=2, model="mlp", model_hidden=(8,),
                  batch_size=8, local_steps=2, client_lr=0.05, epochs=2, eval_every=1,
                  checkpoint_every=1),
}
_DATA_SCALE_FIELDS = ("max_train_examples", "min_examples")  # what privacy configs keep


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpOglSetting(RunConfig):
    """Data, group structure and mechanism of one curve (shared by both config classes)."""

    builder = BUILDER
    variants = VARIANTS

    name: str = "dp_ogl"
    curve: str = "ri4_s10"
    mode: str = checked("strict", MODES)
    dataset: str = checked("mnist", DATASETS)
    data_dir: str | None = None
    max_train_examples: int | None = None
    partition_workers: int = checked(100, "int")
    num_workers: int = checked(100, "int")
    dirichlet_alpha: float = checked(0.1, "positive_value")
    min_examples: int = checked(10, "int")
    test_fraction: float = 0.2
    data_seed: int = checked(0, "count")
    structure: str = checked("ring", STRUCTURES)
    num_groups: int = checked(4, "int")
    period: int = checked(10, "int")
    algorithm: str = checked("dp_ogl", ALGORITHMS)
    noise_multiplier: float = checked(2.0, "positive")
    sampling_rate: float = checked(0.7, "probability")

    def check(self):
        if self.num_workers > self.partition_workers:
            raise validate.JaxflValueError(
                f"Expected num_workers <= partition_workers, got {self.num_workers} > "
                f"{self.partition_workers}.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpOglConfig(DpOglSetting):
    """One DP-OGL / DP-OGL+ training run (one curve). All fields are ``--set`` overridable."""

    clip_norm: float = checked(0.05, "positive")
    local_steps: int = checked(10, "int")
    batch_size: int = checked(200, "int")
    client_lr: float = checked(0.001, "positive_value")
    epochs: int = checked(200, "int")
    model: str = "fedavg_cnn"
    model_features: tuple = (32, 64)
    model_hidden: tuple = (512,)
    checkpoint_every: int = checked(20, "int")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DpOglPrivacyConfig(DpOglSetting):
    """A privacy study of one curve (Fig. 4, no training): the PwP accountant after epochs
    ``t = 2..t_max`` (``rounds = t - 1``), headline logged per epoch; the report at ``t``
    holds the per-pair matrix (heatmap) and the per-worker mean/std/max curve (Fig. 4(a))."""

    panel: str = "e"
    t: int = 200

    def check(self):
        super().check()
        validate.positive_int("t", self.t, minimum=2)


def curve_fields(curve: str, variant: str = "full", **overrides) -> dict:
    """Field values turning the default :class:`DpOglConfig` into ``curve`` at a scale."""
    if curve not in CURVES:
        raise ValueError(f"Unknown curve {curve!r}; available: {sorted(CURVES)}.")
    if variant not in VARIANTS:
        raise ValueError(f"Expected variant in {VARIANTS}, got {variant!r}.")
    fields = {"curve": curve, "name": f"dp_ogl_{curve}", "variant": variant, **_BASE,
              **CURVES[curve], **_SCALES[variant], **overrides}
    if fields.get("algorithm") == "dp_ogl_plus" and "eval_every" not in overrides:
        # Evaluate DP-OGL+ at window closes (the released, noised models) only.
        fields["eval_every"] = math.lcm(fields.get("eval_every", 1), fields["period"])
    return fields


def make_config(curve: str, *, variant: str = "full", mode: str = "strict",
                dataset: str = "mnist", **overrides) -> DpOglConfig:
    """The training config of one registered curve at one scale."""
    return DpOglConfig(mode=mode, dataset=dataset, **curve_fields(curve, variant, **overrides))


def privacy_fields(curve: str, variant: str = "full", **overrides) -> dict:
    """Field values turning the default :class:`DpOglPrivacyConfig` into ``curve``: the
    setting only (privacy needs no downscaling; the smoke scale keeps its smaller partition,
    which matters for LB)."""
    if curve not in CURVES:
        raise ValueError(f"Unknown curve {curve!r}; available: {sorted(CURVES)}.")
    scale = {k: v for k, v in _SCALES["smoke" if variant == "smoke" else "full"].items()
             if k in _DATA_SCALE_FIELDS}
    return {"curve": curve, "name": f"dp_ogl_privacy_{curve}", "variant": variant, **_BASE,
            **CURVES[curve], **scale, **overrides}


def make_privacy_config(curve: str, *, variant: str = "full", mode: str = "strict",
                        dataset: str = "mnist", **overrides) -> DpOglPrivacyConfig:
    """The privacy-study config of one registered curve."""
    return DpOglPrivacyConfig(mode=mode, dataset=dataset,
                              **privacy_fields(curve, variant, **overrides))
