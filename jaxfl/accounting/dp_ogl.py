"""Per-worker privacy (PwP) of DP-OGL / DP-OGL+: Theorem 1 (propagation delay) for any group
structure (Kiani, Boenisch, Draper, IEEE JSAIT 2024, Sec. IV-A/B, Eqs. 15, 17, 18, Alg. 2).

Setting. Workers N, groups M with membership ``B [N, M]``; every group-epoch is a Poisson-sampled
Gaussian mechanism (SGM) with rate ``pi_m`` and noise multiplier ``sigma_m`` with respect to each
member (worker-level add/remove). An honest-but-curious worker i sees the models of its own
groups. Information of target n's group m' reaches i only through overlapping workers at
inter-group epochs ``(t - 1) mod S == 0``, with a delay set by the GtoH hop distance
``rho_hat[m', i]``.

Counts (Kiani et al. 2024, Sec. IV-A; the paper does not print Eq. 17 and leaves its rounding
unclear, so ``k_t = ceil((t - 1) / S)`` inter-group epochs in ``[1, t - 1]``; "t" means
``theta^1..theta^t`` are revealed, i.e. t - 1 mechanisms):

* DP-OGL, Threat Model 1 (Eq. 17, reconstructed): ``C = t - 1`` if ``rho_hat = 0``,
  ``S max(0, k_t - rho_hat)`` if ``1 <= rho_hat < inf``, 0 if unreachable.
* DP-OGL+, Threat Model 2 (Eq. 18): ``C = max(0, k_t - rho_hat)`` window mechanisms; only
  out-of-group attackers (``rho_hat >= 1``) are in the threat model.

``RDP[n, i, alpha] = sum_{m'} B[n, m'] C(t, S, rho_hat[m', i]) eps_{m'}(alpha)`` with
``eps_m`` the exact SGM RDP (default) or the paper's closed form ``2 pi^2 alpha / sigma^2``;
converted to (epsilon, delta) per pair; PwP of worker n = max over the attackers of the threat
model (TM1: every ``i != n``; TM2: every i sharing no group with n). Excluded pairs are NaN.

Recipes (RDP order grid + conversion):
* ``"default"``: dp-accounting's orders and the improved conversion (Balle et al. 2020 with the
  KL shortcut) - the sound, slightly tighter choice.
* ``"paper"``: the Opacus order grid and Opacus ``get_privacy_spent`` conversion, as used for
  the paper's figures (reproduces the reference table of
  tests/accounting/dp_ogl_test.py to 1e-3).
Both use the exact SGM RDP unless ``mechanism="closed_form"``.

The accountant. :class:`PwPAccountant` (set on :func:`jaxfl.algorithms.dp_ogl.dp_ogl` as
``Algorithm.accountant``) puts this together as a :class:`~jaxfl.accounting.report.Accountant`:
headline = the worst (target, observer) pair after ``rounds`` epochs (``t = rounds + 1``),
``per_unit`` = the ``[N, N]`` matrix with axes ``("target", "observer")``, details = per-worker
PwP and its mean/std/max, counts, onsets; ``dp_event`` = the worst pair's event.
:func:`privacy_report` is its report at epoch t.

Soundness note for DP-OGL+: the Eq. 18 bound assumes each worker's clipped window sum depends
only on its own data. That holds for :mod:`jaxfl.algorithms.dp_ogl` with
``window_updates="local"`` (default) but not for the paper's shared un-noised intermediate group
updates (Eq. 11, ``window_updates="shared"``), where other members train on models that contain
the target's un-noised updates; see docs/reproduction/dp_ogl.md. Its accountant says
``mode="paper"``, ``sound=False``.

Example Usage:
  >>> from jaxfl.topology import groups
  >>> s = groups.string(3, 2)  # Examples 2-3: G1 = {0, 1}, G2 = {1, 2}
  >>> K = pairwise_counts(s, t=4, period=2).sum(-1)  # [target, attacker]
  >>> int(K[0, 1]), int(K[0, 2]), int(K[1, 0]), int(K[1, 2])  # 3 eps, 2 eps, 5 eps, 5 eps
  (3, 2, 5, 5)
"""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting
import numpy as np

from jaxfl import validate
from jaxfl.accounting import events, recipes, report
from jaxfl.accounting import sampled_gaussian as sgm
from jaxfl.accounting.dp_ogl_fig4 import fig4_numbers, fig4_tables, mean_worst_count
from jaxfl.topology import groups

# pylint: disable=invalid-name

ALGORITHMS = ("dp_ogl", "dp_ogl_plus")
THREAT_MODELS = ("tm1", "tm2")
MECHANISMS = ("exact", "closed_form")
RECIPES = {"default": (recipes.DEFAULT_ORDERS, "improved"),
           "paper": (recipes.OPACUS_ORDERS, "opacus")}
ROUNDINGS = ("ceil", "paper_floor_t_over_S")
WINDOW_UPDATES = ("local", "shared")


def default_threat_model(algorithm: str) -> str:
    """TM1 for DP-OGL, TM2 for DP-OGL+ (the pairing of the paper)."""
    return "tm1" if validate.one_of("algorithm", algorithm, ALGORITHMS) == "dp_ogl" else "tm2"


def mixing_epochs(t, period: int, rounding: str = "ceil"):
    """``k_t``: the number of inter-group epochs in ``[1, t - 1]`` (``ceil((t - 1) / S)``).

    ``rounding="paper_floor_t_over_S"`` gives ``floor(t / S)`` (the proofs' reading; it can
    under-count, e.g. S=4, t=6, and is offered for comparisons only).
    """
    validate.one_of("rounding", rounding, ROUNDINGS)
    t = np.asarray(t, dtype=np.int64)
    if rounding == "ceil":
        return (t - 1 + period - 1) // period
    return t // period


def propagation_count(t, period: int, rho, *, algorithm: str = "dp_ogl",
                      rounding: str = "ceil") -> np.ndarray:
    """Number of target-group mechanisms visible to the HbC worker, broadcast over t and rho.

    Args:
      t: epoch index (>= 1): ``theta^1..theta^t`` revealed.
      period: S, epochs between inter-group epochs.
      rho: GtoH distance(s) (0, positive integers or ``inf``).
      algorithm: ``"dp_ogl"`` (per-epoch mechanisms) or ``"dp_ogl_plus"`` (per-window).
      rounding: see :func:`mixing_epochs`.

    Returns:
      int64 counts. For DP-OGL+ in-group distances (rho = 0) give 0: those pairs are trusted
      and must be excluded by the threat-model mask.
    """
    validate.one_of("algorithm", algorithm, ALGORITHMS)
    t = np.asarray(t, dtype=np.int64)
    rho = np.asarray(rho, dtype=np.float64)
    k = mixing_epochs(t, period, rounding)
    finite = np.isfinite(rho)
    r = np.where(finite, rho, 0).astype(np.int64)
    delayed = np.maximum(0, k - r)
    if algorithm == "dp_ogl":
        out = np.where(r == 0, t - 1, period * delayed)
    else:
        out = np.where(r == 0, 0, delayed)
    return np.where(finite, out, 0).astype(np.int64)


def pairwise_counts(structure, *, t: int, period: int, algorithm: str = "dp_ogl",
                    rounding: str = "ceil") -> np.ndarray:
    """``count[n, i, m']``: mechanisms of target n's group m' visible to HbC i; ``[N, N, M]``.

    Summing the last axis gives the "number of effective mechanisms" ``K[n, i]``. The threat
    model is not applied here (see :func:`attack_mask`).
    """
    s = groups.as_structure(structure)
    t = validate.positive_int("t", t)
    period = validate.positive_int("period", period)
    c = propagation_count(t, period, groups.group_to_worker_distances(s), algorithm=algorithm,
                          rounding=rounding)  # [M, N]
    return s.membership[:, None, :].astype(np.int64) * c.T[None, :, :]


def attack_mask(structure, threat_model: str) -> np.ndarray:
    """``[N, N]`` bool, true where HbC i attacks target n: TM1 ``i != n``; TM2 no shared group."""
    s = groups.as_structure(structure)
    validate.one_of("threat_model", threat_model, THREAT_MODELS)
    if threat_model == "tm1":
        return ~np.eye(s.num_workers, dtype=bool)
    return ~groups.in_group_peers(s)


def _per_group(name: str, value, num_groups: int) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.ndim > 1 or (v.ndim == 1 and v.shape[0] != num_groups):
        raise validate.ShapeError(
            f"Expected {name} to be a scalar or of shape [{num_groups}], got shape {v.shape}.")
    if not np.all(np.isfinite(v)):
        raise validate.PrivacyParameterError(f"Expected finite {name}, got {v.tolist()}.")
    return np.broadcast_to(v, (num_groups,)).copy()


def group_rdp(structure, *, noise_multipliers, sampling_rates, orders: Sequence[float],
              mechanism: str = "exact") -> np.ndarray:
    """RDP ``eps_m(alpha)`` of one mechanism of every group, ``[M, len(orders)]``."""
    s = groups.as_structure(structure)
    validate.one_of("mechanism", mechanism, MECHANISMS)
    sig = _per_group("noise_multipliers", noise_multipliers, s.num_groups)
    q = _per_group("sampling_rates", sampling_rates, s.num_groups)
    fn = sgm.sgm_rdp if mechanism == "exact" else sgm.closed_form_rdp
    cache = {}
    rows = []
    for m in range(s.num_groups):  # host loop over groups; identical groups share one curve
        key = (float(q[m]), float(sig[m]))
        if key not in cache:
            cache[key] = fn(sampling_rate=key[0], noise_multiplier=key[1], orders=orders)
        rows.append(cache[key])
    return np.stack(rows)


def _resolve(algorithm, threat_model, recipe, orders, conversion):
    validate.one_of("algorithm", algorithm, ALGORITHMS)
    tm = threat_model or default_threat_model(algorithm)
    validate.one_of("threat_model", tm, THREAT_MODELS)
    if algorithm == "dp_ogl_plus" and tm == "tm1":
        raise validate.JaxflValueError(
            "DP-OGL+ gives in-group peers no protection, so it has no Threat Model 1 guarantee; "
            "use threat_model='tm2' (or algorithm='dp_ogl').")
    validate.one_of("recipe", recipe, tuple(RECIPES))
    rec_orders, rec_conv = RECIPES[recipe]
    orders = tuple(rec_orders if orders is None else np.asarray(orders, np.float64).tolist())
    return tm, orders, conversion or rec_conv


def pairwise_rdp(structure, *, t: int, period: int, noise_multipliers, sampling_rates,
                 algorithm: str = "dp_ogl", threat_model: str | None = None,
                 recipe: str = "default", orders: Sequence[float] | None = None,
                 mechanism: str = "exact", rounding: str = "ceil") -> np.ndarray:
    """Theorem 1 RDP curve of every (target n, HbC i) pair, ``[N, N, len(orders)]`` float64.

    Args:
      structure: a :class:`~jaxfl.topology.groups.GroupStructure` or membership matrix.
      t: models ``theta^1..theta^t`` are revealed (t - 1 epochs ran).
      period: S.
      noise_multipliers: sigma_m, scalar or ``[M]``.
      sampling_rates: pi_m, scalar or ``[M]``.
      algorithm: ``"dp_ogl"`` or ``"dp_ogl_plus"``.
      threat_model: ``"tm1"`` / ``"tm2"`` (default: the algorithm's pairing).
      recipe: ``"default"`` or ``"paper"`` (selects the order grid when ``orders`` is None).
      orders: RDP orders (overrides the recipe's grid).
      mechanism: ``"exact"`` SGM RDP or the paper's ``"closed_form"``.
      rounding: ``"ceil"`` (sound) or ``"paper_floor_t_over_S"``.

    Returns:
      RDP values; pairs outside the threat model (including ``n == i``) are NaN.
    """
    s = groups.as_structure(structure)
    tm, orders, _ = _resolve(algorithm, threat_model, recipe, orders, None)
    counts = pairwise_counts(s, t=t, period=period, algorithm=algorithm, rounding=rounding)
    eps = group_rdp(s, noise_multipliers=noise_multipliers, sampling_rates=sampling_rates,
                    orders=orders, mechanism=mechanism)
    rdp = np.einsum("nim,ma->nia", counts.astype(np.float64), eps)
    return np.where(attack_mask(s, tm)[:, :, None], rdp, np.nan)


def pairwise_epsilon(structure, *, t: int, period: int, delta: float, noise_multipliers,
                     sampling_rates, algorithm: str = "dp_ogl", threat_model: str | None = None,
                     recipe: str = "default", orders: Sequence[float] | None = None,
                     conversion: str | None = None, mechanism: str = "exact",
                     rounding: str = "ceil") -> np.ndarray:
    """(epsilon, delta) of every (target n, HbC i) pair, ``[N, N]``; NaN where excluded.

    Arguments as in :func:`pairwise_rdp`, plus ``delta`` and ``conversion`` (default: the
    recipe's, ``"improved"`` or ``"opacus"``).
    """
    delta = validate.delta(delta)
    _, orders, conversion = _resolve(algorithm, threat_model, recipe, orders, conversion)
    rdp = pairwise_rdp(structure, t=t, period=period, noise_multipliers=noise_multipliers,
                       sampling_rates=sampling_rates, algorithm=algorithm,
                       threat_model=threat_model, recipe=recipe, orders=orders,
                       mechanism=mechanism, rounding=rounding)
    excluded = np.isnan(rdp[..., 0])
    eps, _ = recipes.epsilon_from_rdp(orders, np.where(np.isnan(rdp), 0.0, rdp), delta,
                                      conversion)
    zero = np.all(np.where(np.isnan(rdp), 0.0, rdp) == 0, axis=-1)
    eps = np.where(zero, 0.0, eps)
    return np.where(excluded, np.nan, eps)


def per_worker(pairwise: np.ndarray) -> np.ndarray:
    """PwP of each target (Eq. 15): max over the non-NaN attackers; NaN if there are none."""
    pairwise = np.asarray(pairwise, dtype=np.float64)
    has = ~np.all(np.isnan(pairwise), axis=1)
    out = np.full(pairwise.shape[0], np.nan)
    out[has] = np.nanmax(pairwise[has], axis=1)
    return out


def privacy_report(structure, *, t: int, period: int, delta: float, noise_multipliers,
                   sampling_rates, algorithm: str = "dp_ogl", threat_model: str | None = None,
                   recipe: str = "default", mechanism: str = "exact", rounding: str = "ceil",
                   window_updates: str = "local") -> report.PrivacyReport:
    """The :class:`PwPAccountant` report at epoch t (models ``theta^1..theta^t`` revealed, i.e.
    ``t - 1`` rounds): headline = worst pair, ``per_unit`` = the ``[target, observer]`` matrix,
    ``details`` = per-worker PwP, its mean/std/max, counts, onsets and the settings."""
    t = validate.positive_int("t", t)
    acc = PwPAccountant(structure, period=period, noise_multipliers=noise_multipliers,
                        sampling_rates=sampling_rates, algorithm=algorithm,
                        threat_model=threat_model, recipe=recipe, mechanism=mechanism,
                        rounding=rounding, window_updates=window_updates)
    return acc.report(t - 1, delta)


def _uniform(values) -> bool:
    v = np.asarray(values, dtype=np.float64).ravel()
    return bool(np.all(v == v[0]))


def pwp_curve(structure, *, epochs: Sequence[int], period: int, delta: float,
              noise_multipliers, sampling_rates, algorithm: str = "dp_ogl",
              threat_model: str | None = None, recipe: str = "default",
              mechanism: str = "exact", rounding: str = "ceil") -> np.ndarray:
    """Per-worker PwP at each epoch t in ``epochs``: ``[len(epochs), N]`` (NaN: no attacker).

    With uniform (pi, sigma) the per-pair RDP is ``K eps_1`` and epsilon is monotone in K, so
    epsilon is tabulated once over K and the max over attackers is taken on K (fast path).
    """
    s = groups.as_structure(structure)
    tm, orders, conversion = _resolve(algorithm, threat_model, recipe, None, None)
    delta = validate.delta(delta)
    ts = np.asarray([validate.positive_int("t", int(t)) for t in epochs], dtype=np.int64)
    period = validate.positive_int("period", period)
    mask = attack_mask(s, tm)
    if _uniform(noise_multipliers) and _uniform(sampling_rates):
        eps1 = group_rdp(s, noise_multipliers=noise_multipliers, sampling_rates=sampling_rates,
                         orders=orders, mechanism=mechanism)[0]
        c = propagation_count(ts[:, None, None], period,
                              groups.group_to_worker_distances(s)[None],
                              algorithm=algorithm, rounding=rounding)  # [T, M, N]
        K = np.einsum("nm,tmi->tni", s.membership.astype(np.int64), c)
        K = np.where(mask[None], K, -1)
        kmax = K.max(axis=2)  # [T, N]; -1 when no attacker
        table, _ = recipes.epsilon_from_rdp(
            orders, np.arange(max(int(kmax.max()), 0) + 1)[:, None] * eps1[None, :], delta,
            conversion)
        table = np.atleast_1d(table)
        table[0] = 0.0
        return np.where(kmax >= 0, table[np.maximum(kmax, 0)], np.nan)
    return np.stack([per_worker(pairwise_epsilon(
        s, t=int(t), period=period, delta=delta, noise_multipliers=noise_multipliers,
        sampling_rates=sampling_rates, algorithm=algorithm, threat_model=tm, recipe=recipe,
        mechanism=mechanism, rounding=rounding)) for t in ts])


def curve_stats(curve: np.ndarray) -> dict:
    """Mean / std (ddof=0) / max over workers of a :func:`pwp_curve`, ignoring NaN workers."""
    curve = np.asarray(curve, dtype=np.float64)
    valid = ~np.isnan(curve)
    n = valid.sum(1)
    safe = np.where(valid, curve, 0.0)
    mean = np.where(n > 0, safe.sum(1) / np.maximum(n, 1), np.nan)
    var = np.where(n > 0, (np.where(valid, (curve - mean[:, None]) ** 2, 0)).sum(1)
                   / np.maximum(n, 1), np.nan)
    mx = np.where(n > 0, np.where(valid, curve, -np.inf).max(1), np.nan)
    return {"mean": mean, "std": np.sqrt(var), "max": mx}


def pair_event(structure, target: int, attacker: int, *, t: int, period: int,
               noise_multipliers, sampling_rates, algorithm: str = "dp_ogl",
               rounding: str = "ceil") -> dp_accounting.DpEvent:
    """The dp-accounting event the (target, attacker) pair's view satisfies (Thm. 1).

    A composition over the target's groups of ``count`` Poisson-sampled Gaussian mechanisms
    (per epoch for DP-OGL, per window for DP-OGL+).
    """
    s = groups.as_structure(structure)
    counts = pairwise_counts(s, t=t, period=period, algorithm=algorithm, rounding=rounding)
    sig = _per_group("noise_multipliers", noise_multipliers, s.num_groups)
    q = _per_group("sampling_rates", sampling_rates, s.num_groups)
    merged: dict[tuple[float, float], int] = {}  # identical mechanisms -> one SelfComposed
    for m in range(s.num_groups):
        if counts[target, attacker, m] > 0:
            key = (float(q[m]), float(sig[m]))
            merged[key] = merged.get(key, 0) + int(counts[target, attacker, m])
    parts = [events.repeated(events.poisson_gaussian(sampling_rate=k[0], noise_multiplier=k[1]),
                             n) for k, n in merged.items()]
    return events.composed(parts)


def worst_pair_event(structure, *, t: int, period: int, noise_multipliers, sampling_rates,
                     algorithm: str = "dp_ogl", threat_model: str | None = None,
                     delta: float = 1e-5) -> tuple[dp_accounting.DpEvent, tuple[int, int]]:
    """The event of the pair with the largest epsilon (default recipe) and that pair."""
    eps = pairwise_epsilon(structure, t=t, period=period, delta=delta,
                           noise_multipliers=noise_multipliers, sampling_rates=sampling_rates,
                           algorithm=algorithm, threat_model=threat_model)
    if np.all(np.isnan(eps)):
        return dp_accounting.NoOpDpEvent(), (-1, -1)
    n, i = np.unravel_index(np.nanargmax(eps), eps.shape)
    return pair_event(structure, int(n), int(i), t=t, period=period,
                      noise_multipliers=noise_multipliers, sampling_rates=sampling_rates,
                      algorithm=algorithm), (int(n), int(i))


def _worst(values: np.ndarray, axis=None):
    """Max over the non-NaN entries along ``axis``; NaN where every entry is NaN (no warning)."""
    v = np.asarray(values, dtype=np.float64)
    out = np.max(np.where(np.isnan(v), -np.inf, v), axis=axis)
    return np.where(np.isneginf(out), np.nan, out)


def onset_epochs(structure, *, period: int, threat_model: str) -> np.ndarray:
    """``[N, N]`` first epoch t at which target n's data reaches observer i (``[target,
    observer]``): 2 for in-group pairs, ``S rho_hat + 2`` otherwise (Sec. IV-A propagation
    delay; the same for DP-OGL and DP-OGL+), ``inf`` when unreachable, NaN outside the threat
    model."""
    s = groups.as_structure(structure)
    rho = groups.worker_distances(s)
    onset = np.where(np.isfinite(rho), period * np.where(np.isfinite(rho), rho, 0) + 2, np.inf)
    return np.where(attack_mask(s, threat_model), onset, np.nan)


def _onset_stats(onset: np.ndarray) -> dict:
    """Propagation summary of an :func:`onset_epochs` matrix: earliest / latest finite onset,
    number of unreachable pairs (never leak) and of pairs per onset epoch."""
    v = onset[~np.isnan(onset)]
    fin = v[np.isfinite(v)]
    values, freq = np.unique(fin, return_counts=True)
    return {"first": float(fin.min()) if fin.size else float("inf"),
            "last": float(fin.max()) if fin.size else float("inf"),
            "unreachable_pairs": int(np.sum(np.isinf(v))),
            "pairs_by_onset": {str(int(a)): int(b) for a, b in zip(values, freq, strict=True)}}


class PwPAccountant(report.Accountant):
    """Per-worker privacy (PwP, Theorem 1) of DP-OGL / DP-OGL+ as an Accountant.

    Built from the same values as :func:`jaxfl.algorithms.dp_ogl.dp_ogl` (group structure,
    period S, per-group noise multipliers and sampling rates, DP-OGL or DP-OGL+, DP-OGL+ window
    updates). ``rounds`` epochs completed means models ``theta^1..theta^{rounds+1}`` revealed,
    i.e. ``t = rounds + 1`` in the paper's indexing.

    * headline (``epsilons``, ``report().epsilon``): the worst (target, observer) pair of the
      threat model (= max over workers of the PwP, Eq. 15); NaN when the threat model has no
      attacker at all (e.g. DP-OGL+ on GL).
    * ``per_unit``: the ``[N, N]`` pairwise epsilon matrix with axes ``("target",
      "observer")``: row n is the protected worker, column i the honest-but-curious worker
      (the orientation of :func:`pairwise_epsilon`); NaN = pair outside the threat model
      (including n == i), 0 = no leakage yet.
    * ``details``: per-worker PwP, its mean/std/max over workers, the mechanism counts K, a
      summary of the onset epochs ``S rho_hat + 2`` (:func:`onset_epochs`), the worst pair,
      the PwP mean/std/max curve over ``t = 1..rounds+1``, and the settings.
    * ``dp_event``: the dp-accounting event of the worst pair (:func:`worst_pair_event`).

    Modes. ``recipe="default"`` (dp-accounting orders, improved conversion) is ``strict``;
    ``other_modes()["paper"]`` is the Opacus recipe of the paper's figures. DP-OGL+ with the
    paper's shared in-window updates (``window_updates="shared"``, S >= 2) has no valid bound:
    its accountant reports the paper's claimed Eq. 18 number with ``mode="paper"``,
    ``sound=False`` (and no strict alternative). ``mechanism="closed_form"`` and
    ``rounding="paper_floor_t_over_S"`` are likewise paper-mode and unsound.
    """

    unit = "worker"

    def __init__(self, structure, *, period: int, noise_multipliers, sampling_rates,
                 algorithm: str = "dp_ogl", threat_model: str | None = None,
                 recipe: str = "default", window_updates: str = "local",
                 mechanism: str = "exact", rounding: str = "ceil"):
        self.structure = groups.as_structure(structure)
        self.period = validate.positive_int("period", period)
        m = self.structure.num_groups
        self.noise_multipliers = _per_group("noise_multipliers", noise_multipliers, m)
        self.sampling_rates = _per_group("sampling_rates", sampling_rates, m)
        self.threat_model, orders, self.conversion = _resolve(algorithm, threat_model, recipe,
                                                              None, None)
        self.num_orders = len(orders)
        self.algorithm, self.recipe = algorithm, recipe
        self.window_updates = validate.one_of("window_updates", window_updates, WINDOW_UPDATES)
        self.mechanism = validate.one_of("mechanism", mechanism, MECHANISMS)
        self.rounding = validate.one_of("rounding", rounding, ROUNDINGS)
        self.shared = (algorithm == "dp_ogl_plus" and window_updates == "shared"
                       and self.period > 1)
        self.sound = not (self.shared or mechanism != "exact" or rounding != "ceil")
        self.mode = "strict" if (self.sound and recipe == "default") else "paper"
        self.name = "pwp-rdp" if recipe == "default" else "pwp-rdp-opacus"
        self._events: dict[int, dp_accounting.DpEvent] = {}

    def _kw(self, **changes) -> dict:
        kw = dict(period=self.period, noise_multipliers=self.noise_multipliers,
                  sampling_rates=self.sampling_rates, algorithm=self.algorithm,
                  threat_model=self.threat_model, recipe=self.recipe,
                  window_updates=self.window_updates, mechanism=self.mechanism,
                  rounding=self.rounding)
        kw.update(changes)
        return kw

    def replace(self, **changes) -> PwPAccountant:
        """A copy with some constructor arguments changed (e.g. ``recipe="paper"``)."""
        return PwPAccountant(self.structure, **self._kw(**changes))

    def _math(self) -> dict:
        kw = self._kw()
        del kw["window_updates"]
        return kw

    def curve(self, epochs: Sequence[int], delta: float) -> np.ndarray:
        """Per-worker PwP at each epoch t in ``epochs``: ``[len(epochs), N]`` (NaN: no
        attacker), see :func:`pwp_curve`."""
        return pwp_curve(self.structure, epochs=epochs, delta=delta, **self._math())

    def epsilons(self, rounds, delta):
        r = report.check_rounds(rounds)
        delta = validate.delta(delta)
        out = np.zeros(len(r))
        pos = r > 0
        if pos.any():
            out[pos] = _worst(self.curve(r[pos] + 1, delta), axis=1)
        return out

    def dp_event(self, rounds):
        rounds = int(rounds)
        if rounds == 0:
            return dp_accounting.NoOpDpEvent()
        if rounds not in self._events:  # host-side memo: one worst-pair search per round count
            kw = self._math()
            for k in ("recipe", "mechanism", "rounding"):
                del kw[k]
            self._events[rounds] = worst_pair_event(self.structure, t=rounds + 1, **kw)[0]
        return self._events[rounds]

    def report(self, rounds, delta):
        rounds = int(report.check_rounds([rounds])[0])
        delta = validate.delta(delta)
        s, t = self.structure, rounds + 1
        kw = self._math()
        eps = pairwise_epsilon(s, t=t, delta=delta, **kw)
        pwp = per_worker(eps)
        mask = attack_mask(s, self.threat_model)
        counts = pairwise_counts(s, t=t, period=self.period, algorithm=self.algorithm,
                                 rounding=self.rounding).sum(-1)
        counts = np.where(mask, counts.astype(np.float64), np.nan)
        valid = pwp[~np.isnan(pwp)]
        stats = ({"mean": float(valid.mean()), "std": float(valid.std()),
                  "max": float(valid.max()), "workers": int(valid.size)} if valid.size else
                 {"mean": float("nan"), "std": float("nan"), "max": float("nan"),
                  "workers": 0})
        worst = ([int(x) for x in np.unravel_index(np.nanargmax(eps), eps.shape)]
                 if valid.size else [-1, -1])
        curve = curve_stats(self.curve(np.arange(1, t + 1), delta))
        details = {
            "structure": s.name, "algorithm": self.algorithm,
            "threat_model": self.threat_model, "recipe": self.recipe,
            "conversion": self.conversion, "num_orders": self.num_orders,
            "mechanism": self.mechanism, "rounding": self.rounding, "t": t,
            "period": self.period,
            "window_updates": self.window_updates if self.algorithm == "dp_ogl_plus" else None,
            **stats, "worst_pair": worst, "per_worker": pwp, "counts": counts,
            "counts_axes": ["target", "observer"],
            "onset": _onset_stats(onset_epochs(s, period=self.period,
                                               threat_model=self.threat_model)),
            "leaking_pairs": int(np.sum(eps > 0)), "zero_pairs": int(np.sum(eps == 0)),
            "curve": {"t": list(range(1, t + 1)), **{k: v for k, v in curve.items()}},
        }
        headline = float(self.epsilons([rounds], delta)[0])
        return self._with_truncation(report.PrivacyReport(
            epsilon=headline, delta=delta, rounds=rounds, unit=self.unit, accountant=self.name,
            mode=self.mode, sound=self.sound, per_unit=eps,
            per_unit_axes=("target", "observer"), dp_event=self.dp_event(rounds),
            details=details))

    def other_modes(self):
        if self.mode == "strict":
            return {"paper": self.replace(recipe="paper")}
        if self.shared:  # no sound number exists for the paper's DP-OGL+
            return {}
        return {"strict": self.replace(recipe="default", mechanism="exact", rounding="ceil")}


__all__ = [
    "ALGORITHMS", "THREAT_MODELS", "MECHANISMS", "RECIPES", "ROUNDINGS", "WINDOW_UPDATES",
    "default_threat_model", "mixing_epochs", "propagation_count", "pairwise_counts",
    "attack_mask", "group_rdp", "pairwise_rdp", "pairwise_epsilon", "per_worker",
    "privacy_report", "onset_epochs", "PwPAccountant", "pwp_curve", "curve_stats", "pair_event",
    "worst_pair_event", "mean_worst_count", "fig4_tables",
    "fig4_numbers",
]
