"""Skewed subject spread (paper Fig. 2): every subject draws its own random user order and each
item goes to user pi_a(floor(16 x)), x ~ Power(alpha); alpha = 1 is the uniform spread, larger
alpha piles a subject's items on few users (bigger groups Z, fewer distinct subjects K).

  python -m experiments.run --config experiments/configs/subject_dp/skewed.py:alpha=16 \
      --set method=local_group_dp --set mode=paper --workdir runs/sdp_skew16

Same CPU setting as ``femnist_like.py`` (MNIST writers, 16 users, eps = 4, delta = 1e-5). The
paper (FEMNIST): HiGradAvgDP 75.84% (alpha = 1) -> 71.89% (alpha = 16); LocalGroupDP < 50% at
alpha = 16; group size 3 (alpha = 2) -> 6 (alpha = 16); distinct subjects 475 -> 310.
``variant=smoke`` runs in seconds.
"""

from experiments import config as config_lib
from experiments.configs.subject_dp import _common

VARIANTS = ("cpu", "smoke")


def get_config(arg=None) -> _common.SubjectDPConfig:
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             alpha=16.0, seeds=1)
    cfg = _common.SubjectDPConfig(name="subject_dp_skewed", method=a["method"], mode=a["mode"],
                               alpha=a["alpha"])
    if a["variant"] == "smoke":
        return _common.variant(cfg, "smoke", **_common.SMOKE)
    return _common.variant(cfg, a["variant"])


def get_sweep(arg=None):
    """Paper-mode methods over the skew alpha (Fig. 2); ``variant=smoke``: a seed x epsilon x
    clip x lr grid; ``seeds=N``: N seeds of each run (one computation)."""
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             alpha=16.0, seeds=1)
    if a["variant"] == "smoke":
        return _common.method_mode_sweep("smoke")
    return _common.with_seeds([{"alpha": al, "method": m, "mode": "paper"}
                               for al in (1.0, 2.0, 4.0, 8.0, 16.0)
                               for m in ("local_item_dp", "local_group_dp", "higradavg_dp")],
                              a["seeds"])
