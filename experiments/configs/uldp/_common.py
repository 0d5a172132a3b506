"""Shared config of the ULDP-FL experiments (Kato et al., PVLDB 2024, Sec. 5.1; values from
the authors' code (FumiyukiKato/uldp-fl, branch ULDP-FL-2023), ``exp/script/*.sh``).

One :class:`UldpConfig` (data only) describes one run: a dataset with synthetic users, one
method by its paper name (``DEFAULT``, ``ULDP-NAIVE``, ``ULDP-GROUP-{k|max|median}``,
``ULDP-SGD[-w|-s|-ws]``, ``ULDP-AVG[-w|-s|-ws]``, ``SILO-LEVEL-DP``, ``RECORD-LEVEL-DP``) and its
hyperparameters. Its builder, :func:`experiments.papers.uldp.run_spec`, builds the algorithm
with its accountant (:mod:`jaxfl.accounting.uldp`); ``summary.json`` holds the privacy report in
both modes: ``privacy`` (``accounting``, default ``strict``: sound) and ``privacy_paper`` (the
authors' recipe, which reproduces their numbers; labelled ``sound=False`` where unsound).
"""

from __future__ import annotations

import dataclasses

from experiments.configs.base import DpTrainingConfig, checked

DATASETS = ("heart_disease", "tcga_brca", "mnist", "creditcard")
# |S|, T, B per dataset (the authors' exp/script/*.sh).
DATASET_DEFAULTS = {"heart_disease": dict(num_silos=4, rounds=50, batch_size=4),
                    "tcga_brca": dict(num_silos=6, rounds=50, batch_size=8),
                    "mnist": dict(num_silos=5, rounds=200, batch_size=64),
                    "creditcard": dict(num_silos=5, rounds=100, batch_size=64)}


VARIANTS = ("full", "cpu", "smoke")


@dataclasses.dataclass(frozen=True, kw_only=True)
class UldpConfig(DpTrainingConfig):
    """One ULDP-FL run; every field can be overridden with ``--set``."""

    builder = "experiments.papers.uldp:run_spec"
    variants = VARIANTS
    # rounds, data_dir and the DP-SGD fields are DpTrainingConfig's; their defaults here:
    defaults = dict(batch_size=4, clip_norm=0.1, noise_multiplier=5.0,
                    sampling_rate=1.0)  # sampling_rate: q of the -s / -ws variants

    name: str = "uldp"
    dataset: str = checked("heart_disease", DATASETS)
    num_users: int = checked(50, "int")
    distribution: str = "uniform"  # uniform | zipf | zipf-noniid (MNIST)
    num_silos: int = checked(4, "int")
    # MNIST only: stratified subsample of the training pool (0 records: nothing to train on)
    max_records: int | None = checked(None, "int?")
    # creditcard only: a synthetic stand-in (smoke)
    synthetic_records: int | None = checked(None, "int?")
    method: str = "ULDP-AVG"
    local_epochs: int = checked(50, "int")
    local_lr: float = checked(0.001, "positive_value")
    global_lr: float = checked(10.0, "positive_value")
    repo_compat: bool = False
    # the headline report's mode; the other is privacy_<mode>
    accounting: str = checked("strict", ("strict", "paper"))
    checkpoint_every: int = 25
    sound_group_accounting: bool = True  # GROUP: the mixture-of-Gaussians PLD (slow for T Q)
    # pairs vmapped per chunk; None: the library's default
    pair_chunk: int | None = checked(None, "int?")


def paper_hparams(dataset: str, method: str, num_users: int) -> dict:
    """The hyperparameters of ``exp/script/privacy_utility.sh`` (the authors' code)."""
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


# The keys :func:`figure_config` reads from its ``arg``.
FIGURE_ARG_KEYS = ("variant", "num_users", "distribution", "method", "seed", "num_silos",
                   "sampling_rate", "seeds")


def figure_config(arg, *, figure: str, dataset: str, num_users: int, distribution: str,
                  method: str = "ULDP-AVG", cpu: dict | None = None, smoke: dict | None = None,
                  **fixed) -> UldpConfig:
    """A figure's config: paper hyperparameters for (dataset, method, |U|), then the variant.

    ``arg`` accepts ``variant``, ``num_users``, ``distribution``, ``method``, ``seed``,
    ``num_silos`` and ``sampling_rate`` (e.g. ``variant=cpu,method=ULDP-AVG-w``); ``seeds``
    (``0:1:3``) is read by :func:`sweep` only.
    """
    from experiments import config as config_lib

    a = config_lib.parse_arg(arg, variant="full", num_users=num_users, distribution=distribution,
                             method=method, seed=0, num_silos=fixed.pop("num_silos", 0),
                             sampling_rate=fixed.pop("sampling_rate", 1.0), seeds=(),
                             variants=VARIANTS)
    if dataset == "creditcard" and a["variant"] == "smoke":
        # 1,000 stand-in records: one length bucket of (user, silo) pairs, so one copy of the
        # local training in the compiled round (the smoke sweep test compiles it three times;
        # Heart and TCGA-BRCA smokes keep several buckets).
        smoke = {"synthetic_records": 1000, **(smoke or {})}
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


def smoke_sweep(arg) -> list[dict] | None:
    """``variant=smoke``: two points differing in the traced global learning rate (one vmapped
    run, seconds); None for other variants."""
    from experiments import config as config_lib

    a = config_lib.parse_arg(arg, variant="full", extra_keys=FIGURE_ARG_KEYS + ("dataset",),
                             variants=VARIANTS)
    if a["variant"] != "smoke":
        return None
    return [{"global_lr": 1.0}, {"global_lr": 3.0}]


PAPER_SEEDS = (0, 1, 3, 6, 10)
# The nine methods of the silo-data figures (Figs. 4, 6, 7; Kato et al. 2023, Sec. 5.2).
METHODS = ("DEFAULT", "ULDP-NAIVE", "ULDP-GROUP-max", "ULDP-GROUP-median", "ULDP-GROUP-2",
           "ULDP-GROUP-8", "ULDP-SGD", "ULDP-AVG", "ULDP-AVG-w")


def sweep(get_config, arg, methods, users, distributions, seeds=PAPER_SEEDS) -> list[dict]:
    """Override dicts for every (method, |U|, distribution, seed) of a figure.

    Each point carries the fields in which its own config ``get_config("<arg>,method=...,
    num_users=...,distribution=...,seed=...")`` differs from ``get_config(arg)``, so a sweep
    point runs exactly the hyperparameters of the single run of that method (the paper's
    per-method learning rates and clipping bounds, then the variant's overrides). ``arg`` may
    hold ``seeds=0:1:3`` (sweep only) in place of the paper's seeds. ``variant=smoke``:
    :func:`smoke_sweep`.
    """
    from experiments import config as config_lib

    smoke = smoke_sweep(arg)
    if smoke is not None:
        return smoke
    seeds = config_lib.parse_arg(arg, seeds=(), extra_keys=FIGURE_ARG_KEYS)["seeds"] or seeds
    base = dataclasses.asdict(get_config(arg))
    out = []
    for u in users:
        for d in distributions:
            for m in methods:
                for seed in seeds:
                    cfg = dataclasses.asdict(get_config(
                        f"{arg or ''},method={m},num_users={u},distribution={d},seed={seed}"))
                    diff = {k: v for k, v in cfg.items() if v != base[k]}
                    out.append({"method": m, "num_users": u, "distribution": d, "seed": seed,
                                **diff})
    return out
