"""RDP order grids and RDP -> (epsilon, delta) conversions, vectorised in float64.

* ``improved`` (default): Canonne-Kamath-Steinke 2020 Prop. 12 (= Balle et al. 2020 Thm. 21),
  ``eps = rdp + log1p(-1/alpha) - log(delta * alpha) / (alpha - 1)``, plus the KL shortcut
  (epsilon = 0 when ``delta^2 + expm1(-rdp) > 0``); identical to dp-accounting 0.6.0's
  ``rdp.compute_epsilon`` (tested), but vectorised over any leading axes.
* ``opacus``: the same formula without the KL shortcut, as Opacus computes it. Combined with
  :data:`OPACUS_ORDERS` it is the recipe DP-OGL and ULDP-FL used for their figures
  (the ``paper`` recipe of those papers).
* ``basic``: Mironov 2017 Prop. 3, ``eps = rdp + log(1/delta) / (alpha - 1)`` (the old TF Privacy
  tutorial numbers).
All three are valid upper bounds; they differ only in tightness.
"""

from __future__ import annotations

import numpy as np

from jaxfl import validate

# dp-accounting 0.6.0 RdpAccountant default orders.
DEFAULT_ORDERS = tuple(
    np.concatenate([np.linspace(1.1, 10.9, 99), np.arange(11, 64), [128, 256, 512, 1024]]).tolist())
# Opacus DEFAULT_ALPHAS: 1 + x/10 for x in 1..99, then 12..63.
OPACUS_ORDERS = tuple([1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(12, 64)])

CONVERSIONS = ("improved", "opacus", "basic")


def check_orders(orders) -> np.ndarray:
    """Validates an RDP order grid: a non-empty 1-D array of finite orders > 1 (float64)."""
    orders = np.asarray(orders, dtype=np.float64)
    if orders.ndim != 1 or orders.size == 0:
        raise validate.ShapeError(f"Expected a non-empty 1-D order grid, got {orders.shape}.")
    if not np.all(np.isfinite(orders)) or np.any(orders <= 1):
        raise validate.JaxflValueError("Expected all RDP orders finite and > 1.")
    return orders


def epsilon_per_order(orders, rdp, delta: float, conversion: str = "improved") -> np.ndarray:
    """Epsilon implied by each order, shape of ``rdp`` (``[..., orders]``)."""
    delta = validate.delta(delta)
    validate.one_of("conversion", conversion, CONVERSIONS)
    orders = np.asarray(orders, dtype=np.float64)
    rdp = np.asarray(rdp, dtype=np.float64)
    if orders.ndim != 1 or rdp.shape[-1:] != orders.shape:
        raise validate.ShapeError(
            f"Expected rdp.shape[-1] == len(orders), got {rdp.shape} and {orders.shape}.")
    orders = check_orders(orders)
    if np.any(np.isnan(rdp)):
        raise validate.JaxflValueError("Expected RDP values without NaN (inf = no guarantee).")
    if np.any(rdp < 0):
        raise validate.JaxflValueError("Expected non-negative RDP values.")
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if conversion == "basic":
            eps = rdp + np.log(1.0 / delta) / (orders - 1)
        else:
            eps = rdp + np.log1p(-1.0 / orders) - np.log(delta * orders) / (orders - 1)
            if conversion == "improved":
                eps = np.where(orders > 1.01, eps, np.inf)
                eps = np.where(delta**2 + np.expm1(-rdp) > 0, 0.0, eps)
    return np.where(np.isnan(eps), np.inf, eps)


def epsilon_from_rdp(orders, rdp, delta: float, conversion: str = "improved"):
    """Best epsilon over orders. Returns ``(epsilon, optimal_order)`` for a 1-D curve, or arrays
    of shape ``rdp.shape[:-1]`` for a batch of curves."""
    eps = epsilon_per_order(orders, rdp, delta, conversion)
    idx = np.argmin(eps, axis=-1)
    best = np.maximum(np.take_along_axis(eps, idx[..., None], axis=-1)[..., 0], 0.0)
    order = np.asarray(orders, dtype=np.float64)[idx]
    if best.ndim == 0:
        return float(best), float(order)
    return best, order
