"""``benchc import``: answers produced outside benchc (another harness, an API batch job, a
colleague's script) -> a run folder that ``benchc score`` and ``benchc report`` read exactly as
they read one written by ``benchc run``.

Inputs (``--format``; ``auto`` reads ``.csv``/``.tsv`` as tables and tells lm-eval samples from
plain JSON Lines by their first object):

* ``jsonl`` and ``csv`` (``.tsv`` is tab-separated): one answer per row, in a column named
  ``response``, ``answer``, ``prediction`` or ``output`` (exactly one of them may be present, or
  name it with ``--answer-column``). The item is found by ``--key id``: a column ``item_id`` or
  ``id`` (or ``--id-column``) holding benchc's item id; or by ``--key prompt``: a column
  ``prompt`` holding the item's rendered prompt, with ``media_sha256`` (one sha256, or several
  separated by spaces, commas or semicolons; a JSON list in JSON Lines) where one prompt is asked
  over several media (the perturbed images of one question). Optional columns: ``sample``
  (0-based, for specs with ``generation.n`` > 1) and ``stage`` (specs whose metrics read more
  than one stage).
* ``lm-eval`` and ``lmms-eval`` ``--log_samples`` JSON Lines, and ``inspect`` logs (``.eval``
  and ``.json``), as ``runtime/interop/harness_logs.py`` reads them: ``--key id`` reads ``doc.item_id``
  (else ``doc.id``; lmms-eval 0.7's ``doc_id``; inspect's sample ``id``), ``--key prompt`` the
  prompt (a chat template's last user message) with ``doc.media_sha256``. The answers are the
  raw generations (``resps``; inspect's ``output.completion``): the spec's own ``[answer]``
  extraction reads them, as it reads a run's. lm-eval logs a doc once per filter: one filter
  is read (``--filter``, else the file's first, named in the notes); a doc twice under it is
  refused. A row whose harness ``target`` is not its item's is refused (a samples file of
  another task). A folder is an lm-eval/lmms-eval ``--output_path`` (or its model subfolder):
  every ``samples_<task>_<datetime>.jsonl`` of its latest run is read, each row naming its file.

A key that is no item id but a record id (a harness that ran the source records, not benchc's
items) names the record's original variant (the item made by ``text.original`` or its like),
or the variant ``--variant`` names (a graph node). The variants no row answered are then
missing by design: recorded as unanswered, listed in run.json and the notes, not an error.

Nothing is guessed. A row that matches no item, a prompt that matches several items, one item
answered twice with different texts, an unknown stage or sample: each is counted, with the line
numbers of the first few, and the import is refused (exit 2). Rows of items outside the manifest
can be skipped on purpose with ``ignore_unmatched`` (an answers file over a whole dataset, a
manifest of a sample of it). Items without an answer are refused too unless ``allow_missing``:
then each missing answer is recorded as a response of kind ``missing`` (no text: it is never
right and agrees with nothing) and counted in run.json, and ``score`` notes the count.

The run record says the answers were imported (``imported``: the source file's path, sha256 and
size, the format, the key, the answer field, and the counts) and names the manifest digest and
spec digest it was checked against; the manifest is read with its lock verified, like a run's.
Its ``backends`` hold an ``imported`` pseudo-backend (so report footers say so), and it has no
timestamps: importing the same file against the same manifest writes the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from benchc import __version__
from benchc.compiler.canonical import digest
from benchc.compiler.errors import Problem, RunError
from benchc.compiler.manifest import Manifest
from benchc.compiler.metrics import METRIC_SCHEMAS
from benchc.compiler.spec.models import Spec, Stage

from .answer_files import (
    EXAMPLES,
    FORMATS,
    KEYS,
    MEDIA_COLUMN,
    STAGE_COLUMN,
    AnswerRow,
    ImportOptions,
    ParsedFile,
    problem_at,
    read_answers,
)
from ..run.core import RESPONSE_SCHEMA
from ..run.runfolder import check_run_dir, manifest_items, open_manifest, write_run_folder

TEXT_TASKS = frozenset({"generate", "speech-to-text"})
"""Stage tasks whose answers are text (the others answer with audio or images)."""
HARNESS_FORMATS = frozenset({"lm-eval", "lmms-eval", "inspect"})
"""Logs of harnesses that ran the source task: variants they never saw are missing by design."""
IMPORTED = "imported"
MISSING_KIND = "missing"


@dataclass
class ImportResult:
    run_dir: Path
    benchmark: dict[str, Any]
    manifest_digest: str
    format: str
    key: str
    items: int
    answers: int
    expected: int
    missing: int
    repeats: int
    unmatched_ignored: int
    stages: list[str] = field(default_factory=list)
    note: str | None = None  # what the reader chose (an lm-eval filter)
    unanswered_variants: dict[str, int] = field(default_factory=dict)
    missing_by_design: int = 0  # of ``missing``: the answers of the unanswered variants


# matching rows to items ----------------------------------------------------------------------

def _normal(text: str) -> str:
    """Prompts compared with Windows line ends read as Unix ones (a CSV saved by a spreadsheet)."""
    return text.replace("\r\n", "\n")


ORIGINAL_OPS = frozenset({"text.original", "image.original", "audio.original"})
"""The ops whose items are a record's original variant (what answers keyed by record id go to)."""


class ItemIndex:
    """The manifest's items by id (or by record id: the record's original variant, or
    ``variant``), or by rendered prompt with their media; and each item's targets."""

    def __init__(self, items: pl.DataFrame, variant: str | None = None) -> None:
        self.ids = set(items["item_id"].to_list())
        self.variant = variant
        self.by_prompt: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self.records: dict[str, list[tuple[str, str, bool]]] = {}  # record -> (item, variant, original)
        self.node: dict[str, str] = {}
        self.targets: dict[str, set[str]] = {}
        self.via_record: set[str] = set()  # items a row named by their record id
        for row in items.iter_rows(named=True):
            self._add(row)

    def _add(self, row: dict[str, Any]) -> None:
        item_id, prompt = row["item_id"], row["prompt"]
        self.node[item_id] = row.get("node") or ""
        lineage = json.loads(row.get("lineage") or "[]")
        original = bool(lineage) and lineage[-1].get("op") in ORIGINAL_OPS
        self.records.setdefault(str(row["record_id"]), []).append((item_id, self.node[item_id], original))
        raw = row.get("targets") or "{}"
        values = [v for vs in json.loads(raw).values() for v in (vs if isinstance(vs, list) else [vs])]
        self.targets[item_id] = {str(v).strip() for v in values} | {raw} if values else set()
        if prompt is not None:
            shas = tuple(m["sha256"] for m in json.loads(row["media"] or "[]"))
            self.by_prompt.setdefault(_normal(prompt), []).append((item_id, shas))

    def find(self, row: AnswerRow, key: str) -> tuple[str | None, str, bool]:
        """(item id, "", False) for the one item the row names, else (None, why, whether
        several items match)."""
        if key == "id":
            if row.key in self.ids:
                return row.key, "", False
            return self._by_record(row.key) if row.key in self.records else (None, f"no item {_short(row.key)}", False)
        found = self.by_prompt.get(_normal(row.key), [])
        if row.media is not None:
            wanted = sorted(row.media)
            with_media = [f for f in found if sorted(f[1]) == wanted]
            if not with_media and found:
                return None, (f"{len(found)} item(s) have prompt {_short(row.key)}, none with media "
                              f"{_shas(row.media)}"), False
            found = with_media
        if not found:
            return None, f"no item has prompt {_short(row.key)}", False
        if len(found) > 1:
            return None, (f"{len(found)} items have prompt {_short(row.key)}"
                          + (" and these media" if row.media else f" (different media: give {MEDIA_COLUMN})")), True
        return found[0][0], "", False

    def _by_record(self, record: str) -> tuple[str | None, str, bool]:
        """The item of ``record``'s original variant (or of ``--variant``), for a row keyed by record id."""
        variants = self.records[record]
        picked = [item for item, node, original in variants
                  if (node == self.variant if self.variant is not None else original)]
        wanted = f"variant {self.variant!r}" if self.variant is not None else "original variant"
        if len(picked) == 1:
            self.via_record.add(picked[0])
            return picked[0], "", False
        names = ", ".join(sorted({node or "(none)" for _, node, _ in variants}))
        return None, f"record {_short(record)} has {len(picked) or 'no'} item(s) of the {wanted} (variants: {names})", \
            len(picked) > 1

    def target_problem(self, item: str, target: str | None) -> str | None:
        """Why the harness's target for ``item`` is not the item's (None when it is, or is unknown)."""
        mine = self.targets.get(item)
        if target is None or not mine or target.strip() in mine or target in mine:
            return None
        shown = ", ".join(_short(t, 30) for t in sorted(mine) if not t.startswith("{"))
        return f"target {_short(target, 40)}, but item {_short(item)} has {shown}"


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _shas(shas: tuple[str, ...]) -> str:
    return ", ".join(s[:12] for s in shas)


@dataclass
class Matched:
    """What the rows answered, and everything that went wrong, by kind."""

    answers: dict[tuple[str, str, int], tuple[str, int]] = field(default_factory=dict)
    repeats: int = 0
    unmatched: list[tuple[AnswerRow, str]] = field(default_factory=list)
    ambiguous: list[tuple[AnswerRow, str]] = field(default_factory=list)
    invalid: list[tuple[AnswerRow, str]] = field(default_factory=list)
    foreign: list[tuple[AnswerRow, str]] = field(default_factory=list)  # the harness's target is not the item's
    conflicts: list[tuple[AnswerRow, AnswerRow, str]] = field(default_factory=list)
    first: dict[tuple[str, str, int], AnswerRow] = field(default_factory=dict)  # the row of each answer


def match_rows(rows: list[AnswerRow], index: ItemIndex, key: str, default_stage: str | None,
               expected: dict[str, int]) -> Matched:
    out = Matched()
    for row in rows:
        item, why, several = index.find(row, key)
        if item is None:
            (out.ambiguous if several else out.unmatched).append((row, why))
            continue
        wrong_target = index.target_problem(item, row.target)
        if wrong_target is not None:
            out.foreign.append((row, wrong_target))
            continue
        stage = row.stage or default_stage
        if stage not in expected:
            out.invalid.append((row, f"stage {stage!r} is not a text stage of this spec "
                                          f"(stages: {', '.join(expected)})"))
            continue
        for offset, text in enumerate(row.texts):
            _add(out, row, item, stage, row.first_sample + offset, text, expected[stage])
    return out


def _add(out: Matched, row: AnswerRow, item: str, stage: str, sample: int, text: str, samples: int) -> None:
    if sample >= samples:
        out.invalid.append((row, f"item {_short(item)} sample {sample}, but the spec asks {samples} "
                                      f"sample(s) per item (generation.n)"))
        return
    slot = (item, stage, sample)
    if slot not in out.answers:
        out.answers[slot] = (text, row.line)
        out.first[slot] = row
    elif out.answers[slot][0] == text:
        out.repeats += 1
    else:
        out.conflicts.append((out.first[slot], row, f"item {_short(item)}" +
                              (f" sample {sample}" if samples > 1 else "")))


# what the spec asks --------------------------------------------------------------------------

def scored_stages(spec: Spec) -> list[str]:
    """The stages the spec's metrics read (the last stage when it has no metric), in spec order."""
    wanted = set()
    for metric in spec.metric:
        params = METRIC_SCHEMAS.get(metric.name).model_validate(metric.params)
        wanted |= {params.stage or spec.stage[-1].id, *params.extra_stages()}
    if not wanted:
        wanted = {spec.stage[-1].id}
    return [s.id for s in spec.stage if s.id in wanted]


def expected_samples(spec: Spec) -> dict[str, int]:
    """Answers per item of each stage: ``generation.n`` for a first stage that generates, the
    count of its input stage's answers for a later one (a run asks one request per answer)."""
    counts: dict[str, int] = {}
    for stage in spec.stage:
        if stage.input == "prompt":
            counts[stage.id] = spec.generation.n if stage.task == "generate" else 1
        else:
            counts[stage.id] = counts[stage.input]
    return counts


def _importable(spec: Spec, scored: list[str], path: Path) -> dict[str, Stage]:
    stages = {s.id: s for s in spec.stage}
    audio = [s for s in scored if stages[s].task not in TEXT_TASKS]
    if audio:
        raise problem_at(path, None, f"the metrics read stage {audio[0]!r}, which answers with "
                                   f"{stages[audio[0]].task.split('-to-')[-1]}; benchc import reads text answers",
                       "produce those answers with `benchc run`")
    return {s.id: s for s in spec.stage if s.task in TEXT_TASKS}


def _default_stage(scored: list[str], options: ImportOptions, rows: list[AnswerRow],
                   text_stages: dict[str, Stage], path: Path) -> str | None:
    if options.stage is not None:
        if options.stage not in text_stages:
            raise RunError(Problem(f"--stage {options.stage!r} is not a text stage of this spec "
                                   f"(stages: {', '.join(text_stages)})", key="--stage"))
        return options.stage
    if len(scored) == 1 or all(r.stage for r in rows):
        return scored[0]
    unnamed = next(r for r in rows if not r.stage)
    raise problem_at(path, unnamed.line, f"the metrics read stages {', '.join(scored)} and this row names none",
                   f"add a {STAGE_COLUMN!r} column, or import one stage with --stage")


# problems ------------------------------------------------------------------------------------

def _examples(entries: list[tuple[AnswerRow, str]]) -> str:
    shown = "; ".join(f"{row.where}: {why}" for row, why in entries[:EXAMPLES])
    return shown + (f"; and {len(entries) - EXAMPLES} more" if len(entries) > EXAMPLES else "")


def _line(row: AnswerRow) -> int | None:
    """The line a problem points at: none where the path is a folder of several files."""
    return row.line if row.file is None else None


def _lines(a: AnswerRow, b: AnswerRow) -> str:
    return f"lines {a.line} and {b.line}" if a.file is None and b.file is None else f"{a.where} and {b.where}"


def _row_problems(path: Path, found: Matched, options: ImportOptions) -> list[Problem]:
    problems = []

    def add(entries: list[tuple[AnswerRow, str]], what: str, hint: str) -> None:
        if entries:
            problems.append(Problem(f"{len(entries)} row(s) {what}: {_examples(entries)}", file=str(path),
                                    line=_line(entries[0][0]), hint=hint))

    add(found.invalid, "cannot be imported", "fix the stage or sample of these rows")
    if not options.ignore_unmatched:
        add(found.unmatched, "match no item of the manifest",
            "check that the file answers this manifest (same spec version and --set); "
            "--ignore-unmatched skips rows of items outside it")
    add(found.ambiguous, "match several items",
        f"give each row the item's media in {MEDIA_COLUMN!r}, or import by item id (--key id); "
        "rows keyed by record id: name the variant with --variant")
    add(found.foreign, "carry a target that is not their item's",
        "is this a samples file of another task, or of other data? import the log of this spec's task")
    if found.conflicts:
        shown = "; ".join(f"{what} on {_lines(a, b)}" for a, b, what in found.conflicts[:EXAMPLES])
        more = f"; and {len(found.conflicts) - EXAMPLES} more" if len(found.conflicts) > EXAMPLES else ""
        problems.append(Problem(f"{len(found.conflicts)} answer(s) given twice with different texts: {shown}{more}",
                                file=str(path), line=_line(found.conflicts[0][1]),
                                hint="keep one answer per item (and sample); benchc does not choose between them"))
    return problems


def _missing(items: pl.DataFrame, stages: list[str], expected: dict[str, int],
             answers: dict[tuple[str, str, int], tuple[str, int]]) -> list[tuple[str, str, int]]:
    return [(item, stage, sample) for item in items["item_id"].to_list() for stage in stages
            for sample in range(expected[stage]) if (item, stage, sample) not in answers]


def _missing_problem(path: Path, missing: list[tuple[str, str, int]], total: int, items: int,
                     stages: list[str]) -> Problem:
    shown = ", ".join(_slot_name(m, len(stages) > 1) for m in missing[:EXAMPLES])
    return Problem(f"{len(missing)} of {total} answers are missing ({items} items in the manifest), e.g. {shown}",
                   file=str(path), hint="answer every item, or pass --allow-missing to import them as "
                                        "unanswered (an empty answer: never right, agreeing with nothing; "
                                        "run.json and the scores count them)")


def _slot_name(slot: tuple[str, str, int], stages: bool = False) -> str:
    """An answer's name in a message: its item, with its stage and sample where they tell it apart."""
    item, stage, sample = slot
    return repr(item) + (f" (stage {stage}, sample {sample})" if sample or stages else "")


# the run folder ------------------------------------------------------------------------------

def import_answers(manifest_dir: Path, answers_path: Path, run_dir: Path, options: ImportOptions) -> ImportResult:
    _check_options(options)
    manifest, spec = open_manifest(Path(manifest_dir))
    check_run_dir(Path(run_dir))
    path = Path(answers_path)
    parsed = read_answers(path, options)
    items = manifest_items(manifest)
    scored = scored_stages(spec)
    text_stages = _importable(spec, scored, path)
    expected = {s: n for s, n in expected_samples(spec).items() if s in text_stages}
    default = _default_stage(scored, options, parsed.rows, text_stages, path)
    index = ItemIndex(items, options.variant)
    _check_variant(index, options.variant)
    found = match_rows(parsed.rows, index, options.key, default, expected)
    stages = [s for s in text_stages if s in scored or any(k[1] == s for k in found.answers)]
    problems = _row_problems(path, found, options)
    missing = _missing(items, stages, expected, found.answers)
    by_design = bool(index.via_record) or parsed.format in HARNESS_FORMATS
    unanswered = unanswered_variants(index, missing, found) if by_design else {}
    total = items.height * sum(expected[s] for s in stages)
    lacking = [m for m in missing if index.node[m[0]] not in unanswered]
    if lacking and not options.allow_missing:
        problems.append(_missing_problem(path, lacking, total, items.height, stages))
    if problems:
        raise RunError(problems)
    source = _source_facts(path, parsed, options, found, missing, total, stages, manifest)
    source.update(_variant_facts(index, unanswered, missing))
    frame = _responses(found, missing, source["source_sha256"])
    record = _record(manifest, options, stages, expected, found, missing, items.height, source)
    write_run_folder(Path(run_dir), frame, record)
    return ImportResult(Path(run_dir), manifest.locked.benchmark.to_json(), manifest.locked.manifest_digest,
                        parsed.format,
                        options.key, items.height, len(found.answers), total, len(missing), found.repeats,
                        len(found.unmatched), stages, parsed.note, unanswered, len(missing) - len(lacking))


def unanswered_variants(index: ItemIndex, missing: list[tuple[str, str, int]], found: Matched) -> dict[str, int]:
    """The variants (nodes) no answer went to, with their item counts. When rows were keyed by
    record id, or come from another harness's log, they are missing by design, not by mistake:
    that harness ran the source records once, which answers one variant."""
    answered = {index.node[item] for item, _, _ in found.answers}
    counts: dict[str, int] = {}
    for item in dict.fromkeys(m[0] for m in missing):
        if index.node[item] not in answered:
            counts[index.node[item]] = counts.get(index.node[item], 0) + 1
    return dict(sorted(counts.items()))


def _variant_facts(index: ItemIndex, unanswered: dict[str, int], missing: list[tuple[str, str, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if index.via_record:
        out["by_record"] = {"variant": index.variant or "original", "items": len(index.via_record)}
    if unanswered:
        out["unanswered_variants"] = unanswered
        out["missing_in_unanswered_variants"] = sum(1 for m in missing if index.node[m[0]] in unanswered)
    return out


def _check_variant(index: ItemIndex, variant: str | None) -> None:
    names = sorted(set(index.node.values()))
    if variant is not None and variant not in names:
        raise RunError(Problem(f"--variant {variant!r} is no variant of this manifest", key="--variant",
                               hint=f"the variants (graph nodes): {', '.join(repr(n) for n in names if n) or 'none'}"))


def _check_options(options: ImportOptions) -> None:
    if options.format not in FORMATS:
        raise RunError(Problem(f"unknown --format {options.format!r}", key="--format",
                               hint=f"one of {', '.join(FORMATS)}"))
    if options.key not in KEYS:
        raise RunError(Problem(f"unknown --key {options.key!r}", key="--key",
                               hint="id (an item_id/id column) or prompt (the rendered prompt, with media_sha256)"))


def _source_facts(path: Path, parsed: ParsedFile, options: ImportOptions, found: Matched,
                  missing: list[tuple[str, str, int]], total: int, stages: list[str],
                  manifest: Manifest) -> dict[str, Any]:
    return {"source": str(path.resolve()), "source_sha256": parsed.sha256, "source_bytes": parsed.size,
            "format": parsed.format, "key": options.key, "answer_field": parsed.answer_field,
            **({"read": parsed.note} if parsed.note else {}),
            "rows": len(parsed.rows), "answers": len(found.answers), "expected": total,
            "identical_repeats": found.repeats, "unmatched_ignored": len(found.unmatched),
            "missing": len(missing), "missing_examples": [_slot_name(m, len(stages) > 1) for m in missing[:10]],
            "allow_missing": options.allow_missing, "stages": stages,
            "checked_against": {"manifest_digest": manifest.locked.manifest_digest,
                                "spec_digest": manifest.locked.spec_digest}}


def _response_key(source_sha256: str, slot: tuple[str, str, int], missing: bool = False) -> str:
    item, stage, sample = slot
    return digest({"kind": "imported-answer", "source": source_sha256, "item": item, "stage": stage,
                   "sample": sample, "missing": missing})


def _responses(found: Matched, missing: list[tuple[str, str, int]], source_sha256: str) -> pl.DataFrame:
    rows = [{"item_id": item, "stage": stage, "sample": sample, "key": _response_key(source_sha256, slot),
             "kind": "text", "text": text, "blob": None}
            for slot, (text, _) in found.answers.items() for item, stage, sample in [slot]]
    rows += [{"item_id": item, "stage": stage, "sample": sample, "key": _response_key(source_sha256, slot, True),
              "kind": MISSING_KIND, "text": None, "blob": None} for slot in missing for item, stage, sample in [slot]]
    return pl.DataFrame(rows, schema=RESPONSE_SCHEMA, orient="row").sort("item_id", "stage", "sample")


def _record(manifest: Manifest, options: ImportOptions, stages: list[str], expected: dict[str, int],
            found: Matched, missing: list[tuple[str, str, int]], items: int, source: dict[str, Any]) -> dict[str, Any]:
    fingerprint = {"backend": IMPORTED, "format": source["format"], "key": options.key,
                   "source_sha256": source["source_sha256"]}
    outcomes = []
    for stage in stages:
        answered = sum(1 for k in found.answers if k[1] == stage)
        outcomes.append({"stage": stage, "backend": IMPORTED, "requests": items * expected[stage], "cached": 0,
                         "ran": 0, "imported": answered, "missing": sum(1 for m in missing if m[1] == stage)})
    return {"benchc": __version__, "manifest": str(Path(manifest.root).resolve()),
            "benchmark": manifest.locked.benchmark.to_json(), "manifest_digest": manifest.locked.manifest_digest,
            "spec_digest": manifest.locked.spec_digest, "model": options.model, "stages": outcomes,
            "backends": {stage: fingerprint for stage in stages}, "executor": IMPORTED, "imported": source}
