"""User-level DP across silos (ULDP-FL, Kato et al. 2023): records of synthetic users
allocated to silos, with each dataset's model and the paper's global-test metrics."""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from jaxfl import models, training, validate
from jaxfl import random as jrandom
from jaxfl.algorithms import uldp_data
from jaxfl.data import allocation, uldp_datasets
from jaxfl.models import cox as cox_model
from jaxfl.tasks.base import Task, register

DATASETS = ("heart_disease", "tcga_brca", "mnist", "creditcard")
# Training records per silo after FLamby's train / test split (Fed-Heart-Disease's 4 hospitals,
# Fed-TCGA-BRCA's 6 regions) and the smallest unit of a user's records (TCGA's pairs).
TRAIN_SILO_SIZES = {"heart_disease": (199, 172, 30, 85),
                    "tcga_brca": (248, 156, 164, 129, 129, 40)}
MIN_UNIT = {"heart_disease": 1, "tcga_brca": 2}


@functools.lru_cache(maxsize=8)
def load(dataset, num_users, distribution, num_silos, max_records, synthetic_records, seed,
         data_dir) -> uldp_datasets.UldpTask:
    """The dataset with its users and silos (cached: sweep points share the arrays); the
    allocation draws from stream ``allocation`` of ``seed``."""
    validate.one_of("dataset", dataset, DATASETS)
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


def bounded_silo_sizes(dataset: str, *, num_users: int, distribution: str, seed: int,
                       group) -> tuple[int, tuple[int, ...] | None]:
    """ULDP-GROUP's group size ``k`` and the silo sizes left once every user keeps at most
    ``k`` records, on the authors' allocation of ``dataset``'s training records to users.

    Record counts only (no file is read): the silos of :data:`TRAIN_SILO_SIZES`, users drawn by
    :func:`jaxfl.data.allocation.uldp_users_in_silos` from ``numpy.random.RandomState(seed)``
    (the authors' generator, so the draws are the paper's), ``k`` by
    :func:`jaxfl.algorithms.uldp_data.group_size` (``group``: ``"max"``, ``"median"`` or an
    int), records bounded by :func:`~jaxfl.algorithms.uldp_data.bound_records` (global
    round-robin pointer, :data:`MIN_UNIT`). The sizes are ``None`` when bounding leaves a silo
    empty (the authors' run aborts).

    Example Usage:
      >>> bounded_silo_sizes("heart_disease", num_users=50, distribution="uniform", seed=0,
      ...                    group=2)
      (2, (30, 30, 15, 25))
    """
    validate.one_of("dataset", dataset, tuple(TRAIN_SILO_SIZES))
    sizes, unit = TRAIN_SILO_SIZES[dataset], MIN_UNIT[dataset]
    users = allocation.uldp_users_in_silos(np.random.RandomState(seed), list(sizes), num_users,
                                           distribution=distribution, min_records=unit)
    data = uldp_data.from_silos([np.zeros((n, 1), np.float32) for n in sizes],
                                [np.zeros(n) for n in sizes], users, num_users=num_users)
    k = uldp_data.group_size(uldp_data.histogram(data),
                             group if group in ("max", "median") else int(group))
    try:
        bounded, _ = uldp_data.bound_records(data, k, min_unit=unit)
    except validate.JaxflValueError:  # a silo left empty
        return int(k), None
    return int(k), tuple(np.bincount(bounded.silo, minlength=data.num_silos).tolist())


def model_of(dataset: str) -> models.Model:
    """The paper's model of ``dataset``."""
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


@register("users_silos")
def users_silos(*, dataset: str = "heart_disease", num_users: int = 50,
                distribution: str = "uniform", num_silos: int = 4,
                max_records: int | None = None, synthetic_records: int | None = None,
                seed: int = 0, test_records: int | None = None, data_dir: str | None = None
                ) -> Task:
    """Records of ``num_users`` synthetic users in silos (ULDP-FL, Kato et al. 2023, Sec. 5.1).

    Source and silos: ``heart_disease`` (Fed-Heart-Disease, its 4 hospitals) and
    ``tcga_brca`` (Fed-TCGA-BRCA, its 6 regions) with FLamby's train / test split;
    ``mnist`` (``num_silos`` silos, optionally a stratified subsample of ``max_records``);
    ``creditcard`` (Kaggle fraud, ``num_silos`` silos; ``synthetic_records``: a synthetic
    stand-in of that many records). Partition: records allocated to users ``uniform`` or
    ``zipf`` (MNIST: ``zipf-noniid`` gives each user 2 labels), see
    :mod:`jaxfl.data.uldp_datasets` (stream ``allocation`` of ``seed``). Model: the paper's
    (:func:`model_of`). Evaluation: :func:`make_eval` on the global test set, or on its first
    ``test_records`` records. ``train`` is the :class:`~jaxfl.data.allocation` record of
    users x silos; ``info``: ``uldp`` (the whole :class:`~jaxfl.data.uldp_datasets.UldpTask`).
    """
    t = load(dataset, num_users, distribution, num_silos, max_records, synthetic_records, seed,
             data_dir)
    x, y = t.test_x, t.test_y
    if test_records is not None:
        x, y = x[:test_records], y[:test_records]
    model = model_of(dataset)
    return Task("users_silos", {}, t.train, (x, y), model, make_eval(model, dataset, x, y),
                {"uldp": t})
