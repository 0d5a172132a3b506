"""Quiets dp-accounting's repeated "failed to converge" warnings for fractional RDP orders.

dp-accounting 0.6.0 evaluates the sampled-Gaussian RDP at fractional orders with a series that
may not converge for small orders (e.g. 1.1-1.7 at q=0.2, sigma=1); it then logs a warning through
absl and excludes that order. Excluding an order can only raise the reported epsilon (epsilon is a
minimum over orders), so the result stays a valid upper bound. A calibration or an epsilon curve
repeats the warning dozens of times; this filter lets the first one through with a note and
drops the rest. ``jaxfl.accounting.sampled_gaussian`` evaluates those orders exactly when needed.
"""

from __future__ import annotations

import logging

_MARKER = "failed to converge"


class _FirstOnly(logging.Filter):
    def __init__(self):
        super().__init__()
        self.seen = 0

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "_compute_log_a_frac" not in message or _MARKER not in message:
            return True
        self.seen += 1
        if self.seen > 1:
            return False
        record.msg = (f"{message} (jaxfl: further messages of this kind are not shown; an "
                      "excluded order can only raise epsilon, so the bound stays valid)")
        record.args = ()
        return True


FILTER = _FirstOnly()


def install() -> None:
    """Adds the filter to the ``absl`` logger once (idempotent)."""
    logger = logging.getLogger("absl")
    if FILTER not in logger.filters:
        logger.addFilter(FILTER)
