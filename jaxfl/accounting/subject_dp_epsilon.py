"""Subject-level epsilons of Marathe & Kanani (arXiv 2206.03617 v1, Sec. 3 and App. A): the
federation description (:class:`Federation`, per-user subject counts) and :func:`epsilon` of
every method in both modes (the strict routes and the paper's claims). The calibration, the
method events and the accountant are in :mod:`jaxfl.accounting.subject_dp`, which re-exports
these; its docstring describes the two modes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np
from dp_accounting import pld as _pld

from jaxfl import validate
from jaxfl.accounting import accountants, conversions, local_group_bound, recipes, report
from jaxfl.accounting.subject_dp_bounds import (
    horizontal_rdp,
    item_epsilon,
    mixture_event,
    paper_group_epsilon,
    step_rdp,
    subject_inclusion_probability,
)

MODES = ("strict", "paper")
METHODS = ("fedavg", "local_item_dp", "user_ldp", "local_group_dp", "higradavg_dp")
SUBJECT_METHODS = ("user_ldp", "local_group_dp", "higradavg_dp")
# The paper's names of the methods (its tables and figures).
METHOD_NAMES = {"fedavg": "FedAvg", "local_item_dp": "LocalItemDP", "user_ldp": "UserLDP",
                "local_group_dp": "LocalGroupDP", "higradavg_dp": "HiGradAvgDP"}


# --------------------------------------------------------------------------------------------
# Federation description
# --------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, kw_only=True)
class Federation:
    """What the accountant needs to know about a run (host side).

    Attributes:
      sampling_rates: ``[n]`` item sampling rate ``q_i = B / n_i`` of each user.
      local_steps: ``[n]`` local steps ``T_i`` per round.
      subject_counts: ``[m, n]`` items ``k_{a,i}`` of subject ``a`` at user ``i`` (float allowed
        for "average subject" what-if layouts), or None when unknown.
      users_per_round: users ``s`` sampled per round (without replacement; no amplification is
        claimed from it).
    """

    sampling_rates: np.ndarray
    local_steps: np.ndarray
    subject_counts: np.ndarray | None
    users_per_round: int

    def __post_init__(self):
        q = np.atleast_1d(np.asarray(self.sampling_rates, np.float64))
        t = np.broadcast_to(np.asarray(self.local_steps, np.int64), q.shape).copy()
        if np.any(~(q > 0)) or np.any(q > 1):
            raise validate.PrivacyParameterError(f"Expected sampling rates in (0, 1], got {q}.")
        if np.any(t < 1):
            raise validate.JaxflValueError(f"Expected local_steps >= 1, got {t}.")
        s = validate.positive_int("users_per_round", self.users_per_round)
        if s > q.size:
            raise validate.JaxflValueError(
                f"Expected users_per_round <= {q.size} users, got users_per_round={s}.")
        object.__setattr__(self, "sampling_rates", q)
        object.__setattr__(self, "local_steps", t)
        if self.subject_counts is not None:
            k = np.asarray(self.subject_counts, np.float64)
            if k.ndim != 2 or k.shape[1] != q.size:
                raise validate.ShapeError(
                    f"Expected subject_counts.shape=(subjects, {q.size}), got {k.shape}.")
            if np.any(k < 0):
                raise validate.JaxflValueError("Expected non-negative subject counts.")
            object.__setattr__(self, "subject_counts", k)

    @property
    def num_users(self) -> int:
        return int(self.sampling_rates.size)

    def envelope(self) -> np.ndarray:
        """``[n]`` the largest count of any subject at each user (a subject-agnostic worst case:
        a hypothetical subject with that many items at *every* user dominates every real one)."""
        self._need_counts()
        return self.subject_counts.max(axis=0)

    def _need_counts(self):
        if self.subject_counts is None:
            raise validate.JaxflValueError(
                "Strict subject-level accounting needs subject_counts (items of each subject at "
                "each user); build the Federation with from_layout or pass subject_counts.")

    @classmethod
    def uniform(cls, *, num_users: int, examples_per_user: int, batch_size: int,
                local_steps: int, items_per_subject_per_user: float | None = None,
                users_per_round: int | None = None) -> Federation:
        """Identical users; optionally one "typical" subject with the given count at each."""
        n = validate.positive_int("num_users", num_users)
        ne = validate.positive_int("examples_per_user", examples_per_user)
        b = validate.positive_int("batch_size", batch_size)
        counts = None
        if items_per_subject_per_user is not None:
            k = validate.positive("items_per_subject_per_user", items_per_subject_per_user,
                                   validate.JaxflValueError)
            counts = np.full((1, n), k)
        return cls(sampling_rates=np.full(n, min(1.0, b / ne)), local_steps=np.full(n, local_steps),
                   subject_counts=counts, users_per_round=users_per_round or n)

    @classmethod
    def from_layout(cls, *, subject_ids, user_ids, num_users: int, batch_size: int,
                    local_steps: int | str = 1, users_per_round: int | None = None
                    ) -> Federation:
        """From per-item subject and user ids (``local_steps="epoch"``: ``ceil(n_i / B)``)."""
        counts = subject_counts(subject_ids, user_ids, num_users)
        n_i = counts.sum(axis=0)
        if np.any(n_i == 0):
            raise validate.JaxflValueError(f"Users {np.flatnonzero(n_i == 0)} hold no items.")
        b = validate.positive_int("batch_size", batch_size)
        t = np.ceil(n_i / b).astype(np.int64) if local_steps == "epoch" else local_steps
        return cls(sampling_rates=np.minimum(1.0, b / n_i), local_steps=t, subject_counts=counts,
                   users_per_round=users_per_round or num_users)


def subject_counts(subject_ids, user_ids, num_users: int) -> np.ndarray:
    """``[m, n]`` matrix ``k_{a,i}`` from per-item ids (subjects relabelled 0..m-1)."""
    sid = np.asarray(subject_ids).ravel()
    uid = np.asarray(user_ids, np.int64).ravel()
    if sid.shape != uid.shape:
        raise validate.ShapeError(f"Expected equal shapes, got {sid.shape} and {uid.shape}.")
    n = validate.positive_int("num_users", num_users)
    if uid.size and (uid.min() < 0 or uid.max() >= n):
        raise validate.JaxflValueError(f"Expected user ids in [0, {n}).")
    _, a = np.unique(sid, return_inverse=True)
    m = int(a.max()) + 1 if a.size else 0
    return np.bincount(a * n + uid, minlength=m * n).reshape(m, n).astype(np.float64)


# --------------------------------------------------------------------------------------------
# Per-subject strict routes
# --------------------------------------------------------------------------------------------
def _per_user_subject_rdp(fed: Federation, counts: np.ndarray, step_fn, orders) -> np.ndarray:
    """``[m, n, O]`` per-round RDP ``T_i * rho(k_{a,i})`` with ``step_fn(i, k) -> [O]`` cached over
    the distinct (user, count) pairs; zero where a subject has no items."""
    m, n = counts.shape
    out = np.zeros((m, n, len(orders)))
    for i in range(n):  # host loop over users x distinct counts (accountant calls are cached)
        ks, inv = np.unique(counts[:, i], return_inverse=True)
        curves = np.stack([np.zeros(len(orders)) if k == 0 else step_fn(i, float(k)) for k in ks])
        out[:, i, :] = fed.local_steps[i] * curves[inv]
    return out


def _strict_rdp(method: str, fed: Federation, counts, sigmas, orders) -> np.ndarray:
    """``[m, O]`` per-round horizontally composed subject RDP under one strict route."""
    q = fed.sampling_rates
    if method == "higradavg_dp":
        fn = lambda i, k: step_rdp(subject_inclusion_probability(q[i], k), sigmas[i], orders)
    elif method == "poisson_k":  # LocalItemDP / fixed-noise LocalGroupDP: sensitivity kC
        fn = lambda i, k: step_rdp(subject_inclusion_probability(q[i], k), sigmas[i] / k, orders)
    else:
        raise ValueError(method)
    return horizontal_rdp(_per_user_subject_rdp(fed, counts, fn, orders), fed.users_per_round)


def _group_route_eps(fed: Federation, counts, sigmas, rounds, delta, orders, conversion):
    """``[m]`` epsilon via Mironov's RDP group privacy per user (group = the subject's k items
    there, rounded up to 2^c with c from the subject's largest count), then horizontal sum."""
    m, n = counts.shape
    out = np.full(m, math.inf)
    cs = np.ceil(np.log2(np.maximum(counts.max(axis=1), 1.0))).astype(int)
    per_user = np.stack([rounds * fed.local_steps[i] * step_rdp(fed.sampling_rates[i],
                                                                sigmas[i], orders)
                         for i in range(n)])  # [n, O] item-level RDP of each user's run
    for c in np.unique(cs):  # subjects sharing c share the order grid alpha / 2^c
        rows = np.flatnonzero(cs == c)
        try:
            new_orders, _ = conversions.rdp_group_mironov(orders, per_user[0], 2**int(c))
        except validate.JaxflValueError:
            continue
        grouped = np.stack([conversions.rdp_group_mironov(orders, per_user[i], 2**int(c))[1]
                            for i in range(n)])  # [n, O']
        present = (counts[rows] > 0).astype(np.float64)  # [r, n]
        rdp = horizontal_rdp(present[:, :, None] * grouped[None], fed.users_per_round)
        out[rows] = np.atleast_1d(recipes.epsilon_from_rdp(new_orders, rdp, delta, conversion)[0])
    return out


def _mixture_envelope_eps(fed: Federation, sig, rounds, delta, interval) -> float:
    """PLD epsilon of the envelope subject (ceil of the largest count at each user) under item
    clipping, composed over the ``s`` users with the most steps (identical events merged)."""
    k_env = np.ceil(fed.envelope()).astype(int)
    keys = {}
    for i in range(fed.num_users):
        if k_env[i] > 0:
            key = (float(fed.sampling_rates[i]), float(sig[i]), int(k_env[i]))
            keys.setdefault(key, []).append(int(fed.local_steps[i]))
    s = fed.users_per_round
    if s < fed.num_users and len(keys) > 1:
        return math.inf  # top-s selection over different events is not implemented: no bound
    acc = _pld.PLDAccountant(neighboring_relation=accountants.RELATION,
                             value_discretization_interval=interval)
    for (q, sg, k), steps in keys.items():
        count = rounds * sum(sorted(steps)[-s:])
        acc.compose(mixture_event(noise_multiplier=sg, sampling_rate=q, items=k), count)
    return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=4096)
def _local_group_step_rdp(sigmas: tuple, items: int, sampling_rate: float,
                          model_dim: int) -> np.ndarray:
    """Cached per-step curve of :func:`local_group_bound.local_group_batch_rdp` on
    :func:`local_group_bound.default_orders` (``sigmas`` = sigma_Z for Z = 1..items)."""
    out = local_group_bound.local_group_batch_rdp(
        local_group_bound.default_orders(sigmas, items), group_noise_multipliers=list(sigmas),
        items=items, sampling_rate=sampling_rate, model_dim=model_dim)
    out.setflags(write=False)
    return out


def _local_group_batch_eps(fed: Federation, counts, group_noise_multiplier, rounds, delta,
                           model_dim: int, conversion) -> np.ndarray:
    """``([m] strict epsilons, conversions used)`` of LocalGroupDP with batch noise sigma_Z: per
    user the variance-mismatch bound of one step (``ceil(k)`` items, the user's sigma_Z table),
    times ``T_i``, summed over the subject's users (top ``s``, Thm 3.9), times rounds, converted
    on the orders where the sum is finite (smaller of ``conversion`` and ``"basic"``)."""
    orders = local_group_bound.default_orders(None, 1)
    q = fed.sampling_rates
    tables: dict = {}

    def step_fn(i, k):
        k = int(math.ceil(k))
        tab = tables.get(i, ())
        if len(tab) < k:  # sigma_{i,Z} for Z = 1..k (lazy calibration, cached by the lookup)
            tab = tab + tuple(float(group_noise_multiplier(i, z))
                              for z in range(len(tab) + 1, k + 1))
            tables[i] = tab
        return _local_group_step_rdp(tab[:k], k, float(q[i]), int(model_dim))

    rdp = rounds * horizontal_rdp(_per_user_subject_rdp(fed, counts, step_fn, orders),
                                  fed.users_per_round)  # [m, O], inf where no bound at an order
    finite = np.isfinite(rdp)
    out = np.full(rdp.shape[0], math.inf)
    used = set()
    for j in range(rdp.shape[0]):  # host loop over subjects (the conversion is cheap)
        if np.any(finite[j]):
            # The finite orders may all lie below 1.01, where the "improved" conversion is not
            # evaluated (dp-accounting's cut); the basic one (Mironov Prop. 3) holds for every
            # order > 1. Both are sound: take the smaller.
            cands = {c: recipes.epsilon_from_rdp(orders[finite[j]], rdp[j, finite[j]], delta,
                                                 c)[0] for c in dict.fromkeys((conversion,
                                                                               "basic"))}
            best = min(cands, key=cands.get)
            out[j] = cands[best]
            used.add(best)
    return out, sorted(used)


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------
def _report(*, method, mode, unit, epsilon, delta, rounds, accountant="rdp", route,
            sound=True, per_unit=None, worst_subject=None, notes=(), extras=None
            ) -> report.PrivacyReport:
    """A :class:`~jaxfl.accounting.report.PrivacyReport` of one method; ``details`` holds the
    method, the bound's ``route``, the ``worst_subject`` (strict, per-subject layouts), notes
    and secondary numbers."""
    details = {"method": method, "route": route, "worst_subject": worst_subject,
               "notes": list(notes), **(extras or {})}
    return report.PrivacyReport(
        epsilon=epsilon, delta=delta, rounds=rounds, unit=unit, accountant=accountant,
        mode=mode, sound=sound, per_unit=per_unit,
        per_unit_axes=("subject",) if per_unit is not None else (), details=details)


def paper_rounds(nominal_rounds: int, users_per_round: int) -> int:
    """Thm. 3.10's round count ``R / sqrt(s)`` for the subject-level methods (100 -> 25 at s=16)."""
    r = validate.positive_int("nominal_rounds", nominal_rounds)
    s = validate.positive_int("users_per_round", users_per_round)
    return max(1, int(round(r / math.sqrt(s))))


def _sigmas(fed: Federation, noise_multipliers) -> np.ndarray:
    if noise_multipliers is None:
        raise validate.JaxflValueError("Expected noise_multipliers for a private method.")
    s = np.broadcast_to(np.asarray(noise_multipliers, np.float64), (fed.num_users,)).copy()
    if np.any(~(s > 0)):
        raise validate.PrivacyParameterError(f"Expected noise multipliers > 0, got {s}.")
    return s


def _counts(fed: Federation, envelope: bool) -> np.ndarray:
    fed._need_counts()  # pylint: disable=protected-access
    return fed.envelope()[None] if envelope else fed.subject_counts


def _strict_subject_eps(method, fed, sig, rounds, delta, orders, conversion, envelope
                        ) -> tuple[np.ndarray, str]:
    """``[m]`` strict subject epsilons of one method and the route name."""
    counts = _counts(fed, envelope)
    if method == "higradavg_dp":
        rdp = rounds * _strict_rdp("higradavg_dp", fed, counts, sig, orders)
        return np.atleast_1d(recipes.epsilon_from_rdp(orders, rdp, delta, conversion)[0]), \
            "poisson(1-(1-q)^k, sigma)"
    if method == "user_ldp":
        present = (counts > 0).astype(np.float64)
        mu2 = horizontal_rdp((present * fed.local_steps * 4.0 / sig**2)[:, :, None],
                             fed.users_per_round)[:, 0] * rounds
        values, inv = np.unique(mu2, return_inverse=True)
        e = np.array([conversions.gaussian_epsilon(math.sqrt(v), delta) for v in values])
        return e[inv.ravel()], "gaussian(sigma/2), q=1 (analytic Gaussian)"
    # LocalItemDP / fixed-noise LocalGroupDP: min of two sound routes, per subject.
    rdp = rounds * _strict_rdp("poisson_k", fed, counts, sig, orders)
    e_a = np.atleast_1d(recipes.epsilon_from_rdp(orders, rdp, delta, conversion)[0])
    e_b = _group_route_eps(fed, counts, sig, rounds, delta, orders, conversion)
    return np.minimum(e_a, e_b), "min(poisson(1-(1-q)^k, sigma/k), rdp group privacy)"


def _item_eps_max(fed, sig, rounds, delta, orders, conversion) -> float:
    """Item-level epsilon: items live at one user, so users compose in parallel (max)."""
    return max(item_epsilon(noise_multiplier=sig[i], sampling_rate=fed.sampling_rates[i],
                            steps=fed.local_steps[i] * rounds, delta=delta, orders=orders,
                            conversion=conversion) for i in range(fed.num_users))


def epsilon(method: str, fed: Federation, *, mode: str = "strict", rounds: int, delta: float,
            noise_multipliers=None, group_noise: str = "batch", group_noise_multiplier=None,
            group_sizes: Sequence[int] | None = None,
            orders: Sequence[float] = recipes.DEFAULT_ORDERS, conversion: str = "improved",
            envelope: bool = False, tight: bool = False,
            value_discretization_interval: float = 1e-3,
            model_dim: int | None = None) -> report.PrivacyReport:
    """The epsilon ``method`` spends after ``rounds`` rounds, in ``mode``.

    Args:
      method: one of :data:`METHODS`.
      fed: the :class:`Federation` (strict mode needs its ``subject_counts``).
      mode: ``"strict"`` (sound, default) or ``"paper"`` (v1's accounting).
      rounds: rounds actually run.
      delta: target delta.
      noise_multipliers: ``[n]`` (or scalar) per-user sigma (all private methods except
        LocalGroupDP with ``group_noise="batch"``).
      group_noise: LocalGroupDP noise policy: ``"batch"`` (Alg. 2, sigma_Z from the batch's
        largest subject group) or ``"fixed"`` (data-independent sigma = ``noise_multipliers``).
      group_noise_multiplier: ``(user, Z) -> sigma_{user,Z}`` (LocalGroupDP, batch policy).
      group_sizes: the group sizes Z that occurred (paper mode, batch policy).
      orders, conversion: RDP orders and RDP -> DP conversion (see ``recipes``).
      envelope: strict mode: account a hypothetical subject with the largest count at every user
        (dominates all subjects; cheaper) instead of the maximum over the real subjects.
      tight: strict LocalItemDP / fixed LocalGroupDP: also compute the mixture-of-Gaussians PLD
        bound of the envelope subject (slow, seconds to minutes) and report the smaller bound.
      value_discretization_interval: PLD discretisation of the tight route (pessimistic).
      model_dim: d, the number of trainable model parameters (the released coordinates); strict
        LocalGroupDP with batch noise needs it for its finite bound (None: ``inf``, sound).
    """
    validate.one_of("method", method, METHODS)
    validate.one_of("mode", mode, MODES)
    validate.one_of("group_noise", group_noise, ("batch", "fixed"))
    validate.one_of("conversion", conversion, recipes.CONVERSIONS)
    rounds = validate.positive_int("rounds", rounds, minimum=0)
    delta = validate.delta(delta)
    orders = tuple(float(o) for o in orders)
    base = dict(method=method, mode=mode, delta=delta, rounds=rounds, accountant="rdp")
    if method == "fedavg":
        return _report(**base, unit="none", epsilon=math.inf, route="non-private")
    batch_group = method == "local_group_dp" and group_noise == "batch"
    if batch_group and group_noise_multiplier is None:
        raise validate.JaxflValueError("Expected group_noise_multiplier for group_noise='batch'.")
    sig = None if batch_group else _sigmas(fed, noise_multipliers)
    # The paper's subject-level claims rest on Thm. 3.10's sqrt(s) cut and the item sampling
    # rate (Secs. 3.2-3.5): not a proven bound. LocalItemDP's paper claim is item-level DP-SGD.
    paper_sound = method == "local_item_dp"
    if rounds == 0:
        return _report(**base, unit="item" if mode == "paper" and paper_sound else "subject",
                       epsilon=0.0, route="no rounds")
    q, T, s = fed.sampling_rates, fed.local_steps, fed.users_per_round
    if mode == "paper":
        if method == "local_item_dp":
            e = _item_eps_max(fed, sig, rounds, delta, orders, conversion)
            return _report(**base, unit="item", epsilon=e,
                           route="item-level, parallel over users")
        factor = math.sqrt(s)  # Thm. 3.10: s-way horizontal composition costs sqrt(s)
        note = ("paper accounting (v1): item sampling rate q_i, horizontal composition as "
                "sqrt(s) x rounds (Thm. 3.10)",)
        if method == "local_group_dp" and batch_group:
            zs = sorted(set(int(z) for z in (group_sizes or [1])))
            e = max(paper_group_epsilon(group_noise_multiplier(i, z), q[i], T[i] * rounds * factor,
                                        delta, z, orders, conversion)
                    for i in range(fed.num_users) for z in zs)
            return _report(**base, unit="subject", epsilon=e, notes=note, sound=False,
                           route="item RDP at sigma_Z + group privacy (Thm 3.4), max over Z",
                           extras={"group_sizes": zs})
        if method == "local_group_dp":
            zs = sorted(set(int(z) for z in (group_sizes or [1])))
            e = max(paper_group_epsilon(sig[i], q[i], T[i] * rounds * factor, delta, z, orders,
                                        conversion) for i in range(fed.num_users) for z in zs)
            return _report(**base, unit="subject", epsilon=e, notes=note, sound=False,
                           route="item RDP + group privacy (Thm 3.4)",
                           extras={"group_sizes": zs})
        e = max(item_epsilon(noise_multiplier=sig[i], sampling_rate=q[i],
                             steps=T[i] * rounds * factor, delta=delta, orders=orders,
                             conversion=conversion) for i in range(fed.num_users))
        return _report(**base, unit="subject", epsilon=e, notes=note, sound=False,
                       route="item-level RDP at q_i over sqrt(s) x rounds")
    # ---- strict ----
    notes = ("strict: per-subject inclusion 1-(1-q)^k, horizontal composition summed over the "
             "subject's users (Thm 3.9), Poisson item sampling assumed",)
    if batch_group:
        mismatch = ("the noise scale sigma_Z depends on the batch's largest subject group Z, "
                    "which the released parameters reveal through the spread of their d "
                    "coordinates; use group_noise='fixed' for a useful bound")
        if model_dim is None:
            return _report(**base, unit="subject", epsilon=math.inf,
                           route="variance-mismatch bound needs model_dim",
                           notes=(mismatch, "model_dim (d, number of trainable parameters) "
                                  "not given: the finite variance-mismatch bound cannot be "
                                  "computed; inf is reported (a sound upper bound)"),
                           extras={"bound": "none (model_dim unknown)", "model_dim": None})
        d = validate.positive_int("model_dim", model_dim)
        eps_a, used = _local_group_batch_eps(fed, _counts(fed, envelope),
                                             group_noise_multiplier, rounds, delta, d,
                                             conversion)
        worst = int(np.argmax(eps_a))
        return _report(**base, unit="subject", epsilon=float(eps_a[worst]),
                       route=f"variance-mismatch bound (local_group_bound), d = {d}, summed "
                             "over users",
                       per_unit=None if envelope else eps_a,
                       worst_subject=None if envelope else worst,
                       notes=notes + (mismatch, "variance-mismatch bound "
                                      "(jaxfl.accounting.local_group_bound): Poisson sampling, "
                                      "sigma_Z nondecreasing in Z, public per-user counts"),
                       extras={"bound": "variance-mismatch", "model_dim": d,
                               "conversions": used,
                               "median_subject_epsilon": float(np.median(eps_a)),
                               "subjects": int(eps_a.size)})
    eps_a, route = _strict_subject_eps(method, fed, sig, rounds, delta, orders, conversion,
                                       envelope)
    worst = int(np.argmax(eps_a))
    per_unit = None if envelope else eps_a
    extras = {"median_subject_epsilon": float(np.median(eps_a)), "subjects": int(eps_a.size)}
    if tight and method in ("local_item_dp", "local_group_dp"):
        e_pld = _mixture_envelope_eps(fed, sig, rounds, delta, value_discretization_interval)
        extras["rdp_route_epsilon"] = float(eps_a[worst])
        extras["pld_mixture_epsilon"] = e_pld
    if method == "local_item_dp":
        extras["item_epsilon"] = _item_eps_max(fed, sig, rounds, delta, orders, conversion)
    if tight and "pld_mixture_epsilon" in extras and extras["pld_mixture_epsilon"] < eps_a[worst]:
        return _report(**(base | {"accountant": "pld"}), unit="subject",
                       epsilon=extras["pld_mixture_epsilon"], notes=notes, extras=extras,
                       per_unit=per_unit, route="mixture of Gaussians (PLD), envelope subject")
    return _report(**base, unit="subject", epsilon=float(eps_a[worst]), route=route,
                   per_unit=per_unit, worst_subject=None if envelope else worst, notes=notes,
                   extras=extras)
