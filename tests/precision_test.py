"""The precision contract (jaxfl.precision) holds for every algorithm's round, as traced.

For each algorithm a tiny instance is built and its round is traced the way
:func:`jaxfl.training.run` compiles it (``base.call_apply`` under ``jit``); the jaxpr walk must
find no ``dot_general`` / convolution below ``Precision.HIGHEST`` between the per-unit clipped
quantities and the noise. Mutation tests revert one clip-path dot to the default precision (or
move a sum out of the scope) and check that the walk flags it. Only tracing, no compilation.
"""

import dataclasses

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import precision
from jaxfl.algorithms import base
from tests import _precision

pytest.importorskip("jax_privacy")


# --------------------------------------------------------------------------------------------
# The walker on small hand-written functions.
# --------------------------------------------------------------------------------------------

A = jnp.ones((3, 3))
HI = jax.lax.Precision.HIGHEST


def _noise(shape):
    with precision.noise_scope():
        return jax.random.normal(jax.random.key(0), shape)


def _bad(fn, *args):
    return precision.violations(jax.make_jaxpr(fn)(*args))


def test_scoped_dot_is_highest_and_clean():
    def f(a):
        with precision.sensitive():
            s = a @ a
        return s + _noise(s.shape)
    assert _bad(f, A) == []


def test_default_dot_before_the_scope_is_not_flagged():
    """Local training at the default precision, then the clip and sum in the scope."""
    def f(a):
        delta = jnp.tanh(a @ a) @ a          # model passes before clipping: fast default
        with precision.sensitive():
            c = delta * jnp.minimum(1.0, 1.0 / jnp.linalg.norm(delta))
            s = jnp.sum(c, axis=0)
        return s + _noise(s.shape)
    assert _bad(f, A) == []


def test_default_dot_inside_scope_is_flagged():
    def f(a):
        with precision.sensitive():
            s = jax.lax.dot(a, a, precision=jax.lax.Precision.DEFAULT)
        return s + _noise(s.shape)
    (msg,) = _bad(f, A)
    assert "in a privacy scope" in msg


def test_sum_after_scope_is_flagged_and_dot_after_noise_is_not():
    def f(a):
        with precision.sensitive():
            c = a / jnp.maximum(1.0, jnp.linalg.norm(a, axis=1, keepdims=True))
        s = jnp.ones((1, 3)) @ c             # the sum over units, outside the scope
        out = s + _noise(s.shape)
        return out @ a                       # after the noise: post-processing
    (msg,) = _bad(f, A)
    assert "between the sensitivity scope and the noise" in msg


def test_noise_without_sensitivity_scope_is_an_error():
    def f(a):
        s = jnp.sum(a, axis=0)
        return s + _noise(s.shape)
    (msg,) = _bad(f, A)
    assert "no computation in the 'dp_sensitivity' scope" in msg


def _sens(a):
    with precision.sensitive():
        return a * jnp.minimum(1.0, 1.0 / jnp.linalg.norm(a))


NESTINGS = {
    "jit": lambda c: jax.jit(lambda c: c @ A)(c),
    "remat": lambda c: jax.checkpoint(lambda c: c @ A)(c),
    "custom_jvp": lambda c: _cjvp(c),
    "custom_vjp": lambda c: _cvjp(c),
    "shard_map": lambda c: jax.shard_map(lambda c: c @ A, mesh=jax.make_mesh((1,), ("d",)),
                                         in_specs=jax.P(), out_specs=jax.P())(c),
    "scan_carry": lambda c: jax.lax.scan(lambda k, _: (k @ A, None), c, None, length=2)[0],
    "scan_xs": lambda c: jax.lax.scan(lambda k, x: (k, x @ A), 0.0, c)[1],
    "scan_const": lambda c: jax.lax.scan(lambda k, x: (k + x @ c, None), A, A)[0],
    "scan_fixpoint": lambda c: jax.lax.scan(       # taint reaches the dot's carry at step 2
        lambda k, _: ((k[1] @ A, c), None), (A, A), None, length=2)[0][0],
    "while": lambda c: jax.lax.while_loop(lambda k: k[0, 0] < 5.0, lambda k: k @ A + 1.0, c),
    "while_const": lambda c: jax.lax.while_loop(lambda k: k[0, 0] < 5.0,
                                                lambda k: k + c @ A + 1.0, A),
    "cond": lambda c: jax.lax.cond(c[0, 0] > 0, lambda c: c @ A, lambda c: c, c),
    "cond_index": lambda c: jax.lax.cond(c[0, 0] > 0, lambda: A, lambda: -A) @ A,
}


@jax.custom_jvp
def _cjvp(c):
    return c @ A


_cjvp.defjvp(lambda p, t: (_cjvp(p[0]), t[0]))


@jax.custom_vjp
def _cvjp(c):
    return c @ A


_cvjp.defvjp(lambda c: (_cvjp(c), None), lambda r, g: (g,))


@pytest.mark.parametrize("kind", sorted(NESTINGS))
def test_nested_default_dot_on_the_path_is_flagged(kind):
    def f(a):
        y = NESTINGS[kind](_sens(a))
        return y + _noise(y.shape)
    got = _bad(f, A)
    assert len(got) == 1 and "between the sensitivity scope and the noise" in got[0], got


@pytest.mark.parametrize("kind", sorted(NESTINGS))
def test_nested_dot_off_the_path_is_not_flagged(kind):
    """The same nesting before the clip (local training) or after the noise."""
    def f(a):
        y = _sens(NESTINGS[kind](a))
        z = y + _noise(y.shape)
        return NESTINGS[kind](z)
    assert _bad(f, A) == []


@pytest.mark.parametrize("kind", sorted(NESTINGS))
def test_nested_default_dot_in_scope_is_flagged(kind):
    def f(a):
        with precision.sensitive(), jax.default_matmul_precision("default"):
            y = NESTINGS[kind](a)
        return y + _noise(y.shape)
    got = _bad(f, A)
    assert got and all("in a privacy scope" in m for m in got), got


def test_closed_call_is_followed():
    """A ``closed_call`` eqn (made from a jit eqn: its params are the only difference; the
    primitive is named ``eval_jaxpr`` from jax 0.11 on)."""
    call = jax.extend.core.primitives.closed_call_p
    def f(a):
        y = jax.jit(lambda c: c @ A)(_sens(a))
        return y + _noise(y.shape)
    cj = jax.make_jaxpr(f)(A)
    eqns = [e.replace(primitive=call,
                      params={"call_jaxpr": e.params["jaxpr"]})
            if e.primitive.name == "jit" and "dot_general" in str(e.params["jaxpr"]) else e
            for e in cj.jaxpr.eqns]
    assert call.name in [e.primitive.name for e in eqns]
    got = precision.violations(jax.extend.core.ClosedJaxpr(cj.jaxpr.replace(eqns=eqns),
                                                           cj.consts))
    assert len(got) == 1 and call.name in got[0], got


def test_nested_highest_dot_on_the_path_is_clean():
    def f(a):
        c = _sens(a)
        y = jax.lax.scan(lambda k, _: (jax.jit(lambda k: jnp.dot(k, A, precision=HI))(k),
                                       None), c, None, length=2)[0]
        return y + _noise(y.shape)
    assert _bad(f, A) == []


def test_noise_added_inside_a_loop_body():
    """DP-SGD: clip, noise and step inside a scan; the next step's model pass is not flagged,
    a default-precision sum between the clip and the noise is."""
    def step(p, _, sum_precision):
        g = jnp.tanh(p @ A)                  # model pass at the default precision
        with precision.sensitive():
            c = g * jnp.minimum(1.0, 1.0 / jnp.linalg.norm(g, axis=1, keepdims=True))
        s = jnp.dot(jnp.ones((3,)), c, precision=sum_precision)
        return p - (s + _noise(s.shape)), None
    ok = lambda a: jax.lax.scan(lambda p, x: step(p, x, HI), a, None, length=3)[0]
    bad = lambda a: jax.lax.scan(lambda p, x: step(p, x, None), a, None, length=3)[0]
    assert _bad(ok, A) == []
    assert len(_bad(bad, A)) == 1


def test_unknown_higher_order_primitive_is_conservative(monkeypatch):
    """An eqn the walk does not know is one node: its inner dots are checked when it is on
    the path."""
    monkeypatch.setattr(precision._Graph, "_nested", lambda self, *a: False)
    def f(a):
        y = jax.jit(lambda c: c @ A)(_sens(a))
        return y + _noise(y.shape)
    (msg,) = _bad(f, A)
    assert "inside an opaque primitive" in msg
    assert _bad(lambda a: _sens(jax.jit(lambda c: c @ A)(a)) + _noise((3, 3)), A) == []


def test_check_raises_with_the_list():
    def f(a):
        with precision.sensitive():
            s = jax.lax.dot(a, a, precision=jax.lax.Precision.DEFAULT)
        return s + _noise(s.shape)
    with pytest.raises(AssertionError, match="precision contract violated"):
        precision.check(f, A)
    precision.check(lambda a: _sens(a) + _noise((3, 3)), A)


# --------------------------------------------------------------------------------------------
# Every algorithm's round, traced as the training loop compiles it.
# --------------------------------------------------------------------------------------------


def _logreg():
    from tests import _toy
    return _toy.logreg(5, 3)


def _blobs(n=6, size=6):
    from tests import _toy
    return _toy.blobs(num_clients=n, seed=1, sizes=[size] * n).to_device()


def _cnn():
    from tests.models import _tiny
    return _tiny.tiny_model("fedavg_cnn")


def _images(model, n=6, size=4):
    from jaxfl.data import federated
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(size, *model.input_shape)).astype(np.float32) for _ in range(n)]
    ys = [rng.integers(0, 3, size=size).astype(np.int32) for _ in range(n)]
    return federated.from_client_arrays(xs, ys).to_device()


def _dp_fedavg(adaptive=False, client_batch=None, cnn=False):
    from jaxfl.algorithms import dp_fedavg
    ac = dp_fedavg.AdaptiveClip(target_quantile=0.5, lr=0.3, count_noise=0.5) \
        if adaptive else None
    m = _cnn() if cnn else _logreg()
    return m, dp_fedavg.dp_fedavg(m, num_clients=6, local_steps=2, batch_size=3, client_lr=0.3,
                                  clip_norm=0.5, noise_multiplier=1.0, sampling_rate=0.5,
                                  adaptive_clip=ac, client_batch=client_batch), \
        _images(m) if cnn else _blobs()


def _dp_ftrl(adaptive=False):
    from jaxfl.algorithms import dp_fedavg, dp_ftrl
    ac = dp_fedavg.AdaptiveClip(target_quantile=0.5, lr=0.3, count_noise=0.5) \
        if adaptive else None
    m = _logreg()
    return m, dp_ftrl.dp_ftrl(m, num_clients=8, clients_per_round=2, rounds=6, local_steps=2,
                              batch_size=3, client_lr=0.3, clip_norm=0.5, noise_multiplier=0.8,
                              strategy="bandmf", bands=2, optimizer_steps=10,
                              adaptive_clip=ac), _blobs(8)


def _dp_ogl(plus=False, period=1):
    from jaxfl.algorithms import dp_ogl
    from jaxfl.topology import groups
    m = _logreg()
    return m, dp_ogl.dp_ogl(m, groups.ring(6, 3), period=period, local_steps=2, batch_size=3,
                            client_lr=0.3, clip_norms=0.5, noise_multipliers=1.0,
                            sampling_rates=0.7, plus=plus), _blobs()


def _uldp_records():
    from jaxfl.algorithms import uldp_data
    rng = np.random.default_rng(0)
    n, silos, users = 30, 3, 5
    return uldp_data.UldpData(rng.normal(size=(n, 4)).astype(np.float32),
                              rng.integers(0, 3, n).astype(np.int32), rng.integers(0, silos, n),
                              rng.integers(0, users, n), silos, users).validate()


def _uldp(kind, weighting="uniform"):
    from jaxfl.algorithms import uldp, uldp_data, uldp_silo
    from tests import _toy
    m = _toy.logreg(4, 3)
    data = _uldp_records()
    pairs = uldp_data.pair_data(data, min_length=8).to_device()
    silos = uldp_data.silo_data(data).to_device()
    common = dict(local_epochs=1, batch_size=4, local_lr=0.1, global_lr=1.0)
    if kind == "avg":
        return m, uldp.uldp_avg(m, num_silos=3, num_users=5, clip_norm=1.0,
                                noise_multiplier=2.0, weighting=weighting, sampling_rate=0.5,
                                **common), pairs
    if kind == "sgd":
        return m, uldp.uldp_sgd(m, num_silos=3, num_users=5, global_lr=1.0, clip_norm=1.0,
                                noise_multiplier=2.0, weighting=weighting), pairs
    if kind == "naive":
        return m, uldp_silo.uldp_naive(m, num_silos=3, clip_norm=1.0, noise_multiplier=2.0,
                                       **common), silos
    if kind == "silo":
        return m, uldp_silo.silo_level_dp(m, num_silos=3, clip_norm=1.0, noise_multiplier=2.0,
                                          **common), silos
    sizes = np.bincount(data.silo, minlength=3)
    return m, uldp_silo.dp_sgd_silos(m, silo_sizes=sizes, clip_norm=1.0, noise_multiplier=2.0,
                                     group_size=2, user_records=np.full(5, 3),
                                     group_mog=False, **common), silos


def _subject(method, cnn=False, **kw):
    from jaxfl.algorithms import subject_dp
    from jaxfl.data import federated
    rng = np.random.default_rng(0)
    model = _cnn() if cnn else _logreg()
    shape = model.input_shape
    xs = [rng.normal(size=(n, *shape)).astype(np.float32) for n in (6, 5)]
    ys = [rng.integers(0, 3, size=len(x)).astype(np.int32) for x in xs]
    ss = [rng.integers(0, 3, size=len(x)) for x in xs]
    data = federated.from_client_arrays(xs, ys, extras={"subject_id": ss})
    alg = subject_dp.subject_dp(model, data, method=method, batch_size=3, local_steps=2,
                                learning_rate=0.5, clip_norm=0.5, mode="paper",
                                **(kw or {"noise_multipliers": 0.8}))
    return model, alg, data.to_device()


def _gossip(kind, grad_fn=None):
    from jaxfl.algorithms import gossip
    from jaxfl.data import federated
    from jaxfl.topology import graphs, mixing
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16).astype(np.int32)
    data = federated.from_partition(x, y, [np.arange(4 * k, 4 * k + 4) for k in range(4)])
    W = mixing.closed_neighbourhood(graphs.ring(4))
    common = dict(clip_norm=1.0, noise_multiplier=0.5, learning_rate=0.5, normalizer=4.0)
    if kind == "fedavg":
        alg = gossip.dp_fedavg_full_batch(num_nodes=4, **common)
    elif kind == "model":
        from jaxfl.models import get_model
        model = get_model("logreg", num_classes=3, input_shape=(6,))
        alg = gossip.dp_gossip_avg(mixing_matrix=W, grad_fn=gossip.model_clipped_grad_sum(model),
                                   **common)
        return None, alg, data.to_device(), model.init(jax.random.key(0))
    else:
        alg = gossip.dp_gossip_avg(mixing_matrix=W, **common,
                                   grad_fn=grad_fn or gossip.logreg_clipped_grad_sum)
    return None, alg, data.to_device(), gossip.logreg_init(6, 3)


def _lightdp(path):
    from jaxfl.accounting import lightdp as acct
    from jaxfl.algorithms import lightdp
    d = acct.design(epsilon=50.0, delta=1e-5, num_clients=6, max_colluders=1,
                    max_stragglers=2, sensitivity=0.01)
    d = dataclasses.replace(d, sigma_u=0.02, sigma_k=0.5)
    m = _logreg()
    return m, lightdp.lightdp_fl(m, design=d, num_clients=6, local_steps=2, batch_size=4,
                                 client_lr=0.2, clip_norm=1.0, path=path), _blobs()


ALGORITHMS = {
    "dp_fedavg": lambda: _dp_fedavg(),
    "dp_fedavg_client_batch": lambda: _dp_fedavg(client_batch=2),
    "dp_fedavg_cnn": lambda: _dp_fedavg(cnn=True),  # conv local training: default precision
    "dp_fedavg_adaptive_clip": lambda: _dp_fedavg(adaptive=True),
    "dp_ftrl": lambda: _dp_ftrl(),
    "dp_ftrl_adaptive_clip": lambda: _dp_ftrl(adaptive=True),
    "dp_ogl": lambda: _dp_ogl(),
    "dp_ogl_plus": lambda: _dp_ogl(plus=True, period=2),
    "uldp_avg": lambda: _uldp("avg"),
    "uldp_avg_optimal_weights": lambda: _uldp("avg", "optimal"),
    "uldp_sgd_optimal_weights": lambda: _uldp("sgd", "optimal"),
    "uldp_naive": lambda: _uldp("naive"),
    "silo_level_dp": lambda: _uldp("silo"),
    "uldp_group": lambda: _uldp("group"),
    "local_item_dp_ghost_cnn": lambda: _subject("local_item_dp", cnn=True),
    "local_item_dp": lambda: _subject("local_item_dp"),
    "user_ldp": lambda: _subject("user_ldp"),
    "local_group_dp": lambda: _subject("local_group_dp",
                                       group_noise_multiplier=lambda u, z: 0.8 * z),
    "higradavg_dp": lambda: _subject("higradavg_dp"),
    "gossip": lambda: _gossip("gossip"),
    "gossip_fedavg_round": lambda: _gossip("fedavg"),
    "gossip_model_path": lambda: _gossip("model"),
    "lightdp_aggregate": lambda: _lightdp("aggregate"),
    "lightdp_faithful": lambda: _lightdp("faithful"),
}


def round_jaxpr(name):
    """The jaxpr of one round of ``ALGORITHMS[name]`` as :func:`jaxfl.training.run` jits it."""
    built = ALGORITHMS[name]()
    model, alg, data = built[:3]
    params = built[3] if len(built) > 3 else model.init(jax.random.key(0))
    return _precision.round_jaxpr(alg, data, params)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_keeps_the_contract(name):
    jaxpr = round_jaxpr(name)
    assert precision.violations(jaxpr) == []
    counts = precision.summary(jaxpr)
    print(name, counts)
    # Not vacuous: the round has a marked sensitive computation and its noise is added to it.
    assert counts["sensitivity_eqns"] > 0 and counts["noise_additions"] > 0, counts


# --------------------------------------------------------------------------------------------
# Mutations: one clip-path dot back at the default precision, or a sum moved out of the scope.
# --------------------------------------------------------------------------------------------


MUTATIONS = {
    # The ghost norms' per-example matmuls (einsum "bkt,bto->bko" of a conv layer).
    "ghost_norm_matmul": ("local_item_dp_ghost_cnn", "jaxfl.ghost", "_layer_norms"),
    # The ghost clipped sum's matmul (einsum "b,bko->ko" / "bkt,bto->ko").
    "ghost_clipped_sum": ("local_item_dp_ghost_cnn", "jaxfl.ghost", "_layer_sum"),
    # The two-pass method's weighted backward pass (the model's dots in pass 2).
    "two_pass_weighted_backward": ("local_item_dp", "jaxfl.clipping", "weighted_grad_sum"),
    # The two-pass method's norm pass.
    "two_pass_norms": ("local_item_dp", "jaxfl.clipping", "per_example_grad_norms"),
    # The closed-form logistic-regression clipped sum of DP-GossipAvg, its scope removed too:
    # no marked computation is left before the noise.
    "gossip_closed_form": ("gossip", "jaxfl.algorithms.gossip", "logreg_clipped_grad_sum"),
}
EXPECTED = {"gossip_closed_form": "no computation in the 'dp_sensitivity' scope"}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_clip_path_dot_at_default_precision_is_flagged(mutation, monkeypatch):
    import importlib
    name, module, attr = MUTATIONS[mutation]
    mod = importlib.import_module(module)
    monkeypatch.setattr(mod, attr, _precision.at_default_precision(getattr(mod, attr)))
    if mutation == "gossip_closed_form":   # the builder bound the default grad_fn already
        from jaxfl.algorithms import gossip
        monkeypatch.setitem(ALGORITHMS, name, lambda: _gossip_with(gossip.logreg_clipped_grad_sum))
    got = precision.violations(round_jaxpr(name))
    want = EXPECTED.get(mutation, "in a privacy scope")
    assert got and all(want in m for m in got), got
    if mutation not in EXPECTED:
        assert all(m.startswith(("dot_general", "conv_general")) for m in got), got


def test_uldp_weighted_sum_as_a_default_matmul_is_flagged(monkeypatch):
    """ULDP-NAIVE's weighted sum over silos written as a matmul at the default precision."""
    from jaxfl import tree as jtree

    def matmul_sum(tree, weights):
        return jax.tree.map(lambda x: jnp.tensordot(weights.astype(x.dtype), x, axes=1,
                                                    precision=jax.lax.Precision.DEFAULT), tree)
    monkeypatch.setattr(jtree, "weighted_sum", matmul_sum)
    got = precision.violations(round_jaxpr("uldp_naive"))
    assert len(got) == 2 and all("in a privacy scope" in m for m in got), got  # two leaves


def _gossip_with(grad_fn):
    return _gossip("gossip", grad_fn)


def test_a_sum_moved_out_of_the_scope_is_flagged():
    """DP-GossipAvg whose closed-form clipped sum ``x^T (c * resid)`` is formed after the
    scope closed, at the default precision: the walk flags the matmul on the path."""
    def moved(params, x, y, mask, *, clip_norm):
        xf = x.reshape(x.shape[0], -1)
        resid = jax.nn.softmax(xf @ params["kernel"] + params["bias"]) - jax.nn.one_hot(y, 3)
        with precision.sensitive():
            norm = jnp.linalg.norm(resid, axis=1) * jnp.sqrt(jnp.sum(xf * xf, axis=1) + 1.0)
            weighted = resid * (jnp.minimum(1.0, clip_norm / norm) * mask)[:, None]
        grads = {"kernel": xf.T @ weighted, "bias": jnp.sum(weighted, axis=0)}
        return grads, {"loss": jnp.sum(mask), "clipped_fraction": jnp.sum(mask)}
    _, alg, data, params = _gossip_with(moved)
    got = precision.violations(jax.make_jaxpr(
        lambda s, d, k: base.call_apply(alg, s, d, None, k))(alg.init(params), data,
                                                             jax.random.key(0)))
    assert len(got) == 1 and "between the sensitivity scope and the noise" in got[0], got


def test_local_training_keeps_the_fast_default():
    """The contract costs nothing where it is not needed: DP-FedAvg's local CNN training
    (before its delta is clipped) keeps the backend's default precision."""
    dots = list(precision._dots(round_jaxpr("dp_fedavg_cnn").jaxpr))
    assert len(dots) > 4 and all(not precision.is_highest(d) for d in dots)


def test_switching_the_contract_off_reaches_every_scope(monkeypatch):
    """With ``precision.sensitive`` replaced by its bare named scope (how
    ``experiments/bench/clip_precision.py`` measures the contract's effect), decorated clipping
    functions see the replacement too and the ghost round's dots are reported."""
    monkeypatch.setattr(precision, "sensitive",
                        lambda: jax.named_scope(precision.SENSITIVITY_SCOPE))
    got = precision.violations(round_jaxpr("local_item_dp_ghost_cnn"))
    assert got and all("in a privacy scope" in m for m in got), got
