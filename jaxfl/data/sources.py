"""A small registry of every dataset jaxfl can read, and one ``load(name, ...)`` entry point.

Each entry names the loader (in :mod:`jaxfl.data.idx`, :mod:`~jaxfl.data.cifar`,
:mod:`~jaxfl.data.leaf`, :mod:`~jaxfl.data.text`, :mod:`~jaxfl.data.flamby` or
:mod:`~jaxfl.data.tabular`), the files it needs and where they are searched (see
:mod:`jaxfl.data._files`: an explicit ``path``, else ``$JAXFL_DATA_DIR/<subdir>``, else
system fallbacks). :func:`available` tells, without reading or hashing anything, whether
a dataset's files are present -- e.g. to fall back from MNIST to the bundled digits.

Example Usage:
  >>> "mnist" in names() and "digits" in names()
  True
  >>> info("heart_disease").files[0]
  'processed.cleveland.data'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from jaxfl import validate
from jaxfl.data import _files, cifar, flamby, idx, leaf, tabular, text


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """One registry entry.

    Attributes:
      name: registry name.
      loader: the function ``load(name, **kwargs)`` calls with ``**kwargs``.
      description: one line: what it is and what the loader returns.
      source: where its files live (``None`` for data bundled with a Python package).
      files: the files that must exist for :func:`available`.
    """

    name: str
    loader: Callable
    description: str
    source: _files.Source | None = None
    files: tuple[str, ...] = ()


def _entries() -> list[DatasetInfo]:
    mnist_files = idx.FILES["train"] + idx.FILES["test"]
    heart = tuple(f"processed.{s}.data" for s in flamby.HEART_SITES)
    return [
        DatasetInfo("mnist", idx.load_mnist,
                    "MNIST IDX gzip; (uint8 [N,28,28], uint8 [N]) for split='train'|'test'",
                    idx.MNIST, mnist_files),
        DatasetInfo("fashion_mnist", idx.load_fashion_mnist,
                    "Fashion-MNIST IDX gzip (also Debian's /usr/share/datasets/fashion-mnist)",
                    idx.FASHION_MNIST, mnist_files),
        DatasetInfo("cifar10", cifar.load_cifar10,
                    "CIFAR-10 python batches; (uint8 [N,32,32,3], int64 [N])",
                    cifar.CIFAR10, cifar.TRAIN_BATCHES + cifar.TEST_BATCHES),
        DatasetInfo("femnist", leaf.load_femnist,
                    "LEAF FEMNIST JSON; per-writer float32 [n,784] and int64 labels",
                    leaf.source("femnist")),
        DatasetInfo("shakespeare_leaf", leaf.load_leaf_shakespeare,
                    "LEAF Shakespeare JSON; per-role 80-char strings and next characters",
                    leaf.source("shakespeare_leaf")),
        DatasetInfo("tiny_shakespeare", text.load_tiny_shakespeare,
                    "char-rnn tiny Shakespeare as one string (parse with text.parse_speeches)",
                    text.TINY_SHAKESPEARE, ("input.txt",)),
        DatasetInfo("heart_disease", flamby.load_heart_disease,
                    "Fed-Heart-Disease, 4 silos (303/261/46/130), 10 raw features, y=num>0",
                    flamby.HEART_DISEASE, heart),
        DatasetInfo("heart_disease_flamby", flamby.heart_disease_flamby,
                    "Fed-Heart-Disease as FLamby serves it: 13 features, train/test, normalised",
                    flamby.HEART_DISEASE, heart),
        DatasetInfo("tcga_brca", flamby.load_tcga_brca,
                    "Fed-TCGA-BRCA, 6 regions, 39 features, y=(E, T)",
                    flamby.TCGA_BRCA, ("brca.csv", "train_test_split.csv")),
        DatasetInfo("parkinsons", tabular.load_parkinsons,
                    "UCI Parkinsons telemonitoring, 5875 rows, 42 subjects as groups",
                    tabular.PARKINSONS, ("parkinsons_updrs.data",)),
        DatasetInfo("creditcard", tabular.load_creditcard,
                    "Kaggle credit-card fraud CSV; x = Time, V1..V28, Amount; y = Class",
                    tabular.CREDITCARD, ("creditcard.csv",)),
        DatasetInfo("digits", tabular.load_digits,
                    "scikit-learn's bundled 8x8 digits (1797 x 64)"),
        DatasetInfo("breast_cancer", tabular.load_breast_cancer,
                    "scikit-learn's bundled breast cancer set (569 x 30)"),
    ]


_REGISTRY = {entry.name: entry for entry in _entries()}


def names() -> tuple[str, ...]:
    """Registered dataset names."""
    return tuple(_REGISTRY)


def info(name: str) -> DatasetInfo:
    """The registry entry of ``name``."""
    validate.one_of("name", name, names())
    return _REGISTRY[name]


def load(name: str, **kwargs):
    """Loads dataset ``name`` by calling its loader with ``**kwargs`` (see :func:`info`)."""
    return info(name).loader(**kwargs)


def available(name: str, *, path=None) -> bool:
    """Whether the files of ``name`` are present (no reading, no hashing)."""
    entry = info(name)
    if entry.source is None:  # bundled with scikit-learn
        try:
            import sklearn  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        except ImportError:
            return False
        return True
    if not entry.files:  # LEAF: any JSON in the train split directory
        try:
            leaf.split_dir(entry.name, "train", path)
        except validate.DataNotFoundError:
            return False
        return True
    try:
        _files.find_dir(entry.source, entry.files, path)
    except validate.DataNotFoundError:
        return False
    return True
