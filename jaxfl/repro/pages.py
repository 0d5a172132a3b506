"""Writes the reproduction pages from the committed result files, so no number or verdict on
them is typed by hand.

  python -m experiments.reproduce.pages            # rewrite the pages
  python -m experiments.reproduce.pages --check    # exit 1 and list the pages that differ

Inputs (all committed): ``docs/reproduction/data/`` and ``docs/audit.json`` (:func:`inputs`).
Pages: every page a paper declares (:func:`render_page`, with the provenance of the data files
it reads) and ``docs/reproduction.md`` (:func:`summary_page`), built from the declarations
alone (:mod:`jaxfl.repro.declare`): each paper's ``link``, one claims-table row per
field dict of each claim and the "what remains" rows. Verdicts
follow each claim's pre-declared rule; ``tests/experiments/reproduction_pages_test.py`` fails on
any difference with the committed pages.
"""

from __future__ import annotations

import json
import re
import sys

from jaxfl.repro import declare
from jaxfl.repro.text import check_flag, prose, provenance_section, splice, table

ROOT, DATA, AUDIT = declare.ROOT, declare.DATA, declare.AUDIT
EXACT = DATA / "exact_numbers.json"
SUMMARY = "docs/reproduction.md"
SUMMARY_PAGE = "reproduction"  # templates/reproduction.md: the summary's fixed wording


def unprinted_numbers() -> list:
    """Entries of ``exact_numbers.json`` whose formatted value is not on their page."""
    missing = []
    for g, d in json.loads(EXACT.read_text()).items():
        if g.startswith("_"):
            continue
        text = (ROOT / d["page"]).read_text()
        missing += [f"{g}.{k} = {format(v, f)} not in {d['page']}"
                    for k, (v, f) in d["values"].items() if format(v, f) not in text]
    return missing


def rounded(values: dict) -> dict:
    """``{key: [value rounded to its format, format]}`` of ``{key: (value, format)}`` (an
    integral value under 1e6 as an int)."""
    out = {}
    for k, (v, f) in values.items():
        r = float(format(v, f))
        out[k] = [int(r) if r.is_integer() and abs(r) < 1e6 else r, f]
    return out


def exact_numbers(note: str) -> dict:
    """The content of ``exact_numbers.json``: ``note`` as ``_provenance``, then every declared
    paper's :attr:`~jaxfl.repro.declare.Paper.exact` groups with their values :func:`rounded`.

    Raises:
      ValueError: two papers declare a group of the same name.
    """
    out = {"_provenance": note}
    for p in declare.papers():
        for name, group in (p.exact() if p.exact else {}).items():
            if name in out:
                raise ValueError(f"exact_numbers.json: group {name!r} declared twice "
                                 f"(again by {p.name!r}).")
            out[name] = {**group, "values": rounded(group["values"])}
    return out


def write_exact_numbers(note: str, argv=None, doc: str = "") -> int:
    """The command line of ``exact_numbers.json``: rewrite it from :func:`exact_numbers`, or
    with ``--check`` exit 1 when the committed file differs."""
    new = exact_numbers(note)
    if check_flag(doc, argv, "the committed file"):
        same = json.loads(EXACT.read_text()) == new
        print("exact_numbers.json: " + ("up to date" if same else "differs from the library"))
        return 0 if same else 1
    EXACT.write_text(json.dumps(new, indent=2) + "\n")
    print(f"[exact_numbers] wrote {EXACT.relative_to(ROOT)}")
    return 0


def inputs() -> declare.Inputs:
    """The committed inputs (:data:`DATA`, :data:`AUDIT`, :data:`ROOT`, read at call time)."""
    return declare.Inputs(DATA, AUDIT, ROOT)


def claim_rows(paper: declare.Paper, ctx: declare.Inputs) -> list[str]:
    """The claims-table lines of a declared paper: each claim's ``row`` block filled with each
    of its field dicts, every "|" of a string value escaped (once; a number, dict or list stays
    as it is, for the block's format specs and sections); a dict's ``row`` key names another
    block for that line."""
    return [prose(paper.template, f.pop("row", c.row), **{
        k: re.sub(r"(?<!\\)\|", r"\\|", v) if isinstance(v, str) else v
        for k, v in f.items()})
        for c in paper.claims for f in declare.rows(c, ctx)]


def summary_page(ctx: declare.Inputs | None = None) -> str:
    """docs/reproduction.md: the intro with each paper's ``link``, the claims table (papers by
    ``order``), the "what remains" table (rows by ``item``), the beyond-the-papers links."""
    ctx = ctx or inputs()
    papers = declare.papers()
    remaining = sorted((r.item, prose(p.template, r.row, **declare.rows(r, ctx)[0]))
                       for p in papers for r in p.remaining)
    return _with_provenance(SUMMARY, "\n".join([
        prose(SUMMARY_PAGE, "intro"), "", *(prose(p.template, p.link) for p in papers if p.link),
        "", prose(SUMMARY_PAGE, "intro_audits"), "",
        *table(("paper", "claim", "target", "measured here", "scale, seeds", "verdict", "paired",
                "command")), *(r for p in papers for r in claim_rows(p, ctx)),
        "", prose(SUMMARY_PAGE, "remaining_intro"), "",
        *table(("item", "status", "seeds", "remaining", "estimated cost (2 cores)")),
        *(row for _, row in remaining), "", prose(SUMMARY_PAGE, "beyond"), ""]))


def declared_pages() -> dict[str, declare.Page]:
    """Every page a declared paper renders, by path."""
    return {pg.path: pg for p in declare.papers() for pg in p.pages}


def page_data() -> dict[str, list[str]]:
    """The committed data files each page is generated from (names under ``DATA``)."""
    pages = {path: list(pg.data) for path, pg in declared_pages().items()}
    every = sorted({f for fs in pages.values() for f in fs} | {EXACT.name})
    return {SUMMARY: every, **pages}


def _with_provenance(page: str, text: str) -> str:
    """``text`` with its "Provenance of the data" section: spliced into its ``provenance``
    block where it has one (the hand-written pages), else appended."""
    block = provenance_section([DATA / f for f in page_data()[page]])
    if "<!-- BEGIN GENERATED: provenance -->" in text:
        return splice(text, "provenance", block)
    return text.rstrip("\n") + "\n\n" + block + "\n"


def render_page(path: str, text: str | None = None, ctx: declare.Inputs | None = None) -> str:
    """The declared page ``path`` rendered from the data (``text``: the page whose hand-written
    parts it keeps; default: the committed page), with its provenance section."""
    page = declared_pages()[path]
    if text is None:
        text = (ROOT / path).read_text() if (ROOT / path).exists() else ""
    return _with_provenance(path, page.render(ctx or inputs(), text))


def render() -> dict[str, str]:
    """``{relative path: text}`` of every generated page (the committed pages are read only for
    their hand-written parts)."""
    ctx = inputs()
    return {SUMMARY: summary_page(ctx),
            **{path: render_page(path, ctx=ctx) for path in declared_pages()}}


def main(argv=None) -> int:
    check = check_flag(__doc__, argv, "a page")
    pages = render()
    old = [p for p, text in pages.items() if (ROOT / p).read_text() != text]
    missing = unprinted_numbers()
    for p in old:
        if not check:
            (ROOT / p).write_text(pages[p])
        print(f"stale: {p}" if check else f"[pages] wrote {p}")
    for m in missing:
        print(f"not on its page: {m}" if check else f"[pages] warning: {m}",
              file=sys.stdout if check else sys.stderr)
    return 1 if check and (old or missing) else 0


if __name__ == "__main__":
    raise SystemExit(main())
