"""Empirical privacy auditing: canary attacks that lower-bound epsilon with confidence.

Submodules:
  bounds      TPR/FPR -> epsilon lower bound with Clopper-Pearson intervals and a held-out
              (or Bonferroni) threshold selection; a Gaussian-family bound on mu.
  statistics  likelihood-ratio distinguishers for Gaussian-type views.
  canary      runs a mechanism many times on neighbours D, D' (vmapped in jit) and audits it.

Audits of the library's mechanisms (import them directly; each builds a worst-case canary for
its paper's neighbouring relation and returns an ``AuditResult`` with the accountants' claims):
  dp_fedavg   DP-FedAvg, add/remove one client.
  dp_ogl      DP-OGL pair through an overlapping worker (propagation delay, Theorem 1).
  uldp        ULDP-AVG(-w)(-s), a user with records in every silo.
  subject_dp  HiGradAvgDP, a subject spread over users; the paper-mode counterexample.
  gossip      one DP gossip pair (Koskela & Kulkarni 2025, Lemma 6); the all-ones counterexample.
  lightdp     LightDP-FL masked uploads under the worst colluder/straggler sets.
Issue 16 counterexamples (each exceeds its paper's epsilon, never the strict one):
  uldp.audit_uldp_naive                  ULDP-NAIVE, sensitivity 2C|S| vs the paper's C|S|.
  subject_dp.audit_local_group_dp        LocalGroupDP's batch sigma_Z reveals Z (finite strict
                                         bound: jaxfl.accounting.local_group_bound).
  dp_ogl.audit_dp_ogl_plus_shared        DP-OGL+ with shared in-window updates (Eq. 11).
  lightdp.audit_lightdp_exact            LightDP-FL's paper design at delta = 1e-2
                                         (semi-analytic: binomial counts at the analytic
                                         rates, checked on sampled views).
Issue 26 attacks on the reproduction's unsoundness claims:
  uldp.audit_uldp_group_coupled          ULDP-GROUP-k on the authors' round-robin flags
                                         (removing one user moves 2m + 1 kept records).
  gossip.audit_gossip_thm4               Thm. 4's reduction vs the exact plain-message view
                                         (bounds.gaussian_epsilon_lower_bound on the LLR's mu).
  subject_dp.audit_user_ldp              UserLDP at the paper's sigma for a subject budget.
One-run audits (Steinke, Nasr, Jagielski 2023; issue 17):
  one_run                                jax_privacy's one-run estimator for abstaining guessers
                                         (top-k / bottom-k guesses -> epsilon lower bound).
  one_run_fl                             one real DP-FedAvg / ULDP-AVG training run with m
                                         canary clients / users.
Private hyperparameter selection (issue 40):
  selection.audit_private_selection      the best of K Gaussian runs (K drawn by
                                         jaxfl.selection): above one run's epsilon, below the
                                         RepeatAndSelectDpEvent bound.
Issue 39 attacks on accounting findings that had none:
  subject_dp.audit_higradavg             (one item at each of 16 users, q = 1) the sqrt(s)
                                         round cut of Thm. 3.10 alone.
  subject_femnist                        UserLDP and LocalItemDP at the paper's FEMNIST
                                         setting (sigma 0.688, q = 512/35725, 16 users).
The registry of these audits as the rows of ``docs/audit.md`` (names, trials, kinds, families
and their Bonferroni confidence; the rows' outcomes and JSON records) is ``registry``;
``python -m experiments.audit --out docs/audit.md`` (``make audit``) runs it and writes the table.
"""

from jaxfl.audit import bounds, canary, statistics
from jaxfl.audit.bounds import EpsilonBound, clopper_pearson, epsilon_lower_bound
from jaxfl.audit.canary import AuditResult, audit, sample_scores

__all__ = ["bounds", "canary", "statistics", "EpsilonBound", "clopper_pearson",
           "epsilon_lower_bound", "AuditResult", "audit", "sample_scores"]
