"""DP-OGL Fig. 4 (MNIST privacy, no training): (a) average per-worker privacy (PwP) vs epoch for
GL, CL, RI, LB (DP-OGL, Threat Model 1) and DP-OGL+ RI (Threat Model 2); (b)-(h) heatmaps of the
per-pair epsilon_{n,i} at t = 200 (NaN = excluded pair, 0 = no leakage).

  python -m experiments.run --config experiments/configs/dp_ogl/fig4.py:panel=e --workdir runs/f4e
  python -m experiments.run --config "experiments/configs/dp_ogl/fig4.py:curve=plus_ri4_s2" \
      --workdir runs/f4_plus
  python -m experiments.sweep --config experiments/configs/dp_ogl/fig4.py --workdir runs/f4
  python -m experiments.sweep --config experiments/configs/dp_ogl/fig4.py:variant=smoke \
      --workdir /tmp/dp_ogl_fig4_smoke        # 3 curves, seconds

Each point is an accounting-only run of one curve's PwP accountant (``RunSpec(algorithm=None,
privacy=...)``): ``metrics.jsonl`` has the headline (worst pair) after every epoch, and
``summary.json`` the report at ``t``: ``privacy`` (strict recipe) and ``privacy_paper`` (Opacus
recipe), each with ``per_unit`` = the ``[target, observer]`` heatmap and ``details`` = the
per-worker mean/std/max (now and as a curve over t = 1..t), counts and onsets.

Arguments: ``panel`` (b-h selects its heatmap curve; a: the first Fig. 4(a) curve), or
``curve`` directly, ``variant`` = full | smoke, ``mode`` = strict | paper, ``dataset``, ``t``.
The sweep covers every curve of Fig. 4 (a)-(h). Accounting only: well under a second per curve
(LB reads the MNIST labels for its membership). Expected (paper recipe, sigma=2): GL/CL PwP
35.84 at t=200; RI(4) S=10 mean 36.69, max 57.16; DP-OGL+ RI(4) S=2 mean 23.19 (reference values,
tests/accounting/dp_ogl_test.py).

GPU estimate: accounting only (no model, no training FLOPs): well under a second per curve on a
CPU.
"""

from experiments import config as config_lib
from experiments.configs.dp_ogl import _common

VARIANTS = _common.VARIANTS


def _arg(arg):
    return config_lib.parse_arg(arg, panel="e", curve="", variant="full", mode="strict",
                                variants=VARIANTS,
                                dataset="mnist", t=200)


def get_config(arg=None) -> _common.DpOglPrivacyConfig:
    a = _arg(arg)
    if a["panel"] not in ("a", *_common.FIG4_HEATMAPS):
        raise ValueError(f"Unknown Fig. 4 panel {a['panel']!r}; expected a-h.")
    curve = a["curve"] or (_common.FIG4A[0] if a["panel"] == "a"
                           else _common.FIG4_HEATMAPS[a["panel"]])
    return _common.make_privacy_config(curve, variant=a["variant"], mode=a["mode"],
                                       dataset=a["dataset"], t=a["t"], panel=a["panel"])


def _panel(curve: str) -> str:
    heat = [p for p, c in _common.FIG4_HEATMAPS.items() if c == curve]
    return heat[0] if heat else "a"


def get_sweep(arg=None):
    """Every curve of Fig. 4 (the (a) curves and the (b)-(h) heatmaps); ``variant=smoke``:
    three curves (GL, RI(4) S=10, DP-OGL+ RI(4) S=2)."""
    a = _arg(arg)
    curves = (_common.SMOKE_PRIVACY_CURVES if a["variant"] == "smoke"
              else _common.FIG4_CURVES)
    return [{**_common.privacy_fields(c, a["variant"]), "panel": _panel(c)} for c in curves]
