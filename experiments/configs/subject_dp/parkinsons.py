"""Subject-level DP regression on UCI Parkinsons telemonitoring: the 42 real patients are the
subjects, their 5,875 voice recordings are spread over 16 users; linear model of motor UPDRS
(standardised) from the 16 voice measures, epsilon = 4, delta = 1e-5.

  python -m experiments.run --config experiments/configs/subject_dp/parkinsons.py \
      --set method=higradavg_dp --workdir runs/sdp_parkinsons

Not in the paper (it has no tabular task); it exercises real subject ids with many items per
subject per user (about 9), where the strict epsilon of item-level methods is largest.
About 0.2 s a round on CPU; metrics are test MSE / MAE in target standard deviations.
``variant=smoke`` runs in seconds.
"""

from experiments import config as config_lib
from experiments.configs.subject_dp import _common

VARIANTS = ("cpu", "smoke")


def get_config(arg=None) -> _common.SubjectDPConfig:
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             seeds=1)
    cfg = _common.SubjectDPConfig(name="subject_dp_parkinsons", method=a["method"], mode=a["mode"],
                               dataset="parkinsons", model="linear", num_subjects=42,
                               batch_size=32, learning_rate=0.2, nonprivate_learning_rate=0.05)
    if a["variant"] == "smoke":
        # The smoke grid of RDP orders (mostly integers): with dp-accounting's default grid the
        # strict per-subject accounting of the 42 patients took most of the smoke sweep's time.
        return _common.variant(cfg, "smoke", nominal_rounds=8, eval_every=1, checkpoint_every=4,
                               num_users=4, orders=_common.SMOKE["orders"])
    return _common.variant(cfg, a["variant"])


def get_sweep(arg=None):
    """Every method in both modes; ``variant=smoke``: a seed x epsilon x clip x lr grid;
    ``seeds=N``: N seeds of each run (one computation)."""
    a = config_lib.parse_arg(arg, variant="cpu", method="higradavg_dp", mode="strict",
                             variants=VARIANTS,
                             seeds=1)
    return _common.method_mode_sweep(a["variant"], seeds=a["seeds"])
