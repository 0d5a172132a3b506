"""LEAF benchmark JSON (Caldas et al. 2018): FEMNIST, Shakespeare, Sent140, ...

LEAF's preprocessing writes one or more JSON files per split, each of the form
``{"users": [u, ...], "num_samples": [n_u, ...], "user_data": {u: {"x": [...], "y": [...]}}}``
(optionally with ``"hierarchies"``), into ``<dataset>/data/train/`` and ``<dataset>/data/test/``.
:func:`load_leaf` reads every ``*.json`` of one split, in file-name order, and returns the users
in the order they appear, each with its own arrays -- ready for
:func:`jaxfl.data.federated.from_client_arrays`.

For FEMNIST ``x`` is ``[n_u, 784]`` float32 (28x28 images flattened, values in [0, 1]) and ``y``
is int64 in 0..61; for Shakespeare ``x`` holds 80-character strings and ``y`` single characters
(encode them with :mod:`jaxfl.data.text`). :func:`femnist_images` reshapes FEMNIST rows to
``[n, 28, 28, 1]``.

Files are looked up in ``path`` (a directory holding ``train/`` and ``test/``, or ``data/train``
...), else in ``$JAXFL_DATA_DIR/<name>`` (``name`` e.g. ``"femnist"``). LEAF has no fixed
checksums (its output depends on the sampling flags), so files are validated structurally.

Example Usage:
  >>> import json, pathlib, tempfile
  >>> d = pathlib.Path(tempfile.mkdtemp()) / "train"; d.mkdir()
  >>> blob = {"users": ["a"], "num_samples": [2],
  ...         "user_data": {"a": {"x": [[0.], [1.]], "y": [0, 1]}}}
  >>> _ = (d / "part.json").write_text(json.dumps(blob))
  >>> split = load_leaf(d.parent, split="train")
  >>> split.users, split.x[0].shape
  (('a',), (2, 1))
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np

from jaxfl import validate
from jaxfl.data import _files

LEAF_URL = "https://github.com/TalwalkarLab/leaf"


def source(name: str) -> _files.Source:
    """Where the LEAF dataset ``name`` (``femnist``, ``shakespeare_leaf``) is searched (the
    catalog's entries of both use it)."""
    return _files.Source(
        name=name, subdirs=(name, f"leaf/{name}"),
        url=(f"{LEAF_URL} (run data/{name}/preprocess.sh; copy its "
             "data/train and data/test directories)"))


class LeafSplit(NamedTuple):
    """One split of a LEAF dataset: per-user arrays in file order."""

    users: tuple[str, ...]
    x: tuple[np.ndarray, ...]  # x[i]: shape=[n_i, ...] of user users[i]
    y: tuple[np.ndarray, ...]  # y[i]: shape=[n_i]

    @property
    def num_samples(self) -> np.ndarray:
        return np.array([len(v) for v in self.y], dtype=np.int64)

    def concatenate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pooled ``(x, y, user_index)`` with ``user_index[j]`` the position of x[j]'s user."""
        owner = np.repeat(np.arange(len(self.users)), self.num_samples)
        return np.concatenate(self.x), np.concatenate(self.y), owner


def split_dir(name: str, split: str, path) -> Path:
    """Finds the directory holding ``split``'s JSON files."""
    tried = []
    for base in _files.candidate_dirs(source(name), path):
        options = [base / split, base / "data" / split]
        if path is not None and base.name == split:  # path is the split directory itself
            options.insert(0, base)
        for d in options:
            tried.append(d)
            if d.is_dir() and any(d.glob("*.json")):
                return d
    root = _files.data_root()
    env = f"JAXFL_DATA_DIR={str(root)!r}" if root else "JAXFL_DATA_DIR is not set"
    raise validate.DataNotFoundError(
        f"LEAF dataset {name!r}: no *.json files for split {split!r}. Searched: "
        f"{', '.join(map(str, tried)) or '(nothing)'} ({env}). Obtain them from "
        f"{source(name).url} and put them in $JAXFL_DATA_DIR/{name}/{{train,test}}/, or pass "
        "path=<directory holding train/ and test/>.")


def _as_array(values: list, dtype):
    if dtype is not None:
        return np.asarray(values, dtype=dtype)
    if values and isinstance(values[0], str):
        return np.asarray(values, dtype=str)
    return np.asarray(values)


def read_leaf_json(file: str | Path) -> dict:
    """Reads one LEAF JSON file and checks its structure (users, counts, x/y lengths)."""
    with open(file, encoding="utf-8") as f:
        blob = json.load(f)
    for key in ("users", "num_samples", "user_data"):
        if key not in blob:
            raise validate.JaxflValueError(f"{file}: missing LEAF key {key!r}.")
    users, counts = blob["users"], blob["num_samples"]
    if len(users) != len(counts):
        raise validate.JaxflValueError(
            f"{file}: {len(users)} users but {len(counts)} num_samples entries.")
    for u, n in zip(users, counts, strict=True):
        data = blob["user_data"].get(u)
        if data is None or "x" not in data or "y" not in data:
            raise validate.JaxflValueError(f"{file}: user {u!r} has no x/y in user_data.")
        if not len(data["x"]) == len(data["y"]) == n:
            raise validate.JaxflValueError(
                f"{file}: user {u!r} has num_samples={n} but len(x)={len(data['x'])}, "
                f"len(y)={len(data['y'])}.")
    return blob


def load_leaf(path=None, *, name: str = "leaf", split: str = "train", x_dtype=None,
              y_dtype=None) -> LeafSplit:
    """Loads one split of a LEAF dataset as per-user arrays.

    Args:
      path: directory holding ``train/`` and ``test/`` (or ``data/train`` ...), or the split
        directory itself; default ``$JAXFL_DATA_DIR/<name>``.
      name: dataset name used to find the default directory and in messages.
      split: ``"train"`` or ``"test"``.
      x_dtype, y_dtype: dtypes for the arrays (default: inferred; strings stay strings).

    Returns:
      A :class:`LeafSplit` with users in file-name then in-file order.

    Raises:
      DataNotFoundError: no JSON file found. JaxflValueError: malformed file or a user that
        appears in two files.
    """
    validate.one_of("split", split, ("train", "test"))
    directory = split_dir(name, split, path)
    users, xs, ys = [], [], []
    seen = set()
    for file in sorted(directory.glob("*.json")):
        blob = read_leaf_json(file)
        for u in blob["users"]:
            if u in seen:
                raise validate.JaxflValueError(f"{file}: user {u!r} already seen in another file.")
            seen.add(u)
            data = blob["user_data"][u]
            users.append(str(u))
            xs.append(_as_array(data["x"], x_dtype))
            ys.append(_as_array(data["y"], y_dtype))
    return LeafSplit(tuple(users), tuple(xs), tuple(ys))


def load_femnist(split: str = "train", *, path=None) -> LeafSplit:
    """FEMNIST (62 classes, one user per writer) with float32 x ``[n, 784]`` and int64 y."""
    return load_leaf(path, name="femnist", split=split, x_dtype=np.float32, y_dtype=np.int64)


def load_leaf_shakespeare(split: str = "train", *, path=None) -> LeafSplit:
    """LEAF Shakespeare (one user per play role): x 80-char strings, y next characters."""
    return load_leaf(path, name="shakespeare_leaf", split=split)


def femnist_images(x: np.ndarray) -> np.ndarray:
    """FEMNIST rows ``[n, 784]`` -> images ``[n, 28, 28, 1]``."""
    x = np.asarray(x)
    validate.shape("x", x, (None, 784))
    return x.reshape(-1, 28, 28, 1)
