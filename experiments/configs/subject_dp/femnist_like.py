"""Subject-level DP accuracy comparison at epsilon = 4, delta = 1e-5, 16 users (paper Fig. 1a-d),
on MNIST with synthetic writers as subjects (FEMNIST is not available offline).

  python -m experiments.run --config experiments/configs/subject_dp/femnist_like.py \
      --set method=higradavg_dp --set mode=paper --workdir runs/sdp_hi_paper
  python -m experiments.run --config experiments/configs/subject_dp/femnist_like.py:variant=smoke \
      --workdir /tmp/sdp_smoke

Variants:
* ``cpu`` (default): 20,000 MNIST train images dealt to 150 writers (~133 items each, ~8 per
  writer per user like FEMNIST's ~10; batches of 64 then have a largest subject group of 3 most
  often, as in the paper), spread uniformly over 16 users (~1,250 items each), MLP 784-64-10,
  B = 64, T = 1, nominal R = 100 (subject-level methods run R / sqrt(16) = 25 rounds), C = 1,
  SGD lr 0.5 (FedAvg 0.1). About 0.5-2 s a round on 2 CPU cores. Results:
  docs/reproduction/subject_dp.md.
* ``paper``: the paper's FEMNIST setting on real LEAF FEMNIST (needs ``$JAXFL_DATA_DIR/femnist``;
  GPU scale): 3500 writers, FEMNIST CNN, B = 512, T = one local epoch, R = 100, C = 0.001,
  lr 0.01 (non-private 0.001). The paper reports 77.96% (LocalItemDP, 100 rounds) and 75.24%
  (HiGradAvgDP, 25 rounds).
* ``smoke``: synthetic blobs, 4 users, seconds.
"""

from experiments import config as config_lib
from experiments.configs.subject_dp import _common

VARIANTS = ("cpu", "smoke", "paper")


def get_config(arg=None) -> _common.SubjectDPConfig:
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             seeds=1)
    cfg = _common.SubjectDPConfig(name="subject_dp_femnist_like", method=a["method"],
                               mode=a["mode"])
    if a["variant"] == "smoke":
        return _common.variant(cfg, "smoke", **_common.SMOKE)
    if a["variant"] == "paper":
        return _common.variant(cfg, "paper", dataset="femnist_leaf", num_subjects=3500,
                            num_train=None, num_test=None, model="femnist_cnn",
                            batch_size=512, local_steps="epoch", clip_norm=0.001,
                            learning_rate=0.01, nonprivate_learning_rate=0.001,
                            microbatch_size=64, eval_every=1, checkpoint_every=5)
    return _common.variant(cfg, a["variant"])


def get_sweep(arg=None):
    """The five methods in both modes (FedAvg once); ``variant=smoke``: a seed x epsilon x
    clip x lr grid; ``seeds=N``: N seeds of each run (one computation)."""
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             seeds=1)
    return _common.method_mode_sweep(a["variant"], seeds=a["seeds"])
