"""The summary's audit row: no audited lower bound exceeds a strict claim (docs/audit.json).

Declared as a paper of its own (``order`` 90: after the papers) so that the summary page is
built from declarations alone; the audits themselves run in ``experiments.audit``.
"""

from __future__ import annotations

from jaxfl.audit import evidence
from jaxfl.repro import declare, stats


def _audit_fields(inputs) -> dict:
    """The "no audited lower bound exceeds a strict claim" row, over every row of
    docs/audit.json (however many there are)."""
    audit = inputs.audit
    rows = list(audit.values())

    def short(r):
        return r["name"].split(" (")[0].split(":")[0]

    over = [r for r in rows if "paper claim exceeded" in r["outcome"]]
    attacks = (evidence.ATTACK, evidence.ONE_RUN)
    exceeded = [short(r) for r in over if evidence.evidence(r) in attacks]
    other = [f"{short(r)}, {evidence.evidence(r)}" for r in over
             if evidence.evidence(r) not in attacks]
    return dict(
        audits=len(rows), fed=audit["DP-FedAvg"], one=audit["DP-FedAvg one-run"],
        uone=audit["ULDP-AVG one-run (users in 3 silos)"], n_exceeded=len(exceeded),
        exceeded=", ".join(exceeded), n_other=len(other), other="; ".join(other) or "none",
        verdict=stats.exact(all(r["epsilon_lb"] <= r["claimed"]["strict"] for r in rows)))


PAPER = declare.Paper(
    name="audit", title="Privacy audits (docs/audit.md)", order=90,
    claims=(declare.Claim("no_bound_exceeded", "no audited lower bound exceeds a strict claim",
                          declare.EXACT, "row_audits", _audit_fields),))
