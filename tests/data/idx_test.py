"""IDX parsing, MNIST / Fashion-MNIST loaders (real files and written fixtures)."""

import gzip
import hashlib
import struct

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import _files, catalog, idx
from tests.data.conftest import require, write_idx

# Per-digit counts published with MNIST (shared/data/README.md).
MNIST_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.fixture(scope="module")
def mnist_train():
    """MNIST train, loaded once for the module (47 MB decompressed)."""
    require(*[f"mnist/{f}" for f in idx.FILES["train"]])
    return idx.load_mnist("train")


def _write_split(directory, split, n, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    image_file, label_file = idx.FILES[split]
    write_idx(directory / image_file, images)
    write_idx(directory / label_file, labels)
    return images, labels


def test_mnist_train_real(mnist_train):
    images, labels = mnist_train
    assert images.shape == (60000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (60000,) and labels.dtype == np.uint8
    assert np.bincount(labels).tolist() == MNIST_TRAIN_COUNTS
    assert images.flags.writeable and images.max() == 255 and images.min() == 0


def test_mnist_test_real_matches_published_payload_md5():
    require(*[f"mnist/{f}" for f in idx.FILES["test"]])
    images, labels = idx.load_mnist("test")
    assert images.shape == (10000, 28, 28)
    assert np.bincount(labels).tolist() == MNIST_TEST_COUNTS
    # The decompressed payload is byte-identical to the published t10k images MD5.
    payload = gzip.decompress((_files.data_root() / "mnist" / idx.FILES["test"][0]).read_bytes())
    assert hashlib.md5(payload).hexdigest() == "2646ac647ad5339dbf082846283269ea"
    offset = len(payload) - images.size
    np.testing.assert_array_equal(np.frombuffer(payload, np.uint8, offset=offset), images.ravel())


def test_fashion_mnist_real():
    if not catalog.available("fashion_mnist"):
        pytest.skip("Fashion-MNIST not found (JAXFL_DATA_DIR/fashion_mnist or Debian's "
                    "/usr/share/datasets/fashion-mnist); it is not part of the shared data")
    for split, n in [("train", 60000), ("test", 10000)]:
        images, labels = idx.load_fashion_mnist(split)
        assert images.shape == (n, 28, 28)
        assert np.bincount(labels).tolist() == [n // 10] * 10  # balanced classes


def test_fixture_roundtrip_and_normalize(tmp_path):
    images, labels = _write_split(tmp_path, "test", 7)
    got_x, got_y = idx.load_mnist("test", path=tmp_path, verify=False)
    np.testing.assert_array_equal(got_x, images)
    np.testing.assert_array_equal(got_y, labels)
    x = idx.normalize_images(got_x, mean=0.1307, std=0.3081)
    assert x.shape == (7, 28, 28, 1) and x.dtype == np.float32
    expected = (images[..., None].astype(np.float32) / 255 - np.float32(0.1307)) / np.float32(0.3081)
    np.testing.assert_allclose(x, expected, rtol=4 * np.finfo(np.float32).eps)
    assert idx.normalize_images(np.zeros((2, 4, 4, 3), np.uint8)).shape == (2, 4, 4, 3)
    with pytest.raises(validate.ShapeError):
        idx.normalize_images(np.zeros((4, 4), np.uint8))


def test_fixture_checksum_mismatch_and_missing(tmp_path):
    _write_split(tmp_path, "test", 3)
    with pytest.raises(validate.ChecksumError, match="t10k-images-idx3-ubyte.gz"):
        idx.load_mnist("test", path=tmp_path)
    with pytest.raises(validate.DataNotFoundError, match="train-images-idx3-ubyte.gz") as err:
        idx.load_mnist("train", path=tmp_path, verify=False)
    assert str(tmp_path) in str(err.value) and "lecun" in str(err.value)
    with pytest.raises(validate.JaxflValueError, match="split"):
        idx.load_mnist("validation", path=tmp_path)


def test_fashion_fixture_found_through_env(tmp_path, monkeypatch):
    (tmp_path / "fashion_mnist").mkdir()
    images, _ = _write_split(tmp_path / "fashion_mnist", "train", 4, seed=1)
    monkeypatch.setenv(_files.ENV_VAR, str(tmp_path))
    np.testing.assert_array_equal(idx.load_fashion_mnist("train", verify=False)[0], images)


def test_parse_idx_validates_header():
    good = struct.pack(">BBBBI", 0, 0, 0x0C, 1, 2)
    good += np.array([1, -2], ">i4").tobytes()
    np.testing.assert_array_equal(idx.parse_idx(good), [1, -2])
    assert idx.parse_idx(good).dtype == np.dtype("int32")  # native byte order
    with pytest.raises(validate.JaxflValueError, match="not an IDX"):
        idx.parse_idx(b"\x01\x00\x08\x01")
    with pytest.raises(validate.JaxflValueError, match="payload"):
        idx.parse_idx(good[:-1])
    with pytest.raises(validate.JaxflValueError, match="truncated"):
        idx.parse_idx(b"\x00\x00\x08\x03\x00")


def test_wrong_image_shape_rejected(tmp_path):
    write_idx(tmp_path / idx.FILES["test"][0], np.zeros((2, 27, 28), np.uint8))
    write_idx(tmp_path / idx.FILES["test"][1], np.zeros((2,), np.uint8))
    with pytest.raises(validate.ShapeError, match="28"):
        idx.load_mnist("test", path=tmp_path, verify=False)


def test_uncompressed_idx(tmp_path):
    arr = np.arange(6, dtype=np.uint8).reshape(2, 3)
    path = write_idx(tmp_path / "raw-idx2-ubyte", arr, compress=False)
    np.testing.assert_array_equal(idx.read_idx(path), arr)


@pytest.mark.parametrize("dataset", ["mnist", "fashion_mnist"])
def test_load_by_name_and_normalized(tmp_path, dataset):
    images, labels = _write_split(tmp_path, "test", 5, seed=3)
    x, y = idx.load(dataset, "test", path=tmp_path, verify=False)
    assert np.array_equal(x, images) and y.dtype == np.int32 and np.array_equal(y, labels)
    plain, y2 = idx.load_normalized(dataset, "test", path=tmp_path, verify=False)
    assert plain.shape == (5, 28, 28, 1) and plain.dtype == np.float32
    assert np.array_equal(plain[..., 0], images.astype(np.float32) / np.float32(255))
    assert np.array_equal(y2, y)
    mean, std = {"mnist": (0.1307, 0.3081), "fashion_mnist": (0.2860, 0.3530)}[dataset]
    std_x, _ = idx.load_normalized(dataset, "test", standardize=True, path=tmp_path,
                                   verify=False)
    np.testing.assert_allclose(std_x[..., 0], (images / 255.0 - mean) / std, rtol=1e-5,
                               atol=1e-5)


def test_load_refuses_an_unknown_set_before_reading(tmp_path):
    with pytest.raises(validate.JaxflValueError, match="dataset"):
        idx.load("emnist", "train", path=tmp_path / "nowhere")
