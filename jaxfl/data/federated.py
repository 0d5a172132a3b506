"""All clients as padded stacked arrays, so one jit-compiled function serves every client.

``FederatedData`` holds ``x: [clients, max_n, ...]``, ``y: [clients, max_n, ...]``, a boolean
``mask: [clients, max_n]`` marking real examples, ``num_examples: [clients]`` and optional
``extras`` (e.g. per-example ``user_id`` or ``subject_id``, ``[clients, max_n]``). Examples of a
client occupy the first ``num_examples[c]`` slots. It is a pytree, so it can be passed through
jit / vmap directly (vmap over axis 0 yields one client's ``ClientData``).

Example Usage:
  >>> import numpy as np
  >>> x = np.arange(10, dtype=np.float32)[:, None]; y = np.arange(10) % 2
  >>> fd = from_partition(x, y, [np.array([0, 1, 2]), np.array([3, 4])])
  >>> fd.x.shape, fd.num_examples.tolist()
  ((2, 3, 1), [3, 2])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import validate


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class FederatedData:
    """Padded stacked client data (see module docstring)."""

    x: jax.Array | np.ndarray  # shape=[clients, max_n, *feature_shape]
    y: jax.Array | np.ndarray  # shape=[clients, max_n, *label_shape]
    mask: jax.Array | np.ndarray  # shape=[clients, max_n], dtype=bool
    num_examples: jax.Array | np.ndarray  # shape=[clients], dtype=int32
    extras: dict = dataclasses.field(default_factory=dict)  # each shape=[clients, max_n, ...]

    @property
    def num_clients(self) -> int:
        return int(self.mask.shape[0])

    @property
    def max_examples(self) -> int:
        return int(self.mask.shape[1])

    def client(self, index: int) -> FederatedData:
        """One client's data with the leading axis removed (what a vmapped function sees)."""
        return jax.tree.map(lambda a: a[index], self)

    def select(self, indices) -> FederatedData:
        """Gathers a subset (or a padded cohort) of clients along axis 0."""
        indices = np.asarray(indices)
        return jax.tree.map(lambda a: a[indices], self)

    def to_device(self) -> FederatedData:
        return jax.tree.map(jnp.asarray, self)

    def validate(self, *, num_classes: int | None = None) -> FederatedData:
        """Checks the layout and the content in one vectorized pass; returns ``self``.

        * shapes: ``x``, ``y`` and every ``extras`` entry lead with ``[clients, max_n]``,
          ``num_examples`` is ``[clients]``;
        * the mask agrees with the counts: client c's examples are exactly its first
          ``num_examples[c]`` slots (a mask marking padding would train on it);
        * ``x`` (and a float ``y``) hold no NaN or inf, padding included (a NaN times a zero
          mask is still NaN);
        * with ``num_classes`` (a classification loss): the labels of real examples are
          integers in ``[0, num_classes)`` (label 7 of a 3-class model gives a NaN loss,
          label -1 trains as the last class).

        Raises:
          ShapeError: a shape that disagrees with the mask's ``[clients, max_n]``.
          JaxflValueError: a mask that disagrees with the counts, a non-finite value or a
            label out of range; the message names the first offending client.
        """
        c, n = np.shape(self.mask)
        for name, arr in [("x", self.x), ("y", self.y), *self.extras.items()]:
            if tuple(np.shape(arr))[:2] != (c, n):
                raise validate.ShapeError(
                    f"Expected {name}.shape[:2]=({c}, {n}), got {tuple(np.shape(arr))[:2]}.")
        counts = np.asarray(self.num_examples)
        if counts.shape != (c,):
            raise validate.ShapeError(f"Expected num_examples.shape=({c},), got {counts.shape}.")
        if counts.size and (counts.min() < 0 or counts.max() > n):
            bad = int(np.flatnonzero((counts < 0) | (counts > n))[0])
            raise validate.JaxflValueError(
                f"Expected num_examples in [0, {n}] (the example axis), got "
                f"num_examples[{bad}]={int(counts[bad])}.")
        mask = np.asarray(self.mask)
        if mask.dtype != bool:
            if not np.isin(mask, (0, 1)).all():
                raise validate.JaxflValueError(
                    f"Expected a boolean mask, got dtype {mask.dtype} with values other than "
                    f"0 and 1.")
            mask = mask.astype(bool)
        expected = np.arange(n)[None, :] < counts[:, None]
        if not np.array_equal(mask, expected):
            wrong = np.flatnonzero((mask != expected).any(axis=1))
            i = int(wrong[0])
            raise validate.JaxflValueError(
                f"Expected mask row c to mark exactly the first num_examples[c] slots, got a "
                f"mask that disagrees with num_examples at {wrong.size} client(s) "
                f"{wrong[:10].tolist()} (client {i}: the mask marks {int(mask[i].sum())} "
                f"slot(s) {np.flatnonzero(mask[i])[:10].tolist()}, num_examples[{i}]="
                f"{int(counts[i])}); a mask marking padding would train on it.")
        for name, arr in (("x", self.x), ("y", self.y)):
            bad = _first_nonfinite_client(arr)
            if bad is not None:
                raise validate.JaxflValueError(
                    f"Expected finite {name}, found NaN or inf in client {bad}'s {name} "
                    f"(every parameter would become NaN).")
        if num_classes is not None:
            k = validate.positive_int("num_classes", num_classes)
            y = np.asarray(self.y)
            real = y[expected]  # [examples, *label_shape]: the labels of real examples
            if real.size:
                bad = (real < 0) | (real >= k)
                if np.issubdtype(real.dtype, np.floating):
                    bad |= real != np.round(real)
                if bad.any():
                    first = int(np.flatnonzero(bad.reshape(len(real), -1).any(axis=1))[0])
                    client = int(np.searchsorted(np.cumsum(counts), first, side="right"))
                    value = real.reshape(len(real), -1)[first][
                        bad.reshape(len(real), -1)[first]][0]
                    raise validate.JaxflValueError(
                        f"Expected integer labels in [0, {k}) (the model has {k} classes), got "
                        f"label {value.item()!r} at client {client} ({int(bad.sum())} label(s) "
                        f"out of range; labels seen: min {real.min().item()!r}, max "
                        f"{real.max().item()!r}).")
        return self


_FINITE_CHUNK = 1 << 22  # elements per isfinite pass: bounded temporary memory (4 MiB of bools)


def _first_nonfinite_client(arr) -> int | None:
    """The first client (axis 0) of ``arr`` with a NaN or inf (None: all finite, or an integer
    array). One pass over the array in chunks of whole clients, so the temporary boolean array
    stays small on MNIST-sized data."""
    arr = np.asarray(arr)
    if not np.issubdtype(arr.dtype, np.inexact) or arr.size == 0:
        return None
    per = max(1, arr[0].size)
    step = max(1, _FINITE_CHUNK // per)
    for start in range(0, arr.shape[0], step):
        part = arr[start:start + step]
        if not np.isfinite(part).all():
            rows = ~np.isfinite(part.reshape(len(part), -1)).all(axis=1)
            return start + int(np.flatnonzero(rows)[0])
    return None


def from_partition(x: np.ndarray, y: np.ndarray, client_indices: Sequence[np.ndarray], *,
                   extras: dict[str, np.ndarray] | None = None, max_examples: int | None = None,
                   allow_empty: bool = False) -> FederatedData:
    """Builds padded client arrays from a global dataset and per-client index lists."""
    x = np.asarray(x)
    y = np.asarray(y)
    if len(x) != len(y):
        raise validate.ShapeError(f"Expected len(x) == len(y), got {len(x)} and {len(y)}.")
    if len(client_indices) == 0:
        raise validate.JaxflValueError("Expected at least one client.")
    for name, arr in (("x", x), ("y", y)):
        if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
            raise validate.JaxflValueError(f"Expected finite {name} (found NaN or inf).")
    for i, ix in enumerate(client_indices):
        if np.asarray(ix).size and not np.issubdtype(np.asarray(ix).dtype, np.integer):
            raise validate.JaxflValueError(
                f"Expected integer example indices, got {np.asarray(ix).dtype} for client {i}.")
    counts = np.array([len(ix) for ix in client_indices], dtype=np.int32)
    if counts.sum() == 0:
        raise validate.JaxflValueError(
            f"All {len(client_indices)} clients have no examples (the dataset has {len(x)}); "
            "check the partition (e.g. a filter or subset that removed every example).")
    if not allow_empty and np.any(counts == 0):
        raise validate.JaxflValueError(
            f"Clients {np.flatnonzero(counts == 0).tolist()[:10]} have no examples; pass "
            "allow_empty=True to keep them.")
    n_max = int(counts.max()) if max_examples is None else int(max_examples)
    if n_max < counts.max():
        raise validate.JaxflValueError(
            f"max_examples={n_max} is smaller than the largest client ({counts.max()}).")
    n_max = max(n_max, 1)
    c = len(client_indices)
    extras = dict(extras or {})
    for name, arr in extras.items():
        if len(np.asarray(arr)) != len(x):
            raise validate.ShapeError(
                f"Expected extras[{name!r}] to have one row per example ({len(x)}), got "
                f"{len(np.asarray(arr))}.")
    gather = np.zeros((c, n_max), dtype=np.int64)
    mask = np.zeros((c, n_max), dtype=bool)
    for i, ix in enumerate(client_indices):
        ix = np.asarray(ix, dtype=np.int64)
        if ix.size and (ix.min() < 0 or ix.max() >= len(x)):
            raise validate.JaxflValueError(f"Client {i} has out-of-range example indices.")
        gather[i, : len(ix)] = ix
        mask[i, : len(ix)] = True

    def pad(arr):
        out = np.asarray(arr)[gather]
        m = mask.reshape(mask.shape + (1,) * (out.ndim - 2))
        return np.where(m, out, np.zeros((), out.dtype))

    return FederatedData(x=pad(x), y=pad(y), mask=mask, num_examples=counts,
                         extras={k: pad(v) for k, v in extras.items()})


def pad_examples(data: FederatedData, max_examples: int) -> FederatedData:
    """``data`` with its example axis padded to ``max_examples`` slots (zeros, masked out).

    Raises:
      JaxflValueError: when ``max_examples`` is below ``data.max_examples``.
    """
    n = int(max_examples)
    if n < data.max_examples:
        raise validate.JaxflValueError(
            f"Expected max_examples >= {data.max_examples} (the data's), got {n}.")

    def pad(arr):
        arr = np.asarray(arr)
        return np.pad(arr, [(0, 0), (0, n - arr.shape[1])] + [(0, 0)] * (arr.ndim - 2))

    return FederatedData(x=pad(data.x), y=pad(data.y), mask=pad(data.mask),
                         num_examples=np.asarray(data.num_examples),
                         extras={k: pad(v) for k, v in data.extras.items()})


def from_client_arrays(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], **kwargs
                       ) -> FederatedData:
    """Builds padded client arrays from per-client lists of arrays."""
    if len(xs) != len(ys):
        raise validate.ShapeError("Expected as many label arrays as feature arrays.")
    sizes = [len(a) for a in xs]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    x = np.concatenate([np.asarray(a) for a in xs])
    y = np.concatenate([np.asarray(a) for a in ys])
    idx = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(xs))]
    extras = kwargs.pop("extras", None)
    if extras:
        extras = {k: np.concatenate([np.asarray(a) for a in v]) for k, v in extras.items()}
    return from_partition(x, y, idx, extras=extras, **kwargs)
