"""What backs an audit row's epsilon lower bound: an attack (sampled views of the library's
code), one training run with canaries, a semi-analytic count or a parametric (Gaussian-premise)
bound. Only the first two are attacks; summaries count them apart from the others."""

ATTACK, ONE_RUN = "attack (Clopper-Pearson)", "attack (one run)"
SEMI_ANALYTIC, PARAMETRIC = "semi-analytic", "parametric (Gaussian premise)"


def evidence(rec: dict) -> str:
    """What backs a row's lower bound: :data:`ATTACK` (sampled views of the library's code,
    Clopper-Pearson on a threshold test), :data:`ONE_RUN` (one training run with canaries),
    :data:`SEMI_ANALYTIC` (counts drawn at a design's analytic rates, not sampled views) or
    :data:`PARAMETRIC` (a confidence bound on a Gaussian statistic's mu, valid only under that
    premise)."""
    if rec.get("selection") == "gaussian":
        return PARAMETRIC
    if rec.get("selection") == "fixed" and "semi-analytic" in rec.get("trials_label", ""):
        return SEMI_ANALYTIC
    if rec.get("selection") in ("holdout", "bonferroni"):
        return ATTACK
    if rec.get("canaries"):
        return ONE_RUN
    raise ValueError(f"audit row {rec.get('audit')!r}: no known evidence kind")
