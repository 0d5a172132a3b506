"""Shared config of the ULDP-FL experiments (Kato et al., PVLDB 2024; spec Sec. 5.5).

One :class:`UldpConfig` describes one run: a dataset with synthetic users, one method by its
paper name (``DEFAULT``, ``ULDP-NAIVE``, ``ULDP-GROUP-{k|max|median}``, ``ULDP-SGD[-w|-s|-ws]``,
``ULDP-AVG[-w|-s|-ws]``, ``SILO-LEVEL-DP``, ``RECORD-LEVEL-DP``) and its hyperparameters.
``run(workdir)`` trains with :func:`jaxfl.training.run` and writes ``privacy.json`` with the
epsilon curve in both modes: ``paper`` (the authors' recipe, reproduces their numbers) and
``sound`` (the default: PLD for user-level methods, sigma/2 for NAIVE's 2C|S| sensitivity,
the mixture-of-Gaussians PLD for GROUP).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import models, training
from jaxfl import random as jrandom
from jaxfl.accounting import uldp as acc
from jaxfl.algorithms import uldp, uldp_data, uldp_silo
from jaxfl.data import uldp_datasets
from jaxfl.models import cox as cox_model

DATASETS = ("heart_disease", "tcga_brca", "mnist", "creditcard")
# Spec Sec. 5.5: |S|, T, B per dataset.
DATASET_DEFAULTS = {"heart_disease": dict(num_silos=4, rounds=50, batch_size=4),
                    "tcga_brca": dict(num_silos=6, rounds=50, batch_size=8),
                    "mnist": dict(num_silos=5, rounds=200, batch_size=64),
                    "creditcard": dict(num_silos=5, rounds=100, batch_size=64)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class UldpConfig:
    """One ULDP-FL run; every field can be overridden with ``--set``."""

    name: str = "uldp"
    variant: str = "full"
    dataset: str = "heart_disease"
    num_users: int = 50
    distribution: str = "uniform"  # uniform | zipf | zipf-noniid (MNIST)
    num_silos: int = 4
    max_records: int | None = None  # MNIST only: stratified subsample of the training pool
    method: str = "ULDP-AVG"
    rounds: int = 50
    local_epochs: int = 50
    batch_size: int = 4
    local_lr: float = 0.001
    global_lr: float = 10.0
    clip_norm: float = 0.1
    noise_multiplier: float = 5.0
    sampling_rate: float = 1.0  # q of the -s / -ws variants
    delta: float = 1e-5
    repo_compat: bool = False
    naive_sensitivity: str = "strict"
    seed: int = 0
    eval_every: int = 1
    checkpoint_every: int = 25
    data_dir: str | None = None
    sound_group_accounting: bool = True  # the mixture-of-Gaussians PLD (slow for large T Q)
    pair_chunk: int | None = 16  # pairs vmapped together (fastest on CPU, see bench_uldp)

    # ---- construction --------------------------------------------------------------------
    def task(self) -> uldp_datasets.UldpTask:
        rng = jrandom.host_rng(self.seed, "allocation")
        common = dict(num_users=self.num_users, rng=rng, path=self.data_dir)
        if self.dataset == "heart_disease":
            return uldp_datasets.heart_disease(distribution=self.distribution, **common)
        if self.dataset == "tcga_brca":
            return uldp_datasets.tcga_brca(distribution=self.distribution, **common)
        if self.dataset == "mnist":
            dist = self.distribution.split("-")[0]
            return uldp_datasets.mnist(
                num_silos=self.num_silos, user_distribution=dist, silo_distribution=dist,
                labels_per_user=2 if self.distribution.endswith("noniid") else None,
                max_records=self.max_records, **common)
        if self.dataset == "creditcard":
            return uldp_datasets.creditcard(num_silos=self.num_silos,
                                            distribution=self.distribution, **common)
        raise ValueError(f"Unknown dataset {self.dataset!r}; expected one of {DATASETS}.")

    def model(self) -> models.Model:
        if self.dataset == "heart_disease":
            return models.get_model("binary_logreg", input_shape=(13,), init_scheme="torch")
        if self.dataset == "tcga_brca":
            return models.get_model("cox", input_shape=(39,), ties="flamby", init_scheme="torch")
        if self.dataset == "mnist":
            return models.get_model("uldp_cnn")  # use pair_chunk ~16 on CPU
        return models.get_model("fraud_net")

    def parsed_method(self) -> tuple[str, str]:
        m = re.fullmatch(r"(ULDP-AVG|ULDP-SGD)(?:-(w|s|ws))?", self.method)
        if m:
            return m.group(1), m.group(2) or ""
        m = re.fullmatch(r"ULDP-GROUP-(\d+|max|median)", self.method)
        if m:
            return "ULDP-GROUP", m.group(1)
        if self.method in ("DEFAULT", "ULDP-NAIVE", "SILO-LEVEL-DP", "RECORD-LEVEL-DP"):
            return self.method, ""
        raise ValueError(f"Unknown ULDP-FL method {self.method!r}.")

    def build(self, task=None):
        """Returns ``(algorithm, device_data, params, eval_fn, extra_info)``."""
        task = task or self.task()
        model = self.model()
        family, suffix = self.parsed_method()
        train = task.train
        S = train.num_silos
        extra = {"silo_sizes": np.bincount(train.silo, minlength=S).tolist()}
        common = dict(local_epochs=self.local_epochs, batch_size=self.batch_size,
                      local_lr=self.local_lr, global_lr=self.global_lr)
        if family in ("ULDP-AVG", "ULDP-SGD"):
            q = self.sampling_rate if "s" in suffix else 1.0
            kw = dict(num_silos=S, num_users=train.num_users, global_lr=self.global_lr,
                      clip_norm=self.clip_norm, noise_multiplier=self.noise_multiplier,
                      weighting="optimal" if "w" in suffix else "uniform", sampling_rate=q,
                      repo_compat=self.repo_compat)
            if family == "ULDP-AVG":
                alg = uldp.uldp_avg(model, local_epochs=self.local_epochs,
                                    batch_size=self.batch_size, local_lr=self.local_lr, **kw)
            else:
                alg = uldp.uldp_sgd(model, batch_size=self.batch_size, **kw)
            data = uldp_data.pair_data(train, min_length=min(8, self.batch_size),
                                       max_pairs_per_chunk=self.pair_chunk)
        elif family == "ULDP-GROUP" or family == "RECORD-LEVEL-DP":
            k = None
            if family == "ULDP-GROUP":
                k = uldp_data.group_size(uldp_data.histogram(train), suffix if suffix in (
                    "max", "median") else int(suffix))
                train, _ = uldp_data.bound_records(
                    train, k, min_unit=2 if self.dataset == "tcga_brca" else 1)
            sizes = np.bincount(train.silo, minlength=S)
            extra.update(group_size=k, bounded_silo_sizes=sizes.tolist())
            alg = uldp_silo.dp_sgd_silos(model, silo_sizes=sizes, clip_norm=self.clip_norm,
                                         noise_multiplier=self.noise_multiplier, group_size=k,
                                         **common)
            data = uldp_data.silo_data(train)
        else:
            mode = {"DEFAULT": "default", "ULDP-NAIVE": "naive", "SILO-LEVEL-DP": "silo"}[family]
            kw = {} if mode == "default" else dict(clip_norm=self.clip_norm,
                                                   noise_multiplier=self.noise_multiplier)
            alg = uldp_silo.default(model, num_silos=S, mode=mode,
                                    naive_sensitivity=self.naive_sensitivity, **common, **kw)
            data = uldp_data.silo_data(train)
        params = model.init(jrandom.key_streams(self.seed, ("init",))["init"])
        return alg, data, params, make_eval(model, self.dataset, task.test_x, task.test_y), extra

    # ---- privacy ---------------------------------------------------------------------------
    def privacy(self, rounds, extra) -> dict:
        """Epsilon at the given round counts, in paper and sound modes (spec Sec. 3)."""
        family, suffix = self.parsed_method()
        rounds = [int(r) for r in rounds]
        sigma, delta = self.noise_multiplier, self.delta
        out = {"rounds": rounds, "delta": delta, "unit": "user"}
        if family == "DEFAULT":
            return {**out, "paper": [float("inf")] * len(rounds), "sound": [float("inf")] * len(
                rounds), "note": "non-private"}
        if family in ("ULDP-AVG", "ULDP-SGD", "ULDP-NAIVE"):
            q = self.sampling_rate if "s" in suffix else 1.0
            paper = acc.uldp_epsilon_curve(rounds, noise_multiplier=sigma, delta=delta,
                                           sampling_rate=q, mode="paper")
            s_sound = sigma / 2 if (family == "ULDP-NAIVE" and self.naive_sensitivity ==
                                    "strict") else sigma
            sound = acc.uldp_epsilon_curve(rounds, noise_multiplier=s_sound, delta=delta,
                                           sampling_rate=q, mode="pld")
            return {**out, "paper": paper.tolist(), "sound": sound.tolist(),
                    "sound_accountant": "pld", "paper_accountant": "opacus-rdp"}
        if family == "SILO-LEVEL-DP":
            eps = acc.uldp_epsilon_curve(rounds, noise_multiplier=sigma, delta=delta, mode="pld")
            return {**out, "unit": "silo", "paper": eps.tolist(), "sound": eps.tolist()}
        sizes = extra["bounded_silo_sizes"]
        kw = dict(silo_sizes=sizes, batch_size=self.batch_size, local_epochs=self.local_epochs,
                  noise_multiplier=sigma, delta=delta)
        if family == "RECORD-LEVEL-DP":
            eps = [acc.record_level_epsilon(rounds=r, **kw) for r in rounds]
            return {**out, "unit": "record", "paper": eps, "sound": eps}
        k = extra["group_size"]
        paper = acc.uldp_group_epsilon_curve(rounds, group_size=k, conversion="rdp_paper",
                                             **kw).tolist()
        res = {**out, "group_size": k, "paper": paper, "paper_conversion": "rdp_paper"}
        sound_rdp = acc.uldp_group_epsilon_curve(rounds, group_size=k, conversion="rdp",
                                                 **kw).tolist()
        res.update(sound=sound_rdp, sound_conversion="rdp")
        if self.sound_group_accounting and k <= 8:  # the PLD grid grows with epsilon
            mog = acc.uldp_group_epsilon(rounds=rounds[-1], group_size=k, conversion="pld_mog",
                                         **kw)["epsilon"]
            res["sound_final_pld_mog"] = mog
            res["sound_final"] = min(mog, sound_rdp[-1])
        return res

    def run(self, workdir, **kwargs) -> dict:
        alg, data, params, eval_fn, extra = self.build()
        res = training.run(alg, data, params=params, rounds=self.rounds, seed=self.seed,
                           workdir=workdir, eval_fn=eval_fn, eval_every=self.eval_every,
                           checkpoint_every=self.checkpoint_every, delta=None, config=self,
                           extra_record={"method": self.method,
                                         "mode": "repo_compat" if self.repo_compat else "paper"},
                           **kwargs)
        logged = [r["round"] for r in res.history] or [self.rounds]
        privacy = self.privacy(logged, extra)
        summary = {**res.summary, "privacy": privacy, "data": extra}
        if workdir is not None:
            Path(workdir, "privacy.json").write_text(json.dumps(privacy, indent=2))
        return summary


def make_eval(model, dataset: str, x, y, *, batch: int = 512):
    """Global-test metrics (spec Sec. 5.4): accuracy (MNIST, Heart), hard-label ROC-AUC = balanced
    accuracy and accuracy (Creditcard), C-index (TcgaBrca); ``test_loss`` is the mean loss and
    ``test_loss_sum512`` the paper's sum over 512-batches of batch means."""
    x = jnp.asarray(x)
    y = jnp.asarray(y)
    apply = jax.jit(lambda p: model.apply(p, x))

    def evaluate(params):
        out = apply(params)
        if dataset == "tcga_brca":
            per = np.asarray(model.loss(out, y))
            return {"test_c_index": float(cox_model.concordance_index(out, y)),
                    "test_loss": float(per.mean()), "test_loss_sum512": float(per.mean())}
        per = np.asarray(model.loss(out, y))
        sums = [per[i:i + batch].mean() for i in range(0, len(per), batch)]
        res = {"test_loss": float(per.mean()), "test_loss_sum512": float(np.sum(sums))}
        if dataset == "heart_disease":
            pred = (np.asarray(out)[:, 0] > 0).astype(int)
        else:
            pred = np.asarray(out).argmax(-1)
        yy = np.asarray(y).astype(int)
        res["test_accuracy"] = float(np.mean(pred == yy))
        if dataset == "creditcard":
            res["test_auc_hard"] = float(np.mean([np.mean(pred[yy == c] == c)
                                                  for c in np.unique(yy)]))
        return res

    return evaluate


def paper_hparams(dataset: str, method: str, num_users: int) -> dict:
    """The hyperparameters of ``exp/script/privacy_utility.sh`` (spec Sec. 5.5)."""
    base = dict(DATASET_DEFAULTS[dataset])
    fam = method.split("-w")[0].split("-s")[0]
    private_baseline = dict(global_lr=1.0, clip_norm=0.1)
    if dataset == "creditcard":
        lr, q = 0.01, 50
        if method == "DEFAULT":
            base.update(global_lr=1.0, local_lr=lr, local_epochs=q)
        elif method.startswith("ULDP-SGD"):
            base.update(global_lr=10.0, clip_norm=0.1)
        elif method.startswith("ULDP-AVG"):
            base.update(global_lr=10.0, clip_norm=0.1, local_lr=lr, local_epochs=30)
        else:
            base.update(private_baseline, local_lr=lr, local_epochs=q)
    elif dataset in ("heart_disease", "tcga_brca"):
        base.update(local_lr=0.001, local_epochs=50)
        if method == "DEFAULT":
            base.update(global_lr=1.0)
        elif method.startswith("ULDP-SGD") or method.startswith("ULDP-AVG"):
            base.update(global_lr=10.0, clip_norm=0.1)
        elif dataset == "tcga_brca" and method.startswith("ULDP-GROUP"):
            base.update(global_lr=0.1, clip_norm=100.0)
        else:
            base.update(private_baseline)
    else:  # mnist
        base.update(local_lr=0.01, local_epochs=50)
        if method == "DEFAULT":
            base.update(global_lr=1.0)
        elif method.startswith("ULDP-GROUP"):
            base.update(global_lr=1.0, clip_norm=1.0)
        elif method.startswith("ULDP-SGD"):
            base.update(global_lr=10.0, clip_norm=0.1)
        elif fam.startswith("ULDP-AVG"):
            base.update(global_lr=10.0 if num_users <= 100 else 100.0, clip_norm=0.1)
        else:
            base.update(private_baseline)
    return base


VARIANTS = ("full", "cpu", "smoke")
# The keys :func:`figure_config` reads from its ``arg``.
FIGURE_ARG_KEYS = ("variant", "num_users", "distribution", "method", "seed", "num_silos",
                   "sampling_rate")


def figure_config(arg, *, figure: str, dataset: str, num_users: int, distribution: str,
                  method: str = "ULDP-AVG", cpu: dict | None = None, smoke: dict | None = None,
                  **fixed) -> UldpConfig:
    """A figure's config: paper hyperparameters for (dataset, method, |U|), then the variant.

    ``arg`` accepts ``variant``, ``num_users``, ``distribution``, ``method``, ``seed``,
    ``num_silos`` and ``sampling_rate`` (e.g. ``variant=cpu,method=ULDP-AVG-w``).
    """
    from experiments import config as config_lib

    a = config_lib.parse_arg(arg, variant="full", num_users=num_users, distribution=distribution,
                             method=method, seed=0, num_silos=fixed.pop("num_silos", 0),
                             sampling_rate=fixed.pop("sampling_rate", 1.0))
    if a["variant"] not in VARIANTS:
        raise ValueError(f"Unknown variant {a['variant']!r}; expected one of {VARIANTS}.")
    hp = paper_hparams(dataset, a["method"], a["num_users"])
    if a["num_silos"]:
        hp["num_silos"] = a["num_silos"]
    hp.update(fixed)
    cfg = UldpConfig(name=f"uldp_{figure}", variant=a["variant"], dataset=dataset,
                     num_users=a["num_users"], distribution=a["distribution"],
                     method=a["method"], seed=a["seed"], sampling_rate=a["sampling_rate"], **hp)
    if a["variant"] == "cpu" and cpu:
        cfg = config_lib.apply_overrides(cfg, cpu)
    if a["variant"] == "smoke":
        cfg = config_lib.apply_overrides(cfg, {"rounds": 2, "local_epochs": 1,
                                               "sound_group_accounting": False,
                                               "checkpoint_every": 2, **(smoke or {})})
    return cfg


def sweep(methods, users, distributions, seeds=(0, 1, 3, 6, 10), **extra) -> list[dict]:
    """Override dicts for every (method, |U|, distribution, seed); the paper's seeds."""
    return [{"method": m, "num_users": u, "distribution": d, "seed": s, **extra}
            for u in users for d in distributions for m in methods for s in seeds]
