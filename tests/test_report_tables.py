"""Report tables, figures and paper files without a model: scores.json of a metric benchc has
never heard of renders in every format, byte for byte the same twice; bad paper files get one
message with the key path and a hint."""

from __future__ import annotations

import hashlib
import io
import tomllib
from pathlib import Path

import pytest
from PIL import Image

from benchc import api
from benchc.cli import main
from benchc.runtime.report.plots import normalized, render
from benchc.runtime.report.tables import Provenance, Table, footer_lines, read_csv, to_csv, to_latex, to_markdown
from benchc.runtime.reproduce.core import Paper, cell_diff, recorded_text
from support.scores_run import scores_run

DIGEST = "ab" * 32
SCORES = {
    "benchmark": {"name": "lab/new-bench", "version": "0.3.0", "seed": 0},
    "manifest_digest": DIGEST,
    "model": "some-model",
    "items": 12,
    "metrics": [{
        "name": "lab.new_metric",
        "columns": ["split_a", "n", "rate_%", "gap|x"],
        "rows": [{"split_a": "p_1 & q", "n": 4, "rate_%": 12.3456, "gap|x": -0.0001},
                 {"split_a": "<b>bold</b>", "n": 8, "rate_%": 50.0, "gap|x": 3.25}],
        "details": {
            "per_thing": {"left": {"t1": 1.0, "t2": 2.0, "t3": 3.0}, "right": {"t1": 2.0, "t2": 1.0, "t3": 0.5}},
            "flat": {"x": 1, "y": 2.5},
            "nested_deeper": {"a": {"b": {"c": 1}}},
        },
        "notes": ["A note with $pecial & chars_"],
    }],
}


def test_an_unknown_metric_renders_in_every_format(tmp_path: Path) -> None:
    run = scores_run(tmp_path, SCORES)
    markdown = api.report(run).read_text()
    assert "| split_a | n | rate\\_% | gap\\|x |" in markdown  # edge underscores and pipes escaped
    assert "\\<b\\>bold\\</b\\>" in markdown and "<b>bold" not in markdown
    assert "lab/new-bench 0.3.0 · manifest " + DIGEST in markdown and "backends unknown (no run.json)" in markdown
    folder = run / "report"
    tex = (folder / "tables" / "lab.new_metric.tex").read_text()
    assert r"p\_1 \& q" in tex and r"rate\_\%" in tex and r"\textless{}b\textgreater{}" in tex
    assert r"\begin{tabular}{lrrr}" in tex and r"\toprule" in tex
    assert f"% lab/new-bench 0.3.0 · manifest {DIGEST}" in tex
    assert "0.00" in tex and "-0.00" not in tex
    columns, rows = read_csv((folder / "tables" / "lab.new_metric.csv").read_text())
    assert columns == ["split_a", "n", "rate_%", "gap|x"]
    assert rows == [["p_1 & q", "4", "12.3456", "-0.0001"], ["<b>bold</b>", "8", "50.0", "3.25"]]
    matrix = read_csv((folder / "tables" / "lab.new_metric.per_thing.csv").read_text())
    assert matrix == (["key", "left", "right"], [["t1", "1.0", "2.0"], ["t2", "2.0", "1.0"], ["t3", "3.0", "0.5"]])
    assert (folder / "tables" / "lab.new_metric.flat.md").is_file()
    assert not list(folder.glob("tables/*nested_deeper*"))  # no table shape: left out, no crash
    for name in ("lab.new_metric.bar", "lab.new_metric.per_thing.radar"):
        png = Image.open(folder / "plots" / f"{name}.png")
        assert png.format == "PNG" and DIGEST[:16] in png.info["Description"]
        assert "lab/new-bench 0.3.0" in (folder / "plots" / f"{name}.svg").read_text()
    html = (folder / "index.html").read_text()
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold" not in html
    assert "no run.json beside scores.json" in html


def test_two_renders_are_byte_identical(tmp_path: Path) -> None:
    run = scores_run(tmp_path, SCORES)
    api.report(run)
    first = {p.relative_to(run): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    api.report(run)
    second = {p.relative_to(run): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    assert first == second and len(first) > 10
    data = Table("d", "radar", ["key", "a", "b"], [[f"c{i}", i * 1.5, 10.0 - i] for i in range(7)],
                 footer=footer_lines([Provenance.of(SCORES)], short=True))
    for kind in ("bar", "radar"):
        for fmt in ("png", "svg"):
            assert render(kind, data, fmt) == render(kind, data, fmt)
    svg = render("radar", data, "svg").decode()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg


def test_best_normalisation_makes_the_best_series_one_per_category() -> None:
    data = Table("d", "t", ["key", "a", "b"], [["x", 2.0, 4.0], ["y", 3.0, 1.5]])
    assert normalized(data, "best").rows == [["x", 0.5, 1.0], ["y", 1.0, 0.5]]


def test_renderers_escape_and_group_columns() -> None:
    table = Table("t", "Breakdown", ["run", "Acc", "S_GT", "Acc", "S_GT"], [["m|1", 1.0, 2.0, 3.0, None]],
                  groups=[("red", 2), ("blue", 2)], stub=1, footer=["benchc x"])
    tex = to_latex(table)
    assert r"\multicolumn{2}{c}{red} & \multicolumn{2}{c}{blue}" in tex and r"\cmidrule(lr){2-3}" in tex
    assert "| run | red/Acc | red/S_GT | blue/Acc | blue/S_GT |" in to_markdown(table)
    assert to_csv(table).splitlines() == ["run,red/Acc,red/S_GT,blue/Acc,blue/S_GT", "m|1,1.0,2.0,3.0,", "# benchc x"]


def test_cell_diff_names_rows_and_columns() -> None:
    old = "severity,score,max\nheavy,10.5,200\nlight,20.25,200\n# benchc\n"
    new = "severity,score,max\nheavy,10.5,200\nlight,21.0,200\nmedium,1.0,200\n"
    assert cell_diff(old, new) == ["row severity='light', column 'score': 20.25 -> 21.0", "row severity='medium' added"]
    assert cell_diff("a,b\n1.5,2.5\n", "a,b\n1.5,3.5\n") == ["row 1, column 'b': 2.5 -> 3.5"]


PAPER = """# a comment that must survive
[paper]
title = "t"

[[run]]
id = "a"
path = "run"
spec = "s"
version = "1"

[[table]]
name = "t1"
metric = "m"
"""


def test_recording_rewrites_only_the_recorded_tables() -> None:
    once = recorded_text(PAPER, {"a": "d1"}, {"t1.md": "h1", "t1.csv": "h2"})
    twice = recorded_text(once, {"a": "d2"}, {"t1.md": "h3"})
    assert twice.startswith(PAPER.rstrip("\n")) and twice.count("[recorded]") == 1
    parsed = Paper.model_validate(tomllib.loads(twice))
    assert parsed.recorded.runs == {"a": "d2"} and parsed.recorded.artifacts == {"t1.md": "h3"}


@pytest.mark.parametrize("change,fragment", [
    (("[[table]]\nname = \"t1\"\nmetric = \"m\"\n", "[[table]]\nname = \"t1\"\nmetric = \"m\"\nlayot = \"rows\"\n"),
     "paper.toml:14 table[0].layot: unknown key\n  hint: did you mean 'layout'?"),
    (("metric = \"m\"\n", "metric = \"m\"\nlayout = \"pivot\"\n"),
     "paper.toml:14 table[0].layout: Input should be 'rows', 'breakdown', 'details' or 'combined' (got 'pivot')"),
    (("name = \"t1\"", "name = \"t 1\""), "table[0].name: 't 1' is not a file name\n  hint: use letters"),
    (("metric = \"m\"\n", "metric = \"m\"\nruns = [\"b\"]\n"),
     "table[0].runs[0]: no [[run]] has id 'b'\n  hint: runs: a"),
    (("metric = \"m\"\n", "metric = \"m\"\nlayout = \"details\"\n"), "table[0]: layout 'details' needs `detail`"),
    (("[[run]]", "[[run]"), "not valid TOML"),
    (("[[table]]\nname = \"t1\"\nmetric = \"m\"\n", ""), "table: the paper file lists no [[table]] and no [[figure]]"),
    (("title = \"t\"\n", ""), "paper.title: required key is missing"),
])
def test_a_bad_paper_file_gets_one_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 change: tuple[str, str], fragment: str) -> None:
    paper = tmp_path / "paper.toml"
    paper.write_text(PAPER.replace(*change))
    code = main(["reproduce", str(paper)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert fragment in err, err
    assert err.count("error:") == 1


def test_a_paper_whose_run_folder_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paper = tmp_path / "paper.toml"
    paper.write_text(PAPER)
    assert main(["reproduce", str(paper)]) == 2
    err = capsys.readouterr().err
    assert "paper.toml:7 run[0].path: run 'a':" in err and "is not a run folder (no run.json)" in err


def test_the_example_papers_are_valid() -> None:
    from benchc.runtime.reproduce.core import load_paper

    papers = sorted((Path(__file__).resolve().parents[1] / "papers").glob("*.toml"))
    assert papers
    for paper in papers:
        assert load_paper(paper).paper.run


def test_png_metadata_has_no_software_version() -> None:
    data = Table("d", "t", ["k", "v"], [["a", 1.0], ["b", 2.0]], footer=["benchc 0"])
    png = render("bar", data, "png")
    info = Image.open(io.BytesIO(png)).info
    assert "Software" not in info and info["Description"] == "benchc 0"
    assert hashlib.sha256(png).hexdigest() == hashlib.sha256(render("bar", data, "png")).hexdigest()
