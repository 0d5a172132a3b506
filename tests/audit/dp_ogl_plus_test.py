"""DP-OGL+ shared window updates (issue 16 c): a peer's window sum depends on the target."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl.audit import dp_ogl


def _standardised_shift(window_updates):
    """Mean shift of the attacker's statistic / its std (common randomness cancels the noise:
    the view is affine in the noise while nothing is clipped on the relay's path)."""
    _, mech, stat, _ = dp_ogl.plus_shared_canary(noise_multiplier=1.0,
                                                 window_updates=window_updates)
    keys = jax.random.split(jax.random.key(3), 4000)
    run = jax.jit(jax.vmap(lambda k: jnp.stack([stat(mech(k, True)), stat(mech(k, False))])))
    s = np.asarray(run(keys), np.float64)
    diff = s[:, 0] - s[:, 1]
    assert np.std(diff) < 1e-3 * np.std(s[:, 1])   # deterministic shift
    return abs(float(np.mean(diff))) / float(np.std(s[:, 1]))


def test_shared_updates_double_the_shift_local_updates_do_not():
    shared, local = _standardised_shift("shared"), _standardised_shift("local")
    # Paper: one window mechanism of sensitivity sqrt(S) c, mu = 1/sigma per window. Shared
    # updates: 1.80 (4,000 draws, seeds 3 and 4: 1.801, 1.795; the old 400-draw bound of 1.8
    # sat on the true value), about twice what a sound window allows.
    assert 1.65 < shared < 2.2
    assert local < 1.05                # the sound variant stays within sqrt(S) c


def test_audit_row_is_below_strict():
    r = dp_ogl.audit_dp_ogl_plus_shared(noise_multiplier=1.0, trials=3000, delta=1e-2,
                                        key=jax.random.key(0))
    assert r.epsilon_lb <= r.claimed["strict"] and np.isfinite(r.claimed["paper"])
