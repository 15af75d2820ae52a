"""`benchc` commands for training data, registered on the main app by benchc/cli.py.

``export`` writes a manifest as fine-tuning conversations; ``check-disjoint`` is a check like
``lock --check``: exit 0 when a training and an evaluation manifest share nothing, 1 when they
do (each overlap listed), 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .cli_common import DEFAULT_CACHE, OutputFormat, check_format, echo_json

ManifestArg = Annotated[Path, typer.Argument(help="a compiled manifest folder")]
CacheOpt = Annotated[Path, typer.Option("--cache", help="the compile cache the manifest(s) were compiled with")]


def export(manifest: ManifestArg,
           fmt: Annotated[str, typer.Option("--format", "-f", help="llava, sharegpt, jsonl or hf-datasets")],
           out: Annotated[Path, typer.Option("--out", "-o", help="folder to write")],
           cache: CacheOpt = DEFAULT_CACHE,
           target: Annotated[str | None, typer.Option("--target", help="the metric target the examples answer "
                                                                       "with (default: the only one)")] = None,
           media: Annotated[str, typer.Option("--media", help="files: copied under media/; embed: inline data: "
                                                              "URIs")] = "files",
           report: Annotated[str, typer.Option("--report", help="text, or json: the result as one JSON "
                                                                "document")] = "text") -> None:
    """Write a manifest's items as fine-tuning conversations (prompt, media, target) with a card."""
    from . import api

    check_format(report)
    result = api.export(manifest, out, fmt, cache_dir=cache, target=target, media=media)
    if report == "json":
        echo_json(result)
        return
    splits = ", ".join(f"{name} {n}" for name, n in result.splits.items())
    skipped = f" ({result.skipped} without a target left out)" if result.skipped else ""
    typer.echo(f"{result.examples} example(s){skipped} as {result.format} -> {result.out_dir} ({splits})")


def check_disjoint(train: Annotated[Path, typer.Argument(help="the training manifest")],
                   evaluation: Annotated[Path, typer.Argument(help="the evaluation manifest")],
                   cache: CacheOpt = DEFAULT_CACHE,
                   max_distance: Annotated[int, typer.Option(
                       "--max-distance", help="images whose dHashes are at most this many bits (of 256) apart "
                                              "are near duplicates; -1: no near-duplicate check")] = 10,
                   text_threshold: Annotated[float, typer.Option(
                       "--text-threshold", help="prompts whose word 3-grams have at least this Jaccard similarity "
                                                "are near duplicates; -1: exact (normalised) prompts only")] = 0.8,
                   fmt: OutputFormat = "text") -> None:
    """Check that a training manifest shares no source record, media object, near-duplicate image
    or prompt (the same once normalised, or a near duplicate) with an evaluation manifest. Exit 1
    when they overlap."""
    from . import api

    check_format(fmt)
    found = api.check_disjoint(train, evaluation, cache_dir=cache, max_distance=max_distance,
                               text_threshold=text_threshold)
    if fmt == "json":
        echo_json(found.as_json())
    elif found.empty:
        typer.echo(f"disjoint: {train} and {evaluation} share no record, media object, near-duplicate image or "
                   "prompt")
    else:
        typer.echo(f"overlap: {train} and {evaluation}")
        for line in found.lines():
            typer.echo(f"  {line}")
    if found.unchecked:
        typer.echo(f"note: {found.unchecked} image(s) not in {cache}: not checked for near duplicates", err=True)
    if not found.empty:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("export")(export)
    app.command("check-disjoint")(check_disjoint)
