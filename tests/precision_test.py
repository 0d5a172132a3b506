"""The precision contract (jaxfl.precision): the walker, and its mutations in the algorithms.

That every registered algorithm's round keeps the contract (traced the way
:func:`jaxfl.training.run` compiles it) is checked by the conformance suite
(``tests/conformance_test.py``). Here: the walker on hand-written functions, and mutation tests
that revert one clip-path dot of an algorithm to the default precision (or move a sum out of
the scope) and check that the walk flags it. Only tracing, no compilation.
"""


import jax
import jax.extend
import jax.numpy as jnp
import pytest

from jaxfl import precision
from jaxfl.algorithms import base, registry
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
# The registered algorithms' rounds (jaxfl.algorithms.registry), traced as the training loop
# compiles them; that each keeps the contract is tests/conformance_test.py's check.
# --------------------------------------------------------------------------------------------


def _as_tuple(ex):
    built = (ex.model, ex.algorithm, ex.device_data())
    return built if ex.params is None else built + (ex.params,)


# name -> () -> (model, algorithm, device data[, params]) of every registered example (other
# tests build the same tiny instances through it).
ALGORITHMS = {name: (lambda name=name: _as_tuple(registry.example(name)))
              for name in registry.names()}


def _uldp_records():
    from jaxfl.algorithms import uldp
    return uldp._records()  # pylint: disable=protected-access


def _subject(method):
    return _as_tuple(registry.example(method))


def round_jaxpr(name):
    """The jaxpr of one round of ``ALGORITHMS[name]`` as :func:`jaxfl.training.run` jits it."""
    built = ALGORITHMS[name]()
    model, alg, data = built[:3]
    params = built[3] if len(built) > 3 else model.init(jax.random.key(0))
    return _precision.round_jaxpr(alg, data, params)


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
    # (the gossip example binds gossip.logreg_clipped_grad_sum when it is built: patched)
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
    from jaxfl.algorithms import gossip
    from jaxfl.topology import graphs, mixing
    ex = registry.example("gossip")
    alg = gossip.dp_gossip_avg(mixing_matrix=mixing.closed_neighbourhood(graphs.ring(4)),
                               grad_fn=grad_fn, clip_norm=1.0, noise_multiplier=0.5,
                               learning_rate=0.5, normalizer=4.0)
    return None, alg, ex.device_data(), ex.params


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
