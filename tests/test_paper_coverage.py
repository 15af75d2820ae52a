"""`benchc reproduce --list` (issue 30 item 4): every table and figure of the four papers, with
where benchc stands on it, counted from the paper files' [[coverage]] entries instead of kept by
hand. A shipped entry names the [[table]] / [[figure]] that makes it, which the file must have."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

from conftest import ROOT, cli

PAPERS = ("mm_r3", "merlim", "mmcbench", "koala")
SHIPPED = {  # what the paper files made before issue 30 (its audit), and still make
    "mm_r3": {"Table 2"}, "merlim": {"Table 2", "Figure 6", "Figure 7"}, "mmcbench": {"Table 4"},
    "koala": {"Table 4", "Figure 4", "Figure 5", "Figure 9"},
}


def _coverage(name: str) -> list[dict[str, object]]:
    return tomllib.loads((ROOT / "papers" / f"{name}.toml").read_text())["coverage"]


def test_every_paper_lists_its_tables_and_figures() -> None:
    for name in PAPERS:
        entries = _coverage(name)
        refs = [str(e["ref"]) for e in entries]
        assert len(refs) == len(set(refs)) and all(r.startswith(("Table ", "Figure ")) for r in refs), name
        assert SHIPPED[name] <= {str(e["ref"]) for e in entries if e["status"] == "shipped"}, name


def test_the_listing_counts_what_the_files_say() -> None:
    done = cli("reproduce", "--list", "--format", "json", cwd=ROOT, check=True)
    papers = {Path(p["paper"]).stem: p for p in json.loads(done.stdout)["papers"]}
    for name in PAPERS:
        entries = _coverage(name)
        counted = {s: sum(e["status"] == s for e in entries) for s in {str(e["status"]) for e in entries}}
        assert papers[name]["counts"] == counted
    text = cli("reproduce", "--list", cwd=ROOT, check=True).stdout
    total = sum(len(_coverage(n)) for n in PAPERS)
    shipped = sum(e["status"] == "shipped" for n in PAPERS for e in _coverage(n))
    assert f"{shipped} shipped of {total} tables and figures in 5 paper file(s)" in text
    assert "papers/merlim.toml: " in text and "Table 2    shipped" in text


def test_a_shipped_entry_names_a_table_the_file_makes(tmp_path: Path) -> None:
    shutil.copy(ROOT / "papers" / "merlim.toml", tmp_path / "merlim.toml")
    paper = tmp_path / "merlim.toml"
    paper.write_text(paper.read_text().replace('by = ["table2"]', 'by = ["table_2"]', 1))
    done = cli("reproduce", "--list", paper, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no [[table]] or [[figure]] named 'table_2'" in done.stderr and "merlim.toml" in done.stderr


def test_without_a_paper_file_reproduce_asks_for_one(tmp_path: Path) -> None:
    done = cli("reproduce", cwd=tmp_path)
    assert done.returncode == 2 and "give a paper file (or --list)" in done.stderr and "Traceback" not in done.stderr
