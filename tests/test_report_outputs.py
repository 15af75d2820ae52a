"""What report commands write and how missing values read: `report-html RUN -o OTHER` writes
only under OTHER (the run's files stay byte-identical, its report.md included), and a value that
is not there (an empty set of pairs or items) reads "n/a" in every rendered format, never 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchc import api
from benchc.cli import main
from benchc.runtime.report.tables import Table, read_csv, to_latex, to_markdown
from support.scores_run import scores_run

SCORES = {
    "benchmark": {"name": "lab/outputs", "version": "1.0.0"},
    "manifest_digest": "ef" * 32,
    "model": "m",
    "items": 6,
    "metrics": [{
        "name": "mmr3.all",
        "columns": ["color", "groups", "responses", "Acc", "S_GT", "Con", "S_C", "O_all"],
        "rows": [{"color": "blue", "groups": 1, "responses": 1, "pairs": 0, "Acc": 100.0, "S_GT": 80.0,
                  "Con": None, "S_C": None, "O_all": None},
                 {"color": "red", "groups": 1, "responses": 2, "pairs": 1, "Acc": 0.0, "S_GT": 40.0,
                  "Con": 0.0, "S_C": 20.0, "O_all": 14.5}],
        "details": {},
        "notes": ["WARNING: something a reader must see."],
    }],
}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_report_html_with_out_writes_nothing_in_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = scores_run(tmp_path, SCORES)
    assert main(["report", str(run)]) == 0  # the run's own report: RUN/report.md and RUN/report/
    before = _files(run)
    assert "report.md" in before and "report/index.html" in before
    other = tmp_path / "elsewhere"
    assert main(["report-html", str(run), "-o", str(other), "--no-browser"]) == 0
    capsys.readouterr()
    assert _files(run) == before  # byte-identical, report.md included
    markdown = (other / "report.md").read_text()
    assert "`index.html`" in markdown and str(run) not in markdown  # the copy under -o points at its own page
    assert (other / "index.html").is_file() and (other / "tables" / "mmr3.all.md").is_file()


def test_the_api_with_an_out_folder_returns_the_report_md_it_wrote(tmp_path: Path) -> None:
    run = scores_run(tmp_path, SCORES)
    result = api.report_folder(run, tmp_path / "out", browser="off")
    assert result.markdown == tmp_path / "out" / "report.md" and "report.md" in result.files
    assert not (run / "report.md").exists() and not (run / "report").exists()


def test_a_missing_value_reads_n_a_in_every_rendered_format(tmp_path: Path) -> None:
    run = scores_run(tmp_path, SCORES)
    markdown = api.report(run).read_text()
    assert "| blue | 1 | 1 | 100.00 | 80.00 | n/a | n/a | n/a |" in markdown
    assert "| red | 1 | 2 | 0.00 | 40.00 | 0.00 | 20.00 | 14.50 |" in markdown  # a measured 0 stays 0
    assert "> WARNING: something a reader must see." in markdown
    tables = run / "report" / "tables"
    assert r"blue & 1 & 1 & 100.00 & 80.00 & n/a & n/a & n/a \\" in (tables / "mmr3.all.tex").read_text()
    assert "<td class=\"num\">n/a</td>" in (run / "report" / "index.html").read_text()
    # CSV is data: an empty cell, which pandas and read_csv take as missing
    _, rows = read_csv((tables / "mmr3.all.csv").read_text())
    assert rows[0] == ["blue", "1", "1", "100.0", "80.0", "", "", ""]


def test_renderers_write_none_as_n_a() -> None:
    table = Table("t", "t", ["model", "Con"], [["a", None], ["b", 0.0]])
    assert "| a | n/a |" in to_markdown(table) and "| b | 0.00 |" in to_markdown(table)
    assert r"a & n/a \\" in to_latex(table)
