"""`benchc` commands of the reports family, registered on the main app by benchc/cli.py:
``report-html`` (the report folder with explicit cache, store and breakdowns) and ``reproduce``
(a paper's tables and figures, regenerated and checked against recorded hashes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .cli_common import DEFAULT_CACHE, DEFAULT_STORE, OutputFormat, check_format, echo_json


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""

    @app.command("report-html")
    def report_html(
            run_dir: Annotated[Path, typer.Argument(help="a scored run folder")],
            out: Annotated[Path | None,
                           typer.Option("--out", "-o", help="report folder (default: RUN_DIR/report)")] = None,
            cache: Annotated[Path,
                             typer.Option("--cache", help="the compile cache the run's media are in")] = DEFAULT_CACHE,
            store: Annotated[Path, typer.Option("--store", help="the response store (spoken answers)")] = DEFAULT_STORE,
            manifest: Annotated[Path | None, typer.Option("--manifest", help="the run's manifest, if it moved")] = None,
            by: Annotated[list[str] | None, typer.Option("--by", help="add a breakdown by this item attribute "
                                                          "(re-scored), e.g. --by color")] = None,
            max_groups: Annotated[int, typer.Option("--max-groups", min=0, help="groups in the item browser")] = 100,
            no_browser: Annotated[bool, typer.Option("--no-browser", help="leave the item browser out")] = False,
            fmt: OutputFormat = "text",
    ) -> None:
        """Write a run's report folder: tables (Markdown, LaTeX, CSV), figures (PNG, SVG), and
        index.html with an item browser showing each group's media, prompts, responses and scores."""
        from benchc import api

        check_format(fmt)
        result = api.report_folder(run_dir, out, cache_dir=cache, store_dir=store, manifest_dir=manifest,
                                   by=by or [], max_groups=max_groups, browser="off" if no_browser else "on")
        kinds = {}
        for name in result.files:
            top = name.split("/", 1)[0] if "/" in name else name
            kinds[top] = kinds.get(top, 0) + 1
        media = result.folder / "media"
        if media.is_dir():
            kinds["media"] = sum(1 for _ in media.iterdir())
        if fmt == "json":
            echo_json({"folder": result.folder, "index": result.folder / "index.html", "files": sorted(result.files),
                       "counts": kinds})
            return
        typer.echo(", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())) + f" -> {result.folder}")
        typer.echo(f"open {result.folder / 'index.html'}")

    @app.command("reproduce")
    def reproduce(
            paper: Annotated[Path | None, typer.Argument(help="a paper file (.toml) listing runs, tables and "
                                                              "figures")] = None,
            record: Annotated[bool, typer.Option("--record", help="write the hashes of what is generated now "
                                                  "into the paper file")] = False,
            make: Annotated[bool, typer.Option("--make/--no-make", help="compile and run, from its [run.make], "
                                               "each run whose folder is missing")] = True,
            list_: Annotated[bool, typer.Option("--list", help="list each table and figure of the paper (default: of "
                                                "every papers/*.toml) with its status; nothing is made")] = False,
            fmt: OutputFormat = "text",
    ) -> None:
        """Regenerate a paper's tables and figures from its pinned runs (re-scored from their
        responses and manifests) and check them against the hashes recorded in the paper file;
        any difference fails (exit 1) and says which artifact and which cells changed. With
        --list, say instead which of the paper's tables and figures are shipped, and what the
        others need."""
        from benchc import api

        check_format(fmt)
        if list_:
            _list_coverage(paper, fmt)
            return
        if paper is None:
            raise typer.BadParameter("give a paper file (or --list)", param_hint="PAPER")
        result = api.reproduce(paper, record=record, check=False, make=make)
        if fmt == "json":  # then the check: drift still fails (exit 1), its message on stderr
            echo_json({"paper": paper, "output": result.output, "recorded": result.recorded, "made": result.made,
                       "files": result.files, "status": result.status, "drift": result.drift,
                       "ok": not result.drift})
            api.check_reproduction(result, paper)
            return
        for run_id in result.made:
            typer.echo(f"made run {run_id!r} from its [run.make] (compiled and run)")
        if record and not result.drift:
            typer.echo(f"recorded {len(result.files)} file(s) in {paper}; artifacts in {result.output}")
        else:
            for name, state in result.status.items():
                typer.echo(f"{state.upper() if state != 'ok' else state:>7}  {name}")
        api.check_reproduction(result, paper)
        if not record:
            typer.echo(f"all {len(result.files)} file(s) match the recorded hashes -> {result.output}")


def _list_coverage(paper: Path | None, fmt: str) -> None:
    from benchc.runtime.reproduce.paper_coverage import coverage, render

    reports = coverage([paper] if paper is not None else [])
    if fmt == "json":
        echo_json({"papers": [r.to_json() for r in reports]})
        return
    typer.echo(render(reports))
