"""Audit of DP-OGL's propagation delay through an overlapping worker (Kiani et al. 2024,
Theorem 1; :mod:`jaxfl.algorithms.dp_ogl`, :mod:`jaxfl.accounting.dp_ogl`).

Structure: a string of two groups ``G0 = {0, 1}`` and ``G1 = {1, 2}`` with inter-group period S.
Target: worker 0 (only in G0). Adversary (TM1): the honest-but-curious worker 2 (only in G1),
who sees every G1 model ``theta^1_1 .. theta^t_1``. Information about worker 0 can reach G1
only through the overlapping worker 1, whose start point at inter-group epochs is the mean of
both groups' models; Theorem 1 says no leakage before epoch ``t* = S rho + 2`` (rho = 1 here)
and at most ``count(t) = S max(0, ceil((t-1)/S) - rho)`` sampled-Gaussian mechanisms after.

The library's ``dp_ogl`` runs on a federation built for the attack (least squares, no bias):

* worker 0 (the canary) holds ``x = e_0, y = 10^4``: its update is clipped to ``c e_0`` always;
* worker 1 (the relay) holds ``x = e_0, y = 0`` and takes one full-batch step at lr 1, so its
  update is ``-phi_0[0] e_0``: it copies the e_0 coordinate of its start point into its group's
  update (linear while unclipped), carrying G0's state into G1 at inter-group epochs;
* worker 2 holds an all-zero example (zero update); D' removes worker 0's data.

With sampling rate 1 every epoch is deterministic given the noise. Checks:

* **exact zero leakage before t***: under common randomness (same keys for D and D') the G1
  model sequence up to ``theta^{t*-1}`` is bit-identical (``info["identical_before_onset"]``),
  and so is the distribution;
* **below the bound after t***: the statistic ``-(theta^{t*}_1[0] - (1 - 1/(2|G1|))
  theta^{t*-1}_1[0])`` (the relay's contribution with the adversary's known part removed) is
  audited and its epsilon lower bound must stay below the Theorem 1 claim at ``t*``.
  (``info["pre_onset_epsilon_lb"]`` audits the same statistic one epoch earlier: ~0.)

Example Usage:
  >>> import jax
  >>> r = audit_dp_ogl_pair(noise_multiplier=0.5, trials=2000, delta=1e-2,
  ...                       key=jax.random.key(0))
  >>> r.info["identical_before_onset"], r.epsilon_lb <= r.claimed["strict"]
  (True, True)
"""

from __future__ import annotations

import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import privatizer, validate
from jaxfl.accounting import conversions
from jaxfl.accounting import dp_ogl as ogl_accounting
from jaxfl.algorithms import dp_ogl
from jaxfl.audit import bounds, canary
from jaxfl.audit.dp_fedavg import least_squares_model
from jaxfl.data import federated
from jaxfl.topology import groups

TARGET, RELAY, ATTACKER = 0, 1, 2


def _with_and_without_target(x, y):
    """Neighbouring federations of one record per worker: with and without TARGET's record."""
    mask = np.ones(y.shape, bool)
    counts = mask.sum(1).astype(np.int32)
    d = federated.FederatedData(x=x, y=y, mask=mask, num_examples=counts).validate()
    mask_p, counts_p = mask.copy(), counts.copy()
    mask_p[TARGET], counts_p[TARGET] = False, 0
    dp = federated.FederatedData(x=x, y=y, mask=mask_p, num_examples=counts_p).validate()
    return d.to_device(), dp.to_device()


def _federation(dim: int):
    x = np.zeros((3, 1, dim), np.float32)
    y = np.zeros((3, 1), np.float32)
    x[TARGET, 0, 0], y[TARGET, 0] = 1.0, 1e4   # canary: clipped to c e_0
    x[RELAY, 0, 0] = 1.0                        # relay: update = -phi_0[0] e_0
    return _with_and_without_target(x, y)


def audit_dp_ogl_pair(*, noise_multiplier: float, trials: int, delta: float, key: jax.Array,
                      period: int = 2, clip_norm: float = 1.0, dim: int = 2,
                      confidence: float = 0.95, batch_size: int = 4096) -> canary.AuditResult:
    """Audits worker 0 -> worker 2 of the two-group string at the onset epoch (see module doc).

    Args:
      noise_multiplier: sigma of both groups.
      trials: runs per hypothesis.
      delta: delta of the bound and of the claims.
      key: audit key.
      period: S.
      clip_norm: c.
      dim: model dimension.
      confidence: Clopper-Pearson confidence.
      batch_size: trials vmapped together.
    """
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    S = validate.positive_int("period", period)
    delta = validate.delta(delta)
    structure = groups.from_groups([[TARGET, RELAY], [RELAY, ATTACKER]], name="string(2)")
    rho = int(groups.group_to_worker_distances(structure)[0, ATTACKER])
    onset = S * rho + 2  # first t with theta^t_1 depending on worker 0
    model = least_squares_model(dim)
    alg = dp_ogl.dp_ogl(model, structure, period=S, local_steps=1, batch_size=None,
                        client_lr=1.0, clip_norms=clip_norm, noise_multipliers=sigma,
                        sampling_rates=1.0)
    data_d, data_dp = _federation(dim)
    state0 = alg.init(model.init(jax.random.key(0)))
    full = dp_ogl.RoundInput(mask=jnp.ones((structure.num_pairs,), bool))
    epochs = onset - 1  # theta^1 .. theta^onset

    def trajectory(k, data):
        def epoch(state, e):
            state, _ = alg.apply(state, data, full, jax.random.fold_in(k, e))
            return state, jax.tree.map(lambda p: p[1], state.params)["w"]

        _, thetas = jax.lax.scan(epoch, state0, jnp.arange(epochs))
        w1 = jax.tree.map(lambda p: p[1], state0.params)["w"]
        return jnp.concatenate([w1[None], thetas])  # G1 models theta^1..theta^onset

    size_g1 = float(structure.group_sizes[1])

    def relay_statistic(traj, t):  # uses theta^{t-1}, theta^t (1-based) of G1
        prev, cur = traj[t - 2, 0], traj[t - 1, 0]
        return -(cur - (1.0 - 1.0 / (2.0 * size_g1)) * prev)

    def one(ks):
        """Scores under D (key a) and D' (key b), and the common-randomness check (key a)."""
        ka, kb = ks
        td, tdp_b, tdp_a = (trajectory(ka, data_d), trajectory(kb, data_dp),
                            trajectory(ka, data_dp))
        scores = jnp.stack([relay_statistic(t, u) for t in (td, tdp_b) for u in (onset,
                                                                                 onset - 1)])
        same = jnp.all(td[: onset - 1] == tdp_a[: onset - 1])
        return scores, same, jnp.any(td[onset - 1] != tdp_a[onset - 1])

    t0 = time.time()
    trials = validate.positive_int("trials", trials, minimum=2)
    keys = jax.random.split(key, 2 * trials).reshape(2, trials)
    run = jax.jit(lambda a, b: jax.lax.map(one, (a, b), batch_size=min(batch_size, trials)))
    scores, same, differs = (np.asarray(v) for v in run(keys[0], keys[1]))
    scores = scores.astype(np.float64)
    identical_before, differs_at = bool(same.all()), bool(differs.any())
    bound = bounds.epsilon_lower_bound(scores[:, 0], scores[:, 2], delta=delta,
                                       confidence=confidence)
    pre = bounds.epsilon_lower_bound(scores[:, 1], scores[:, 3], delta=delta,
                                     confidence=confidence)

    kw = dict(period=S, delta=delta, noise_multipliers=sigma, sampling_rates=1.0)
    claim = lambda t, recipe: float(ogl_accounting.pairwise_epsilon(
        structure, t=t, recipe=recipe, **kw)[TARGET, ATTACKER])
    claims = {"strict": claim(onset, "default"), "paper": claim(onset, "paper")}
    info = {"period": S, "rho": rho, "onset_epoch": onset, "sigma": sigma,
            "identical_before_onset": identical_before, "differs_at_onset": differs_at,
            "claim_before_onset": claim(onset - 1, "default"),
            "pre_onset_epsilon_lb": pre.epsilon_lb,
            "mechanisms_counted": int(ogl_accounting.pairwise_counts(
                structure, t=onset, period=S)[TARGET, ATTACKER].sum()),
            "statistic": "relay projection of theta^t_1 with the known part removed",
            "score_mean_d": float(scores[:, 0].mean()),
            "score_mean_dprime": float(scores[:, 2].mean()),
            "score_std_d": float(scores[:, 0].std(ddof=1)),
            "score_std_dprime": float(scores[:, 2].std(ddof=1))}
    return canary.AuditResult(
        name=f"DP-OGL pair via overlapping worker (t = {onset})", bound=bound,
        trials=int(trials), claimed=claims, neighbour="add/remove one worker (target 0)",
        view="HbC worker 2: G1 models theta^1..theta^t (TM1)", seconds=time.time() - t0,
        info=info)





# --------------------------------------------------------------------------------------------
# DP-OGL+ with shared in-window updates (paper Eq. 11; issue 16, finding c)
# --------------------------------------------------------------------------------------------
PEER, PLUS_RELAY, PLUS_ATTACKER = 1, 2, 3


def _plus_federation(*, target: float = 1e6, pull: float = 1e3, tilt: float = 0.05):
    """Workers: target 0, peer 1, relay 2 (groups G0 = {0, 1, 2}, G1 = {2, 3}), attacker 3.

    * target: ``x = e_0, y = target``: its G0 window sum is clipped to ``sqrt(S) c e_0``.
    * peer: ``x = a = (tilt, 1), y = pull``: its update ``(pull - w.a) a`` points along ``+a``
      from the window start, but flips to ``-a`` at the window's second epoch once Eq. 11's
      un-noised shared update has moved ``w_0`` by ~target/4. Its clipped window sum is
      ``-sqrt(S) c a^`` under D and ``+sqrt(S) c a^`` under D': the G0 release moves by
      ``sqrt(S) c (e_0 - 2 a^)``, ~2 sqrt(S) c along e_1 alone, not the ``sqrt(S) c`` of the
      paper's per-pair bound.
    * relay: ``x = e_1, y = 0``: its update ``-w_1 e_1`` copies coordinate 1 of its start point
      (linear, below G1's clip norm) into G1; in G0 its window sum only sees coordinate 1 of the
      first working update, which the target does not touch (identical under D and D').
    * attacker: zero data (zero update); it shares no group with the target (TM2).
    """
    x = np.zeros((4, 1, 2), np.float32)
    y = np.zeros((4, 1), np.float32)
    x[TARGET, 0, 0], y[TARGET, 0] = 1.0, target
    x[PEER, 0, 0], x[PEER, 0, 1], y[PEER, 0] = tilt, 1.0, pull
    x[PLUS_RELAY, 0, 1] = 1.0
    a = np.array([tilt, 1.0])
    return (*_with_and_without_target(x, y), a / np.linalg.norm(a))


def plus_shared_canary(*, noise_multiplier: float, clip_norm: float = 1.0,
                       relay_clip: float = 100.0, relay_noise: float = 1e-3,
                       window_updates: str = "shared"):
    """``(structure, mechanism, statistic, info)`` of :func:`audit_dp_ogl_plus_shared`
    (``window_updates="local"``: the same canary on the sound variant, for comparison)."""
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    S, epochs = 2, 3
    structure = groups.from_groups([[TARGET, PEER, PLUS_RELAY], [PLUS_RELAY, PLUS_ATTACKER]],
                                   name="string(G0 of 3, G1 of 2)")
    model = least_squares_model(2)
    sigmas, clips = [sigma, relay_noise], [clip_norm, relay_clip]
    alg = dp_ogl.dp_ogl(model, structure, period=S, local_steps=1, batch_size=None,
                        client_lr=1.0, clip_norms=clips, noise_multipliers=sigmas,
                        sampling_rates=1.0, plus=True, window_updates=window_updates)
    data_d, data_dp, a_hat = _plus_federation()
    state0 = alg.init(model.init(jax.random.key(0)))
    full = dp_ogl.RoundInput(mask=jnp.ones((structure.num_pairs,), bool))
    size0 = float(structure.group_sizes[0])
    shift = math.sqrt(S) * clip_norm * float(np.hypot(1.0 - 2.0 * a_hat[0], 2.0 * a_hat[1]))

    def mechanism(k, present):
        data = canary.select(present, data_d, data_dp)

        def epoch(state, e):
            state, _ = alg.apply(state, data, full, jax.random.fold_in(k, e))
            return state, None

        state, _ = jax.lax.scan(epoch, state0, jnp.arange(epochs))
        return state.params["w"][1]  # G1 model after epoch 3 (the attacker's view)

    def statistic(w):
        return w[1]

    info = {"S": S, "epochs": epochs, "sigmas": sigmas, "size0": size0, "shift": shift,
            "a_hat": a_hat}
    return structure, mechanism, statistic, info


def audit_dp_ogl_plus_shared(*, noise_multiplier: float, trials: int, delta: float,
                             key: jax.Array, clip_norm: float = 1.0, relay_clip: float = 100.0,
                             relay_noise: float = 1e-3, confidence: float = 0.95,
                             batch_size: int = 4096) -> canary.AuditResult:
    """Audits DP-OGL+ with ``window_updates="shared"`` (paper Eq. 11), TM2 (its threat model).

    Structure G0 = {target, peer, relay}, G1 = {relay, attacker}, S = 2, sampling rate 1, three
    epochs: G0's first window closes at epoch 2 (noised release, Eq. 13), the relay starts the
    inter-group epoch 3 from the mean of both groups' models and copies coordinate 1 into G1's
    model, which the attacker (a G1 member) reads after epoch 3. Only G0's noised release
    carries the target's data there. G1 uses clip ``relay_clip`` and noise ``relay_noise``
    (per-group parameters; G1's mechanisms do not involve the target, so its noise is no part
    of the target's claim) so that the relay's copy is linear and barely noised. The statistic
    is coordinate 1 of the attacker's view (1-D Gaussian under both hypotheses: exact test).

    Claims: ``paper`` is the library's per-pair Theorem 1 epsilon for DP-OGL+ (paper recipe,
    TM2) at the attacker's epoch. ``strict`` is a sound bound for this view: each member's
    clipped window sum moves by at most ``2 sqrt(S) c`` (the target's by ``sqrt(S) c``), so each
    G0 release has sensitivity ``<= (2|G0| - 1) sqrt(S) c``; at most two G0 windows have closed.
    The paper claim is exceeded because the peer's window sum depends on the target's data.
    """
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    delta = validate.delta(delta)
    structure, mechanism, statistic, parts = plus_shared_canary(
        noise_multiplier=sigma, clip_norm=clip_norm, relay_clip=relay_clip,
        relay_noise=relay_noise)
    S, epochs, sigmas, size0 = parts["S"], parts["epochs"], parts["sigmas"], parts["size0"]
    shift, a_hat = parts["shift"], parts["a_hat"]
    kw = dict(period=S, delta=delta, noise_multipliers=sigmas, sampling_rates=1.0,
              algorithm="dp_ogl_plus")
    paper = float(ogl_accounting.pairwise_epsilon(structure, t=epochs + 1, recipe="paper",
                                                  **kw)[TARGET, PLUS_ATTACKER])
    strict = conversions.gaussian_epsilon((2 * size0 - 1) * math.sqrt(2.0) / sigma, delta)
    return canary.audit(
        mechanism, statistic, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=batch_size, name="DP-OGL+ shared window updates (Eq. 11), S=2, via relay",
        claimed={"paper": paper, "strict": strict},
        neighbour="add/remove one worker (target 0)",
        view="TM2 attacker (no shared group): G1 model after epoch 3",
        info={"sigma": sigma, "period": S, "epochs": epochs,
              "mu_g0_release": shift / privatizer.gaussian(  # G0's release: sqrt(S) c sigma
                  clip_norm=clip_norm, noise_multiplier=sigma,
                  sensitivity_factor=math.sqrt(S)).std(),
              "mu_g0_release_coordinate1": 2.0 * float(a_hat[1]) / sigma,
              "mu_paper_per_window": 1.0 / sigma, "group_size_g0": size0,
              "statistic": "coordinate 1 of the attacker's G1 model (exact 1-D test)"})


__all__ = ["audit_dp_ogl_pair", "audit_dp_ogl_plus_shared", "plus_shared_canary"]
