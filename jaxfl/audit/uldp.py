"""Canary audit of ULDP-AVG with a user whose records sit in several silos (Kato et al., PVLDB
2024, Algorithm 3/4, Theorem 3; :func:`jaxfl.algorithms.uldp.uldp_avg`).

Neighbouring relation: add/remove one *user*, i.e. all of the user's records in every silo at
once. The adversary is the aggregation server; its view is the global model after every round.
The claim: ULDP-AVG's per-user weighted clipping (``sum_s w_{s,u} clip_C(Delta^{s,u})`` with
``sum_s w_{s,u} = 1``) keeps the sensitivity at C however many silos the user spans, so each
round is a Gaussian (or, with user sampling, a Poisson-subsampled Gaussian) mechanism with
multiplier sigma.

Worst-case federation (least squares without bias): the canary user 0 holds one record
``x = e_0, y = 10^4`` in *every* silo, so each of its (silo, user) deltas points along ``+e_0``
and is clipped to C: the weighted sum has norm exactly C, all the sensitivity. The other users
hold all-zero records (zero updates). D' drops user 0 (its weights are zero, the same output as
removing its pairs). The normalised per-round increments of ``w_0`` are ``N(0, 1)`` under D' and
``(1 - q) N(0, 1) + q N(1/sigma, 1)`` under D; their exact LLR is the test. Had the user's
silos each counted fully (ULDP-NAIVE's sensitivity ``|S| C`` without group accounting), the
shift would be ``|S| / sigma``: ``info["naive_epsilon"]`` is what such a claim would have to be.

Example Usage:
  >>> import jax
  >>> r = audit_uldp_avg(noise_multiplier=1.0, num_silos=3, rounds=1, trials=2000,
  ...                    delta=1e-2, key=jax.random.key(0))
  >>> r.epsilon_lb <= r.claimed["strict"]
  True
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import validate
from jaxfl.accounting import accountants, conversions
from jaxfl.accounting import uldp as uldp_accounting
from jaxfl.algorithms import uldp, uldp_data, uldp_silo
from jaxfl.audit import canary, statistics
from jaxfl.audit.dp_fedavg import least_squares_model
from jaxfl.data import uldp_records

CANARY_USER = 0


def canary_silos(*, num_silos: int, num_users: int, dim: int, target: float = 1e4):
    """Records of the worst-case federation: user 0 in every silo, others with zero records."""
    xs, ys, users = [], [], []
    for s in range(num_silos):
        # User 0's canary record, plus one zero record of every other user in this silo.
        x = np.zeros((num_users, dim), np.float32)
        y = np.zeros((num_users,), np.float32)
        x[0, 0], y[0] = 1.0, target
        xs.append(x)
        ys.append(y)
        users.append(np.arange(num_users))
    return uldp_records.from_silos(xs, ys, users, num_users=num_users)


def audit_uldp_avg(*, noise_multiplier: float, num_silos: int, rounds: int, trials: int,
                   delta: float, key: jax.Array, sampling_rate: float = 1.0,
                   num_users: int = 4, clip_norm: float = 1.0, weighting: str = "uniform",
                   dim: int = 2, confidence: float = 0.95, batch_size: int = 4096
                   ) -> canary.AuditResult:
    """Audits ULDP-AVG(-w)(-s) against its user-level accountant (see module docstring).

    Args:
      noise_multiplier: sigma.
      num_silos: |S|; the canary user has a record in every silo.
      rounds: rounds per trial (the view is the model after every round).
      trials: runs per hypothesis.
      delta: delta of the bound and of the claims.
      key: audit key.
      sampling_rate: user-level Poisson rate q (Algorithm 4).
      num_users: |U| (the canary plus zero users).
      clip_norm: C.
      weighting: ``"uniform"`` (ULDP-AVG) or ``"optimal"`` (ULDP-AVG-w).
      dim: model dimension.
      confidence: Clopper-Pearson confidence.
      batch_size: trials vmapped together.
    """
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    S = validate.positive_int("num_silos", num_silos)
    rounds = validate.positive_int("rounds", rounds)
    q = validate.probability("sampling_rate", sampling_rate)
    delta = validate.delta(delta)
    U = validate.positive_int("num_users", num_users, minimum=2)
    model = least_squares_model(dim)
    alg = uldp.uldp_avg(model, num_silos=S, num_users=U, local_epochs=1, batch_size=1,
                        local_lr=1.0, global_lr=1.0, clip_norm=clip_norm,
                        noise_multiplier=sigma, weighting=weighting, sampling_rate=q)
    data = uldp_data.pair_data(canary_silos(num_silos=S, num_users=U, dim=dim)).to_device()
    state0 = alg.init(model.init(jax.random.key(0)))
    others = jnp.ones((U,), jnp.float32).at[CANARY_USER].set(0.0)

    def mechanism(k, present):
        def one_round(state, r):
            kr = jax.random.fold_in(k, r)
            drawn = jax.random.bernoulli(jax.random.fold_in(kr, 1), q)
            mask = others.at[CANARY_USER].set(jnp.where(present & drawn, 1.0, 0.0))
            state, _ = alg.apply(state, data, mask, kr)
            return state, state.params["w"]

        _, traj = jax.lax.scan(one_round, state0, jnp.arange(rounds))
        return traj  # [rounds, dim]

    scale = alg.accountant.privatizer.std() / alg.info["denominator"]  # global_lr = 1
    llr = statistics.subsampled_gaussian_llr(mu=1.0 / sigma, q=q, scale=scale)

    def statistic(traj):
        w0 = jnp.concatenate([jnp.zeros((1,), traj.dtype), traj[:, 0]])
        return llr(jnp.diff(w0))

    claims = {
        "strict": accountants.epsilon(alg.accountant.dp_event(rounds), delta,
                                      accountant="pld"),
        "paper": uldp_accounting.uldp_epsilon(rounds=rounds, noise_multiplier=sigma,
                                              delta=delta, sampling_rate=q, mode="paper")}
    naive = (conversions.gaussian_epsilon(S * np.sqrt(rounds) / sigma, delta) if q == 1.0
             else None)
    return canary.audit(
        mechanism, statistic, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=batch_size, name=f"{alg.name} (user in {S} silos)", claimed=claims,
        neighbour="add/remove one user (records in every silo)",
        view="global model after every round (server)",
        info={"noise_multiplier": sigma, "num_silos": S, "rounds": rounds,
              "sampling_rate": q, "weighting": weighting, "naive_epsilon": naive,
              "statistic": "exact LLR of the per-round increments along e_0"})





# --------------------------------------------------------------------------------------------
# ULDP-NAIVE: the paper's user sensitivity C|S| vs the true 2C|S| (issue 16, finding a)
# --------------------------------------------------------------------------------------------


def naive_canary_silos(*, num_silos: int, dim: int, target: float = 1e4):
    """``(D, D')`` :class:`~jaxfl.algorithms.uldp_data.SiloData` of the NAIVE attack.

    Every silo holds one record of the canary user 0 (``x = e_0, y = 2 target``) and one record
    of user 1 (``x = e_0, y = -target``). One full-batch local step from ``w ~ 0`` moves the
    silo's delta along ``+e_0`` with the canary and along ``-e_0`` without it, both far beyond
    C: the clipped deltas are ``+C e_0`` and ``-C e_0``. Removing user 0 therefore moves every
    silo's clipped delta by 2C, and their sum by ``2 C |S|`` (the paper is silent on add/remove
    vs replace; here the silo still reports, its delta is replaced, not removed). D' masks the
    canary's records.
    """
    xs, ys, users = [], [], []
    for _ in range(num_silos):
        x = np.zeros((2, dim), np.float32)
        x[:, 0] = 1.0
        xs.append(x)
        ys.append(np.array([2.0 * target, -target], np.float32))
        users.append(np.array([CANARY_USER, 1]))
    d = uldp_data.silo_data(uldp_records.from_silos(xs, ys, users, num_users=2))
    canary_slot = np.asarray(d.index) == np.asarray(  # rows of user 0 (first in each silo)
        [[s * 2 for _ in range(d.index.shape[1])] for s in range(num_silos)])
    dprime = uldp_data.SiloData(x=d.x, y=d.y, index=d.index, mask=d.mask & ~canary_slot,
                                count=d.count - canary_slot.sum(axis=1).astype(np.int32))
    return d.to_device(), dprime.to_device()


def audit_uldp_naive(*, noise_multiplier: float, num_silos: int, rounds: int, trials: int,
                     delta: float, key: jax.Array, clip_norm: float = 1.0, dim: int = 2,
                     confidence: float = 0.95, batch_size: int = 4096) -> canary.AuditResult:
    """Audits ULDP-NAIVE (:func:`jaxfl.algorithms.uldp_silo.uldp_naive`) against the paper's
    sensitivity ``C|S|`` (claim ``paper``: multiplier sigma) and the sound ``2C|S|`` (claim
    ``strict``: multiplier sigma / 2), add/remove one user with a record in every silo.

    The view is the global model after every round; its increment along ``e_0`` is
    ``(±C|S| + N(0, sigma^2 C^2 |S|^2)) / |S|``, i.e. the normalised increments are
    ``N(±1/sigma, 1)``: a Gaussian mechanism with ``mu = 2 sqrt(rounds) / sigma``, twice the
    paper's. The test is the exact LLR (the sum of the normalised increments).
    """
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    S = validate.positive_int("num_silos", num_silos)
    rounds = validate.positive_int("rounds", rounds)
    delta = validate.delta(delta)
    model = least_squares_model(dim)
    make = lambda sens: uldp_silo.uldp_naive(
        model, num_silos=S, local_epochs=1, batch_size=2, local_lr=1.0, global_lr=1.0,
        clip_norm=clip_norm, noise_multiplier=sigma, accounting=sens)
    alg, alg_paper = make("strict"), make("paper")
    d, dprime = naive_canary_silos(num_silos=S, dim=dim)
    state0 = alg.init(model.init(jax.random.key(0)))
    # std of the increment of w_0: |S| shares of sigma C sqrt(|S|), averaged: sigma C
    scale = alg.accountant.privatizer.std() / S

    def mechanism(k, present):
        data = canary.select(present, d, dprime)

        def one_round(state, r):
            state, _ = alg.apply(state, data, None, jax.random.fold_in(k, r))
            return state, state.params["w"]

        _, traj = jax.lax.scan(one_round, state0, jnp.arange(rounds))
        return traj

    def statistic(traj):
        w0 = jnp.concatenate([jnp.zeros((1,), traj.dtype), traj[:, 0]])
        return jnp.sum(jnp.diff(w0)) / scale  # LLR of N(+1/sigma) vs N(-1/sigma), up to scale

    claims = {"strict": accountants.epsilon(alg.accountant.dp_event(rounds), delta,
                                            accountant="pld"),
              "paper": accountants.epsilon(alg_paper.accountant.dp_event(rounds), delta,
                                           accountant="pld")}
    return canary.audit(
        mechanism, statistic, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=batch_size, name=f"ULDP-NAIVE (user in {S} silos; paper C|S| vs 2C|S|)",
        claimed=claims, neighbour="add/remove one user (records in every silo)",
        view="global model after every round (server)",
        info={"noise_multiplier": sigma, "num_silos": S, "rounds": rounds,
              "mu_true": 2.0 * math.sqrt(rounds) / sigma,
              "mu_paper": math.sqrt(rounds) / sigma,
              "statistic": "exact LLR: sum of the normalised increments along e_0"})




# --------------------------------------------------------------------------------------------
# ULDP-GROUP with the authors' round-robin flags (global silo pointer; issue 26, point 7a)
# --------------------------------------------------------------------------------------------


def coupled_group_federation(*, group_size: int, pairs: int, dim: int, target: float = 1e4):
    """``(D, D', changed)`` of the coupled-flags attack on ULDP-GROUP-k (before bounding).

    ``S = k + 1`` silos. The canary user 0 holds one record (in silo 0); users ``1..pairs``
    hold one record in every silo, so the bounding keeps k of their ``k + 1`` records and drops
    the one in the silo where the authors' global pointer
    (:func:`jaxfl.algorithms.uldp_data.bound_histogram`, ``pointer="global"``) stops. User 0
    advances that pointer by one, so removing it shifts the dropped silo of every later user:
    under D user u keeps a record that D' drops and D' keeps one that D drops. Those two
    records get opposite labels (``x = e_0``, ``y = +target`` for the record kept only under D,
    ``-target`` for the one kept only under D'); records kept under both are all-zero (zero
    gradient). ``changed`` counts the kept records that differ between the bounded D and D'
    (``2 * pairs + 1`` here, for a neighbour relation that group privacy over ``k`` records
    would need to keep at ``<= k``).
    """
    k = validate.positive_int("group_size", group_size)
    m = validate.positive_int("pairs", pairs)
    S = k + 1
    hist = [{u: 1 for u in range(m + 1) if u > 0 or s == 0} for s in range(S)]
    without = [{u: c for u, c in h.items() if u != CANARY_USER} for h in hist]
    q_d = uldp_data.bound_histogram(hist, k, pointer="global")
    q_n = uldp_data.bound_histogram(without, k, pointer="global")
    xs, ys, users = [], [], []
    for s in range(S):
        us = sorted(hist[s])
        x = np.zeros((len(us), dim), np.float32)
        y = np.zeros((len(us),), np.float32)
        for r, u in enumerate(us):
            in_d, in_n = q_d[s].get(u, 0) > 0, q_n[s].get(u, 0) > 0
            if in_d != in_n:
                x[r, 0], y[r] = 1.0, target if in_d else -target
        xs.append(x)
        ys.append(y)
        users.append(np.asarray(us))
    full = uldp_records.from_silos(xs, ys, users, num_users=m + 1)
    changed = sum(abs(a.get(u, 0) - b.get(u, 0)) for a, b in zip(q_d, q_n, strict=True)
                  for u in set(a) | set(b))
    return full, full.subset(np.asarray(full.user) != CANARY_USER), int(changed)


def audit_uldp_group_coupled(*, group_size: int, pairs: int, noise_multiplier: float,
                             rounds: int, trials: int, delta: float, key: jax.Array,
                             clip_norm: float = 1.0, batch_size: int = 64, dim: int = 2,
                             confidence: float = 0.95, vmap_batch: int = 4096
                             ) -> canary.AuditResult:
    """Attacks ULDP-GROUP-k trained on the authors' round-robin flags (global pointer).

    Neighbours: D and D' differ in one user (the canary, one record); both go through the
    library's bounding with the authors' pointer
    (:func:`jaxfl.algorithms.uldp_data.bound_records`, ``pointer="global"``) and then through
    ULDP-GROUP-k's DP-SGD silos (:func:`jaxfl.algorithms.uldp_silo.dp_sgd_silos`, built from
    each bounded dataset's own silo sizes, as the authors' code does).
    :func:`coupled_group_federation` makes every kept
    record that changes push the model the same way: the bounded datasets differ in
    ``2 * pairs + 1`` records, not ``<= k``. Adversary: the server; view: the global model after
    every round; statistic: the total movement of ``w_0`` (threshold and side chosen on the
    held-out half, as for every audit).

    Claims: ``paper`` is the authors' group conversion for k (the GROUP accountant in
    ``mode="paper"`` on the bounded D); ``strict`` is the library's strict report of flags that
    couple users, ``inf`` (no group size bounds the change). A lower bound above ``paper`` is a
    counterexample to the published ULDP-GROUP guarantee with these flags.
    """
    k = validate.positive_int("group_size", group_size)
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    rounds = validate.positive_int("rounds", rounds)
    delta = validate.delta(delta)
    full, without, changed = coupled_group_federation(group_size=k, pairs=pairs, dim=dim)
    model = least_squares_model(dim)
    sides = []
    for raw in (full, without):
        kept, _ = uldp_data.bound_records(raw, k, pointer="global")
        sizes = np.bincount(kept.silo, minlength=kept.num_silos)
        sides.append((kept, sizes))
    length = int(max(s.max() for _, s in sides))
    algs, datas = [], []
    for kept, sizes in sides:  # each hypothesis trains with its own bounded silo sizes
        algs.append(uldp_silo.dp_sgd_silos(
            model, silo_sizes=sizes.tolist(), local_epochs=1, batch_size=batch_size,
            local_lr=1.0, global_lr=1.0, clip_norm=clip_norm, noise_multiplier=sigma,
            group_size=k, accounting="strict", bounding="global", group_mog=False))
        datas.append(uldp_data.silo_data(kept, length=length).to_device())
    state0 = algs[0].init(model.init(jax.random.key(0)))

    def run(alg, data, kk):
        def one_round(state, r):
            state, _ = alg.apply(state, data, None, jax.random.fold_in(kk, r))
            return state, None

        state, _ = jax.lax.scan(one_round, state0, jnp.arange(rounds))
        return state.params["w"][0]

    def mechanism(kk, present):
        # Both branches run (one jit); the hypothesis picks its own bounded data and sizes.
        return jnp.where(present, run(algs[0], datas[0], kk), run(algs[1], datas[1], kk))

    sizes_d = sides[0][1].tolist()
    paper = uldp_silo.dp_sgd_silos(
        model, silo_sizes=sizes_d, local_epochs=1, batch_size=batch_size, local_lr=1.0,
        global_lr=1.0, clip_norm=clip_norm, noise_multiplier=sigma, group_size=k,
        accounting="paper", bounding="global").accountant.report(rounds, delta)
    strict = algs[0].accountant.report(rounds, delta)
    return canary.audit(
        mechanism, lambda w0: w0, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=vmap_batch,
        name=f"ULDP-GROUP-{k} with the authors' round-robin flags ({k + 1} silos, {pairs} "
             "coupled users)",
        claimed={"paper": paper.epsilon, "strict": strict.epsilon},
        neighbour="add/remove one user (1 record); bounding with the global pointer",
        view="global model after every round (server)",
        info={"group_size": k, "num_silos": k + 1, "pairs": pairs, "rounds": rounds,
              "noise_multiplier": sigma, "changed_kept_records": changed,
              "silo_sizes_d": sizes_d, "silo_sizes_dprime": sides[1][1].tolist(),
              "strict_note": strict.details.get("note", ""),
              "statistic": "total movement of w_0 (records kept only under D push it up, "
                           "records kept only under D' push it down)"})


__all__ = ["CANARY_USER", "audit_uldp_avg", "audit_uldp_group_coupled", "audit_uldp_naive",
           "canary_silos", "coupled_group_federation", "naive_canary_silos"]
