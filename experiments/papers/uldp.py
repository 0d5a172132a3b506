"""Builder of ULDP-FL runs (:class:`experiments.configs.uldp._common.UldpConfig`): wiring only.

The dataset with its synthetic users in silos, the model and the global-test evaluation
(Kato et al. 2023, Sec. 5.1) are the ``users_silos`` task of :mod:`jaxfl.tasks`; this module
builds the method named by ``config.method`` (:mod:`jaxfl.algorithms.uldp`,
:mod:`jaxfl.algorithms.uldp_silo`, whose builders set the accountant of
:mod:`jaxfl.accounting.uldp`) and its device layout.
"""

from __future__ import annotations

import re

import numpy as np

from jaxfl import models, sweep, tasks
from jaxfl import random as jrandom
from jaxfl.algorithms import uldp, uldp_data, uldp_silo


def parse_method(method: str) -> tuple[str, str]:
    """``"ULDP-AVG-ws"`` -> ``("ULDP-AVG", "ws")``; ``"ULDP-GROUP-8"`` -> ``("ULDP-GROUP", "8")``.

    Raises:
      ValueError: for a name that is not one of the paper's methods.
    """
    m = re.fullmatch(r"(ULDP-AVG|ULDP-SGD)(?:-(w|s|ws))?", method)
    if m:
        return m.group(1), m.group(2) or ""
    m = re.fullmatch(r"ULDP-GROUP-(\d+|max|median)", method)
    if m:
        return "ULDP-GROUP", m.group(1)
    if method in ("DEFAULT", "ULDP-NAIVE", "SILO-LEVEL-DP", "RECORD-LEVEL-DP"):
        return method, ""
    raise ValueError(f"Unknown ULDP-FL method {method!r}.")


def algorithm_and_data(cfg, t, model):
    """``(algorithm, device-layout data, data info)`` of ``cfg.method`` on ``t.train`` (the
    :class:`~jaxfl.algorithms.uldp_data.UldpData` of :func:`task`, or any object holding one
    as ``train``)."""
    family, suffix = parse_method(cfg.method)
    train = t.train
    S = train.num_silos
    info = {"silo_sizes": np.bincount(train.silo, minlength=S).tolist()}
    local = dict(local_epochs=cfg.local_epochs, batch_size=cfg.batch_size,
                 local_lr=cfg.local_lr, global_lr=cfg.global_lr)
    if family in ("ULDP-AVG", "ULDP-SGD"):
        kw = dict(num_silos=S, num_users=train.num_users, global_lr=cfg.global_lr,
                  clip_norm=cfg.clip_norm, noise_multiplier=cfg.noise_multiplier,
                  weighting="optimal" if "w" in suffix else "uniform",
                  sampling_rate=cfg.sampling_rate if "s" in suffix else 1.0,
                  repo_compat=cfg.repo_compat, accounting=cfg.accounting)
        if family == "ULDP-AVG":
            alg = uldp.uldp_avg(model, local_epochs=cfg.local_epochs, batch_size=cfg.batch_size,
                                local_lr=cfg.local_lr, **kw)
        else:
            alg = uldp.uldp_sgd(model, batch_size=cfg.batch_size, **kw)
        chunk = "auto" if cfg.pair_chunk is None else cfg.pair_chunk
        data = uldp_data.pair_data(train, max_pairs_per_chunk=chunk,
                                   unit_flops=models.forward_flops(model))
    elif family in ("ULDP-GROUP", "RECORD-LEVEL-DP"):
        k, user_records, pointer = None, None, "per_user"
        if family == "ULDP-GROUP":
            hist = uldp_data.histogram(train)
            user_records = hist.sum(axis=0)
            k = uldp_data.group_size(hist, suffix if suffix in ("max", "median") else int(suffix))
            # strict: flags that depend on each user alone (group privacy holds); paper: the
            # authors' global round-robin pointer (it couples users; the strict report is inf)
            pointer = "per_user" if cfg.accounting == "strict" else "global"
            train, _ = uldp_data.bound_records(
                train, k, min_unit=2 if cfg.dataset == "tcga_brca" else 1, pointer=pointer)
        sizes = np.bincount(train.silo, minlength=S)
        info.update(group_size=k, bounded_silo_sizes=sizes.tolist())
        alg = uldp_silo.dp_sgd_silos(model, silo_sizes=sizes, clip_norm=cfg.clip_norm,
                                     noise_multiplier=cfg.noise_multiplier, group_size=k,
                                     user_records=user_records, accounting=cfg.accounting,
                                     group_mog=cfg.sound_group_accounting,
                                     bounding=pointer, **local)
        data = uldp_data.silo_data(train)
    else:
        mode = {"DEFAULT": "default", "ULDP-NAIVE": "naive", "SILO-LEVEL-DP": "silo"}[family]
        kw = {} if mode == "default" else dict(clip_norm=cfg.clip_norm,
                                               noise_multiplier=cfg.noise_multiplier)
        alg = uldp_silo.default(model, num_silos=S, mode=mode, accounting=cfg.accounting,
                                **local, **kw)
        data = uldp_data.silo_data(train)
    return alg, data, info


# The smoke variant evaluates on the first this many global-test records (all of a smaller test
# set): a smoke run checks the wiring (a sweep point equals its single run, every metric is
# logged), not accuracy, and the CNN on all 10,000 MNIST test images after every round was most
# of fig5_mnist's smoke sweep check. Other variants evaluate on the whole test set.
SMOKE_TEST_RECORDS = 500


def test_records(cfg) -> int | None:
    """How many global-test records ``cfg`` is evaluated on (``None``: all)."""
    return SMOKE_TEST_RECORDS if cfg.variant == "smoke" else None


def task(cfg) -> tasks.Task:
    """The config's ``users_silos`` task (its arrays cached per process; evaluated on
    :func:`test_records` global-test records)."""
    return tasks.get("users_silos", dataset=cfg.dataset, num_users=cfg.num_users,
                     distribution=cfg.distribution, num_silos=cfg.num_silos,
                     max_records=cfg.max_records, synthetic_records=cfg.synthetic_records,
                     seed=cfg.seed, test_records=test_records(cfg), data_dir=cfg.data_dir)


def run_spec(cfg) -> sweep.RunSpec:
    t = task(cfg)
    alg, data, _ = algorithm_and_data(cfg, t, t.model)
    params = t.model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
    return sweep.RunSpec(
        algorithm=alg, data=data, params=params, rounds=cfg.rounds, seed=cfg.seed,
        eval_fn=t.evaluate, eval_every=cfg.eval_every,
        checkpoint_every=cfg.checkpoint_every,
        delta=cfg.delta, config=cfg,
        extra_record={"method": cfg.method,
                      "implementation": "repo_compat" if cfg.repo_compat else "paper"})
