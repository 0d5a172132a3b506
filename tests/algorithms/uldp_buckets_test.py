"""ULDP pair buckets: the engine's "auto" length buckets (uldp_data.bucket_lengths) and the
invariance of results to how far a pair is padded (issue 25: a pair of one record was padded
to 8)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import layout, validate
from jaxfl.algorithms import uldp, uldp_data
from jaxfl.models import Model


def _dropout_logreg(dim, classes, rate=0.5):
    """Logistic regression with input dropout: its draws depend on the batch's shape."""

    def init(key):
        return {"w": 0.1 * jax.random.normal(key, (dim, classes)), "b": jnp.zeros(classes)}

    def apply(params, x, *, train=False, key=None):
        x = x.reshape(x.shape[0], -1)
        if train and key is not None:
            keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
            x = jnp.where(keep, x / (1.0 - rate), 0.0)
        return x @ params["w"] + params["b"]

    def loss(out, y):
        return -jnp.take_along_axis(jax.nn.log_softmax(out), y[:, None], axis=1)[:, 0]

    def metrics(out, y):
        return {"loss": loss(out, y)}

    return Model("dropout_logreg", init, apply, loss, metrics, (dim,))


def _records(sizes, silos=3, dim=4, classes=3, seed=0):
    """User u holds ``sizes[u]`` records, spread over the silos at random."""
    rng = np.random.default_rng(seed)
    user = np.repeat(np.arange(len(sizes)), sizes)
    n = user.size
    return uldp_data.UldpData(rng.normal(size=(n, dim)).astype(np.float32),
                              rng.integers(0, classes, n).astype(np.int32),
                              rng.integers(0, silos, n), user, silos, len(sizes)).validate()


def test_bucket_lengths_cover_every_pair_and_bound_the_added_padding():
    rng = np.random.default_rng(1)
    for counts in (rng.integers(1, 4, 500), rng.integers(1, 200, 300),
                   np.r_[np.ones(900, int), np.full(3, 40)], [7]):
        counts = np.asarray(counts)
        for waste, rows in itertools.product((0.0, 1 / 32, 0.25), (0, 384)):
            got = uldp_data.bucket_lengths(counts, waste=waste, rows=rows)
            own = np.array([uldp_data.bucket_length(c, 1) for c in counts])
            assert np.all(got >= own) and np.all(got >= counts)
            assert np.sum(got - own) <= max(waste * counts.sum(), rows) + 1e-9
            assert set(got.tolist()) <= set(own.tolist())  # merged into existing buckets
            if waste == 0.0 and rows == 0:
                np.testing.assert_array_equal(got, own)
    # a few hundred padded rows are not worth one more compiled trainer: the smoke-sized
    # histogram 1..9 records ends in one bucket of 12, not six
    smoke = np.repeat(np.arange(1, 10), [4, 4, 13, 9, 4, 8, 4, 1, 1])
    assert set(uldp_data.bucket_lengths(smoke).tolist()) == {12}
    assert len(set(uldp_data.bucket_lengths(smoke, rows=0).tolist())) == 6
    # one-record pairs are not padded (the old floor was 8); a handful of 2s joins the 3s
    got = uldp_data.bucket_lengths([1] * 400 + [2] * 9 + [3])
    assert got.tolist() == [1] * 400 + [3] * 10
    assert 0 < layout.BUCKET_WASTE < 1 and layout.BUCKET_ROWS > 0


def test_auto_buckets_in_pair_data():
    data = _records([1] * 400 + [2] * 10 + [30] * 3)
    auto = uldp_data.pair_data(data, max_pairs_per_chunk=None)
    lengths = sorted(int(b.index.shape[1]) for b in auto.buckets)
    assert lengths[0] == 1  # no floor
    counts = np.concatenate([np.asarray(b.count)[np.asarray(b.count) > 0]
                             for b in auto.buckets])
    assert counts.sum() == len(data.x)
    for b in auto.buckets:
        assert np.all(np.asarray(b.count) <= b.index.shape[1])
    with pytest.raises(validate.JaxflValueError):
        uldp_data.pair_data(data, min_length=0)
    with pytest.raises(validate.JaxflValueError):
        uldp_data.pair_data(data, min_length="short")


@pytest.mark.parametrize("method", ["avg_w", "sgd"])
def test_padding_changes_only_float_rounding(method):
    """The same round with every pair padded to >= 8 records (the old paper layout) and with
    the engine's buckets (one-record pairs unpadded), in one chunk or in chunks of 3: equal up
    to float rounding, dropout and shuffling included."""
    data = _records([1] * 24 + [2] * 6 + [3] * 3 + [9] * 3)
    model = _dropout_logreg(4, 3)
    params = model.init(jax.random.key(0))
    args = dict(num_silos=3, num_users=data.num_users, global_lr=1.0, clip_norm=0.3,
                noise_multiplier=0.5)
    if method == "sgd":
        alg = uldp.uldp_sgd(model, **args)
    else:
        alg = uldp.uldp_avg(model, local_epochs=2, batch_size=4, local_lr=0.5,
                            weighting="optimal" if method == "avg_w" else "uniform", **args)
    ri = alg.prepare(0, np.random.default_rng(0))
    outs = []
    for kw in (dict(min_length=8, max_pairs_per_chunk=None), dict(max_pairs_per_chunk=3)):
        pairs = uldp_data.pair_data(data, **kw).to_device()
        outs.append(jax.jit(alg.apply)(alg.init(params), pairs, ri, jax.random.key(7)))
    first, diag = outs[0]
    moved = max(float(jnp.max(jnp.abs(a - b)))
                for a, b in zip(jax.tree.leaves(first.params), jax.tree.leaves(params),
                                strict=True))
    assert moved > 1e-3
    for state, d in outs[1:]:
        for a, b in zip(jax.tree.leaves(first.params), jax.tree.leaves(state.params),
                        strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)
        for k in diag:
            np.testing.assert_allclose(np.asarray(diag[k]), np.asarray(d[k]), rtol=2e-5,
                                       atol=2e-6)
