"""Linear-algebra sensitivity of DP gossip averaging (network DP, projected Gaussian mechanism).

Koskela & Kulkarni 2025 (arXiv 2505.19969 v1); notation in ``README.md`` of this package.

Submodules:
  views          threat models tm1..tm4, tm4_exact as (model, observed rows, known noise).
  linear_system  H_T, G_T, K, M_T; dense least squares and the structured Gram method.
  kalman         innovations recursion (O(n²) memory, time-varying W, prefix horizons).
  modes          paper / sign_exact / sdp / certified worst-case patterns.
  gossip         ``gossip_sensitivity`` (one pair) and ``sensitivity_curve``.
  pairs          ``all_pairs_sensitivity`` and ``all_pairs_curves`` (vmapped over pairs).
  asymptotic     Perron limit of Δ²/T, the rate spectrum r(ω) and Figs. 1-2's readings.
  anchors        the anchor tables and oracle numbers of the gossip reproduction.
"""

from jaxfl.sensitivity import (
    anchors,
    asymptotic,
    gossip,
    kalman,
    linear_system,
    modes,
    pairs,
    views,
)
from jaxfl.sensitivity.gossip import (
    SensitivityCurve,
    SensitivityResult,
    gossip_sensitivity,
    sensitivity_curve,
    sensitivity_terms,
)
from jaxfl.sensitivity.linear_system import Terms
from jaxfl.sensitivity.modes import MODES, SOUND_MODES, is_sound
from jaxfl.sensitivity.pairs import (
    PairCurves,
    PairSensitivity,
    PairTable,
    all_pairs_curves,
    all_pairs_sensitivity,
)
from jaxfl.sensitivity.views import VIEW_SOUND, VIEWS, View, make_view

__all__ = [
    "anchors", "asymptotic", "gossip", "kalman", "linear_system", "modes", "pairs", "views",
    "SensitivityCurve", "SensitivityResult", "gossip_sensitivity", "sensitivity_curve",
    "sensitivity_terms", "Terms", "MODES", "SOUND_MODES", "is_sound", "PairCurves",
    "PairSensitivity", "PairTable",
    "all_pairs_curves", "all_pairs_sensitivity", "VIEW_SOUND", "VIEWS", "View", "make_view",
]
