"""Fed-Heart-Disease and Fed-TCGA-BRCA: real files and written fixtures."""

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import federated, flamby
from tests.data.conftest import require

HEART_FILES = [f"heart_disease/processed.{s}.data" for s in flamby.HEART_SITES]


def test_heart_real_counts():
    require(*HEART_FILES)
    silos = flamby.load_heart_disease()
    assert silos.names == ("cleveland", "hungarian", "switzerland", "va")
    assert silos.sizes.tolist() == [303, 261, 46, 130]  # FLamby's table
    assert all(x.shape[1] == 10 and not np.isnan(x).any() for x in silos.x)
    assert all(set(np.unique(y)) <= {0, 1} for y in silos.y)


def test_heart_flamby_pipeline_real():
    require(*HEART_FILES)
    pytest.importorskip("sklearn")
    train = flamby.heart_disease_flamby("train")
    test = flamby.heart_disease_flamby("test")
    assert train.sizes.tolist() == [199, 172, 30, 85]
    assert test.sizes.tolist() == [104, 89, 16, 45]
    assert len(train.feature_names) == 13 and train.feature_names[-5:] == (
        "cp=2", "cp=3", "cp=4", "restecg=1", "restecg=2")
    # Centre-wise standardisation on train: mean 0, unbiased std 1 (or 0 for constant
    # columns, e.g. Switzerland's cholesterol is always 0).
    for x in train.x:
        np.testing.assert_allclose(x.mean(0), 0, atol=1e-5)
        std = x.std(0, ddof=1)
        assert np.all((np.abs(std - 1) < 1e-4) | (std < 1e-6))
    raw = flamby.heart_disease_flamby("all", normalize=None)
    assert raw.sizes.tolist() == [303, 261, 46, 130]
    # Labels of a centre are split, not changed.
    base = flamby.load_heart_disease()
    assert [int(y.sum()) for y in raw.y] == [int(y.sum()) for y in base.y]


def _write_heart(directory):
    directory.mkdir()
    rows = {
        "cleveland": ["63.0,1.0,1.0,145.0,233.0,1.0,2.0,150.0,0.0,2.3,3.0,0.0,6.0,0",
                      "67.0,1.0,4.0,160.0,286.0,0.0,2.0,108.0,1.0,1.5,2.0,3.0,3.0,2"],
        "hungarian": ["28,1,2,130,132,0,2,185,0,0,?,?,?,0",
                      "29,1,2,140,?,0,0,170,0,0,?,?,?,0",
                      "30,0,1,170,237,0,1,170,0,0,?,?,6,1"],
        "switzerland": ["32,1,1,95,0,?,0,127,0,.7,1,?,?,1",
                        "34,1,4,115,0,?,?,154,0,.2,1,?,?,1",
                        "35,1,4,?,0,?,0,130,1,?,?,?,7,3"],
        "va": ["63,1,4,140,260,0,1,112,1,3,2,?,?,2"],
    }
    for site, lines in rows.items():
        (directory / f"processed.{site}.data").write_text("\n".join(lines) + "\n")


def test_heart_fixture_preprocessing(tmp_path):
    _write_heart(tmp_path / "heart")
    silos = flamby.load_heart_disease(path=tmp_path / "heart", verify=False)
    # '?' in the dropped columns 10-12 is ignored; '?' elsewhere drops the row.
    assert silos.sizes.tolist() == [2, 2, 0, 1]
    assert [y.tolist() for y in silos.y] == [[0, 1], [0, 1], [], [1]]
    np.testing.assert_array_equal(silos.x[1][1], [30, 0, 1, 170, 237, 0, 1, 170, 0, 0])
    with pytest.raises(validate.ChecksumError, match="processed.cleveland.data"):
        flamby.load_heart_disease(path=tmp_path / "heart")
    (tmp_path / "heart" / "processed.va.data").unlink()
    with pytest.raises(validate.DataNotFoundError, match="processed.va.data"):
        flamby.load_heart_disease(path=tmp_path / "heart", verify=False)


def test_heart_fixture_bad_row(tmp_path):
    _write_heart(tmp_path / "heart")
    (tmp_path / "heart" / "processed.va.data").write_text("1,2,3\n")
    with pytest.raises(validate.ShapeError, match="14 columns"):
        flamby.load_heart_disease(path=tmp_path / "heart", verify=False)


def test_tcga_real_counts():
    require("tcga_brca/brca.csv", "tcga_brca/train_test_split.csv")
    train = flamby.load_tcga_brca("train")
    test = flamby.load_tcga_brca("test")
    every = flamby.load_tcga_brca("all")
    assert train.sizes.tolist() == [248, 156, 164, 129, 129, 40]
    assert test.sizes.tolist() == [63, 40, 42, 33, 33, 11]
    assert every.sizes.sum() == 1088  # 8 of brca.csv's 1096 pids are unused
    used = np.concatenate(every.ids)
    assert len(set(used.tolist())) == 1088
    assert not {"TCGA-JL-A3YW", "TCGA-5L-AAT0", "TCGA-PL-A8LV"} & set(used.tolist())
    assert train.x[0].shape == (248, 39) and train.y[0].shape == (248, 2)
    assert set(np.unique(np.concatenate(train.y)[:, 0])) == {0.0, 1.0}  # E
    assert train.feature_names[0] == "age_at_index"
    fd = federated.from_client_arrays(train.x, train.y)
    assert fd.num_examples.tolist() == [248, 156, 164, 129, 129, 40]


def test_tcga_fixture(tmp_path):
    d = tmp_path / "tcga"
    d.mkdir()
    features = [f"f{i}" for i in range(38)]
    header = ["pid", "age_at_index", *features[:-1], '"quoted, name"', "E", "T"]
    assert len(header) == 42
    rows = [[f"P{i}", str(40 + i), *["0"] * 37, str(i % 2), f"{i % 2}.0", f"{100.0 + i}"]
            for i in range(6)]
    (d / "brca.csv").write_text("\n".join(",".join(r) for r in [header, *rows]) + "\n")
    split = ["pid,fold,fold2", "P0,train,train_0", "P1,test,test_0", "P2,train,train_5",
             "P4,train,train_0", "P5,test,test_3"]
    (d / "train_test_split.csv").write_text("\n".join(split) + "\n")
    train = flamby.load_tcga_brca("train", path=d, verify=False)
    assert train.sizes.tolist() == [2, 0, 0, 0, 0, 1]
    assert train.ids[0].tolist() == ["P0", "P4"]  # brca.csv order
    np.testing.assert_array_equal(train.y[0], [[0.0, 100.0], [0.0, 104.0]])
    assert train.x[5][0, 0] == 42 and train.feature_names[-1] == "quoted, name"
    every = flamby.load_tcga_brca("all", path=d, verify=False)
    assert every.sizes.sum() == 5  # P3 is not in the split file
    with pytest.raises(validate.ChecksumError, match="brca.csv"):
        flamby.load_tcga_brca(path=d)
