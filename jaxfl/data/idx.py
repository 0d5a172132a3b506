"""IDX files (LeCun et al.'s format): MNIST and Fashion-MNIST.

An IDX file is a big-endian header -- two zero bytes, a type code (0x08 = uint8, 0x09 = int8,
0x0B = int16, 0x0C = int32, 0x0D = float32, 0x0E = float64), the number of dimensions, then one
big-endian uint32 per dimension -- followed by the raw array. MNIST ships each split as a
gzip-compressed images file (magic 0x00000803, shape [N, 28, 28]) and labels file (magic
0x00000801, shape [N]). Parsing is one ``np.frombuffer`` over the decompressed bytes.

Files are looked up in ``$JAXFL_DATA_DIR/mnist`` and ``$JAXFL_DATA_DIR/fashion_mnist``
(also ``fashion-mnist``, then Debian's ``/usr/share/datasets/fashion-mnist`` from the
``dataset-fashion-mnist`` package), or in an explicit ``path``.

Example Usage:
  >>> import numpy as np
  >>> images = np.zeros((2, 28, 28), np.uint8)
  >>> normalize_images(images).shape
  (2, 28, 28, 1)
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from jaxfl import validate
from jaxfl.data import _files, catalog
from jaxfl.data import download as _download

_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}

FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}

MNIST = catalog.MNIST  # where the files are searched, their digests (see jaxfl.data.catalog)
FASHION_MNIST = catalog.FASHION_MNIST


FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
                         "Shirt", "Sneaker", "Bag", "Ankle boot")


def parse_idx(data: bytes, *, name: str = "IDX data") -> np.ndarray:
    """Parses the bytes of an (uncompressed) IDX file into a native-endian array.

    Raises:
      JaxflValueError: bad magic number, unknown type code, or a size that disagrees with
        the header.
    """
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise validate.JaxflValueError(
            f"{name}: not an IDX file (magic bytes {data[:4].hex() or 'missing'}).")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise validate.JaxflValueError(f"{name}: truncated IDX header.")
    shape = tuple(int(d) for d in np.frombuffer(data, ">u4", count=ndim, offset=4))
    dtype = np.dtype(_DTYPES[data[2]])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) - header != expected:
        raise validate.JaxflValueError(
            f"{name}: IDX header says shape {shape} ({expected} bytes of {dtype}) but the "
            f"payload has {len(data) - header} bytes.")
    array = np.frombuffer(data, dtype, offset=header).reshape(shape)
    return np.array(array, dtype=dtype.newbyteorder("="))  # writable, native byte order


def read_idx(path: str | Path) -> np.ndarray:
    """Reads an IDX file, gzip-compressed if its name ends in ``.gz``."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    return parse_idx(data, name=str(path))


def _load_split(source: _files.Source, split: str, path, verify: bool, image_shape,
                download: bool | None = None):
    validate.one_of("split", split, tuple(FILES))
    image_file, label_file = _download.find_files(source, FILES[split], path, verify=verify,
                                                  download=download)
    images = read_idx(image_file)
    labels = read_idx(label_file)
    if images.dtype != np.uint8 or images.shape[1:] != image_shape:
        raise validate.ShapeError(
            f"{image_file}: expected uint8 images of shape [N, {image_shape[0]}, "
            f"{image_shape[1]}], got {images.dtype} {images.shape}.")
    if labels.dtype != np.uint8 or labels.shape != images.shape[:1]:
        raise validate.ShapeError(
            f"{label_file}: expected {images.shape[0]} uint8 labels, got {labels.dtype} "
            f"{labels.shape}.")
    return images, labels


def load_mnist(split: str = "train", *, path=None, verify: bool = True,
               download: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Loads one MNIST split from the original IDX gzip files.

    Args:
      split: ``"train"`` (60,000 examples) or ``"test"`` (10,000).
      path: directory holding the four ``*-ubyte.gz`` files; default ``$JAXFL_DATA_DIR/mnist``.
      verify: check the recorded SHA-256 of each file (hashed once per process).
      download: fetch the files when missing (:mod:`jaxfl.data.download`); ``None`` means
        only if ``JAXFL_DOWNLOAD=1``.

    Returns:
      ``(images, labels)``: uint8 ``[N, 28, 28]`` and uint8 ``[N]``.

    Raises:
      DataNotFoundError: a file is missing. ChecksumError: a file differs from the original.
    """
    return _load_split(MNIST, split, path, verify, (28, 28), download)


def load_fashion_mnist(split: str = "train", *, path=None, verify: bool = True,
                       download: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Loads one Fashion-MNIST split (same layout and sizes as MNIST; 10 clothing classes).

    Searched in ``$JAXFL_DATA_DIR/fashion_mnist``, ``$JAXFL_DATA_DIR/fashion-mnist`` and
    ``/usr/share/datasets/fashion-mnist`` unless ``path`` is given. Accepts the upstream files
    (MD5 from the Zalando README) and the Debian package's copies (SHA-256 recorded here).
    """
    return _load_split(FASHION_MNIST, split, path, verify, (28, 28), download)


def normalize_images(images: np.ndarray, *, mean: float = 0.0, std: float = 1.0,
                     dtype=np.float32) -> np.ndarray:
    """uint8 images -> float ``(images / 255 - mean) / std`` with a trailing channel axis.

    ``[N, H, W]`` becomes ``[N, H, W, 1]``; ``[N, H, W, C]`` keeps its channels. The MNIST
    convention of torchvision-based papers is ``mean=0.1307, std=0.3081``.
    """
    images = np.asarray(images)
    if images.ndim not in (3, 4):
        raise validate.ShapeError(
            f"Expected images of shape [N, H, W] or [N, H, W, C], got {images.shape}.")
    std = validate.positive("std", std, validate.JaxflValueError)
    scalar = np.dtype(dtype).type
    x = images.astype(scalar) / scalar(255.0)
    x = (x - scalar(mean)) / scalar(std)
    return x[..., None] if images.ndim == 3 else x


# Per-channel mean and std of the training images in [0, 1] (the torchvision convention of the
# papers that standardize: MNIST 0.1307 / 0.3081, Fashion-MNIST 0.2860 / 0.3530).
STANDARDIZATION = {"mnist": (0.1307, 0.3081), "fashion_mnist": (0.2860, 0.3530)}


def load(dataset: str, split: str = "train", *, path=None, verify: bool = True,
         download: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One split of an IDX image set by name: uint8 images ``[N, 28, 28]``, int32 labels.

    ``dataset`` is ``"mnist"`` or ``"fashion_mnist"``; the other arguments are those of
    :func:`load_mnist`.
    """
    validate.one_of("dataset", dataset, tuple(STANDARDIZATION))
    loader = load_mnist if dataset == "mnist" else load_fashion_mnist
    images, labels = loader(split, path=path, verify=verify, download=download)
    return images, labels.astype(np.int32)


def load_normalized(dataset: str, split: str = "train", *, standardize: bool = False,
                    path=None, verify: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """:func:`load`, images as float32 ``[N, 28, 28, 1]``: ``images / 255``, or with
    ``standardize`` that standardized by the set's :data:`STANDARDIZATION`."""
    images, labels = load(dataset, split, path=path, verify=verify)
    mean, std = STANDARDIZATION[dataset] if standardize else (0.0, 1.0)
    return normalize_images(images, mean=mean, std=std), labels
