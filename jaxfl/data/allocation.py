"""ULDP-FL's record -> user -> silo allocation (Kato et al. 2023, Sec. 5.1;
the paper only names the distributions: the steps below follow the authors' code).

In ULDP-FL a *user* (the unit of privacy) owns records spread over *silos* (the FL clients).
These functions reproduce the paper's synthetic allocations step by step:

* :func:`uldp_users_of_records` (Creditcard, MNIST): ``"uniform"`` deals
  ``ceil(N/U)`` copies of every user id, shuffled and truncated to N (nearly balanced: a
  user's count is ``ceil(N/U)`` minus its copies among the ``U ceil(N/U) - N`` dropped ones,
  so "ceil or ceil - 1" records per user holds only when ``U`` divides ``N`` or few are
  dropped); ``"zipf"`` draws each record's user i.i.d. from bounded Zipf(alpha) over users 1..U
  (``p(i) ~ i^-alpha``, alpha = 0.5 in the paper; users may get no record). With
  ``labels_per_user`` set (the ``*-noniid`` variants, MNIST, 2 labels) each user's count
  (taken before truncation, so ``ceil(N/U)`` each under ``"uniform"``, as in the paper's
  code) is then re-dealt from per-label shuffled pools of at most ``labels_per_user`` labels;
  records never re-dealt default to user 0 (as in the paper's code, which can make user 0
  large).
* :func:`uldp_silos_of_records`: ``"uniform"`` shuffles the records and deals them to silos
  round-robin (silo sizes differ by at most one, independent of users); ``"zipf"`` gives each
  user a random order of the silos and draws each of its records' silo from bounded
  Zipf(alpha = 2.0) over that order (top weight 0.683 for 5 silos).
* :func:`uldp_users_in_silos` (HeartDisease, TcgaBrca, whose silo of every record is fixed by
  FLamby): assigns a user to every record position of every silo. ``min_records=1`` is the
  Heart rule (uniform: i.i.d. uniform user per record; zipf: every user gets one record, the
  other ``N - U`` are Zipf-drawn, each user picks a main silo uniformly and sends each record
  there with probability 0.8, else to each other silo with probability ``0.2/(S-1)``; a full
  silo passes the record to the next silo cyclically). ``min_records=2`` is the TCGA rule
  (uniform: users drawn per *pair* of records, an odd leftover going to the last drawn user;
  zipf: two guaranteed records per user, and records that land alone in a silo are moved to
  one of the user's silos holding two or more; if none does, one lone silo is promoted and
  one is left alone). Each silo's list is finally shuffled, to be attached positionally.

Randomness: pass a ``np.random.Generator`` (the jaxfl default). These functions also accept a
legacy ``np.random.RandomState`` and then make the same sequence of ``permutation`` /
``shuffle`` / ``choice`` calls as the paper's code, so ``RandomState(seed)`` reproduces the
paper's allocations (its seeds 0, 1, 3, 6, 10) -- except for the non-IID re-deal, whose label pools
the paper builds with an unstable sort (platform-dependent order); here pools start in index order.

Example Usage:
  >>> rng = np.random.default_rng(0)
  >>> users = uldp_users_of_records(rng, 10, 3)
  >>> np.bincount(users).tolist()
  [4, 3, 3]
"""

from __future__ import annotations

import math

import numpy as np

from jaxfl import validate

MAIN_SILO_PROBABILITY = 0.8
_RNGS = (np.random.Generator, np.random.RandomState)


def _rng(rng):
    if not isinstance(rng, _RNGS):
        raise validate.JaxflValueError(
            f"Expected rng to be a np.random.Generator (or a legacy RandomState to reproduce "
            f"the paper's draws), got {type(rng).__name__}.")
    return rng


def _zipf_weights(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Support 1..n and bounded Zipf probabilities ``i^-alpha / sum``."""
    support = np.arange(1, n + 1)
    weights = support ** (-alpha)
    weights /= weights.sum()
    return support, weights


def _distribution(distribution: str, alpha) -> float | None:
    validate.one_of("distribution", distribution, ("uniform", "zipf"))
    if distribution == "zipf":
        return validate.positive("alpha", alpha, validate.JaxflValueError)
    return None


def uldp_users_of_records(rng, num_records: int, num_users: int, *,
                          distribution: str = "uniform", alpha: float = 0.5, labels=None,
                          labels_per_user: int | None = None) -> np.ndarray:
    """The user of every record (first step for Creditcard/MNIST).

    Args:
      rng: ``np.random.Generator`` (or ``RandomState`` for paper-identical draws).
      num_records: N.
      num_users: U.
      distribution: ``"uniform"`` (balanced) or ``"zipf"`` (i.i.d. bounded Zipf).
      alpha: Zipf exponent over users (paper: 0.5).
      labels: int ``[N]`` labels, needed with ``labels_per_user``.
      labels_per_user: if set, the non-IID re-deal (paper: 2 labels per user).

    Returns:
      int64 ``[N]`` user ids in ``[0, U)``.
    """
    rng = _rng(rng)
    num_records = validate.positive_int("num_records", num_records)
    num_users = validate.positive_int("num_users", num_users)
    alpha = _distribution(distribution, alpha)
    if distribution == "uniform":
        dealt = np.tile(np.arange(num_users), math.ceil(num_records / num_users))
        dealt = rng.permutation(dealt)
    else:
        support, weights = _zipf_weights(num_users, alpha)
        dealt = rng.choice(support, size=num_records, replace=True, p=weights) - 1
    users = np.asarray(dealt[:num_records], dtype=np.int64)
    if labels_per_user is None:
        return users
    labels_per_user = validate.positive_int("labels_per_user", labels_per_user)
    labels = np.asarray(labels)
    if labels.shape != (num_records,) or not np.issubdtype(labels.dtype, np.integer):
        raise validate.ShapeError(
            f"Expected integer labels of shape [{num_records}], got {labels.dtype} {labels.shape}.")
    # The per-user counts come from the untruncated deal (ceil(N/U) each when uniform), as
    # in the paper's code.
    return _redeal_by_label(rng, np.asarray(dealt), labels, labels_per_user)


def _redeal_by_label(rng, dealt: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """The ``*-noniid`` re-deal: each user's count taken from <= k label pools."""
    present, counts = np.unique(dealt, return_counts=True)
    available = np.unique(labels)
    pools = {int(c): np.flatnonzero(labels == c) for c in available}
    for pool in pools.values():
        rng.shuffle(pool)
    cursor = dict.fromkeys(pools, 0)
    out = np.zeros(len(labels), dtype=np.int64)  # never re-dealt -> user 0
    for user, count in zip(present.tolist(), counts.tolist(), strict=True):
        if len(available) == 0:
            break  # every pool exhausted; the rest stays with user 0
        picked = rng.choice(available, k, replace=False) if len(available) > k else available
        # A Python set, iterated in set order, as the paper's code does.
        chosen = set(int(c) for c in picked)
        share = int(np.round(count / len(chosen)))
        for label in chosen:
            take = pools[label][cursor[label]:cursor[label] + share]
            if len(take) == share:
                out[take] = user
                cursor[label] += share
                continue
            if len(take) > 0.5 * share:  # short, but more than half: use it, retire the label
                out[take] = user
                available = available[available != label]
                continue
            for other in available.tolist():  # far short: the first label that can serve
                alt = pools[other][cursor[other]:cursor[other] + share]
                if len(alt) == share:
                    out[alt] = user
                    cursor[other] += share
                    break
                if len(alt) > 0.5 * share:
                    out[alt] = user
                    available = available[available != other]
                    break
            else:  # nothing can serve: take the short pool anyway and retire it
                out[take] = user
                available = available[available != label]
    return out


def uldp_silos_of_records(rng, users_of_records, num_silos: int, *,
                          distribution: str = "uniform", alpha: float = 2.0,
                          num_users: int | None = None) -> list[np.ndarray]:
    """The records of every silo (second step for Creditcard/MNIST).

    Args:
      rng: ``np.random.Generator`` (or ``RandomState`` for paper-identical draws).
      users_of_records: int ``[N]`` from :func:`uldp_users_of_records`.
      num_silos: S.
      distribution: ``"uniform"`` (round-robin over shuffled records) or ``"zipf"``
        (per-user shuffled silo order, Zipf(alpha) over it).
      alpha: Zipf exponent over silos (paper: 2.0).
      num_users: U (default ``max user id + 1``); users are visited in id order 0..U-1.

    Returns:
      ``num_silos`` arrays of record indices, in allocation order (not sorted); pass them to
      :func:`jaxfl.data.federated.from_partition` with ``extras={"user_id": users}``.
    """
    rng = _rng(rng)
    users = np.asarray(users_of_records)
    if users.ndim != 1 or not np.issubdtype(users.dtype, np.integer) or users.size == 0:
        raise validate.ShapeError("Expected a non-empty integer users_of_records of shape [N].")
    num_silos = validate.positive_int("num_silos", num_silos)
    alpha = _distribution(distribution, alpha)
    if distribution == "uniform":
        shuffled = rng.permutation(np.arange(len(users)))
        return [shuffled[s::num_silos] for s in range(num_silos)]
    num_users = int(users.max()) + 1 if num_users is None else validate.positive_int(
        "num_users", num_users)
    if users.min() < 0 or users.max() >= num_users:
        raise validate.JaxflValueError(f"Expected user ids in [0, {num_users}).")
    order = np.argsort(users, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(users, minlength=num_users))])
    silos: list[list[np.ndarray]] = [[] for _ in range(num_silos)]
    _, weights = _zipf_weights(num_silos, alpha)
    for u in range(num_users):
        records = order[bounds[u]:bounds[u + 1]].copy()
        rng.shuffle(records)
        silo_order, _ = _zipf_weights(num_silos, alpha)
        rng.shuffle(silo_order)
        picked = rng.choice(silo_order, size=len(records), replace=True, p=weights) - 1
        for s in range(num_silos):
            silos[s].append(records[picked == s])
    return [np.concatenate(parts).astype(np.int64) for parts in silos]


def _fix_lone_records(rng, silo_ids: np.ndarray) -> np.ndarray:
    """TCGA rule: move a user's records that sit alone in a silo to a silo with >= 2."""
    ids, counts = np.unique(silo_ids, return_counts=True)
    crowded, lone = ids[counts >= 2], ids[counts < 2]
    if len(crowded) == 0:
        if len(lone) < 2:
            return silo_ids
        promoted = rng.choice(lone)
        crowded = np.array([promoted])
        lone = lone[lone != promoted]
        left_alone = rng.choice(lone)
        lone = lone[lone != left_alone]
    return np.array([rng.choice(crowded) if s in lone else s for s in silo_ids], dtype=np.int64)


def uldp_users_in_silos(rng, silo_sizes, num_users: int, *, distribution: str = "uniform",
                        alpha: float = 0.5, min_records: int = 1) -> list[np.ndarray]:
    """Users of the records of silos with fixed sizes (HeartDisease / TcgaBrca).

    Args:
      rng: ``np.random.Generator`` (or ``RandomState`` for paper-identical draws).
      silo_sizes: records per silo, e.g. FLamby's train sizes ``[199, 172, 30, 85]``.
      num_users: U.
      distribution: ``"uniform"`` or ``"zipf"`` (rules in the module docstring).
      alpha: Zipf exponent over users (paper: 0.5).
      min_records: 1 for the Heart rule, 2 for the TCGA rule (pairs, lone-record fix).

    Returns:
      For every silo an int64 array of length ``silo_sizes[s]``: the user of each of the
      silo's records, to be attached positionally to that silo's records.
    """
    rng = _rng(rng)
    sizes = [validate.positive_int(f"silo_sizes[{i}]", s) for i, s in enumerate(silo_sizes)]
    num_silos = len(sizes)
    if num_silos < 2:
        raise validate.JaxflValueError(f"Expected at least 2 silos, got {num_silos}.")
    num_users = validate.positive_int("num_users", num_users)
    alpha = _distribution(distribution, alpha)
    validate.one_of("min_records", min_records, (1, 2))
    total = sum(sizes)
    per_silo: list[list[int]] = [[] for _ in range(num_silos)]
    if distribution == "uniform" and min_records == 1:
        drawn = rng.choice(num_users, size=total, replace=True)
        starts = np.cumsum([0, *sizes])
        per_silo = [list(drawn[starts[s]:starts[s + 1]]) for s in range(num_silos)]
    elif distribution == "uniform":
        drawn = rng.choice(num_users, size=total // 2, replace=True)
        cursor = -1
        for s, size in enumerate(sizes):
            for _ in range(size // 2):
                cursor += 1
                per_silo[s] += [drawn[cursor], drawn[cursor]]
            if size % 2:
                per_silo[s].append(drawn[cursor])
    else:
        if total < min_records * num_users:
            raise validate.JaxflValueError(
                f"zipf allocation gives every user {min_records} record(s): needs "
                f"num_users * {min_records} <= {total} records, got num_users={num_users}.")
        support, weights = _zipf_weights(num_users, alpha)
        extra = rng.choice(support, size=total - min_records * num_users, replace=True,
                           p=weights) - 1
        owners = np.concatenate([np.tile(np.arange(num_users), min_records), extra])
        rng.shuffle(owners)  # consumed for parity with the paper; counts do not change
        counts = np.bincount(owners, minlength=num_users)
        for user in range(num_users):
            main = rng.choice(num_silos)
            p = np.full(num_silos, (1.0 - MAIN_SILO_PROBABILITY) / (num_silos - 1))
            p[main] = MAIN_SILO_PROBABILITY
            targets = rng.choice(num_silos, size=counts[user], replace=True, p=p)
            if min_records == 2:
                targets = _fix_lone_records(rng, targets)
            for s in targets:
                while len(per_silo[s]) >= sizes[s]:  # full: pass on cyclically
                    s = (s + 1) % num_silos
                per_silo[s].append(user)
    out = []
    for users in per_silo:
        users = np.asarray(users, dtype=np.int64)
        rng.shuffle(users)
        out.append(users)
    return out
