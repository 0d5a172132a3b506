"""The privacy contract of an Algorithm: ``apply`` draws the noise its accountant reports.

A privacy hyperparameter (noise multiplier, clip norm, sampling rate) can only reach ``apply``
with the value the accountant was built from: concrete and equal, or traced through
:func:`jaxfl.algorithms.base.bind_hparams` (what a vmapped sweep does, one algorithm and one
accountant per point).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import sweep, validate
from jaxfl.algorithms import base, dp_fedavg
from tests import _sweep_toy as toy
from tests import _toy


def _setup(**kw):
    model = _toy.logreg(5, 3)
    args = dict(num_clients=6, local_steps=1, batch_size=4, client_lr=0.3, clip_norm=0.5,
                noise_multiplier=1.0, sampling_rate=0.5)
    alg = dp_fedavg.dp_fedavg(model, **{**args, **kw})
    data = _toy.blobs(num_clients=6, seed=1).to_device()
    state = alg.init(model.init(jax.random.key(0)))
    return alg, state, data, alg.prepare(0, np.random.default_rng(0))


@pytest.mark.parametrize("name,value", [("noise_multiplier", 0.5), ("clip_norm", 2.0),
                                        ("sampling_rate", 0.25)])
def test_an_override_the_accountant_did_not_see_is_refused(name, value):
    alg, state, data, cohort = _setup()
    assert alg.accountant.hparams[name] != value
    with pytest.raises(validate.JaxflValueError, match=f"{name}=.*accountant was built"):
        alg.apply(state, data, cohort, jax.random.key(1), hparams={name: value})
    # traced, it cannot be compared: refused as well
    with pytest.raises(validate.JaxflValueError, match=f"{name}.* is traced"):
        jax.jit(lambda h: alg.apply(state, data, cohort, jax.random.key(1), hparams=h))(
            {name: jnp.asarray(value)})


def test_the_accounted_value_and_other_hparams_pass():
    alg, state, data, cohort = _setup()
    apply = lambda s, h: alg.apply(s, data, cohort, jax.random.key(1), hparams=h)  # noqa: E731
    # eval_shape traces apply and compiles nothing; concrete values stay concrete
    jax.eval_shape(lambda s: apply(s, {"noise_multiplier": 1.0, "clip_norm": np.float32(0.5),
                                       "sampling_rate": 0.5}), state)
    # a learning rate is not an accountant's input: overridable, traced or not
    jax.eval_shape(apply, state, {"client_lr": jnp.asarray(0.1)})
    with pytest.raises(validate.JaxflValueError, match="noise_multiplier.* is traced"):
        jax.eval_shape(apply, state, {"noise_multiplier": jnp.asarray(1.0)})


def test_bound_hparams_trace_the_values_their_accountants_saw():
    a, state, data, cohort = _setup()
    b, *_ = _setup(noise_multiplier=0.5, clip_norm=2.0)
    key = jax.random.key(1)
    want, _ = b.apply(state, data, cohort, key)
    got, _ = jax.jit(lambda h: a.apply(state, data, cohort, key, hparams=h))(
        base.bind_hparams(b))
    np.testing.assert_allclose(got.params["w"], want.params["w"], rtol=1e-6, atol=1e-7)
    stacked = base.bind_hparams([a, b])
    assert stacked["noise_multiplier"].tolist() == [1.0, 0.5]
    with pytest.raises(validate.JaxflValueError, match="bind_hparams"):
        base.BoundHparams({"noise_multiplier": 0.5})
    # an algorithm whose hparams and accountant disagree cannot be bound
    bad = b._replace(hparams={**b.hparams, "noise_multiplier": 0.7})
    with pytest.raises(validate.JaxflValueError, match="noise_multiplier=0.7"):
        base.bind_hparams([a, bad])


def test_every_private_builder_records_its_privacy_hparams():
    alg, *_ = _setup()
    assert dict(alg.accountant.hparams) == {"clip_norm": 0.5, "noise_multiplier": 1.0,
                                            "sampling_rate": 0.5}
    off = base.without_noise(alg)
    assert not off.accountant.private and off.accountant.hparams == {}


def test_a_noise_multiplier_sweep_reports_each_points_own_epsilon(tmp_path):
    cfg = toy.ToyConfig(rounds=2, num_clients=4, checkpoint_every=2)
    points = sweep.expand(cfg, [dict(noise_multiplier=0.8), dict(noise_multiplier=1.6)])
    res = sweep.run_sweep(points, toy.build, tmp_path, progress=False)
    assert res.groups == [[0, 1]]  # one vmapped batch
    for p in points:
        rows = sweep.metrics.read_jsonl(tmp_path / "points" / p.id / "metrics.jsonl")
        single = toy.build(p.config).algorithm.accountant.epsilons([1, 2], 1e-5)
        np.testing.assert_allclose([r["epsilon"] for r in rows], single, rtol=1e-12)
    eps = [sweep.metrics.read_jsonl(tmp_path / "points" / p.id / "metrics.jsonl")[-1]["epsilon"]
           for p in points]
    assert eps[0] > eps[1]
