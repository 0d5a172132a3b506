import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxfl import clipping, validate
from jaxfl.accounting import accountants, events
from jaxfl.algorithms import base, dp_fedavg, fedavg, local
from tests import _tolerance, _toy


def _update(model, steps=3, batch_size=4, sampling="shuffle", lr=0.1):
    return local.client_update_fn(local.model_batch_loss(model), optimizer=optax.sgd(lr),
                                  steps=steps, batch_size=batch_size, sampling=sampling)


@pytest.mark.parametrize("sampling", ["shuffle", "uniform"])
@pytest.mark.parametrize("batch_size", [4, None])
def test_vmapped_client_update_equals_loop(sampling, batch_size):
    model = _toy.logreg(5, 3)
    data = _toy.blobs(sizes=[5, 9, 0, 3])
    params = model.init(jax.random.key(0))
    update = _update(model, batch_size=batch_size, sampling=sampling)
    keys = base.client_keys(jax.random.key(1), jnp.arange(4))
    vm, aux = jax.jit(local.vmapped_update(update))(params, data.x, data.y, data.mask, keys)
    one = jax.jit(update)
    for c in range(4):
        d, a = one(params, data.x[c], data.y[c], data.mask[c], keys[c])
        for leaf_v, leaf_l in zip(jax.tree.leaves(vm), jax.tree.leaves(d), strict=True):
            np.testing.assert_allclose(leaf_v[c], leaf_l, rtol=1e-5, atol=1e-6)
    # The empty client returns a zero update.
    assert all(float(jnp.abs(x[2]).max()) == 0.0 for x in jax.tree.leaves(vm))


def test_client_update_only_reads_real_examples():
    model = _toy.logreg(5, 3)
    data = _toy.blobs(sizes=[4, 8])
    params = model.init(jax.random.key(0))
    update = jax.jit(_update(model))
    x0 = np.asarray(data.x[0]).copy()
    x0[4:] = 1e6  # garbage in the padding
    d1, _ = update(params, data.x[0], data.y[0], data.mask[0], jax.random.key(3))
    d2, _ = update(params, jnp.asarray(x0), data.y[0], data.mask[0], jax.random.key(3))
    for a, b in zip(jax.tree.leaves(d1), jax.tree.leaves(d2), strict=True):
        np.testing.assert_array_equal(a, b)


def test_fedavg_learns():
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=8, seed=1)
    alg = fedavg.fedavg(model, num_clients=8, local_steps=5, batch_size=4, client_lr=0.2)
    state = alg.init(model.init(jax.random.key(0)))
    apply = jax.jit(alg.apply)
    losses = []
    for r in range(15):
        state, diag = apply(state, data.to_device(), alg.prepare(r, np.random.default_rng(r)),
                            jax.random.key(r))
        losses.append(float(diag["train_loss"]))
    assert losses[-1] < 0.6 * losses[0]


def test_dp_fedavg_round_matches_manual_computation():
    """Clipped sum + sigma*C noise over the fixed denominator q*N, from the same keys."""
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=6, seed=2)
    q, C, sigma, N = 0.5, 0.05, 1.3, 6
    alg = dp_fedavg.dp_fedavg(model, num_clients=N, local_steps=2, batch_size=3, client_lr=0.5,
                              clip_norm=C, noise_multiplier=sigma, sampling_rate=q)
    params = model.init(jax.random.key(0))
    state = alg.init(params)
    cohort = alg.prepare(0, np.random.default_rng(5))
    key = jax.random.key(9)
    new_state, _ = jax.jit(alg.apply)(state, data.to_device(), cohort, key)
    update = _update(model, steps=2, batch_size=3, lr=0.5)
    total = jax.tree.map(jnp.zeros_like, params)
    for slot, cid in enumerate(cohort.indices):
        if not cohort.mask[slot]:
            continue
        d, _ = update(params, data.x[cid], data.y[cid], data.mask[cid],
                      base.client_keys(key, jnp.array([cid]))[0])
        d, _ = clipping.clip_pytree(d, C)
        total = jax.tree.map(jnp.add, total, d)
    from jaxfl import noise
    noisy = noise.add_gaussian(total, base.substream(key, "noise"), sigma * C)
    expected = jax.tree.map(lambda p, n: p + n / (q * N), params, noisy)
    # Local training runs at the default matmul precision on both sides (TF32 on GPUs).
    for a, b in zip(jax.tree.leaves(new_state.params), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(a, b, rtol=_tolerance.rtol(), atol=_tolerance.atol())


def test_dp_fedavg_noise_scale_statistical():
    """With a zero learning rate the update is pure noise with std sigma*C/(q*N)."""
    from scipy import stats
    model = _toy.logreg(40, 10)
    data = _toy.blobs(num_clients=4, dim=40, classes=10)
    q, C, sigma, N = 0.5, 2.0, 1.5, 4
    alg = dp_fedavg.dp_fedavg(model, num_clients=N, local_steps=1, batch_size=2,
                              client_lr=1e-30, clip_norm=C, noise_multiplier=sigma,
                              sampling_rate=q)
    params = jax.tree.map(jnp.zeros_like, model.init(jax.random.key(0)))
    state, _ = jax.jit(alg.apply)(alg.init(params), data.to_device(),
                                  alg.prepare(0, np.random.default_rng(0)), jax.random.key(4))
    z = np.concatenate([np.ravel(x) for x in jax.tree.leaves(state.params)])
    expected = sigma * C / (q * N)
    assert stats.kstest(z / expected, "norm").pvalue > 0.01
    assert stats.kstest(z / (expected * 2 / 3), "norm").pvalue < 0.01
    assert stats.kstest(z / (expected * 1.5), "norm").pvalue < 0.01


def test_dp_fedavg_event_matches_dp_accounting():
    import dp_accounting
    alg = dp_fedavg.dp_fedavg(_toy.logreg(2, 2), num_clients=100, local_steps=1, batch_size=1,
                              client_lr=0.1, clip_norm=1.0, noise_multiplier=1.1,
                              sampling_rate=0.1)
    ev = alg.accountant.dp_event(50)
    ref = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.1)), 50)
    assert ev == ref
    for acc_name, acc in [("rdp", dp_accounting.rdp.RdpAccountant()),
                          ("pld", dp_accounting.pld.PLDAccountant())]:
        acc.compose(ref)
        assert accountants.epsilon(ev, 1e-5, accountant=acc_name) == pytest.approx(
            acc.get_epsilon(1e-5), rel=1e-12)
    assert events.to_json(ev)["name"] == "SelfComposedDpEvent"


@pytest.mark.parametrize("kwargs", [dict(clip_norm=0.0), dict(noise_multiplier=-1.0),
                                    dict(sampling_rate=1.5), dict(sampling_rate=0.0),
                                    dict(num_clients=0), dict(clip_norm=float("nan"))])
def test_dp_fedavg_rejects_bad_input(kwargs):
    base_kwargs = dict(num_clients=10, local_steps=1, batch_size=1, client_lr=0.1,
                       clip_norm=1.0, noise_multiplier=1.0, sampling_rate=0.1)
    base_kwargs.update(kwargs)
    with pytest.raises(validate.JaxflValueError):
        dp_fedavg.dp_fedavg(_toy.logreg(2, 2), **base_kwargs)


def test_poisson_cohort_capacity_and_overflow():
    cap = base.poisson_capacity(1000, 0.01)
    assert 10 < cap < 60
    c = base.cohort_from_mask(np.ones(1000, bool), cap)  # overflow: exact, not truncated
    assert c.mask.sum() == 1000 and len(c.indices) == 1000
    rng = np.random.default_rng(0)
    sizes = [base.poisson_cohort(rng, 1000, 0.01, cap).mask.sum() for _ in range(300)]
    assert abs(np.mean(sizes) - 10) < 1.0
