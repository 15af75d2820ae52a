"""``benchc reproduce --list``: every table and figure of each paper, and where benchc stands.

A paper file's ``[[coverage]]`` entries list each table and figure of its paper that reports
numbers (``runtime/reproduce/core.py`` ``PaperCoverage``); an entry is shipped when the file's own
``[[table]]`` / ``[[figure]]`` entries make it (checked when the file is read), else it says
what it needs. The listing is made from the files, so the coverage of the papers is counted,
not kept by hand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchc.compiler.errors import Problem

from .core import COVERAGE_STATUS, PaperCoverage, PaperError, load_paper

PAPERS_FOLDER = Path("papers")
"""Where ``--list`` looks without paper files named: the repository's paper files."""


@dataclass(frozen=True)
class PaperCoverageReport:
    path: Path
    title: str
    entries: list[PaperCoverage]

    def counts(self) -> dict[str, int]:
        found = Counter(e.status for e in self.entries)
        return {status: found[status] for status in COVERAGE_STATUS if found[status]}

    def to_json(self) -> dict[str, Any]:
        return {"paper": str(self.path), "title": self.title, "counts": self.counts(),
                "entries": [e.model_dump(exclude_none=True) for e in self.entries]}


def paper_files(given: list[Path]) -> list[Path]:
    """The paper files named, or every ``papers/*.toml`` under the working folder."""
    if given:
        return list(given)
    found = sorted(PAPERS_FOLDER.glob("*.toml"))
    if not found:
        raise PaperError(Problem(f"no paper files in {PAPERS_FOLDER}/", hint="name paper files, or run from the "
                                                                           "folder that holds papers/"))
    return found


def coverage(paths: list[Path]) -> list[PaperCoverageReport]:
    out = []
    for path in paper_files(paths):
        paper = load_paper(path).paper
        out.append(PaperCoverageReport(path, paper.paper.title, list(paper.coverage)))
    return out


def render(reports: list[PaperCoverageReport]) -> str:
    """Per paper, each table and figure with its status, then the totals."""
    lines: list[str] = []
    total: Counter[str] = Counter()
    for report in reports:
        counts = report.counts()
        total.update(counts)
        shipped = counts.get("shipped", 0)
        lines.append(f"{report.path}: {shipped} shipped of {len(report.entries)}"
                     + (f" ({_counted(counts)})" if report.entries else " (no [[coverage]] entries)"))
        for entry in report.entries:
            what = ", ".join(entry.by) if entry.status == "shipped" else entry.needs
            lines.append(f"  {entry.ref:<10} {entry.status:<13} {entry.title}  [{what}]")
    listed = sum(total.values())
    lines.append(f"{total.get('shipped', 0)} shipped of {listed} tables and figures in {len(reports)} paper file(s)"
                 + (f" ({_counted(dict(total))})" if listed else ""))
    return "\n".join(lines)


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in COVERAGE_STATUS if counts.get(s))
