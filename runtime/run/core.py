"""``benchc run``: a manifest's items -> requests per stage -> backends -> the response store.

Stages run in waves: a later stage's requests are built from the earlier stage's responses
(speech -> transcript). The run folder gets ``responses.parquet`` (item, stage, sample, request
key, answer) and ``run.json`` (the run record: manifest path and digest, model, backend
fingerprints, counts, times; what a backend's server said about its model, ``served``, when
requests were sent; with ``--verify N``, how many answers asked again differ: ``verify``), which
is the only place volatile facts such as timestamps are kept. Both are published together
(see ``runfolder``). Everything a run can refuse (backend overrides, backends and their options,
the output folder, the store, the compile cache) is checked before the first request; a server
is asked about its model only once a request must be sent (``Backend.before_requests``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from benchc import __version__
from benchc.compiler.canonical import digest
from benchc.compiler.errors import BackendError, BenchcError, Problem, RunError
from benchc.compiler.manifest import Manifest
from benchc.compiler.spec.models import Generation, Spec, Stage
from benchc.compiler.sweep import named_values
from benchc.compiler.templates import TemplateProblem, compile_template, render

from ...defaults import DEFAULT_CACHE, DEFAULT_STORE
from ..backends import Backend, Request, make_backend
from ..backends.base import Choices
from .executor import LOCAL, ExecutorChoice, MediaSource, execute
from .overrides import check_backend_overrides
from .settings import backend_for, setting_groups
from .runfolder import RESPONSES_FILE, RUN_FILE, check_run_dir, manifest_items, open_manifest, write_run_folder
from .store import ResponseStore, StoredResponse
from .verify import verify_answers

CHOICE_REVISION = 1
"""How a choice-loglik answer is computed (runtime/backends/hf_loglik.py): bump when one can change."""

__all__ = ["RESPONSES_FILE", "RUN_FILE", "RunOptions", "StageOutcome", "run_manifest"]


@dataclass
class RunOptions:
    model: str | None = None
    cache_dir: Path = DEFAULT_CACHE
    store_dir: Path = DEFAULT_STORE
    workers: int = 1
    backends: dict[str, str] = field(default_factory=dict)  # stage id -> backend override
    progress: bool = True
    text_only: bool = False  # leave images out of every request (an LLM-only ablation)
    executor: ExecutorChoice = LOCAL  # local, or ray (--executor)
    verify: int = 0  # --verify N: ask N answered requests again and count those that differ (runtime/run/verify.py)


@dataclass(frozen=True)
class StageOutcome:
    stage: str
    backend: str
    requests: int
    cached: int
    ran: int


def stage_backend(stage: Stage, options: RunOptions) -> str:
    chosen = options.backends.get(stage.id, stage.backend)
    if chosen == "model":
        if not options.model:
            raise BackendError(Problem(f"stage {stage.id!r} runs the model under test, and no model was given",
                                       hint="pass --model, e.g. --model espeak or --model hf:/path/to/model"))
        return options.model
    return chosen


def request_key(fingerprint: dict[str, Any], stage: Stage, spec: Spec, prompt: str, system: str | None,
                media: list[tuple[str, str]], sample: int, generation: Generation | None = None,
                choices: Choices | None = None) -> str:
    """``generation``: the item's own settings (a spec that sweeps them); None: the spec's."""
    settings = (generation or spec.generation) if stage.task == "generate" else None
    return request_digest(fingerprint, stage.task, settings, prompt, system, media, sample, choices=choices)


def request_digest(fingerprint: dict[str, Any], task: str, generation: Generation | None, prompt: str,
                   system: str | None, media: list[tuple[str, str]], sample: int, seed: int | None = None,
                   choices: Choices | None = None) -> str:
    """The response store's key of a request: everything that can change its answer. A run's
    stage and a compile-time model step asking the same thing share the key (and the answer)."""
    payload: dict[str, Any] = {"kind": "request", "backend": fingerprint, "task": task,
                               "prompt": prompt, "system": system, "media": media, "sample": sample}
    if generation is not None:
        payload["generation"] = generation.model_dump(mode="json")
    if seed is not None:  # absent otherwise, so the keys of runs stay as they were
        payload["seed"] = seed
    if choices is not None:  # choice-loglik only
        payload["choices"] = {**choices.to_json(), "revision": CHOICE_REVISION}
    return digest(payload)


def item_choices(stage: Stage, targets: str | None) -> Choices | None:
    """A choice-loglik stage's choices for one item: its list of texts, or the item's own
    (the compiler put the record field's list in ``targets``, under the field's path)."""
    if stage.task != "choice-loglik":
        return None
    texts = stage.choices if isinstance(stage.choices, list) else json.loads(targets or "{}")[stage.choices]
    return Choices(tuple(texts), stage.delimiter, stage.choose_by)


def _samples(stage: Stage, spec: Spec) -> int:
    return spec.generation.n if stage.task == "generate" else 1


def build_requests(stage: Stage, spec: Spec, items: pl.DataFrame, fingerprint: dict[str, Any],
                   previous: dict[tuple[str, int], StoredResponse] | None,
                   text_only: bool = False, generation: Generation | None = None) -> dict[tuple[str, int], Request]:
    """One request per (item, sample). A first stage sends the item's prompt and media (``n``
    samples when it generates); a later stage sends, for each answer of the stage it reads, its
    template rendered over that answer (or the answer itself) with what ``stage.sends``.
    ``text_only`` leaves the images out (an LLM-only ablation: the same prompts, no image);
    ``generation``: the settings of these items (``settings.setting_groups``), None: the spec's."""
    out: dict[tuple[str, int], Request] = {}
    earlier: dict[str, list[tuple[int, StoredResponse]]] = {}
    for (item_id, sample), answer in sorted((previous or {}).items()):
        earlier.setdefault(item_id, []).append((sample, answer))
    template = _stage_templates(stage)
    columns = ["item_id", "prompt", "system", "media", "attrs"] + (["targets"] if "targets" in items.columns else [])
    for row in items.select(columns).iter_rows(named=True):
        item_media = [(m["kind"], m["sha256"]) for m in json.loads(row["media"])
                      if not (text_only and m["kind"] == "image")]
        if previous is None:
            inputs = [(s, row["prompt"], row["system"], item_media) for s in range(_samples(stage, spec))]
        else:
            inputs = [(s, _later_prompt(stage, template, row, a), None, _later_media(stage, item_media, a))
                      for s, a in earlier.get(row["item_id"], [])]
        choices = item_choices(stage, row.get("targets"))
        for sample, prompt, system, media in inputs:
            key = request_key(fingerprint, stage, spec, prompt, system, media, sample, generation, choices)
            out[(row["item_id"], sample)] = Request(key, stage.task, prompt, system, tuple(media), sample,
                                                    choices=choices)
    return out


def stage_requests(stage: Stage, spec: Spec, items: pl.DataFrame, backend: Backend,
                   previous: dict[tuple[str, int], StoredResponse] | None,
                   text_only: bool = False) -> list[tuple[Backend, dict[tuple[str, int], Request]]]:
    """A stage's requests in groups of one setting each, with the backend that answers them
    (``settings``: one group, ``backend`` itself, when the spec sweeps nothing)."""
    out = []
    for generation, part in setting_groups(spec, items):
        answering = backend_for(backend, generation)
        out.append((answering, build_requests(stage, spec, part, answering.fingerprint(), previous, text_only,
                                              generation)))
    return out


def _stage_templates(stage: Stage) -> dict[Any, Any] | None:
    """A later stage's compiled template (named None) or swept templates (by name), or None when
    the stage sends the earlier answer itself."""
    if not stage.template:
        return None
    if isinstance(stage.template, str):
        return {None: compile_template(stage.template)}
    return {name: compile_template(source) for name, source in (named_values(stage.template) or {}).items()}


def _later_prompt(stage: Stage, templates: dict[Any, Any] | None, row: dict[str, Any], answer: StoredResponse) -> str:
    """A later stage's prompt: its template (the item's own, ``attrs["<stage id>.template"]``,
    when swept) over the earlier answer, or the answer itself."""
    if templates is None:
        return answer.text or ""
    attrs = json.loads(row["attrs"])
    template = templates[None] if None in templates else templates[attrs[f"{stage.id}.template"]]
    context = {"answer": answer.text or "", "attrs": attrs, "prompt": row["prompt"]}
    try:
        return render(template, context)
    except TemplateProblem as exc:
        raise RunError(Problem(f"stage {stage.id!r}, item {row['item_id']!r}: {exc}",
                               key=f"stage.{stage.id}.template",
                               hint="the template sees answer, attrs and prompt")) from None


def _later_media(stage: Stage, item_media: list[tuple[str, str]], answer: StoredResponse) -> list[tuple[str, str]]:
    if stage.sends == "item":
        return item_media
    if stage.sends == "answer":
        return [(answer.kind, answer.blob)] if answer.blob else []  # audio, or an image (text-to-image)
    return []


def run_manifest(manifest_dir: Path, run_dir: Path, options: RunOptions) -> list[StageOutcome]:
    manifest, spec = open_manifest(manifest_dir)
    check_backend_overrides(options.backends, spec.stage)
    check_run_dir(Path(run_dir))
    items = manifest_items(manifest)
    store = ResponseStore(options.store_dir)
    try:
        media = MediaSource(options.cache_dir, options.store_dir)
        media.check_items(items)
        backends = {s.id: make_backend(stage_backend(s, options), spec.generation, s.task) for s in spec.stage}
        for backend in backends.values():
            backend.prepare()
        started = time.time()
        outcomes, rows, asked = _run_stages(spec, items, backends, store, media, options)
        verified = verify_answers(asked, store, media, options.verify) if options.verify > 0 else None
    finally:
        store.close()
    extra = {"served": served} if (served := _served(backends)) else {}
    if verified is not None:
        extra["verify"] = verified.to_json()
    _write_run(run_dir, manifest, options, backends, outcomes, rows, started, extra)
    return outcomes


def _served(backends: dict[str, Backend]) -> dict[str, dict[str, Any]]:
    """stage -> what its backend's server said (only backends that asked one this run)."""
    return {sid: record for sid, b in backends.items() if (record := b.served()) is not None}


Asked = dict[str, tuple[Backend, Request]]
"""request key -> the backend that answers it and the request (what ``--verify`` asks again)."""


def _run_stages(spec: Spec, items: pl.DataFrame, backends: dict[str, Backend], store: ResponseStore,
                media: MediaSource, options: RunOptions) -> tuple[list[StageOutcome], list[dict[str, Any]], Asked]:
    outcomes, rows, asked = [], [], {}
    answers_by_stage: dict[str, dict] = {}
    for stage in spec.stage:
        previous = None if stage.input == "prompt" else answers_by_stage[stage.input]
        outcome, answers = _run_stage(stage, spec, items, backends[stage.id], store, media, options, previous, asked)
        outcomes.append(outcome)
        rows += [_row(item_id, sample, stage.id, answer) for (item_id, sample), answer in answers.items()]
        answers_by_stage[stage.id] = answers
    return outcomes, rows, asked


def _run_stage(stage: Stage, spec: Spec, items: pl.DataFrame, backend: Backend, store: ResponseStore,
               media: MediaSource, options: RunOptions, previous, asked: Asked) -> tuple[StageOutcome, dict]:
    """``asked`` gains each request of the stage with the backend that answers it."""
    requests: dict[tuple[str, int], Request] = {}
    ran = 0
    for answering, part in stage_requests(stage, spec, items, backend, previous, options.text_only):
        pending = {r.key: r for r in part.values()}
        missing = store.missing(pending)  # per group: a key another group shares is asked once
        # `ran`: what this run asked; another run on the same store may answer some of `missing`
        # meanwhile (the executor waits for those rather than asking twice): they count as cached.
        ran += execute(answering, [pending[k] for k in missing], store, media, options.workers,
                       f"{stage.id} ({backend.spec})", options.progress, options.executor)
        requests.update(part)
        asked.update((r.key, (answering, r)) for r in part.values())
    unique = {r.key: r for r in requests.values()}
    stored = store.get_many(unique)
    lost = [k for k in unique if k not in stored]
    if lost:
        raise BenchcError(Problem(f"stage {stage.id!r}: {len(lost)} responses missing after the run"))
    answers = {pair: stored[r.key] for pair, r in requests.items()}
    outcome = StageOutcome(stage.id, str(backend.spec), len(unique), len(unique) - ran, ran)
    return outcome, answers


def _row(item_id: str, sample: int, stage: str, answer: StoredResponse) -> dict[str, Any]:
    return {"item_id": item_id, "stage": stage, "sample": sample, "key": answer.key,
            "kind": answer.kind, "text": answer.text, "blob": answer.blob}


RESPONSE_SCHEMA = {"item_id": pl.String, "stage": pl.String, "sample": pl.Int64, "key": pl.String,
                   "kind": pl.String, "text": pl.String, "blob": pl.String}


def _write_run(run_dir: Path, manifest: Manifest, options: RunOptions, backends: dict[str, Backend],
               outcomes: list[StageOutcome], rows: list[dict[str, Any]], started: float,
               extra: dict[str, Any]) -> None:
    """``extra``: run.json's optional keys (``served``, ``verify``), absent when empty."""
    frame = pl.DataFrame(rows, schema=RESPONSE_SCHEMA, orient="row").sort("item_id", "stage", "sample")
    record = {
        "benchc": __version__,
        "manifest": str(Path(manifest.root).resolve()),  # absolute: `score` may run from elsewhere
        "benchmark": manifest.locked.benchmark.to_json(),
        "manifest_digest": manifest.locked.manifest_digest,
        "model": options.model,
        "stages": [o.__dict__ for o in outcomes],
        "backends": {sid: b.fingerprint() for sid, b in backends.items()},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.time() - started, 3),
        "workers": options.workers,
        "text_only": options.text_only,
        "executor": options.executor.kind,
        **extra,
    }
    write_run_folder(Path(run_dir), frame, record)
