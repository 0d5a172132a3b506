"""Subject-labelled federated datasets for subject-level DP (Marathe & Kanani, arXiv 2206.03617
v1, Sec. 4; the paper does not say how items map to users, the mapping here is ours).

A *subject* is a person (writer, play character, patient) whose items may sit at several
federation users. Every builder here returns a :class:`SubjectData`: train data as padded
:class:`~jaxfl.data.federated.FederatedData` with ``extras["subject_id"]`` (0..m-1) per item,
a pooled test set, and the per-item subject/user ids for accounting and batch statistics.

Spreading subjects over users uses :func:`jaxfl.data.partition.spread_subjects`, which is our
reading of Sec. 4.2: ``alpha = 1`` puts every item at a uniformly random user (the paper's main
setting: every subject at every user); ``alpha > 1`` is the skewed ("power distribution")
variant, where each subject draws its own random user order and each item goes to user
``pi_a(floor(n * x))`` with ``x ~ Power(alpha)``.

Sources (real data, read from ``JAXFL_DATA_DIR``):

* :func:`shakespeare_by_role`: tiny-Shakespeare split by speaking role (subjects = characters,
  as LEAF does), next-character windows over LEAF's 80-symbol alphabet; a per-role test split.
* :func:`leaf_subjects`: a LEAF JSON split (FEMNIST writers / Shakespeare characters) whose LEAF
  "users" become subjects.
* :func:`mnist_writers`: MNIST images dealt to synthetic writers (FEMNIST stand-in: FEMNIST is not
  available offline) with lognormal writer sizes and a per-writer style (shift and stroke gain).
* :func:`parkinsons_subjects`: UCI Parkinsons telemonitoring, 42 real patients, regression.

Data-only layouts (subject sizes alone, zero features): :func:`layout`,
:func:`femnist_like_layout` (LEAF FEMNIST's writer sizes), :func:`lognormal_layout`.

Example Usage:
  >>> import numpy as np
  >>> x = np.arange(12, dtype=np.float32)[:, None]; y = np.zeros(12, np.int32)
  >>> d = spread(x, y, np.repeat([5, 7, 9], 4), num_users=2, rng=np.random.default_rng(0))
  >>> d.train.num_clients, d.num_subjects, int(d.train.num_examples.sum())
  (2, 3, 12)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxfl import validate
from jaxfl.data import federated, partition, text

SUBJECT_KEY = "subject_id"


class SubjectData(NamedTuple):
    train: federated.FederatedData  # extras["subject_id"]: [users, max_n] int32
    test_x: np.ndarray  # shape=[N_test, ...]
    test_y: np.ndarray  # shape=[N_test, ...]
    subject_ids: np.ndarray  # shape=[N_train], int64: subject of each train item (0..m-1)
    user_ids: np.ndarray  # shape=[N_train], int64: user of each train item
    num_subjects: int
    info: dict


def spread(x, y, subjects, *, num_users: int, rng: np.random.Generator, alpha: float = 1.0,
           test_x=None, test_y=None, info: dict | None = None) -> SubjectData:
    """Spreads labelled items with subject ids over ``num_users`` users (see module docstring).

    Args:
      x, y: train items ``[N, ...]``.
      subjects: ``[N]`` subject of each item (any integers; relabelled 0..m-1 by first sort).
      num_users: federation users n.
      rng: host generator.
      alpha: 1 = uniform spread, > 1 = the skewed power-distribution variant.
      test_x, test_y: pooled test set (default: empty).
      info: extra description stored in ``SubjectData.info``.
    """
    x, y = np.asarray(x), np.asarray(y)
    _, sid = np.unique(np.asarray(subjects), return_inverse=True)
    sid = sid.ravel().astype(np.int64)
    if len(sid) != len(x) or len(y) != len(x):
        raise validate.ShapeError(
            f"Expected equal lengths, got x={len(x)}, y={len(y)}, subjects={len(sid)}.")
    users = partition.spread_subjects(rng, sid, num_users, alpha=alpha)
    groups = partition.indices_by_group(users, num_users)
    train = federated.from_partition(x, y, groups, extras={SUBJECT_KEY: sid.astype(np.int32)},
                                     allow_empty=True)
    tx = np.zeros((0,) + x.shape[1:], x.dtype) if test_x is None else np.asarray(test_x)
    ty = np.zeros((0,) + y.shape[1:], y.dtype) if test_y is None else np.asarray(test_y)
    meta = {"num_users": num_users, "alpha": alpha, **(info or {})}
    return SubjectData(train=train, test_x=tx, test_y=ty, subject_ids=sid, user_ids=users,
                       num_subjects=int(sid.max()) + 1 if sid.size else 0, info=meta)


def _per_subject_split(subjects: np.ndarray, test_fraction: float, rng) -> np.ndarray:
    """Boolean test mask holding out ``test_fraction`` of every subject's items (at least one
    item stays in train)."""
    test = np.zeros(len(subjects), bool)
    if test_fraction <= 0:
        return test
    order = rng.permutation(len(subjects))
    order = order[np.argsort(subjects[order], kind="stable")]
    _, start, counts = np.unique(subjects[order], return_index=True, return_counts=True)
    rank = np.arange(len(order)) - np.repeat(start, counts)
    k = np.minimum(np.floor(counts * test_fraction).astype(int), counts - 1)
    test[order] = rank < np.repeat(k, counts)
    return test


# --------------------------------------------------------------------------------------------
# Shakespeare by speaking role
# --------------------------------------------------------------------------------------------
def shakespeare_by_role(*, num_users: int = 16, rng: np.random.Generator, seq_len: int = 80,
                        stride: int = 20, min_items: int = 10, max_items: int | None = None,
                        max_subjects: int | None = None, test_fraction: float = 0.2,
                        alpha: float = 1.0, path=None, corpus: str | None = None
                        ) -> SubjectData:
    """Tiny-Shakespeare split by role: subjects are characters, items next-character windows.

    Each role's speeches are joined (newline-separated) and cut into windows of ``seq_len``
    characters with the next character as label (LEAF's task; LEAF's 80-symbol alphabet).
    Roles with fewer than ``min_items`` windows are dropped; ``max_items`` caps a role (random
    windows kept); ``max_subjects`` keeps the roles with most text. ``test_fraction`` of every
    role's windows form the test set (LEAF splits within each character too).

    Args:
      num_users: federation users (silos) the roles' items are spread over.
      rng: host generator.
      seq_len, stride: window length and offset between windows.
      min_items, max_items, max_subjects: subject selection (see above).
      test_fraction: per-role held-out fraction.
      alpha: spread exponent (1 = uniform).
      path: directory of ``input.txt`` (default ``$JAXFL_DATA_DIR/shakespeare``).
      corpus: the play text itself (tests); overrides ``path``.
    """
    num_users = validate.positive_int("num_users", num_users)
    min_items = validate.positive_int("min_items", min_items)
    body = corpus if corpus is not None else text.load_tiny_shakespeare(path=path)
    roles = text.speeches_by_role(text.parse_speeches(body))
    vocab = text.CharVocab.leaf()
    windows = []
    for name, speeches in roles.items():  # host loop over roles (data preparation)
        xr, yr = text.next_char_examples(vocab.encode("\n".join(speeches)), seq_len=seq_len,
                                         stride=stride)
        if len(yr) >= min_items:
            windows.append((name, xr, yr))
    windows.sort(key=lambda w: -len(w[2]))
    if max_subjects is not None:
        windows = windows[:validate.positive_int("max_subjects", max_subjects)]
    if not windows:
        raise validate.JaxflValueError("No role has enough text for one subject.")
    xs, ys, ss = [], [], []
    for a, (_, xr, yr) in enumerate(windows):
        keep = np.arange(len(yr))
        if max_items is not None and len(keep) > max_items:
            keep = np.sort(rng.choice(len(keep), size=max_items, replace=False))
        xs.append(xr[keep])
        ys.append(yr[keep])
        ss.append(np.full(len(keep), a))
    x, y, s = np.concatenate(xs), np.concatenate(ys), np.concatenate(ss)
    test = _per_subject_split(s, test_fraction, rng)
    info = {"dataset": "shakespeare_by_role", "roles": [w[0] for w in windows],
            "vocab_size": vocab.size, "seq_len": seq_len, "stride": stride}
    return spread(x[~test], y[~test], s[~test], num_users=num_users, rng=rng, alpha=alpha,
                  test_x=x[test], test_y=y[test], info=info)


# --------------------------------------------------------------------------------------------
# LEAF JSON (FEMNIST / Shakespeare)
# --------------------------------------------------------------------------------------------
def leaf_subjects(train_split, *, num_users: int = 16, rng: np.random.Generator,
                  test_split=None, max_subjects: int | None = None, alpha: float = 1.0,
                  x_transform=None, y_transform=None) -> SubjectData:
    """LEAF users (writers, characters) become subjects spread over ``num_users`` silos.

    Args:
      train_split, test_split: :class:`jaxfl.data.leaf.LeafSplit` (e.g. ``load_femnist``).
      num_users: federation users.
      rng: host generator.
      max_subjects: keep the first LEAF users in file order (the paper: first 3500 writers).
      alpha: spread exponent.
      x_transform, y_transform: optional array maps (e.g. ``leaf.femnist_images``, or a
        character encoder for Shakespeare strings).
    """
    keep = len(train_split.users) if max_subjects is None else min(
        len(train_split.users), validate.positive_int("max_subjects", max_subjects))
    names = train_split.users[:keep]

    def pooled(split, wanted):
        idx = [i for i, u in enumerate(split.users) if u in wanted]
        if not idx:
            return None, None
        x = np.concatenate([split.x[i] for i in idx])
        y = np.concatenate([split.y[i] for i in idx])
        x = x_transform(x) if x_transform else x
        return x, (y_transform(y) if y_transform else y)

    x, y = pooled(train_split, set(names))
    owner = np.repeat(np.arange(keep), [len(train_split.y[i]) for i in range(keep)])
    tx, ty = pooled(test_split, set(names)) if test_split is not None else (None, None)
    return spread(x, y, owner, num_users=num_users, rng=rng, alpha=alpha, test_x=tx,
                  test_y=ty, info={"dataset": "leaf", "subjects": list(names)})


# --------------------------------------------------------------------------------------------
# Data-only layouts (subject sizes alone, for batch statistics and accounting)
# --------------------------------------------------------------------------------------------
def layout(sizes, *, num_users: int = 16, rng: np.random.Generator,
           alpha: float = 1.0) -> SubjectData:
    """A data-only :class:`SubjectData`: ``sizes[j]`` items of subject j (zero features and
    labels) spread over ``num_users`` users by :func:`spread`."""
    s = np.repeat(np.arange(len(sizes)), sizes)
    return spread(np.zeros((len(s), 1), np.float32), np.zeros(len(s), np.int32), s,
                  num_users=num_users, rng=rng, alpha=alpha)


def femnist_like_layout(rng: np.random.Generator, *, num_subjects: int = 3500,
                        mean: float = 163.0, sd: float = 64.0, alpha: float = 1.0,
                        num_users: int = 16) -> SubjectData:
    """Writer sizes N(``mean``, ``sd``^2) rounded and clipped at 5, like LEAF FEMNIST's
    (Marathe & Kanani, Sec. 4.1), as a :func:`layout`."""
    sizes = np.maximum(5, np.round(rng.normal(mean, sd, num_subjects))).astype(int)
    return layout(sizes, num_users=num_users, rng=rng, alpha=alpha)


def lognormal_layout(rng: np.random.Generator, *, num_subjects: int, total: int,
                     sigma_log: float, num_users: int = 16) -> SubjectData:
    """Lognormal(0, ``sigma_log``) shares of ``total`` items (at least one each), spread
    uniformly, as a :func:`layout`."""
    share = rng.lognormal(0, sigma_log, num_subjects)
    sizes = np.maximum(1, np.round(share / share.sum() * total)).astype(int)
    return layout(sizes, num_users=num_users, rng=rng)


# --------------------------------------------------------------------------------------------
# MNIST with synthetic writers (FEMNIST stand-in)
# --------------------------------------------------------------------------------------------
def writer_sizes(num_items: int, num_subjects: int, *, rng: np.random.Generator,
                 sigma_log: float = 0.4, min_items: int = 5) -> np.ndarray:
    """Integer writer sizes summing to ``num_items``: lognormal shares (FEMNIST's writer sizes
    have coefficient of variation ~0.4), every writer at least ``min_items``."""
    m = validate.positive_int("num_subjects", num_subjects)
    if num_items < m * min_items:
        raise validate.JaxflValueError(
            f"{num_items} items cannot give {m} writers >= {min_items} items each.")
    share = rng.lognormal(0.0, sigma_log, size=m)
    extra = num_items - m * min_items
    sizes = min_items + np.floor(share / share.sum() * extra).astype(np.int64)
    sizes[np.argsort(-share)[: num_items - sizes.sum()]] += 1
    return sizes


def _writer_style(images: np.ndarray, writer: np.ndarray, rng) -> np.ndarray:
    """Per-writer style: a fixed translation in {-2..2}^2 and a stroke gain in [0.7, 1.3]."""
    m = int(writer.max()) + 1
    shift = rng.integers(-2, 3, size=(m, 2))
    gain = rng.uniform(0.7, 1.3, size=m).astype(np.float32)
    out = np.empty_like(images)
    for dy in range(-2, 3):  # 25 shift classes, vectorised within each
        for dx in range(-2, 3):
            rows = np.flatnonzero((shift[writer, 0] == dy) & (shift[writer, 1] == dx))
            if rows.size:
                out[rows] = np.roll(images[rows], (dy, dx), axis=(1, 2))
    return np.clip(out * gain[writer].reshape(-1, *([1] * (images.ndim - 1))), 0.0, 1.0)


def mnist_writers(*, num_users: int = 16, num_subjects: int = 350, rng: np.random.Generator,
                  num_train: int | None = None, num_test: int | None = None,
                  alpha: float = 1.0, style: bool = True, path=None,
                  images=None) -> SubjectData:
    """MNIST with synthetic writers as subjects (FEMNIST is not available offline).

    Train images are shuffled and dealt to ``num_subjects`` writers with lognormal sizes
    (:func:`writer_sizes`); with ``style`` every writer gets a fixed shift and stroke gain, so
    a writer's items are correlated like a real writer's. Images are ``[N, 28, 28, 1]`` in
    [0, 1]. ``images`` = ``((x_train, y_train), (x_test, y_test))`` bypasses the files (tests).
    """
    if images is None:
        from jaxfl.data import idx
        (xtr, ytr), (xte, yte) = [idx.load_mnist(s, path=path) for s in ("train", "test")]
    else:
        (xtr, ytr), (xte, yte) = images
    order = rng.permutation(len(xtr))[:num_train]
    xtr, ytr = np.asarray(xtr)[order], np.asarray(ytr)[order]
    to_float = lambda a: (a.astype(np.float32) / (255.0 if a.dtype == np.uint8 else 1.0)
                          ).reshape(len(a), 28, 28, 1)
    xtr = to_float(xtr)
    writer = np.repeat(np.arange(num_subjects), writer_sizes(len(xtr), num_subjects, rng=rng))
    if style:
        xtr = _writer_style(xtr, writer, rng)
    te = rng.permutation(len(xte))[:num_test]
    return spread(xtr, np.asarray(ytr, np.int32), writer, num_users=num_users, rng=rng,
                  alpha=alpha, test_x=to_float(np.asarray(xte)[te]),
                  test_y=np.asarray(yte, np.int32)[te],
                  info={"dataset": "mnist_writers", "style": style})


# --------------------------------------------------------------------------------------------
# Parkinsons telemonitoring (42 real subjects)
# --------------------------------------------------------------------------------------------
def parkinsons_subjects(*, num_users: int = 4, rng: np.random.Generator,
                        target: str = "motor_UPDRS", test_fraction: float = 0.2,
                        alpha: float = 1.0, path=None, table=None) -> SubjectData:
    """UCI Parkinsons telemonitoring: recordings of 42 patients (real subject ids) spread over
    users; regression of ``target`` from the 16 voice measures, features standardised with
    train statistics, target centred and scaled by its train std (info keeps both)."""
    if table is None:
        from jaxfl.data import tabular
        table = tabular.load_parkinsons(path=path, target=target)
    x, y, s = np.asarray(table.x, np.float64), np.asarray(table.y, np.float64), table.groups
    test = _per_subject_split(np.asarray(s), test_fraction, rng)
    mu, sd = x[~test].mean(0), x[~test].std(0) + 1e-12
    ym, ys = y[~test].mean(), y[~test].std() + 1e-12
    xz = ((x - mu) / sd).astype(np.float32)
    yz = ((y - ym) / ys).astype(np.float32)
    return spread(xz[~test], yz[~test], s[~test], num_users=num_users, rng=rng, alpha=alpha,
                  test_x=xz[test], test_y=yz[test],
                  info={"dataset": "parkinsons", "target": target, "target_mean": float(ym),
                        "target_std": float(ys)})
