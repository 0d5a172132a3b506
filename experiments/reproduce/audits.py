"""The summary's audit row: no audited lower bound exceeds a strict claim (docs/audit.json).

Declared as a paper of its own (``order`` 90: after the papers) so that the summary page is
built from declarations alone; the audits run in ``experiments.audit``
(:mod:`jaxfl.audit.registry`, whose :func:`~jaxfl.audit.registry.summary` this row prints).
"""

from __future__ import annotations

from jaxfl.audit import registry
from jaxfl.repro import declare, stats


def _fields(inputs: declare.Inputs) -> dict:
    s = registry.summary(inputs.audit)
    holds = s.pop("holds")
    return s | {"verdict": stats.exact(holds)}


PAPER = declare.Paper(
    name="audit", title="Privacy audits (docs/audit.md)", order=90,
    claims=(declare.Claim("no_bound_exceeded", "no audited lower bound exceeds a strict claim",
                          declare.EXACT, "row_audits", _fields),))
