"""ULDP-FL's host record layout: training records owned by users, held by silos (Sec. 5.1).

The data side of ULDP-FL (Kato et al., PVLDB 2024): :class:`UldpData` holds every training
record with its silo and its user, :func:`from_silos` builds it from per-silo arrays (the
loaders in :mod:`jaxfl.data.uldp_datasets`), :func:`histogram` counts ``n[s, u]``. The device
layouts, weights and bounding used by the algorithms live in :mod:`jaxfl.algorithms.uldp_data`
(which re-exports these names); this module depends on numpy only, so the data layer never
imports the algorithms.

Example Usage:
  >>> import numpy as np
  >>> d = from_silos([np.zeros((2, 1)), np.zeros((3, 1))], [np.zeros(2), np.zeros(3)],
  ...                [np.array([0, 1]), np.array([1, 1, 2])], num_users=3)
  >>> histogram(d).tolist()
  [[1, 1, 0], [0, 2, 1]]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxfl import validate


class UldpData(NamedTuple):
    """Host-side training records of every silo with their owners."""

    x: np.ndarray  # shape=[N, *feature_shape]
    y: np.ndarray  # shape=[N, *label_shape]
    silo: np.ndarray  # shape=[N], dtype=int: silo holding the record
    user: np.ndarray  # shape=[N], dtype=int: user owning the record
    num_silos: int
    num_users: int

    def validate(self) -> UldpData:
        n = len(self.x)
        for name in ("y", "silo", "user"):
            if len(getattr(self, name)) != n:
                raise validate.ShapeError(f"Expected len({name}) == len(x) == {n}.")
        validate.positive_int("num_silos", self.num_silos)
        validate.positive_int("num_users", self.num_users)
        if n == 0:
            raise validate.JaxflValueError(
                f"Expected at least one record, got none (num_silos={self.num_silos}, "
                f"num_users={self.num_users}); check the dataset's filters or max_records.")
        for name, hi in (("silo", self.num_silos), ("user", self.num_users)):
            ids = np.asarray(getattr(self, name))
            if ids.size and (ids.min() < 0 or ids.max() >= hi):
                raise validate.JaxflValueError(f"Expected {name} ids in [0, {hi}).")
        return self

    def subset(self, keep: np.ndarray) -> UldpData:
        keep = np.asarray(keep)
        return self._replace(x=self.x[keep], y=self.y[keep], silo=self.silo[keep],
                             user=self.user[keep])


def from_silos(xs, ys, users, *, num_users: int) -> UldpData:
    """Builds :class:`UldpData` from per-silo record arrays and per-silo user ids."""
    if not len(xs) == len(ys) == len(users):
        raise validate.ShapeError("Expected as many label and user arrays as silos.")
    silo = np.concatenate([np.full(len(a), s, np.int64) for s, a in enumerate(xs)])
    return UldpData(x=np.concatenate(xs), y=np.concatenate(ys), silo=silo,
                    user=np.concatenate([np.asarray(u, np.int64) for u in users]),
                    num_silos=len(xs), num_users=int(num_users)).validate()


def histogram(data: UldpData) -> np.ndarray:
    """``n[s, u]``: records of user u in silo s (int64 ``[S, U]``)."""
    flat = np.asarray(data.silo, np.int64) * data.num_users + np.asarray(data.user, np.int64)
    return np.bincount(flat, minlength=data.num_silos * data.num_users).reshape(
        data.num_silos, data.num_users)


__all__ = ["UldpData", "from_silos", "histogram"]
