"""FLamby's natural cross-silo datasets: Fed-Heart-Disease and Fed-TCGA-BRCA.

Both come with a fixed silo of every record (Ogier du Terrail et al., "FLamby", NeurIPS 2022
Datasets & Benchmarks); loaders return a :class:`Silos` of per-silo arrays, ready for
:func:`jaxfl.data.federated.from_client_arrays`.

**Fed-Heart-Disease** (UCI Heart Disease, Janosi et al. 1988): four hospitals, files
``processed.{cleveland,hungarian,switzerland,va}.data`` (14 columns, ``?`` = missing), silos
0..3 in that order. FLamby's preprocessing, reproduced by :func:`load_heart_disease`: drop
columns 10-12 (slope, ca, thal), then every row that still has a ``?``; label = ``num > 0``.
That leaves 303 / 261 / 46 / 130 rows and the 10 raw features. :func:`heart_disease_flamby`
adds the rest of FLamby's pipeline: one-hot ``cp`` and ``restecg`` dropping the first level
(13 features: the 8 other raw columns, then cp=2,3,4, then restecg=1,2), the per-centre
train/test split (scikit-learn ``train_test_split`` with ``train_size=0.66``,
``random_state=43``, stratified on the label when both classes have more than 2 rows; sizes
199/104, 172/89, 30/16, 85/45) and standardisation by the centre's (or the pooled) train mean
and unbiased std, ``(x - mean) / (std + 1e-9)``.

**Fed-TCGA-BRCA** (TCGA clinical data as prepared by FLamby): ``brca.csv`` (``pid``, 39
features, ``E`` event indicator, ``T`` time) and ``train_test_split.csv`` (``pid, fold,
fold2`` with ``fold2 = train_k / test_k`` for region k = 0..5). Records keep their
``brca.csv`` order inside each region; 1,088 of the 1,096 pids are used (train
248/156/164/129/129/40, test 63/40/42/33/33/11).

Example Usage:
  >>> s = Silos(x=(np.zeros((2, 3)), np.zeros((1, 3))), y=(np.zeros(2), np.zeros(1)),
  ...           names=("a", "b"), feature_names=("f0", "f1", "f2"))
  >>> s.sizes.tolist()
  [2, 1]
"""

from __future__ import annotations

import csv
from typing import NamedTuple

import numpy as np

from jaxfl import validate
from jaxfl.data import catalog
from jaxfl.data import download as _download

HEART_DISEASE = catalog.HEART_DISEASE  # the sources (see jaxfl.data.catalog)
TCGA_BRCA = catalog.TCGA_BRCA


class Silos(NamedTuple):
    """Per-silo arrays of a dataset with a natural silo of every record."""

    x: tuple[np.ndarray, ...]  # x[s]: shape=[n_s, d]
    y: tuple[np.ndarray, ...]  # y[s]: shape=[n_s] or [n_s, k]
    names: tuple[str, ...]
    feature_names: tuple[str, ...]
    ids: tuple[np.ndarray, ...] | None = None  # record ids per silo (e.g. TCGA pids)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([len(v) for v in self.y], dtype=np.int64)


HEART_SITES = ("cleveland", "hungarian", "switzerland", "va")
HEART_COLUMNS = ("age", "sex", "cp", "trestbps", "chol", "fbs", "restecg", "thalach", "exang",
                 "oldpeak", "slope", "ca", "thal", "num")
_HEART_KEPT = HEART_COLUMNS[:10]


TCGA_REGIONS = 6


def _read_heart_file(file) -> np.ndarray:
    rows = []
    with open(file, encoding="ascii") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            cells = line.strip().split(",")
            if len(cells) != len(HEART_COLUMNS):
                raise validate.ShapeError(
                    f"{file}:{line_no}: expected {len(HEART_COLUMNS)} columns, got {len(cells)}.")
            rows.append([np.nan if c.strip() == "?" else float(c) for c in cells])
    return np.array(rows, dtype=np.float64).reshape(-1, len(HEART_COLUMNS))


def load_heart_disease(*, path=None, verify: bool = True, download: bool | None = None
                       ) -> Silos:
    """The four Fed-Heart-Disease silos after FLamby's row/column filtering (see module doc).

    ``download=True`` (or ``JAXFL_DOWNLOAD=1``) fetches the files when missing.

    Returns:
      :class:`Silos` with float64 ``x`` ``[n_s, 10]`` (age ... oldpeak), int64 ``y`` = num > 0,
      silos in the order cleveland, hungarian, switzerland, va.
    """
    files = _download.find_files(HEART_DISEASE, [f"processed.{s}.data" for s in HEART_SITES],
                                 path, verify=verify, download=download)
    xs, ys = [], []
    for file in files:
        table = _read_heart_file(file)
        kept = np.delete(table, [10, 11, 12], axis=1)
        kept = kept[~np.isnan(kept).any(axis=1)]
        xs.append(kept[:, :10])
        ys.append((kept[:, 10] > 0).astype(np.int64))
    return Silos(tuple(xs), tuple(ys), HEART_SITES, _HEART_KEPT)


def flamby_train_mask(labels: np.ndarray, *, train_fraction: float = 0.66,
                      seed: int = 43) -> np.ndarray:
    """FLamby's per-centre train/test split as a boolean train mask (needs scikit-learn).

    Stratifies on the binary label when both classes have more than 2 rows, as FLamby does.
    """
    try:
        from sklearn.model_selection import train_test_split  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise ImportError("FLamby's train/test split is scikit-learn's train_test_split; "
                          "install scikit-learn (pip install 'jaxfl[test]').") from e
    labels = np.asarray(labels)
    levels, counts = np.unique(labels, return_counts=True)
    stratify = labels if len(levels) > 1 and (counts > 2).all() else None
    _, test = train_test_split(np.arange(len(labels)), test_size=1.0 - train_fraction,
                               train_size=train_fraction, random_state=seed, shuffle=True,
                               stratify=stratify)
    mask = np.ones(len(labels), dtype=bool)
    mask[test] = False
    return mask


def heart_disease_flamby(split: str = "train", *, normalize: str | None = "center", path=None,
                         verify: bool = True) -> Silos:
    """Fed-Heart-Disease exactly as FLamby feeds it to models (13 features, per-centre split).

    Args:
      split: ``"train"``, ``"test"`` or ``"all"`` (train then test rows of each centre).
      normalize: ``"center"`` (each centre's train mean/std, FLamby's federated mode),
        ``"pooled"`` (pooled train mean/std, FLamby's pooled mode) or ``None``.
      path, verify: as in :func:`load_heart_disease`.

    Returns:
      :class:`Silos` with float32 ``x`` ``[n_s, 13]`` and int64 ``y``.
    """
    validate.one_of("split", split, ("train", "test", "all"))
    validate.one_of("normalize", normalize, ("center", "pooled", None))
    raw = load_heart_disease(path=path, verify=verify)
    pooled = np.concatenate(raw.x)
    dummies, names = [], [n for i, n in enumerate(_HEART_KEPT) if i not in (2, 6)]
    for col in (2, 6):  # cp, restecg: one-hot over the pooled levels, first level dropped
        levels = np.unique(pooled[:, col])[1:]
        dummies.append((col, levels))
        names += [f"{_HEART_KEPT[col]}={int(v) if v == int(v) else v}" for v in levels]

    def encode(x):
        parts = [np.delete(x, [2, 6], axis=1)]
        parts += [(x[:, [col]] == levels[None, :]).astype(np.float64) for col, levels in dummies]
        return np.concatenate(parts, axis=1)

    encoded = [encode(x) for x in raw.x]
    train = [flamby_train_mask(y) for y in raw.y]
    stats = [(e[m].mean(0), e[m].std(0, ddof=1)) for e, m in zip(encoded, train, strict=True)]
    if normalize == "pooled":
        all_train = np.concatenate([e[m] for e, m in zip(encoded, train, strict=True)])
        stats = [(all_train.mean(0), all_train.std(0, ddof=1))] * len(encoded)
    xs, ys = [], []
    for e, y, m, (mu, sd) in zip(encoded, raw.y, train, stats, strict=True):
        if normalize is not None:
            e = (e - mu) / (sd + 1e-9)
        order = {"train": np.flatnonzero(m), "test": np.flatnonzero(~m),
                 "all": np.concatenate([np.flatnonzero(m), np.flatnonzero(~m)])}[split]
        xs.append(e[order].astype(np.float32))
        ys.append(y[order])
    return Silos(tuple(xs), tuple(ys), raw.names, tuple(names))


def _read_csv_columns(file) -> tuple[list[str], list[list[str]]]:
    with open(file, encoding="utf-8", newline="") as f:
        lines = [row for row in csv.reader(f) if row]
    header, rows = lines[0], lines[1:]
    if any(len(r) != len(header) for r in rows):
        raise validate.ShapeError(f"{file}: rows with a column count other than {len(header)}.")
    return header, rows


def load_tcga_brca(split: str = "train", *, path=None, verify: bool = True,
                   download: bool | None = None) -> Silos:
    """Fed-TCGA-BRCA: six regions, 39 clinical features, survival target ``(E, T)``.

    Args:
      split: ``"train"``, ``"test"`` or ``"all"`` (both folds, in ``brca.csv`` order).
      path: directory holding ``brca.csv`` and ``train_test_split.csv``; default
        ``$JAXFL_DATA_DIR/tcga_brca``.
      verify: check the recorded SHA-256s.
      download: fetch the files when missing (:mod:`jaxfl.data.download`); ``None`` means
        only if ``JAXFL_DOWNLOAD=1``.

    Returns:
      :class:`Silos` with float32 ``x`` ``[n_s, 39]``, float32 ``y`` ``[n_s, 2]`` = (E, T) and
      the pids as ``ids``. Pids absent from the split file (8 in FLamby's copy) are unused.
    """
    validate.one_of("split", split, ("train", "test", "all"))
    brca_file, split_file = _download.find_files(
        TCGA_BRCA, ["brca.csv", "train_test_split.csv"], path, verify=verify, download=download)
    header, rows = _read_csv_columns(brca_file)
    if header[0] != "pid" or header[-2:] != ["E", "T"] or len(header) != 42:
        raise validate.JaxflValueError(
            f"{brca_file}: expected columns pid, 39 features, E, T; got {len(header)} columns "
            f"starting {header[:2]} and ending {header[-2:]}.")
    split_header, split_rows = _read_csv_columns(split_file)
    if split_header[:1] != ["pid"] or "fold2" not in split_header:
        raise validate.JaxflValueError(f"{split_file}: expected columns pid, fold, fold2.")
    fold2 = dict((r[0], r[split_header.index("fold2")]) for r in split_rows)
    pids = np.array([r[0] for r in rows])
    values = np.array([r[1:] for r in rows], dtype=np.float64)
    wanted = ("train", "test") if split == "all" else (split,)
    xs, ys, ids = [], [], []
    for k in range(TCGA_REGIONS):
        keys = {f"{w}_{k}" for w in wanted}
        sel = np.array([fold2.get(p) in keys for p in pids], dtype=bool)
        xs.append(values[sel, :39].astype(np.float32))
        ys.append(values[sel, 39:41].astype(np.float32))
        ids.append(pids[sel])
    return Silos(tuple(xs), tuple(ys), tuple(f"region_{k}" for k in range(TCGA_REGIONS)),
                 tuple(header[1:40]), tuple(ids))
