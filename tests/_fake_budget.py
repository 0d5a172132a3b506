"""The memory-layout tests' budget: only the fake one (``JAXFL_DEVICE_MEMORY_BUDGET``, set
by a test), on an accelerator too, with nothing measured yet."""

import os

from jaxfl import layout


def only_the_fake_budget(monkeypatch) -> None:
    monkeypatch.setattr(layout, "_MEMORY", {})
    monkeypatch.delenv(layout.BUDGET_ENV, raising=False)
    real = layout.device_budget
    monkeypatch.setattr(layout, "device_budget",
                        lambda device=None: real(device) if os.environ.get(layout.BUDGET_ENV)
                        else None)
