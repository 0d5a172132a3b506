"""Accounting core: a float64 host-side facade over dp-accounting 0.6.0.

Submodules:
  events       DpEvent builders (all under ADD_OR_REMOVE_ONE).
  accountants  epsilon via PLD / RDP, curves over rounds, noise calibration.
  recipes      RDP order grids and RDP -> (eps, delta) conversions (incl. the Opacus recipe).
  conversions  analytic Gaussian / GDP, group privacy.
  sampler      the privacy-noise sampler's support and the delta its truncation adds.
"""

from jaxfl.accounting import _logging, accountants, conversions, events, recipes
from jaxfl.accounting.accountants import (
    bounded_pld_epsilon,
    calibrate_noise_multiplier,
    delta_for_epsilon,
    epsilon,
    epsilon_curve,
    rdp_curve,
)
from jaxfl.accounting.conversions import gaussian_delta, gaussian_epsilon
from jaxfl.accounting.recipes import DEFAULT_ORDERS, OPACUS_ORDERS, epsilon_from_rdp

_logging.install()

__all__ = [
    "accountants", "conversions", "events", "recipes", "bounded_pld_epsilon",
    "calibrate_noise_multiplier",
    "delta_for_epsilon", "epsilon", "epsilon_curve", "rdp_curve", "gaussian_delta",
    "gaussian_epsilon", "DEFAULT_ORDERS", "OPACUS_ORDERS", "epsilon_from_rdp",
]
