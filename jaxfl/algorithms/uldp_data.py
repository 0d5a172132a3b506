"""Data layouts of ULDP-FL (Kato et al., PVLDB 2024): records owned by users, held by silos.

* :class:`UldpData` (host, numpy; defined in :mod:`jaxfl.data.uldp_records` and re-exported
  here): every training record with its silo and its user; the histogram ``n[s, u]`` (records
  of user u in silo s) and the weights of Sec. 2.5 / eq. (3).
* :class:`PairData` (device pytree): the flattened (silo, user) pairs with ``n[s, u] > 0``,
  bucketed by record count (lengths 2^e and 1.5 * 2^e) so one ``vmap`` trains every pair with
  little padding; each pair is a row of record indices into the shared record array, whose
  extra last row is all zeros (the padding target).
* :class:`SiloData` (device pytree): the same records grouped by silo (for DEFAULT, NAIVE,
  SILO-LEVEL-DP, GROUP and RECORD-LEVEL-DP).
* :func:`bound_histogram` / :func:`bound_records`: the ULDP-GROUP flags (Algorithm 2; the
  authors' round-robin bounding with a global silo pointer), built without privacy on purpose
  (a baseline; the paper's Sec. 3.3 builds them without privacy too).

Example Usage:
  >>> import numpy as np
  >>> d = UldpData(x=np.zeros((5, 2), np.float32), y=np.zeros(5, np.int32),
  ...              silo=np.array([0, 0, 1, 1, 1]), user=np.array([0, 1, 1, 1, 2]),
  ...              num_silos=2, num_users=3)
  >>> histogram(d).tolist()
  [[1, 1, 0], [0, 2, 1]]
  >>> optimal_weights(histogram(d)).tolist()
  [[1.0, 0.3333333333333333, 0.0], [0.0, 0.6666666666666666, 1.0]]
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import layout, validate
from jaxfl.data.uldp_records import UldpData, from_silos, histogram  # noqa: F401  (re-exported)


def uniform_weights(hist: np.ndarray) -> np.ndarray:
    """The paper's default w[s, u] = 1/|S| for every pair (Sec. 3.4, Alg. 3)."""
    hist = np.asarray(hist)
    return np.full(hist.shape, 1.0 / hist.shape[0])


def optimal_weights(hist: np.ndarray) -> np.ndarray:
    """ULDP-AVG-w weights w[s, u] = n[s, u] / N_u (eq. 3); 0 for users without records."""
    hist = np.asarray(hist, dtype=np.float64)
    totals = hist.sum(axis=0, keepdims=True)
    return np.divide(hist, totals, out=np.zeros_like(hist), where=totals > 0)


def sample_users(rng: np.random.Generator, num_users: int, rate: float) -> np.ndarray:
    """Algorithm 4: every user independently with probability q (server-side host RNG)."""
    q = validate.probability("sampling_rate", rate)
    if q == 1.0:
        return np.ones(num_users, np.float32)
    return (rng.random(num_users) < q).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# Device layouts.
# ----------------------------------------------------------------------------------------------

@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class PairBucket:
    """Pairs whose record count fits ``length``; axis 0 is padded to a multiple of ``chunk``."""

    index: jax.Array  # shape=[P, length], dtype=int32: record rows (N = the zero row)
    mask: jax.Array  # shape=[P, length], dtype=bool
    silo: jax.Array  # shape=[P], dtype=int32
    user: jax.Array  # shape=[P], dtype=int32
    count: jax.Array  # shape=[P], dtype=int32 (0 for padding pairs)
    pair_id: jax.Array  # shape=[P], dtype=int32: silo * U + user (key derivation)
    chunk: int = dataclasses.field(metadata=dict(static=True), default=1)
    # devices the chunks are split over (P is a multiple of chunk * shards)
    shards: int = dataclasses.field(metadata=dict(static=True), default=1)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class PairData:
    """All (silo, user) pairs of a :class:`UldpData`, bucketed (see module docstring)."""

    x: jax.Array  # shape=[N + 1, *feature_shape] (last row zeros)
    y: jax.Array  # shape=[N + 1, *label_shape]
    buckets: tuple
    num_silos: int = dataclasses.field(metadata=dict(static=True), default=1)
    num_users: int = dataclasses.field(metadata=dict(static=True), default=1)

    def to_device(self) -> PairData:
        return jax.tree.map(jnp.asarray, self)

    def validate(self, *, num_classes: int | None = None) -> PairData:
        """The records finite and labelled in ``[0, num_classes)``, every pair's silo and user
        in range (see :func:`_check_records`); returns ``self``."""
        for i, b in enumerate(self.buckets):
            for what, ids, hi in (("silo", b.silo, self.num_silos),
                                  ("user", b.user, self.num_users)):
                ids = np.asarray(ids)[np.asarray(b.count) > 0]
                if ids.size and (ids.min() < 0 or ids.max() >= hi):
                    raise validate.ShapeError(
                        f"Expected {what} ids in [0, {hi}) (num_{what}s={hi}), got {what} "
                        f"{int(ids.max() if ids.max() >= hi else ids.min())} in bucket {i}.")
        _check_records(self.x, self.y, num_classes)
        return self

    def identity_arrays(self) -> dict:
        """What the pairs are, without how they are laid out: the records and, for every real
        pair in ``pair_id`` order, its silo, user, count and sorted record rows.

        The buckets, their padding, chunks and shards are the engine's choice per backend and
        device count (:func:`pair_data`), so a run's privacy ledger identifies its data by these
        arrays (:func:`jaxfl.ledger.data_fingerprint`): a run started on a GPU resumes on a CPU.
        """
        fields = {k: [] for k in ("pair_id", "silo", "user", "count")}
        n, flat = [], []
        for b in self.buckets:  # a handful of static length buckets
            real = np.asarray(b.count) > 0
            for k in fields:
                fields[k].append(np.asarray(getattr(b, k))[real].astype(np.int64))
            mask = np.asarray(b.mask)[real]
            # each pair's record rows sorted first, its padding (the largest int) last
            rows = np.sort(np.where(mask, np.asarray(b.index)[real].astype(np.int64),
                                    np.iinfo(np.int64).max), axis=1)
            n.append(mask.sum(axis=1))
            flat.append(rows[np.arange(rows.shape[1]) < n[-1][:, None]])  # pair after pair
        cat = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in fields.items()}
        order = np.argsort(cat["pair_id"], kind="stable")
        n = np.concatenate(n).astype(np.int64) if n else np.zeros(0, np.int64)
        records = np.concatenate(flat) if flat else np.zeros(0, np.int64)
        # the records of the pairs in pair_id order: each pair's slice of ``records``
        sizes = n[order]
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        take = np.repeat((np.cumsum(n) - n)[order], sizes) + within
        return {"x": np.asarray(self.x), "y": np.asarray(self.y),
                "shape": np.array([self.num_silos, self.num_users], np.int64),
                **{k: v[order] for k, v in cat.items()}, "records": records[take]}

    def layout_arrays(self) -> tuple:
        """How the pairs are laid out (the buckets; the records are in
        :meth:`identity_arrays`): a ledger's ``platform`` (:func:`jaxfl.ledger.platform`)."""
        return self.buckets

    def counts(self) -> jax.Array:
        """``N_u`` for every user (segment sum of pair counts)."""
        total = jnp.zeros(self.num_users, jnp.float32)
        for b in self.buckets:
            total = total + jax.ops.segment_sum(b.count.astype(jnp.float32), b.user,
                                                num_segments=self.num_users)
        return total


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SiloData:
    """Records grouped by silo: ``index[s]`` lists silo s's records (N = the zero row)."""

    x: jax.Array  # shape=[N + 1, *feature_shape]
    y: jax.Array  # shape=[N + 1, *label_shape]
    index: jax.Array  # shape=[S, L], dtype=int32
    mask: jax.Array  # shape=[S, L], dtype=bool
    count: jax.Array  # shape=[S], dtype=int32

    @property
    def num_silos(self) -> int:
        return int(self.index.shape[0])

    def validate(self, *, num_classes: int | None = None) -> SiloData:
        """Shapes, counts against the mask, finite records with labels in
        ``[0, num_classes)`` (see :func:`_check_records`); returns ``self``."""
        index, mask = np.asarray(self.index), np.asarray(self.mask)
        if index.shape != mask.shape or np.shape(self.count) != index.shape[:1]:
            raise validate.ShapeError(
                f"Expected index and mask of one shape [silos, L] and count [silos], got "
                f"{index.shape}, {mask.shape} and {np.shape(self.count)}.")
        if not np.array_equal(mask.sum(axis=1), np.asarray(self.count)):
            raise validate.JaxflValueError(
                f"Expected count[s] to equal the records mask marks in silo s, got count "
                f"{np.asarray(self.count).tolist()} and mask sums {mask.sum(axis=1).tolist()}.")
        _check_records(self.x, self.y, num_classes)
        return self

    def to_device(self) -> SiloData:
        return jax.tree.map(jnp.asarray, self)


def _check_records(x, y, num_classes: int | None) -> None:
    """Records ``[N + 1, ...]`` (the last row the zero padding target): finite features and,
    with ``num_classes``, integer labels in ``[0, num_classes)``."""
    for name, arr in (("x", x), ("y", y)):
        arr = np.asarray(arr)
        if np.issubdtype(arr.dtype, np.inexact) and not np.isfinite(arr).all():
            row = int(np.flatnonzero(~np.isfinite(arr.reshape(len(arr), -1)).all(axis=1))[0])
            raise validate.JaxflValueError(
                f"Expected finite {name}, found NaN or inf in record {row}.")
    if num_classes is not None:
        y = np.asarray(y)[:-1]
        bad = (y < 0) | (y >= num_classes)
        if np.issubdtype(y.dtype, np.floating):
            bad |= y != np.round(y)
        if bad.any():
            raise validate.JaxflValueError(
                f"Expected integer labels in [0, {num_classes}) (the model has {num_classes} "
                f"classes), got {int(bad.sum())} label(s) out of range (min "
                f"{y.min().item()!r}, max {y.max().item()!r}).")


def _with_zero_row(a):
    a = np.asarray(a)
    return np.concatenate([a, np.zeros((1, *a.shape[1:]), a.dtype)])


def _pad_rows(groups: list[np.ndarray], length: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    index = np.full((len(groups), length), pad, np.int32)
    mask = np.zeros((len(groups), length), bool)
    for i, g in enumerate(groups):
        index[i, : len(g)] = g
        mask[i, : len(g)] = True
    return index, mask


def silo_data(data: UldpData, *, length: int | None = None) -> SiloData:
    """Groups the records by silo, keeping each silo's record order."""
    data.validate()
    n = len(data.x)
    groups = [np.flatnonzero(data.silo == s) for s in range(data.num_silos)]
    longest = max(1, max(len(g) for g in groups))
    index, mask = _pad_rows(groups, length or longest, n)
    return SiloData(x=_with_zero_row(data.x), y=_with_zero_row(data.y), index=index, mask=mask,
                    count=np.array([len(g) for g in groups], np.int32))


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def bucket_length(n: int, min_length: int = 4) -> int:
    """The padded length of a unit with ``n`` records: the next of 2^e and 1.5 * 2^e (at
    least ``min_length``), so padding wastes at most a third of a unit and about a sixth on
    average (powers of two alone waste up to half: 130 records padded to 256).

    >>> [bucket_length(n) for n in (3, 5, 7, 12, 13, 100, 130, 200)]
    [4, 6, 8, 12, 16, 128, 192, 256]
    """
    n = max(int(n), int(min_length))
    p = _next_pow2(n)
    return max(int(min_length), 3 * p // 4) if p >= 4 and n <= 3 * p // 4 else p


def _chunk(pairs: int, length: int, max_rows: int, cap: int | None) -> int:
    """Pairs per chunk: at most ``max_rows`` records, ``cap`` pairs and ``pairs``."""
    chunk = int(max(1, min(pairs, max_rows // length)))
    return chunk if cap is None else min(chunk, validate.positive_int("max_pairs_per_chunk", cap))


def bucket_lengths(counts, *, waste: float | None = None,
                   rows: int | None = None) -> np.ndarray:
    """The engine's padded length of every pair (``"auto"`` buckets of :func:`pair_data`).

    Each pair of ``counts[i]`` records starts in its own :func:`bucket_length` (from 1: no
    floor, so a pair of one record is not padded to 8). Then the buckets that hold few pairs
    are merged into the next longer bucket, cheapest first (the padded rows a merge adds), while
    all merges together add at most ``waste`` (default :data:`jaxfl.layout.BUCKET_WASTE`) of
    the real records or ``rows`` padded rows (default :data:`jaxfl.layout.BUCKET_ROWS`),
    whichever is more: every bucket is one more compiled trainer and one more loop, worth it
    only where it saves padding. The layout changes only the order of float additions (a pair's
    shuffle and dropout draws do not depend on its padding: JAX's partitionable threefry draws
    element i of a shape the same for every length).

    >>> bucket_lengths([1] * 400 + [2] * 9 + [3]).tolist() == [1] * 400 + [3] * 10
    True
    """
    counts = np.asarray(counts, np.int64)
    waste = layout.BUCKET_WASTE if waste is None else float(waste)
    lengths = np.array([bucket_length(c, 1) for c in counts], np.int64)
    grid, pairs = np.unique(lengths, return_counts=True)
    grid, pairs = grid.tolist(), pairs.tolist()
    rows = layout.BUCKET_ROWS if rows is None else int(rows)
    allowed, spent = max(waste * float(counts.sum()), float(rows)), 0.0
    merged = {g: g for g in grid}
    while len(grid) > 1:
        costs = [pairs[i] * (grid[i + 1] - grid[i]) for i in range(len(grid) - 1)]
        i = int(np.argmin(costs))
        if spent + costs[i] > allowed:
            break
        spent += costs[i]
        for g, to in merged.items():
            if to == grid[i]:
                merged[g] = grid[i + 1]
        pairs[i + 1] += pairs[i]
        del grid[i], pairs[i]
    return np.array([merged[int(v)] for v in lengths], np.int64)


# Records a chunk of pairs gathers at most: on CPU, and for explicit pair layouts on any backend
# (the "auto" layout on an accelerator has no such cap: one vmap of a bucket's pairs, narrowed
# only by the device's memory budget, jaxfl.layout.fit, when they do not fit).
MAX_ROWS_PER_CHUNK = 16384


def pair_data(data: UldpData, *, min_length: int | str = "auto",
              max_rows_per_chunk: int | str = "auto",
              max_pairs_per_chunk: int | str | None = "auto",
              unit_flops: float | None = None, shards: int | str = "auto",
              backend: str | None = None) -> PairData:
    """Flattens the (silo, user) pairs into length buckets (:func:`bucket_length`).

    Args:
      data: the records.
      min_length: smallest bucket length (pairs with fewer records share it), or ``"auto"``
        (default): the engine's buckets, :func:`bucket_lengths` (no floor; small buckets
        merged while that adds little padding).
      max_rows_per_chunk: a bucket is processed ``chunk`` pairs at a time with
        ``chunk * length <= max_rows_per_chunk`` (bounds memory of the vmapped training).
        ``"auto"`` (default): :data:`MAX_ROWS_PER_CHUNK`, except for the ``"auto"`` pair layout
        on an accelerator, which has no cap (every bucket one vmap, narrowed to the device's
        memory by :func:`jaxfl.layout.fit` when it does not fit): the proxies of
        ``experiments.bench.proxies`` count half the kernel launches per round for ULDP-AVG
        on all of MNIST (100 users: 7,485 against 16,323) at the same FLOPs and bytes
        (docs/scale.md, "Proxies without a GPU").
      max_pairs_per_chunk: optional cap on ``chunk``. Chunks run one after the other
        (``lax.scan``) and the pairs of a chunk in parallel (``vmap``). ``"auto"``
        (default): the engine's layout policy for pair axes (:mod:`jaxfl.layout`): on
        accelerators no cap; on CPU chunks of 1 per device for conv-sized models (2 on a single
        device; more for pairs shorter than 8 records, :data:`jaxfl.layout.CPU_HEAVY_ROWS`),
        and for small models chunks whose records fit :data:`jaxfl.layout.CPU_CHUNK_BYTES`
        (:func:`jaxfl.layout.chunk_rows`); None: no cap.
        The layout changes only the order of float additions, not the result.
      unit_flops: forward FLOPs per example of the model the pairs train
        (:func:`jaxfl.models.forward_flops`), read by the ``"auto"`` policy.
      shards: devices each bucket's chunks are split over (:func:`jaxfl.layout.unit_shards`;
        ``"auto"``: every local device of a single-process run).
      backend: whose ``"auto"`` layout to build (default: JAX's default backend), e.g.
        ``"gpu"`` on a CPU to count the accelerator's program (``experiments.bench.proxies``).
    """
    shards = layout.unit_shards(shards)
    data.validate()
    backend = backend or jax.default_backend()
    if max_rows_per_chunk == layout.AUTO:
        accel_auto = backend != "cpu" and max_pairs_per_chunk == layout.AUTO
        max_rows_per_chunk = np.iinfo(np.int64).max if accel_auto else MAX_ROWS_PER_CHUNK
    max_rows_per_chunk = validate.positive_int("max_rows_per_chunk", max_rows_per_chunk)
    if max_pairs_per_chunk == layout.AUTO:  # cache-sized chunks of records on CPU
        rows = layout.chunk_rows(np.asarray(data.x[:1]).nbytes, backend=backend)
        max_rows_per_chunk = min(max_rows_per_chunk, rows or max_rows_per_chunk)

    def caps(d: int, length: int):
        return layout.resolve(max_pairs_per_chunk, "pairs", unit_flops=unit_flops, shards=d,
                              length=length, backend=backend)

    n = len(data.x)
    flat = np.asarray(data.silo, np.int64) * data.num_users + np.asarray(data.user, np.int64)
    order = np.argsort(flat, kind="stable")  # records of a pair keep their silo order
    pair_ids, starts, counts = np.unique(flat[order], return_index=True, return_counts=True)
    if min_length == layout.AUTO:
        lengths = bucket_lengths(counts)
    else:
        min_length = validate.positive_int("min_length", min_length)
        lengths = [bucket_length(c, min_length) for c in counts]
    buckets = []
    for length in sorted(set(int(v) for v in lengths)):
        sel = np.flatnonzero(np.asarray(lengths) == length)
        # Split over devices only a bucket that one device would run in several chunks.
        one = _chunk(len(sel), length, max_rows_per_chunk, caps(1, length))
        split = shards if -(-len(sel) // one) >= shards else 1
        per_shard = -(-len(sel) // split)
        chunk = _chunk(per_shard, length, max_rows_per_chunk, caps(split, length))
        # as many chunks as the cap needs, evened out: fewer all-padding pairs to compute
        chunk = -(-per_shard // -(-per_shard // chunk))
        total = -(-per_shard // chunk) * chunk * split
        groups = [order[starts[i]:starts[i] + counts[i]] for i in sel]
        groups += [np.zeros(0, np.int64)] * (total - len(sel))
        index, mask = _pad_rows(groups, length, n)
        pid = np.zeros(total, np.int64)
        pid[: len(sel)] = pair_ids[sel]
        cnt = np.zeros(total, np.int32)
        cnt[: len(sel)] = counts[sel]
        buckets.append(PairBucket(index=index, mask=mask,
                                  silo=(pid // data.num_users).astype(np.int32),
                                  user=(pid % data.num_users).astype(np.int32), count=cnt,
                                  pair_id=pid.astype(np.int32), chunk=chunk, shards=split))
    return PairData(x=_with_zero_row(data.x), y=_with_zero_row(data.y), buckets=tuple(buckets),
                    num_silos=data.num_silos, num_users=data.num_users)


# ----------------------------------------------------------------------------------------------
# ULDP-GROUP: group size and round-robin bounding flags (Algorithm 2).
# ----------------------------------------------------------------------------------------------

def group_size(hist: np.ndarray, rule) -> int:
    """k for ULDP-GROUP-k: an int, ``"max"`` (max_u N_u) or ``"median"`` (int(median_u N_u)),
    over users with at least one record."""
    totals = np.asarray(hist).sum(axis=0)
    totals = totals[totals > 0]
    if rule in ("max", "median") and totals.size == 0:
        raise validate.JaxflValueError(
            f"Expected at least one user with records for group_size={rule!r}, got a "
            f"histogram of {np.asarray(hist).shape[-1] if np.ndim(hist) else 0} users with no "
            f"record.")
    if rule == "max":
        return int(totals.max())
    if rule == "median":
        return max(1, int(np.median(totals)))
    return validate.positive_int("group_size", rule)


POINTERS = ("global", "per_user")


def bound_histogram(hist: list[dict], k: int, *, min_unit: int = 1,
                    pointer: str = "global") -> list[dict]:
    """The ULDP-GROUP flags: per-silo quotas capping every user near k records in total.

    Users are visited in the insertion order of the merged histogram (silo 0's users first,
    then users first seen in silo 1, ...). A silo pointer r moves round-robin; while a user's
    kept count is below both k and N_u, silo r grants ``min_unit`` more records if the user
    still has records there beyond its quota.

    ``pointer="global"`` is the authors' code: r is never reset, so which silos keep a user's
    records depends on every user visited before. Removing one user then moves other users'
    kept records between silos, and no group size bounds how many records of the bounded
    silos change: group privacy over k records does not hold. ``pointer="per_user"`` starts r
    at silo ``u mod |S|`` for every user u (spreading users over silos as the round robin
    does), so a user's quotas are a function of that user's own counts and
    removing the user removes at most k kept records (what the group conversion needs).

    Args:
      hist: per silo an insertion-ordered ``{user: count}``.
      k: group size.
      min_unit: records granted per visit (2 for TcgaBrca, whose Cox loss needs pairs).
      pointer: ``"global"`` (the authors') or ``"per_user"`` (sound for group privacy).

    Returns:
      Per silo ``{user: quota}``; a silo keeps the first ``quota`` records of each user.
    """
    k = validate.positive_int("group_size", k)
    m = validate.positive_int("min_unit", min_unit)
    validate.one_of("pointer", pointer, POINTERS)
    num_silos = len(hist)
    users: dict = {}
    for h in hist:
        for u, c in h.items():
            users[u] = users.get(u, 0) + int(c)
    quota: list[dict] = [{} for _ in range(num_silos)]
    r = 0
    for u, total in users.items():
        kept = 0
        if pointer == "per_user":
            r = int(u) % num_silos
        while kept < k and kept < total:
            have = hist[r].get(u, 0)
            if have - quota[r].get(u, 0) > 0:
                quota[r][u] = quota[r].get(u, 0) + m
                kept += m
            r = (r + 1) % num_silos
    return quota


def bound_records(data: UldpData, k: int, *, min_unit: int = 1,
                  pointer: str = "global") -> tuple[UldpData, np.ndarray]:
    """Applies :func:`bound_histogram` (with its ``pointer``) to the records. Each silo's
    histogram lists its users in increasing id order (this reproduces every GROUP epsilon of
    the reference table (tests/accounting/uldp_test.py) with the global pointer, including the
    aborted TcgaBrca run); within a (silo, user) pair the first records in the silo's order are
    kept. Returns the kept data and the boolean keep mask ``[N]``.

    Raises:
      JaxflValueError: a silo keeps no record (the authors' run aborts in that case).
    """
    data.validate()
    per_silo = []
    for s in range(data.num_silos):
        users_s, counts = np.unique(np.asarray(data.user)[np.asarray(data.silo) == s],
                                    return_counts=True)
        per_silo.append(dict(zip(users_s.tolist(), counts.tolist(), strict=True)))
    quota = bound_histogram(per_silo, k, min_unit=min_unit, pointer=pointer)
    keep = np.zeros(len(data.x), bool)
    seen: dict = {}
    for i, (s, u) in enumerate(zip(np.asarray(data.silo).tolist(), np.asarray(data.user).tolist(),
                                   strict=True)):
        c = seen.get((s, u), 0)
        if c < quota[s].get(u, 0):
            keep[i] = True
        seen[(s, u)] = c + 1
    kept = data.subset(keep)
    sizes = np.bincount(kept.silo, minlength=data.num_silos)
    if np.any(sizes == 0):
        raise validate.JaxflValueError(
            f"ULDP-GROUP-{k} leaves silos {np.flatnonzero(sizes == 0).tolist()} empty.")
    return kept, keep
