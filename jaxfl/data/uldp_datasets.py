"""ULDP-FL's four datasets with users synthesised as in the authors' code
(Kato et al. 2023, Sec. 5.1; preprocessing and allocation from the authors' code
(FumiyukiKato/uldp-fl, branch ULDP-FL-2023)).

Each builder returns a :class:`UldpTask`: the training records with their silo and user
(:class:`~jaxfl.data.uldp_records.UldpData`) and the global test set.

* :func:`heart_disease`: FLamby Fed-Heart-Disease (4 hospitals; train 199/172/30/85), per-centre
  standardisation for training, the pooled test set with pooled-train statistics; users per
  record with :func:`~jaxfl.data.allocation.uldp_users_in_silos` (``min_records=1``).
* :func:`tcga_brca`: FLamby Fed-TCGA-BRCA (6 regions; train 248/156/164/129/129/40), targets
  (E, T) for the Cox loss; users with ``min_records=2`` (pairs, the Cox loss needs two records).
* :func:`mnist`: the 70,000 images normalised with (0.1307, 0.3081), re-split stratified into
  60,000 / 10,000; users then silos with :mod:`jaxfl.data.allocation`; a silo with more than
  500 records holds out 10% (stratified) as an unused local test set (the authors' code; the paper
  is silent).
* :func:`creditcard`: the Kaggle CSV with the authors' preprocessing
  (:func:`preprocess_creditcard`: stratified 85/15 split, standardisation fit on train, 10% of
  the train normals kept with every train fraud), then the same allocation as MNIST.

Randomness comes from one ``np.random.Generator`` (or a legacy ``RandomState`` to follow the
authors' call order in the allocation functions). Stratified splits use a numpy allocation
(per class ``floor`` of its share, remainders to the largest fractions), so sizes match the
paper's (test 42,722 for the credit-card data; 10,000 for MNIST) but not its exact draws.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxfl import validate
from jaxfl.data import allocation, flamby, idx, tabular, uldp_records

MNIST_MEAN, MNIST_STD = idx.STANDARDIZATION["mnist"]  # the torchvision convention
LOCAL_TEST_MIN_RECORDS = 500
LOCAL_TEST_FRACTION = 0.1


class UldpTask(NamedTuple):
    train: uldp_records.UldpData
    test_x: np.ndarray
    test_y: np.ndarray
    info: dict


def _rng(rng):
    if isinstance(rng, int):
        return np.random.default_rng(rng)
    if not isinstance(rng, np.random.Generator | np.random.RandomState):
        raise validate.JaxflValueError("Expected an int seed or a numpy random generator.")
    return rng


def _permutation(rng, n):
    return rng.permutation(n)


def stratified_split(rng, labels, test_size) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: every class split in proportion; ``test_size`` a fraction
    (rounded up, as scikit-learn) or a count."""
    labels = np.asarray(labels)
    n = len(labels)
    n_test = int(np.ceil(test_size * n)) if isinstance(test_size, float) else int(test_size)
    if not 0 < n_test < n:
        raise validate.JaxflValueError(f"Expected 0 < test size < {n}, got {n_test}.")
    classes, counts = np.unique(labels, return_counts=True)
    share = counts * n_test / n
    alloc = np.floor(share).astype(int)
    rest = n_test - alloc.sum()
    alloc[np.argsort(-(share - alloc), kind="stable")[:rest]] += 1
    train, test = [], []
    for c, k in zip(classes, alloc, strict=True):
        members = np.flatnonzero(labels == c)
        members = members[_permutation(rng, len(members))]
        test.append(members[:k])
        train.append(members[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def _flamby_task(silos_train: flamby.Silos, test_x, test_y, num_users, distribution, rng,
                 min_records, name):
    rng = _rng(rng)
    users = allocation.uldp_users_in_silos(rng, silos_train.sizes, num_users,
                                           distribution=distribution, min_records=min_records)
    train = uldp_records.from_silos(list(silos_train.x), list(silos_train.y), users,
                                 num_users=num_users)
    return UldpTask(train, np.asarray(test_x), np.asarray(test_y),
                    {"dataset": name, "distribution": distribution, "num_users": num_users,
                     "num_silos": len(silos_train.x),
                     "silo_sizes": silos_train.sizes.tolist()})


def heart_disease(*, num_users: int, distribution: str = "uniform", rng=0, path=None
                  ) -> UldpTask:
    """Fed-Heart-Disease with ``num_users`` synthetic users (labels are float 0/1)."""
    train = flamby.heart_disease_flamby("train", normalize="center", path=path)
    test = flamby.heart_disease_flamby("test", normalize="pooled", path=path)
    train = train._replace(y=tuple(v.astype(np.float32) for v in train.y))
    return _flamby_task(train, np.concatenate(test.x),
                        np.concatenate(test.y).astype(np.float32), num_users, distribution,
                        rng, 1, "heart_disease")


def tcga_brca(*, num_users: int, distribution: str = "uniform", rng=0, path=None) -> UldpTask:
    """Fed-TCGA-BRCA with ``num_users`` synthetic users (every user >= 2 records)."""
    train = flamby.load_tcga_brca("train", path=path)
    test = flamby.load_tcga_brca("test", path=path)
    return _flamby_task(train, np.concatenate(test.x), np.concatenate(test.y), num_users,
                        distribution, rng, 2, "tcga_brca")


def _allocate(x, y, *, num_users, num_silos, user_distribution, silo_distribution, rng,
              labels_per_user, user_alpha, silo_alpha, name, test_x, test_y) -> UldpTask:
    """Users, then silos, then the local 10% hold-out of large silos."""
    users = allocation.uldp_users_of_records(
        rng, len(y), num_users, distribution=user_distribution, alpha=user_alpha,
        labels=np.asarray(y).astype(np.int64) if labels_per_user else None,
        labels_per_user=labels_per_user)
    silos = allocation.uldp_silos_of_records(rng, users, num_silos,
                                             distribution=silo_distribution, alpha=silo_alpha,
                                             num_users=num_users)
    keep, held_out = [], 0
    for records in silos:
        records = np.asarray(records)
        if len(records) > LOCAL_TEST_MIN_RECORDS:
            tr, te = stratified_split(rng, np.asarray(y)[records], LOCAL_TEST_FRACTION)
            held_out += len(te)
            records = records[tr]
        keep.append(records)
    train = uldp_records.from_silos([x[r] for r in keep], [y[r] for r in keep],
                                 [users[r] for r in keep], num_users=num_users)
    return UldpTask(train, test_x, test_y,
                    {"dataset": name, "user_distribution": user_distribution,
                     "silo_distribution": silo_distribution, "num_users": num_users,
                     "num_silos": num_silos, "labels_per_user": labels_per_user,
                     "local_test_records": held_out,
                     "silo_sizes": [len(r) for r in keep]})


def mnist(*, num_users: int, num_silos: int = 5, user_distribution: str = "uniform",
          silo_distribution: str = "uniform", labels_per_user: int | None = None, rng=0,
          user_alpha: float = 0.5, silo_alpha: float = 2.0, path=None,
          max_records: int | None = None) -> UldpTask:
    """MNIST as the authors use it (module docstring); ``max_records`` subsamples the training
    pool (stratified) for scaled-down CPU runs."""
    rng = _rng(rng)
    xs, ys = zip(*(idx.load_mnist(s, path=path) for s in ("train", "test")), strict=True)
    x = idx.normalize_images(np.concatenate(xs), mean=MNIST_MEAN, std=MNIST_STD)
    y = np.concatenate(ys).astype(np.int32)
    tr, te = stratified_split(rng, y, 10_000)
    if max_records is not None and max_records < len(tr):
        keep, _ = stratified_split(rng, y[tr], len(tr) - int(max_records))
        tr = tr[keep]
    return _allocate(x[tr], y[tr], num_users=num_users, num_silos=num_silos,
                     user_distribution=user_distribution, silo_distribution=silo_distribution,
                     rng=rng, labels_per_user=labels_per_user, user_alpha=user_alpha,
                     silo_alpha=silo_alpha, name="mnist", test_x=x[te], test_y=y[te])


class CreditcardSplit(NamedTuple):
    x_train: np.ndarray  # float32 [n_train, 30]
    y_train: np.ndarray  # int32 [n_train]
    x_test: np.ndarray
    y_test: np.ndarray
    train_index: np.ndarray  # rows of the input kept for training
    test_index: np.ndarray


def preprocess_creditcard(x, y, rng, *, test_size: float = 0.15, keep_normal: float = 0.1
                          ) -> CreditcardSplit:
    """The authors' credit-card pipeline (returns a :class:`CreditcardSplit`).

    Stratified split (test share ``test_size``, kept imbalanced); standardisation with the
    train split's mean and (population) std, applied to both; then ``int(keep_normal * n0)``
    train normals chosen without replacement plus every train fraud.
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y).astype(np.int64)
    tr, te = stratified_split(rng, y, float(test_size))
    mu, sd = x[tr].mean(0), x[tr].std(0)
    sd = np.where(sd > 0, sd, 1.0)
    xs = (x - mu) / sd
    normal, fraud = tr[y[tr] == 0], tr[y[tr] == 1]
    kept = rng.choice(normal, size=int(keep_normal * len(normal)), replace=False)
    train = np.sort(np.concatenate([kept, fraud]))
    return CreditcardSplit(xs[train].astype(np.float32), y[train].astype(np.int32),
                           xs[te].astype(np.float32), y[te].astype(np.int32), train, te)


def creditcard(*, num_users: int, num_silos: int = 5, distribution: str = "uniform", rng=0,
               user_alpha: float = 0.5, silo_alpha: float = 2.0, path=None,
               synthetic_records: int | None = None) -> UldpTask:
    """Kaggle credit-card fraud (``distribution`` "uniform": uniform users and silos; "zipf":
    zipf users and zipf silos, the paper's pairings).

    ``synthetic_records=n`` replaces the CSV (not redistributable, not shipped) by n Gaussian
    rows of its shape (30 features, 10% frauds shifted by +1): a stand-in for smoke runs only.
    """
    rng = _rng(rng)
    if synthetic_records is None:
        table = tabular.load_creditcard(path=path)
        x, y = table.x, table.y
    else:
        n = validate.positive_int("synthetic_records", synthetic_records)
        y = (rng.random(n) < 0.1).astype(np.int64)
        x = rng.normal(size=(n, 30)) + y[:, None]
    x_tr, y_tr, x_te, y_te, _, _ = preprocess_creditcard(x, y, rng)
    return _allocate(x_tr, y_tr, num_users=num_users, num_silos=num_silos,
                     user_distribution=distribution, silo_distribution=distribution, rng=rng,
                     labels_per_user=None, user_alpha=user_alpha, silo_alpha=silo_alpha,
                     name="creditcard", test_x=x_te, test_y=y_te)
