"""Writes ``docs/reproduction/data/exact_numbers.json`` from the library (no number typed).

  python -m experiments.reproduce.exact_numbers            # rewrite the file
  python -m experiments.reproduce.exact_numbers --check    # exit 1 if the file differs

The exact-accounting numbers the pages print but no per-seed file carries (:data:`NOTE`): the
gossip TM-1 and Thm. 4 sensitivities (:func:`jaxfl.sensitivity.gossip_sensitivity`), the
subject-level DP sigmas and strict epsilons (``subject_dp.json``), the LightDP calibration check
(:func:`experiments.reproduce.lightdp.delta_rows`), each rounded to the format beside it.
"""

from __future__ import annotations

import json

from jaxfl.repro.declare import DATA, ROOT
from jaxfl.repro.text import check_flag
from jaxfl.sensitivity import gossip_sensitivity
from jaxfl.topology import graphs, mixing

PATH = DATA / "exact_numbers.json"
NOTE = ("Exact-accounting numbers that the reproduction pages print but no per-seed file holds, "
        "written by `python -m experiments.reproduce.exact_numbers` from the library (and from "
        "gossip_exact.json / subject_dp.json, which their drivers wrote with the library); each "
        "value is rounded to the format beside it, the precision its page prints. "
        "tests/experiments/reproduction_pages_test.py regenerates this file and checks that "
        "every value, so formatted, appears on its page.")
# The spec author's values of the subject-level DP sigma table (the target the summary's
# "sigma for the paper's budget" row compares with).
SUBJECT_SPEC = {"sigma_T1": 0.6881, "sigma_T70": 1.5684, "eps_16x25_T1": 5.648,
                "eps_16x6_T1": 3.968}


def _rounded(values: dict) -> dict:
    """``{key: [value rounded to its format, format]}`` of ``{key: (value, format)}``."""
    out = {}
    for k, (v, f) in values.items():
        r = float(format(v, f))
        out[k] = [int(r) if r.is_integer() and abs(r) < 1e6 else r, f]
    return out


def gossip_group() -> dict:
    # Sec. 5.1: ER(100, 0.2) (seed 1), max-degree mixing, target j = 37 and its smallest
    # neighbour as the observer, TM-1 at T = 6: the all-ones (paper) and sign-worst Delta^2.
    A = graphs.erdos_renyi(100, 0.2, seed=1)
    j = 37
    nbr = int(next(k for k in range(A.shape[0]) if A[j, k]))
    r = gossip_sensitivity(mixing.max_degree(A), j, nbr, 6, mode="sign_exact")
    fig2 = json.loads((DATA / "gossip_exact.json").read_text())["fig2_adaptive"]["series"]

    def at_60(name):
        s = fig2[name]
        return s["mean_eps"][s["T"].index(60)]

    return {"page": "docs/reproduction/gossip.md",
            "command": "python -m experiments.reproduce.gossip --scale cpu",
            "values": _rounded({"tm1_T6_all_ones": (r.paper, ".4f"),
                                "tm1_T6_sign_worst": (r.sign_exact, ".4f"),
                                "fig2_T60_thm3_paper": (at_60("tm3_paper"), ".3f"),
                                "fig2_T60_thm3_certified": (at_60("tm3_certified"), ".3f"),
                                "fig2_T60_ldp": (at_60("ldp"), ".3f")})}


def gossip_thm4_groups() -> tuple[dict, dict]:
    # The 4-node path 0-1-2-3, max-degree mixing, target j = 1, observer i = 2.
    W = mixing.max_degree(graphs.path(4))

    def d2(T, view, mode):
        return gossip_sensitivity(W, 1, 2, T, view=view, mode=mode).delta_sq

    paper = {"page": "tests/sensitivity/oracles_test.py",
             "command": "pytest tests/sensitivity/oracles_test.py",
             "values": _rounded({"exact_T3": (d2(3, "tm4_exact", "paper"), ".5f"),
                                 "exact_T6": (d2(6, "tm4_exact", "paper"), ".5f"),
                                 "reduction_T3": (d2(3, "tm4", "paper"), ".5f"),
                                 "reduction_T6": (d2(6, "tm4", "paper"), ".5f")})}
    certified = {"page": "tests/sensitivity/soundness_test.py",
                 "command": "pytest tests/sensitivity/soundness_test.py",
                 "values": _rounded({"reduction_T3": (d2(3, "tm4", "certified"), ".3f"),
                                     "exact_T3": (d2(3, "tm4_exact", "certified"), ".3f")})}
    return paper, certified


def subject_dp_group() -> dict:
    acc = json.loads((DATA / "subject_dp.json").read_text())["accounting"]
    by_t = {t["T"]: t for t in acc["T"]}
    strict = {m["method"]: m["strict"]["epsilon"] for m in acc["methods"]}
    names = {"local_item_dp": "LocalItemDP", "user_ldp": "UserLDP",
             "local_group_dp": "LocalGroupDP", "higradavg_dp": "HiGradAvgDP"}
    values = {"sigma_T1": (by_t[1]["sigma"], ".4f"), "sigma_T70": (by_t[70]["sigma"], ".4g"),
              "eps_16x25_T1": (by_t[1]["eps_16x25"], ".3f"),
              "eps_16x6_T1": (by_t[1]["eps_16x6"], ".3f")}
    values |= {f"strict_{names[m]}": (strict[m], ".4g") for m in names}
    return {"page": "docs/reproduction/subject_dp.md",
            "command": "python -m experiments.reproduce.subject_dp --scale cpu",
            "spec": SUBJECT_SPEC, "values": _rounded(values)}


def lightdp_group() -> dict:
    from experiments.reproduce import lightdp

    rows = {(r["delta"], r["epsilon"]): r for r in lightdp.delta_rows()}
    values = {f"exact_1e-5_eps{e}": (rows[(1e-5, e)]["exact"], ".4f") for e in (3, 6, 9)}
    values |= {"exact_1e-2_eps9": (rows[(1e-2, 9)]["exact"], ".4f"),
               "strict_scale_1e-2_eps9": (rows[(1e-2, 9)]["scale"], ".4f")}
    return {"page": "docs/reproduction/lightdp.md",
            "command": "python -m experiments.reproduce.lightdp --from-data --workdir runs/lightdp",
            "values": _rounded(values)}


def compute() -> dict:
    """The file's content (see the module docstring)."""
    thm4, thm4_certified = gossip_thm4_groups()
    return {"_provenance": NOTE, "gossip": gossip_group(), "gossip_thm4": thm4,
            "gossip_thm4_certified": thm4_certified, "subject_dp": subject_dp_group(),
            "lightdp": lightdp_group()}


def main(argv=None) -> int:
    new = compute()
    if check_flag(__doc__, argv, "the committed file"):
        same = json.loads(PATH.read_text()) == new
        print("exact_numbers.json: " + ("up to date" if same else "differs from the library"))
        return 0 if same else 1
    PATH.write_text(json.dumps(new, indent=2) + "\n")
    print(f"[exact_numbers] wrote {PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
