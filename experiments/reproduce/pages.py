"""Writes the reproduction pages from the committed result files, so no number or verdict on
them is typed by hand.

  python -m experiments.reproduce.pages            # rewrite the pages
  python -m experiments.reproduce.pages --check    # exit 1 and list the pages that differ

Inputs (all committed): the data files under ``docs/reproduction/data/`` and
``docs/audit.json`` (:func:`inputs`). Pages written: every page a paper declares
(:mod:`experiments.reproduce.declare`, ``Paper.pages``: :func:`render_page`, which adds the
provenance of the data files it reads) and ``docs/reproduction.md`` (:func:`summary_page`),
built from the declarations alone: each paper's line in the list of reports (``Paper.link``),
one claims-table row per field dict of each declared claim (``Claim.row`` of the paper's
template, papers by ``Paper.order``), the "what remains" rows (``Paper.remaining``) and the
audit row over whatever rows ``docs/audit.json`` holds (:data:`AUDITS`). The papers not
declared yet (gossip, ULDP, subject-level DP) are the :data:`LEGACY` entries, each used only
while no module declares a paper of its name.

Verdicts follow each claim's pre-declared rule (``declare.PAIRED``: the paired per-seed
difference, Holm-corrected per paper, :func:`~experiments.reproduce.stats.holm`;
``declare.EXACT``: a number against the claim's stated threshold; ``declare.NOT_TESTED``).
``tests/experiments/reproduction_pages_test.py`` regenerates everything in memory and fails on
any difference with the committed pages.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from experiments import audit as experiments_audit
from experiments.reproduce import declare, gossip, stats, subject_dp, uldp
from experiments.reproduce._common import prose, provenance_section, splice, table

ROOT, DATA, AUDIT = declare.ROOT, declare.DATA, declare.AUDIT
EXACT = DATA / "exact_numbers.json"
SUMMARY = "docs/reproduction.md"
SUMMARY_PAGE = "reproduction"  # templates/reproduction.md: the summary's fixed wording


# ------------------------------------------------------------------------------- inputs


def _json(path: Path):
    return json.loads(Path(path).read_text())


def unprinted_numbers() -> list:
    """Entries of ``exact_numbers.json`` whose formatted value is not on their page."""
    missing = []
    for g, d in _json(EXACT).items():
        if g.startswith("_"):
            continue
        text = (ROOT / d["page"]).read_text()
        missing += [f"{g}.{k} = {format(v, f)} not in {d['page']}"
                    for k, (v, f) in d["values"].items() if format(v, f) not in text]
    return missing


# ------------------------------------------------------------------------------- gossip


def _gossip_cells():
    rows = gossip.read_fig3(DATA / "gossip_fig3_seeds.csv")
    return rows, gossip.select_fig3(rows)


def gossip_page() -> str:
    """The whole gossip page: exact accounting from ``gossip_exact.json``, Fig. 3 from
    ``gossip_fig3_seeds.csv`` (:func:`experiments.reproduce.gossip.page_from_data`)."""
    return _with_provenance("docs/reproduction/gossip.md", gossip.page_from_data(
        DATA / "gossip_exact.json", DATA / "gossip_fig3_seeds.csv",
        ROOT / "docs" / "figures" / "gossip", ROOT / "docs" / "reproduction" / "gossip.md",
        plot=False))


def gossip_anchor_counts(text: str) -> tuple[int, int]:
    """(matching, total) spec-vs-ours anchor cells of the gossip page's tables 5.1, 5.3, 5.5:
    "spec / ours" cells, and 5.1's "spec" and "ours" rows, compared at the printed digits."""
    match = total = 0
    sec = text[text.index("## Anchor tables"):text.index("## Fig. 1 left")]
    rows = {}
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and cells[0].endswith((", spec", ", ours")):
            rows[cells[0]] = cells[1:]
        for c in cells[1:]:
            m = re.fullmatch(r"([-\d.e]+) / ([-\d.e]+)", c)
            if m:
                total += 1
                match += float(m.group(1)) == float(m.group(2))
    for name, spec in rows.items():
        if name.endswith(", spec"):
            ours = rows[name.removesuffix(", spec") + ", ours"]
            total += len(spec)
            match += sum(float(a) == float(b) for a, b in zip(spec, ours, strict=True))
    return match, total


# ------------------------------------------------------------------------------- ULDP


ULDP_PANELS = {(50, "uniform"): "a", (50, "zipf"): "b", (200, "uniform"): "c", (200, "zipf"): "d"}


def _uldp_panel_label(key: str) -> str:
    """``fig6_heart_50_zipf`` -> ``Heart (6b)``: the dataset and the paper's panel letter of a
    per-seed CSV's panel (Figs. 6-7: (a) |U|=50 uniform, (b) 50 zipf, (c) 200 uniform,
    (d) 200 zipf)."""
    fig, data, users, dist = key.split("_")
    letter = ULDP_PANELS.get((int(users), dist))
    name = {"heart": "Heart", "tcga": "TCGA"}.get(data, data)
    return f"{name} ({fig.removeprefix('fig')}{letter})" if letter else key


def _uldp_panel_list(panels) -> str:
    return ", ".join(_uldp_panel_label(k) for k in panels)


def _uldp_seeds():
    return uldp.seed_results(DATA)


def uldp_page() -> str:
    return _with_provenance("docs/reproduction/uldp.md", uldp.from_data(DATA))


def uldp_privacy_counts(privacy: dict) -> dict:
    """How many of the spec's golden cells the paper mode reproduces, per table, at the
    printed precision (curve and sub-sampling: 4 significant digits; Fig. 2: 2 decimals; GROUP:
    the spec's rounding, 3 significant digits)."""

    def close(a, b, rel):
        return abs(a - b) <= rel * abs(b)

    out = {"curve": sum(close(r["paper"], r["gold"], 5e-4) for r in privacy["curve"]),
           "curve_n": len(privacy["curve"]),
           "sub": sum(close(r["paper"], r["gold"], 5e-4) for r in privacy["subsampled"]),
           "sub_n": len(privacy["subsampled"]),
           "fig2": sum(abs(r["paper"] - r["gold"]) <= 0.006 for r in
                       privacy["fig2"]["rdp"] + privacy["fig2"]["normal"]),
           "fig2_n": len(privacy["fig2"]["rdp"]) + len(privacy["fig2"]["normal"])}
    group_bad = [r for r in privacy["group"]
                 if not (abs(r["eps_last"] - r["gold_last"]) <= 0.5
                         or close(r["eps_last"], r["gold_last"], 5e-3))]
    out.update(group=len(privacy["group"]) - len(group_bad), group_n=len(privacy["group"]),
               group_bad=group_bad)
    return out


# ------------------------------------------------------------------------------- subject DP


def subject_dp_page() -> str:
    return _with_provenance("docs/reproduction/subject_dp.md",
                            subject_dp.from_data(DATA / "subject_dp.json"))


# ------------------------------------------------------------------------------- summary rows

def _cell(text: str) -> str:
    """A Markdown table cell: every "|" escaped (once)."""
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def _cells(page: str, block: str, fields: dict) -> str:
    """The claims-table line ``block`` of ``templates/<page>.md`` (its cells' fixed wording is
    there, "|" written escaped), each field escaped for a table cell."""
    return prose(page, block, **{k: _cell(str(v)) for k, v in fields.items()})


def _row(block: str, **fields) -> str:
    """:func:`_cells` of templates/reproduction.md."""
    return _cells(SUMMARY_PAGE, block, fields)


def _a(audit, name):
    """(lower bound, paper claim) of the audit row called ``name`` or registered as ``name``
    (``experiments.audit.AUDITS``)."""
    r = audit.get(name) or next(r for r in audit.values() if r.get("audit") == name)
    paper = r["claimed"].get("paper")
    return r["epsilon_lb"], paper


def gossip_summary(audit, exact) -> list[str]:
    g = exact["gossip"]
    anchors = gossip_anchor_counts(gossip_page())
    out = [_row("row_gossip_anchors", match=anchors[0], total=anchors[1],
                verdict=stats.exact(anchors[0] == anchors[1]))]
    lb, paper = _a(audit, "DP gossip pair (worst pattern)")
    out.append(_row(
        "row_gossip_thm3", all_ones=f"{g['tm1_T6_all_ones']:.4f}",
        sign_worst=f"{g['tm1_T6_sign_worst']:.4f}",
        nodes=audit["DP gossip pair (worst pattern)"]["info"]["W_nodes"], lb=f"{lb:.3f}",
        paper=f"{paper:.3f}", verdict=stats.exact(not lb > paper)))
    t4, t4c = exact["gossip_thm4"], exact["gossip_thm4_certified"]
    ta = next(r for r in audit.values() if r.get("audit") == "gossip_thm4_counterexample")
    unsound = (t4["exact_T3"] > t4["reduction_T3"] and t4["exact_T6"] > t4["reduction_T6"]
               and ta["epsilon_lb"] > ta["claimed"]["paper"])
    out.append(_row(
        "row_gossip_thm4", exact_t3=f"{t4['exact_T3']:.5f}", exact_t6=f"{t4['exact_T6']:.5f}",
        reduction_t3=f"{t4['reduction_T3']:.5f}", reduction_t6=f"{t4['reduction_T6']:.5f}",
        certified_exact=f"{t4c['exact_T3']:.3f}", certified_reduction=f"{t4c['reduction_T3']:.3f}",
        attack_t=ta["info"]["T"], trials=f"{ta['trials']:,}", lb=f"{ta['epsilon_lb']:.4f}",
        paper=f"{ta['claimed']['paper']:.4f}", cp=f"{ta['info']['cp_bound']:.3f}",
        cmp=">" if ta["epsilon_lb"] > ta["claimed"]["paper"] else "<=",
        verdict=stats.exact(not unsound)))
    out.append(_row(
        "row_gossip_secure_sum", paper=f"{g['fig2_T60_thm3_paper']:.3f}",
        certified=f"{g['fig2_T60_thm3_certified']:.3f}", ldp=f"{g['fig2_T60_ldp']:.3f}",
        verdict=stats.exact(g["fig2_T60_thm3_certified"] < g["fig2_T60_ldp"])))
    rows, cells = _gossip_cells()
    scale = prose(SUMMARY_PAGE, "gossip_scale", rounds=int(float(rows[0]["rounds"])),
                  val_size=int(float(rows[0]["val_size"])),
                  seeds=sorted({r["seed"] for r in rows}))
    for c in gossip.fig3_claims(cells):
        common = dict(eps=f"{c['eps']:g}", method=c["method"], scale=scale, verdict=c["verdict"],
                      ours=stats.fmt(cells[(c["method"], c["eps"])]["test"], 4),
                      paired=stats.fmt_paired(c["paired"], 100, 2))
        if c["kind"] == "ldp":
            out.append(_row("row_gossip_above_ldp", interval_verdict=c["interval_verdict"],
                            ldp=stats.fmt(cells[("gossip_ldp", c["eps"])]["test"], 4), **common))
        else:
            out.append(_row("row_gossip_comparable", margin=f"{gossip.COMPARABLE_MARGIN * 100:g}",
                            fedavg=stats.fmt(cells[("fedavg", c["eps"])]["test"], 4), **common))
    return out


def uldp_summary(audit) -> list[str]:
    privacy = _json(DATA / "uldp_privacy_tables.json")
    cnt = uldp_privacy_counts(privacy)
    curve = {r["rounds"]: r["paper"] for r in privacy["curve"]}
    out = [_row("row_uldp_curve", curve=cnt["curve"], curve_n=cnt["curve_n"],
                t50=f"{curve[50]:.3f}", t100=f"{curve[100]:.3f}", t200=f"{curve[200]:.3f}",
                sub=cnt["sub"], sub_n=cnt["sub_n"], verdict=stats.exact(
                    (cnt["curve"], cnt["sub"]) == (cnt["curve_n"], cnt["sub_n"])))]
    rdp = {r["k"]: r for r in privacy["fig2"]["rdp"]}
    bad = "; ".join(f"{r['dataset'].capitalize()} U={r['num_users']} {r['distribution']} "
                    f"{r['method'].removeprefix('ULDP-')}: {r['eps_last']:.1f} vs "
                    f"{r['gold_last']}" for r in cnt["group_bad"])
    out.append(_row(
        "row_uldp_group_table", record=f"{privacy['fig2']['record']:.2f}", fig2=cnt["fig2"],
        fig2_n=cnt["fig2_n"], k32=f"{rdp[32]['paper']:.0f}", k64=f"{rdp[64]['paper']:.0f}",
        group=cnt["group"], group_n=cnt["group_n"], bad=f" ({bad})" if bad else "",
        verdict=stats.exact(cnt["fig2"] == cnt["fig2_n"])))
    lb, paper = _a(audit, "ULDP-NAIVE (user in 3 silos; paper C|S| vs 2C|S|)")
    out.append(_row(
        "row_uldp_naive", lb=f"{lb:.3f}", paper=f"{paper:.3f}",
        k64_sound=f"{rdp[64]['sound']:.0f}", k64=f"{rdp[64]['paper']:.0f}",
        verdict=stats.FAILS + " (strict mode fixes)" if lb > paper else stats.HOLDS))
    g = next(r for r in audit.values() if r.get("audit") == "uldp_group_coupled_counterexample")
    gi = g["info"]
    out.append(_row(
        "row_uldp_group_flags", changed=gi["changed_kept_records"], k=gi["group_size"],
        silos=gi["num_silos"], pairs=gi["pairs"], lb=f"{g['epsilon_lb']:.3f}",
        paper=f"{g['claimed']['paper']:.3f}", strict=f"{g['claimed']['strict']:g}",
        verdict=stats.exact(not g["epsilon_lb"] > g["claimed"]["paper"])))
    panels, claims = _uldp_seeds()
    names = {k: _uldp_panel_label(k) for k in panels}
    n_seeds = {k: max(c["final"]["n"] for c in cells.values())
               for k, (_, cells) in panels.items()}
    aborted = [f"{names.get(k, k)} {m}: seeds {c['aborted']} aborted"
               for k, (_, cells) in panels.items() for m, c in cells.items() if c["aborted"]]
    scale = prose(SUMMARY_PAGE, "uldp_scale", panels=_uldp_panel_list(panels),
                  seeds=", ".join(f"{names.get(k, k)} {n} seeds" for k, n in n_seeds.items()),
                  aborted=f" ({'; '.join(aborted)})" if aborted else "")
    by_claim = {}
    for c in claims:
        by_claim.setdefault(c["claim"], []).append(c)
    for claim, cs in by_claim.items():
        measured = "; ".join(f"{names.get(c['figure'], c['figure'])}: {c['detail']}" for c in cs)
        verdict = "; ".join(f"{names.get(c['figure'], c['figure'])}: "
                            f"{c['verdict']}" for c in cs)
        paired = "; ".join(f"{names.get(c['figure'], c['figure'])}: "
                           f"{stats.fmt_paired(c['paired'])}, interval rule: "
                           f"{c['interval_verdict']}"
                           for c in cs if c.get("paired"))
        target = prose(SUMMARY_PAGE, "uldp_group_target" if claim.startswith("GROUP")
                       else "figure_ordering")
        out.append(_row("row_uldp_figs_6_7", panels=_uldp_panel_list(panels), claim=claim,
                        target=target, measured=measured, scale=scale, verdict=verdict,
                        paired=paired or "-"))
    out.append(_row("row_uldp_fig5", verdict=stats.ONE_SEED))
    prot = [r for r in _json(DATA / "uldp_bench.json") if r.get("bench") == "protocol"
            and r["silos"] == 3 and r["key_bits"] == 1024]
    per_user = [r["silo_s_mean"] / r["users"] for r in prot]
    linear = max(per_user) <= 1.25 * min(per_user)
    out.append(_row("row_uldp_protocol",
                          times=" / ".join(f"{r['silo_s_mean']:.1f}" for r in prot),
                          users="/".join(str(r["users"]) for r in prot),
                          verdict="not tested (one run" + (", within 25%)" if linear
                                                            else ", beyond 25%)")))
    return out


def subject_summary(audit, exact) -> list[str]:
    s = exact["subject_dp"]
    spec = s["_spec"]
    match = all(abs(s[k] - v) <= 0.6 * 10 ** -(len(format(s[k], "g").split(".")[-1]))
                for k, v in spec.items())
    out = [_row("row_subject_sigma", sigma_t1=f"{s['sigma_T1']:.4f}",
                      sigma_t70=f"{s['sigma_T70']:.4g}", eps_25=f"{s['eps_16x25_T1']:.3f}",
                      eps_6=f"{s['eps_16x6_T1']:.3f}", verdict=stats.exact(match))]
    lb1, p1 = _a(audit, "HiGradAvgDP paper mode: item rate q_i + sqrt(s) round cut "
                 "(10 items x 4 users)")
    lb2, p2 = _a(audit, "LocalGroupDP batch sigma_Z (subject: 4 of 8 items, q=0.5, d=128)")
    lb3, p3 = _a(audit, "user_ldp_counterexample")
    ua = next(r for r in audit.values() if r.get("audit") == "user_ldp_counterexample")
    lb3_users = ua["info"]["num_users"]
    # LocalItemDP is claimed at item level, not subject level: shown, not part of the verdict
    strict_keys = ("strict_UserLDP", "strict_LocalGroupDP", "strict_HiGradAvgDP")
    out.append(_row(
        "row_subject_level", item=f"{s['strict_LocalItemDP']:.4g}",
        user=f"{s['strict_UserLDP']:.4g}", group=f"{s['strict_LocalGroupDP']:.4g}",
        higrad=f"{s['strict_HiGradAvgDP']:.4g}", lb1=f"{lb1:.3f}", p1=f"{p1:.3f}",
        lb2=f"{lb2:.3f}", p2=f"{p2:.3f}", user_eps=f"{p3:g}", users=lb3_users,
        lb3=f"{lb3:.3f}", cmp3=">" if lb3 > p3 else "<=", p3=f"{p3:.3f}",
        verdict=stats.exact(not (any(s[k] > 4 for k in strict_keys)
                                 or lb1 > p1 or lb2 > p2 or lb3 > p3))))
    train = subject_dp.read_data(DATA / "subject_dp.json")["training"]
    by = {(r["method"], r["mode"]): r for r in train["rows"]}
    hi, lg = by[("HiGradAvgDP", "paper")], by[("LocalGroupDP", "paper")]
    c = train["setup"]
    out.append(_row("row_subject_higrad", higrad=f"{hi['test_accuracy']:.4g}",
                          group=f"{lg['test_accuracy']:.4g}", subjects=c["num_subjects"],
                          model=c["model"].upper(), verdict=stats.ONE_SEED))
    return out




def _remaining_uldp(inputs) -> str:
    panels, _ = _uldp_seeds()
    u_left = [_uldp_panel_label(f"{fig}_{users}_{dist}") for fig in ("fig6_heart", "fig7_tcga")
              for users, dist in ULDP_PANELS if f"{fig}_{users}_{dist}" not in panels]
    return prose(SUMMARY_PAGE, "remaining_uldp_panels", uldp_panels=_uldp_panel_list(panels),
                uldp_ok=sum(r["status"] == "ok" for rows, _ in panels.values() for r in rows),
                uldp_points=sum(len(rows) for rows, _ in panels.values()),
                uldp_left=(prose(SUMMARY_PAGE, "uldp_left", panels=", ".join(u_left)) if u_left
                           else "none | - "))


def _remaining_gossip(inputs) -> str:
    grows, _ = _gossip_cells()
    return prose(SUMMARY_PAGE, "remaining_gossip", gossip_points=len(grows),
                 gossip_seeds=len({r["seed"] for r in grows}))


# Papers not declared yet (helper reproB converts them): each entry is used only while no
# module declares a paper of that name. (order, rows of the claims table, rows of the
# remaining table as (item, function), pages as {path: (data files, function)}).
LEGACY = {
    "gossip": (20, lambda i: gossip_summary(i.audit, i.exact), [("b", _remaining_gossip)],
               {"docs/reproduction/gossip.md": (["gossip_exact.json", "gossip_fig3_seeds.csv"],
                                                lambda: gossip_page())}),
    "uldp": (30, lambda i: uldp_summary(i.audit),
             [("a", _remaining_uldp), ("c", lambda i: prose(SUMMARY_PAGE, "remaining_uldp_mnist"))],
             {"docs/reproduction/uldp.md": (
                 lambda: ["uldp_privacy_tables.json",
                          *sorted(p.name for p in DATA.glob("uldp_*_seeds.csv")),
                          "uldp_bench.json"], lambda: uldp_page())}),
    "subject_dp": (40, lambda i: subject_summary(i.audit, i.exact), [],
                   {"docs/reproduction/subject_dp.md": (["subject_dp.json"],
                                                        lambda: subject_dp_page())}),
}


LINKS = {"gossip": "link_gossip", "uldp": "link_uldp", "subject_dp": "link_subject_dp"}


# ------------------------------------------------------------------------------- audits


def _audit_fields(inputs) -> dict:
    """The "no audited lower bound exceeds a strict claim" row, over every row of
    docs/audit.json (however many there are)."""
    audit = inputs.audit
    rows = list(audit.values())

    def short(r):
        return r["name"].split(" (")[0].split(":")[0]

    over = [r for r in rows if "paper claim exceeded" in r["outcome"]]
    attacks = (experiments_audit.ATTACK, experiments_audit.ONE_RUN)
    exceeded = [short(r) for r in over if experiments_audit.evidence(r) in attacks]
    other = [f"{short(r)}, {experiments_audit.evidence(r)}" for r in over
             if experiments_audit.evidence(r) not in attacks]
    fed, one = audit["DP-FedAvg"], audit["DP-FedAvg one-run"]
    uone = audit["ULDP-AVG one-run (users in 3 silos)"]
    return dict(
        audits=len(rows), fed_lb=f"{fed['epsilon_lb']:.3f}",
        fed_claim=f"{fed['claimed']['strict']:.3f}", one_lb=f"{one['epsilon_lb']:.3f}",
        one_claim=f"{one['claimed']['strict']:.3f}", uone_lb=f"{uone['epsilon_lb']:.3f}",
        uone_claim=f"{uone['claimed']['strict']:.3f}", n_exceeded=len(exceeded),
        exceeded=", ".join(exceeded), n_other=len(other), other="; ".join(other) or "none",
        verdict=stats.exact(all(r["epsilon_lb"] <= r["claimed"]["strict"] for r in rows)))


AUDITS = declare.register(declare.Paper(
    name="audit", title="Privacy audits (docs/audit.md)", order=90,
    claims=(declare.Claim("no_bound_exceeded", "no audited lower bound exceeds a strict claim",
                          declare.EXACT, "row_audits", _audit_fields),)))


# ------------------------------------------------------------------------------- summary page


def inputs() -> declare.Inputs:
    """The committed inputs (:data:`DATA`, :data:`AUDIT`, :data:`ROOT`, read at call time)."""
    return declare.Inputs(DATA, AUDIT, ROOT)


def _declared() -> dict[str, declare.Paper]:
    return {p.name: p for p in declare.papers()}


def claim_rows(paper: declare.Paper, ctx: declare.Inputs) -> list[str]:
    """The claims-table lines of a declared paper: each claim's ``row`` block filled with each
    of its field dicts (escaped for a table cell); a dict's ``row`` key names another block
    for that line (a claim whose rows alternate between two wordings, in the data's order)."""
    return [_cells(paper.template, f.pop("row", c.row), f) for c in paper.claims
            for f in declare.rows(c, ctx)]


def summary_page(ctx: declare.Inputs | None = None) -> str:
    """docs/reproduction.md: the intro with one line per declared paper (its ``link``), one
    claims-table row per declared claim (papers by ``order``), the "what remains" table (rows
    by ``item``), the beyond-the-papers links. Blocks come from each paper's ``template``."""
    ctx = ctx or inputs()
    declared = _declared()
    papers = [(p.order, n, lambda c, p=p: claim_rows(p, c)) for n, p in declared.items()]
    papers += [(o, n, f) for n, (o, f, _, _) in LEGACY.items() if n not in declared]
    remaining = [(r.item, lambda c, p=p, r=r: prose(p.template, r.row, **declare.rows(r, c)[0]))
                 for p in declared.values() for r in p.remaining]
    remaining += [x for n, (_, _, rs, _) in LEGACY.items() if n not in declared for x in rs]
    links = [(p.order, prose(p.template, p.link)) for p in declared.values() if p.link]
    links += [(LEGACY[n][0], prose(SUMMARY_PAGE, LINKS[n])) for n in LEGACY if n not in declared]
    return _with_provenance(SUMMARY, "\n".join([
        prose(SUMMARY_PAGE, "intro"), "", *(text for _, text in sorted(links)), "",
        prose(SUMMARY_PAGE, "intro_audits"), "",
        *table(("paper", "claim", "target", "measured here", "scale, seeds", "verdict", "paired",
                "command")), *(r for *_, f in sorted(papers, key=lambda x: x[:2]) for r in f(ctx)),
        "", prose(SUMMARY_PAGE, "remaining_intro"), "",
        *table(("item", "status", "seeds", "remaining", "estimated cost (2 cores)")),
        *(f(ctx) for _, f in sorted(remaining, key=lambda x: x[0])),
        "", prose(SUMMARY_PAGE, "beyond"), ""]))


# ------------------------------------------------------------------------------- all pages


def declared_pages() -> dict[str, declare.Page]:
    """Every page a declared paper renders, by path."""
    return {pg.path: pg for p in declare.papers() for pg in p.pages}


def page_data() -> dict[str, list[str]]:
    """The committed data files each page is generated from (names under ``DATA``)."""
    declared = _declared()
    pages = {path: list(pg.data) for path, pg in declared_pages().items()}
    for name, (_, _, _, legacy) in LEGACY.items():
        if name not in declared:
            pages.update({p: d() if callable(d) else d for p, (d, _) in legacy.items()})
    every = sorted({f for fs in pages.values() for f in fs} | {EXACT.name})
    return {SUMMARY: every, **pages}


def provenance_block(page: str) -> str:
    """The page's "Provenance of the data" section (:func:`_common.provenance_section`)."""
    return provenance_section([DATA / f for f in page_data()[page]])


def _with_provenance(page: str, text: str) -> str:
    """``text`` with its provenance section: spliced into the page's ``provenance`` block
    where it has one (the hand-written pages), else appended."""
    if "<!-- BEGIN GENERATED: provenance -->" in text:
        return splice(text, "provenance", provenance_block(page))
    return text.rstrip("\n") + "\n\n" + provenance_block(page) + "\n"


def render_page(path: str, text: str | None = None, ctx: declare.Inputs | None = None) -> str:
    """The declared page ``path`` rendered from the data (``text``: the page whose hand-written
    parts it keeps; default: the committed page), with its provenance section."""
    page = declared_pages()[path]
    if text is None:
        text = (ROOT / path).read_text() if (ROOT / path).exists() else ""
    return _with_provenance(path, page.render(ctx or inputs(), text))


def render() -> dict[str, str]:
    """``{relative path: text}`` of every generated page (the committed pages are the input
    only for the hand-written parts outside the generated blocks), each with the provenance
    of the data files it is generated from."""
    ctx = inputs()
    out = {SUMMARY: summary_page(ctx)}
    out.update({path: render_page(path, ctx=ctx) for path in declared_pages()})
    declared = _declared()
    for name, (_, _, _, legacy) in LEGACY.items():
        if name not in declared:
            out.update({p: fn() for p, (_, fn) in legacy.items()})
    return out


SPLICED = ("docs/reproduction/dp_ogl.md", "docs/reproduction/lightdp.md")  # hand-written parts


def hand_written(text: str) -> str:
    """``text`` without its generated blocks (what a person wrote)."""
    return re.sub(r"<!-- BEGIN GENERATED: (\S+) -->.*?<!-- END GENERATED: \1 -->", "", text,
                  flags=re.S)


VERDICT_CELL = re.compile(r"\|\s*(holds|yes|no|\*\*no\*\*|does not hold)\s*\|", re.I)


def hand_verdicts(text: str) -> list[str]:
    """Verdicts in the hand-written part of a page: a phrase of
    :mod:`experiments.reproduce.stats` (does not hold, inconclusive ...) or a table cell that
    is a bare verdict (holds, yes, no)."""
    free = hand_written(text)
    phrases = [stats.FAILS, "inconclusive", stats.exact(True) + " (", "(modelled)"]
    found = [ph for ph in phrases if ph in free]
    return found + [m.group(0) for m in VERDICT_CELL.finditer(free)]


def stale(rendered: dict[str, str], read=None) -> list[str]:
    """Paths whose committed text (``read(path)``; default: the file) differs from ``rendered``."""
    read = read or (lambda p: (ROOT / p).read_text())
    return [p for p, text in rendered.items() if read(p) != text]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a page differs from its regeneration")
    args = parser.parse_args(argv)
    pages = render()
    old = stale(pages)
    missing = unprinted_numbers()
    if args.check:
        for p in old:
            print(f"stale: {p}")
        for m in missing:
            print(f"not on its page: {m}")
        return 1 if old or missing else 0
    for p in old:
        (ROOT / p).write_text(pages[p])
        print(f"[pages] wrote {p}")
    for m in missing:
        print(f"[pages] warning: {m}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
