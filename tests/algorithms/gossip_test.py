"""DP gossip averaging simulation, DP-GossipAvg and full-batch DP-FedAvg."""

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxfl import clipping, training, validate
from jaxfl.algorithms import base
from jaxfl.algorithms import gossip as g
from jaxfl.data import federated
from jaxfl.sensitivity import gossip_sensitivity
from jaxfl.topology import graphs, mixing


def _blobs(nodes=4, per=12, dim=6, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = 3 * rng.normal(size=(classes, dim))
    y = rng.integers(0, classes, size=nodes * per)
    x = (centers[y] + rng.normal(size=(y.size, dim))).astype(np.float32)
    idx = [np.arange(k * per, (k + 1) * per) for k in range(nodes)]
    idx[-1] = idx[-1][:-3]                       # one smaller node: exercises the mask
    return federated.from_partition(x, y.astype(np.int32), idx), x, y


def _empty(dim, nodes=4, per=3):
    """Nodes without examples (all masked): updates are pure noise."""
    return federated.FederatedData(
        x=np.zeros((nodes, per, dim), np.float32), y=np.zeros((nodes, per), np.int32),
        mask=np.zeros((nodes, per), bool), num_examples=np.zeros(nodes, np.int32), extras={})


@pytest.mark.parametrize("model", ["ss", "p"])
def test_gossip_streams_match_numpy_recursion(model):
    A = graphs.erdos_renyi(5, 0.6, seed=1)
    Wt = mixing.edge_sampled(A, 4, keep_prob=0.6, seed=0)
    rng = np.random.default_rng(0)
    x, u = rng.normal(size=(4, 5, 2)), rng.normal(size=(4, 5, 2))
    for W in (Wt[0], Wt):
        with jax.enable_x64(True):
            out = np.asarray(g.gossip_streams(W, x, u, model=model))
        theta, ref = np.zeros((5, 2)), []
        for t in range(4):
            Wk = W[t] if W.ndim == 3 else W
            theta = Wk @ (theta + x[t] + u[t]) if model == "ss" else Wk @ theta + x[t] + u[t]
            ref.append(theta)
        np.testing.assert_allclose(out, np.stack(ref), atol=1e-12)
    with pytest.raises(validate.ShapeError):
        g.gossip_streams(Wt[0], x, u[:, :, :1])


def test_closed_form_logreg_grads_match_vmap_grad():
    _, x, y = _blobs()
    params = {"kernel": 0.3 * jnp.asarray(np.random.default_rng(1).normal(size=(6, 3)),
                                          jnp.float32),
              "bias": jnp.array([0.1, -0.2, 0.05], jnp.float32)}
    mask = jnp.asarray(np.arange(x.shape[0]) % 5 != 0, jnp.float32)

    def example_loss(p, xi, yi):
        logits = xi @ p["kernel"] + p["bias"]
        return -jax.nn.log_softmax(logits)[yi]

    for C in (0.05, 1.0, 100.0):
        got, aux = g.logreg_clipped_grad_sum(params, jnp.asarray(x), jnp.asarray(y), mask,
                                             clip_norm=C)
        ref, norms = clipping.clipped_grad_sum(example_loss, params, jnp.asarray(x),
                                               jnp.asarray(y), mask > 0, clip_norm=C)
        for k in ("kernel", "bias"):
            np.testing.assert_allclose(got[k], ref[k], rtol=2e-5, atol=2e-6)
        frac = float(np.sum((np.asarray(norms) > C) * mask) / mask.sum())
        assert abs(float(aux["clipped_fraction"]) - frac) < 1e-6


def test_one_round_without_noise_is_gd_then_gossip():
    data, _, _ = _blobs()
    W = mixing.closed_neighbourhood(graphs.ring(4))
    alg = g.dp_gossip_avg(mixing_matrix=W, clip_norm=1.0, noise_multiplier=0.0,
                          learning_rate=0.5, normalizer=12.0)
    p0 = g.logreg_init(6, 3)
    state = alg.init(p0)
    state = state._replace(params=jax.tree.map(
        lambda a: a + 0.01 * jnp.arange(4, dtype=a.dtype).reshape((4,) + (1,) * (a.ndim - 1)),
        state.params))
    new, diag = jax.jit(alg.apply)(state, data, None, jax.random.key(0))
    local = {"kernel": [], "bias": []}
    for k in range(4):
        pk = {name: state.params[name][k] for name in local}
        gk, _ = g.logreg_clipped_grad_sum(pk, data.x[k], data.y[k],
                                          jnp.asarray(data.mask[k], jnp.float32), clip_norm=1.0)
        for name in local:
            local[name].append(np.asarray(pk[name] - 0.5 * gk[name] / 12.0))
    for name in local:
        np.testing.assert_allclose(new.params[name],
                                   np.tensordot(W, np.stack(local[name]), axes=1),
                                   rtol=1e-5, atol=1e-6)
    assert int(new.round) == 1 and np.isfinite(float(diag["train_loss"]))


def test_noise_scale_accepts_right_sigma_rejects_wrong():
    """No data (all masked) and W = I: each coordinate moves by -lr ξ / B, ξ ~ N(0, (σC)²)."""
    data = _empty(200)
    sigma, C, lr, B = 1.3, 0.7, 2.0, 5.0
    alg = g.dp_gossip_avg(mixing_matrix=np.eye(4), clip_norm=C, noise_multiplier=sigma,
                          learning_rate=lr, normalizer=B)
    new, _ = jax.jit(alg.apply)(alg.init(g.logreg_init(200, 10)), data, None,
                                jax.random.key(3))
    z = np.asarray(new.params["kernel"]).reshape(-1) / (lr * sigma * C / B)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    for wrong in (2 / 3, 3 / 2):
        assert stats.kstest(z / wrong, "norm").pvalue < 1e-6
    # independent noise per node
    k = np.asarray(new.params["kernel"]).reshape(4, -1)
    assert abs(np.corrcoef(k[0], k[1])[0, 1]) < 0.05


def test_secure_summation_changes_only_accounting():
    data, _, _ = _blobs()
    W = mixing.max_degree(graphs.ring(4))
    kw = dict(mixing_matrix=W, clip_norm=1.0, noise_multiplier=0.8, learning_rate=0.3,
              normalizer=12.0)
    a = g.dp_gossip_avg(secure_summation=True, **kw)
    b = g.dp_gossip_avg(secure_summation=False, **kw)
    sa, _ = g.train_scan(a, a.init(g.logreg_init(6, 3)), data, jax.random.key(1), 3)
    sb, _ = g.train_scan(b, b.init(g.logreg_init(6, 3)), data, jax.random.key(1), 3)
    np.testing.assert_array_equal(sa.params["kernel"], sb.params["kernel"])
    assert a.info["view"] == "tm3" and b.info["view"] == "tm4"
    # Secure summation: the worst pair's certified tm3 sensitivity, computed from W itself.
    ref = max(gossip_sensitivity(W, j, i, 2, view="tm3", mode="certified").delta_sq
              for i in range(4) for j in range(4) if i != j)
    ev = a.accountant.dp_event(2)
    assert isinstance(ev, dp_accounting.GaussianDpEvent)
    assert ev.noise_multiplier == pytest.approx(0.8 / np.sqrt(ref), rel=1e-9)
    rep = a.accountant.report(2, 1e-5)
    assert rep.unit == "node" and rep.mode == "strict" and rep.sound
    assert rep.per_unit.shape == (4, 4) and rep.per_unit_axes == ("observer", "target")
    assert rep.epsilon == pytest.approx(np.nanmax(rep.per_unit))
    paper = a.accountant.other_modes()["paper"].report(2, 1e-5)
    assert paper.mode == "paper" and not paper.sound and paper.epsilon <= rep.epsilon + 1e-12
    # Plain messages: strict = LDP (Δ² = T); Thm 4 only as the (unsound) paper mode.
    ev = b.accountant.dp_event(3)
    assert isinstance(ev, dp_accounting.GaussianDpEvent)
    assert ev.noise_multiplier == pytest.approx(0.8 / np.sqrt(3))
    assert b.accountant.view == "ldp" and b.accountant.sound
    p4 = b.accountant.other_modes()["paper"]
    assert p4.view == "tm4" and not p4.sound


def test_sensitivities_are_verified_against_w():
    W = mixing.max_degree(graphs.ring(5))
    kw = dict(clip_norm=1.0, noise_multiplier=1.0, learning_rate=0.3, normalizer=12.0)
    table = g.pair_table(W)
    a = g.dp_gossip_avg(mixing_matrix=W, sensitivities=table, **kw)
    assert a.accountant.epsilons([3], 1e-5)[0] > 0
    with pytest.raises(validate.PrivacyParameterError, match="another mixing matrix"):
        g.dp_gossip_avg(mixing_matrix=mixing.closed_neighbourhood(graphs.ring(5)),
                        sensitivities=table, **kw)
    with pytest.raises(validate.PrivacyParameterError, match="view"):
        g.dp_gossip_avg(mixing_matrix=W, sensitivities=table, secure_summation=False, **kw)


def test_time_varying_mixing():
    """A stack W_t: round t mixes with W_t and the accountant uses the ordered products."""
    data, _, _ = _blobs()
    A = graphs.complete(4)
    Wt = mixing.edge_sampled(A, 3, keep_prob=0.7, seed=0)
    alg = g.dp_gossip_avg(mixing_matrix=Wt, clip_norm=1.0, noise_multiplier=0.0,
                          learning_rate=0.5, normalizer=12.0)
    s = alg.init(g.logreg_init(6, 3))
    ref = s.params["kernel"]
    for t in range(3):
        s2, _ = alg.apply(s, data, None, jax.random.key(0))
        grads, _ = jax.vmap(lambda p, x, y, m: g.logreg_clipped_grad_sum(
            p, x, y, m, clip_norm=1.0))(s.params, data.x, data.y,
                                        jnp.asarray(data.mask, jnp.float32))
        ref = np.tensordot(Wt[t], np.asarray(s.params["kernel"]) - 0.5 * np.asarray(
            grads["kernel"]) / 12.0, axes=1)
        np.testing.assert_allclose(s2.params["kernel"], ref, rtol=1e-5, atol=1e-6)
        s = s2
    sig = g.dp_gossip_avg(mixing_matrix=Wt, clip_norm=1.0, noise_multiplier=1.0,
                          learning_rate=0.5, normalizer=12.0)
    want = max(gossip_sensitivity(Wt, j, i, 3, view="tm3", mode="certified",
                                  method="kalman").delta_sq
               for i in range(4) for j in range(4) if i != j)
    got = sig.accountant.delta_sq([3])[0]
    assert np.nanmax(got) == pytest.approx(want, rel=1e-8)


def test_traced_hparams_equal_builder_values():
    data, _, _ = _blobs()
    W = mixing.closed_neighbourhood(graphs.ring(4))
    mk = lambda lr, s: g.dp_gossip_avg(mixing_matrix=W, clip_norm=1.0, noise_multiplier=s,
                                       learning_rate=lr, normalizer=12.0)
    a, b = mk(0.5, 0.7), mk(0.1, 2.0)
    assert set(a.hparams) == {"learning_rate", "noise_multiplier"}
    s0 = a.init(g.logreg_init(6, 3))
    key = jax.random.key(2)
    ref, _ = b.apply(s0, data, None, key)
    got, _ = jax.jit(lambda hp: a.apply(s0, data, None, key, hparams=hp))(
        base.bind_hparams(b))  # b's values, which b's accountant was built from
    np.testing.assert_allclose(got.params["kernel"], ref.params["kernel"], atol=1e-6)
    fed = g.dp_fedavg_full_batch(num_nodes=4, clip_norm=1.0, noise_multiplier=1.0,
                                 learning_rate=0.1, normalizer=12.0)
    assert set(fed.hparams) == {"learning_rate", "noise_multiplier"}
    assert fed.accountant.unit == "record"


def test_train_scan_equals_apply_loop_and_training_run():
    data, _, _ = _blobs()
    W = mixing.closed_neighbourhood(graphs.ring(4))
    alg = g.dp_gossip_avg(mixing_matrix=W, clip_norm=1.0, noise_multiplier=0.5,
                          learning_rate=0.5, normalizer=12.0, eval_node=2)
    key = jax.random.key(7)
    s_scan, diags = g.train_scan(alg, alg.init(g.logreg_init(6, 3)), data, key, 4)
    s = alg.init(g.logreg_init(6, 3))
    apply = jax.jit(alg.apply)
    for r in range(4):
        s, _ = apply(s, data, None, jax.random.fold_in(key, r))
    np.testing.assert_allclose(s.params["kernel"], s_scan.params["kernel"], atol=1e-6)
    assert diags["train_loss"].shape == (4,)
    res = training.run(alg, data, params=g.logreg_init(6, 3), rounds=2, seed=0, progress=False)
    assert res.history and np.isfinite(res.history[-1]["train_loss"])
    assert alg.params_of(s)["kernel"].shape == (6, 3)


def test_training_reduces_loss_and_fedavg_baseline():
    data, x, y = _blobs(nodes=6, per=30, seed=2)
    W = mixing.closed_neighbourhood(graphs.erdos_renyi(6, 0.6, seed=0))
    gos = g.dp_gossip_avg(mixing_matrix=W, clip_norm=1.0, noise_multiplier=0.3,
                          learning_rate=1.0, normalizer=30.0)
    fed = g.dp_fedavg_full_batch(num_nodes=6, clip_norm=1.0, noise_multiplier=0.3,
                                 learning_rate=1.0, normalizer=30.0)
    for alg in (gos, fed):
        _, diags = g.train_scan(alg, alg.init(g.logreg_init(6, 3)), data, jax.random.key(0),
                                30)
        loss = np.asarray(diags["train_loss"])
        assert loss[-1] < 0.5 * loss[0], alg.name
    ev = fed.accountant.dp_event(5)
    assert isinstance(ev, dp_accounting.SelfComposedDpEvent) and ev.count == 5


def test_fedavg_noise_scale():
    data = _empty(300)
    sigma, C, lr, B, n = 2.0, 1.0, 1.0, 4.0, 4
    fed = g.dp_fedavg_full_batch(num_nodes=n, clip_norm=C, noise_multiplier=sigma,
                                 learning_rate=lr, normalizer=B)
    new, _ = jax.jit(fed.apply)(fed.init(g.logreg_init(300, 10)), data, None,
                                jax.random.key(5))
    z = np.asarray(new.params["kernel"]).reshape(-1) / (lr * sigma * C / (B * n))
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert stats.kstest(z * np.sqrt(n), "norm").pvalue < 1e-6    # σ/√n per node, not σ


def test_bad_arguments():
    with pytest.raises(validate.PrivacyParameterError):
        g.dp_gossip_avg(mixing_matrix=np.eye(3), clip_norm=0.0, noise_multiplier=1.0,
                        learning_rate=0.1, normalizer=1.0)
    with pytest.raises(validate.ShapeError):
        g.dp_gossip_avg(mixing_matrix=np.eye(3)[:2], clip_norm=1.0, noise_multiplier=1.0,
                        learning_rate=0.1, normalizer=1.0)
    with pytest.raises(validate.TopologyError):
        g.dp_gossip_avg(mixing_matrix=np.eye(3), clip_norm=1.0, noise_multiplier=1.0,
                        learning_rate=0.1, normalizer=1.0, eval_node=3)


def test_logreg_model_evaluates_like_numpy():
    """The library's classifier evaluation of gossip's logistic regression: accuracy and mean
    cross-entropy over a set that is not a multiple of the batch."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 2, 3)).astype(np.float32)
    y = rng.integers(0, 4, size=7).astype(np.int32)
    params = {"kernel": jnp.asarray(rng.normal(size=(6, 4)), jnp.float32),
              "bias": jnp.asarray(rng.normal(size=4), jnp.float32)}
    got = training.make_classifier_eval(g.logreg_model(6, 4), x, y, batch_size=3)(params)
    logits = x.reshape(7, -1) @ np.asarray(params["kernel"]) + np.asarray(params["bias"])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert float(got["test_accuracy"]) == pytest.approx(np.mean(logits.argmax(1) == y))
    assert float(got["test_loss"]) == pytest.approx(-logp[np.arange(7), y].mean(), rel=1e-5)
    assert g.logreg_model(6, 4).init(None)["kernel"].shape == (6, 4)
