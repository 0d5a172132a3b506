"""ULDP-FL datasets: the credit-card preprocessing on a fixture, sizes of the authors' splits
on the real files (skipped when absent), stratified splits."""

import math

import numpy as np
import pytest

from jaxfl.data import tabular, uldp_datasets, uldp_records
from tests.conftest import require_data


def _write_creditcard(path, n=2000, frauds=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(loc=3.0, scale=2.0, size=(n, 30))
    y = np.zeros(n, int)
    y[rng.choice(n, frauds, replace=False)] = 1
    header = ",".join(f'"{c}"' for c in tabular.CREDITCARD_COLUMNS)
    rows = [",".join([*(f"{v:.6f}" for v in xi), f'"{yi}"']) for xi, yi in zip(x, y, strict=True)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return x, y


def test_creditcard_preprocessing_on_fixture(tmp_path):
    (tmp_path / "creditcard").mkdir()
    x, y = _write_creditcard(tmp_path / "creditcard" / "creditcard.csv")
    table = tabular.load_creditcard(path=tmp_path / "creditcard")
    np.testing.assert_allclose(table.x, x, atol=1e-6)
    split = uldp_datasets.preprocess_creditcard(table.x, table.y, np.random.default_rng(1))
    assert len(split.y_test) == math.ceil(0.15 * 2000) == 300
    assert int(split.y_test.sum()) == 6  # stratified: 15% of the 40 frauds
    train_split = np.setdiff1d(np.arange(2000), split.test_index)
    normals = int(np.sum(y[train_split] == 0))
    assert len(split.y_train) == int(0.1 * normals) + 34  # 10% of normals + every train fraud
    assert int(split.y_train.sum()) == 34
    assert not set(split.train_index) & set(split.test_index)
    mu, sd = x[train_split].mean(0), x[train_split].std(0)
    np.testing.assert_allclose(split.x_test, (x[split.test_index] - mu) / sd, atol=1e-5)
    np.testing.assert_allclose(split.x_train, (x[split.train_index] - mu) / sd, atol=1e-5)


def test_creditcard_sizes_of_the_paper():
    """284,807 rows with 492 frauds give train 24,584 and test 42,722."""
    y = np.zeros(284_807, int)
    y[:492] = 1
    split = uldp_datasets.preprocess_creditcard(np.zeros((len(y), 1)), y,
                                                np.random.default_rng(0))
    assert (len(split.y_train), len(split.y_test)) == (24_584, 42_722)
    assert int(split.y_train.sum()) == 418


def test_stratified_split_proportions():
    labels = np.repeat(np.arange(3), [50, 30, 20])
    tr, te = uldp_datasets.stratified_split(np.random.default_rng(0), labels, 0.1)
    assert len(te) == 10 and np.bincount(labels[te]).tolist() == [5, 3, 2]
    assert sorted(np.concatenate([tr, te]).tolist()) == list(range(100))


@pytest.mark.parametrize("dist", ["uniform", "zipf"])
def test_heart_and_tcga_allocation(dist):
    root = require_data("heart_disease", "tcga_brca")
    heart = uldp_datasets.heart_disease(num_users=50, distribution=dist, rng=0, path=root /
                                        "heart_disease")
    h = uldp_records.histogram(heart.train)
    assert h.sum(1).tolist() == [199, 172, 30, 85] and heart.test_x.shape == (254, 13)
    if dist == "zipf":
        assert h.sum(0).min() >= 1
    tcga = uldp_datasets.tcga_brca(num_users=50, distribution=dist, rng=0, path=root /
                                   "tcga_brca")
    h = uldp_records.histogram(tcga.train)
    assert h.sum(1).tolist() == [248, 156, 164, 129, 129, 40]
    assert tcga.test_y.shape == (222, 2)
    totals = h.sum(0)
    assert totals[totals > 0].min() >= 2 if dist == "zipf" else totals.sum() == 866


@pytest.mark.slow
def test_mnist_split_and_local_holdout():
    root = require_data("mnist")
    task = uldp_datasets.mnist(num_users=100, rng=0, path=root / "mnist")
    assert task.test_x.shape == (10_000, 28, 28, 1)
    n_train = len(task.train.y) + task.info["local_test_records"]
    assert n_train == 60_000  # 10% of each silo (> 500 records) is held out
    assert 53_900 <= len(task.train.y) <= 54_100
    assert abs(float(task.test_x.mean())) < 0.1  # normalised with (0.1307, 0.3081)
