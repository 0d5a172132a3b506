"""DP-OGL Fig. 4 (MNIST privacy, no training): (a) average per-worker privacy (PwP) vs epoch for
GL, CL, RI, LB (DP-OGL, Threat Model 1) and DP-OGL+ RI (Threat Model 2); (b)-(h) heatmaps of the
per-pair epsilon_{n,i} at t = 200 (NaN = excluded pair, 0 = no leakage).

  python -m experiments.run --config experiments/configs/dp_ogl/fig4.py:panel=a --workdir runs/f4
  python -m experiments.run --config "experiments/configs/dp_ogl/fig4.py:panel=e,mode=paper" \
      --workdir runs/f4

Panels: a = PwP curves (curves ``_common.FIG4A``), b = GL, c = CL(4), d = LB(5) S=10 sigma=3,
e = RI(4) S=10, f = RI(4) S=25, g = RI(10) S=10, h = DP-OGL+ RI(4) S=10. Accounting only: well
under a second per panel (LB reads the MNIST labels for its membership). Expected (paper
recipe, sigma=2): GL/CL PwP 35.84 at t=200; RI(4) S=10 mean 36.69, max 57.16; DP-OGL+ RI(4)
S=2 mean 23.19 (spec 5.6).
"""

from experiments import config as config_lib
from experiments.configs.dp_ogl import _common


def get_config(arg=None) -> _common.DpOglPrivacyConfig:
    a = config_lib.parse_arg(arg, panel="a", variant="full", mode="strict", dataset="mnist", t=200)
    if a["panel"] not in ("a", *_common.FIG4_HEATMAPS):
        raise ValueError(f"Unknown Fig. 4 panel {a['panel']!r}; expected a-h.")
    return _common.DpOglPrivacyConfig(name=f"dp_ogl_fig4{a['panel']}", panel=a["panel"],
                                      variant=a["variant"], mode=a["mode"],
                                      dataset=a["dataset"], t=a["t"])


def get_sweep():
    return [{"panel": p, "name": f"dp_ogl_fig4{p}"} for p in ("a", *_common.FIG4_HEATMAPS)]
