"""Reproduction declared as data (jaxfl/repro/declare.py): the registry, the summary
page built from the declarations, and the one entry point (jaxfl/repro/cli.py, run as python -m experiments.reproduce)."""

import shutil

import pytest

import experiments.reproduce  # noqa: F401  (registers the papers)
from experiments.reproduce.__main__ import main
from jaxfl.repro import declare, pages


def test_registry_finds_every_declared_paper():
    names = [p.name for p in declare.papers()]
    assert {"dp_ogl", "lightdp", "dp_ftrl", "audit"} <= set(names)
    assert names.index("dp_ogl") < names.index("lightdp") < names.index("audit")
    assert declare.paper("dp-ogl") is declare.paper("dp_ogl")
    with pytest.raises(KeyError, match="No paper 'nope'"):
        declare.paper("nope")
    with pytest.raises(TypeError, match="declare.Paper"):
        declare.register({"name": "x"})
    with pytest.raises(KeyError, match="no figure 'fig9'"):
        declare.paper("dp_ogl").figure("fig9")
    rules = {c.rule.kind for p in declare.papers() for c in p.claims}
    assert rules == {"paired", "exact", "not tested"}


def test_summary_rows_are_the_declared_claims(monkeypatch):
    """A paper added by declaration alone (its own template, no shared edit) gets its line in
    the list of reports, its claims' rows (after the papers of a lower order) and its page with
    its provenance; a paper left undeclared loses every row it contributed. Wrong
    implementation caught: a summary written by per-paper functions, not from the registry."""
    text = pages.summary_page()
    # Fig. 4, the sensitivity audit, Fig. 3, Fig. 5 (panels a,b)
    assert sum(r.startswith("| DP-OGL |") for r in text.splitlines()) == 25  # 10 + 1 + 10 + 4
    extra = declare.Paper(
        "zz_example", "example", order=99, template="_example", link="link",
        claims=(declare.Claim("x", "an example claim", declare.NOT_TESTED, "row",
                              lambda inputs: [{"claim": "a|b", "measured": 1, "verdict": "v"},
                                              {"claim": "c", "measured": 2, "verdict": "w"}]),),
        pages=(declare.Page("docs/reproduction/zz_example.md", ("dp_ftrl_compare.csv",),
                            lambda inputs, text: "# Example\n"),))
    registry = {**declare._REGISTRY, extra.name: extra}
    del registry["dp_ogl"]
    monkeypatch.setattr(declare, "_REGISTRY", registry)
    lines = pages.summary_page().splitlines()
    assert not any(r.startswith("| DP-OGL |") for r in lines)
    assert not any("reproduction/dp_ogl.md" in r for r in lines)
    audit = next(i for i, r in enumerate(lines) if r.startswith("| all |"))
    assert lines[audit + 1:audit + 3] == ["| Example | a\\|b | - | 1 | - | v | - | - |",
                                          "| Example | c | - | 2 | - | w | - | - |"]
    light = lines.index("- [LightDP-FL](reproduction/lightdp.md) (`make reproduce-lightdp`)")
    assert lines[light + 1] == "- [An example paper](reproduction/zz_example.md)"
    # the remaining table loses DP-OGL's items (d), (d2), the pages DP-OGL's two, and gain the
    # new one
    assert not any(r.startswith(("| (d) DP-OGL", "| (d2) DP-OGL")) for r in lines)
    data = pages.page_data()
    assert "docs/reproduction/dp_ogl.md" not in data
    assert data["docs/reproduction/zz_example.md"] == ["dp_ftrl_compare.csv"]
    page = pages.render_page("docs/reproduction/zz_example.md")
    assert page.startswith("# Example\n\n## Provenance of the data") and "dp_ftrl_compare" in page


def test_declared_rows_and_pages_read_the_inputs_they_are_given(tmp_path):
    """A claim's fields and a page are functions of the Inputs: one seed's accuracy edited in
    a copy of the data folder moves the DP-FTRL page rendered from that copy only."""
    data = tmp_path / "data"
    shutil.copytree(pages.DATA, data)
    path = data / "dp_ftrl_compare.csv"
    path.write_text(path.read_text().replace(",0.8892999887466431,", ",0.8992999887466431,", 1))
    page = declare.paper("dp_ftrl").pages[0]
    committed = (pages.ROOT / page.path).read_text()
    assert committed.startswith(page.render(pages.inputs(), "").rstrip("\n"))
    edited = page.render(declare.Inputs(data), "")
    assert "| DP-FedAvg (Poisson) | 2 | off | 0.8908 |" in edited
    assert not committed.startswith(edited.rstrip("\n"))
    assert declare.rows(declare.Remaining("z", "b", lambda i: {"a": 1}), None) == [{"a": 1}]


def test_audit_check_compares_a_lower_bound_with_its_claim(tmp_path):
    """The audit rows a claim quotes: the lower bound against the paper's claim (or a claim
    named in the row's info), with the comparison and the exact verdict the rows print."""
    import json

    from jaxfl.repro import stats

    (tmp_path / "audit.json").write_text(json.dumps([{
        "name": "a (long name)", "audit": "a", "epsilon_lb": 2.0, "claimed": {"paper": 1.0},
        "info": {"item_claim": 3.0}}]))
    inputs = declare.Inputs(tmp_path, tmp_path / "audit.json")
    over = inputs.audit_check("a")
    assert (over["lb"], over["p"], over["cmp"], over["exceeded"]) == (2.0, 1.0, ">", True)
    assert over["verdict"] == stats.FAILS and over["info"] == {"item_claim": 3.0}
    under = inputs.audit_check("a (long name)", "item_claim")
    assert (under["p"], under["cmp"], under["verdict"]) == (3.0, "<=", stats.HOLDS)


def test_entry_point_checks_its_arguments_before_running(tmp_path, capsys):
    for args, message in ((["dp_ogl", "--figure", "fig9"], "no figure 'fig9'"),
                          (["dp_ogl", "--scale", "huge"], "expected one of"),
                          (["nope"], "No paper 'nope'")):
        with pytest.raises(SystemExit):
            main([*args, "--workdir", str(tmp_path / "w")])
        assert message in capsys.readouterr().err
    assert not (tmp_path / "w").exists()
    assert main(["--list"]) == 0
    assert "claim fig3 [paired]" in capsys.readouterr().out


def test_entry_point_renders_a_data_folder_beside_it(tmp_path, capsys):
    """``--from-data --data DIR`` runs nothing, prints the paper's claims-table rows from DIR
    and writes the pages it has the data for into DIR."""
    data = tmp_path / "data"
    shutil.copytree(pages.DATA, data)
    capsys.readouterr()
    assert main(["dp_ogl", "--from-data", "--data", str(data)]) == 0
    out = capsys.readouterr().out.splitlines()
    summary = [r for r in pages.summary_page().splitlines() if r.startswith("| DP-OGL |")]
    assert out == summary
    assert (data / "dp_ogl_seeds.md").read_text() == declare.paper("dp_ogl").pages[1].render(
        pages.inputs(), "")


def test_entry_point_runs_exports_and_renders_a_declared_figure(tmp_path, monkeypatch, capsys):
    """The default run of a paper (declare.run_figures): each selected figure's configs, then
    its export into --data with the Run it describes; then the paper's rows and pages are
    rendered from that folder. Wrong implementation caught: an export given another scale or
    folder, a figure not selected that runs anyway, rows read from the committed data."""
    seen = []

    def export(run):
        seen.append((run.figure.name, run.scale, run.selected, run.workdir, run.figures))
        (run.data / "x.json").write_text('{"value": 7}')

    fig = declare.Figure("f1", "a figure", lambda scale: [], ("x.json",), export)
    other = declare.Figure("f2", "another", lambda scale: [], ("y.json",),
                           lambda run: seen.append("f2 ran"))
    paper = declare.Paper(
        "zz_run", "example", figures=(fig, other), scales=("smoke", "cpu"), template="_example",
        claims=(declare.Claim("c", "claim", declare.EXACT, "row",
                              lambda i: {"claim": "c", "measured": i.json("x.json")["value"],
                                         "verdict": "holds"}, figure="f1"),),
        pages=(declare.Page("docs/reproduction/zz_run.md", ("x.json",),
                            lambda i, text: f"# value {i.json('x.json')['value']}\n"),))
    monkeypatch.setattr(declare, "_REGISTRY", {**declare._REGISTRY, paper.name: paper})
    data = tmp_path / "data"
    data.mkdir()
    capsys.readouterr()
    assert main(["zz_run", "--figure", "f1", "--scale", "smoke", "--workdir",
                 str(tmp_path / "w"), "--data", str(data)]) == 0
    assert seen == [("f1", "smoke", ("f1",), tmp_path / "w" / "f1", tmp_path / "w")]
    assert capsys.readouterr().out.splitlines() == ["| Example | c | - | 7 | - | holds | - | - |"]
    assert (data / "zz_run.md").read_text() == "# value 7\n"


def test_a_smoke_data_folder_renders_the_rows_a_committed_one_does(tmp_path):
    """A data folder of a smoke run (no exact_numbers.json; the ULDP mixture at k = 1, 2 only)
    still gives the summary rows: exact numbers from the committed file, no k = 16 / 32."""
    import json

    from experiments.reproduce import uldp

    assert declare.Inputs(tmp_path).exact == declare.Inputs().exact
    privacy = json.loads((declare.DATA / uldp.PRIVACY).read_text())
    privacy["fig2"]["mog"] = [r for r in privacy["fig2"]["mog"] if r["k"] in (1, 2)]
    (tmp_path / uldp.PRIVACY).write_text(json.dumps(privacy))
    row, committed = (uldp.context(declare.Inputs(d))["cnt"] for d in (tmp_path, declare.DATA))
    assert row["mog16"] is None and row["k64_sound"] == committed["k64_sound"] > committed["k64"]
    # no benchmark in a smoke folder: the protocol row says "not run" (it raised
    # FileNotFoundError and stopped the smoke run's entry point)
    from jaxfl.repro import pages

    rows = pages.claim_rows(uldp.PAPER, declare.Inputs(tmp_path))
    protocol = next(r for r in rows if "private weighting protocol" in r)
    assert "| no benchmark in this data folder | benchmark, one run | not run |" in protocol
    assert "k=16 / 32:  vs 450.7 / 2152.0" in next(r for r in rows if "NAIVE / GROUP" in r)


def test_figures_of_one_sweep_run_as_one_sweep_with_one_export(tmp_path, monkeypatch):
    """Selected figures declaring the same ``sweep`` run their configs as ONE sweep (equal
    configs once) in ``workdir/<sweep>``, then the first one's export and plot, once, with
    every selected name; a figure of no sweep runs alone. Wrong implementation caught: one
    sweep per figure, a config run twice, the second figure's export, a figure not selected."""
    from jaxfl.repro import runs as _runs

    sweeps, seen = [], []
    monkeypatch.setattr(_runs, "run_configs", lambda configs, workdir: sweeps.append(
        (list(configs), workdir)) or [workdir / c["k"] for c in configs])

    def fig(name, configs, sweep=None):
        return declare.Figure(name, name, lambda scale: [{"k": c} for c in configs], ("x",),
                              lambda run: seen.append(("export", run.figure.name, run.selected,
                                                       [d.name for d in run.dirs])),
                              plot=lambda run: seen.append(("plot", run.figure.name)),
                              sweep=sweep)

    paper = declare.Paper("zz_sweep", "t", figures=(
        fig("a", ["1", "2"], "s"), fig("b", ["2", "3"], "s"), fig("c", ["4"]),
        fig("d", ["5"], "s")), scales=("smoke",))
    declare.run_figures(paper, ["a", "b", "c"], "smoke", tmp_path, tmp_path, tmp_path)
    assert sweeps == [([{"k": "1"}, {"k": "2"}, {"k": "3"}], tmp_path / "s"),
                      ([{"k": "4"}], tmp_path / "c")]
    assert seen == [("export", "a", ("a", "b"), ["1", "2", "3"]), ("plot", "a"),
                    ("export", "c", ("c",), ["4"]), ("plot", "c")]


def test_claims_and_remaining_rows_from_one_context_name_their_blocks():
    """``claims_from`` / ``remaining_from`` name each row's block ``row_<prefix>_<name>`` /
    ``remaining_<prefix>[_<name>]`` (prefix: the page by default) and keep a claim's rule,
    figure and rows (wrong implementations caught: the page used where a prefix is given, a
    trailing "_" for an empty name, the figure dropped)."""
    claims = declare.claims_from(lambda i: {}, "pages_x", (
        ("a", "claim a", declare.EXACT), ("b", "claim b", declare.PAIRED, "fig3", "rows")),
        prefix="x")
    assert [(c.name, c.row, c.rule, c.figure) for c in claims] == [
        ("a", "row_x_a", declare.EXACT, None), ("b", "row_x_b", declare.PAIRED, "fig3")]
    rem = declare.remaining_from(lambda i: {}, "x", (("d", ""), ("d2", "fig5")))
    assert [(r.item, r.row) for r in rem] == [("d", "remaining_x"), ("d2", "remaining_x_fig5")]
