"""LEAF JSON (FEMNIST / Shakespeare) on written fixtures."""

import json

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import catalog, federated, leaf


def _blob(users, rng, *, text=False):
    data = {}
    for u, n in users:
        if text:
            data[u] = {"x": ["".join(rng.choice(list("abc "), 80)) for _ in range(n)],
                       "y": [str(rng.choice(list("abc"))) for _ in range(n)]}
        else:
            data[u] = {"x": rng.random((n, 784)).round(3).tolist(),
                       "y": rng.integers(0, 62, n).tolist()}
    return {"users": [u for u, _ in users], "num_samples": [n for _, n in users],
            "user_data": data}


def _write_femnist(root, rng):
    for split, files in {"train": [[("f0001", 3), ("f0002", 2)], [("f0100", 4)]],
                         "test": [[("f0001", 1), ("f0002", 1), ("f0100", 2)]]}.items():
        d = root / "data" / split
        d.mkdir(parents=True)
        for i, users in enumerate(files):
            (d / f"all_data_{i}_niid_0_keep_0_{split}_9.json").write_text(
                json.dumps(_blob(users, rng)))


def test_femnist_fixture_several_files(tmp_path, monkeypatch):
    _write_femnist(tmp_path / "femnist", np.random.default_rng(0))
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    assert catalog.available("femnist")
    train = leaf.load_femnist("train")
    assert train.users == ("f0001", "f0002", "f0100")
    assert train.num_samples.tolist() == [3, 2, 4]
    assert train.x[0].dtype == np.float32 and train.x[2].shape == (4, 784)
    assert train.y[1].dtype == np.int64
    x, y, owner = train.concatenate()
    assert x.shape == (9, 784) and owner.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    assert leaf.femnist_images(x).shape == (9, 28, 28, 1)
    fd = federated.from_client_arrays(train.x, train.y)
    assert fd.x.shape == (3, 4, 784) and fd.num_examples.tolist() == [3, 2, 4]
    test = leaf.load_femnist("test", path=tmp_path / "femnist")
    assert test.num_samples.tolist() == [1, 1, 2]


def test_shakespeare_strings_and_split_dir_path(tmp_path):
    d = tmp_path / "train"
    d.mkdir()
    (d / "s.json").write_text(json.dumps(_blob([("PLAY_ROLE", 3)], np.random.default_rng(1),
                                               text=True)))
    split = leaf.load_leaf(d, split="train")  # the split directory itself
    assert split.x[0].dtype.kind == "U" and len(split.x[0][0]) == 80
    assert split.y[0].shape == (3,)


def test_leaf_errors(tmp_path):
    with pytest.raises(validate.DataNotFoundError, match="train"):
        leaf.load_leaf(tmp_path, name="femnist", split="train")
    d = tmp_path / "train"
    d.mkdir()
    bad = {"users": ["a"], "num_samples": [2], "user_data": {"a": {"x": [[0]], "y": [0]}}}
    (d / "a.json").write_text(json.dumps(bad))
    with pytest.raises(validate.JaxflValueError, match="num_samples=2"):
        leaf.load_leaf(tmp_path)
    good = {"users": ["a"], "num_samples": [1], "user_data": {"a": {"x": [[0]], "y": [0]}}}
    (d / "a.json").write_text(json.dumps(good))
    (d / "b.json").write_text(json.dumps(good))
    with pytest.raises(validate.JaxflValueError, match="already seen"):
        leaf.load_leaf(tmp_path)
    (d / "b.json").write_text(json.dumps({"users": []}))
    with pytest.raises(validate.JaxflValueError, match="num_samples"):
        leaf.load_leaf(tmp_path)
