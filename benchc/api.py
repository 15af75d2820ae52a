"""The Python API under the CLI: every command is one call here.

    from benchc import api
    api.compile("specs/mm_r3/context_reasoning.toml", "out/manifest")
    api.run("out/manifest", "out/run", model="hf:/models/llava")
    api.score("out/run"); api.report("out/run")
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .compiler.compile import CompileOptions, CompileResult, compile_spec
from .compiler.errors import BenchcError, Problem, ProblemList, SpecError
from .compiler.manifest import read_manifest
from .compiler.metrics import METRIC_SCHEMAS, metric_stage_problems
from .compiler.resolve import Resolved, resolve
from .compiler.spec.parse import load_spec

if TYPE_CHECKING:
    from .calibrate import Calibration
    from .compiler.diff import Diff
    from .preview import PreviewResult
    from .runtime.report.diff_runs import RunsDiff
    from .runtime.run.plan import StagePlan
    from .compiler.validate_data import DataReport

from .defaults import DEFAULT_CACHE, DEFAULT_STORE


def validate(spec_path: Path | str, overrides: list[str] | None = None,
             data_roots: list[Path] | None = None) -> Resolved:
    """Check a spec (names, params, templates, backends, metrics, that the data files and folders
    its source names exist in the spec's folder or ``data_roots``) and report every problem at once."""
    from .runtime.backends import BACKENDS
    from .runtime.score.embed import EMBEDDERS
    from .runtime.score.metrics import METRICS

    loaded = load_spec(spec_path, overrides)
    problems = ProblemList()
    try:
        resolved = resolve(loaded)
    except SpecError as exc:
        problems.problems.extend(exc.problems)
        resolved = None
    for index, stage in enumerate(loaded.spec.stage):
        name = stage.backend.partition(":")[0]
        if stage.backend != "model" and name not in BACKENDS:
            problems.add(loaded.unknown(BACKENDS, name, f"stage[{index}].backend"))
    for problem in _model_step_backend_problems(loaded, resolved):
        problems.add(problem)
    if resolved is not None:  # a template bomb is refused here, not at the first compiled item
        from .compiler.validate_data import sample_render_problems, source_path_problems

        for problem in sample_render_problems(resolved, None):
            problems.add(problem)
        roots = [loaded.path.resolve().parent, *(Path(r).resolve() for r in data_roots or [])]
        for problem in source_path_problems(resolved, roots):
            problems.add(problem)
    for problem in _select_problems(loaded):
        problems.add(problem)
    for index, metric in enumerate(loaded.spec.metric):
        if metric.name in METRIC_SCHEMAS and metric.name not in METRICS:
            problems.add(loaded.problem(f"metric[{index}].name", f"metric {metric.name!r} has no implementation"))
        embedder = metric.params.get("embedder", "minilm")
        if isinstance(embedder, str) and embedder not in EMBEDDERS:
            problems.add(loaded.unknown(EMBEDDERS, embedder, f"metric[{index}].embedder"))
    for found in metric_stage_problems(loaded.spec):
        problems.add(loaded.problem(found.key or "metric", found.message, found.hint))
    problems.raise_if_any(SpecError)
    assert resolved is not None
    return resolved


def validate_data(spec_path: Path | str, overrides: list[str] | None = None, *,
                  data_roots: list[Path] | None = None, limit: int = 1000) -> tuple[Resolved, DataReport]:
    """``validate``, then load the spec's source (no op runs, nothing is written) and check that
    every data path resolves inside the data roots and every record field and media the spec
    names exists in the first ``limit`` records; every problem is reported at once."""
    from .compiler.validate_data import validate_data as check_data
    from .runtime.backends import BACKENDS

    resolved = validate(spec_path, overrides, data_roots)
    path_backends = {name for name, cls in BACKENDS.items() if cls.target_is_path}
    return resolved, check_data(resolved, data_roots or [], limit, path_backends)


def _model_step_backend_problems(loaded: Any, resolved: Resolved | None) -> list[Problem]:
    """Every backend a model-backed node names (fixed, grid or choice) must be registered and
    able to generate; checked by name, without loading anything."""
    from .runtime.backends import BACKENDS

    problems = []
    for node in resolved.nodes if resolved else []:
        if not node.op.model_backed:
            continue
        key = f"node[{node.index}].params.backend"
        values = (node.sweep.grid.get("backend") or node.sweep.choice.get("backend")
                  or [node.sweep.fixed.get("backend")])
        for value in values:
            name = str(value).partition(":")[0].strip()
            if name not in BACKENDS:
                problems.append(loaded.unknown(BACKENDS, name, key))
            elif "generate" not in BACKENDS.get(name).tasks:
                problems.append(loaded.problem(key, f"backend {name!r} cannot generate text",
                                               hint="model steps need a generating backend, e.g. hf:models/llm"))
    return problems


def _select_problems(loaded: Any) -> list[Problem]:
    """``[select]``'s models must be registered backends that do its task, and its embedder a
    registered one; checked by name, without loading anything."""
    from .runtime.backends import BACKENDS
    from .runtime.score.embed import EMBEDDERS

    select = loaded.spec.select
    if select is None:
        return []
    problems = []
    for index, backend in enumerate(getattr(select, "models", [])):  # kind = "text" asks no model
        name, key = backend.partition(":")[0].strip(), f"select.models[{index}]"
        if name not in BACKENDS:
            problems.append(loaded.unknown(BACKENDS, name, key))
        elif select.task not in BACKENDS.get(name).tasks:
            problems.append(loaded.problem(key, f"backend {name!r} cannot do {select.task}",
                                           hint=f"[select] task = {select.task!r} needs a backend that does it"))
    if select.embedder not in EMBEDDERS:
        problems.append(loaded.unknown(EMBEDDERS, select.embedder, "select.embedder"))
    return problems


def compile(spec_path: Path | str, out_dir: Path | str, *, cache_dir: Path | str = DEFAULT_CACHE,
            data_roots: list[Path] | None = None, workers: int = 1, overrides: list[str] | None = None,
            use_memo: bool = True, store_dir: Path | str = DEFAULT_STORE, progress: bool = True,
            check_version: bool = True, repair: bool = False) -> CompileResult:
    """Compile a spec. Model-backed nodes are answered through the runtime (its backends, and
    the response store ``store_dir``, which a recompile or a resumed compile reads first).
    ``check_version``: a spec with a committed lock whose content moved at the lock's version
    is refused (``compiler/diff/version.py``; skipped with ``--set`` overrides). ``repair``:
    first check every object of the compile cache against its key and delete the damaged ones
    (``CompileResult.repaired``), then compile without the memo, so each is recomputed."""
    from dataclasses import replace

    from .compiler.cas import ContentStore
    from .compiler.folders import own_folder
    from .compiler.diff.version import check_source_version, check_spec_version
    from .runtime.score.model_client import RuntimeModelClient

    if check_version:
        check_spec_version(spec_path, overrides)
    repaired = ContentStore(own_folder(cache_dir, "cache", "--cache")).remove_damaged() if repair else []
    use_memo = use_memo and not repair

    client = RuntimeModelClient(Path(cache_dir), Path(store_dir), progress=progress)
    try:
        with _compile_bar(progress) as tell:
            options = CompileOptions(cache_dir=Path(cache_dir), data_roots=list(data_roots or []), workers=workers,
                                     overrides=list(overrides or []), use_memo=use_memo, model_client=client,
                                     progress=tell)
            result = compile_spec(spec_path, out_dir, options)
    finally:
        client.close()
    if check_version:
        check_source_version(spec_path, result.lock, overrides)
    return replace(result, model_requests=client.requests, model_calls=client.calls, repaired=repaired)


@contextmanager
def _compile_bar(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """Progress of a compile's op tasks on stderr: on a terminal, a bar per node with items/s
    and the time left; in a log or a pipe, a plain line at most every 10 s once a node has run
    that long (``compiler/progress.py``), so a long compile is never silent. None when not
    ``enabled``. It only watches the compile."""
    if not enabled:
        yield None
        return
    from .compiler.progress import PlainProgress, Throughput, format_rate

    if not sys.stderr.isatty():
        yield PlainProgress(sys.stderr, prefix="compile")
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    tasks: dict[str, Any] = {}
    rates: dict[str, Throughput] = {}
    with Progress(TextColumn("compile {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True)) as bar:
        def tell(node: str, done: int, total: int) -> None:
            if node not in tasks:
                tasks[node] = bar.add_task(node, total=total, rate="")
                rates[node] = Throughput()
            rate = rates[node].rate(done)
            bar.update(tasks[node], completed=done, rate=f"{format_rate(rate)} items/s" if rate else "")

        yield tell


def run(manifest_dir: Path | str, run_dir: Path | str, *, model: str | None = None,
        cache_dir: Path | str = DEFAULT_CACHE, store_dir: Path | str = DEFAULT_STORE, workers: int = 1,
        backends: dict[str, str] | None = None, progress: bool = True, text_only: bool = False,
        executor: str = "local", ray_address: str | None = None, verify: int = 0) -> list[Any]:
    """``verify``: ask that many answered requests again after the run and count those whose
    answer differs (run.json's ``verify``; runtime/run/verify.py)."""
    from .runtime.run.executor import ExecutorChoice
    from .runtime.run.core import RunOptions, run_manifest

    options = RunOptions(model=model, cache_dir=Path(cache_dir), store_dir=Path(store_dir), workers=workers,
                         backends=dict(backends or {}), progress=progress, text_only=text_only,
                         executor=ExecutorChoice(executor, ray_address), verify=verify)
    return run_manifest(Path(manifest_dir), Path(run_dir), options)


def parse_backends(values: list[str]) -> dict[str, str]:
    """``["STAGE=BACKEND", ...]`` (the CLI's ``--backend``) -> the ``backends`` of run/evaluate."""
    from .runtime.run.overrides import parse_backend_overrides

    return parse_backend_overrides(values)


def score(run_dir: Path | str, manifest_dir: Path | str | None = None, *, cache_dir: Path | str = DEFAULT_CACHE,
          store_dir: Path | str = DEFAULT_STORE) -> dict[str, Any]:
    """Score a run; ``manifest_dir`` replaces the manifest the run recorded (same digest only).
    Metrics that look at media (CLIP scores) read them from ``cache_dir`` and ``store_dir``."""
    from .runtime.score.core import score_run

    return score_run(Path(run_dir), Path(manifest_dir) if manifest_dir else None, cache_dir=Path(cache_dir),
                     store_dir=Path(store_dir))


def score_for_export(run_dir: Path | str, manifest_dir: Path | str | None = None, *,
                     cache_dir: Path | str = DEFAULT_CACHE, store_dir: Path | str = DEFAULT_STORE) -> tuple[Any, Any]:
    """``score``, with the metrics' results too (their per-unit values, which exports write)."""
    from .runtime.score.core import score_results

    return score_results(Path(run_dir), Path(manifest_dir) if manifest_dir else None, cache_dir=Path(cache_dir),
                         store_dir=Path(store_dir))


def export_lm_eval(run_dir: Path | str, scores: dict[str, Any], results: list[Any],
                   manifest_dir: Path | str | None = None, *, cache_dir: Path | str = DEFAULT_CACHE,
                   store_dir: Path | str = DEFAULT_STORE) -> Any:
    """Write a scored run as lm-evaluation-harness writes its output folder
    (``RUN/lm-eval/<model>/``: ``results_<datetime>.json``, one ``samples_<task>_<datetime>.jsonl``
    per task, the items' media); ``scores`` and ``results`` are what ``score_for_export``
    returned for it."""
    from .runtime.interop.export_lmeval import export_lm_eval as export
    from .runtime.run.media import MediaSource

    source: MediaSource | None = None

    def media(kind: str, sha256: str) -> bytes:
        nonlocal source
        source = source or MediaSource(Path(cache_dir), Path(store_dir))
        return source(kind, sha256)

    return export(Path(run_dir), scores, results, Path(manifest_dir) if manifest_dir else None, media)


def export_inspect(run_dir: Path | str, scores: dict[str, Any], manifest_dir: Path | str | None = None) -> Any:
    """Write a scored run as an inspect-ai eval log (``RUN/inspect/<time>_<task>_<id>.json``, the
    JSON log format that ``inspect view`` and ``read_eval_log`` open); ``scores`` is what
    ``score`` returned for it."""
    from .runtime.interop.export_inspect import export_inspect as export

    return export(Path(run_dir), scores, Path(manifest_dir) if manifest_dir else None)


def import_answers(manifest_dir: Path | str, answers: Path | str, run_dir: Path | str, *, key: str = "id",
                   format: str = "auto", model: str | None = None, stage: str | None = None,
                   answer_column: str | None = None, id_column: str | None = None, allow_missing: bool = False,
                   ignore_unmatched: bool = False, filter: str | None = None, variant: str | None = None) -> Any:
    """A run folder from answers produced outside benchc (JSONL, CSV, lm-eval/lmms-eval samples,
    inspect-ai logs),
    matched to the manifest's items by item id or rendered prompt (``runtime.import_answers``);
    ``score`` and ``report`` then read it as a run of ``run``."""
    from .runtime.interop.import_answers import ImportOptions
    from .runtime.interop.import_answers import import_answers as run_import

    options = ImportOptions(format=format, key=key, model=model, stage=stage, answer_column=answer_column,
                            id_column=id_column, allow_missing=allow_missing, ignore_unmatched=ignore_unmatched,
                            filter=filter, variant=variant)
    return run_import(Path(manifest_dir), Path(answers), Path(run_dir), options)


def report(run_dir: Path | str, *, cache_dir: Path | str = DEFAULT_CACHE,
           store_dir: Path | str = DEFAULT_STORE) -> Path:
    """report.md and the report folder (tables, figures, index.html); the item browser reads
    media from the compile cache and the response store. Returns report.md's path."""
    from .runtime.report import write_report

    return write_report(Path(run_dir), cache_dir=Path(cache_dir), store_dir=Path(store_dir))


def report_folder(run_dir: Path | str, out_dir: Path | str | None = None, *, cache_dir: Path | str = DEFAULT_CACHE,
                  store_dir: Path | str = DEFAULT_STORE, manifest_dir: Path | str | None = None,
                  by: list[str] | None = None, max_groups: int = 100, browser: str = "on") -> Any:
    """Write a run's report folder (tables, figures, index.html with the item browser) and
    report.md; ``by`` adds per-attribute breakdowns (the run re-scored with that split)."""
    from .runtime.report import build_report

    return build_report(Path(run_dir), Path(out_dir) if out_dir is not None else None, cache_dir=Path(cache_dir),
                        store_dir=Path(store_dir), manifest_dir=Path(manifest_dir) if manifest_dir else None,
                        by=list(by or []), max_groups=max_groups, browser=browser)  # type: ignore[arg-type]


def reproduce(paper: Path | str, *, record: bool = False, check: bool = True, make: bool = True,
              progress: bool = True) -> Any:
    """Regenerate a paper file's tables and figures from its runs; ``record`` writes their hashes
    into the paper file, else (with ``check``) any drift raises CheckFailed (exit 1). With
    ``make``, a run whose folder is missing is compiled and run from its ``[run.make]`` recipe
    first (answers the response store holds are not asked again)."""
    from .runtime.reproduce.core import check as check_drift
    from .runtime.reproduce.core import reproduce as run_reproduce

    def make_run(order: Any) -> None:
        _make_paper_run(order, progress)

    result = run_reproduce(Path(paper), record=record, make_run=make_run if make else None)
    if check:
        check_drift(result, Path(paper))
    return result


def _make_paper_run(order: Any, progress: bool) -> None:
    """A paper's ``[run.make]``: compile its spec (checked against the spec's lock like any
    compile) and run it, or import its answers, into the folders the paper file names."""
    folders: dict[str, Any] = {k: v for k, v in (("cache_dir", order.cache_dir), ("store_dir", order.store_dir))
                               if v is not None}
    compiled = compile(order.spec_file, order.manifest_dir, workers=order.workers, overrides=order.overrides,
                       data_roots=order.data_roots, progress=progress, **folders)
    if order.answers is not None:
        import_answers(compiled.manifest_dir, order.answers, order.run_dir, key=order.key, model=order.model)
        return
    run(compiled.manifest_dir, order.run_dir, model=order.model, backends=order.backends, workers=order.workers,
        progress=progress, **folders)


def check_reproduction(result: Any, paper: Path | str) -> None:
    """Raise CheckFailed if ``reproduce(..., check=False)`` found drift."""
    from .runtime.reproduce.core import check as check_drift

    check_drift(result, Path(paper))


@dataclass(frozen=True)
class Evaluation:
    manifest_dir: Path
    run_dir: Path
    report_path: Path
    scores: dict[str, Any]


def evaluate(spec_path: Path | str, out_dir: Path | str, *, model: str | None = None,
             cache_dir: Path | str = DEFAULT_CACHE, store_dir: Path | str = DEFAULT_STORE,
             workers: int = 1, overrides: list[str] | None = None, progress: bool = True,
             data_roots: list[Path] | None = None, backends: dict[str, str] | None = None,
             text_only: bool = False, executor: str = "local", ray_address: str | None = None,
             check_version: bool = True, verify: int = 0) -> Evaluation:
    """compile + run + score + report in one call. ``backends`` (stage id -> backend) and the
    executor are checked before anything is compiled."""
    from .runtime.run.executor import ExecutorChoice
    from .runtime.run.overrides import check_backend_overrides

    ExecutorChoice(executor, ray_address)  # a typo or a missing Ray fails before the compile
    out = Path(out_dir)
    resolved = validate(spec_path, overrides)
    check_backend_overrides(dict(backends or {}), list(resolved.loaded.spec.stage))
    _check_stage_backends(resolved.loaded.spec, model, dict(backends or {}))
    manifest = compile(spec_path, out / "manifest", cache_dir=cache_dir, workers=workers,
                       overrides=overrides, data_roots=data_roots, store_dir=store_dir, progress=progress,
                       check_version=check_version)
    run(manifest.manifest_dir, out / "run", model=model, cache_dir=cache_dir, store_dir=store_dir,
        workers=workers, progress=progress, backends=backends, text_only=text_only, executor=executor,
        ray_address=ray_address, verify=verify)
    scores = score(out / "run", cache_dir=cache_dir, store_dir=store_dir)
    return Evaluation(manifest.manifest_dir, out / "run",
                      report(out / "run", cache_dir=cache_dir, store_dir=store_dir), scores)


def _check_stage_backends(spec: Any, model: str | None, backends: dict[str, str]) -> None:
    """Build (not load) each stage's backend, so that a missing model folder, an unknown backend
    or a bad option fails before the compile, not after it."""
    from .runtime.backends import make_backend
    from .runtime.run.core import RunOptions, stage_backend

    options = RunOptions(model=model, backends=backends)
    for stage in spec.stage:
        make_backend(stage_backend(stage, options), spec.generation, stage.task)


def lock_path(spec_path: Path, generated: Path) -> Path:
    """specs/mmcbench/text2speech.toml -> generated/mmcbench/text2speech.lock.json"""
    parts = spec_path.resolve().parts
    rel = Path(*parts[len(parts) - 1 - parts[::-1].index("specs") + 1:]) if "specs" in parts else Path(spec_path.name)
    return generated / rel.with_suffix(".lock.json")


LOCK_IDENTITY = ("benchmark", "spec_digest", "hash_recipe", "manifest_schema", "item_count", "manifest_digest")


def check_lock(spec_path: Path, generated: Path, cache_dir: Path, workdir: Path,
               store_dir: Path = DEFAULT_STORE) -> list[Problem]:
    """Recompile a spec and compare its identity with the committed lock. (The lock's
    ``libraries`` and ``model_steps`` are records, not identity: an upgrade or another machine
    that gives the same items passes.)"""
    import json

    committed_path = lock_path(spec_path, generated)
    if not committed_path.exists():
        return [Problem("no committed lock", file=str(committed_path), hint="run `benchc lock SPEC`")]
    committed = json.loads(committed_path.read_text())
    fresh = compile(spec_path, workdir / spec_path.stem, cache_dir=cache_dir, store_dir=store_dir,
                    check_version=False).lock
    moved = [key for key in LOCK_IDENTITY + ("source",) if committed.get(key) != fresh.get(key)]
    if not moved:
        return []
    return [_lock_drift_problem(spec_path, committed_path, committed, fresh, moved)]


def _lock_drift_problem(spec_path: Path, committed_path: Path, committed: dict[str, Any],
                        fresh: dict[str, Any], moved: list[str]) -> Problem:
    """One problem per out-of-date lock: which fields moved, what changed in the spec (against
    the spec at the lock's commit, when git has it) and in the lock, and the bump to make."""
    from .compiler.diff.version import BUMP_RULE, lock_change_lines, spec_drift_lines

    same_version = committed["benchmark"]["version"] == fresh["benchmark"]["version"]
    lines, rev = spec_drift_lines(spec_path, committed_path, committed) if "spec_digest" in moved else ([], None)
    lines += lock_change_lines(committed, fresh)
    see = f"; `benchc diff {spec_path}@{rev[:12]} {spec_path}` lists the items that changed" if rev else ""
    hint = (f"the spec changed without a version bump: bump [benchmark].version ({BUMP_RULE}) and run "
            f"`benchc lock`{see}" if same_version else "run `benchc lock` to record the new version")
    verb = "differs" if len(moved) == 1 else "differ"
    message = f"{', '.join(moved)} {verb} from the committed lock" + "".join(f"\n    {line}" for line in lines)
    return Problem(message, file=str(committed_path), hint=hint)


def write_lock(spec_path: Path, generated: Path, cache_dir: Path, workdir: Path,
               store_dir: Path = DEFAULT_STORE) -> Path:
    from .compiler.atomic import write_text_atomic
    from .compiler.manifest import lock_text

    result = compile(spec_path, workdir / spec_path.stem, cache_dir=cache_dir, store_dir=store_dir)
    target = lock_path(spec_path, generated)
    write_text_atomic(target, lock_text(result.lock))
    return target


def preview(spec_or_manifest: Path | str, item: str, out_dir: Path | str | None = None, *,
            cache_dir: Path | str = DEFAULT_CACHE, data_roots: list[Path] | None = None,
            overrides: list[str] | None = None, store_dir: Path | str = DEFAULT_STORE) -> PreviewResult:
    """Write a contact sheet (images), WAV files (audio) or a listing (text) of an item's variants
    (an item id, or a group id for all its items) from a spec (compiled, memoised, into a scratch
    folder) or a compiled manifest folder."""
    import tempfile

    from .preview import default_out_dir, write_preview

    path, roots = Path(spec_or_manifest), [Path(r) for r in data_roots or []]
    out = Path(out_dir) if out_dir is not None else default_out_dir(item)
    if path.is_dir():
        if overrides:
            raise BenchcError(Problem("--set applies to a spec, not to a compiled manifest",
                                      hint="preview the spec itself to override its keys"))
        return write_preview(path, item, out, Path(cache_dir), [path, *roots])
    with tempfile.TemporaryDirectory(prefix="benchc-preview-") as scratch:
        result = compile(path, Path(scratch) / "manifest", cache_dir=cache_dir, data_roots=roots,
                         overrides=overrides, store_dir=store_dir)
        return write_preview(result.manifest_dir, item, out, Path(cache_dir), [path.resolve().parent, *roots])


def calibrate(spec_or_manifest: Path | str, *, sample: int | None = None, seed: int = 0,
              cache_dir: Path | str = DEFAULT_CACHE, data_roots: list[Path] | None = None,
              overrides: list[str] | None = None, store_dir: Path | str = DEFAULT_STORE) -> Calibration:
    """SSIM, PSNR, colour and edge change of each image variant against its original, summarised
    per node, op and swept setting, over a seeded sample of ``sample`` groups (all when None) of a
    spec (compiled, memoised, into a scratch folder) or a compiled manifest folder. Measurements
    only: nothing here enters a digest (benchc/calibrate.py)."""
    import tempfile

    from .calibrate import calibrate_manifest, check_makes_images

    path, roots = Path(spec_or_manifest), [Path(r) for r in data_roots or []]
    if path.is_dir():
        if overrides:
            raise BenchcError(Problem("--set applies to a spec, not to a compiled manifest",
                                      hint="calibrate the spec itself to override its keys"))
        return calibrate_manifest(path, Path(cache_dir), [path, *roots], sample=sample, seed=seed)
    check_makes_images(path, overrides)
    with tempfile.TemporaryDirectory(prefix="benchc-calibrate-") as scratch:
        result = compile(path, Path(scratch) / "manifest", cache_dir=cache_dir, data_roots=roots,
                         overrides=overrides, store_dir=store_dir)
        return calibrate_manifest(result.manifest_dir, Path(cache_dir), [path.resolve().parent, *roots],
                                  sample=sample, seed=seed)


def diff(a: str | Path, b: str | Path, *, overrides: list[str] | None = None,
         cache_dir: Path | str = DEFAULT_CACHE, store_dir: Path | str = DEFAULT_STORE,
         data_roots: list[Path] | None = None, items: bool = True, examples: int = 5) -> Diff:
    """A structured diff (``compiler.diff.Diff``) of two specs, manifests or lock files, each a
    path or ``path@REV``. Specs are compiled (into a scratch folder, through the memo) when
    ``items``; ``overrides`` (``--set``) apply to the spec sides."""
    import tempfile

    from .compiler.diff import diff_documents, side_info
    from .compiler.diff.inputs import parse_ref, read_side

    roots = [Path(r) for r in data_roots or []]

    def compiler(spec: Path, out: Path, extra_roots: list[Path]) -> Path:
        return compile(spec, out, cache_dir=cache_dir, store_dir=store_dir, data_roots=[*extra_roots, *roots],
                       overrides=overrides, progress=False, check_version=False).manifest_dir

    refs = [parse_ref(str(a)), parse_ref(str(b))]
    with tempfile.TemporaryDirectory(prefix="benchc-diff-") as scratch:
        sides = [read_side(ref, Path(scratch) / name, list(overrides or []), compiler if items else None)
                 for ref, name in zip(refs, ("a", "b"))]
    infos = [side_info(s.label, s.kind, s.doc, s.lock, None if s.items is None else s.items.height) for s in sides]
    result = diff_documents(infos[0], infos[1], (sides[0].doc, sides[1].doc), (sides[0].lock, sides[1].lock),
                            (sides[0].items, sides[1].items), examples)
    if not items:
        result.notes.append("spec documents only (--spec-only): items and locks not compared")
    return result


def diff_runs(run_a: Path | str, run_b: Path | str, *, stage: str | None = None, resamples: int = 10_000,
              seed: int = 0, examples: int = 5, manifest_a: Path | str | None = None,
              manifest_b: Path | str | None = None) -> RunsDiff:
    """Two runs compared item by item (``runtime.diff_runs.RunsDiff``)."""
    from .runtime.report.diff_runs import diff_runs as compare_runs

    return compare_runs(Path(run_a), Path(run_b), stage=stage, resamples=resamples, seed=seed, examples=examples,
                        manifest_a=Path(manifest_a) if manifest_a else None,
                        manifest_b=Path(manifest_b) if manifest_b else None)


def plan(manifest_dir: Path | str, *, model: str | None = None, cache_dir: Path | str = DEFAULT_CACHE,
         store_dir: Path | str = DEFAULT_STORE, backends: dict[str, str] | None = None,
         text_only: bool = False) -> list[StagePlan]:
    """What ``run`` would do, per stage: requests cached and to run (``runtime.plan``)."""
    from .runtime.run.plan import plan_manifest
    from .runtime.run.core import RunOptions

    options = RunOptions(model=model, cache_dir=Path(cache_dir), store_dir=Path(store_dir),
                         backends=dict(backends or {}), progress=False, text_only=text_only)
    return plan_manifest(Path(manifest_dir), options)


__all__ = ["validate", "compile", "run", "score", "report", "evaluate", "preview", "read_manifest",
           "import_answers", "export_lm_eval", "BenchcError"]


def export(manifest_dir: Path | str, out_dir: Path | str, fmt: str, *, cache_dir: Path | str = DEFAULT_CACHE,
           target: str | None = None, media: str = "files") -> Any:
    """A manifest as fine-tuning conversations (``runtime/interop/export.py``): ``ExportResult``."""
    from .compiler.cas import ContentStore
    from .runtime.interop.export import check_export_format, export as export_manifest

    check_export_format(fmt)  # before anything is read: a typo is one line
    store = ContentStore(Path(cache_dir))
    try:
        return export_manifest(Path(manifest_dir), Path(out_dir), fmt, store, target=target, media=media)
    finally:
        store.close()


def check_disjoint(train_dir: Path | str, eval_dir: Path | str, *, cache_dir: Path | str = DEFAULT_CACHE,
                   max_distance: int = 10, text_threshold: float = 0.8) -> Any:
    """What two manifests share (``compiler/disjoint.py``): record ids, media and, for images whose
    pixels are in the compile cache, near duplicates at most ``max_distance`` dHash bits apart
    (negative: not checked); and prompts, the same once normalised or near duplicates at a word
    3-gram Jaccard of at least ``text_threshold`` (outside 0..1: exact only;
    ``compiler/text_overlap.py``). Returns an ``Overlap``."""
    from dataclasses import replace

    from .compiler.cas import ContentStore
    from .compiler.disjoint import footprint_of_manifest, overlap, with_near_duplicates
    from .compiler.manifest import read_manifest
    from .compiler.text_overlap import text_items, text_overlap

    mine, other = footprint_of_manifest(Path(train_dir)), footprint_of_manifest(Path(eval_dir))
    texts = text_overlap(text_items(read_manifest(Path(train_dir)).items()),
                         text_items(read_manifest(Path(eval_dir)).items()), text_threshold)
    found = replace(overlap(mine, other), texts=texts)
    if max_distance < 0:
        return found
    store = ContentStore(Path(cache_dir))
    try:
        return replace(with_near_duplicates(found, mine, other, store, max_distance), texts=texts)
    finally:
        store.close()
