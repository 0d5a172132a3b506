"""Empirical privacy auditing: canary attacks that lower-bound epsilon with confidence.

Submodules:
  bounds      TPR/FPR -> epsilon lower bound with Clopper-Pearson intervals and a held-out
              (or Bonferroni) threshold selection.
  statistics  likelihood-ratio distinguishers for Gaussian-type views.
  canary      runs a mechanism many times on neighbours D, D' (vmapped in jit) and audits it.
"""

from jaxfl.audit import bounds, canary, statistics
from jaxfl.audit.bounds import EpsilonBound, clopper_pearson, epsilon_lower_bound
from jaxfl.audit.canary import AuditResult, audit, sample_scores

__all__ = ["bounds", "canary", "statistics", "EpsilonBound", "clopper_pearson",
           "epsilon_lower_bound", "AuditResult", "audit", "sample_scores"]
