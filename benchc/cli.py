"""The ``benchc`` command line. Thin: every command calls benchc.api.

A user error prints one clear message (file, line, key path, hint) and exits 2, without a
traceback; so do a full disk (ENOSPC, EDQUOT) and a damaged SQLite file of the cache or the
response store; a failed check exits 1; Ctrl-C exits 130 and a rerun resumes.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import sqlite3
import sys
import tempfile
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from .cli_common import (DEFAULT_CACHE, DEFAULT_STORE, OutputFormat, check_format, configure_logging, echo_json,
                         package_version, reset_logging, usage_error_text)

if TYPE_CHECKING:
    from .reference import ParamRow

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Compile, run, score and report consistency benchmarks of multimodal models.")

SpecArg = Annotated[Path, typer.Argument(help="a benchmark spec (.toml)")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="override a spec key: --set sample.n=20")]
CacheOpt = Annotated[Path, typer.Option("--cache", help="content-addressed compile cache")]
StoreOpt = Annotated[Path, typer.Option("--store", help="response store folder")]
WorkersOpt = Annotated[int, typer.Option("--workers", "-j", min=1, help="worker processes")]
RootOpt = Annotated[list[Path] | None, typer.Option("--data-root", help="extra folder specs may read data from")]
BackendOpt = Annotated[list[str] | None, typer.Option(
    "--backend", help="STAGE=BACKEND: answer a stage with another backend, e.g. transcript=pocketsphinx")]
NoVersionCheckOpt = Annotated[bool, typer.Option(
    "--no-version-check", help="compile a bundled spec even if it moved without a version bump (scratch work)")]
TextOnlyOpt = Annotated[bool, typer.Option(
    "--text-only", help="leave the images out of every request (an LLM-only ablation, as MERLIM's)")]
ExecutorOpt = Annotated[str, typer.Option(
    "--executor", help="local, or ray: each of --workers Ray actors holds one backend (one GPU each on CUDA)")]
VerifyOpt = Annotated[int, typer.Option(
    "--verify", min=0, metavar="N", help="after the run, ask N answered requests again (a seeded choice) and "
                                         "report how many answers differ (run.json, the report; a warning)")]
RayAddressOpt = Annotated[str | None, typer.Option(
    "--ray-address", help="a running Ray cluster (HOST:PORT) for --executor ray; default: start a local one")]

log = logging.getLogger("benchc.cli")


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"benchc {package_version()}")
        raise typer.Exit(0)


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", "-V", is_eager=True, callback=_show_version,
                                                   help="print benchc's version and exit")] = False,
             verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, show_default=False,
                                                  help="log what benchc does to stderr (-vv: in detail)")] = 0,
             plugin: Annotated[list[str] | None, typer.Option(
                 "--plugin", metavar="MODULE", help="import MODULE first: its ops, sources, backends and metrics "
                                                    "register themselves (repeatable; installed plugins need no flag)")]
             = None,
             ) -> None:
    """Compile, run, score and report consistency benchmarks of multimodal models."""
    from .compiler.plugins import load_plugin

    configure_logging(verbose)
    for module in plugin or []:
        load_plugin(module)
        log.info("plugin %s loaded", module)


def _say(text: str) -> None:
    typer.echo(text, err=True)


SPEC_ONLY = ("spec only: data not loaded; `--data` also loads the source and checks the record "
             "fields and data paths")


@app.command()
def validate(spec: SpecArg, set_: SetOpt = None,
             data: Annotated[bool, typer.Option("--data", help="also load the source (no ops run, nothing "
                                                               "written) and check the record fields, "
                                                               "media and data paths the spec names")] = False,
             data_root: RootOpt = None, fmt: OutputFormat = "text") -> None:
    """Check a spec and report every problem in it at once (with --data, against its data too)."""
    from . import api

    check_format(fmt)
    if data:
        resolved, found = api.validate_data(spec, set_, data_roots=data_root)
    else:
        resolved, found = api.validate(spec, set_, data_roots=data_root), None
    s = resolved.loaded.spec
    if fmt == "json":
        echo_json({"ok": True, "spec": spec, "benchmark": {"name": s.benchmark.name, "version": s.benchmark.version},
                   "source": s.source.loader, "nodes": len(s.node), "stages": len(s.stage), "metrics": len(s.metric),
                   "data": None if found is None else {"records": found.records, "skipped": found.skipped,
                                                       "checked": found.checked, "kept": found.kept}})
        return
    typer.echo(f"ok: {spec} ({s.benchmark.name} {s.benchmark.version}): source {s.source.loader}, "
               f"{len(s.node)} node(s), {len(s.stage)} stage(s), {len(s.metric)} metric(s)")
    if found is None:
        typer.echo(SPEC_ONLY)
        return
    skipped = f", {found.skipped} malformed row(s) skipped" if found.skipped else ""
    typer.echo(f"data: {found.records} record(s) loaded{skipped}; the first {found.checked} checked "
               f"({found.kept} pass the filters): every record field, media and data path the spec "
               "names is there")


@app.command("compile")
def compile_(spec: SpecArg,
             out: Annotated[Path, typer.Option("--out", "-o", help="manifest folder to write")],
             set_: SetOpt = None, cache: CacheOpt = DEFAULT_CACHE, workers: WorkersOpt = 1,
             data_root: RootOpt = None, store: StoreOpt = DEFAULT_STORE,
             no_memo: Annotated[bool, typer.Option("--no-memo", help="recompute even if unchanged")] = False,
             repair: Annotated[bool, typer.Option("--repair", help="first check every object of the compile cache "
                                                  "against its key, delete the damaged ones and "
                                                  "recompute them")] = False,
             no_version_check: NoVersionCheckOpt = False, fmt: OutputFormat = "text") -> None:
    """Compile a spec into a manifest (items.parquet + lock.json + spec.json). Model steps
    (nodes that ask a model) keep their answers in the response store (--store)."""
    import time

    from . import api

    check_format(fmt)
    log.info("compile %s -> %s (cache %s, store %s, %d worker(s))", spec, out, cache, store, workers)
    started = time.monotonic()
    result = api.compile(spec, out, cache_dir=cache, data_roots=data_root, workers=workers,
                         overrides=set_, use_memo=not no_memo, store_dir=store, progress=True,
                         check_version=not no_version_check, repair=repair)
    lock = result.lock
    log.info("compiled %d item(s) in %.1fs: %d op output(s) computed%s", lock["item_count"],
             time.monotonic() - started, result.ops_run, ", from the memo" if result.memo_hit else "")
    if fmt == "json":
        echo_json({"benchmark": lock["benchmark"], "item_count": lock["item_count"],
                   "manifest_digest": lock["manifest_digest"], "manifest": out, "memo_hit": result.memo_hit,
                   "ops_run": result.ops_run, "repaired": result.repaired if repair else None,
                   "select": lock.get("select"),
                   "model_steps": {"prompts": result.model_prompts, "requests": result.model_requests,
                                   "calls": result.model_calls} if result.model_prompts else None})
        return
    if repair:
        keys = ", ".join(k[:16] + "..." for k in result.repaired[:3]) + (", ..." if len(result.repaired) > 3 else "")
        typer.echo(f"repair: {len(result.repaired)} damaged object(s) in {cache} deleted and recomputed"
                   + (f" ({keys})" if result.repaired else ""))
    typer.echo(f"{lock['benchmark']['name']} {lock['benchmark']['version']}: {lock['item_count']} items, "
               f"manifest {lock['manifest_digest'][:16]}{' (unchanged)' if result.memo_hit else ''} -> {out}")
    if "select" in lock:
        chosen = lock["select"]
        how = (f"hardest text under {chosen['probes']} probes" if chosen.get("kind") == "text" else
               f"least consistent under {len(chosen['models'])} model(s) and {chosen['probes']} probes")
        typer.echo(f"select: kept {chosen['kept']} of {chosen['candidates']} candidate records, {how}")
    if result.model_prompts:
        requests, calls = result.model_requests or 0, result.model_calls or 0
        typer.echo(f"model steps: {result.model_prompts} prompts, {requests} distinct requests: {calls} "
                   f"answered by a model, {requests - calls} from the response store")


SHOW_FORMATS = ("text", "json", "jsonl")


@app.command()
def show(manifest: Annotated[Path, typer.Argument(help="a compiled manifest folder")],
         where: Annotated[list[str] | None,
                          typer.Option("--where", "-w", help="KEY=VALUE on a column or attribute")] = None,
         limit: Annotated[int, typer.Option("--limit", "-n")] = 20,
         fmt: Annotated[str, typer.Option("--format", "-f", help="text (a table), json (one JSON list) or "
                                                                 "jsonl (one JSON object per line)")] = "text",
         as_json: Annotated[bool, typer.Option("--json",
                                               help="deprecated: the same as --format jsonl")] = False) -> None:
    """List the items of a manifest, filtered by columns or perturbation attributes."""
    from .compiler.show import select_items

    check_format(fmt, SHOW_FORMATS)
    rows = select_items(manifest, where or [], limit)
    if fmt == "json":
        echo_json(rows)
        return
    if as_json or fmt == "jsonl":
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False, sort_keys=True))
        return
    columns = ("item_id", "attrs", "prompt", "media", "targets")
    cells = [(row["item_id"], json.dumps(row["attrs"], ensure_ascii=False), row["prompt"][:60],
              ", ".join(f"{m['kind']}:{m['sha256'][:10]}" for m in row["media"]),
              json.dumps(row["targets"], ensure_ascii=False)) for row in rows]
    if not sys.stdout.isatty():  # pipes get plain tab-separated lines, never wrapped
        for line in (columns, *cells):
            typer.echo("\t".join(line))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*columns)
    for line in cells:
        table.add_row(*line)
    Console().print(table)


@app.command()
def preview(spec: Annotated[Path, typer.Argument(help="a spec (.toml) or a compiled manifest folder")],
            item: Annotated[str, typer.Argument(help="an item id, or a group/record id (all its items)")],
            out: Annotated[Path | None,
                           typer.Option("--out", "-o", help="folder to write (default preview/<item>/)")] = None,
            set_: SetOpt = None, cache: CacheOpt = DEFAULT_CACHE, data_root: RootOpt = None,
            store: StoreOpt = DEFAULT_STORE, fmt: OutputFormat = "text") -> None:
    """Write a contact sheet (PNG), WAV files or a text listing of an item's variants."""
    from . import api

    check_format(fmt)
    result = api.preview(spec, item, out, cache_dir=cache, data_roots=data_root, overrides=set_,
                         store_dir=store)
    if fmt == "json":
        echo_json(result)
        return
    typer.echo(f"{result.items} {result.kind} item(s) of {result.group_id}"
               f"{' + original' if result.original else ''} -> {result.out_dir}")


@app.command()
def run(manifest: Annotated[Path, typer.Argument(help="a compiled manifest folder")],
        out: Annotated[Path | None, typer.Option("--out", "-o", help="run folder to write")] = None,
        model: Annotated[str | None,
                         typer.Option("--model", "-m", help="model under test, e.g. espeak or hf:/path")] = None,
        backend: BackendOpt = None,
        cache: CacheOpt = DEFAULT_CACHE, store: StoreOpt = DEFAULT_STORE, workers: WorkersOpt = 1,
        text_only: TextOnlyOpt = False, executor: ExecutorOpt = "local",
        ray_address: RayAddressOpt = None, verify: VerifyOpt = 0,
        plan: Annotated[bool, typer.Option("--plan", help="only say how many requests are cached and how "
                                                          "many would run, per stage and backend")] = False,
        fmt: OutputFormat = "text") -> None:
    """Run a manifest's requests through the backends; answers are cached by content."""
    from . import api
    from .compiler.errors import Problem, RunError

    check_format(fmt)
    overrides = api.parse_backends(backend or [])
    if plan:
        plans = api.plan(manifest, model=model, cache_dir=cache, store_dir=store, backends=overrides,
                         text_only=text_only)
        if fmt == "json":  # as `benchc plan --format json`
            echo_json([stage.as_json() for stage in plans])
            return
        for stage in plans:
            typer.echo(stage.line())
        return
    if out is None:
        raise RunError(Problem("benchc run needs --out/-o RUN_DIR (or --plan)", key="--out"))
    log.info("run %s -> %s (model %s, cache %s, store %s, %d worker(s), executor %s)", manifest, out, model,
             cache, store, workers, executor)
    outcomes = api.run(manifest, out, model=model, cache_dir=cache, store_dir=store, workers=workers,
                       backends=overrides, text_only=text_only, executor=executor, ray_address=ray_address,
                       verify=verify)
    verified = _verified(out) if verify else None
    if fmt == "json":
        echo_json({"run": out, "stages": outcomes, **({"verify": verified} if verified else {})})
        return
    for outcome in outcomes:
        typer.echo(f"{outcome.stage}: {outcome.requests} requests to {outcome.backend} "
                   f"({outcome.cached} cached, {outcome.ran} run)")
    if verified:
        typer.echo(f"verify: {verified['differ']} of {verified['asked']} re-asked request(s) answered otherwise "
                   "than stored")


def _verified(run_dir: Path) -> dict[str, Any] | None:
    """run.json's ``verify`` record of the run just written."""
    from .runtime.run.runfolder import read_run_record

    record = read_run_record(run_dir).verify
    return record.to_json() if record is not None else None


SCORE_FORMATS = ("benchc", "lm-eval", "inspect", "json")


@app.command()
def score(run_dir: Annotated[Path, typer.Argument(help="a run folder")],
          manifest: Annotated[Path | None, typer.Option(
              "--manifest", help="the run's manifest, if it moved (its digest must match the run's)")] = None,
          cache: CacheOpt = DEFAULT_CACHE, store: StoreOpt = DEFAULT_STORE,
          format_: Annotated[str, typer.Option(
              "--format", "-f", help="benchc (scores.json), lm-eval: also RUN_DIR/lm-eval/<model>/, lm-evaluation-"
                                     "harness's output folder (results_<datetime>.json, a samples file per task), "
                                     "inspect: also an inspect-ai eval log in RUN_DIR/inspect/ (`inspect view` "
                                     "opens it), or json: scores.json, also printed on stdout")] = "benchc") -> None:
    """Score a run's responses with the spec's metrics (writes scores.json)."""
    from . import api
    from .compiler.errors import BenchcError, Problem

    if format_ not in SCORE_FORMATS:
        raise BenchcError(Problem(f"unknown --format {format_!r}", key="--format",
                                  hint=f"one of {', '.join(SCORE_FORMATS)}"))
    if format_ != "lm-eval":
        scores, results = api.score(run_dir, manifest, cache_dir=cache, store_dir=store), []
    else:
        scores, results = api.score_for_export(run_dir, manifest, cache_dir=cache, store_dir=store)
    if format_ == "json":
        echo_json(scores)
    else:
        typer.echo(f"{len(scores['metrics'])} metric(s) -> {run_dir / 'scores.json'}")
    for metric in scores["metrics"]:  # numbers that may mislead are said where they are made
        for note in metric.get("notes", []):
            if str(note).startswith("WARNING:"):
                typer.echo(f"  {metric.get('name')}: {note}", err=True)
    if format_ == "lm-eval":
        export = api.export_lm_eval(run_dir, scores, results, manifest, cache_dir=cache, store_dir=store)
        media = f", {export.media} media file(s)" if export.media else ""
        typer.echo(f"lm-eval: {export.tasks} task(s) -> {export.results}; {export.samples_written} sample(s) in "
                   f"{len(export.samples)} samples file(s){media} -> {export.folder}")
    if format_ == "inspect":
        log = api.export_inspect(run_dir, scores, manifest)
        typer.echo(f"inspect: {log.samples} sample(s), {log.scores} score(s) -> {log.path}")


@app.command("import")
def import_(manifest: Annotated[Path, typer.Argument(help="the compiled manifest the answers are for")],
            answers: Annotated[Path, typer.Argument(help="answers: JSONL or CSV (item_id/id or prompt, and "
                                                          "response/answer), an lm-eval/lmms-eval "
                                                          "--log_samples JSONL, or an inspect-ai log "
                                                          "(.eval or .json)")],
            out: Annotated[Path, typer.Option("--out", "-o", help="run folder to write")],
            key: Annotated[str, typer.Option("--key", help="id: match rows by item id; prompt: by the rendered "
                                                           "prompt (and media_sha256 where prompts repeat)")] = "id",
            format_: Annotated[str, typer.Option("--format", help="auto, jsonl, csv, lm-eval, lmms-eval or "
                                                                  "inspect")] = "auto",
            model: Annotated[str | None, typer.Option("--model", "-m", help="the name of the model that answered "
                                                                            "(for the scores and the report)")] = None,
            stage: Annotated[str | None, typer.Option("--stage", help="the stage of rows that name none "
                                                                      "(default: the stage the metrics read)")] = None,
            answer_column: Annotated[str | None, typer.Option("--answer-column", help="the column (JSONL key) "
                                                                                      "holding the answers")] = None,
            id_column: Annotated[str | None, typer.Option("--id-column", help="the column holding item ids "
                                                                              "(--key id)")] = None,
            allow_missing: Annotated[bool, typer.Option("--allow-missing", help="import even if items have no "
                                                                                "answer: they score as unanswered, "
                                                                                "and run.json counts them")] = False,
            ignore_unmatched: Annotated[bool, typer.Option("--ignore-unmatched", help="skip (and count) rows of "
                                                                                      "items not in the "
                                                                                      "manifest")] = False,
            filter_: Annotated[str | None, typer.Option("--filter", help="the lm-eval filter whose lines are read "
                                                                         "(default: the file's first)")] = None,
            variant: Annotated[str | None, typer.Option("--variant", help="the variant (graph node) that answers "
                                                                          "keyed by record id go to (default: the "
                                                                          "record's original)")] = None) -> None:
    """Import answers produced outside benchc into a run folder, checked against a compiled
    manifest, so that `benchc score` and `benchc report` read it like a `benchc run` folder."""
    from . import api

    result = api.import_answers(manifest, answers, out, key=key, format=format_, model=model, stage=stage,
                                answer_column=answer_column, id_column=id_column, allow_missing=allow_missing,
                                ignore_unmatched=ignore_unmatched, filter=filter_, variant=variant)
    bench = result.benchmark
    typer.echo(f"imported {result.answers} answer(s) ({result.format}, by {result.key}) for {result.items} item(s) "
               f"of {bench['name']} {bench['version']}, manifest {result.manifest_digest[:16]} -> {result.run_dir}")
    lacking = result.missing - result.missing_by_design
    for count, what in ((result.repeats, "identical repeated row(s) counted once"),
                        (result.unmatched_ignored, "row(s) of items outside the manifest skipped (--ignore-unmatched)"),
                        (lacking, f"of {result.expected} answer(s) missing, recorded as unanswered "
                                  "(--allow-missing)")):
        if count:
            typer.echo(f"  {count} {what}")
    if result.note:
        typer.echo(f"  read {result.note}")
    if result.unanswered_variants:
        shown = ", ".join(f"{name} ({n} items)" for name, n in result.unanswered_variants.items())
        typer.echo(f"  variants the file answers no item of, recorded as unanswered: {shown}")


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="a scored run folder")],
           cache: CacheOpt = DEFAULT_CACHE, store: StoreOpt = DEFAULT_STORE, fmt: OutputFormat = "text") -> None:
    """Write a scored run's report (report.md, and report/ with tables, figures and an HTML item
    browser) and print report.md."""
    from . import api

    check_format(fmt)
    path = api.report(run_dir, cache_dir=cache, store_dir=store)
    if fmt == "json":
        echo_json({"report": path, "markdown": path.read_text()})
        return
    typer.echo(path.read_text())


@app.command("eval")
def evaluate(spec: SpecArg,
             out: Annotated[Path, typer.Option("--out", "-o", help="folder for manifest/, run/ and the report")],
             model: Annotated[str | None, typer.Option("--model", "-m")] = None,
             set_: SetOpt = None, cache: CacheOpt = DEFAULT_CACHE, store: StoreOpt = DEFAULT_STORE,
             workers: WorkersOpt = 1, data_root: RootOpt = None, backend: BackendOpt = None,
             text_only: TextOnlyOpt = False, executor: ExecutorOpt = "local",
             ray_address: RayAddressOpt = None, no_version_check: NoVersionCheckOpt = False,
             verify: VerifyOpt = 0, fmt: OutputFormat = "text") -> None:
    """compile + run + score + report in one command."""
    from . import api

    check_format(fmt)
    result = api.evaluate(spec, out, model=model, cache_dir=cache, store_dir=store, workers=workers,
                          overrides=set_, data_roots=data_root, backends=api.parse_backends(backend or []),
                          text_only=text_only, executor=executor, ray_address=ray_address,
                          check_version=not no_version_check, verify=verify)
    if fmt == "json":
        echo_json({"manifest": result.manifest_dir, "run": result.run_dir, "report": result.report_path,
                   "scores": result.scores})
        return
    typer.echo(result.report_path.read_text())
    typer.echo(f"report: {result.report_path}")


@app.command()
def lock(specs: Annotated[list[Path] | None, typer.Argument(help="specs (default: specs/**/*.toml)")] = None,
         check: Annotated[bool, typer.Option("--check", help="fail if a committed lock is out of date")] = False,
         generated: Annotated[Path, typer.Option("--generated")] = Path("generated"),
         cache: CacheOpt = DEFAULT_CACHE, store: StoreOpt = DEFAULT_STORE, fmt: OutputFormat = "text") -> None:
    """Write (or --check) the committed lock files of specs under generated/."""
    from . import api
    from .compiler.errors import CheckFailed

    check_format(fmt)
    paths = specs or sorted(Path("specs").rglob("*.toml"))
    failed = []
    done: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as work:
        for spec in paths:
            if check:
                problems = api.check_lock(spec, generated, cache, Path(work), store)
                failed += problems
                done.append({"spec": spec, "ok": not problems, "problems": [p.render() for p in problems]})
                if fmt == "text":
                    typer.echo(f"{'FAIL' if problems else 'ok'}: {spec}")
            else:
                wrote = api.write_lock(spec, generated, cache, Path(work), store)
                done.append({"spec": spec, "wrote": wrote})
                if fmt == "text":
                    typer.echo(f"wrote {wrote}")
    if fmt == "json":
        echo_json(done)
    if failed:
        raise CheckFailed(failed)


@app.command()
def ops() -> None:
    """List the registered ops with their parameters: allowed values, defaults and meanings."""
    from .compiler.ops import OPS
    from .reference import param_rows

    for name, op in OPS.items():
        typer.echo(f"{name} v{op.version}  ({op.input_kind or 'record'} -> {op.output_kind})  {op.describe()}")
        _echo_params(param_rows(op.Params))


@app.command()
def sources() -> None:
    """List the source loaders with their parameters and the fields and media of their records."""
    from .compiler.sources import SOURCES
    from .reference import first_line, param_rows

    for name, loader in SOURCES.items():
        typer.echo(f"{name} v{loader.version}  {first_line(loader.__doc__)}")
        _echo_params(param_rows(loader.Params))
        typer.echo(f"    record id: {loader.record_id or '?'}")
        for title, entries in (("record fields", loader.record_fields), ("record media", loader.record_media)):
            typer.echo(f"    {title}:" if entries else f"    {title}: none")
            for entry, meaning in entries.items():
                typer.echo(f"      {entry}: {meaning}")


@app.command()
def metrics() -> None:
    """List the metrics with their parameters (and the parameters every metric takes)."""
    from .compiler.metrics import METRIC_SCHEMAS, MetricParams
    from .reference import first_line, param_rows

    typer.echo("every metric:")
    _echo_params(param_rows(MetricParams))
    for name, schema in METRIC_SCHEMAS.items():
        typer.echo(f"{name}  {first_line(schema.__doc__)}")
        _echo_params(param_rows(schema, skip=tuple(MetricParams.model_fields)))


@app.command()
def backends() -> None:
    """List the model backends (NAME:TARGET,option=value,...) with their tasks and options."""
    from .reference import backend_entries, backend_usage

    for entry in backend_entries():
        doc = entry.doc
        typer.echo(f"{entry.name}  ({', '.join(entry.tasks)})  {doc.summary}")
        typer.echo(f"    written: {backend_usage(entry).replace('`', '')}")
        typer.echo("    options:" if doc.options else "    options: none")
        for option, meaning in doc.options.items():
            typer.echo(f"      {option}: {meaning}")


@app.command()
def new(data: Annotated[Path, typer.Argument(help="your data: a .csv, .tsv, .jsonl or .parquet table, "
                                                 "a folder of images, or an lm-eval task .yaml")],
        out: Annotated[Path | None, typer.Option("--out", "-o", help="spec file to write (default: next to the data, "
                                                                      "named after it: qa.csv -> qa.toml)")] = None,
        kind: Annotated[str | None, typer.Option("--kind", help="text (paraphrase the question) or image (rotate the "
                                                                "image); default: text for a table, image for a "
                                                                "folder")] = None,
        id_column: Annotated[str | None, typer.Option("--id", help="column of unique record ids (default: id, qid "
                                                                   "or question_id)")] = None,
        question: Annotated[str | None, typer.Option("--question", help="column to ask (default: question, prompt, "
                                                                        "text or input)")] = None,
        answer: Annotated[str | None, typer.Option("--answer", help="column of right answers (default: answer, "
                                                                    "label or target)")] = None,
        image: Annotated[str | None, typer.Option("--image", help="column of image files (default: image, "
                                                                  "image_path, image_file, image_name "
                                                                  "or img)")] = None) -> None:
    """Write a first, working consistency spec for your own data: a paraphrase test of a table's
    questions, or a rotation test of its images (or of a folder of images); or, from an lm-eval
    task YAML, the task with typos in its question. Never overwrites a file."""
    from .compiler.errors import Problem
    from .scaffold import ScaffoldError, default_out, scaffold
    from .scaffold_lm_eval import is_task_file, scaffold_task

    if is_task_file(data):
        if any(v is not None for v in (kind, id_column, answer, image)):
            raise ScaffoldError(Problem("--kind, --id, --answer and --image are for tables and image folders; "
                                        "an lm-eval task names its own fields", file=str(data),
                                        hint="--question FIELD names the field to perturb"))
        written, left_out = scaffold_task(data, out or data.with_suffix(".toml"), question)
        typer.echo(f"wrote {written}")
        for reason in left_out:
            typer.echo(f"  left out: {reason}")
        model = "hf:/path/to/causal-lm" if 'task = "choice-loglik"' in written.read_text() else "MODEL"
        typer.echo(f"next: benchc validate {written} --data, then benchc eval {written} -o out --model {model}")
        return
    path = scaffold(data, out or default_out(data), kind=kind, id_column=id_column, question_column=question,
                    answer_column=answer, image_column=image)
    typer.echo(f"wrote {path}")
    typer.echo(f"next: benchc validate {path} --data, then benchc eval {path} -o out --model MODEL")


def _echo_params(rows: list[ParamRow]) -> None:
    for row in rows:
        for line in row.lines():
            typer.echo(f"    {line}")


def _offline_environment() -> None:
    """benchc never reaches a model hub; make the libraries fail fast instead of trying."""
    for name, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                        "NO_ALBUMENTATIONS_UPDATE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
        os.environ.setdefault(name, value)


INTERRUPTED = "interrupted: finished work is saved; rerun the same command to resume"


def _register_command_modules() -> None:
    """Command families that live in their own modules (each has ``register(app)``)."""
    from . import cli_diff, cli_measures, cli_reports, cli_serve, cli_training

    for module in (cli_diff, cli_reports, cli_training, cli_measures, cli_serve):
        module.register(app)


_register_command_modules()


def main(argv: list[str] | None = None) -> int:
    from .compiler.errors import BenchcError

    _offline_environment()
    try:
        result = app(args=argv, prog_name="benchc", standalone_mode=False)
        if result == 130:  # typer turns KeyboardInterrupt into Exit(130)
            _say(INTERRUPTED)
        return result if isinstance(result, int) else 0
    except BenchcError as exc:  # user errors only: a bug keeps its traceback
        _say(f"error: {_environment_error(exc) or _damaged_hint(exc) or exc.render()}")
        return exc.exit_code
    except (OSError, sqlite3.DatabaseError) as exc:  # a full disk or a damaged database, else a bug
        message = _environment_error(exc)
        if message is None:
            raise
        _say(f"error: {message}")
        return ENVIRONMENT_EXIT
    except (click.exceptions.Abort, KeyboardInterrupt):
        _say(INTERRUPTED)
        return 130
    except USAGE_ERRORS as exc:  # a missing option, an unknown command or flag, a bad value
        if type(exc).__name__ == "NoArgsIsHelpError":  # `benchc` alone (or a group): its help
            exc.show()
        else:
            _say(usage_error_text(exc))
        return 2 if exc.exit_code in (1, 2) else exc.exit_code
    except Exception as exc:  # a library that words a full disk in its own error (polars), else a bug
        message = _environment_error(exc)
        if message is None:
            raise
        _say(f"error: {message}")
        return ENVIRONMENT_EXIT
    finally:
        reset_logging()


ENVIRONMENT_EXIT = 2
"""The exit status of a full disk or a damaged database (as of other errors of the environment)."""
DISK_FULL = frozenset(code for code in (getattr(errno, "ENOSPC", None), getattr(errno, "EDQUOT", None)) if code)
STORES = {"ResponseStore": ("the response store", "answers are recomputed"),
          "ContentStore": ("the compile cache", "op outputs are recomputed")}
"""Classes whose ``root`` holds a SQLite database, by class name: what to call it and what
moving it aside costs."""


def _environment_error(exc: BaseException) -> str | None:
    """One line for a full disk anywhere in ``exc``'s chain of causes (a store or an op may
    have wrapped it in a BenchcError), or for a damaged database that reached the top unwrapped,
    else None."""
    from .compiler.errors import BenchcError

    chain = _chain(exc)
    for cause in chain:
        if isinstance(cause, OSError) and cause.errno in DISK_FULL:
            return _disk_full(_written_path(cause))
        if isinstance(cause, sqlite3.DatabaseError):
            if _sqlite_error(cause, "SQLITE_FULL"):
                found = _store_of(cause)
                return _disk_full(str(found[1]) if found else None)
            if not isinstance(exc, BenchcError) and _damaged(cause):
                return f"{_damaged_store(cause)} is damaged: {cause}\n  hint: {_damaged_advice(cause)}"
    for cause in chain:  # an op's error raised in a worker process, shutil.copytree's Error (a memo copy)
        # and polars' ComputeError (a parquet write) hold the OSError only as text
        text = cause.render() if isinstance(cause, BenchcError) else str(cause)
        said = DISK_FULL_TEXT.search(text)
        if said:
            return _disk_full(said["path"] or (None if isinstance(cause, BenchcError) else _written_path(cause)))
    return None


def _damaged_hint(exc: BaseException) -> str | None:
    """A BenchcError that a damaged database caused (a store that cannot open its file): its own
    message, with the hint of a damaged store in place of its own (unless it says so already)."""
    from dataclasses import replace

    problems = getattr(exc, "problems", None)
    if not problems or any("damaged" in f"{p.message} {p.hint}" for p in problems):
        return None
    for cause in _chain(exc)[1:]:
        if problems and isinstance(cause, sqlite3.DatabaseError) and _damaged(cause):
            hint = f"{_damaged_store(cause)} is damaged: {_damaged_advice(cause)}"
            return "\n".join(p.render() for p in [*problems[:-1], replace(problems[-1], hint=hint)])
    return None


def _sqlite_error(exc: sqlite3.DatabaseError, prefix: str) -> bool:
    return (getattr(exc, "sqlite_errorname", "") or "").startswith(prefix)


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    return _sqlite_error(exc, "SQLITE_CORRUPT") or _sqlite_error(exc, "SQLITE_NOTADB") or "malformed" in str(exc)


def _damaged_store(exc: sqlite3.DatabaseError) -> str:
    found = _store_of(exc)
    if found is None:
        return "a database of the compile cache (--cache) or of the response store (--store)"
    return f"{STORES[type(found[0]).__name__][0]} {found[1]}"


def _damaged_advice(exc: sqlite3.DatabaseError) -> str:
    found = _store_of(exc)
    cost = STORES[type(found[0]).__name__][1] if found else "its contents are recomputed"
    return f"move it aside (or delete it) and rerun; {cost}"


_CODES = "|".join(map(str, sorted(DISK_FULL)))
DISK_FULL_TEXT = re.compile(r"\[Errno (?:" + _CODES + r")\][^:'\n]*(?:: '(?P<path>[^'\n]+)')?|\(os error (?:"
                            + _CODES + r")\)")
"""A full disk as an OSError's text says it (``[Errno 28] No space left on device: 'PATH'``), or
as Rust libraries do (polars' parquet writer: ``ComputeError: ... No space left on device (os
error 28)``, measured on a full tmpfs: no OSError, so it was a traceback)."""


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out and len(out) < 10:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _disk_full(path: str | None) -> str:
    where = f" {path}" if path else " (the --out, --cache or --store folder)"
    return f"disk full while writing{where}: free space and rerun; finished work is kept"


def _frames(exc: BaseException) -> list[Any]:
    """The frames ``exc`` passed through, innermost first."""
    return [frame for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__)))]


def _written_path(exc: BaseException) -> str | None:
    """The file a failed write was writing: the error's own, else the innermost ``path``-like
    local of the frames it passed through (a write to an open file names none)."""
    filename = getattr(exc, "filename", None)
    if filename is not None:
        return os.fsdecode(filename)
    for frame in _frames(exc):
        for name in ("path", "target", "out_dir", "tmp", "staging"):
            value = frame.f_locals.get(name)
            if isinstance(value, (str, Path)) and str(value):
                return str(value)
    return None


def _store_of(exc: BaseException) -> tuple[Any, Path] | None:
    """The store (and its folder) whose method raised ``exc``, innermost first."""
    for frame in _frames(exc):
        owner = frame.f_locals.get("self")
        if type(owner).__name__ in STORES and isinstance(getattr(owner, "root", None), Path):
            return owner, owner.root
    return None


def _usage_errors() -> tuple[type[Exception], ...]:
    """Click's usage errors and typer's own: typer >= 0.20 raises from a vendored copy of click
    (``typer._click``), whose ClickException is not click's, so catching click's alone lets an
    unknown command or a missing argument end in a traceback. A private module, hence guarded."""
    try:
        from typer._click.exceptions import ClickException as TyperClickException
    except ImportError:
        return (click.ClickException,)
    return (click.ClickException, TyperClickException)


USAGE_ERRORS = _usage_errors()


if __name__ == "__main__":
    sys.exit(main())


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
