"""``benchc calibrate``: perturbation strength measures (kornia) per op and severity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .cli_common import DEFAULT_CACHE, DEFAULT_STORE, OutputFormat, check_format, echo_json


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""

    @app.command("calibrate")
    def calibrate(
            spec: Annotated[Path, typer.Argument(help="a spec (.toml) or a compiled manifest folder")],
            sample: Annotated[int | None, typer.Option(
                "--sample", "-n", min=1, help="groups measured, drawn with --seed (default: all)")] = None,
            seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the sample of groups")] = 0,
            json_file: Annotated[Path | None, typer.Option("--json", help="also write the numbers to this JSON "
                                                            "file (an infinite PSNR is null)")] = None,
            set_: Annotated[list[str] | None, typer.Option("--set", help="override a spec key: --set sample.n=20")]
            = None,
            cache: Annotated[Path, typer.Option("--cache", help="content-addressed compile cache")] = DEFAULT_CACHE,
            data_root: Annotated[list[Path] | None, typer.Option("--data-root",
                                                                 help="extra folder specs may read data from")] = None,
            store: Annotated[Path, typer.Option("--store", help="response store folder")] = DEFAULT_STORE,
            fmt: OutputFormat = "text",
    ) -> None:
        """How strong each op is at each setting: SSIM, PSNR, colour and edge change of every image
        variant against its original (kornia), over a seeded sample of groups, as n, min, median,
        mean and max per node, op and swept setting. Measurements only: they never enter a digest."""
        from benchc import api
        from benchc.calibrate import render_text

        check_format(fmt)
        result = api.calibrate(spec, sample=sample, seed=seed, cache_dir=cache, data_roots=data_root,
                               overrides=set_, store_dir=store)
        if json_file is not None:
            json_file.parent.mkdir(parents=True, exist_ok=True)
            json_file.write_text(json.dumps(result.as_json(), indent=2, sort_keys=True, allow_nan=False) + "\n",
                                 encoding="utf-8")
        if fmt == "json":
            echo_json(result.as_json())
            return
        typer.echo(render_text(result), nl=False)
        if json_file is not None:
            typer.echo(f"wrote {json_file}")
