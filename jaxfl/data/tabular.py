"""Flat tables: UCI Parkinsons telemonitoring, Kaggle credit-card fraud, scikit-learn's sets.

Each loader returns a :class:`Table` of NumPy arrays. Where the data has a natural owner of
each row (Parkinsons' ``subject#``: 42 people with 101-168 recordings each) it is returned as
``groups``, the unit of user-level / subject-level privacy.

* Parkinsons telemonitoring (Tsanas, Little, McSharry, Ramig 2009): ``parkinsons_updrs.data``,
  5,875 rows; the task is to predict ``motor_UPDRS`` / ``total_UPDRS`` from the 16 voice
  measures (``features="voice"``) or also from age, sex and test time (``features="all"``).
* Credit-card fraud (ULB / Worldline, Kaggle ``mlg-ulb/creditcardfraud``): ``creditcard.csv``
  with columns Time, V1..V28, Amount, Class (284,807 rows, 492 frauds). No checksum is
  recorded (none is published); the header is validated.
* scikit-learn's bundled ``digits`` (1,797 8x8 images) and ``breast_cancer`` (569 x 30)
  sets, which need the ``scikit-learn`` package (``pip install 'jaxfl[test]'``).

Example Usage:
  >>> t = Table(x=np.zeros((2, 3)), y=np.zeros(2), feature_names=("a", "b", "c"),
  ...           target_names=("t",))
  >>> t.num_examples
  2
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxfl import validate
from jaxfl.data import catalog
from jaxfl.data import download as _download

PARKINSONS = catalog.PARKINSONS  # the sources (see jaxfl.data.catalog)
CREDITCARD = catalog.CREDITCARD


class Table(NamedTuple):
    """A flat table. ``y`` is ``[N]`` for one target, ``[N, k]`` for several."""

    x: np.ndarray  # shape=[N, d]
    y: np.ndarray  # shape=[N] or [N, k]
    feature_names: tuple[str, ...]
    target_names: tuple[str, ...]
    groups: np.ndarray | None = None  # shape=[N]: natural owner (user/subject) of each row

    @property
    def num_examples(self) -> int:
        return int(self.x.shape[0])


PARKINSONS_TARGETS = ("motor_UPDRS", "total_UPDRS")
CREDITCARD_COLUMNS = ("Time", *[f"V{i}" for i in range(1, 29)], "Amount", "Class")


def _header(file) -> list[str]:
    with open(file, encoding="utf-8") as f:
        return [c.strip().strip('"') for c in f.readline().strip().split(",")]


def load_parkinsons(*, path=None, verify: bool = True, features: str = "voice",
                    target: str = "both", download: bool | None = None) -> Table:
    """UCI Parkinsons telemonitoring with the subject id of each recording as ``groups``.

    Args:
      path: directory holding ``parkinsons_updrs.data`` (or the file itself); default
        ``$JAXFL_DATA_DIR/parkinsons_telemonitoring``.
      verify: check the recorded SHA-256.
      features: ``"voice"`` (the 16 voice measures) or ``"all"`` (also age, sex, test_time).
      target: ``"motor_UPDRS"``, ``"total_UPDRS"`` or ``"both"`` (``y`` of shape ``[N, 2]``).
      download: fetch the files when missing (:mod:`jaxfl.data.download`); ``None`` means
        only if ``JAXFL_DOWNLOAD=1``.

    Returns:
      A :class:`Table` with float64 ``x``, ``y`` and int64 ``groups`` (``subject#``, 1..42).
    """
    validate.one_of("features", features, ("voice", "all"))
    validate.one_of("target", target, (*PARKINSONS_TARGETS, "both"))
    file = _download.find_file(PARKINSONS, "parkinsons_updrs.data", path, verify=verify,
                               download=download)
    header = _header(file)
    if header[0] != "subject#" or not set(PARKINSONS_TARGETS) <= set(header):
        raise validate.JaxflValueError(f"{file}: unexpected header {header[:6]}...")
    data = np.loadtxt(file, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    if data.shape[1] != len(header):
        raise validate.ShapeError(f"{file}: {len(header)} columns in the header, "
                                   f"{data.shape[1]} in the rows.")
    col = {name: i for i, name in enumerate(header)}
    demographic = ["age", "sex", "test_time"]
    voice = [h for h in header[1:] if h not in (*demographic, *PARKINSONS_TARGETS)]
    names = voice if features == "voice" else demographic + voice
    targets = PARKINSONS_TARGETS if target == "both" else (target,)
    y = data[:, [col[t] for t in targets]]
    return Table(x=data[:, [col[n] for n in names]], y=y if target == "both" else y[:, 0],
                 feature_names=tuple(names), target_names=tuple(targets),
                 groups=data[:, 0].astype(np.int64))


def load_creditcard(*, path=None, verify: bool = True) -> Table:
    """The Kaggle credit-card fraud CSV: ``x`` = Time, V1..V28, Amount (float64), ``y`` = Class.

    Args:
      path: directory holding ``creditcard.csv`` (or the file itself); default
        ``$JAXFL_DATA_DIR/creditcard``.
      verify: kept for a uniform signature; no checksum is published for this file.
    """
    file = _download.find_file(CREDITCARD, "creditcard.csv", path, verify=verify)
    header = _header(file)
    if tuple(header) != CREDITCARD_COLUMNS:
        raise validate.JaxflValueError(
            f"{file}: expected the columns {CREDITCARD_COLUMNS[:3]}...{CREDITCARD_COLUMNS[-2:]}"
            f" ({len(CREDITCARD_COLUMNS)} in all), got {header[:3]}...{header[-2:]} "
            f"({len(header)}).")
    data = np.loadtxt(file, delimiter=",", skiprows=1, quotechar='"', dtype=np.float64,
                      ndmin=2)
    labels = data[:, -1]
    if not np.isin(labels, (0.0, 1.0)).all():
        raise validate.JaxflValueError(f"{file}: Class must be 0 or 1.")
    return Table(x=data[:, :-1], y=labels.astype(np.int64),
                 feature_names=CREDITCARD_COLUMNS[:-1], target_names=("Class",))


def _sklearn_datasets():
    try:
        from sklearn import datasets  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise ImportError(
            "scikit-learn is needed for its bundled datasets (digits, breast_cancer); install "
            "it with `pip install scikit-learn` or `pip install 'jaxfl[test]'`.") from e
    return datasets


def load_digits(*, images: bool = False) -> Table:
    """scikit-learn's bundled 8x8 digits: 1,797 examples, 10 classes, pixel values 0..16.

    Args:
      images: return ``x`` as ``[N, 8, 8, 1]`` instead of flat ``[N, 64]``.
    """
    bunch = _sklearn_datasets().load_digits()
    x = np.asarray(bunch.data, dtype=np.float64)
    if images:
        x = x.reshape(-1, 8, 8, 1)
    return Table(x=x, y=np.asarray(bunch.target, dtype=np.int64),
                 feature_names=tuple(bunch.feature_names), target_names=("digit",))


def load_breast_cancer() -> Table:
    """scikit-learn's bundled Wisconsin diagnostic breast cancer set: 569 x 30, binary y."""
    bunch = _sklearn_datasets().load_breast_cancer()
    return Table(x=np.asarray(bunch.data, dtype=np.float64),
                 y=np.asarray(bunch.target, dtype=np.int64),
                 feature_names=tuple(str(n) for n in bunch.feature_names),
                 target_names=("benign",))
