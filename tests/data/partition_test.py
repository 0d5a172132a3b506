"""Partitioners: disjoint covers, skew, shards, subject spreading, validation."""

import re

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import federated, partition


def _labels(per_class=300, classes=10, seed=0):
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(classes), per_class))


def _assert_cover(parts, n):
    allidx = np.concatenate(parts)
    assert len(allidx) == n and np.array_equal(np.sort(allidx), np.arange(n))


def _skew(parts, labels):
    """Mean total-variation distance between client and global label distributions."""
    classes = labels.max() + 1
    glob = np.bincount(labels, minlength=classes) / len(labels)
    tv = [0.5 * np.abs(np.bincount(labels[p], minlength=classes) / len(p) - glob).sum()
          for p in parts]
    return float(np.mean(tv))


def test_iid_cover_sizes_and_usable():
    parts = partition.iid(np.random.default_rng(0), 103, 10)
    _assert_cover(parts, 103)
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    x = np.arange(103.0)[:, None]
    fd = federated.from_partition(x, np.zeros(103, np.int32), parts)
    assert fd.num_examples.tolist() == sizes


@pytest.mark.parametrize("make", [
    lambda rng: partition.iid(rng, 50, 7),
    lambda rng: partition.dirichlet(rng, _labels(20), 7, alpha=0.5),
    lambda rng: partition.shards(rng, _labels(20), 5),
])
def test_reproducible_from_generator(make):
    a = make(np.random.default_rng(42))
    b = make(np.random.default_rng(42))
    c = make(np.random.default_rng(43))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_dirichlet_cover_nonempty_and_skew_decreases_with_alpha():
    labels = _labels()
    skews = []
    for alpha in (0.05, 0.5, 5.0, 500.0):
        values = []
        for seed in range(3):
            parts = partition.dirichlet(np.random.default_rng(seed), labels, 20, alpha=alpha)
            _assert_cover(parts, len(labels))
            assert min(len(p) for p in parts) >= 1
            values.append(_skew(parts, labels))
        skews.append(np.mean(values))
    assert all(a > b for a, b in zip(skews, skews[1:]))
    assert skews[0] > 0.6 and skews[-1] < 0.1


def test_dirichlet_min_examples_and_failure():
    labels = _labels(50)
    parts = partition.dirichlet(np.random.default_rng(0), labels, 10, alpha=1.0,
                                min_examples=20)
    assert min(len(p) for p in parts) >= 20
    with pytest.raises(validate.JaxflValueError, match="larger alpha"):
        partition.dirichlet(np.random.default_rng(0), labels, 100, alpha=0.01,
                            min_examples=5, max_attempts=3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(alpha=0.0), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(alpha=1.0, min_examples=0), "min_examples"),
])
def test_dirichlet_validation(kwargs, match):
    with pytest.raises(validate.JaxflValueError, match=match):
        partition.dirichlet(np.random.default_rng(0), _labels(5), 4, **kwargs)


def test_validation_common():
    rng = np.random.default_rng(0)
    with pytest.raises(validate.JaxflValueError, match="num_clients"):
        partition.iid(rng, 10, 0)
    with pytest.raises(validate.JaxflValueError, match="at least 11"):
        partition.iid(rng, 10, 11)
    with pytest.raises(validate.JaxflValueError, match="Generator"):
        partition.iid(np.random.RandomState(0), 10, 2)
    with pytest.raises(validate.ShapeError):
        partition.dirichlet(rng, np.zeros((4, 2), int), 2, alpha=1.0)
    with pytest.raises(validate.ShapeError):
        partition.shards(rng, np.zeros(4), 2)  # float labels
    with pytest.raises(validate.JaxflValueError, match="shards"):
        partition.shards(rng, _labels(1), 6, shards_per_client=2)


def test_shards_mcmahan():
    labels = _labels(300)  # 3000 examples, 10 classes
    parts = partition.shards(np.random.default_rng(0), labels, 10, shards_per_client=2)
    _assert_cover(parts, 3000)
    assert all(len(p) == 300 for p in parts)
    # 20 shards of 150 examples each lie inside one class, so a client sees <= 2 classes.
    assert all(len(np.unique(labels[p])) <= 2 for p in parts)


def test_indices_by_group():
    parts = partition.indices_by_group(np.array([2, 0, 2, 1, 0]), 4)
    assert [p.tolist() for p in parts] == [[1, 4], [3], [0, 2], []]
    with pytest.raises(validate.JaxflValueError):
        partition.indices_by_group(np.array([0, 3]), 3)


def test_spread_subjects_uniform_and_round_robin():
    subjects = np.repeat(np.arange(300), 64)
    users = partition.spread_subjects(np.random.default_rng(0), subjects, 16)
    sizes = np.bincount(users, minlength=16)
    assert abs(sizes / len(subjects) - 1 / 16).max() < 0.01
    rr = partition.spread_subjects(np.random.default_rng(0), subjects, 16, method="round_robin")
    counts = np.zeros((300, 16), int)
    np.add.at(counts, (subjects, rr), 1)
    assert (counts == 4).all()  # 64 items over 16 users: exactly 4 each
    with pytest.raises(validate.JaxflValueError, match="alpha=1"):
        partition.spread_subjects(np.random.default_rng(0), subjects, 16, alpha=2.0,
                                  method="round_robin")


@pytest.mark.parametrize("alpha", [1.0, 4.0, 16.0])
def test_spread_subjects_power_law_top_share(alpha):
    """A subject's favourite user gets P(x >= 15/16) = 1 - (15/16)^alpha of its items."""
    items = 400
    subjects = np.repeat(np.arange(300), items)
    users = partition.spread_subjects(np.random.default_rng(1), subjects, 16, alpha=alpha)
    counts = np.zeros((300, 16), int)
    np.add.at(counts, (subjects, users), 1)
    assert counts.sum() == len(subjects)
    expected = 1 - (15 / 16) ** alpha
    if alpha > 2:  # the top slot is then the largest count with overwhelming probability
        assert abs(counts.max(1).mean() / items - expected) < 0.01
    else:  # uniform: every count is Binomial(items, 1/16)
        var = items * (1 / 16) * (15 / 16)
        assert abs(counts.var() / var - 1) < 0.15
    # Favourite users differ between subjects (per-subject permutation, not a fixed order).
    assert len(np.unique(counts.argmax(1))) == 16


def test_dirichlet_infeasible_setting_names_the_fix():
    """100 clients at alpha=0.1 on 5,000 examples: no draw gives every client 10 examples; the
    error reports the best draw and the settings to change, and its advice works."""
    labels = np.random.default_rng(0).integers(0, 10, 5000)
    with pytest.raises(validate.JaxflValueError,
                       match=r"smallest client had (\d+) examples.*min_examples <= .*cap=True"
                       ) as err:
        partition.dirichlet(np.random.default_rng(0), labels, 100, alpha=0.1, min_examples=10,
                            max_attempts=200)
    best = int(re.search(r"smallest client had (\d+)", str(err.value)).group(1))
    assert 1 <= best < 10
    parts = partition.dirichlet(np.random.default_rng(0), labels, 100, alpha=0.1,
                                min_examples=best, max_attempts=2000)
    assert min(len(p) for p in parts) >= best


def test_dirichlet_cap_limits_client_sizes_and_covers():
    labels = np.random.default_rng(1).integers(0, 10, 5000)
    parts = partition.dirichlet(np.random.default_rng(0), labels, 100, alpha=0.1,
                                min_examples=2, cap=True)
    _assert_cover(parts, len(labels))
    sizes = np.array([len(p) for p in parts])
    assert sizes.min() >= 2
    # A client stops receiving once it holds >= N / clients = 50: it ends below 50 plus the
    # largest class.
    assert sizes.max() < 50 + np.bincount(labels).max()
    assert _skew(parts, labels) > 0.6  # still strongly label-skewed
    with pytest.raises(validate.JaxflValueError, match="cap"):
        partition.dirichlet(np.random.default_rng(0), labels, 10, alpha=1.0, cap=1)
