"""Layering: the data layer never imports the algorithms (or anything above it)."""

import ast
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "jaxfl" / "data"
ABOVE = ("jaxfl.algorithms", "jaxfl.audit", "jaxfl.training", "jaxfl.sweep", "experiments")


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


@pytest.mark.parametrize("path", sorted(DATA.glob("*.py")), ids=lambda p: p.name)
def test_data_modules_do_not_import_algorithms(path):
    bad = sorted({m for m in _imports(path) if m.startswith(ABOVE)})
    assert not bad, f"{path.name} imports {bad}"


def test_uldp_record_layout_is_shared_with_the_algorithms():
    from jaxfl.algorithms import uldp_data
    from jaxfl.data import uldp_records

    assert uldp_data.UldpData is uldp_records.UldpData
    assert uldp_data.from_silos is uldp_records.from_silos
    assert uldp_data.histogram is uldp_records.histogram
