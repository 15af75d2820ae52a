"""`benchc` commands of the diff family, registered on the main app by benchc/cli.py.

``diff`` is a check like ``lock --check``: exit 0 when the two sides are equal, 1 when they
differ (the diff is printed either way), 2 on bad input (one message, no traceback).
``diff-runs`` and ``plan`` report and exit 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .cli_common import DEFAULT_CACHE, DEFAULT_STORE

FormatOpt = Annotated[str, typer.Option("--format", "-f", help="text, markdown or json")]
ExamplesOpt = Annotated[int, typer.Option("--examples", "-n", min=0, help="examples shown per kind of change")]


def _check_format(fmt: str) -> str:
    from .compiler.diff.inputs import DiffError
    from .compiler.diff.render import FORMATS
    from .compiler.errors import Problem

    if fmt not in FORMATS:
        raise DiffError(Problem(f"unknown format {fmt!r}", key="--format", hint=f"use one of: {', '.join(FORMATS)}"))
    return fmt


def diff(a: Annotated[str, typer.Argument(help="a spec, manifest folder or lock file; PATH@REV reads it from git")],
         b: Annotated[str, typer.Argument(help="the other side, same forms")],
         fmt: FormatOpt = "text",
         set_: Annotated[list[str] | None, typer.Option("--set", help="override a key of both specs")] = None,
         spec_only: Annotated[bool, typer.Option("--spec-only",
                                                 help="compare spec documents only, compile nothing")] = False,
         examples: ExamplesOpt = 5,
         cache: Annotated[Path, typer.Option("--cache", help="compile cache")] = DEFAULT_CACHE,
         store: Annotated[Path, typer.Option("--store", help="response store (model steps)")] = DEFAULT_STORE,
         data_root: Annotated[list[Path] | None, typer.Option("--data-root", help="extra data folder")] = None) -> None:
    """What changed between two versions of a benchmark: spec keys (before -> after), lock
    fields, and items added, removed and changed with their causes. Exit 1 when they differ."""
    from . import api
    from .compiler.diff.render import render

    _check_format(fmt)
    result = api.diff(a, b, overrides=set_, cache_dir=cache, store_dir=store, data_roots=data_root,
                      items=not spec_only, examples=examples)
    typer.echo(render(result, fmt))
    if not result.equal:
        raise typer.Exit(1)


def diff_runs(run_a: Annotated[Path, typer.Argument(help="a run folder")],
              run_b: Annotated[Path, typer.Argument(help="another run folder")],
              fmt: FormatOpt = "text",
              stage: Annotated[str | None,
                               typer.Option("--stage", help="stage compared (default: each run's last)")] = None,
              resamples: Annotated[int, typer.Option("--resamples", min=100, help="bootstrap resamples")] = 10_000,
              seed: Annotated[int, typer.Option("--seed", min=0, help="bootstrap seed")] = 0,
              examples: ExamplesOpt = 5,
              manifest_a: Annotated[Path | None,
                                    typer.Option("--manifest-a", help="run A's manifest, if it moved")] = None,
              manifest_b: Annotated[Path | None,
                                    typer.Option("--manifest-b", help="run B's manifest, if it moved")] = None,
              ) -> None:
    """Compare two runs item by item: flipped items, per-measure paired differences with
    bootstrap confidence intervals, McNemar's test for binary measures."""
    from . import api
    from .runtime.report.diff_runs import render_runs

    _check_format(fmt)
    result = api.diff_runs(run_a, run_b, stage=stage, resamples=resamples, seed=seed, examples=examples,
                           manifest_a=manifest_a, manifest_b=manifest_b)
    typer.echo(render_runs(result, fmt), nl=False)


def plan(manifest: Annotated[Path, typer.Argument(help="a compiled manifest folder")],
         model: Annotated[str | None, typer.Option("--model", "-m", help="model under test")] = None,
         backend: Annotated[list[str] | None, typer.Option("--backend", help="STAGE=BACKEND")] = None,
         store: Annotated[Path, typer.Option("--store", help="response store folder")] = DEFAULT_STORE,
         cache: Annotated[Path, typer.Option("--cache", help="compile cache")] = DEFAULT_CACHE,
         text_only: Annotated[bool, typer.Option("--text-only", help="as `run --text-only`")] = False,
         fmt: FormatOpt = "text") -> None:
    """How many of a run's requests are cached and how many would run, per stage and backend;
    sends nothing."""
    import json

    from . import api

    if _check_format(fmt) == "markdown":
        fmt = "text"
    plans = api.plan(manifest, model=model, cache_dir=cache, store_dir=store,
                     backends=api.parse_backends(backend or []), text_only=text_only)
    if fmt == "json":
        typer.echo(json.dumps([p.as_json() for p in plans], indent=2))
        return
    for stage in plans:
        typer.echo(stage.line())


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("diff")(diff)
    app.command("diff-runs")(diff_runs)
    app.command("plan")(plan)
