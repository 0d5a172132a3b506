"""Holm's step-down adjusted p-values written out from the definition, the tests' oracle for
the claims engine's family correction (jaxfl.repro.stats.holm is not used to check itself)."""

import numpy as np


def holm(pvals) -> list[float]:
    """Adjusted p-values: sorted ascending, the k-th (0-based) of m times (m - k), capped at 1,
    made monotone by a running maximum, returned in the input order."""
    out, running = [0.0] * len(pvals), 0.0
    for rank, k in enumerate(np.argsort(pvals, kind="stable")):
        running = max(running, min(1.0, (len(pvals) - rank) * pvals[k]))
        out[k] = running
    return out
