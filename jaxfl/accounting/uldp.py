"""Privacy accountants of ULDP-FL (Kato et al., PVLDB 2024, Sec. 3 and Sec. 5.1): the privacy
half of every method (user-level ULDP-NAIVE / -SGD / -AVG / -AVG-w, silo-level, record-level and
ULDP-GROUP-k), built from the bounds of :mod:`jaxfl.accounting.uldp_bounds`, whose functions this
module re-exports (see its docstring for the three families of numbers and the group
conversions).

Example Usage:
  >>> round(uldp_epsilon(rounds=50, noise_multiplier=5.0, delta=1e-5, mode="paper"), 3)
  7.077
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np

from jaxfl import validate
from jaxfl.accounting import events, report
from jaxfl.accounting.uldp_bounds import (  # noqa: F401  re-exported: the module's public API
    GROUP_CONVERSIONS,
    MODES,
    NORMAL_PAPER_MAX_K,
    OPACUS_ORDERS,
    WIDE_ORDERS,
    _ceil_pow2,
    _floor_pow2,
    expected_batch_size,
    group_epsilon,
    group_mog_epsilon,
    group_mog_event,
    group_normal_epsilon,
    group_rdp_epsilon,
    mog_discretization,
    opacus_epsilon,
    opacus_sampling,
    paper_group_orders,
    record_level_epsilon,
    round_event,
    subsampled_gaussian_rdp,
    uldp_epsilon,
    uldp_epsilon_curve,
    uldp_group_epsilon,
    uldp_group_epsilon_curve,
)

# ----------------------------------------------------------------------------------------------
# Accountants: the privacy half of every ULDP-FL method (jaxfl.accounting.report protocol).
# ----------------------------------------------------------------------------------------------

USER_LEVEL_METHODS = ("ULDP-AVG", "ULDP-SGD", "ULDP-NAIVE")
RELATION = "add/remove one user (all of the user's records in every silo)"


class UserLevelAccountant(report.Accountant):
    """ULDP-AVG / -SGD (Thm. 3, Remark 1) and ULDP-NAIVE (Thm. 1): T rounds of the Gaussian
    (q = 1) or Poisson-subsampled Gaussian (user rate q) mechanism.

    ``mode="strict"`` (default): the PLD accountant (dp-accounting) at the *sound* multiplier:
    sigma for AVG / SGD; sigma / 2 for NAIVE, whose user-level sensitivity is 2C|S| (a user's
    removal moves every silo's clipped delta by up to 2C: the silo still reports).
    ``mode="paper"``: the authors' recipe (Opacus' RDP grid, series and conversion) at sigma;
    ``sound=False`` for NAIVE (sensitivity C|S|), sound for AVG / SGD (a looser bound).

    Args:
      noise_multiplier: sigma (noise std / C on the sum over silos).
      sampling_rate: user-level Poisson rate q (1.0: no sampling).
      method: ``"ULDP-AVG"``, ``"ULDP-SGD"`` or ``"ULDP-NAIVE"`` (suffixes allowed).
      mode: ``"strict"`` or ``"paper"``.
    """

    unit = "user"

    def __init__(self, *, noise_multiplier: float, sampling_rate: float = 1.0,
                 method: str = "ULDP-AVG", mode: str = "strict"):
        validate.one_of("mode", mode, report.MODES)
        self.sigma = validate.positive("noise_multiplier", noise_multiplier)
        self.q = validate.probability("sampling_rate", sampling_rate)
        self.method, self.mode = method, mode
        self.naive = method.startswith("ULDP-NAIVE")
        # Multiplier w.r.t. the sensitivity the accountant assumes.
        self.accounted_sigma = self.sigma / 2 if (self.naive and mode == "strict") else self.sigma
        self.sound = not (self.naive and mode == "paper")
        self.name = "pld" if mode == "strict" else "opacus-rdp"

    def epsilons(self, rounds, delta):
        r = report.check_rounds(rounds)
        return uldp_epsilon_curve(r, noise_multiplier=self.accounted_sigma, delta=delta,
                                  sampling_rate=self.q,
                                  mode="pld" if self.mode == "strict" else "paper")

    def dp_event(self, rounds):
        return events.repeated(round_event(noise_multiplier=self.accounted_sigma,
                                           sampling_rate=self.q), int(rounds))

    def report(self, rounds, delta):
        base = super().report(rounds, delta)
        det = {"method": self.method, "noise_multiplier": self.sigma,
               "accounted_noise_multiplier": self.accounted_sigma, "sampling_rate": self.q,
               "neighbouring_relation": RELATION,
               "user_sensitivity": ("2 C |S|" if self.mode == "strict" else "C |S| (paper)")
               if self.naive else "C"}
        return dataclasses.replace(base, details=det)

    def other_modes(self):
        other = "paper" if self.mode == "strict" else "strict"
        return {other: UserLevelAccountant(noise_multiplier=self.sigma, sampling_rate=self.q,
                                           method=self.method, mode=other)}


class SiloLevelAccountant(report.Accountant):
    """SILO-LEVEL-DP (McMahan et al. 2018 with silos as clients): every silo in every round, its
    clipped delta (norm <= C) under N(0, sigma^2 C^2): T Gaussian rounds, PLD accountant. The
    protected unit is a silo (not a user)."""

    unit, name = "silo", "pld"

    def __init__(self, *, noise_multiplier: float):
        self.sigma = validate.positive("noise_multiplier", noise_multiplier)

    def epsilons(self, rounds, delta):
        return uldp_epsilon_curve(report.check_rounds(rounds), noise_multiplier=self.sigma,
                                  delta=delta, mode="pld")

    def dp_event(self, rounds):
        return events.repeated(events.gaussian(self.sigma), int(rounds))

    def report(self, rounds, delta):
        return dataclasses.replace(super().report(rounds, delta), details={
            "noise_multiplier": self.sigma, "neighbouring_relation": "add/remove one silo"})


def _silo_histories(silo_sizes, batch_size, local_epochs):
    sizes = [validate.positive_int("silo_size", s) for s in silo_sizes]
    hist = [opacus_sampling(n, batch_size) for n in sizes]
    return sizes, [q for q, _ in hist], [local_epochs * b for _, b in hist]


class RecordLevelAccountant(report.Accountant):
    """RECORD-LEVEL-DP: Opacus-style DP-SGD in every silo on disjoint records; the record-level
    epsilon is the maximum over silos (parallel composition), each silo's history
    ``(sigma, q_s = 1/ceil(n_s/B), T Q ceil(n_s/B) steps)`` with Opacus' RDP recipe (a sound
    bound). ``per_unit``: the epsilon of the records of each silo."""

    unit, name = "record", "opacus-rdp"

    def __init__(self, *, silo_sizes, batch_size: int, local_epochs: int,
                 noise_multiplier: float):
        self.sigma = validate.positive("noise_multiplier", noise_multiplier)
        self.batch_size, self.local_epochs = batch_size, local_epochs
        self.sizes, self.rates, self.steps = _silo_histories(silo_sizes, batch_size,
                                                             local_epochs)

    def _per_silo(self, rounds, delta):
        return np.array([record_level_epsilon(silo_sizes=[n], batch_size=self.batch_size,
                                              local_epochs=self.local_epochs, rounds=int(rounds),
                                              noise_multiplier=self.sigma, delta=delta)
                         for n in self.sizes])

    def epsilons(self, rounds, delta):
        r = report.check_rounds(rounds)
        return np.array([0.0 if t == 0 else float(self._per_silo(t, delta).max()) for t in r])

    def dp_event(self, rounds):
        return events.composed([events.dp_sgd(noise_multiplier=self.sigma, sampling_rate=q,
                                              steps=int(rounds) * st)
                                for q, st in zip(self.rates, self.steps, strict=True)])

    def report(self, rounds, delta):
        base = super().report(rounds, delta)
        per = self._per_silo(base.rounds, base.delta) if base.rounds else np.zeros(
            len(self.sizes))
        return dataclasses.replace(
            base, per_unit=per, per_unit_axes=("silo",), details={
                "noise_multiplier": self.sigma, "silo_sizes": self.sizes,
                "sampling_rates": self.rates, "steps_per_round": self.steps,
                "neighbouring_relation": "add/remove one record",
                "dp_event_note": "composition over silos: an upper bound on the max over silos"})


class GroupAccountant(report.Accountant):
    """ULDP-GROUP-k (Thm. 2): record-level DP-SGD in every (bounded) silo, turned into
    user-level DP by group privacy over the k records a user keeps.

    ``mode="strict"`` (default): per round, the sound RDP group conversion (``"rdp"``: k rounded
    up to a power of two, orders >= 2k, the system's record-level RDP max_s rho_s); the report's
    headline is the smaller of that and the mixture-of-Gaussians PLD (``"pld_mog"``, no group
    conversion) when ``mog`` is on and k <= ``mog_max_group`` (its PLD grid grows with k).
    ``mode="paper"``: the authors' conversion (``"rdp_paper"``: k floored to a power of two,
    their order grid, the maximum of the per-silo epsilons), ``sound=False`` (a lower bound for
    k not a power of two, orders below 2k for k >= 16; the paper's Sec. 5.1
    reports the power of two below k).

    ``bounding``: how the flags were built (:func:`jaxfl.algorithms.uldp_data.bound_histogram`).
    ``"per_user"`` (a user's kept records depend on that user alone): removing a user removes
    at most k kept records, so every user with records gets the headline (a user with more
    than k records loses the extra ones to the flags, but the user is still protected).
    ``"global"`` (the authors' never-reset silo pointer): removing a user also moves other
    users' kept records between silos, so no group size bounds the change of the bounded
    data; the strict report is then ``inf`` for every user with records (the paper mode keeps
    its recipe, labelled unsound).

    ``per_unit`` (axis ``"user"``): the epsilon of each user, 0 for users without records.

    Args:
      silo_sizes: |D'_s| after bounding.
      batch_size, local_epochs, noise_multiplier: B, Q, sigma of the silos' DP-SGD.
      group_size: k.
      user_records: N_u of every user before bounding (for ``per_unit``); optional.
      bounding: ``"per_user"`` or ``"global"`` (see above).
      mode: ``"strict"`` or ``"paper"``.
      mog: compute the mixture-of-Gaussians PLD in the strict report.
      mog_max_group: largest k for which it is computed.
    """

    unit = "user"

    def __init__(self, *, silo_sizes, batch_size: int, local_epochs: int,
                 noise_multiplier: float, group_size: int, user_records=None,
                 bounding: str = "per_user", mode: str = "strict", mog: bool = True,
                 mog_max_group: int = 8):
        validate.one_of("mode", mode, report.MODES)
        self.bounding = validate.one_of("bounding", bounding, ("per_user", "global"))
        self.sigma = validate.positive("noise_multiplier", noise_multiplier)
        self.k = validate.positive_int("group_size", group_size)
        self.batch_size, self.local_epochs = batch_size, local_epochs
        self.sizes, self.rates, self.steps = _silo_histories(silo_sizes, batch_size,
                                                             local_epochs)
        self.user_records = None if user_records is None else np.asarray(user_records, np.int64)
        self.mode, self.mog, self.mog_max_group = mode, bool(mog), int(mog_max_group)
        self.conversion = "rdp" if mode == "strict" else "rdp_paper"
        self.sound = mode == "strict"
        self.name = f"group-{self.conversion}"

    def _kw(self):
        return dict(silo_sizes=self.sizes, batch_size=self.batch_size,
                    local_epochs=self.local_epochs, noise_multiplier=self.sigma,
                    group_size=self.k)

    @property
    def _coupled(self) -> bool:
        """Strict accounting of flags that couple users: no finite user-level bound."""
        return self.mode == "strict" and self.bounding == "global"

    def epsilons(self, rounds, delta):
        r = report.check_rounds(rounds)
        if self._coupled:
            return np.where(r > 0, np.inf, 0.0)
        return uldp_group_epsilon_curve(r.tolist(), delta=delta, conversion=self.conversion,
                                        **self._kw())

    def dp_event(self, rounds):
        if self.mode == "paper" or self._coupled:
            return None
        return events.composed([group_mog_event(sampling_rate=q, noise_multiplier=self.sigma,
                                                steps=int(rounds) * st, group_size=self.k)
                                for q, st in zip(self.rates, self.steps, strict=True)])

    def report(self, rounds, delta):
        base = super().report(rounds, delta)
        used = _floor_pow2(self.k) if self.mode == "paper" else _ceil_pow2(self.k)
        det = {"group_size": self.k, "group_size_used": used, "conversion": self.conversion,
               "silo_sizes": self.sizes, "sampling_rates": self.rates,
               "steps_per_round": self.steps, "noise_multiplier": self.sigma,
               "neighbouring_relation": RELATION + f", users capped at {self.k} records"}
        det["bounding"] = self.bounding
        eps = base.epsilon
        if self._coupled:
            det["note"] = ("flags with the authors' global round-robin pointer: removing a user "
                           "moves other users' kept records between silos, so no group size "
                           "bounds the change of the bounded silos (bound with "
                           "pointer='per_user' for a finite user-level epsilon)")
        elif self.mode == "strict":
            det["epsilon_rdp"] = eps
            if self.mog and self.k <= self.mog_max_group and base.rounds > 0:
                mog = uldp_group_epsilon(rounds=base.rounds, delta=base.delta,
                                         conversion="pld_mog", **self._kw())["epsilon"]
                det["sound_final_pld_mog"] = mog
                eps = min(mog, eps)
        else:
            det["note"] = ("the authors' recipe: k floored to a power of two (a lower bound), "
                           "their order grid (orders < 2k for k >= 16) and the max over silos")
        per, axes = None, ()
        if self.user_records is not None:
            n = self.user_records
            per = np.where(n > 0, eps, 0.0)
            axes = ("user",)
            det["truncated_users"] = int(np.sum(n > self.k))  # extra records dropped
        return dataclasses.replace(base, epsilon=eps, per_unit=per, per_unit_axes=axes,
                                   details=det)

    def other_modes(self):
        other = "paper" if self.mode == "strict" else "strict"
        return {other: GroupAccountant(**self._kw(), user_records=self.user_records, mode=other,
                                       bounding=self.bounding, mog=self.mog,
                                       mog_max_group=self.mog_max_group)}


def method_accountant(method: str, *, noise_multiplier: float = 0.0, sampling_rate: float = 1.0,
                      silo_sizes=None, batch_size: int | None = None,
                      local_epochs: int | None = None, group_size: int | None = None,
                      user_records=None, mode: str = "strict", mog: bool = True,
                      bounding: str = "per_user") -> report.Accountant:
    """The accountant of a ULDP-FL method by its paper name (``DEFAULT``, ``ULDP-NAIVE``,
    ``ULDP-AVG[-w|-s|-ws]``, ``ULDP-SGD[...]``, ``ULDP-GROUP-k``, ``SILO-LEVEL-DP``,
    ``RECORD-LEVEL-DP``); the builders of :mod:`jaxfl.algorithms.uldp` and
    :mod:`jaxfl.algorithms.uldp_silo` call it with the mechanism's own values.

    Example Usage:
      >>> a = method_accountant("ULDP-AVG", noise_multiplier=5.0)
      >>> round(a.other_modes()["paper"].report(50, 1e-5).epsilon, 3)
      7.077
      >>> method_accountant("ULDP-NAIVE", noise_multiplier=5.0, mode="paper").sound
      False
    """
    if method == "DEFAULT" or noise_multiplier == 0:
        return report.NonPrivateAccountant(unit="user")
    if method.startswith(USER_LEVEL_METHODS):
        return UserLevelAccountant(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate,
                                   method=method, mode=mode)
    if method == "SILO-LEVEL-DP":
        return SiloLevelAccountant(noise_multiplier=noise_multiplier)
    hist = dict(silo_sizes=silo_sizes, batch_size=batch_size, local_epochs=local_epochs,
                noise_multiplier=noise_multiplier)
    if method == "RECORD-LEVEL-DP":
        return RecordLevelAccountant(**hist)
    if method.startswith("ULDP-GROUP"):
        return GroupAccountant(**hist, group_size=group_size, user_records=user_records,
                               mode=mode, mog=mog, bounding=bounding)
    raise validate.JaxflValueError(f"Unknown ULDP-FL method {method!r}.")


# ----------------------------------------------------------------------------------------------
# The reproduction's exact tables (docs/reproduction/uldp.md; data uldp_privacy_tables.json)
# ----------------------------------------------------------------------------------------------

def epsilon_table(rounds, *, noise_multiplier: float, delta: float,
                  sampling_rates=None) -> list[dict]:
    """User-level epsilon of ULDP-AVG in the paper's mode (Opacus RDP) and by PLD, one row
    per entry of ``rounds``: ``{"rounds", "paper", "pld"}`` at full participation (the
    epsilon curve, one :func:`uldp_epsilon_curve` per mode), or, with ``sampling_rates`` (one
    per entry), ``{"rounds", "q", "paper", "pld"}`` under user-level Poisson sub-sampling."""
    kw = dict(noise_multiplier=noise_multiplier, delta=delta)
    if sampling_rates is None:
        paper, pld = (uldp_epsilon_curve(rounds, mode=m, **kw) for m in ("paper", "pld"))
        return [{"rounds": t, "paper": float(p), "pld": float(s)}
                for t, p, s in zip(rounds, paper, pld, strict=True)]
    return [{"rounds": t, "q": q, **{m: uldp_epsilon(rounds=t, sampling_rate=q, mode=m, **kw)
                                     for m in ("paper", "pld")}}
            for t, q in zip(rounds, sampling_rates, strict=True)]


def group_conversion_table(group_sizes: dict, *, sampling_rate: float, noise_multiplier: float,
                           steps: int, delta: float) -> dict:
    """Fig. 2's group conversions of record-level DP-SGD: ``"record"``, the record-level
    epsilon (k = 1, the paper's RDP conversion), and per conversion ``c`` of ``group_sizes``
    (``"rdp"``, ``"normal"``: its list of k) the rows ``{"k", "paper", "sound"}``: the
    :func:`group_epsilon` of conversion ``c + "_paper"`` (the paper's order grid) and of
    ``c`` (the sound one)."""
    kw = dict(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier, steps=steps,
              delta=delta)
    return {"record": group_epsilon(group_size=1, conversion="rdp_paper", **kw),
            **{c: [{"k": k, "paper": group_epsilon(group_size=k, conversion=f"{c}_paper", **kw),
                    "sound": group_epsilon(group_size=k, conversion=c, **kw)} for k in ks]
               for c, ks in group_sizes.items()}}


# The paper's printed privacy numbers (the spec's values; every one reproduced in paper mode):
# the ULDP-AVG epsilon curve (sigma 5, delta 1e-5, q = 1): rounds -> epsilon.
PAPER_CURVE = {1: 0.7945, 2: 1.158, 3: 1.446, 5: 1.914, 10: 2.814, 20: 4.162, 25: 4.729,
               30: 5.252, 40: 6.208, 50: 7.077, 60: 7.884, 75: 9.010, 80: 9.368, 100: 10.726,
               120: 11.994, 150: 13.776, 160: 14.342, 200: 16.513}
# ULDP-AVG-w under user-level sub-sampling: (rounds, q) -> epsilon.
PAPER_SUBSAMPLED = {(100, 0.1): 0.8349, (100, 0.3): 2.7591, (100, 0.5): 4.8622,
                    (100, 0.7): 7.1100, (100, 1.0): 10.7255, (200, 0.1): 1.2035,
                    (200, 0.3): 4.0399, (200, 0.5): 7.2310, (200, 0.7): 10.7296,
                    (200, 1.0): 16.5129}
# Fig. 2 (record-level DP-SGD, :data:`FIG2_SETTING`): conversion -> group size k -> epsilon.
PAPER_FIG2 = {"rdp": {2: 7.99, 4: 24.54, 8: 98.79, 16: 450.70, 32: 2151.98, 64: 11416.54},
              "normal": {5: 25.98, 9: 71.88, 13: 143.50, 17: 241.75, 21: 367.10, 25: 519.85,
                         29: 700.39, 33: 910.26, 37: 1177.77, 41: 1542.57, 45: 2069.54,
                         49: 2897.65, 53: 4388.29, 57: 7866.49, 61: 25257.66}}
FIG2_SETTING = dict(sampling_rate=0.01, noise_multiplier=5.0, steps=100_000, delta=1e-5)
# ULDP-GROUP epsilon of the authors' code for allocation seed 10: (dataset, |U|, distribution)
# -> group method ("2", "8", "median", "max") -> epsilon.
PAPER_GROUP = {("heart", 50, "uniform"): {"2": 165, "8": 3401, "median": 2953, "max": 2953},
               ("heart", 50, "zipf"): {"2": 610, "8": 21610, "median": 21610, "max": 80561},
               ("heart", 200, "uniform"): {"2": 98, "8": 2953, "median": 87, "max": 482},
               ("heart", 200, "zipf"): {"2": 218, "8": 3401, "median": 218, "max": 2953},
               ("tcga", 50, "uniform"): {"2": 610, "8": 6194, "median": 25724, "max": 25724},
               ("tcga", 50, "zipf"): {"2": 610, "8": 21610, "median": 12760, "max": 1.37e6},
               ("tcga", 200, "uniform"): {"2": 218, "8": 4872, "median": 972, "max": 4872},
               ("tcga", 200, "zipf"): {"2": 321, "8": 6194, "median": 1303, "max": 25724}}
# The GROUP table's run (Sec. 5.1, the authors' code): batch size per dataset, Q, T, sigma.
GROUP_SETTING = dict(batch_size={"heart": 4, "tcga": 8}, local_epochs=50, rounds=50,
                     noise_multiplier=5.0, delta=1e-5)
GROUP_DATASETS = {"heart": "heart_disease", "tcga": "tcga_brca"}  # the tables' names -> jaxfl's


def paper_tables(*, mog_group_sizes=(), noise_multiplier: float = 5.0,
                 delta: float = 1e-5) -> dict:
    """The paper's exact privacy tables recomputed, each row beside the printed value
    (``"gold"``): ``"curve"`` (:func:`epsilon_table` at the rounds of :data:`PAPER_CURVE`),
    ``"subsampled"`` (at :data:`PAPER_SUBSAMPLED`'s (rounds, q)) and ``"fig2"``
    (:func:`group_conversion_table` of :data:`FIG2_SETTING` at :data:`PAPER_FIG2`'s k, plus
    ``"mog"``: one row ``{"k", "pld_mog", "seconds"}`` per ``mog_group_sizes``, the
    mixture-of-Gaussians PLD group bound and the seconds it took)."""
    kw = dict(noise_multiplier=noise_multiplier, delta=delta)
    ts, (sub_t, sub_q) = sorted(PAPER_CURVE), zip(*sorted(PAPER_SUBSAMPLED), strict=True)
    fig2 = group_conversion_table({c: list(g) for c, g in PAPER_FIG2.items()}, **FIG2_SETTING)
    for c, gold in PAPER_FIG2.items():
        fig2[c] = [{"gold": gold[r["k"]], **r} for r in fig2[c]]
    fig2["mog"] = []
    for k in mog_group_sizes:
        t0 = time.time()
        fig2["mog"].append({"k": k, "pld_mog": group_epsilon(
            **FIG2_SETTING, group_size=k, conversion="pld_mog"), "seconds": time.time() - t0})
    return {"curve": [{"gold": PAPER_CURVE[r["rounds"]], **r}
                      for r in epsilon_table(ts, **kw)],
            "subsampled": [{"gold": PAPER_SUBSAMPLED[(r["rounds"], r["q"])], **r} for r in
                           epsilon_table(sub_t, sampling_rates=sub_q, **kw)],
            "fig2": fig2}


def group_table(allocate, seeds, *, settings=None) -> list[dict]:
    """The ULDP-GROUP table: per setting of ``settings`` (default :data:`PAPER_GROUP`:
    ``(dataset, num_users, distribution) -> method -> the authors' epsilon``) and group method,
    the ULDP-GROUP-k epsilon (:func:`uldp_group_epsilon`, the paper's RDP conversion, k
    floored, max over silos, :data:`GROUP_SETTING`) of every allocation seed.

    ``allocate(dataset, *, num_users, distribution, seed, group)`` (``dataset`` by its jaxfl
    name, :data:`GROUP_DATASETS`; ``group`` the method's k, ``"max"`` or ``"median"``) returns
    ``(k, silo_sizes)``, the group size and the bounded silo sizes (None: a silo is left empty,
    the authors' run aborts), as :func:`jaxfl.tasks.silos.bounded_silo_sizes` does. One row
    per (setting, method): ``k_last`` / ``eps_last`` of the last seed, ``eps_min`` /
    ``eps_max`` over the seeds that did not abort, ``gold_last`` (the authors' value),
    ``seeds`` and ``aborted`` (how many seeds aborted)."""
    s = GROUP_SETTING

    @functools.cache
    def eps(sizes, k, batch_size):
        return uldp_group_epsilon(
            silo_sizes=sizes, batch_size=batch_size, local_epochs=s["local_epochs"],
            rounds=s["rounds"], noise_multiplier=s["noise_multiplier"], group_size=k,
            delta=s["delta"], conversion="rdp_paper")["epsilon"]

    rows = []
    for (ds, users, dist), gold in (PAPER_GROUP if settings is None else settings).items():
        for method in gold:
            alloc = [allocate(GROUP_DATASETS[ds], num_users=users, distribution=dist, seed=seed,
                              group=method) for seed in seeds]
            vals = [None if sizes is None else eps(tuple(sizes), k, s["batch_size"][ds])
                    for k, sizes in alloc]
            ok = [v for v in vals if v is not None]
            rows.append({"dataset": ds, "num_users": users, "distribution": dist,
                         "method": f"ULDP-GROUP-{method}", "k_last": alloc[-1][0],
                         "eps_last": vals[-1], "eps_min": min(ok, default=None),
                         "eps_max": max(ok, default=None), "gold_last": gold[method],
                         "seeds": list(seeds), "aborted": vals.count(None)})
    return rows


def paper_match_counts(tables: dict) -> dict:
    """How many of the paper's printed cells ``tables`` (:func:`paper_tables` plus
    ``"group"``: :func:`group_table`) reproduce at the printed precision: the curve and the
    sub-sampling to 4 significant digits (relative 5e-4), Fig. 2 to 2 decimals (0.006), GROUP
    to 3 significant digits (relative 5e-3, or 0.5 absolute). Returns ``curve`` / ``curve_n``,
    ``sub`` / ``sub_n``, ``fig2`` / ``fig2_n``, ``group`` / ``group_n``, ``curve_ok`` (every
    curve and sub-sampling cell), ``fig2_ok`` (every Fig. 2 cell), ``bad`` (the GROUP cells
    that miss, as text), ``t<rounds>`` (the paper-mode curve), ``record``, ``k8`` / ``k16`` /
    ``k32`` / ``k64`` (Fig. 2's RDP conversion, paper mode), ``k64_sound`` (orders >= 2k only)
    and ``mog8`` / ``mog16`` / ``mog32`` (the mixture-of-Gaussians PLD; None where the tables
    did not compute it)."""
    def close(a, b, rel):
        return abs(a - b) <= rel * abs(b)

    f2, rdp = tables["fig2"]["rdp"] + tables["fig2"]["normal"], {
        r["k"]: r for r in tables["fig2"]["rdp"]}
    mog = {r["k"]: r["pld_mog"] for r in tables["fig2"]["mog"]}
    bad = [r for r in tables["group"] if not (abs(r["eps_last"] - r["gold_last"]) <= 0.5
                                              or close(r["eps_last"], r["gold_last"], 5e-3))]
    n = {"curve": sum(close(r["paper"], r["gold"], 5e-4) for r in tables["curve"]),
         "curve_n": len(tables["curve"]),
         "sub": sum(close(r["paper"], r["gold"], 5e-4) for r in tables["subsampled"]),
         "sub_n": len(tables["subsampled"]),
         "fig2": sum(abs(r["paper"] - r["gold"]) <= 0.006 for r in f2), "fig2_n": len(f2),
         "group": len(tables["group"]) - len(bad), "group_n": len(tables["group"]),
         "bad": "; ".join(f"{r['dataset'].capitalize()} U={r['num_users']} "
                          f"{r['distribution']} {r['method'].removeprefix('ULDP-')}: "
                          f"{r['eps_last']:.1f} vs {r['gold_last']}" for r in bad),
         **{f"t{r['rounds']}": r["paper"] for r in tables["curve"]},
         "record": tables["fig2"]["record"], **{f"k{k}": rdp[k]["paper"] for k in (8, 16, 32, 64)},
         "k64_sound": rdp[64]["sound"], **{f"mog{k}": mog.get(k) for k in (8, 16, 32)}}
    return n | {"curve_ok": (n["curve"], n["sub"]) == (n["curve_n"], n["sub_n"]),
                "fig2_ok": n["fig2"] == n["fig2_n"]}


# Sec. 5.2 puts ULDP-GROUP at epsilon "of order 1e2 to 1e6" (no printed range), read as: every
# GROUP epsilon's nearest power of ten (log10 rounded) in 2..6, which covers the reference table
# (87 to 1.37e6), and each at least GROUP_FAR_ABOVE x ULDP-AVG's largest.
GROUP_EPS_ORDERS, GROUP_FAR_ABOVE = (2, 6), 10.0


def group_epsilon_orders(group_eps, avg_eps) -> tuple[bool, dict]:
    """Sec. 5.2's claim on ULDP-GROUP's epsilons (:data:`GROUP_EPS_ORDERS`,
    :data:`GROUP_FAR_ABOVE`) decided on the epsilons of runs: ``(holds, numbers)``, the numbers
    ``lo`` / ``hi`` (GROUP's smallest and largest epsilon), ``avg`` (ULDP-AVG's largest) and
    ``ratio`` (``lo / avg``).

    Raises:
      JaxflValueError: ``group_eps`` or ``avg_eps`` empty.

    Example Usage:
      >>> group_epsilon_orders([87.32, 2953.0], [7.077])[0]  # Heart (6c): 87.32 is order 1e2
      True
    """
    group_eps, avg_eps = list(group_eps), list(avg_eps)
    if not group_eps or not avg_eps:
        raise validate.JaxflValueError(
            f"Expected GROUP and AVG epsilons, got group_eps={group_eps}, avg_eps={avg_eps}.")
    lo, hi, avg = min(group_eps), max(group_eps), max(avg_eps)
    o_lo, o_hi = GROUP_EPS_ORDERS
    holds = (o_lo <= round(math.log10(lo)) and round(math.log10(hi)) <= o_hi
             and lo >= GROUP_FAR_ABOVE * avg)
    return holds, dict(lo=lo, hi=hi, avg=avg, ratio=lo / avg)
