"""Fig. 1 (left): scaled sensitivity Δ²/T of TM-1 (Thm 2, Sec. 3.5 correction) on ER(100, 0.2).

  python -m experiments.run --config experiments/configs/gossip/fig1_er.py --workdir runs/g1
  python -m experiments.sweep --config experiments/configs/gossip/fig1_er.py:variant=smoke \
      --workdir /tmp/g1

A privacy study (accounting only). Full: T = 1..100, target 37, neighbour 1 and non-neighbour 0
(networkx seed 1, maxdeg_W); seconds on 2 CPU cores. ``summary.json``: ``privacy`` (certified)
and ``privacy_paper`` reports, each pair's Δ² per T in ``details.curve.delta_sq``. Expected
(reference values; the paper prints none): paper-mode neighbour Δ²/T 0.04077 at T = 1 decreasing to
0.01126 at T = 80, non-neighbour 0 -> 0.00995, limit 1/(n-1) = 0.0101; the certified curve of the
neighbour sits about 2x above the paper curve at T = 6-12 (alternating worst pattern).

GPU estimate: accounting only (no model, no training FLOPs); the sensitivity linear algebra runs in
float64 on the host, an accelerator does not shorten it.
"""

import dataclasses

from experiments import config as config_lib
from experiments.configs.gossip._common import StudyConfig

VARIANTS = ("full", "smoke")


def get_config(arg=None) -> StudyConfig:
    a = config_lib.parse_arg(arg, variant="full", variants=VARIANTS)
    cfg = StudyConfig(variant=a["variant"])
    if a["variant"] == "smoke":
        cfg = dataclasses.replace(cfg, T=12, name="fig1_er_smoke")
    return cfg


def get_sweep(arg=None):
    config_lib.parse_arg(arg, variant="full", variants=VARIANTS)  # same sweep at every variant
    return [{"mixing": m} for m in ("maxdeg", "closed")]
