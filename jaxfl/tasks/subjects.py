"""Subject-level DP tasks: data items that belong to subjects (writers, speakers, patients),
the subjects spread over users (Subject-level DP in federated learning)."""

from __future__ import annotations

import functools

import numpy as np

from jaxfl import models, training, validate
from jaxfl import random as jrandom
from jaxfl.data import leaf
from jaxfl.data import subjects as subject_data
from jaxfl.tasks.base import Task, register

DATASETS = ("mnist_writers", "shakespeare", "parkinsons", "femnist_leaf", "synthetic")
MODELS_WITH_HIDDEN = ("mlp", "char_lstm")


@functools.lru_cache(maxsize=4)
def load(dataset: str, data_dir, num_users: int, num_subjects: int, num_train, num_test,
         alpha: float, seed: int) -> subject_data.SubjectData:
    """The :class:`~jaxfl.data.subjects.SubjectData` of the options (cached: sweep points share
    it); the subjects' spread over users draws from stream ``partition`` of ``seed``."""
    validate.one_of("dataset", dataset, DATASETS)
    rng = jrandom.host_rng(seed, "partition")
    if dataset == "mnist_writers":
        return subject_data.mnist_writers(num_users=num_users, num_subjects=num_subjects,
                                          rng=rng, num_train=num_train, num_test=num_test,
                                          alpha=alpha, path=data_dir)
    if dataset == "shakespeare":
        return subject_data.shakespeare_by_role(num_users=num_users, rng=rng,
                                                max_subjects=num_subjects, max_items=num_train,
                                                alpha=alpha, stride=80, path=data_dir)
    if dataset == "parkinsons":
        return subject_data.parkinsons_subjects(num_users=num_users, rng=rng, alpha=alpha,
                                                path=data_dir)
    if dataset == "femnist_leaf":  # real LEAF FEMNIST when it is available (GPU scale)
        tr, te = (leaf.load_femnist(s, path=data_dir) for s in ("train", "test"))
        return subject_data.leaf_subjects(tr, test_split=te, num_users=num_users, rng=rng,
                                          max_subjects=num_subjects, alpha=alpha,
                                          x_transform=leaf.femnist_images)
    # synthetic: tiny blobs for smoke tests (no files)
    n = num_train or 2000
    y = rng.integers(0, 4, n).astype(np.int32)
    x = (rng.normal(size=(4, 8))[y] + rng.normal(size=(n, 8))).astype(np.float32)
    s = rng.integers(0, num_subjects, n)
    return subject_data.spread(x[: n * 4 // 5], y[: n * 4 // 5], s[: n * 4 // 5],
                               num_users=num_users, rng=rng, alpha=alpha,
                               test_x=x[n * 4 // 5:], test_y=y[n * 4 // 5:])


def model_of(name: str, hidden: tuple, d: subject_data.SubjectData) -> models.Model:
    """Model ``name`` for the data of ``d`` (``hidden`` for the MLP and the char LSTM)."""
    x = np.asarray(d.train.x)
    if name == "linear":
        return models.get_model("linear", input_shape=x.shape[2:])
    if name == "char_lstm":
        return models.get_model("char_lstm", hidden=tuple(hidden), seq_len=x.shape[2])
    num_classes = int(max(np.asarray(d.train.y).max(), d.test_y.max(initial=0)) + 1)
    if name == "mlp":
        return models.get_model("mlp", hidden=tuple(hidden), num_classes=num_classes,
                                input_shape=(int(np.prod(x.shape[2:])),))
    return models.get_model(name, num_classes=num_classes, input_shape=x.shape[2:])


@register("subject_users")
def subject_users(*, dataset: str = "mnist_writers", num_users: int = 16,
                  num_subjects: int = 150, num_train: int | None = 20000,
                  num_test: int | None = 2000, alpha: float = 1.0, seed: int = 0,
                  model: str = "mlp", hidden: tuple = (64,), data_dir: str | None = None
                  ) -> Task:
    """Items of subjects spread over users (subject-level DP).

    Source and subjects: ``mnist_writers`` (MNIST with ``num_subjects`` synthetic writers,
    each with its own style), ``shakespeare`` (tiny Shakespeare, a subject per role, 80-char
    windows), ``parkinsons`` (UCI telemonitoring, a subject per patient), ``femnist_leaf``
    (LEAF FEMNIST, a subject per writer) or ``synthetic`` (Gaussian blobs, no files; for smoke
    runs). Partition: each subject's items spread over ``num_users`` users with Dirichlet
    (``alpha``) shares (:func:`jaxfl.data.subjects.spread`; stream ``partition`` of ``seed``).
    Model: ``model`` (``linear``, ``mlp`` / ``char_lstm`` with ``hidden``, or any registered
    classifier). Evaluation: accuracy and loss on the held-out items. ``info``: ``subjects``
    (the :class:`~jaxfl.data.subjects.SubjectData`).
    """
    d = load(dataset, data_dir, num_users, num_subjects, num_train, num_test, alpha, seed)
    net = model_of(model, hidden, d)
    return Task("subject_users", {}, d.train, (d.test_x, d.test_y), net,
                training.make_classifier_eval(net, d.test_x, d.test_y), {"subjects": d})
