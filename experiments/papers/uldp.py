"""Builder of ULDP-FL runs (:class:`experiments.configs.uldp._common.UldpConfig`): wiring only.

Loads the dataset with its synthetic users (:mod:`jaxfl.data.uldp_datasets`), builds the model,
the method named by ``config.method`` (:mod:`jaxfl.algorithms.uldp`,
:mod:`jaxfl.algorithms.uldp_silo`, whose builders set the accountant of
:mod:`jaxfl.accounting.uldp`) and the global-test evaluation (Kato et al. 2023, Sec. 5.1).
"""

from __future__ import annotations

import functools
import re

import jax.numpy as jnp
import numpy as np

from jaxfl import models, sweep, training
from jaxfl import random as jrandom
from jaxfl.algorithms import uldp, uldp_data, uldp_silo
from jaxfl.data import uldp_datasets
from jaxfl.models import cox as cox_model


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


@functools.lru_cache(maxsize=8)
def _task(dataset, num_users, distribution, num_silos, max_records, synthetic_records, seed,
          data_dir) -> uldp_datasets.UldpTask:
    rng = jrandom.host_rng(seed, "allocation")
    common = dict(num_users=num_users, rng=rng, path=data_dir)
    if dataset == "heart_disease":
        return uldp_datasets.heart_disease(distribution=distribution, **common)
    if dataset == "tcga_brca":
        return uldp_datasets.tcga_brca(distribution=distribution, **common)
    if dataset == "mnist":
        dist = distribution.split("-")[0]
        return uldp_datasets.mnist(
            num_silos=num_silos, user_distribution=dist, silo_distribution=dist,
            labels_per_user=2 if distribution.endswith("noniid") else None,
            max_records=max_records, **common)
    return uldp_datasets.creditcard(num_silos=num_silos, distribution=distribution,
                                    synthetic_records=synthetic_records, **common)


def task(cfg) -> uldp_datasets.UldpTask:
    """The dataset with its users and silos (cached: sweep points share the arrays)."""
    return _task(cfg.dataset, cfg.num_users, cfg.distribution, cfg.num_silos, cfg.max_records,
                 cfg.synthetic_records, cfg.seed, cfg.data_dir)


def model_of(dataset: str) -> models.Model:
    if dataset == "heart_disease":
        return models.get_model("binary_logreg", input_shape=(13,), init_scheme="torch")
    if dataset == "tcga_brca":
        return models.get_model("cox", input_shape=(39,), ties="flamby", init_scheme="torch")
    if dataset == "mnist":
        return models.get_model("uldp_cnn")
    return models.get_model("fraud_net")


def make_eval(model, dataset: str, x, y, *, batch: int = 512):
    """Global-test metrics (Sec. 5.1, as the authors' code computes them): accuracy (MNIST, Heart),
    hard-label ROC-AUC = balanced accuracy and accuracy (Creditcard), C-index (TcgaBrca);
    ``test_loss`` is the mean loss and ``test_loss_sum512`` the paper's sum over 512-batches of
    batch means. :func:`jaxfl.training.make_classifier_eval` on the whole set at once (the
    C-index is a statistic of the set), the paper's set-level statistics as its
    ``set_metrics``."""
    classes = np.unique(np.asarray(y).astype(int))

    def paper(out, y):
        per = model.loss(out, y)
        if dataset == "tcga_brca":
            return {"c_index": cox_model.concordance_index(out, y), "loss_sum512": per.mean()}
        res = {"loss_sum512": sum(per[i:i + batch].mean() for i in range(0, len(per), batch))}
        if dataset == "creditcard":
            pred, yy = out.argmax(-1), y.astype(int)
            res["auc_hard"] = jnp.mean(jnp.stack([jnp.sum((pred == c) & (yy == c))
                                                  / jnp.sum(yy == c) for c in classes]))
        return res

    keep = ({"test_c_index", "test_loss", "test_loss_sum512"} if dataset == "tcga_brca" else
            {"test_loss", "test_loss_sum512", "test_accuracy", "test_auc_hard"})
    evaluate = training.make_classifier_eval(model, x, y, batch_size=len(x), set_metrics=paper)
    return lambda params: {k: float(v) for k, v in evaluate(params).items() if k in keep}


def algorithm_and_data(cfg, t: uldp_datasets.UldpTask, model):
    """``(algorithm, device-layout data, data info)`` of ``cfg.method`` on ``t.train``."""
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


def eval_records(cfg, t: uldp_datasets.UldpTask) -> tuple[np.ndarray, np.ndarray]:
    """The global-test records ``cfg`` is evaluated on (:data:`SMOKE_TEST_RECORDS`)."""
    if cfg.variant == "smoke":
        return t.test_x[:SMOKE_TEST_RECORDS], t.test_y[:SMOKE_TEST_RECORDS]
    return t.test_x, t.test_y


def run_spec(cfg) -> sweep.RunSpec:
    t = task(cfg)
    model = model_of(cfg.dataset)
    alg, data, _ = algorithm_and_data(cfg, t, model)
    params = model.init(jrandom.key_streams(cfg.seed, ("init",))["init"])
    return sweep.RunSpec(
        algorithm=alg, data=data, params=params, rounds=cfg.rounds, seed=cfg.seed,
        eval_fn=make_eval(model, cfg.dataset, *eval_records(cfg, t)), eval_every=cfg.eval_every,
        checkpoint_every=cfg.checkpoint_every,
        delta=cfg.delta, config=cfg,
        extra_record={"method": cfg.method,
                      "implementation": "repo_compat" if cfg.repo_compat else "paper"})
