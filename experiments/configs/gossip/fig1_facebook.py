"""Fig. 1 (right): Δ²/T of TM-1 on SNAP ego-Facebook (j = 300, two neighbours and two
non-neighbours; maxdeg_W). The paper says "directed, n = 4036"; SNAP's facebook_combined.txt is
undirected with 4039 nodes and 88234 edges; we use it as is.

  python -m experiments.run --config experiments/configs/gossip/fig1_facebook.py \
      --workdir runs/g1fb --set data_dir=/path/with/facebook_combined.txt

A privacy study (accounting only). The edge list is NOT shipped and cannot be downloaded in
this environment: building the run raises DataNotFoundError naming the file and its URL
(https://snap.stanford.edu/data/). With the file, T = 1..100 by the structured method with a
sparse W takes about a minute per observer on CPU. Expected: the same shape as Fig. 1 left with
the limit 1/(n-1) ≈ 2.48e-4, converging slower.

GPU estimate: accounting only (no model, no training FLOPs); the sensitivity linear algebra runs in
float64 on the host, an accelerator does not shorten it.
"""

import dataclasses

from experiments import config as config_lib
from experiments.configs.gossip._common import StudyConfig

VARIANTS = ("full", "smoke")


def get_config(arg=None) -> StudyConfig:
    a = config_lib.parse_arg(arg, variant="full", variants=VARIANTS)
    cfg = StudyConfig(name="fig1_facebook", variant=a["variant"], graph="facebook", target=300,
                      observers_per_kind=2, T=100)
    if a["variant"] == "smoke":
        cfg = dataclasses.replace(cfg, T=5, name="fig1_facebook_smoke")
    return cfg


def get_sweep(arg=None):
    config_lib.parse_arg(arg, variant="full", variants=VARIANTS)  # same sweep at every variant
    return [{"noise_multiplier": s} for s in (2.0, 5.0)]
