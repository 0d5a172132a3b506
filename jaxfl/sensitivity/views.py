"""Adversary views of DP gossip averaging as linear state-space systems (Koskela & Kulkarni 2025).

A view is the triple ``(model, rows, known)`` of the state-space system
``theta_{t+1} = W (theta_t + v_t)`` (model ``"ss"``, secure summation, Eq. 3.1) or
``theta_{t+1} = W theta_t + v_t`` (model ``"p"``, plain messages, Eq. 3.5), observed through
``y_t = C theta_t`` with ``C = S(rows)`` (a row selector) for ``t = 1..T``. ``known`` lists the
nodes whose noise the adversary knows (Sec. 3.5 correction: their noise columns are deleted).

Threat models (Koskela & Kulkarni 2025, Sec. 3.1, Thms. 2-4):

====================  =====  =================  ===============  ===========================
name                  model  rows (C)           known            paper result
====================  =====  =================  ===============  ===========================
``tm1``               ss     {i}                {i}              Lemma 1 / Thm. 2 (exact view)
``tm2``               ss     colluders          colluders        Sec. 3.1 item 2 (exact view)
``tm3``               ss     closed nbhd of j   {i}              Thm. 3 (upper bound, adaptive)
``tm4``               p      {j}                {i}              Thm. 4 (paper's reduction)
``tm4_exact``         p      closed nbhd of i   {i}              ours (exact view)
====================  =====  =================  ===============  ===========================

Soundness of a view (:data:`VIEW_SOUND`): a sensitivity is an upper bound on the leakage to the
adversary it names only when its view is exact or a post-processing upper bound of the exact
view. ``tm4`` is neither: the paper's reduction to j's message stream is NOT an upper bound on
the exact plain-message view ``tm4_exact`` (found here; 4-node path 0-1-2-3, maxdeg W,
j = 1, i = 2, T = 3: 2.688 certified for ``tm4`` vs 2.731 for ``tm4_exact``), so every ``tm4``
result carries ``sound=False`` whatever its mode. Use ``tm4_exact`` (:data:`EXACT_VIEW`) for a
sound plain-message bound.

``known_noise="none"`` drops the correction (test mode; the paper's Sec. 3.5 applies it in all
its experiments). The protected node ``target`` must never be in ``known`` (Sec. 3.5 removes
the observers' own noise only); the public constructors reject it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxfl import validate

VIEWS = ("tm1", "tm2", "tm3", "tm4", "tm4_exact", "custom")
MODELS = ("ss", "p")
KNOWN_NOISE = ("observer", "none")

# True where a worst-case mode's Δ² is an upper bound on the exact leakage to that adversary:
# tm1/tm2/tm4_exact/custom are exact views, tm3 is a post-processing upper bound (the Thm. 3
# reduction held in all 936 tested pairs, tests/sensitivity/soundness_test.py); tm4 is the paper's
# reduction, not an upper bound on tm4_exact (the 4-node path above).
VIEW_SOUND = {"tm1": True, "tm2": True, "tm3": True, "tm4": False, "tm4_exact": True,
              "custom": True}
EXACT_VIEW = {"tm4": "tm4_exact"}   # the exact view an unsound reduction stands for


def view_is_sound(view: str) -> bool:
    """Whether a sound mode's Δ² of ``view`` upper-bounds the exact view's leakage."""
    validate.one_of("view", view, VIEWS)
    return VIEW_SOUND[view]


class View(NamedTuple):
    """One adversary view of the gossip system.

    Attributes:
      name: threat-model name (``tm1`` ... ``tm4_exact``, or ``custom``).
      model: ``"ss"`` (secure summation, B = W) or ``"p"`` (plain messages, B = I).
      rows: observed node indices, increasing; ``C = S(rows)``. shape=[m], int.
      known: nodes whose noise the adversary knows (columns deleted). shape=[k], int.
      target: the protected node j.
    """

    name: str
    model: str
    rows: np.ndarray
    known: np.ndarray
    target: int

    @property
    def num_rows(self) -> int:
        return int(self.rows.shape[0])

    def known_mask(self, n: int) -> np.ndarray:
        """Float mask [n]: 1 where the noise is unknown to the adversary, 0 where known."""
        mask = np.ones(n, dtype=np.float64)
        mask[self.known] = 0.0
        return mask


def _node(name: str, value, n: int) -> int:
    value = validate.positive_int(name, value, minimum=0)
    if value >= n:
        raise validate.TopologyError(f"Expected {name} in [0, {n}), got {name}={value}.")
    return value


def _node_set(name: str, values, n: int) -> np.ndarray:
    arr = np.unique(np.asarray(values, dtype=np.int64).reshape(-1))
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise validate.TopologyError(f"Expected {name} in [0, {n}), got {name}={list(arr)}.")
    return arr


def closed_neighbourhood(W: np.ndarray, node: int) -> np.ndarray:
    """Indices of ``{node} U {k : W[node, k] != 0 or W[k, node] != 0}`` (the support of W)."""
    W = np.asarray(W)
    support = (W[node] != 0) | (W[:, node] != 0)
    support[node] = True
    return np.flatnonzero(support)


def _support_matrix(W: np.ndarray) -> np.ndarray:
    """The (union over time of the) mixing matrix, used to read neighbourhoods."""
    W = np.asarray(W, dtype=np.float64)
    return np.abs(W).sum(axis=0) if W.ndim == 3 else W


def make_view(W, view: str = "tm1", *, target: int, observer: int | None = None,
              colluders=None, known_noise: str = "observer", rows=None, model: str | None = None,
              known=None) -> View:
    """Builds the :class:`View` of one threat model.

    Args:
      W: mixing matrix [n, n] or a time-varying stack [T, n, n] (neighbourhoods are read from
        the union of the supports).
      view: one of ``tm1, tm2, tm3, tm4, tm4_exact, custom``.
      target: protected node j.
      observer: curious node i (all views except ``tm2``/``custom``).
      colluders: the colluding set (``tm2``).
      known_noise: ``"observer"`` (Sec. 3.5 correction, default) or ``"none"`` (test mode).
      rows, model, known: the triple for ``view="custom"``.

    Returns:
      The view. Raises :class:`TopologyError` on bad node indices and when the target's noise
      would be known to the adversary.
    """
    validate.one_of("view", view, VIEWS)
    validate.one_of("known_noise", known_noise, KNOWN_NOISE)
    Wm = _support_matrix(W)
    if Wm.ndim != 2 or Wm.shape[0] != Wm.shape[1]:
        raise validate.ShapeError(f"Expected W.shape=(n, n) or (T, n, n), got {np.shape(W)}.")
    n = Wm.shape[0]
    j = _node("target", target, n)
    if view == "custom":
        if rows is None or model is None:
            raise validate.JaxflValueError("view='custom' needs rows= and model=.")
        validate.one_of("model", model, MODELS)
        rows_arr = _node_set("rows", rows, n)
        known_arr = _node_set("known", [] if known is None else known, n)
        result = View("custom", model, rows_arr, known_arr, j)
    elif view == "tm2":
        if colluders is None:
            raise validate.JaxflValueError("view='tm2' needs colluders=.")
        coll = _node_set("colluders", colluders, n)
        if coll.size == 0:
            raise validate.TopologyError("Expected a non-empty colluders set.")
        known_arr = coll if known_noise == "observer" else coll[:0]
        result = View("tm2", "ss", coll, known_arr, j)
    else:
        if observer is None:
            raise validate.JaxflValueError(f"view={view!r} needs observer=.")
        i = _node("observer", observer, n)
        if i == j:
            raise validate.TopologyError(f"Expected observer != target, got both = {i}.")
        known_arr = np.array([i] if known_noise == "observer" else [], dtype=np.int64)
        if view == "tm1":
            result = View("tm1", "ss", np.array([i]), known_arr, j)
        elif view == "tm3":
            result = View("tm3", "ss", closed_neighbourhood(Wm, j), known_arr, j)
        elif view == "tm4":
            result = View("tm4", "p", np.array([j]), known_arr, j)
        else:  # tm4_exact
            result = View("tm4_exact", "p", closed_neighbourhood(Wm, i), known_arr, j)
    if j in set(result.known.tolist()):
        raise validate.TopologyError(
            f"The target's noise is known to the adversary (target={j} in known="
            f"{result.known.tolist()}): its data is not protected at all (epsilon = inf).")
    if result.rows.size == 0:
        raise validate.TopologyError("Expected at least one observed row.")
    return result
