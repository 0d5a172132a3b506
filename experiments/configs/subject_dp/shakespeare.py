"""Subject-level DP on Shakespeare: subjects are speaking roles of tiny-Shakespeare (LEAF-style
split by character), next-character prediction, 16 users, epsilon = 4, delta = 1e-5.

  python -m experiments.run --config experiments/configs/subject_dp/shakespeare.py \
      --set method=higradavg_dp --set mode=paper --workdir runs/sdp_shakespeare

Variants:
* ``cpu`` (default): the 100 roles with most text, <= 200 windows of 80 characters each (stride
  80), char-LSTM with one 64-unit layer, B = 32, T = 1, nominal R = 200 (subject-level methods
  run 50). Per-example LSTM gradients are the cost: minutes per method on 2 cores.
* ``paper``: all 299 roles of tiny-Shakespeare (the paper has 660 LEAF characters), the LEAF
  char-LSTM (2 x 256, extra 256 dense head), B = 100, R = 200, C = 1e-5, lr 0.01 (non-private
  0.0002): GPU scale. Paper: LocalItemDP 45.91% (200 rounds), HiGradAvgDP 41.58% (50 rounds).
* ``smoke``: synthetic blobs, seconds.
"""

from experiments import config as config_lib
from experiments.configs.subject_dp import _common

VARIANTS = ("cpu", "smoke", "paper")


def get_config(arg=None) -> _common.SubjectDPConfig:
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             seeds=1)
    cfg = _common.SubjectDPConfig(name="subject_dp_shakespeare", method=a["method"],
                               mode=a["mode"], dataset="shakespeare", model="char_lstm",
                               hidden=(64,), num_subjects=100, num_train=200, batch_size=32,
                               nominal_rounds=200, learning_rate=1.0,
                               nonprivate_learning_rate=0.5, eval_every=10)
    if a["variant"] == "smoke":
        return _common.variant(cfg, "smoke", **_common.SMOKE)
    if a["variant"] == "paper":
        return _common.variant(cfg, "paper", num_subjects=299, num_train=None,
                            hidden=(256, 256), batch_size=100, local_steps="epoch",
                            clip_norm=1e-5, learning_rate=0.01, nonprivate_learning_rate=0.0002,
                            microbatch_size=25, eval_every=1, checkpoint_every=5)
    return _common.variant(cfg, a["variant"])


def get_sweep(arg=None):
    """Every method in both modes; ``variant=smoke``: a seed x epsilon x clip x lr grid;
    ``seeds=N``: N seeds of each run (one computation)."""
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             seeds=1)
    return _common.method_mode_sweep(a["variant"], seeds=a["seeds"])
