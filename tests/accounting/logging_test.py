"""The absl filter shows dp-accounting's non-convergence warning once and drops repeats."""

import logging

from jaxfl.accounting import _logging, accountants, events


def test_non_convergence_warning_shown_once(caplog):
    _logging.FILTER.seen = 0
    event = events.poisson_gaussian(sampling_rate=0.2, noise_multiplier=1.0)
    with caplog.at_level(logging.WARNING, logger="absl"):
        accountants.rdp_curve(event, orders=(1.1, 1.2, 1.3, 2.0, 8.0))
        accountants.rdp_curve(events.poisson_gaussian(sampling_rate=0.2, noise_multiplier=1.01),
                              orders=(1.1, 1.2, 2.0))
    shown = [r for r in caplog.records if "failed to converge" in r.getMessage()]
    assert _logging.FILTER.seen >= 3, "dp-accounting no longer warns here; revisit the filter"
    assert len(shown) == 1 and "bound stays valid" in shown[0].getMessage()


def test_other_absl_messages_pass():
    record = logging.LogRecord("absl", logging.WARNING, __file__, 1, "something else", (), None)
    assert _logging.FILTER.filter(record)
