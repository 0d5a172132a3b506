"""The text of the reproduction pages: templates, Markdown tables and generated blocks.

A page's fixed wording lives in a Markdown template (``<name>.md`` in a folder of
:data:`TEMPLATE_DIRS`), cut into blocks by ``<!-- block: name -->`` lines; :func:`prose` fills
one (:func:`fill`: ``{{name}}``, ``{{name.key:spec}}``, sections ``{{#rows}}...{{/rows}}`` and
``{{^x}}...{{/x}}``) and :func:`prose_wrapped` wraps it at 95 columns. A generated page keeps
its hand-written parts and gets its blocks spliced between ``<!-- BEGIN GENERATED: name -->``
markers (:func:`splice_blocks`). Tables: :func:`table`, :func:`row`, :func:`num`. One
context for several blocks: :func:`used`, :func:`fill_block`. Cells as the pages write them:
:func:`span`, :func:`ranges`, :func:`interval_text`, :func:`interval_cells`, :func:`grid`,
:func:`cell_line`, :func:`delta_text`, :func:`short_exp`; an earlier page's rows beside the
current ones: :func:`beside_earlier`.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from jaxfl.repro import runs, stats


def num(v, nd: int = 4, big_nd: int | None = None) -> str:
    """A number's table cell: a float to ``nd`` significant digits (``big_nd`` from 1e5 on),
    None as "-", anything else as written."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{big_nd if big_nd is not None and abs(v) >= 1e5 else nd}g}"
    return str(v)


def row(cells) -> str:
    """One Markdown table line."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: Sequence, rows: Iterable = ()) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row of cells."""
    return [row(header), "|" + "---|" * len(header), *(row(r) for r in rows)]


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the block between the ``name`` markers (``<!-- BEGIN GENERATED: name -->``,
    ``<!-- END GENERATED: name -->``) replaced by ``body``."""
    begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
    i, j = text.index(begin) + len(begin), text.index(end)
    return text[:i] + "\n" + body.strip("\n") + "\n" + text[j:]


def splice_blocks(text: str, blocks: dict[str, str], title: str = "") -> str:
    """``text`` with each ``name: body`` of ``blocks`` spliced in (:func:`splice`); an empty
    ``text`` becomes ``# title``, a block without its markers is appended."""
    text = text or f"# {title}\n"
    for name, body in blocks.items():
        if f"<!-- BEGIN GENERATED: {name} -->" not in text:
            text = text.rstrip() + (f"\n\n<!-- BEGIN GENERATED: {name} -->\n"
                                    f"<!-- END GENERATED: {name} -->\n")
        text = splice(text, name, body)
    return text


def wrap(items: Sequence[str], bullet: str | None = "* ", indent: str = "  ") -> str:
    """Markdown bullets (``bullet`` before each item's first line, ``indent`` before the
    others), wrapped at 95 columns; ``bullet=None``: the items as one paragraph."""
    import textwrap

    kw = dict(width=95, break_long_words=False, break_on_hyphens=False)
    if bullet is None:
        return "\n".join(textwrap.wrap(" ".join(items), **kw))
    return "\n".join(textwrap.fill(t, initial_indent=bullet, subsequent_indent=indent, **kw)
                     for t in items)


# Folders searched for ``<page>.md``, first match wins: the engine's own (``_example.md``) and
# those a package of paper declarations adds (:func:`add_templates`).
TEMPLATE_DIRS: list[Path] = [Path(__file__).with_name("templates")]


def add_templates(folder) -> None:
    """Adds ``folder`` to :data:`TEMPLATE_DIRS` (once)."""
    if (folder := Path(folder)) not in TEMPLATE_DIRS:
        TEMPLATE_DIRS.append(folder)
        _blocks.cache_clear()


def template(page: str) -> Path:
    """The template file of ``page``.

    Raises:
      FileNotFoundError: no folder of :data:`TEMPLATE_DIRS` has ``<page>.md``.
    """
    for folder in TEMPLATE_DIRS:
        if (path := folder / f"{page}.md").exists():
            return path
    raise FileNotFoundError(f"No template {page}.md in {[str(d) for d in TEMPLATE_DIRS]}")


_BLOCK = re.compile(r"^<!-- block: (\w+) -->$", re.M)


_FIELD = re.compile(r"\{\{(\w+)((?:\.\w+)*)(?::([^}]*))?\}\}")
# A section: {{#name}}...{{/name}} (repeated per item of a list, once for another true value,
# dropped for a false one) or {{^name}}...{{/name}} (once when the value is false); the name
# may be dotted like a field's. A tag alone on its line takes the line with it.
_SECTION = re.compile(r"(?:^\{\{([#^])([\w.]+)\}\}\n(.*?)^\{\{/\2\}\}(?:\n|\Z))"
                      r"|(?:\{\{([#^])([\w.]+)\}\}(.*?)\{\{/\5\}\})", re.M | re.S)


@functools.cache
def _blocks(page: str) -> dict[str, str]:
    """The blocks of ``templates/<page>.md``: the text after each ``<!-- block: name -->`` line
    up to the next (trailing newlines dropped); text before the first is an editors' note."""
    text = template(page).read_text()
    parts = _BLOCK.split(text)
    names = parts[1::2]
    if len(set(names)) != len(names):
        raise ValueError(f"templates/{page}.md: a block name is used twice: {names}")
    return {n: body.lstrip("\n").rstrip("\n") for n, body in zip(names, parts[2::2])}


def _names(text: str) -> tuple[set, set]:
    """(the names ``text`` needs: its fields outside sections and its outer sections; every
    name, nested sections' included)."""
    top = {(m[2] or m[5]).split(".")[0] for m in _SECTION.finditer(text)}
    every = {m[1] for m in _FIELD.finditer(text)} | set(re.findall(r"\{\{[#^](\w+)", text))
    return {m[1] for m in _FIELD.finditer(_SECTION.sub("", text))} | top, every


def _lookup(fields: dict, name: str):
    """The value of a dotted ``name``: a field, then each part a dict's key or an attribute."""
    first, *rest = name.split(".")
    v = fields[first]
    for part in rest:
        v = v[part] if isinstance(v, dict) else getattr(v, part)
    return v


def _item(x, i: int, n: int) -> dict:
    """The fields a list section's ``i``-th of ``n`` items adds: its dict (a non-dict item is
    ``item``) over ``is_first``, ``is_last`` and ``sep`` ("" before the first item, " and "
    before the last, ", " before the others: ``{{sep}}{{name}}`` lists "a, b and c")."""
    sep = "" if i == 0 else " and " if i == n - 1 else ", "
    return {"is_first": i == 0, "is_last": i == n - 1, "sep": sep,
            **(x if isinstance(x, dict) else {"item": x})}


def fill(text: str, fields: dict) -> str:
    """``text`` with its sections expanded (:data:`_SECTION`; a list item adds its fields, see
    :func:`_item`) and each ``{{name}}`` / ``{{name:spec}}`` replaced by ``str(value)`` /
    ``format(value, spec)`` (a None value with a spec is written "-"); ``{{name.key}}`` reads a
    dict's key or an object's attribute (``{{base.rounds:d}}``), so a block can take a config
    or a row whole."""
    def section(m):
        kind, name, body = (m[1], m[2], m[3]) if m[1] else (m[4], m[5], m[6])
        v = _lookup(fields, name)
        if kind == "^":
            return "" if v else fill(body, fields)
        if isinstance(v, list):
            return "".join(fill(body, {**fields, **_item(x, i, len(v))}) for i, x in enumerate(v))
        return fill(body, {**fields, **(v if isinstance(v, dict) else {})}) if v else ""

    def field(m):
        v = _lookup(fields, m[1] + m[2])
        if m[3] is None:
            return str(v)
        return "-" if v is None else format(v, m[3])

    return _FIELD.sub(field, _SECTION.sub(section, text))


def prose(page: str, block: str, **fields) -> str:
    """The ``block`` of the Markdown template ``templates/<page>.md`` filled by :func:`fill`
    (``{{name}}``, ``{{name:.3f}}``, sections ``{{#rows}}...{{/rows}}``, ``{{^x}}...{{/x}}``).

    Raises:
      KeyError: no such block, or a field or section without a value.
      TypeError: a value that the block does not use (a misspelt field).

    >>> prose("_example", "greeting", who="reader")
    'Hello, reader.'
    """
    blocks = _blocks(page)
    if block not in blocks:
        raise KeyError(f"templates/{page}.md has no block {block!r} (blocks: {sorted(blocks)})")
    text = blocks[block]
    needed, every = _names(text)
    if missing := needed - fields.keys():
        raise KeyError(f"templates/{page}.md block {block!r} needs {sorted(missing)}")
    if unused := fields.keys() - every:
        raise TypeError(f"templates/{page}.md block {block!r} has no field {sorted(unused)}")
    out = fill(text, fields)
    return out.rstrip("\n") if _SECTION.search(text) else out


def prose_wrapped(page: str, block: str, **fields) -> str:
    """:func:`prose` with every line wrapped at 95 columns by :func:`wrap`: a line ``* text``
    (spaces before the ``*`` allowed: a nested bullet) as one bullet, any other line as one
    paragraph; blank lines stay. A template thus keeps one paragraph or one bullet a line, and a
    long field cannot overrun the page's width."""
    out = []
    for line in prose(page, block, **fields).split("\n"):
        m = re.fullmatch(r"( *\* )(.*)", line)
        out.append(wrap([m[2]], bullet=m[1], indent=" " * len(m[1])) if m
                   else wrap([line], bullet=None))
    return "\n".join(out)


def provenance_section(paths) -> str:
    """The "Provenance of the data" section of a page reading the data files ``paths``."""
    return prose("reproduction", "provenance",
                 files=[{"line": runs.provenance_of(p)} for p in paths])


def check_flag(doc: str, argv, what: str) -> bool:
    """The ``--check`` flag of a generator's command line (``doc``: its help; ``what``: what
    differs when it exits 1)."""
    import argparse

    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help=f"write nothing; exit 1 if {what} differs")
    return p.parse_args(argv).check


def ranges(ts) -> str:
    """Increasing integers as ranges: [1, 2, 3, 7] -> "1-3, 7" ("" for none)."""
    runs = [[t for _, t in g] for _, g in itertools.groupby(enumerate(ts), lambda p: p[1] - p[0])]
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def used(page: str, block: str, fields: dict) -> dict:
    """The entries of ``fields`` that block ``block`` of ``templates/<page>.md`` names, so that
    every block of a page is filled from one shared context (a name the block needs and the
    context lacks still raises in :func:`prose`)."""
    every = _names(_blocks(page)[block])[1]
    return {k: v for k, v in fields.items() if k in every}


def fill_block(page: str, block: str, ctx: dict, wrapped: bool = False) -> str:
    """Block ``block`` filled from the context ``ctx`` (``wrapped``: ``prose_wrapped``)."""
    return (prose_wrapped if wrapped else prose)(page, block,
                                                             **used(page, block, ctx))


def interval_text(values: dict, name: str, nd: int = 1) -> str:
    """Run ``name``'s mean [95% t-interval] over its seeds (``values``: name -> seed -> value)."""
    return stats.fmt(stats.interval(list(values.get(name, {}).values())), nd)


def delta_text(x: float) -> str:
    """A delta as the pages write it: 1e-5, 1e-2, 0.1."""
    return f"{x:.0e}".replace("e-0", "e-") if x < 0.1 else f"{x:g}"


def span(values, fmt=str) -> str:
    """Values over seeds in one cell, as ``fmt`` writes them: "-" without any, one value when
    they all write alike, else "lo - hi"."""
    lo, hi = (fmt(min(values)), fmt(max(values))) if values else ("-", "-")
    return lo if lo == hi else f"{lo} - {hi}"


def interval_cells(rows, key: str, names, columns: dict) -> dict:
    """Per-seed ``rows`` by cell (the value of their column ``key``) for each of ``names``:
    ``n`` (the finite values of the first column) and per ``name: column`` of ``columns`` the
    mean [95% t-interval] (:func:`~jaxfl.repro.stats.fmt`; "-" without values)."""
    out = {}
    for c in names:
        ivs = {k: stats.interval([r[col] for r in rows if r[key] == c])
               for k, col in columns.items()}
        out[c] = dict(n=next(iter(ivs.values()))["n"], **{k: stats.fmt(v) for k, v in ivs.items()})
    return out


def grid(cells: dict) -> tuple[list, list]:
    """The table of ``cells`` keyed ``(row, column)``: its columns (sorted; each ``col``) and
    its rows (in first-seen order; each ``row`` and ``cells``: ``c`` per column, None where
    that cell did not run)."""
    cols = sorted({c for _, c in cells})
    rows = [dict(row=r, cells=[dict(c=cells.get((r, c))) for c in cols])
            for r in dict.fromkeys(r for r, _ in cells)]
    return [dict(col=c) for c in cols], rows


def cell_line(c: dict, spans=(), fmt=str) -> dict:
    """A :func:`~jaxfl.repro.runs.cells_of` cell's line of a per-seed table: ``finished`` of
    its ``declared`` seeds, their ``interval`` (:func:`~jaxfl.repro.stats.fmt`) and its ``n``,
    per column of ``spans`` its :func:`~jaxfl.repro.text.span` over the finished rows (by
    ``fmt``), their distinct ``rounds`` (sorted) and the ``missing`` seeds."""
    ok = c["ok"]
    return dict(finished=len(c["values"]), declared=len(c["seeds"]), n=c["interval"]["n"],
                interval=stats.fmt(c["interval"]), missing=c["missing"],
                rounds=sorted({r["rounds"] for r in ok}),
                **{k: span([r[k] for r in ok], fmt) for k in spans})


def beside_earlier(prev: dict, rows: list[dict], key, same, value: str, fmt=str) -> dict:
    """An earlier page's section ``prev`` (its ``rows``, optionally a ``check``: one of them
    rerun on the earlier code) beside the current ``rows`` it also printed (matched on the
    columns ``key``, in the rows' order), every value written by ``fmt``: ``pairs`` (``old``,
    ``now``, their columns ``same`` joined " / " as ``same`` / ``same_now``, ``equal`` when they
    write alike), the ``count`` of equal pairs of ``runs``, ``all_equal``, ``moved`` (the pairs
    whose column ``value`` writes otherwise) and the ``check`` with its ``pair``, its ``value``
    written, ``reproduces`` (when it writes as on the earlier page), its ``note`` (None without)
    and its ``history`` (the rerun at later commits) as ``steps``: "value from commit (change)"."""
    old, pairs = {tuple(r[k] for k in key): r for r in prev["rows"]}, []
    for now in (r for r in rows if tuple(r[k] for k in key) in old):
        was = old[tuple(now[k] for k in key)]
        a, b = (" / ".join(fmt(x[k]) for k in same) for x in (was, now))
        pairs.append(dict(old={k: fmt(v) for k, v in was.items()}, same=a, same_now=b,
                          now={k: fmt(v) for k, v in now.items()}, equal=a == b, was=was))
    if check := prev.get("check"):
        pair = next(p for p in pairs if all(p["was"][k] == check[k] for k in key))
        check = dict(check, pair=pair, value=fmt(check[value]), note=check.get("note"),
                     reproduces=fmt(check[value]) == pair["old"][value], steps="; ".join(
                         f"{fmt(h[value])} from {h['commit']} ({h['change']})"
                         for h in check.get("history") or []))
    count = sum(p["equal"] for p in pairs)
    return dict(prev, pairs=pairs, count=count, runs=len(pairs), all_equal=count == len(pairs),
                moved=sum(p["old"][value] != p["now"][value] for p in pairs), check=check)


def short_exp(v) -> str:
    """A number as a summary writes it: 3 significant digits, 2 from 1e5 on, an exponent
    without "+" and leading zeros (2.7e9)."""
    return num(v, 3, 2).replace("e+0", "e").replace("e+", "e")


__all__ = ["TEMPLATE_DIRS", "add_templates", "check_flag", "fill", "num", "prose", "prose_wrapped",
           "provenance_section", "row", "splice", "splice_blocks", "table", "template", "wrap"]
