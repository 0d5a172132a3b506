"""ULDP-FL record/user/silo allocation (Kato et al. 2023, Sec. 5.1, as the authors' code does it)."""

import math

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import allocation, federated

HEART_TRAIN = [199, 172, 30, 85]
TCGA_TRAIN = [248, 156, 164, 129, 129, 40]


def test_zipf_silo_weights_match_spec():
    # Zipf(2.0) over 5 silos: weights [0.683, 0.171, 0.076, 0.043, 0.027] for |S|=5; top 0.627 / 0.615.
    _, w5 = allocation._zipf_weights(5, 2.0)  # pylint: disable=protected-access
    np.testing.assert_allclose(w5, [0.683, 0.171, 0.076, 0.043, 0.027], atol=5e-4)
    assert round(allocation._zipf_weights(20, 2.0)[1][0], 3) == 0.627
    assert round(allocation._zipf_weights(50, 2.0)[1][0], 3) == 0.615


@pytest.mark.parametrize("n, users", [(24584, 100), (24584, 1000), (10, 3), (7, 7)])
def test_uniform_users_balanced(n, users):
    u = allocation.uldp_users_of_records(np.random.default_rng(0), n, users)
    counts = np.bincount(u, minlength=users)
    ceil = math.ceil(n / users)
    # ceil(N/U) copies of each user, shuffled, truncated to N: nobody exceeds ceil(N/U) and
    # the shortfall is exactly the number of dropped copies.
    assert u.shape == (n,) and counts.max() <= ceil
    assert (ceil - counts).sum() == ceil * users - n


def test_uniform_users_same_calls_as_reference_randomstate():
    """With a RandomState the draw is one permutation of ceil(N/U) copies (paper's code)."""
    got = allocation.uldp_users_of_records(np.random.RandomState(3), 1000, 30)
    want = np.random.RandomState(3).permutation(np.tile(np.arange(30), 34))[:1000]
    np.testing.assert_array_equal(got, want)


def test_zipf_users_frequencies():
    u = allocation.uldp_users_of_records(np.random.default_rng(0), 200_000, 50,
                                         distribution="zipf", alpha=0.5)
    p = np.arange(1, 51) ** -0.5
    p /= p.sum()
    freq = np.bincount(u, minlength=50) / len(u)
    sigma = np.sqrt(p * (1 - p) / len(u))
    assert np.all(np.abs(freq - p) < 5 * sigma)
    assert np.all(np.abs(freq - p * 1.1)[:5] > 5 * sigma[:5])  # a 10% error would show


def test_noniid_users_mostly_two_labels():
    rng = np.random.default_rng(0)
    labels = rng.permutation(np.repeat(np.arange(10), 600))
    u = allocation.uldp_users_of_records(rng, 6000, 100, labels=labels, labels_per_user=2)
    assert u.shape == (6000,) and u.min() >= 0 and u.max() < 100
    labels_per = [len(np.unique(labels[u == k])) for k in range(1, 100)]
    assert np.mean(np.array(labels_per) <= 2) > 0.9
    counts = np.bincount(u, minlength=100)
    assert np.median(counts[1:]) == 60  # each user re-dealt its balanced count (60)
    with pytest.raises(validate.ShapeError):
        allocation.uldp_users_of_records(rng, 6000, 100, labels=labels[:10], labels_per_user=2)


def test_silos_uniform_round_robin():
    users = allocation.uldp_users_of_records(np.random.default_rng(0), 1003, 10)
    silos = allocation.uldp_silos_of_records(np.random.default_rng(1), users, 5)
    assert sorted(np.concatenate(silos).tolist()) == list(range(1003))
    assert max(map(len, silos)) - min(map(len, silos)) <= 1
    fd = federated.from_partition(np.zeros((1003, 2)), np.zeros(1003, np.int32), silos,
                                  extras={"user_id": users})
    assert fd.extras["user_id"].shape == fd.mask.shape


def test_silos_zipf_top_silo_share():
    users = allocation.uldp_users_of_records(np.random.default_rng(0), 50_000, 100,
                                             distribution="zipf")
    silos = allocation.uldp_silos_of_records(np.random.default_rng(1), users, 5,
                                             distribution="zipf", num_users=100)
    assert sorted(np.concatenate(silos).tolist()) == list(range(50_000))
    silo_of = np.empty(50_000, int)
    for s, idx in enumerate(silos):
        silo_of[idx] = s
    hist = np.zeros((100, 5))
    np.add.at(hist, (users, silo_of), 1)
    top_share = hist.max(1).sum() / hist.sum()
    assert abs(top_share - 0.683) < 0.02  # each user's favourite silo, Zipf(2) over 5
    assert len(np.unique(hist.argmax(1))) == 5  # favourites differ between users


@pytest.mark.parametrize("dist", ["uniform", "zipf"])
@pytest.mark.parametrize("sizes, min_records", [(HEART_TRAIN, 1), (TCGA_TRAIN, 2)])
@pytest.mark.parametrize("num_users", [50, 200])
def test_users_in_fixed_silos(dist, sizes, min_records, num_users):
    out = allocation.uldp_users_in_silos(np.random.default_rng(7), sizes, num_users,
                                         distribution=dist, min_records=min_records)
    assert [len(u) for u in out] == sizes  # silo sizes preserved
    total = np.bincount(np.concatenate(out), minlength=num_users)
    assert len(total) == num_users
    if dist == "zipf":  # every user keeps its guaranteed records
        assert total.min() >= min_records
    if dist == "uniform" and min_records == 2:  # users drawn per pair of records
        for u, size in zip(out, sizes, strict=True):
            c = np.bincount(u)
            c = c[c > 0]
            assert c.min() >= 2 and (c % 2).sum() == size % 2  # odd leftover joins a pair


def test_heart_uniform_users_present():
    # Expected present users with 486 i.i.d. uniform draws over 200: 200(1 - (199/200)^486).
    present = [len(np.unique(np.concatenate(allocation.uldp_users_in_silos(
        np.random.default_rng(s), HEART_TRAIN, 200)))) for s in range(20)]
    expected = 200 * (1 - (199 / 200) ** 486)
    assert abs(np.mean(present) - expected) < 2.0


def test_zipf_main_silo_probability():
    out = allocation.uldp_users_in_silos(np.random.default_rng(3), [5000] * 4, 50,
                                         distribution="zipf", alpha=0.5)
    hist = np.zeros((50, 4))
    for s, users in enumerate(out):
        np.add.at(hist[:, s], users, 1)
    # Silos are never full here, so each user's main silo gets ~80% of its records.
    assert abs(hist.max(1).sum() / hist.sum() - 0.8) < 0.02


def test_allocation_reproducible_and_accepts_randomstate():
    for make in (np.random.default_rng, np.random.RandomState):
        a = allocation.uldp_users_in_silos(make(5), TCGA_TRAIN, 50, distribution="zipf",
                                           min_records=2)
        b = allocation.uldp_users_in_silos(make(5), TCGA_TRAIN, 50, distribution="zipf",
                                           min_records=2)
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_allocation_validation():
    rng = np.random.default_rng(0)
    with pytest.raises(validate.JaxflValueError, match="distribution"):
        allocation.uldp_users_of_records(rng, 10, 2, distribution="pareto")
    with pytest.raises(validate.JaxflValueError, match="alpha"):
        allocation.uldp_users_of_records(rng, 10, 2, distribution="zipf", alpha=-1.0)
    with pytest.raises(validate.JaxflValueError, match="num_users"):
        allocation.uldp_users_in_silos(rng, HEART_TRAIN, 300, distribution="zipf",
                                       min_records=2)
    with pytest.raises(validate.JaxflValueError, match="min_records"):
        allocation.uldp_users_in_silos(rng, HEART_TRAIN, 3, min_records=3)
    with pytest.raises(validate.JaxflValueError, match="silos"):
        allocation.uldp_users_in_silos(rng, [10], 3)
    with pytest.raises(validate.JaxflValueError, match="Generator"):
        allocation.uldp_silos_of_records(None, np.zeros(3, int), 2)
    with pytest.raises(validate.JaxflValueError, match="user ids"):
        allocation.uldp_silos_of_records(rng, np.array([0, 5]), 2, distribution="zipf",
                                         num_users=3)
