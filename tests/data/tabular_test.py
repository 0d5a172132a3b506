"""Parkinsons, credit-card CSV and scikit-learn sets."""

import sys

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import catalog, partition, tabular
from tests.data.conftest import require


def test_parkinsons_real():
    require("parkinsons_telemonitoring/parkinsons_updrs.data")
    table = tabular.load_parkinsons()
    assert table.x.shape == (5875, 16) and table.y.shape == (5875, 2)
    assert table.target_names == ("motor_UPDRS", "total_UPDRS")
    counts = np.bincount(table.groups)[1:]
    assert len(np.unique(table.groups)) == 42 and counts.min() == 101 and counts.max() == 168
    assert np.all(table.y[:, 1] >= table.y[:, 0])  # total UPDRS includes the motor part
    full = tabular.load_parkinsons(features="all", target="total_UPDRS")
    assert full.x.shape == (5875, 19) and full.feature_names[:3] == ("age", "sex", "test_time")
    assert full.y.shape == (5875,)
    assert np.bincount(full.x[:, 1].astype(int)).tolist() == [4008, 1867]  # sex 0/1
    # Subjects as users: one client per subject.
    per_subject = partition.indices_by_group(table.groups - 1, 42)
    assert sum(len(p) for p in per_subject) == 5875


def test_parkinsons_fixture(tmp_path):
    header = ("subject#,age,sex,test_time,motor_UPDRS,total_UPDRS,"
              + ",".join(f"v{i}" for i in range(16)))
    rows = ["1,72,0,5.6431,28.199,34.398," + ",".join(["3.38e-005"] * 16),
            "2,58,1,1.5,10,12," + ",".join(["0.5"] * 16)]
    (tmp_path / "parkinsons_updrs.data").write_text("\n".join([header, *rows]) + "\n")
    table = tabular.load_parkinsons(path=tmp_path, verify=False, target="motor_UPDRS")
    assert table.groups.tolist() == [1, 2] and table.y.tolist() == [28.199, 10.0]
    assert table.x[0, 0] == pytest.approx(3.38e-5)
    with pytest.raises(validate.ChecksumError):
        tabular.load_parkinsons(path=tmp_path)
    with pytest.raises(validate.JaxflValueError):
        tabular.load_parkinsons(path=tmp_path, verify=False, target="updrs")


def _write_creditcard(path, n=6):
    rng = np.random.default_rng(0)
    lines = [",".join(f'"{c}"' for c in tabular.CREDITCARD_COLUMNS)]
    for i in range(n):
        values = [f"{float(i)}", *[f"{v:.6f}" for v in rng.normal(size=28)], "12.5"]
        lines.append(",".join(values + [f'"{int(i == 3)}"']))
    path.write_text("\n".join(lines) + "\n")


def test_creditcard_fixture(tmp_path, monkeypatch):
    (tmp_path / "creditcard").mkdir()
    _write_creditcard(tmp_path / "creditcard" / "creditcard.csv")
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    table = catalog.load("creditcard")
    assert table.x.shape == (6, 30) and table.y.tolist() == [0, 0, 0, 1, 0, 0]
    assert table.feature_names[0] == "Time" and table.feature_names[-1] == "Amount"
    np.testing.assert_array_equal(table.x[:, 0], np.arange(6))
    (tmp_path / "creditcard" / "creditcard.csv").write_text('"Time","V1"\n1,2\n')
    with pytest.raises(validate.JaxflValueError, match="columns"):
        tabular.load_creditcard()


def test_creditcard_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    with pytest.raises(validate.DataNotFoundError, match="kaggle"):
        tabular.load_creditcard()


def test_sklearn_sets():
    pytest.importorskip("sklearn")
    digits = tabular.load_digits()
    assert digits.x.shape == (1797, 64) and digits.x.max() == 16
    assert np.bincount(digits.y).min() >= 174
    assert tabular.load_digits(images=True).x.shape == (1797, 8, 8, 1)
    cancer = catalog.load("breast_cancer")
    assert cancer.x.shape == (569, 30) and np.bincount(cancer.y).tolist() == [212, 357]


def test_sklearn_missing_gives_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # makes `import sklearn` fail
    with pytest.raises(ImportError, match="pip install"):
        tabular.load_digits()
    with pytest.raises(ImportError, match="scikit-learn"):
        tabular.load_breast_cancer()
    assert not catalog.available("digits")
