"""Cox partial likelihood against direct NumPy loops; C-index against brute force."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxfl.models import cox, get_model

TOL = 100 * float(jnp.finfo(jnp.float32).eps)


def _numpy_breslow(scores, time, event, mask):
    """Per-example -log partial likelihood terms, Breslow ties, written as the definition."""
    scores = scores.astype(np.float64)
    out = np.zeros(len(scores))
    for i in range(len(scores)):
        if not (mask[i] and event[i]):
            continue
        risk = [j for j in range(len(scores)) if mask[j] and time[j] >= time[i]]
        out[i] = np.log(np.sum(np.exp(scores[risk]))) - scores[i]
    return out


def _numpy_flamby(scores, time, event):
    """FLamby's Cox loss as the ULDP-FL code uses it (stable descending sort, running lse)."""
    order = np.argsort(-time, kind="stable")
    s = scores[order].astype(np.float64)
    per_sorted = np.array([np.log(np.sum(np.exp(s[:k + 1]))) - s[k] for k in range(len(s))])
    per = np.zeros(len(s))
    per[order] = per_sorted * event[order]
    return per


def _brute_force_c_index(scores, time, event):
    """Harrell's C with lifelines' conventions, by enumerating every unordered pair."""
    correct = pairs = 0.0
    n = len(scores)
    for a in range(n):
        for b in range(a + 1, n):
            # Orient the pair so that `i` is the one that must have failed first.
            if time[a] == time[b]:
                if event[a] == event[b]:
                    continue  # two events or two censorings at the same time: not comparable
                i, j = (a, b) if event[a] else (b, a)
            else:
                i, j = (a, b) if time[a] < time[b] else (b, a)
                if not event[i]:
                    continue  # the earlier one is censored: order unknown
            pairs += 1
            correct += 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
    return correct / pairs if pairs else np.nan


def _survival_batch(rng, n, num_times=4):
    scores = rng.normal(size=n).astype(np.float32)
    time = rng.integers(0, num_times, size=n).astype(np.float32)  # many ties
    event = rng.integers(0, 2, size=n).astype(np.float32)
    return scores, time, event


def _y(time, event):
    return np.stack([event, time], axis=1).astype(np.float32)


@pytest.mark.parametrize("seed", range(4))
def test_breslow_loss_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    scores, time, event = _survival_batch(rng, 11)
    mask = rng.random(11) < 0.8
    got = cox.cox_loss(scores[:, None], _y(time, event), mask)
    want = _numpy_breslow(scores, time, event, mask)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("seed", range(3))
def test_flamby_mode_matches_numpy_and_breslow_without_ties(seed):
    rng = np.random.default_rng(seed)
    scores, time, event = _survival_batch(rng, 9)
    y = _y(time, event)
    np.testing.assert_allclose(cox.cox_loss(scores, y, ties="flamby"),
                               _numpy_flamby(scores, time, event), rtol=TOL, atol=TOL)
    distinct = _y(rng.permutation(9).astype(np.float32), event)
    np.testing.assert_allclose(cox.cox_loss(scores, distinct, ties="flamby"),
                               cox.cox_loss(scores, distinct, ties="breslow"), rtol=TOL, atol=TOL)


def test_breslow_is_permutation_invariant_with_ties():
    rng = np.random.default_rng(5)
    scores, time, event = _survival_batch(rng, 10, num_times=2)
    perm = rng.permutation(10)
    a = cox.cox_loss(scores, _y(time, event))
    b = cox.cox_loss(scores[perm], _y(time[perm], event[perm]))
    np.testing.assert_allclose(np.asarray(a)[perm], b, rtol=TOL, atol=TOL)


def test_batch_loss_ignores_padding_and_batch_of_one_is_zero():
    model = get_model("cox", input_shape=(3,))
    params = model.init(jax.random.key(0))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 3)).astype(np.float32)
    _, time, event = _survival_batch(rng, 7)
    event[0] = 1.0
    y = _y(time, event)
    # Padding with arbitrary rows (large times, events) must not change loss or gradient.
    x_pad = np.concatenate([x, 5 * rng.normal(size=(3, 3)).astype(np.float32)])
    y_pad = np.concatenate([y, _y(np.full(3, 9.0, np.float32), np.ones(3, np.float32))])
    mask = np.arange(10) < 7
    grad = jax.jit(jax.value_and_grad(model.batch_loss))
    loss_a, g_a = grad(params, x, y, None)
    loss_b, g_b = grad(params, x_pad, y_pad, mask)
    np.testing.assert_allclose(loss_a, loss_b, rtol=TOL, atol=TOL)
    for a, b in zip(jax.tree.leaves(g_a), jax.tree.leaves(g_b), strict=True):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
    # FLamby's normalisation: the mean over the batch (censored examples count in the denominator).
    out = model.apply(params, x)
    want = _numpy_breslow(np.asarray(out)[:, 0], time, event, np.ones(7, bool)).sum() / 7
    np.testing.assert_allclose(loss_a, want, rtol=TOL, atol=TOL)
    assert float(model.example_loss(params, x[0], y[0])) == 0.0


def test_cox_loss_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    scores, time, event = _survival_batch(rng, 6)
    y = _y(time, event)
    mask = np.array([1, 1, 1, 0, 1, 1], bool)
    f = jax.jit(lambda s: cox.cox_loss(s, y, mask).sum())
    s64 = scores.astype(np.float64)
    eps = 1e-3
    fd = np.array([(float(f(jnp.asarray(s64 + eps * e, jnp.float32))) -
                    float(f(jnp.asarray(s64 - eps * e, jnp.float32)))) / (2 * eps)
                   for e in np.eye(6)])
    np.testing.assert_allclose(jax.grad(f)(jnp.asarray(scores)), fd, atol=5e-3)
    assert float(jax.grad(f)(jnp.asarray(scores))[3]) == 0.0  # padded score has no influence


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(-2, 2), min_size=n, max_size=n),
    st.lists(st.integers(0, 4), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_c_index_matches_brute_force(data):
    scores, time, event = (np.asarray(v, np.float32) for v in data)  # ties in scores and times
    want = _brute_force_c_index(scores, time, event)
    got = float(_jit_c_index(scores, _y(time, event)))
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, abs=TOL)


_jit_c_index = jax.jit(cox.concordance_index)


def test_c_index_with_mask_and_metrics():
    rng = np.random.default_rng(4)
    scores, time, event = _survival_batch(rng, 12, num_times=6)
    mask = rng.random(12) < 0.7
    y = _y(time, event)
    want = _brute_force_c_index(scores[mask], time[mask], event[mask])
    assert float(cox.concordance_index(scores, y, mask)) == pytest.approx(want, abs=TOL)
    model = get_model("cox", input_shape=(2,))
    metrics = model.metrics(scores[:, None], y, mask=mask)
    assert float(metrics["concordant"][mask].sum() / metrics["comparable"][mask].sum()) == (
        pytest.approx(want, abs=TOL))
    np.testing.assert_allclose(metrics["c_index"], want, atol=TOL)
    # Perfect and reversed risk orderings on distinct event times.
    t = np.arange(6, dtype=np.float32)
    y_all = _y(t, np.ones(6, np.float32))
    assert float(cox.concordance_index(-t, y_all)) == 1.0
    assert float(cox.concordance_index(t, y_all)) == 0.0


@pytest.mark.data
def test_cox_learns_on_real_tcga_brca():
    """Full-batch GD on FLamby's TCGA-BRCA train split lifts the test C-index well above 0.5."""
    from jaxfl.data import flamby
    from tests.conftest import require_data

    root = require_data("tcga_brca/brca.csv", "tcga_brca/train_test_split.csv") / "tcga_brca"
    tr, te = (flamby.load_tcga_brca(split, path=root) for split in ("train", "test"))
    x = np.concatenate([*tr.x, *te.x])
    y = np.concatenate([*tr.y, *te.y])  # (E, T)
    train = np.arange(len(x)) < sum(len(v) for v in tr.x)
    assert x.shape == (1088, 39) and train.sum() == 866
    x = (x - x[train].mean(0)) / (x[train].std(0) + 1e-6)
    model = get_model("cox")

    @jax.jit
    def fit(params):
        def step(p, _):
            g = jax.grad(model.batch_loss)(p, x[train], y[train])
            return jax.tree.map(lambda a, b: a - 0.5 * b, p, g), None
        return jax.lax.scan(step, params, None, length=100)[0]

    params = model.init(jax.random.key(0))
    before = float(cox.concordance_index(model.apply(params, x[~train]), y[~train]))
    params = fit(params)
    after = model.batch_metrics(params, x[~train], y[~train])
    assert after["c_index"] > max(0.7, before + 0.1), (before, after)


def test_masked_metrics_forward_the_mask_only_to_coupled_models():
    scores = np.array([[0.3], [2.0], [-1.0], [5.0]], np.float32)
    y = _y(np.array([1.0, 2.0, 3.0, 0.5], np.float32), np.ones(4, np.float32))
    mask = np.array([True, True, True, False])
    model = get_model("cox", input_shape=(2,))
    np.testing.assert_allclose(model.masked_loss(scores, y, mask),
                               np.append(cox.cox_loss(scores[:3], y[:3]), 0.0), rtol=TOL)
    assert float(model.masked_metrics(scores, y, mask)["c_index"][0]) == pytest.approx(
        _brute_force_c_index(scores[:3, 0], y[:3, 1], y[:3, 0]))
    logreg = get_model("logreg", num_classes=2, input_shape=(1,))
    labels, logits = np.array([0, 1, 1, 0]), np.concatenate([scores, -scores], axis=1)
    np.testing.assert_array_equal(logreg.masked_loss(logits, labels, mask),
                                  logreg.loss(logits, labels))
