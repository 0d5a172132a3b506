"""The reproduction engine's runs and text (jaxfl/repro/runs.py, text.py) and the figures' error
bars (experiments/plotting/figures.py)."""

import math

import pytest

from experiments.plotting import figures
from jaxfl.repro import runs, text


def test_table_and_number_cells():
    assert text.table(("a", "b"), [(1, text.num(0.123456)), (None, text.num(None))]) == [
        "| a | b |", "|---|---|", "| 1 | 0.1235 |", "| None | - |"]
    assert text.num(123456.0, 4, 3) == "1.23e+05" and text.num(123456.0) == "1.235e+05"
    assert text.num(math.inf) == "inf" and text.num(7) == "7"


def test_rows_round_trip(tmp_path):
    rows = [{"name": "x", "seed": 1, "acc": 0.5, "eps": ""}, {"name": "y", "seed": 2,
                                                               "acc": math.nan, "eps": 3.0}]
    runs.write_rows(tmp_path / "d" / "r.csv", rows, ("name", "seed", "acc", "eps"))
    back = runs.read_rows(tmp_path / "d" / "r.csv", dict(acc=float, eps=float, seed=int))
    assert back[0] == {"name": "x", "seed": 1, "acc": 0.5, "eps": None}
    assert back[1]["seed"] == 2 and math.isnan(back[1]["acc"]) and back[1]["eps"] == 3.0


def test_rows_typed_by_a_schema(tmp_path):
    """One dict declares a per-seed file's columns (their order) and their types; an empty
    cell reads as None whatever its type. Wrong implementations caught: "False" read as a true
    string, a number left a string, an empty int cell refused."""
    schema = dict(name=str, seed=int, acc=float, adaptive=bool)
    runs.write_rows(tmp_path / "r.csv", [{"name": "x", "seed": 3, "acc": 0.25, "adaptive": False},
                                      {"name": "7", "seed": "", "acc": "", "adaptive": True}],
                 schema)
    assert runs.read_rows(tmp_path / "r.csv", types=schema) == [
        {"name": "x", "seed": 3, "acc": 0.25, "adaptive": False},
        {"name": "7", "seed": None, "acc": None, "adaptive": True}]


def test_generated_blocks():
    page = text.splice_blocks("", {"x": "one\n"}, "Title")
    assert page == "# Title\n\n<!-- BEGIN GENERATED: x -->\none\n<!-- END GENERATED: x -->\n"
    page = text.splice_blocks(page, {"x": "two"}, "Title")
    assert "two" in page and "one" not in page
    page = text.splice_blocks("# Hand-written\n", {"x": "three", "y": "four"}, "Title")
    assert page.startswith("# Hand-written\n\n<!-- BEGIN GENERATED: x -->\nthree\n")
    assert page.endswith("<!-- BEGIN GENERATED: y -->\nfour\n<!-- END GENERATED: y -->\n")


def test_error_bars_need_two_values():
    bars = figures.yerr([{"mean": 1.0, "lo": 0.5, "hi": 2.0, "n": 3},
                   {"mean": 1.0, "lo": math.nan, "hi": math.nan, "n": 1}])
    assert bars.tolist() == [[0.5, 0.0], [1.0, 0.0]]


def test_finished_runs_across_sweep_dirs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, done in ((a, False), (b, True)):
        run = d / "points" / "p1"
        run.mkdir(parents=True)
        (run / "config.json").write_text('{"config": {"seed": 4}}')
        if done:
            (run / "summary.json").write_text('{"rounds": 2}')
            (run / "metrics.jsonl").write_text('{"round": 1}\n{"round": 2}\n')
    assert runs.finished_run([a, b], "p1") == b / "points" / "p1"
    assert runs.finished_run([a], "p1") is None
    assert runs.run_config(b / "points" / "p1") == {"seed": 4}
    assert runs.read_run(b / "points" / "p1") == ({"rounds": 2}, [{"round": 1}, {"round": 2}])


def test_prose_blocks_and_fields():
    assert text.prose("_example", "greeting", who="x") == "Hello, x."
    assert text.prose("_example", "two", a=1, b="{{b}}") == "1 and {{b}}\nsecond line"
    with pytest.raises(KeyError, match="needs"):
        text.prose("_example", "two", a=1)
    with pytest.raises(TypeError, match="no field"):
        text.prose("_example", "greeting", who="x", whom="y")
    with pytest.raises(KeyError, match="no block"):
        text.prose("_example", "farewell")


def test_prose_sections_and_format_specs():
    """A list section repeats its lines per dict (the dict's fields added), a false value drops
    a ``#`` section and keeps a ``^`` one, ``{{x:.2f}}`` formats. Wrong implementations caught:
    a section rendered once, the tag lines left in, the spec ignored, a missing section name
    accepted."""
    rows = [{"name": "a", "value": 1 / 3}, {"name": "b", "value": 2.0}]
    assert text.prose("_example", "table", rows=rows, note="n") == (
        "| name | value |\n|---|---|\n| a | 0.33 |\n| b | 2.00 |\n (n)")
    assert text.prose("_example", "table", rows=[], note="") == "| name | value |\n|---|---|\nnone"
    with pytest.raises(KeyError, match="needs"):
        text.prose("_example", "table", rows=rows)
    with pytest.raises(TypeError, match="no field"):
        text.prose("_example", "table", rows=rows, note="", other=1)


def test_fill_reads_keys_and_attributes_of_a_field():
    """``{{a.b.c}}`` walks dict keys and attributes, with a format spec (wrong implementations
    caught: the dotted name treated as one missing field, the spec applied before the walk,
    an attribute looked up as a key)."""
    import types

    cfg = types.SimpleNamespace(rounds=20, inner={"sigma": 0.125})
    assert text.fill("T = {{cfg.rounds}}, σ = {{cfg.inner.sigma:.2f}}, {{x}}",
                  {"cfg": cfg, "x": 1}) == "T = 20, σ = 0.12, 1"
    with pytest.raises(AttributeError):
        text.fill("{{cfg.missing}}", {"cfg": cfg})


def test_prose_nested_sections_use_their_names():
    """A section inside a section is filled from its value; its name counts as used (wrong
    implementation caught: only the outer sections' names counted, so a nested list was
    refused as a misspelt field), and a name no section or field uses is still refused."""
    assert text.prose("_example", "nested", outer=True, inner=[{"v": 1}, {"v": 2}]) == "[12]"
    assert text.prose("_example", "nested", outer=False, inner=[{"v": 1}]) == ""
    with pytest.raises(TypeError, match="no field"):
        text.prose("_example", "nested", outer=True, inner=[], other=1)


def test_prose_wrapped_fills_a_block_then_wraps_each_line(tmp_path, monkeypatch):
    """One template line is one paragraph or one bullet (a nested one keeps its indent), wrapped
    at 95 columns after the fields are filled; a blank line stays. Wrong implementation caught:
    wrapping before filling (a long field would overrun the line) or the whole block as one
    paragraph (the bullets would merge)."""
    words = " ".join(f"w{i}" for i in range(40))
    (tmp_path / "t.md").write_text(f"<!-- block: b -->\n{{{{x}}}} {words}\n\n* {words}\n"
                                   f"  * {{{{x}}}}\n")
    monkeypatch.setattr(text, "TEMPLATE_DIRS", [tmp_path])
    text._blocks.cache_clear()
    try:
        got = text.prose_wrapped("t", "b", x="y" * 60)
    finally:
        text._blocks.cache_clear()
    want = "\n".join([text.wrap(["y" * 60 + " " + words], bullet=None), "",
                      text.wrap([words]), text.wrap(["y" * 60], bullet="  * ",
                                                          indent="    ")])
    assert got == want
    assert all(len(line) <= 95 for line in got.splitlines())
    assert "\n\n* w0 " in got and got.endswith("\n  * " + "y" * 60)


def test_every_template_block_is_used(monkeypatch):
    """Each block of each page template is named (as a quoted string) in the reproduction code
    or read while every committed page renders: a block left behind when its wording moves or
    its row goes would otherwise sit unused. Wrong implementation caught: a template with a
    stray block (and a driver that reads a block its template lacks fails in the page tests,
    through :func:`prose`'s KeyError)."""
    import re
    from pathlib import Path

    import experiments.reproduce as package
    from jaxfl.repro import pages as pages_lib

    folder = Path(package.__file__).parent
    code = "".join(p.read_text() for p in (*folder.glob("*.py"), *Path(text.__file__).parent.glob(
        "*.py"), folder.parent / "audit.py"))
    pages = [t.stem for t in sorted((folder / "templates").glob("*.md"))
             if not t.stem.startswith("_")]
    assert len(pages) >= 8
    read, blocks = set(), text._blocks

    class Recorded(dict):
        def __init__(self, page):
            super().__init__(blocks(page))
            self.page = page

        def __getitem__(self, name):
            read.add(f"{self.page}:{name}")
            return super().__getitem__(name)

    monkeypatch.setattr(text, "_blocks", Recorded)
    pages_lib.render()
    unused = [f"{page}:{name}" for page in pages for name in blocks(page)
              if not re.search(rf"[\"']{name}[\"']", code) and f"{page}:{name}" not in read]
    assert unused == []


def test_group_keeps_the_order_of_keys_and_items():
    """Rows grouped by a field or a key function, keys in first-seen order and each group's
    items in their order (wrong implementation caught: sorted keys, a lost or reordered row)."""
    rows = [{"m": "b", "s": 1}, {"m": "a", "s": 2}, {"m": "b", "s": 0}]
    assert runs.group(rows, "m") == {"b": [rows[0], rows[2]], "a": [rows[1]]}
    assert list(runs.group(rows, lambda r: (r["m"], r["s"] > 0))) == [("b", True), ("a", True),
                                                                  ("b", False)]


def test_a_template_is_found_in_a_registered_folder_or_named_missing(tmp_path, monkeypatch):
    """Templates are looked up in the registered folders in order (the engine's own, then the
    paper package's): the first folder holding ``<page>.md`` wins, and a page in none of them
    is an error naming every folder (wrong implementations caught: only the engine's folder
    searched, a later folder shadowing an earlier one, a silent empty block set)."""
    import experiments.reproduce  # noqa: F401  (registers experiments/reproduce/templates)

    assert text.template("_example").parent == text.TEMPLATE_DIRS[0]
    assert text.template("lightdp").parent.name == "templates"
    (tmp_path / "lightdp.md").write_text("<!-- block: x -->\nshadow\n")
    monkeypatch.setattr(text, "TEMPLATE_DIRS", [*text.TEMPLATE_DIRS, tmp_path])
    assert text.template("lightdp").parent != tmp_path
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        text.template("no_such_page")


def test_list_sections_know_their_place_and_take_plain_items():
    """A list section's items get ``is_first``, ``is_last`` and ``sep`` ("", ", ", " and "), a plain
    item is ``{{item}}``, an item's own key wins over them, a dotted section name walks into a
    value, and a None value with a format spec is "-" (wrong implementations caught: "a, b, and
    c" or "a and b and c", a plain item refused, the item's ``sep`` overridden, None formatted
    as "None" or refused)."""
    assert text.fill("{{#xs}}{{sep}}{{item}}{{/xs}}", {"xs": ["a", "b", "c"]}) == "a, b and c"
    assert text.fill("{{#xs}}{{item}}{{^is_last}} / {{/is_last}}{{/xs}}", {"xs": [1, 2]}) == "1 / 2"
    assert text.fill("{{#xs}}{{sep}}{{/xs}}", {"xs": [{"sep": "|"}, {"sep": "|"}]}) == "||"
    assert text.fill("{{#d}}{{^is_first}}x{{/is_first}}{{/d}}", {"d": {"is_first": False}}) == "x"
    assert text.fill("{{#cfg.rows}}[{{v:.1f}}]{{/cfg.rows}}",
                     {"cfg": {"rows": [{"v": 1}, {"v": None}]}}) == "[1.0][-]"
    assert text.fill("{{x}} {{x:.2f}}", {"x": None}) == "None -"
