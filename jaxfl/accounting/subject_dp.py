"""Subject-level privacy accounting for Marathe & Kanani, "Subject Granular Differential Privacy
in Federated Learning" (arXiv 2206.03617 v1), Section 3 and Appendix A.

A *subject* is a person whose items may sit at several federation users; subject-level DP
protects adding/removing all of a subject's items at every user at once (Def. 2.3). Each user
runs a local DP-SGD variant (``jaxfl.algorithms.subject_dp``); the server averages the users'
parameters, so a subject's per-user losses compose sequentially across the users that hold its
items ("horizontal composition", Thm. 3.9).

Two modes, and every report (a :class:`~jaxfl.accounting.report.PrivacyReport`) says which
one it is (``mode``; ``sound=False`` for the paper's subject-level claims):

* ``"paper"`` reproduces v1's numbers. Noise is calibrated per user with the moments accountant
  (RDP of the Poisson-subsampled Gaussian) at the *item* sampling rate ``q_i = B / n_i`` over the
  nominal ``T * R`` steps; LocalGroupDP uses Cor. 3.5, ``(E/Z, D / (Z e^{(Z-1)E/Z}))``; UserLDP
  reuses the item-level sigma; subject-level methods run ``R / sqrt(s)`` rounds (Thm. 3.10) and
  the reported epsilon is the item-level RDP epsilon after ``T * rounds * sqrt(s)`` steps (= the
  target when ``rounds = R / sqrt(s)``).
* ``"strict"`` (default) is a sound upper bound. It fixes the three optimistic steps of the paper
  (Secs. 3.1-3.5; our analysis, see jaxfl.audit.subject_dp for the counterexample): (1) horizontal
  composition adds the per-user RDP of every user holding the subject (so ``s`` users x ``R / s``
  rounds matches one user x ``R`` rounds, not ``R / sqrt(s)``); (2) a subject with ``k`` items at a
  user is sampled with probability ``1 - (1 - q)^k``, not ``q``; (3) UserLDP's batch gradient moves
  by ``2C`` under Def. 3.1 and gets no amplification (``q = 1``). LocalGroupDP with the in-batch
  group size ``Z`` has a data-dependent noise scale that the released parameters reveal; its strict
  epsilon is the variance-mismatch bound of :mod:`jaxfl.accounting.local_group_bound` (finite only
  because the model size ``d`` is finite, and large for realistic ``d``; ``inf``, still a sound
  upper bound, when ``d`` is not given). Strict mode assumes Poisson sampling of items (the
  accountant's sampling model) and treats the per-user item counts ``k_{a,i}`` as public.

Per-step subject-level events in strict mode (user ``i``, subject with ``k`` items there,
``p = 1 - (1 - q_i)^k``, noise multiplier ``sigma`` relative to the clip norm ``C``):

============== ================================================================================
HiGradAvgDP    ``PoissonSampled(p, Gaussian(sigma))`` (per-subject mean has norm <= C, Lemma 3.7)
LocalItemDP,   min over two sound routes: ``PoissonSampled(p, Gaussian(sigma / k))`` (the subject
LocalGroupDP   moves the clipped sum by <= kC), and Mironov's RDP group privacy (Prop. 2) applied
(fixed noise)  to each user's item-level run; optional tight PLD bound with a mixture of Gaussians
UserLDP        ``Gaussian(sigma / 2)`` every step (closed form via the analytic Gaussian)
LocalGroupDP   per-user RDP of :func:`~jaxfl.accounting.local_group_bound.local_group_batch_rdp`
(batch sigma_Z) (Poisson sampling, ``sigma_Z`` nondecreasing in Z, model dimension ``d``), summed
               over the subject's users, on :func:`~jaxfl.accounting.local_group_bound.
               default_orders` (dense near 1)
============== ================================================================================

All arithmetic is host-side float64 (numpy, dp-accounting).

Example Usage:
  >>> fed = Federation.uniform(num_users=16, examples_per_user=35725, batch_size=512,
  ...                          local_steps=1, items_per_subject_per_user=10.2)
  >>> sigma = paper_noise_multiplier(fed, target_epsilon=4.0, delta=1e-5, nominal_rounds=100)
  >>> round(float(sigma[0]), 3)
  0.688
  >>> r = epsilon("higradavg_dp", fed, mode="paper", rounds=25, delta=1e-5, noise_multipliers=sigma)
  >>> (r.mode, round(r.epsilon, 2))
  ('paper', 4.0)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import dp_accounting
import numpy as np

from jaxfl import validate
from jaxfl.accounting import accountants, conversions, events, recipes, report
from jaxfl.accounting import sampler as noise_sampler
from jaxfl.accounting.subject_dp_bounds import (  # noqa: F401  (re-exported building blocks)
    TF_PRIVACY_ORDERS,
    calibrate_noise_multiplier,
    dwork_roth_sigma,
    group_noise_multiplier,
    horizontal_rdp,
    item_epsilon,
    mixture_epsilon_pld,
    mixture_event,
    paper_group_epsilon,
    paper_group_privacy,
    paper_group_target,
    step_rdp,
    subject_inclusion_probability,
)
from jaxfl.accounting.subject_dp_epsilon import (  # noqa: F401  (re-exported)
    METHOD_NAMES,
    METHODS,
    MODES,
    SUBJECT_METHODS,
    Federation,
    _counts,
    _strict_subject_eps,
    epsilon,
    paper_rounds,
    subject_counts,
)


# --------------------------------------------------------------------------------------------
# Noise calibration and round budgets
# --------------------------------------------------------------------------------------------
def paper_noise_multiplier(fed: Federation, *, target_epsilon: float, delta: float,
                           nominal_rounds: int, orders: Sequence[float] = recipes.DEFAULT_ORDERS,
                           conversion: str = "improved") -> np.ndarray:
    """``[n]`` per-user sigma_i of the paper (section 3.3): item-level (eps, delta) at
    ``q_i`` over ``T_i * R`` nominal steps, each user independently (LocalItemDP, HiGradAvgDP,
    and UserLDP in paper mode)."""
    R = validate.positive_int("nominal_rounds", nominal_rounds)
    return np.array([calibrate_noise_multiplier(
        target_epsilon=target_epsilon, delta=delta, sampling_rate=float(q), steps=int(t) * R,
        orders=orders, conversion=conversion)
        for q, t in zip(fed.sampling_rates, fed.local_steps, strict=True)])


def paper_group_table(fed: Federation, *, target_epsilon: float, delta: float,
                      nominal_rounds: int, orders: Sequence[float] = recipes.DEFAULT_ORDERS,
                      conversion: str = "improved") -> Callable[[int, int], float]:
    """LocalGroupDP's lazy ``(user, Z) -> sigma_{user,Z}`` lookup (calibrated on first use and
    cached; users with equal ``(q_i, T_i)`` share entries)."""
    R = validate.positive_int("nominal_rounds", nominal_rounds)
    q, T = fed.sampling_rates, fed.local_steps

    def lookup(user: int, group_size: int) -> float:
        return group_noise_multiplier(target_epsilon=target_epsilon, delta=delta,
                                      group_size=int(group_size), sampling_rate=float(q[user]),
                                      steps=int(T[user]) * R, orders=orders, conversion=conversion)

    return lookup


def strict_noise_multiplier(method: str, fed: Federation, *, target_epsilon: float,
                            delta: float, rounds: int,
                            orders: Sequence[float] = recipes.DEFAULT_ORDERS,
                            conversion: str = "improved") -> float:
    """One sigma for all users such that the strict subject-level epsilon after ``rounds``
    rounds is at most ``target_epsilon`` for every subject. Calibrated on the subject envelope
    (largest count at every user), which dominates every real subject.

    LocalItemDP is calibrated at item level (its own, sound, claim); LocalGroupDP gets the
    data-independent ("fixed") noise that gives subject-level ``target_epsilon``.
    """
    validate.one_of("method", method, METHODS[1:])
    eps = validate.positive("target_epsilon", target_epsilon)
    delta = validate.delta(delta)
    rounds = validate.positive_int("rounds", rounds)
    orders = tuple(float(o) for o in orders)
    if method == "local_item_dp":
        return max(calibrate_noise_multiplier(target_epsilon=eps, delta=delta,
                                              sampling_rate=float(q), steps=int(t) * rounds,
                                              orders=orders, conversion=conversion)
                   for q, t in zip(fed.sampling_rates, fed.local_steps, strict=True))
    if method == "user_ldp":
        counts = _counts(fed, envelope=True)
        n_comp = horizontal_rdp(((counts > 0) * fed.local_steps)[:, :, None],
                                fed.users_per_round)[0, 0] * rounds
        return 2.0 * math.sqrt(n_comp) * conversions.gaussian_noise_multiplier(eps, delta)
    inner = "higradavg_dp" if method == "higradavg_dp" else "local_item_dp"

    def eps_of(sigma):
        sig = np.full(fed.num_users, sigma)
        return float(_strict_subject_eps(inner, fed, sig, rounds, delta, orders, conversion,
                                         True)[0].max())

    return accountants.calibrate_noise_multiplier(epsilon_of=eps_of, target_epsilon=eps,
                                                  upper=1e4, tol=1e-4)


def rounds_for_target(method: str, fed: Federation, *, mode: str = "strict",
                      target_epsilon: float, delta: float, max_rounds: int = 100000,
                      **kwargs) -> int:
    """Largest number of rounds whose epsilon (in ``mode``) stays <= ``target_epsilon``
    (0 if even one round exceeds it). ``kwargs`` go to :func:`epsilon`."""
    eps = validate.positive("target_epsilon", target_epsilon)
    hi = validate.positive_int("max_rounds", max_rounds)

    def ok(r):
        return epsilon(method, fed, mode=mode, rounds=r, delta=delta, **kwargs).epsilon <= eps

    if ok(hi):
        return hi
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def run_rounds(method: str, nominal_rounds: int, users_per_round: int) -> int:
    """Rounds the paper runs: ``R`` for FedAvg and LocalItemDP, Thm. 3.10's ``R / sqrt(s)``
    for the subject-level methods."""
    validate.one_of("method", method, METHODS)
    if method in ("fedavg", "local_item_dp"):
        return validate.positive_int("nominal_rounds", nominal_rounds)
    return paper_rounds(nominal_rounds, users_per_round)


def noise_plan(method: str, fed: Federation, *, mode: str = "strict", target_epsilon: float,
               delta: float, nominal_rounds: int, rounds: int | None = None,
               orders: Sequence[float] = recipes.DEFAULT_ORDERS,
               conversion: str = "improved") -> dict:
    """The noise of ``method`` for a ``(target_epsilon, delta)`` budget, as keyword arguments of
    :func:`jaxfl.algorithms.subject_dp.subject_dp` and :class:`SubjectDPAccountant`.

    * ``mode="paper"``: per-user sigma_i at the item rate over the nominal ``T * R`` steps
      (:func:`paper_noise_multiplier`); LocalGroupDP gets the lazy sigma_Z table
      (``group_noise="batch"``, :func:`paper_group_table`).
    * ``mode="strict"``: one sigma whose strict epsilon after ``rounds`` (default
      :func:`run_rounds`) meets the target (:func:`strict_noise_multiplier`; LocalGroupDP with
      data-independent noise, ``group_noise="fixed"``).

    Returns ``{}`` for FedAvg, else ``{"noise_multipliers": ...}`` or ``{"group_noise": ...,
    "group_noise_multiplier": ...}``.
    """
    validate.one_of("method", method, METHODS)
    validate.one_of("mode", mode, MODES)
    if method == "fedavg":
        return {}
    kw = dict(target_epsilon=target_epsilon, delta=delta, orders=orders, conversion=conversion)
    if mode == "paper":
        if method == "local_group_dp":
            return {"group_noise": "batch", "group_noise_multiplier": paper_group_table(
                fed, nominal_rounds=nominal_rounds, **kw)}
        return {"noise_multipliers": paper_noise_multiplier(fed, nominal_rounds=nominal_rounds,
                                                            **kw)}
    rounds = rounds or run_rounds(method, nominal_rounds, fed.users_per_round)
    out = {"noise_multipliers": strict_noise_multiplier(method, fed, rounds=rounds, **kw)}
    if method == "local_group_dp":
        out["group_noise"] = "fixed"
    return out


# --------------------------------------------------------------------------------------------
# DpEvents (where a method has one) and the accountant
# --------------------------------------------------------------------------------------------
def _worst_user(q, T, sig) -> int:
    """The user with the largest item-level epsilon per round (ties: the first)."""
    keys = sorted(set(zip(q.tolist(), T.tolist(), sig.tolist(), strict=True)))
    eps = {k: item_epsilon(noise_multiplier=k[2], sampling_rate=k[0], steps=k[1], delta=1e-5)
           for k in keys}
    return int(np.argmax([eps[k] for k in zip(q.tolist(), T.tolist(), sig.tolist(),
                                               strict=True)]))


def method_events(method: str, mode: str, sampling_rates, local_steps, noise_multipliers,
                  envelope_counts, users_per_round: int, group_noise: str = "batch"):
    """``(dp_event(rounds), round_event)`` of ``method`` in ``mode`` (built lazily: no
    accountant runs until an event is requested).

    Paper mode (and strict LocalItemDP, its own item-level claim): the worst user's item-level
    run, ``sqrt(s)`` x rounds for the subject-level methods (Thm. 3.10). Strict mode: the
    envelope subject (``envelope_counts[i]`` items at every user ``i``), composed over users.
    Non-private (``NonPrivateDpEvent``): FedAvg, sigma = 0; also the placeholder of strict
    batch-noise LocalGroupDP, whose bound (variance mismatch) is no DpEvent (strict reports
    carry no event).
    """
    q = np.asarray(sampling_rates, np.float64)
    T = np.asarray(local_steps, np.int64)
    sig = np.asarray(noise_multipliers, np.float64)
    k_env = np.asarray(envelope_counts, np.float64)
    s = int(users_per_round)
    non_private = (lambda rounds: dp_accounting.NonPrivateDpEvent()), None
    if method == "fedavg" or (method == "local_group_dp" and group_noise == "batch"
                              and mode == "strict") or np.any(sig == 0):
        return non_private
    if mode == "paper" or method == "local_item_dp":
        uniform = len(set(zip(q.tolist(), T.tolist(), sig.tolist(), strict=True))) == 1

        def step():
            w = 0 if uniform else _worst_user(q, T, sig)
            return (events.poisson_gaussian(sampling_rate=float(q[w]),
                                            noise_multiplier=float(sig[w])), int(T[w]))

        factor = 1.0 if method == "local_item_dp" else math.sqrt(s)  # Thm 3.10

        def dp_event(r):
            ev, t = step()
            return events.repeated(ev, int(round(t * r * factor)))

        round_event = None
        if factor == 1.0 and uniform:
            round_event = events.repeated(*step())
        return dp_event, round_event
    per_user = []
    for i in range(len(q)):
        if k_env[i] == 0:
            continue
        p = subject_inclusion_probability(q[i], k_env[i])
        if method == "user_ldp":
            ev = events.gaussian(sig[i] / 2.0)
        elif method == "higradavg_dp":
            ev = events.poisson_gaussian(sampling_rate=float(p), noise_multiplier=float(sig[i]))
        else:  # fixed-noise LocalGroupDP: sensitivity k C
            ev = events.poisson_gaussian(sampling_rate=float(p),
                                         noise_multiplier=float(sig[i] / k_env[i]))
        per_user.append(events.repeated(ev, int(T[i])))
    round_event = events.composed(per_user)
    return (lambda r: events.repeated(round_event, r)), round_event


class SubjectDPAccountant(report.Accountant):
    """The accountant of one subject-level DP method (the privacy half of
    :func:`jaxfl.algorithms.subject_dp.subject_dp`), built from the federation (users, items
    of each subject at each user, local steps, item sampling rates, users per round) and the
    method's noise.

    Headline: :func:`epsilon` (the worst subject in strict mode; the paper's claim in paper
    mode); :meth:`report` adds the per-subject epsilons (``per_unit``, axis ``"subject"``) and
    the route. ``mode="strict"`` (default, sound) or ``"paper"`` (``sound=False`` for the
    subject-level methods, whose v1 analysis is unsound, see :mod:`jaxfl.audit.subject_dp`);
    :meth:`other_modes` gives the other one, so every run reports both.

    Args:
      method: one of :data:`METHODS`.
      fed: the :class:`Federation`.
      mode: ``"strict"`` or ``"paper"``.
      noise_multipliers, group_noise, group_noise_multiplier: the mechanism's noise (as
        :func:`epsilon`).
      group_sizes: paper-mode LocalGroupDP (batch policy): the group sizes Z the mechanism can
        meet (a sequence fixed at build time; the algorithm gives ``1..Z_max``), the claim is
        the maximum over them.
      orders, conversion: RDP orders and conversion.
      tight: strict LocalItemDP / fixed LocalGroupDP: the final report also tries the PLD
        mixture bound (per-round epsilons stay RDP).
      value_discretization_interval: PLD discretisation of the tight route.
      model_dim: d, the mechanism's number of trainable parameters (strict LocalGroupDP with
        batch noise: the variance-mismatch bound; None reports ``inf``).

    :meth:`events` gives the mechanism's ``(dp_event(rounds), round_event)``
    (:func:`method_events`); paper-mode reports carry the DpEvent of their headline, strict
    ones none (their headline is a per-subject maximum, not one event).
    """

    def __init__(self, method: str, fed: Federation, *, mode: str = "strict",
                 noise_multipliers=None, group_noise: str = "batch",
                 group_noise_multiplier=None, group_sizes=None,
                 orders: Sequence[float] | None = None, conversion: str = "improved",
                 tight: bool = False, value_discretization_interval: float = 1e-2,
                 model_dim: int | None = None):
        validate.one_of("method", method, METHODS)
        validate.one_of("mode", mode, MODES)
        self.method, self.fed, self.mode = method, fed, mode
        self._kw = dict(noise_multipliers=noise_multipliers, group_noise=group_noise,
                        group_noise_multiplier=group_noise_multiplier,
                        orders=tuple(float(o) for o in (orders or recipes.DEFAULT_ORDERS)),
                        conversion=conversion,
                        model_dim=None if model_dim is None else
                        validate.positive_int("model_dim", model_dim))
        if callable(group_sizes):
            raise validate.JaxflValueError(
                "Expected group_sizes as a sequence fixed when the accountant is built, got a "
                "callable (a claim must not change with the batches drawn).")
        self.group_sizes = None if group_sizes is None else tuple(int(z) for z in group_sizes)
        self.tight = tight
        self.interval = value_discretization_interval
        self.private = method != "fedavg"
        self.unit = "item" if (mode == "paper" and method == "local_item_dp") else "subject"
        self.sound = not (mode == "paper" and method in SUBJECT_METHODS)
        self.name = "none" if method == "fedavg" else "rdp"

    def _groups(self):
        return list(self.group_sizes) if self.group_sizes else [1]

    def _one(self, rounds: int, delta: float, tight: bool) -> report.PrivacyReport:
        return epsilon(self.method, self.fed, mode=self.mode, rounds=int(rounds), delta=delta,
                       group_sizes=self._groups(), tight=tight,
                       value_discretization_interval=self.interval, **self._kw)

    def epsilons(self, rounds, delta):
        r = report.check_rounds(rounds)
        delta = validate.delta(delta)
        return np.array([self._one(int(x), delta, False).epsilon for x in r], np.float64)

    def report(self, rounds, delta):
        rounds = int(report.check_rounds([rounds])[0])
        delta = validate.delta(delta)
        out = self._one(rounds, delta, self.tight and self.mode == "strict")
        return self._with_truncation(dataclasses.replace(out, unit=self.unit, sound=self.sound,
                                                         dp_event=self.dp_event(rounds)))

    def truncation(self, rounds):
        """The sampler's truncation delta (:mod:`jaxfl.accounting.sampler`): each local step
        of a user releases its noised update (std ``sigma_i C``), which one subject moves by at
        most ``2 k_i C`` (``k_i``: the envelope count at user i; any clipping granularity,
        replacement included), so ``r = max_i 2 max(k_i, 1) / sigma_i`` and every step of every
        user holding the subject counts (a sound over-count)."""
        if not self.private or self.noise_spec is not None:
            return super().truncation(rounds)
        kw = self._kw
        if self.method == "local_group_dp" and kw["group_noise"] == "batch":
            return None, ("not bounded: batch group noise has a multiplier per group size met, "
                          "not a fixed ratio")
        if self.fed.subject_counts is None:
            return None, "not bounded: the subjects' item counts are unknown"
        n = self.fed.num_users
        sig = np.broadcast_to(np.asarray(kw["noise_multipliers"], np.float64), (n,))
        k = self.fed.envelope()
        held = k > 0
        if not np.any(held):
            return 0.0, "no subject holds items"
        if np.any(sig[held] <= 0):
            return None, "not bounded: a user holding the subject adds no noise"
        r = float(np.max(2.0 * np.maximum(k[held], 1.0) / sig[held]))
        spec = noise_sampler.NoiseSpec(
            ratio=r, releases_per_round=int(self.fed.local_steps[held].sum()),
            note="every local step of every user holding the subject; r = max 2 k_i / sigma_i")
        try:
            return spec.delta(rounds), spec.describe(rounds)
        except validate.JaxflValueError as e:
            return None, f"not bounded: {e}"

    def events(self):
        """``(dp_event(rounds), round_event)`` of the mechanism (:func:`method_events`)."""
        n = self.fed.num_users
        kw = self._kw
        if self.method == "fedavg":
            sig = np.zeros(n)
        elif self.method == "local_group_dp" and kw["group_noise"] == "batch":
            # sigma_{i,1}: the paper-mode proxy (the paper's claim equals the item-level
            # epsilon at Z = 1 by construction of the sigma_Z table); unused in strict mode.
            sig = np.array([kw["group_noise_multiplier"](i, 1) if self.mode == "paper" else 1.0
                            for i in range(n)], np.float64)
        else:
            sig = np.broadcast_to(np.asarray(kw["noise_multipliers"], np.float64), (n,))
        k_env = (self.fed.envelope() if self.fed.subject_counts is not None
                 else np.full(n, np.inf))
        return method_events(self.method, self.mode, self.fed.sampling_rates,
                             self.fed.local_steps, sig, k_env, self.fed.users_per_round,
                             kw["group_noise"])

    def dp_event(self, rounds):
        if self.mode == "strict" and self.private:
            return None
        return self.events()[0](int(rounds))

    def replace(self, **changes) -> SubjectDPAccountant:
        kw = dict(mode=self.mode, group_sizes=self.group_sizes, tight=self.tight,
                  value_discretization_interval=self.interval, **self._kw)
        kw.update(changes)
        return SubjectDPAccountant(self.method, self.fed, **kw)

    def other_modes(self):
        if not self.private:
            return {}
        other = "paper" if self.mode == "strict" else "strict"
        return {other: self.replace(mode=other)}


# --------------------------------------------------------------------------------------------
# The reproduction's accounting tables (docs/reproduction/subject_dp.md, section 1)


def setting_table(local_steps: Sequence[int], *, num_users: int, examples_per_user: int,
                  batch_size: int, target_epsilon: float, delta: float, nominal_rounds: int,
                  group_sizes: Sequence[int]) -> list[dict]:
    """Per number of local steps T of ``local_steps``, on a uniform federation of
    ``num_users`` users with ``examples_per_user`` examples and one item per subject per user
    (the paper's FEMNIST setting): ``sigma``, the paper-mode noise multiplier for
    ``target_epsilon`` over ``nominal_rounds``; ``sigma_tf``, TF-Privacy's recipe (its orders,
    basic conversion) over ``nominal_rounds * T`` steps; ``sigma_z``, LocalGroupDP's
    sigma_{0,Z} for Z in ``group_sizes``; ``eps_16x25`` / ``eps_16x6``: HiGradAvgDP's strict
    epsilon at ``sigma`` over 25 and 6 rounds."""
    budget = dict(target_epsilon=target_epsilon, delta=delta, nominal_rounds=nominal_rounds)
    out = []
    for T in local_steps:
        fed = Federation.uniform(num_users=num_users, examples_per_user=examples_per_user,
                                 batch_size=batch_size, local_steps=T,
                                 items_per_subject_per_user=1)
        sig = paper_noise_multiplier(fed, **budget)
        tf = calibrate_noise_multiplier(target_epsilon=target_epsilon, delta=delta,
                                        sampling_rate=batch_size / examples_per_user,
                                        steps=nominal_rounds * T, orders=TF_PRIVACY_ORDERS,
                                        conversion="basic")
        table_z = paper_group_table(fed, **budget)
        acc = SubjectDPAccountant("higradavg_dp", fed, noise_multipliers=sig)
        out.append({"T": T, "sigma": float(sig[0]), "sigma_tf": float(tf),
                    "sigma_z": [float(table_z(0, z)) for z in group_sizes],
                    "eps_16x25": float(acc.epsilons([25], delta)[0]),
                    "eps_16x6": float(acc.epsilons([6], delta)[0])})
    return out


def method_table(fed: Federation, *, methods: Sequence[str], target_epsilon: float,
                 delta: float, nominal_rounds: int, model_dim: int,
                 group_sizes: Sequence[int] = range(1, 6), tight_item: bool = True,
                 rounds_for: Sequence[str] = ("higradavg_dp", "user_ldp")) -> list[dict]:
    """Each method's paper-mode and strict epsilon on ``fed`` at the paper's noise for
    ``target_epsilon`` over ``nominal_rounds`` (LocalGroupDP: its sigma_Z table over
    ``group_sizes`` and the strict variance-mismatch bound at ``model_dim``), the rounds the
    paper's recipe runs (:func:`run_rounds`) and, for ``rounds_for``, the rounds a strict
    budget of ``target_epsilon`` allows (at most ``nominal_rounds``). ``tight_item``: the
    tight (PLD) strict route for LocalItemDP."""
    budget = dict(target_epsilon=target_epsilon, delta=delta, nominal_rounds=nominal_rounds)
    sig, table_z = paper_noise_multiplier(fed, **budget), paper_group_table(fed, **budget)
    out = []
    for m in methods:
        r = run_rounds(m, nominal_rounds, fed.users_per_round)
        noise = (dict(group_noise_multiplier=table_z, group_sizes=group_sizes,
                      model_dim=model_dim)
                 if m == "local_group_dp" else dict(noise_multipliers=sig))
        acc = SubjectDPAccountant(m, fed, tight=(m == "local_item_dp" and tight_item), **noise)
        paper, strict = acc.other_modes()["paper"].report(r, delta), acc.report(r, delta)
        rounds = (rounds_for_target(m, fed, mode="strict", target_epsilon=target_epsilon,
                                    delta=delta, noise_multipliers=sig,
                                    max_rounds=nominal_rounds) if m in rounds_for else None)
        out.append({
            "method": m, "rounds": int(r),
            "paper": {"epsilon": float(paper.epsilon), "unit": paper.unit},
            "strict": {"epsilon": float(strict.epsilon), "unit": strict.unit,
                       "accountant": strict.accountant, "route": strict.details["route"]},
            "strict_rounds_for_eps4": None if rounds is None else int(rounds)})
    return out


# ----------------------------------------------------------------------------------------------
# The reproduction's accounting section (docs/reproduction/subject_dp.md)
# ----------------------------------------------------------------------------------------------

# The paper's FEMNIST setting (Sec. 4.1): 16 users of 35725 examples, batch 512, one local step,
# a budget of (4, 1e-5) over 100 rounds, and d of its CNN (LEAF's; strict LocalGroupDP).
PAPER_FEMNIST = dict(num_users=16, examples_per_user=35725, batch_size=512, target_epsilon=4.0,
                     delta=1e-5, nominal_rounds=100, model_dim=6_603_710)
# Sec. 4.1: (distinct subjects per batch, batch size).
PAPER_K = {"femnist": (475, 512), "shakespeare": (86, 100)}
PAPER_METHODS = ("local_item_dp", "user_ldp", "local_group_dp", "higradavg_dp")


def paper_accounting(fed: Federation, *, num_subjects: int, local_steps: Sequence[int] = (1, 70),
                     group_sizes: Sequence[int] = range(1, 7), tight_item: bool = True) -> dict:
    """The accounting section of the subject-DP reproduction at :data:`PAPER_FEMNIST`:
    ``"T"``, :func:`setting_table` of the uniform setting per ``local_steps``; on ``fed`` (a
    layout's federation, one local step, its sampling rates replaced by the paper's uniform
    B / N per user) ``"layout"`` (``T``, ``subjects``: ``num_subjects``, ``items``,
    ``k_mean`` / ``k_max`` of its subject counts) and ``"methods"``: :func:`method_table` of
    :data:`PAPER_METHODS` (``tight_item``: LocalItemDP's strict PLD route)."""
    p = PAPER_FEMNIST
    budget = {k: p[k] for k in ("target_epsilon", "delta", "nominal_rounds")}
    res = {"T": setting_table(local_steps, num_users=p["num_users"],
                              examples_per_user=p["examples_per_user"],
                              batch_size=p["batch_size"], group_sizes=group_sizes, **budget)}
    fed = dataclasses.replace(fed, sampling_rates=np.full(
        p["num_users"], p["batch_size"] / p["examples_per_user"]))
    k = fed.subject_counts
    res["layout"] = {"T": 1, "subjects": int(num_subjects), "items": int(k.sum()),
                     "k_mean": float(k.mean()), "k_max": int(k.max())}
    res["methods"] = method_table(fed, methods=PAPER_METHODS, model_dim=p["model_dim"],
                                  tight_item=tight_item, **budget)
    return res


def batch_summary(K, Z) -> dict:
    """What a sample of batches says about subjects (Sec. 4.1's K and Z): ``K``, the distinct
    subjects per batch, and ``Z``, a batch's items of one subject (any shapes). Returns ``K``
    and ``Z`` (their means), ``mode`` (the most frequent Z) and ``freq``: the (up to) four most
    frequent Z with their frequencies, ``"z: f"`` joined by ", " (2 decimals)."""
    K, Z = np.asarray(K).ravel(), np.asarray(Z).ravel()
    hist = np.bincount(Z)
    top = ", ".join(f"{z}: {hist[z] / len(Z):.2f}" for z in np.argsort(-hist)[:4] if hist[z])
    return {"K": float(K.mean()), "Z": float(Z.mean()), "mode": int(hist.argmax()), "freq": top}

