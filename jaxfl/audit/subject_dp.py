"""Canary audit of HiGradAvgDP (Marathe & Kanani, arXiv 2206.03617 v1, Alg. 3) with one subject
spread over several users, and the counterexample to the paper's accounting (Marathe &
Kanani v1, Secs. 3.2-3.5: the item sampling rate q_i used for a subject, and the R/sqrt(s) round
cut).

Neighbouring relation (subject-level DP, Def. 2.3): add/remove all items of one subject at every
user at once. Adversary: the honest-but-curious server; its view is the server model after every
round (the mean of the users' models).

The library's ``subject_dp(method="higradavg_dp", mode="strict")`` (Poisson item sampling at
``q_i = B / n_i``, normaliser B) runs on a federation built for the attack (least squares, no
bias): every user holds ``k`` items of the canary subject (``x = e_0``, huge target, so each
clipped per-item gradient is ``-C e_0`` and the subject's per-batch average is ``-C e_0`` whenever
at least one of its items is sampled) and zero-gradient filler items of singleton subjects. D'
removes the canary subject's items (they are never sampled). Batches are drawn inside jit with
the same law as the algorithm's host sampler. One local step per round; the per-round increment
of ``w_0``, normalised, is ``N(J / (sigma sqrt(s)), 1)`` with ``J ~ Binomial(s, p)`` subject
inclusions, ``p = 1 - (1 - q)^k`` (D) or ``J = 0`` (D'): the exact LLR is
:func:`jaxfl.audit.statistics.mixture_llr`.

Claims (:func:`jaxfl.accounting.subject_dp.epsilon`, RDP): ``strict`` composes the subject's
per-user events ``PoissonSampled(p, sigma)`` over users and rounds; ``paper`` uses the item rate
``q`` and ``sqrt(s)`` times the rounds (Thm. 3.10). With ``k`` items per user, ``p`` is far
above ``q`` and the audit exceeds the paper's epsilon while staying below the strict one.

Example Usage:
  >>> import jax
  >>> r = audit_higradavg(noise_multiplier=1.0, items_per_user=3, num_users=2, rounds=2,
  ...                     trials=2000, delta=1e-2, key=jax.random.key(0))
  >>> r.epsilon_lb <= r.claimed["strict"]
  True
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from jaxfl import validate
from jaxfl.accounting import local_group_bound, subject_dp_bounds
from jaxfl.accounting import subject_dp as sdp_accounting
from jaxfl.algorithms import subject_dp
from jaxfl.audit import canary, statistics
from jaxfl.audit.dp_fedavg import least_squares_model
from jaxfl.data import federated

CANARY_SUBJECT = 0


def canary_federation(*, num_users: int, items_per_user: int, examples_per_user: int,
                      dim: int, target: float = 1e4):
    """Host ``FederatedData``: ``items_per_user`` canary-subject items + filler singletons."""
    k = validate.positive_int("items_per_user", items_per_user)
    n_i = validate.positive_int("examples_per_user", examples_per_user)
    if k > n_i:
        raise validate.JaxflValueError("Expected items_per_user <= examples_per_user.")
    x = np.zeros((num_users, n_i, dim), np.float32)
    y = np.zeros((num_users, n_i), np.float32)
    x[:, :k, 0], y[:, :k] = 1.0, target
    sid = 1 + np.arange(num_users * n_i, dtype=np.int32).reshape(num_users, n_i)
    sid[:, :k] = CANARY_SUBJECT
    return federated.FederatedData(x=x, y=y, mask=np.ones((num_users, n_i), bool),
                                   num_examples=np.full(num_users, n_i, np.int32),
                                   extras={subject_dp.SUBJECT_KEY: sid}).validate()


def canary_rounds(alg, model, host, *, sigma: float, q: float, rounds: int, batch):
    """The mechanism of a canary audit: ``mechanism(key, present) -> [rounds, ...]``, the server
    model's ``w`` after each of ``rounds`` rounds of ``alg`` (a built
    :func:`jaxfl.algorithms.subject_dp.subject_dp` on ``host``, one local step at every user, the
    noise multiplier ``sigma`` at every user), every item slot of every user drawn at rate ``q``
    inside jit; ``batch(drawn, present, is_canary)`` (each ``[users, 1, slots]``; ``present``
    the hypothesis: the canary subject is in the data) is the step's batch mask."""
    n, width = np.shape(host.mask)
    data = host.to_device()
    state0 = alg.init(model.init(jax.random.key(0)))
    is_canary = jnp.asarray(host.extras[subject_dp.SUBJECT_KEY] == CANARY_SUBJECT)[:, None, :]
    every = subject_dp.RoundInput(
        users=jnp.arange(n, dtype=jnp.int32), user_mask=jnp.ones((n,), bool),
        idx=jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), (n, 1, width)), mask=None,
        sigma=jnp.full((n, 1), sigma, jnp.float32), active=jnp.ones((n, 1), bool))

    def mechanism(kk, present):
        def one_round(state, r):
            kr = jax.random.fold_in(kk, r)
            drawn = jax.random.bernoulli(jax.random.fold_in(kr, 1), q, (n, 1, width))
            ri = every._replace(mask=batch(drawn, present, is_canary))
            state, _ = alg.apply(state, data, ri, kr)
            return state, state.params["w"]

        _, traj = jax.lax.scan(one_round, state0, jnp.arange(rounds))
        return traj

    return mechanism


def audit_higradavg(*, noise_multiplier: float, items_per_user: int, num_users: int,
                    rounds: int, trials: int, delta: float, key: jax.Array,
                    examples_per_user: int = 20, batch_size: int = 2, clip_norm: float = 1.0,
                    dim: int = 2, confidence: float = 0.95, vmap_batch: int = 4096,
                    name: str | None = None) -> canary.AuditResult:
    """Audits HiGradAvgDP against its strict and paper subject-level claims (module doc).

    Args:
      noise_multiplier: sigma of every user.
      items_per_user: k, the canary subject's items at each user.
      num_users: n = s (every user takes part every round).
      rounds: rounds run (one local step each).
      trials: runs per hypothesis.
      delta: delta of the bound and of the claims.
      key: audit key.
      examples_per_user: n_i (so q = batch_size / n_i).
      batch_size: B.
      clip_norm: C.
      dim: model dimension.
      confidence: Clopper-Pearson confidence.
      vmap_batch: trials vmapped together.
      name: row name.
    """
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    n = validate.positive_int("num_users", num_users)
    rounds = validate.positive_int("rounds", rounds)
    delta = validate.delta(delta)
    host = canary_federation(num_users=n, items_per_user=items_per_user,
                             examples_per_user=examples_per_user, dim=dim)
    model = least_squares_model(dim)
    lr = 1.0
    alg = subject_dp.subject_dp(model, host, method="higradavg_dp", batch_size=batch_size,
                                local_steps=1, learning_rate=lr, mode="strict",
                                clip_norm=clip_norm, noise_multipliers=sigma)
    n_i, k = examples_per_user, items_per_user
    q = min(1.0, batch_size / n_i)
    p = 1.0 - (1.0 - q) ** k
    mechanism = canary_rounds(alg, model, host, sigma=sigma, q=q, rounds=rounds,
                              batch=lambda drawn, present, is_canary:
                              drawn & (present | ~is_canary))
    scale = lr * alg.accountant.privatizer.std() * math.sqrt(n) / (n * batch_size)
    counts = np.arange(n + 1)
    llr = statistics.mixture_llr(counts / (sigma * math.sqrt(n)),
                                 stats.binom.pmf(counts, n, p), scale=scale)

    def statistic(traj):
        w0 = jnp.concatenate([jnp.zeros((1,), traj.dtype), traj[:, 0]])
        return llr(jnp.diff(w0))

    fed = subject_dp.federation_of(host, batch_size=batch_size, local_steps=1)
    claim = lambda mode: sdp_accounting.epsilon("higradavg_dp", fed, mode=mode, rounds=rounds,
                                                delta=delta, noise_multipliers=sigma).epsilon
    claims = {"strict": claim("strict"), "paper": claim("paper")}
    return canary.audit(
        mechanism, statistic, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=vmap_batch,
        name=name or f"HiGradAvgDP (subject: {k} items at each of {n} users)",
        claimed=claims, neighbour="add/remove one subject (items at every user)",
        view="server model after every round",
        info={"noise_multiplier": sigma, "items_per_user": k, "num_users": n,
              "rounds": rounds, "item_sampling_rate": q, "subject_inclusion": p,
              "statistic": "exact LLR of the per-round increments (binomial mixture)"})





# --------------------------------------------------------------------------------------------
# LocalGroupDP with batch-dependent noise sigma_Z (issue 16, finding b)
# --------------------------------------------------------------------------------------------


def audit_local_group_dp(*, target_epsilon: float, items: int, examples: int, batch_size: int,
                         dim: int, trials: int, delta: float, key: jax.Array,
                         clip_norm: float = 1.0, confidence: float = 0.95,
                         vmap_batch: int = 4096) -> canary.AuditResult:
    """Audits LocalGroupDP (Alg. 2, ``group_noise="batch"``) on one user, one step.

    The user holds ``items`` items of the canary subject and ``examples - items`` zero-gradient
    singleton fillers; Poisson item sampling at ``q = B / n_i`` (strict mode's sampler law, drawn
    inside jit). The noise multiplier of the step is ``sigma_Z`` for the batch's largest group
    ``Z`` (looked up in-jit from the table the library's host ``prepare`` would use, the paper's
    calibration :func:`jaxfl.accounting.subject_dp_bounds.group_noise_multiplier`), and the step
    runs through the library's ``apply``. D' removes the subject: Z = 1 always. The attack reads
    the noise *scale*: the statistic is the sum of squares of the ``dim - 1`` coordinates without
    signal, ``~ sigma_Z^2 chi^2_{dim-1}``, which separates Z >= 2 (probability
    ``P[Binomial(k, q) >= 2]`` under D, 0 under D') from Z = 1.

    Claims: ``paper`` is the target ``E`` the sigma_Z table was calibrated for (the paper's
    Cor. 3.5 argument); ``strict`` is
    :func:`jaxfl.accounting.local_group_bound.local_group_batch_epsilon` for this model size.
    """
    delta = validate.delta(delta)
    k = validate.positive_int("items", items)
    n_i = validate.positive_int("examples", examples)
    dim = validate.positive_int("dim", dim, minimum=2)
    q = min(1.0, batch_size / n_i)
    sig_table = np.array([subject_dp_bounds.group_noise_multiplier(
        target_epsilon=target_epsilon, delta=delta, group_size=z, sampling_rate=q, steps=1)
        for z in range(1, k + 1)])
    host = canary_federation(num_users=1, items_per_user=k, examples_per_user=n_i, dim=dim)
    model = least_squares_model(dim)
    lr = 1.0
    alg = subject_dp.subject_dp(
        model, host, method="local_group_dp", batch_size=batch_size, local_steps=1,
        learning_rate=lr, mode="strict", clip_norm=clip_norm, group_noise="batch",
        group_noise_multiplier=lambda _u, z: float(sig_table[min(z, k) - 1]))
    data = host.to_device()
    state0 = alg.init(model.init(jax.random.key(0)))
    slots = jnp.arange(n_i, dtype=jnp.int32).reshape(1, 1, n_i)
    sid = jnp.asarray(host.extras[subject_dp.SUBJECT_KEY])[0]
    is_canary = (sid == CANARY_SUBJECT)[None, None, :]
    table = jnp.asarray(sig_table, jnp.float32)

    def mechanism(kk, present):
        drawn = jax.random.bernoulli(jax.random.fold_in(kk, 1), q, (1, 1, n_i))
        mask = drawn & (present | ~is_canary)
        Z = subject_dp.subject_batch_stats(sid, mask[0, 0]).max_group.astype(jnp.int32)
        sigma = table[jnp.clip(Z, 1, k) - 1].reshape(1, 1)
        ri = subject_dp.RoundInput(users=jnp.zeros((1,), jnp.int32),
                                   user_mask=jnp.ones((1,), bool), idx=slots, mask=mask,
                                   sigma=sigma, active=jnp.ones((1, 1), bool))
        state, _ = alg.apply(state0, data, ri, kk)
        return state.params["w"]

    scale = lr * clip_norm * sig_table[0] / batch_size

    def statistic(w):
        return jnp.sum((w[1:] / scale) ** 2)

    p2 = float(1.0 - stats.binom.cdf(1, k, q))
    strict = local_group_bound.local_group_batch_epsilon(
        group_noise_multipliers=sig_table, items=k, sampling_rate=q, steps=1, delta=delta,
        model_dim=dim)
    return canary.audit(
        mechanism, statistic, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=vmap_batch,
        name=f"LocalGroupDP batch sigma_Z (subject: {k} of {n_i} items, q={q:g}, d={dim})",
        claimed={"paper": float(target_epsilon), "strict": strict},
        neighbour="add/remove one subject (items at the user)",
        view="user model after one step (reveals the noise scale)",
        info={"sigma_table": sig_table.tolist(), "item_sampling_rate": q,
              "p_group_ge_2": p2, "model_dim": dim,
              "statistic": "sum of squares of the signal-free coordinates (noise scale)"})


# --------------------------------------------------------------------------------------------
# UserLDP at the paper's sigma (issue 26, point 7c)
# --------------------------------------------------------------------------------------------


def user_ldp_federation(*, num_users: int, dim: int, target: float = 1e4):
    """Host ``FederatedData`` of the UserLDP attack: every user holds one item of the canary
    subject (``x = e_0``, ``y = +target``) and one filler item of its own subject
    (``y = -target / 4``). With both items in the batch the batch gradient points along
    ``-e_0`` and is clipped to ``-C e_0``; with the filler alone it is clipped to ``+C e_0``:
    removing the subject moves every user's clipped gradient by ``2C``."""
    host = canary_federation(num_users=num_users, items_per_user=1, examples_per_user=2,
                             dim=dim, target=target)
    x, y = np.array(host.x), np.array(host.y)
    x[:, 1, 0], y[:, 1] = 1.0, -target / 4
    return dataclasses.replace(host, x=x, y=y).validate()


def audit_user_ldp(*, target_epsilon: float, num_users: int, nominal_rounds: int, trials: int,
                   delta: float, key: jax.Array, clip_norm: float = 1.0, dim: int = 2,
                   confidence: float = 0.95, vmap_batch: int = 4096) -> canary.AuditResult:
    """Attacks UserLDP (Alg. 1) run as the paper prescribes for a subject-level budget.

    Paper mode: sigma is the item-level calibration for ``target_epsilon`` over the nominal
    ``R`` rounds (:func:`jaxfl.accounting.subject_dp.paper_noise_multiplier`) and the subject
    methods run ``R / sqrt(s)`` rounds (Thm. 3.10), so the paper's claim is ``target_epsilon``.
    The federation (:func:`user_ldp_federation`, batch = both items, q = 1, one local step) runs
    through the library's ``subject_dp(method="user_ldp", mode="paper")``; D' removes the canary
    subject's item at every user. Each user's clipped batch gradient moves by ``2C`` (not the
    ``C`` of an item-level argument), and the ``s`` users' moves add up over the rounds (not
    ``sqrt(s)``): the server's ``w_0`` increments are ``N(+-sqrt(s) / sigma, 1)`` per round
    after normalisation, and their sum is the exact LLR (up to scale).

    Claims: ``paper`` (``target_epsilon`` up to the calibration's tolerance) and ``strict`` (the
    sound subject-level accountant: ``Gaussian(sigma / 2)`` per step, composed over users and
    rounds).
    """
    s = validate.positive_int("num_users", num_users, minimum=1)
    R = validate.positive_int("nominal_rounds", nominal_rounds)
    delta = validate.delta(delta)
    rounds = max(1, int(R / math.sqrt(s)))
    host = user_ldp_federation(num_users=s, dim=dim)
    fed = subject_dp.federation_of(host, batch_size=2, local_steps=1)
    sigma = float(sdp_accounting.paper_noise_multiplier(
        fed, target_epsilon=target_epsilon, delta=delta, nominal_rounds=R)[0])
    model = least_squares_model(dim)
    lr = 1.0
    alg = subject_dp.subject_dp(model, host, method="user_ldp", batch_size=2, local_steps=1,
                                learning_rate=lr, mode="paper", clip_norm=clip_norm,
                                noise_multipliers=sigma)
    data = host.to_device()
    state0 = alg.init(model.init(jax.random.key(0)))
    slots = jnp.broadcast_to(jnp.arange(2, dtype=jnp.int32), (s, 1, 2))
    is_canary = jnp.asarray(host.extras[subject_dp.SUBJECT_KEY] == CANARY_SUBJECT)[:, None, :]
    users = jnp.arange(s, dtype=jnp.int32)
    sig_t = jnp.full((s, 1), sigma, jnp.float32)

    def mechanism(kk, present):
        mask = jnp.ones((s, 1, 2), bool) & (present | ~is_canary)
        ri = subject_dp.RoundInput(users=users, user_mask=jnp.ones((s,), bool), idx=slots,
                                   mask=mask, sigma=sig_t, active=jnp.ones((s, 1), bool))

        def one_round(state, r):
            state, _ = alg.apply(state, data, ri, jax.random.fold_in(kk, r))
            return state, None

        state, _ = jax.lax.scan(one_round, state0, jnp.arange(rounds))
        return state.params["w"][0]

    claim = lambda mode: sdp_accounting.epsilon("user_ldp", fed, mode=mode, rounds=rounds,
                                                delta=delta, noise_multipliers=sigma).epsilon
    return canary.audit(
        mechanism, lambda w0: w0, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=vmap_batch,
        name=f"UserLDP at the paper's sigma (subject: 1 item at each of {s} users, "
             f"{rounds} rounds)",
        claimed={"paper": claim("paper"), "strict": claim("strict")},
        neighbour="add/remove one subject (items at every user)",
        view="server model after every round",
        info={"noise_multiplier": sigma, "num_users": s, "nominal_rounds": R,
              "rounds": rounds, "target_epsilon": float(target_epsilon),
              "mu_true": 2.0 * math.sqrt(s * rounds) / sigma,
              "statistic": "total movement of w_0 (the exact LLR up to scale)"})


__all__ = ["CANARY_SUBJECT", "audit_higradavg", "audit_local_group_dp", "audit_user_ldp",
           "canary_federation", "user_ldp_federation"]
