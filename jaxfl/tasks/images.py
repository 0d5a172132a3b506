"""Image and tabular classification tasks: one split into clients (FedAvg / DP-FedAvg /
DP-FTRL), label-sorted shards (LightDP-FL), node shards with a validation hold-out (gossip DP)
and per-worker train / test splits (DP-OGL).

Every random choice draws from :func:`jaxfl.random.host_rng` with a named stream of the task's
seed, so a task is a pure function of its options. Loaded arrays, models and compiled
evaluations are cached per process: the points of a sweep share them.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from jaxfl import models, training, validate
from jaxfl import random as jrandom
from jaxfl.algorithms import gossip as gossip_alg
from jaxfl.data import catalog, federated, idx, tabular
from jaxfl.data import partition as partitioners
from jaxfl.tasks.base import Task, model_for, model_params, register

CLASSIFICATION_DATASETS = (*idx.STANDARDIZATION, "digits", "cifar10")
STANDARDIZED_DATASETS = (*idx.STANDARDIZATION, "cifar10")
PARTITIONS = ("dirichlet", "iid", "shards")


# ----------------------------------------------------------------------------- arrays


def classification_arrays(name: str, *, data_dir=None):
    """``(x_train, y_train, x_test, y_test)`` of dataset ``name`` as float32 / int32 arrays
    (read-only): IDX images scaled to [0, 1] with a channel axis; scikit-learn's digits / 16,
    split 80 / 20 by the seed-0 ``digits_split`` permutation; CIFAR-10 / 255.

    The last dataset loaded is kept: the points of a sweep and their single runs build one task
    each from the same files. The arrays are shared, so they are read-only; a caller that
    changes them works on a copy."""
    validate.one_of("dataset", name, CLASSIFICATION_DATASETS)
    # Keyed by where the files are read from (JAXFL_DATA_DIR when data_dir is None).
    where = str(data_dir) if data_dir is not None else os.environ.get("JAXFL_DATA_DIR")
    return _classification_arrays(name, None if data_dir is None else str(data_dir), where)


@functools.lru_cache(maxsize=1)
def _classification_arrays(name: str, data_dir, where):
    del where  # part of the cache key only
    arrays = _read_classification(name, data_dir=data_dir)
    for a in arrays:
        a.flags.writeable = False
    return arrays


def _read_classification(name: str, *, data_dir=None):
    if name in idx.STANDARDIZATION:
        return (*idx.load_normalized(name, "train", path=data_dir),
                *idx.load_normalized(name, "test", path=data_dir))
    if name == "digits":
        t = tabular.load_digits(images=True)
        x = (t.x / 16.0).astype(np.float32)
        y = t.y.astype(np.int32)
        perm = jrandom.host_rng(0, "digits_split").permutation(len(x))
        cut = int(0.8 * len(x))
        return x[perm[:cut]], y[perm[:cut]], x[perm[cut:]], y[perm[cut:]]
    xtr, ytr = catalog.load("cifar10", split="train", path=data_dir)
    xte, yte = catalog.load("cifar10", split="test", path=data_dir)
    f = lambda a: (a.astype(np.float32) / 255.0)
    return f(xtr), ytr.astype(np.int32), f(xte), yte.astype(np.int32)


@functools.lru_cache(maxsize=4)
def standardized_arrays(dataset: str, image_pool: int = 1):
    """``(x_train, y_train, x_test, y_test)``: float32 images standardized per channel
    (channels last; IDX sets by :data:`jaxfl.data.idx.STANDARDIZATION`, CIFAR-10 by its usual
    means and deviations), int32 labels, average-pooled by ``image_pool``.

    Raises:
      DataNotFoundError: when the dataset's files are absent (the message names them).
    """
    validate.one_of("dataset", dataset, STANDARDIZED_DATASETS)
    if dataset == "cifar10":
        (xtr, ytr), (xte, yte) = catalog.load("cifar10", split="train"), catalog.load(
            "cifar10", split="test")
        mean = np.array([0.4914, 0.4822, 0.4465], np.float32)
        std = np.array([0.2470, 0.2435, 0.2616], np.float32)
        norm = lambda x: ((x.astype(np.float32) / 255.0 - mean) / std).astype(np.float32)
        xtr, ytr = norm(xtr), ytr.astype(np.int32)
        xte, yte = norm(xte), yte.astype(np.int32)
    else:
        xtr, ytr = idx.load_normalized(dataset, "train", standardize=True)
        xte, yte = idx.load_normalized(dataset, "test", standardize=True)
    return pool(xtr, image_pool), ytr, pool(xte, image_pool), yte


def pool(x: np.ndarray, k: int) -> np.ndarray:
    """Average-pools ``[n, H, W, C]`` images by ``k`` (H, W divisible by k)."""
    if k == 1:
        return x
    n, h, w, c = x.shape
    return x.reshape(n, h // k, k, w // k, k, c).mean(axis=(2, 4)).astype(np.float32)


# ----------------------------------------------------------------------------- classification


@register("classification")
def classification(*, dataset: str = "mnist", model: str = "logreg", num_clients: int = 1000,
                   partition: str = "dirichlet", alpha: float = 0.5, seed: int = 0,
                   max_train_examples: int | None = None, data_dir: str | None = None) -> Task:
    """Image / tabular classification split over clients (McMahan et al. 2017 style; the
    DP-FedAvg and DP-FTRL runs).

    Source: :func:`classification_arrays` (MNIST, Fashion-MNIST, scikit-learn digits,
    CIFAR-10), optionally a sorted seeded subsample of ``max_train_examples`` training examples
    (stream ``subsample``). Partition into ``num_clients`` clients (stream ``partition``):
    ``dirichlet`` (label proportions ~ Dir(``alpha``)), ``iid`` or ``shards`` (label-sorted,
    two per client), see :mod:`jaxfl.data.partition`. Model: ``model`` from the registry, given
    the input shape and the number of classes. Evaluation: accuracy and loss on the test split.
    ``info``: ``client_indices``.
    """
    validate.one_of("partition", partition, PARTITIONS)
    validate.one_of("dataset", dataset, CLASSIFICATION_DATASETS)
    validate.positive_int("num_clients", num_clients)
    model_params(model)  # an unknown model fails before the data loads
    xtr, ytr, xte, yte = classification_arrays(dataset, data_dir=data_dir)
    if max_train_examples is not None and max_train_examples < len(xtr):
        keep = jrandom.host_rng(seed, "subsample").permutation(len(xtr))
        keep = np.sort(keep[: max_train_examples])
        xtr, ytr = xtr[keep], ytr[keep]
    rng = jrandom.host_rng(seed, "partition")
    if partition == "dirichlet":
        parts = partitioners.dirichlet(rng, ytr, num_clients, alpha=alpha)
    elif partition == "iid":
        parts = partitioners.iid(rng, len(ytr), num_clients)
    else:
        parts = partitioners.shards(rng, ytr, num_clients)
    net = model_for(model, xtr.shape[1:], int(max(ytr.max(), yte.max()) + 1))
    return Task("classification", {}, federated.from_partition(xtr, ytr, parts), (xte, yte),
                net, training.make_classifier_eval(net, xte, yte), {"client_indices": parts})


# ----------------------------------------------------------------------------- label shards


def shard_indices(labels: np.ndarray, *, num_clients: int, examples_per_client: int,
                  shards_per_client: int, seed: int) -> list[np.ndarray]:
    """A seeded subsample of ``num_clients * examples_per_client`` examples (sorted) cut into
    label-sorted shards, ``shards_per_client`` per client; every client gets exactly
    ``examples_per_client`` examples (stream ``partition`` of ``seed``).

    Raises:
      JaxflValueError: when the training set has fewer examples than that.
    """
    rng = jrandom.host_rng(seed, "partition")
    total = num_clients * examples_per_client
    if total > len(labels):
        raise validate.JaxflValueError(f"Need {total} training examples, have {len(labels)}.")
    chosen = np.sort(rng.permutation(len(labels))[:total])
    parts = partitioners.shards(rng, labels[chosen], num_clients,
                                shards_per_client=shards_per_client)
    return [chosen[p][: examples_per_client] for p in parts]


def test_subset(num_test: int, test_examples: int | None, seed: int) -> np.ndarray:
    """The evaluation examples: all, or a fixed sorted subset of ``test_examples`` (stream
    ``test_subset`` of ``seed``)."""
    if test_examples is None:
        return np.arange(num_test)
    return np.sort(jrandom.host_rng(seed, "test_subset").permutation(num_test)[:test_examples])


@functools.lru_cache(maxsize=8)
def cached_model(name: str, kwargs: tuple) -> models.Model:
    """``models.get_model(name, **dict(kwargs))``, cached."""
    return models.get_model(name, **dict(kwargs))


@functools.lru_cache(maxsize=16)
def _subset_eval(model_name: str, model_kwargs: tuple, dataset: str, image_pool: int,
                 test_key: tuple):
    _, _, xte, yte = standardized_arrays(dataset, image_pool)
    sel = np.asarray(test_key, dtype=np.int64)
    return training.make_classifier_eval(cached_model(model_name, model_kwargs), xte[sel],
                                         yte[sel])


@register("label_shards")
def label_shards(*, dataset: str = "cifar10", image_pool: int = 1, num_clients: int = 50,
                 examples_per_client: int = 1000, shards_per_client: int = 2, seed: int = 0,
                 test_examples: int | None = None, model: str = "resnet18_gn",
                 model_kwargs: tuple = ()) -> Task:
    """Label-sorted shards of equal size (LightDP-FL, Zhou et al.; the paper does not say how
    it splits, so the classic non-IID shards of McMahan et al.).

    Source: :func:`standardized_arrays` (CIFAR-10, MNIST, Fashion-MNIST standardized per
    channel, average-pooled by ``image_pool``). Partition: :func:`shard_indices` (exactly
    ``examples_per_client`` examples for each of ``num_clients`` clients, ``shards_per_client``
    label-sorted shards each). Model: ``model`` with ``model_kwargs`` (a tuple of pairs).
    Evaluation: accuracy and loss on the test split, or on a fixed subset of
    ``test_examples`` (:func:`test_subset`). ``info``: ``client_indices``, ``test_indices``.
    """
    xtr, ytr, xte, yte = standardized_arrays(dataset, image_pool)
    parts = shard_indices(ytr, num_clients=num_clients, examples_per_client=examples_per_client,
                          shards_per_client=shards_per_client, seed=seed)
    sel = test_subset(len(xte), test_examples, seed)
    evaluate = _subset_eval(model, model_kwargs, dataset, image_pool, tuple(sel.tolist()))
    return Task("label_shards", {}, federated.from_partition(xtr, ytr, parts),
                (xte[sel], yte[sel]), cached_model(model, model_kwargs), evaluate,
                {"client_indices": parts, "test_indices": sel})


# ----------------------------------------------------------------------------- node shards


@functools.lru_cache(maxsize=4)
def _node_shards(dataset: str, num_nodes: int, per_node: int, seed: int, val_size: int,
                 data_dir):
    xtr, ytr = idx.load_normalized(dataset, "train", path=data_dir)
    xte, yte = idx.load_normalized(dataset, "test", path=data_dir)
    flat = lambda a: a.reshape(a.shape[0], -1)
    if val_size >= xtr.shape[0]:
        raise validate.JaxflValueError(f"val_size={val_size} leaves no training examples.")
    perm = jrandom.host_rng(seed, "validation").permutation(xtr.shape[0])
    val, rest = np.sort(perm[:val_size]), np.sort(perm[val_size:])
    parts = [rest[q[:per_node]]
             for q in partitioners.iid(jrandom.host_rng(seed, "partition"), len(rest),
                                       num_nodes)]
    data = federated.from_partition(flat(xtr), ytr, parts)
    model = gossip_alg.logreg_model(784, 10)
    test = training.make_classifier_eval(model, flat(xte), yte, batch_size=2000)
    if not val_size:
        return data, model, test, (flat(xte), yte), parts
    valid = training.make_classifier_eval(model, flat(xtr[val]), ytr[val], batch_size=2000)

    def evaluate(params):
        out = dict(test(params))
        out.update({k.replace("test_", "val_"): v for k, v in valid(params).items()})
        return out

    return data, model, evaluate, (flat(xte), yte), parts


@register("node_shards")
def node_shards(*, dataset: str = "mnist", num_nodes: int = 100, per_node: int = 600,
                seed: int = 0, val_size: int = 0, data_dir: str | None = None) -> Task:
    """IID shards of flattened images over the nodes of a gossip graph (Koskela & Kulkarni
    2025, Fig. 3).

    Source: MNIST (or Fashion-MNIST) scaled to [0, 1], flattened to 784 features; first
    ``val_size`` training examples of the seed's ``validation`` permutation are held out for
    validation. Partition: the rest split IID over ``num_nodes`` nodes (stream ``partition``),
    the first ``per_node`` of each kept. Model: the 784 x 10 multinomial logistic regression of
    :func:`jaxfl.algorithms.gossip.logreg_model`. Evaluation: ``test_*`` on the test split and,
    with ``val_size``, ``val_*`` on the held-out examples (cached per process).
    """
    validate.one_of("dataset", dataset, tuple(idx.STANDARDIZATION))
    data, model, evaluate, test, parts = _node_shards(dataset, num_nodes, per_node, seed,
                                                      val_size, data_dir)
    return Task("node_shards", {}, data, test, model, evaluate, {"node_indices": parts})


# ----------------------------------------------------------------------------- DP-OGL workers


def worker_split(*, dataset: str = "mnist", num_workers: int = 100,
                 partition_workers: int = 100, dirichlet_alpha: float = 0.1,
                 min_examples: int = 10, test_fraction: float = 0.2, data_seed: int = 0,
                 max_train_examples: int | None = None, data_dir: str | None = None):
    """``(x, y, train_idx, test_idx)``: the first ``num_workers`` of the Dirichlet partition
    over ``partition_workers`` workers (seeded by ``data_seed``), each worker's share split
    ``1 - test_fraction`` / ``test_fraction``."""
    x, y = idx.load(dataset, "train", path=data_dir)
    if max_train_examples is not None and max_train_examples < len(x):
        keep = np.sort(jrandom.host_rng(data_seed, "subsample").permutation(len(x))[
            : max_train_examples])
        x, y = x[keep], y[keep]
    parts = partitioners.dirichlet(jrandom.host_rng(data_seed, "partition"), y,
                                   partition_workers, alpha=dirichlet_alpha,
                                   min_examples=min_examples)[: num_workers]
    rng = jrandom.host_rng(data_seed, "test_split")
    train, test = [], []
    for ix in parts:  # host-side split of each worker's share (same label distribution)
        ix = rng.permutation(ix)
        cut = min(max(1, int(round(len(ix) * test_fraction))), len(ix) - 1)
        test.append(np.sort(ix[:cut]))
        train.append(np.sort(ix[cut:]))
    return x, y, train, test


def label_counts(y: np.ndarray, train: list[np.ndarray]) -> np.ndarray:
    """Per-worker label histograms ``[workers, 10]``."""
    return np.stack([np.bincount(y[ix], minlength=10) for ix in train])


@register("worker_splits")
def worker_splits(*, dataset: str = "mnist", num_workers: int = 100,
                  partition_workers: int = 100, dirichlet_alpha: float = 0.1,
                  min_examples: int = 10, test_fraction: float = 0.2, data_seed: int = 0,
                  max_train_examples: int | None = None, data_dir: str | None = None,
                  model: str | None = None, model_hidden: tuple = (512,),
                  model_features: tuple = (32, 64)) -> Task:
    """Dirichlet-skewed workers, each with its own train / test split (DP-OGL, Kiani et al.
    2024).

    Source: MNIST (or Fashion-MNIST) training split, optionally a sorted seeded subsample of
    ``max_train_examples`` (stream ``subsample`` of ``data_seed``). Partition:
    :func:`worker_split` (Dirichlet(``dirichlet_alpha``) label skew over
    ``partition_workers``, at least ``min_examples`` each, the first ``num_workers`` kept, a
    ``test_fraction`` of each held out). ``train`` and ``test`` are per-worker
    :class:`~jaxfl.data.FederatedData` of images scaled to [0, 1]. Model: ``model``
    (``hidden=model_hidden``; ``features=model_features`` for ``fedavg_cnn``) on 28 x 28 x 1
    images with 10 classes; none when ``model`` is ``None``. Evaluation: none here (the
    personalized evaluation needs the algorithm's groups, see
    :func:`jaxfl.algorithms.dp_ogl.make_personalized_eval`). ``info``: ``label_counts``
    ``[num_workers, 10]`` of the train splits.
    """
    x, y, train, test = worker_split(
        dataset=dataset, num_workers=num_workers, partition_workers=partition_workers,
        dirichlet_alpha=dirichlet_alpha, min_examples=min_examples, test_fraction=test_fraction,
        data_seed=data_seed, max_train_examples=max_train_examples, data_dir=data_dir)
    x = idx.normalize_images(x)
    net = None
    if model is not None:
        kw = {"hidden": tuple(model_hidden)}
        if model == "fedavg_cnn":
            kw["features"] = tuple(model_features)
        net = models.get_model(model, num_classes=10, input_shape=(28, 28, 1), **kw)
    return Task("worker_splits", {}, federated.from_partition(x, y, train),
                federated.from_partition(x, y, test), net, None,
                {"label_counts": label_counts(y, train)})
