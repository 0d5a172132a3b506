"""CIFAR-10 python batches on written fixtures; restricted unpickling; checksums."""

import os
import pickle

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import catalog, cifar


def _write_batch(path, n, seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n).tolist()
    blob = {b"batch_label": b"fixture", b"labels": labels, b"data": data,
            b"filenames": [b"img%d.png" % i for i in range(n)]}
    with open(path, "wb") as f:
        pickle.dump(blob, f, protocol=2)
    return data, np.array(labels)


def _write_all(directory):
    directory.mkdir(exist_ok=True)
    parts = [_write_batch(directory / name, 3 + i, i)
             for i, name in enumerate(cifar.TRAIN_BATCHES + cifar.TEST_BATCHES)]
    return parts


def test_fixture_layout_channels_last(tmp_path):
    parts = _write_all(tmp_path / "cifar-10-batches-py")
    images, labels = cifar.load_cifar10("train", path=tmp_path / "cifar-10-batches-py",
                                        verify=False)
    assert images.shape == (3 + 4 + 5 + 6 + 7, 32, 32, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(labels, np.concatenate([p[1] for p in parts[:5]]))
    # Row layout: 1024 red values, then green, then blue, each row-major 32x32.
    first = parts[0][0][0]
    np.testing.assert_array_equal(images[0, :, :, 0], first[:1024].reshape(32, 32))
    np.testing.assert_array_equal(images[0, :, :, 2], first[2048:].reshape(32, 32))
    np.testing.assert_array_equal(images[0, 5, 7], first[[5 * 32 + 7, 1024 + 5 * 32 + 7,
                                                          2048 + 5 * 32 + 7]])
    test_images, test_labels = cifar.load_cifar10(
        "test", path=tmp_path / "cifar-10-batches-py", verify=False)
    assert test_images.shape == (8, 32, 32, 3) and test_labels.dtype == np.int64


def test_fixture_via_env_and_checksum(tmp_path, monkeypatch):
    _write_all(tmp_path / "cifar-10-batches-py")
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    assert catalog.available("cifar10")
    with pytest.raises(validate.ChecksumError, match="data_batch_1"):
        cifar.load_cifar10("train")  # fixture bytes differ from the published MD5
    os.remove(tmp_path / "cifar-10-batches-py" / "data_batch_3")
    with pytest.raises(validate.DataNotFoundError, match="data_batch_3"):
        cifar.load_cifar10("train", verify=False)
    assert not catalog.available("cifar10")


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo should-not-run",))


def test_restricted_unpickler_refuses_code(tmp_path):
    path = tmp_path / "data_batch_1"
    with open(path, "wb") as f:
        pickle.dump({b"data": _Evil(), b"labels": []}, f, protocol=2)
    with pytest.raises(validate.JaxflValueError, match="Refusing"):
        cifar.read_batch(path)


def test_malformed_batches(tmp_path):
    path = tmp_path / "b"
    with open(path, "wb") as f:
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, f, protocol=2)
    with pytest.raises(validate.ShapeError, match="3072"):
        cifar.read_batch(path)
    with open(path, "wb") as f:
        pickle.dump({b"labels": [0]}, f, protocol=2)
    with pytest.raises(validate.JaxflValueError, match="data"):
        cifar.read_batch(path)
