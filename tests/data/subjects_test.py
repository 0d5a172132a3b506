"""Subject-labelled federated data (subject-level DP glue): spreads, Shakespeare by role, LEAF
JSON fixture, MNIST synthetic writers, Parkinsons' 42 subjects, batch statistics (oracle 18)."""

import json
import math

import numpy as np
import pytest
from scipy import special

from jaxfl import validate
from jaxfl.algorithms import subject_dp as alg
from jaxfl.data import leaf, subjects
from tests.conftest import require_data

PLAY = """First Citizen:
Before we proceed any further, hear me speak.

All:
Speak, speak.

First Citizen:
You are all resolved rather to die than to famish?

MENENIUS:
What work's, my countrymen, in hand? where go you
With bats and clubs? The matter? speak, I pray you.
"""


def _check(d: subjects.SubjectData):
    fd = d.train.validate()
    mask = np.asarray(fd.mask)
    sid = np.asarray(fd.extras["subject_id"])[mask]
    users = np.broadcast_to(np.arange(fd.num_clients)[:, None], mask.shape)[mask]
    assert np.array_equal(np.sort(sid), np.sort(d.subject_ids))
    assert np.array_equal(np.bincount(users, minlength=fd.num_clients),
                          np.bincount(d.user_ids, minlength=fd.num_clients))
    assert sid.min() >= 0 and sid.max() == d.num_subjects - 1


def test_spread_uniform_and_skewed():
    rng = np.random.default_rng(0)
    s = np.repeat(np.arange(40), 160)
    x = np.arange(len(s), dtype=np.float32)[:, None]
    uni = subjects.spread(x, np.zeros(len(s), np.int32), s, num_users=16, rng=rng)
    skew = subjects.spread(x, np.zeros(len(s), np.int32), s, num_users=16, rng=rng, alpha=16.0)
    _check(uni)
    _check(skew)
    top = lambda d: np.mean([np.bincount(d.user_ids[d.subject_ids == a], minlength=16).max()
                             / 160 for a in range(40)])
    assert top(uni) < 0.2 < 0.5 < top(skew)  # alpha = 16: most of a subject at one user
    # Different subjects favour different users (per-subject permutation).
    fav = [np.bincount(skew.user_ids[skew.subject_ids == a], minlength=16).argmax()
           for a in range(40)]
    assert len(set(fav)) > 8
    with pytest.raises(validate.ShapeError):
        subjects.spread(x, np.zeros(3), s, num_users=2, rng=rng)


def test_shakespeare_by_role_on_a_small_play():
    d = subjects.shakespeare_by_role(num_users=2, rng=np.random.default_rng(0), corpus=PLAY,
                                     seq_len=10, stride=3, min_items=5, test_fraction=0.25)
    _check(d)
    assert d.info["roles"][0] in ("MENENIUS", "First Citizen") and "All" not in d.info["roles"]
    assert d.train.x.shape[2] == 10 and d.info["vocab_size"] == 80
    assert len(d.test_y) > 0 and d.test_x.shape[1] == 10


def test_shakespeare_by_role_real_text():
    require_data("shakespeare/input.txt")
    d = subjects.shakespeare_by_role(num_users=16, rng=np.random.default_rng(0), stride=80,
                                     min_items=20)
    _check(d)
    assert 80 <= d.num_subjects <= 299 and d.train.x.shape[2] == 80
    assert int(np.asarray(d.train.x).max()) < 80


def test_leaf_json_fixture(tmp_path):
    rng = np.random.default_rng(1)
    blobs = {}
    for split, n in (("train", 6), ("test", 2)):
        (tmp_path / split).mkdir()
        users = ["w0", "w1", "w2"]
        blobs[split] = {"users": users, "num_samples": [n] * 3,
                        "user_data": {u: {"x": rng.random((n, 784)).round(3).tolist(),
                                          "y": rng.integers(0, 62, n).tolist()} for u in users}}
        (tmp_path / split / "all.json").write_text(json.dumps(blobs[split]))
    tr, te = (leaf.load_leaf(tmp_path, split=s) for s in ("train", "test"))
    d = subjects.leaf_subjects(tr, test_split=te, num_users=4, rng=rng, max_subjects=2,
                               x_transform=leaf.femnist_images)
    _check(d)
    assert d.num_subjects == 2 and d.train.x.shape[2:] == (28, 28, 1)
    assert len(d.test_y) == 4 and d.info["subjects"] == ["w0", "w1"]


def test_mnist_writers_synthetic_images():
    rng = np.random.default_rng(0)
    imgs = ((rng.integers(0, 256, (300, 28, 28), dtype=np.uint8), rng.integers(0, 10, 300)),
            (rng.integers(0, 256, (50, 28, 28), dtype=np.uint8), rng.integers(0, 10, 50)))
    d = subjects.mnist_writers(num_users=4, num_subjects=12, rng=rng, images=imgs)
    _check(d)
    sizes = np.bincount(d.subject_ids)
    assert sizes.sum() == 300 and sizes.min() >= 5 and d.num_subjects == 12
    assert d.train.x.shape[2:] == (28, 28, 1) and float(np.asarray(d.train.x).max()) <= 1.0
    with pytest.raises(validate.JaxflValueError):
        subjects.writer_sizes(10, 5, rng=rng, min_items=5)


def test_mnist_writers_real():
    require_data("mnist/train-images-idx3-ubyte.gz")
    d = subjects.mnist_writers(num_users=16, num_subjects=350, rng=np.random.default_rng(0),
                               num_train=20000, num_test=1000)
    _check(d)
    assert d.num_subjects == 350 and len(d.test_y) == 1000


def test_parkinsons_42_subjects():
    require_data("parkinsons_telemonitoring/parkinsons_updrs.data")
    d = subjects.parkinsons_subjects(num_users=4, rng=np.random.default_rng(0))
    _check(d)
    assert d.num_subjects == 42 and d.train.x.shape[2] == 16
    assert len(d.test_y) + len(d.subject_ids) == 5875
    assert abs(float(np.asarray(d.train.y)[np.asarray(d.train.mask)].mean())) < 1e-5


def test_batch_statistics_match_formula():
    # Oracle 18: m subjects with k items each at one user, B without replacement:
    # E[K] = m (1 - C(n - k, B) / C(n, B)).
    m, k, B = 60, 8, 40
    n = m * k
    s = np.repeat(np.arange(m), k)
    d = subjects.spread(np.zeros((n, 1), np.float32), np.zeros(n, np.int32), s, num_users=1,
                        rng=np.random.default_rng(0))
    st = alg.batch_statistics(d.train, batch_size=B, steps=4000, rng=np.random.default_rng(1))
    expected = m * (1 - math.exp(special.gammaln(n - k + 1) - special.gammaln(n - k - B + 1)
                                 - special.gammaln(n + 1) + special.gammaln(n - B + 1)))
    K = st["K"].ravel()
    assert abs(K.mean() - expected) < 4 * K.std() / math.sqrt(len(K))
    assert st["Z"].min() >= 1 and st["Z"].max() <= k
