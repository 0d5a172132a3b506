"""CIFAR-10 in its "python version" layout (Krizhevsky 2009).

The archive ``cifar-10-python.tar.gz`` unpacks to ``cifar-10-batches-py/`` holding
``data_batch_1`` ... ``data_batch_5`` (10,000 training images each), ``test_batch`` and
``batches.meta``. Each batch is a pickled dict with ``b"data"`` (uint8 ``[10000, 3072]``, each
row the 1024 red, then green, then blue values of a 32x32 image in row-major order) and
``b"labels"`` (a list of ints in 0..9). The loader returns channels-last uint8 images.

Pickles can run arbitrary code, so batches are read with a restricted unpickler that only
reconstructs NumPy arrays, dtypes and byte strings; any other global in the file raises
:class:`jaxfl.validate.JaxflValueError`.

Files are looked up in ``$JAXFL_DATA_DIR/cifar-10-batches-py`` (or ``cifar10``) or an explicit
``path``; the published MD5 of every batch is verified.

Example Usage:
  >>> CIFAR10_CLASSES[:3]
  ('airplane', 'automobile', 'bird')
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from jaxfl import validate
from jaxfl.data import catalog
from jaxfl.data import download as _download

CIFAR10 = catalog.CIFAR10  # where the files are searched, their digests (jaxfl.data.catalog)

TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCHES = ("test_batch",)
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck")


_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
}


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickler that only resolves the globals needed for NumPy arrays and bytes."""

    def find_class(self, module, name):
        if (module, name) not in _ALLOWED_GLOBALS:
            raise validate.JaxflValueError(
                f"Refusing to unpickle global {module}.{name}: a CIFAR batch holds only "
                "arrays, lists and byte strings.")
        if module == "numpy.core.multiarray":  # written by NumPy 1.x; renamed in NumPy 2
            module = "numpy._core.multiarray" if hasattr(np, "_core") else module
        return super().find_class(module, name)


def read_batch(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Reads one pickled batch file into (uint8 images ``[n, 32, 32, 3]``, int64 labels ``[n]``)."""
    with open(path, "rb") as f:
        try:
            batch = _ArrayUnpickler(f, encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, AttributeError, IndexError) as e:
            raise validate.JaxflValueError(f"{path}: not a CIFAR batch pickle ({e}).") from e
    if not isinstance(batch, dict):
        raise validate.JaxflValueError(f"{path}: expected a pickled dict, got {type(batch)}.")
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if "data" not in batch or "labels" not in batch:
        raise validate.JaxflValueError(
            f"{path}: expected keys 'data' and 'labels', got {sorted(batch)}.")
    data = np.asarray(batch["data"])
    labels = np.asarray(batch["labels"], dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
        raise validate.ShapeError(
            f"{path}: expected uint8 data of shape [n, 3072], got {data.dtype} {data.shape}.")
    if labels.shape != (data.shape[0],):
        raise validate.ShapeError(
            f"{path}: {data.shape[0]} images but labels of shape {labels.shape}.")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def load_cifar10(split: str = "train", *, path=None, verify: bool = True,
                 download: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Loads CIFAR-10 ``"train"`` (50,000 images, the five batches in order) or ``"test"``.

    Args:
      split: ``"train"`` or ``"test"``.
      path: the ``cifar-10-batches-py`` directory; default under ``$JAXFL_DATA_DIR``.
      verify: check each batch against its published MD5.
      download: fetch the files when missing (:mod:`jaxfl.data.download`); ``None`` means
        only if ``JAXFL_DOWNLOAD=1``.

    Returns:
      ``(images, labels)``: uint8 ``[N, 32, 32, 3]`` (channels last) and int64 ``[N]``.
    """
    validate.one_of("split", split, ("train", "test"))
    names = TRAIN_BATCHES if split == "train" else TEST_BATCHES
    files = _download.find_files(CIFAR10, names, path, verify=verify, download=download)
    parts = [read_batch(f) for f in files]
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
