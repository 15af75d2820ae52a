"""lm-evaluation-harness tasks as a source (``lm_eval_task``, issue 29, first slice).

An lm-eval task YAML (with its ``include:`` chain) and its data on disk become one record per
document of the evaluated split. Each record carries the document's fields and, under
``lm_eval``, what lm-eval 0.4.13 would send for it: ``prompt`` is, byte for byte, the context
lm-eval logs as ``arguments.gen_args_0.arg_0`` (few-shot examples included) for a plain
(no chat template) ``generate_until`` or ``multiple_choice`` run.

lm-eval itself is not imported: its behaviour is reproduced here, each detail commented with
the lm-eval 0.4.13 function it mirrors. Pure YAML + Jinja tasks are read as they are; a task whose
prompt, target, choices or documents come from Python (``!function``) is refused, unless the spec
sets ``allow_task_code = true`` and lm-eval is installed: its functions then run at compile time
(``lm_eval_code``: process_docs, doc_to_text, doc_to_target, doc_to_choice). Nothing is fetched: a task that names a hub
dataset reads it from ``data`` (a ``save_to_disk`` folder or a folder of its data files).

Not read yet (each refused with a clear error, or noted): chat templates and
``fewshot_as_multiturn`` (lm-eval's ``--apply_chat_template`` prompts), system instructions,
multiple-input tasks (``doc_to_text`` giving a choice index, Winogrande), ``loglikelihood_rolling``,
``use_prompt`` (promptsource), a ``!function`` in any key but those above, multimodal
``doc_to_image``/``doc_to_audio``, remote ``data_files``, ``dataset_kwargs`` other than
``data_files`` and ``field``. Types follow Arrow's inference per split (a column mixing 1 and 1.5
reads 1.0, as in datasets); datasets' casting of later splits to the first split's features
is not reproduced. The answer filters and metrics (``filter_list``, ``metric_list``) are for a
later slice; a ``!function`` there is not refused here.

Record ids are the document's index in the evaluated split, zero-padded to six digits
(``000007``): lm-eval's own ``doc_id``, unique and present for every task, where an ``id``
column may repeat, be missing or not exist at all.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ..errors import Problem, SourceError
from ..paths import check_within_roots, inside, relative_to_roots, resolve_in_roots
from ..templates import BoundedSandboxedEnvironment, TemplateProblem, render
from ..values import Record
from .base import SOURCES, FileDigest, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import At, RowError, folder_digest, jsonable

Doc = dict[str, Any]

LM_EVAL_VERSION = "0.4.13"
"""The lm-eval release whose prompts this loader reproduces."""

DEFAULT_FEWSHOT_SEED = 1234
"""lm_eval/defaults.py DEFAULT_OTHER_SEED: simple_evaluate's ``fewshot_random_seed``."""

TASK_KEYS = frozenset({
    "task", "task_alias", "custom_dataset", "dataset_path", "dataset_name", "dataset_kwargs",
    "training_split", "validation_split", "test_split", "fewshot_split", "process_docs", "doc_to_text",
    "doc_to_target", "doc_to_image", "doc_to_audio", "unsafe_code", "doc_to_choice", "process_results",
    "use_prompt", "description", "target_delimiter", "fewshot_delimiter", "fewshot_config", "num_fewshot",
    "metric_list", "output_type", "generation_kwargs", "repeats", "filter_list", "should_decontaminate",
    "doc_to_decontamination_query", "gen_prefix", "metadata"})
"""lm_eval/config/task.py TaskConfig's fields: ConfigurableTask builds ``TaskConfig(**config)``,
so any other key (after TaskFactory._build_task drops tag, group and task_list) fails there."""

FEWSHOT_KEYS = frozenset({"sampler", "split", "process_docs", "fewshot_indices", "samples", "doc_to_text",
                          "doc_to_choice", "doc_to_target", "gen_prefix", "fewshot_delimiter",
                          "target_delimiter"})
"""lm_eval/config/task.py FewshotConfig's fields (``FewshotConfig(**cfg_dict)``)."""

UNREAD_KEYS = frozenset({"process_results", "metric_list", "filter_list", "metadata", "task_alias", "repeats",
                         "unsafe_code", "should_decontaminate", "doc_to_decontamination_query"})
"""Keys this loader does not read: a ``!function`` there (a custom metric, filter or scorer, for
the answer rules and metrics of a later slice of issue 29) does not change the prompts."""

OUTPUT_TYPES = ("generate_until", "multiple_choice", "loglikelihood")
"""lm-eval output types whose request context (``arg_0``) is the few-shot context built here;
``loglikelihood_rolling`` sends the target alone and is not read."""

DATA_FORMATS = {"json": "json", "csv": "csv", "parquet": "parquet"}
"""``dataset_path`` values that name a ``datasets`` packaged builder reading ``data_files``."""

FILE_FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
"""Data files found by extension in a folder of a hub dataset's files (``data``)."""


class LmEvalTaskParams(SourceParams):
    task: str = Field(description="the lm-eval task YAML (its include: files are read too)")
    split: str | None = Field(None, description="the split to evaluate (default: the YAML's test_split, "
                                                "else its validation_split), as if it were its test_split")
    data: str | None = Field(None, description="a folder the YAML's data_files are relative to (default: the "
                                               "YAML's folder), a save_to_disk dataset folder, or a folder "
                                               "of a hub dataset's jsonl/json/csv/parquet files")
    num_fewshot: int | None = Field(None, ge=0, description="few-shot examples (default: the YAML's, else 0)")
    fewshot_seed: int = Field(DEFAULT_FEWSHOT_SEED, description="lm-eval's --fewshot_random_seed")
    limit: int | None = Field(None, ge=1, description="only the first N documents (lm-eval's --limit N)")
    allow_task_code: bool = Field(False, description="run the task's Python functions (!function: process_docs, "
                                                     "doc_to_text, doc_to_target, doc_to_choice) at compile time; "
                                                     "needs lm-eval installed. Off: such a task is refused")
    perturb: str | None = Field(None, description="the document field (a text) the spec's graph perturbs: each "
                                                  "record gets lm_eval.before and lm_eval.after, the prompt around "
                                                  "the field's text, so that the prompt template "
                                                  "'{{ record.lm_eval.before }}{{ text }}{{ record.lm_eval.after }}' "
                                                  "is lm-eval's prompt with the perturbed text in its place")

    @model_serializer(mode="wrap")
    def _task_code_when_allowed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``allow_task_code`` is written only when set: the specs written before it keep their
        documents, hence their digests."""
        out: dict[str, Any] = handler(self)
        if not self.allow_task_code:
            out.pop("allow_task_code", None)
        return out


# --- the task YAML ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskFunction:
    """A ``!function name`` value: lm-eval imports and runs ``name``; benchc runs it only with
    ``allow_task_code`` (``lm_eval_code``). ``folder``: the folder of the YAML that names it."""

    name: str
    file: str
    line: int
    folder: str = ""


def _yaml_loader(label: str, folder: str = "") -> Any:
    """PyYAML's safe loader (its C version where built, as lm_eval/tasks/_yaml_loader.py
    ``_make_loader`` picks ``yaml.CSafeLoader``) that reads ``!function`` as a TaskFunction."""
    import yaml

    base = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    def function(loader: Any, node: Any) -> TaskFunction:
        return TaskFunction(str(loader.construct_scalar(node)), label, node.start_mark.line + 1, folder)

    Loader.add_constructor("!function", function)
    return Loader


def _parse_yaml(path: Path, label: str) -> dict[str, Any]:
    # PyYAML is imported where used: it comes with datasets and transformers, not as benchc's own
    # dependency, and every module of this package is imported with it
    import yaml

    try:
        # bytes, as lm-eval's load_yaml opens the file "rb": YAML detects the encoding itself
        loaded = yaml.load(path.read_bytes(), Loader=_yaml_loader(label, str(path.parent)))  # noqa: S506 (safe)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise SourceError(Problem(f"not valid YAML: {exc.problem}", file=label,
                                  line=mark.line + 1 if mark else None)) from None
    except yaml.YAMLError as exc:
        raise SourceError(Problem(f"not valid YAML: {exc}", file=label)) from None
    if not isinstance(loaded, dict):
        raise SourceError(Problem(f"expected a YAML mapping, found {type(loaded).__name__}", file=label))
    return loaded


def _near(ctx: SourceContext, folder: Path, written: str, key: str) -> Path:
    """``written`` relative to ``folder`` (a real path inside a data root), or absolute; refused
    when it leaves the data roots, like any spec path (``ctx.resolve``)."""
    target = Path(os.path.normpath(folder / written))
    for root in ctx.roots:
        real = root.resolve()
        if inside(target, real):  # that root first, so a same-named file of another root is not read
            others = [r for r in ctx.roots if r.resolve() != real]
            return resolve_in_roots(target.relative_to(real).as_posix(), [real, *others], key, ctx.spec_file)
    return ctx.resolve(written if os.path.isabs(written) else os.path.relpath(target, ctx.roots[0].resolve()),
                       key)


def task_label(ctx: SourceContext, path: Path) -> str:
    return relative_to_roots(path, ctx.roots)


def load_task_yaml(path: Path, ctx: SourceContext, files: list[FileDigest],
                   seen: set[Path] | None = None) -> dict[str, Any]:
    """The task's keys with its ``include:`` chain merged, as lm_eval/tasks/_yaml_loader.py
    ``load_yaml`` merges them: each included file (relative to the including one) is loaded
    recursively and drops ``task_list``; later includes win over earlier ones, and the including
    file's own keys win over all (a shallow ``dict.update``, no deep merge). ``seen`` is shared
    by the whole chain, so a file included twice is refused, as lm-eval refuses it."""
    seen = set() if seen is None else seen
    label = task_label(ctx, path)
    if path in seen:
        raise SourceError(Problem("include cycle: this file is included twice (lm-eval refuses it too)",
                                  file=label, key="include"))
    seen.add(path)
    cfg = _parse_yaml(path, label)
    files.append(ctx.file_digest(path))
    if "include" not in cfg:
        return cfg
    includes = cfg.pop("include")
    merged: dict[str, Any] = {}
    for written in includes if isinstance(includes, list) else [includes]:
        included = _near(ctx, path.parent, str(written), key=f"{label} include")
        inc_cfg = load_task_yaml(included, ctx, files, seen)
        inc_cfg.pop("task_list", None)
        merged.update(inc_cfg)
    merged.update(cfg)
    return merged


def first_function(value: Any, key: str) -> tuple[str, TaskFunction] | None:
    """The first ``!function`` in ``value`` (walked in YAML order), with its key path."""
    if isinstance(value, TaskFunction):
        return key, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for part, item in items:
        found = first_function(item, f"{key}.{part}" if isinstance(part, str) else f"{key}[{part}]")
        if found is not None:
            return found
    return None


def refuse_functions(cfg: dict[str, Any]) -> None:
    """One line naming the first ``!function`` of a key this loader reads, and where it is."""
    for key, value in cfg.items():
        found = None if key in UNREAD_KEYS else first_function(value, key)
        if found is not None:
            path, function = found
            raise SourceError(Problem(
                f"{path} is lm-eval Python code (!function {function.name}); benchc does not run a task's "
                "Python functions", file=function.file, line=function.line, key=path,
                hint="set source.allow_task_code = true to run it (with lm-eval installed), or write "
                     f"{path} as a Jinja template or a field name"))


def resolve_functions(cfg: dict[str, Any], code: Any, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The task's keys with each ``!function`` of a key that makes documents or prompts (and of
    those keys of fewshot_config) replaced by the function itself (``lm_eval_code.TaskCode``)."""
    from .lm_eval_code import RUNNABLE_KEYS

    out = dict(cfg)
    for key in keys or RUNNABLE_KEYS:
        if isinstance(out.get(key), TaskFunction):
            out[key] = code.resolve(out[key], key)
    fewshot = out.get("fewshot_config")
    if isinstance(fewshot, dict):
        out["fewshot_config"] = {k: code.resolve(v, f"fewshot_config.{k}")
                                 if k in RUNNABLE_KEYS and isinstance(v, TaskFunction) else v
                                 for k, v in fewshot.items()}
    return out


# --- the task's settings, as lm-eval's TaskConfig holds them --------------------------------------


@dataclass(frozen=True)
class FewshotSettings:
    """lm_eval/config/task.py FewshotConfig.from_dict: each field defaults to the task's own
    (``fewshot_split`` as ``split``), then ``fewshot_config``'s keys override."""

    sampler: str
    split: str | None
    samples: list[Doc] | None
    process_docs: Any
    doc_to_text: Any
    doc_to_choice: Any
    doc_to_target: Any
    gen_prefix: Any
    fewshot_delimiter: str
    target_delimiter: str


@dataclass(frozen=True)
class TaskSettings:
    name: str
    file: str
    cfg: dict[str, Any]
    output_type: str
    doc_to_text: Any
    doc_to_target: Any
    doc_to_choice: Any
    description: Any
    gen_prefix: Any
    target_delimiter: str
    fewshot_delimiter: str
    fewshot: FewshotSettings
    num_fewshot: int | None
    until: list[str] | None

    def get(self, key: str) -> Any:
        return self.cfg.get(key)


def _problem(message: str, file: str, key: str | None = None, hint: str | None = None) -> SourceError:
    return SourceError(Problem(message, file=file, key=key, hint=hint))


def _check_shape(cfg: dict[str, Any], file: str) -> None:
    """What lm-eval would refuse or this slice cannot read, before any data is loaded."""
    # lm_eval/tasks/_index.py TaskIndex._kind_of: `class` is a Python task, `group` a group
    if "class" in cfg:
        raise _problem("a Python task class (class:), not a YAML task", file, "class",
                       "lm-eval's Python functions are not run; a pure YAML + Jinja task works")
    if "group" in cfg or not isinstance(cfg.get("task"), str):
        raise _problem("not a single task (a group, or no task: name)", file, "task",
                       "point source.task at the YAML of one task")
    for key in ("tag", "task_list"):  # lm_eval/tasks/_factory.py TaskFactory._build_task drops them
        cfg.pop(key, None)
    unknown = sorted(set(cfg) - TASK_KEYS)
    if unknown:
        raise _problem(f"unknown task key(s) {', '.join(unknown)}: lm-eval {LM_EVAL_VERSION}'s TaskConfig "
                       "refuses them too", file, unknown[0])
    refuse_functions(cfg)
    for key, why in (("use_prompt", "promptsource prompts"), ("doc_to_image", "images (an lmms-eval task?)"),
                     ("doc_to_audio", "audio"), ("custom_dataset", "a custom dataset"),
                     ("process_docs", "documents processed by Python")):
        if cfg.get(key) and not callable(cfg.get(key)):
            raise _problem(f"{key}: {why} are not read by lm_eval_task yet", file, key)
    output_type = cfg.get("output_type", "generate_until")
    if output_type not in OUTPUT_TYPES:
        raise _problem(f"output_type {output_type!r} is not read by lm_eval_task yet", file, "output_type",
                       f"it reads {', '.join(OUTPUT_TYPES)}")


def until_of(cfg: dict[str, Any], fewshot_delimiter: str) -> list[str] | None:
    """lm_eval/config/task.py TaskConfig.__post_init__: without ``until``, generation stops at
    the few-shot delimiter (lm_eval/defaults.py default_gen_kwargs when no generation_kwargs)."""
    if cfg.get("output_type", "generate_until") != "generate_until":
        return None
    kwargs = cfg.get("generation_kwargs") or {}
    until = kwargs.get("until", [fewshot_delimiter]) if isinstance(kwargs, dict) else [fewshot_delimiter]
    if until is None:
        return []
    return [until] if isinstance(until, str) else [str(u) for u in until]


def _fewshot_settings(cfg: dict[str, Any], file: str, defaults: dict[str, Any]) -> FewshotSettings:
    given = cfg.get("fewshot_config") or {}
    if not isinstance(given, dict):
        raise _problem("fewshot_config is not a mapping", file, "fewshot_config")
    unknown = sorted(set(given) - FEWSHOT_KEYS)
    if unknown:
        raise _problem(f"unknown fewshot_config key(s) {', '.join(unknown)}", file, f"fewshot_config.{unknown[0]}")
    settings = {"sampler": "default", "split": cfg.get("fewshot_split"), "samples": None,
                "process_docs": cfg.get("process_docs"), **defaults, **given}
    if settings["sampler"] not in ("default", "first_n"):
        # lm_eval/api/samplers.py SAMPLER_REGISTRY: balanced and manual raise NotImplementedError
        raise _problem(f"few-shot sampler {settings['sampler']!r} is not one lm-eval implements",
                       file, "fewshot_config.sampler", "use default or first_n")
    if settings["process_docs"] is not None and not callable(settings["process_docs"]):
        raise _problem("fewshot_config.process_docs is not a !function", file, "fewshot_config.process_docs")
    samples = settings["samples"]
    if samples is not None and not (isinstance(samples, list) and all(isinstance(s, dict) for s in samples)):
        raise _problem("fewshot_config.samples is not a list of documents", file, "fewshot_config.samples")
    # lm_eval/api/task.py ConfigurableTask.__init__ builds the sampler without fewshot_indices,
    # so lm-eval 0.4.13 ignores them, and so does this loader
    fields = {k: settings[k] for k in FewshotSettings.__dataclass_fields__}
    return FewshotSettings(**fields)


def task_settings(cfg: dict[str, Any], file: str) -> TaskSettings:
    """The task's settings with TaskConfig's defaults (lm_eval/config/task.py)."""
    _check_shape(cfg, file)
    target_delimiter = cfg.get("target_delimiter", " ")
    fewshot_delimiter = cfg.get("fewshot_delimiter", "\n\n")
    for key, value in (("target_delimiter", target_delimiter), ("fewshot_delimiter", fewshot_delimiter)):
        if not isinstance(value, str):
            raise _problem(f"{key} is a {type(value).__name__}, not a text", file, key)
    shared = {"doc_to_text": cfg.get("doc_to_text"), "doc_to_target": cfg.get("doc_to_target"),
              "doc_to_choice": cfg.get("doc_to_choice"), "gen_prefix": cfg.get("gen_prefix")}
    fewshot = _fewshot_settings(cfg, file, {**shared, "fewshot_delimiter": fewshot_delimiter,
                                            "target_delimiter": target_delimiter})
    return TaskSettings(name=cfg["task"], file=file, cfg=cfg, output_type=cfg.get("output_type", "generate_until"),
                        description=cfg.get("description", ""), target_delimiter=target_delimiter,
                        fewshot_delimiter=fewshot_delimiter, fewshot=fewshot, num_fewshot=cfg.get("num_fewshot"),
                        until=until_of(cfg, fewshot_delimiter), **shared)


# --- the data -----------------------------------------------------------------------------------


@dataclass
class Docs:
    """One split's documents, where each one is, and its columns (lm-eval's ``features``)."""

    docs: list[Doc]
    at: list[At]
    columns: list[str]


def _arrow_rows(rows: list[Doc]) -> list[Doc]:
    """Rows as a ``datasets`` table gives them back: every row has every column of the split
    (a missing one is None) and a column's values share one Arrow type (1 becomes 1.0 in a
    column that also holds 1.5), since ``datasets`` reads JSON into one Arrow table. Rows whose
    values Arrow cannot type together are kept as read, every column filled in."""
    import pyarrow as pa

    try:
        return list(pa.array(rows).to_pylist()) if rows else []
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        columns = list(dict.fromkeys(k for row in rows for k in row))
        return [{c: row.get(c) for c in columns} for row in rows]


def _json_rows(path: Path, label: str, ctx: SourceContext, field_name: str | None) -> list[tuple[At, Doc]]:
    """A JSON Lines file, or a JSON list of objects (under ``field`` when the YAML's
    dataset_kwargs name one), as datasets' json builder reads both."""
    text = path.read_text(encoding="utf-8-sig")
    if field_name is not None or text.lstrip().startswith("["):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SourceError(Problem(f"not valid JSON: {exc.msg}", file=label, line=exc.lineno)) from None
        items = loaded.get(field_name) if field_name is not None and isinstance(loaded, dict) else loaded
        if not isinstance(items, list):
            raise SourceError(Problem("expected a list of JSON objects", file=label, key=field_name))
        return _objects(((At(Path(label), key=f"[{n}]"), item) for n, item in enumerate(items)), ctx)
    return _objects(_json_lines(text, label, ctx), ctx)


def _json_lines(text: str, label: str, ctx: SourceContext) -> Iterator[tuple[At, Any]]:
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 is valid inside JSON
        if not line.strip():
            continue
        try:
            yield At(Path(label), line=number), json.loads(line)
        except json.JSONDecodeError as exc:
            ctx.bad_row(Problem(f"not valid JSON: {exc.msg} (column {exc.colno})", file=label, line=number))


def _objects(entries: Iterator[tuple[At, Any]], ctx: SourceContext) -> list[tuple[At, Doc]]:
    rows = []
    for at, item in entries:
        if isinstance(item, dict):
            rows.append((at, item))
        else:
            ctx.bad_row(at.problem(f"expected a JSON object, found {type(item).__name__}"))
    return rows


def _csv_rows(path: Path, label: str) -> list[tuple[At, Doc]]:
    """datasets' csv builder: pandas.read_csv with its defaults, then an Arrow table."""
    import pandas as pd
    import pyarrow as pa

    try:
        frame = pd.read_csv(path)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise SourceError(Problem(f"cannot read CSV: {exc}", file=label)) from None
    rows = pa.Table.from_pandas(frame, preserve_index=False).to_pylist()
    return [(At(Path(label), line=n + 2), row) for n, row in enumerate(rows)]


def _parquet_rows(path: Path, label: str) -> list[tuple[At, Doc]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise SourceError(Problem(f"cannot read Parquet: {exc}", file=label)) from None
    return [(At(Path(label), key=f"row {n + 1}"), row) for n, row in enumerate(rows)]


class TaskData:
    """The task's splits, read once each from local files; every file read enters ``files``."""

    def __init__(self, task: TaskSettings, yaml_folder: Path, params: LmEvalTaskParams, ctx: SourceContext) -> None:
        self.task, self.ctx = task, ctx
        self.files: list[FileDigest] = []
        self.data = ctx.resolve(params.data, key="source.data") if params.data is not None else None
        if self.data is not None and not self.data.is_dir():
            raise _problem("source.data is a file, not a folder", task.file, "source.data",
                           "name the folder the YAML's data_files are relative to, or a dataset folder")
        self.base = self.data if self.data is not None else yaml_folder
        self._splits: dict[str, Docs] = {}
        kwargs = task.get("dataset_kwargs") or {}
        self.kwargs: dict[str, Any] = kwargs if isinstance(kwargs, dict) else {}

    def split(self, name: str) -> Docs:
        if name not in self._splits:
            self._splits[name] = self._read(name)
        return self._splits[name]

    def _read(self, split: str) -> Docs:
        if self.data is not None and self._saved(self.data):
            return self._read_saved(self.data, split)
        builder = DATA_FORMATS.get(str(self.task.get("dataset_path")))
        if builder is not None:
            if self.kwargs.get("data_files") is None:
                raise _problem(f"dataset_path {builder} without dataset_kwargs.data_files", self.task.file,
                               "dataset_kwargs.data_files")
            return self._rows([(f, builder) for f in self._data_files(split)])
        if self.data is not None:
            return self._rows(self._snapshot_files(split))
        raise _problem(f"the task reads the hub dataset {self.task.get('dataset_path')!r}; nothing is fetched",
                       self.task.file, "dataset_path",
                       "set source.data to its save_to_disk folder or a folder of its data files")

    @staticmethod
    def _saved(folder: Path) -> bool:
        return folder.is_dir() and ((folder / "dataset_dict.json").is_file() or (folder / "state.json").is_file())

    def _data_files(self, split: str) -> list[Path]:
        """``dataset_kwargs.data_files`` of a split (a path, a list, or split -> path(s); a bare
        path or list is the ``train`` split, as in datasets), relative to ``data`` or the YAML."""
        written = self.kwargs["data_files"]
        by_split = written if isinstance(written, dict) else {"train": written}
        if split not in by_split:
            raise _problem(f"no data_files for split {split!r}", self.task.file, "dataset_kwargs.data_files",
                           f"the task has: {', '.join(map(str, by_split))}")
        names = by_split[split] if isinstance(by_split[split], list) else [by_split[split]]
        return [path for name in names for path in self._expand(str(name))]

    def _expand(self, name: str) -> list[Path]:
        key = "dataset_kwargs.data_files" if self.data is None else "source.data"
        if "://" in name:
            raise _problem(f"data file {name!r} is remote; nothing is fetched", self.task.file, key)
        if not any(c in name for c in "*?["):
            return [_near(self.ctx, self.base, name, key)]
        if os.path.isabs(name):
            raise _problem(f"data file pattern {name!r} is absolute; write it relative to the data folder",
                           self.task.file, key)
        found = sorted(p for p in self.base.glob(name) if p.is_file())  # datasets sorts a pattern's matches
        if not found:
            raise _problem(f"no file matches {name!r} under {task_label(self.ctx, self.base)}", self.task.file, key)
        return [check_within_roots(p, self.ctx.roots, key, name, self.ctx.spec_file) for p in found]

    def _snapshot_files(self, split: str) -> list[tuple[Path, str]]:
        """A hub dataset's files for ``split``: under ``data`` (or its ``dataset_name`` folder),
        files in a ``<split>/`` folder or named ``<split>-...`` / ``<split>.<ext>``, sorted."""
        assert self.data is not None
        folder = self.data
        name = self.task.get("dataset_name")
        if isinstance(name, str) and (folder / name).is_dir():
            folder = folder / name

        def wanted(path: Path) -> bool:
            parts = path.relative_to(folder).parts
            return split in parts[:-1] or path.name.startswith((f"{split}-", f"{split}."))

        found = sorted((p for p in folder.rglob("*") if p.is_file() and p.suffix in FILE_FORMATS and wanted(p)),
                       key=lambda p: p.as_posix())
        if not found:
            raise _problem(f"no data files of split {split!r} in {task_label(self.ctx, folder)}", self.task.file,
                           "source.data", "name files <split>-*.parquet (or .jsonl, .json, .csv), or <split>/...")
        return [(check_within_roots(p, self.ctx.roots, "source.data", p.name, self.ctx.spec_file),
                 FILE_FORMATS[p.suffix]) for p in found]

    def _rows(self, files: list[tuple[Path, str]]) -> Docs:
        entries: list[tuple[At, Doc]] = []
        for path, builder in files:
            label = task_label(self.ctx, path)
            read = (_csv_rows(path, label) if builder == "csv" else _parquet_rows(path, label)
                    if builder == "parquet" else _json_rows(path, label, self.ctx, self.kwargs.get("field")))
            self.files.append(self.ctx.file_digest(path, len(read)))
            entries += read
        docs = _arrow_rows([row for _, row in entries])
        columns = list(docs[0]) if docs else []
        return Docs(docs, [at for at, _ in entries], columns)

    def _read_saved(self, folder: Path, split: str) -> Docs:
        """A ``save_to_disk`` folder, read as hf_dataset reads it: Arrow rows, nothing decoded."""
        import datasets

        part = folder / split if (folder / "dataset_dict.json").is_file() else folder
        if not (part / "state.json").is_file():
            raise _problem(f"the dataset in {task_label(self.ctx, folder)} has no split {split!r}", self.task.file,
                           "source.data")
        files = sorted(f for f in part.rglob("*") if f.is_file())
        for file in files:
            check_within_roots(file, self.ctx.roots, "source.data", file.name, self.ctx.spec_file)
        dataset = datasets.load_from_disk(str(part))
        rows = [row for batch in dataset.with_format("arrow").iter(batch_size=256) for row in batch.to_pylist()]
        self.files.append(folder_digest(task_label(self.ctx, part), part, files))
        at = [At(Path(task_label(self.ctx, part)), key=f"row {n + 1}") for n in range(len(rows))]
        return Docs(rows, at, list(dataset.column_names))


# --- rendering, as lm_eval/api/task.py ConfigurableTask does ---------------------------------------


def _regex_replace(string: str, pattern: str, repl: str, count: int = 0) -> str:
    """lm_eval/utils.py regex_replace, the one filter lm-eval adds to Jinja's."""
    return re.sub(pattern, repl, string, count=count)


def _environment() -> BoundedSandboxedEnvironment:
    """lm_eval/utils.py ``env``: ``Environment(loader=BaseLoader, undefined=StrictUndefined,
    keep_trailing_newline=True)`` with ``regex_replace``, and otherwise Jinja's defaults (no
    trim_blocks, no lstrip_blocks, no autoescape) -- but inside benchc's bounded sandbox
    (compiler/templates.py), so a task's templates have a spec's limits. benchc's own prompt
    environment differs (trim_blocks, no trailing newline), so it is not used here."""
    env = BoundedSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["regex_replace"] = _regex_replace
    env.guard_filters()
    return env


_ENV = _environment()


@lru_cache(maxsize=256)
def _template(source: str) -> jinja2.Template:
    try:
        return _ENV.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error on template line {exc.lineno}: {exc.message}") from None


def apply_template(source: str, doc: Doc, key: str) -> str:
    """lm_eval/utils.py apply_template: render with the document's fields as variables."""
    try:
        return render(_template(source), doc)
    except TemplateProblem as exc:
        raise RowError(f"{key}: {exc}") from None


def _field(doc: Doc, name: str, key: str) -> Any:
    """``doc[name]`` for a ``key`` that names a column (a few-shot sample may lack it)."""
    if name not in doc:
        raise RowError(f"{key}: the document has no field {name!r}")
    return doc[name]


def _literal(text: str, key: str) -> Any:
    """``ast.literal_eval`` where lm-eval calls it and lets it fail."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        raise RowError(f"{key}: {text[:80]!r} is not a Python literal (lm-eval's ast.literal_eval fails)") from None


class Renderer:
    """doc_to_text / doc_to_target / doc_to_choice of lm_eval/api/task.py ConfigurableTask, for
    templates and field names. ``columns`` are the evaluated split's (lm-eval's ``features``),
    used for the few-shot documents too, as lm-eval uses them."""

    def __init__(self, task: TaskSettings, columns: list[str]) -> None:
        self.task, self.columns = task, set(columns)

    def text(self, doc: Doc, spec: Any = None) -> Any:
        """ConfigurableTask.doc_to_text: a field name gives the field; a template's digits
        become an int when the task has choices (a multiple-input task)."""
        spec = self.task.doc_to_text if spec is None else spec
        if callable(spec):  # a !function the spec lets run (lm_eval_code)
            return spec(doc)
        if isinstance(spec, int):
            return spec
        if not isinstance(spec, str):
            raise RowError(f"doc_to_text is a {type(spec).__name__}, not a template or field name")
        if spec in self.columns:
            return _field(doc, spec, "doc_to_text")
        text = apply_template(spec, doc, "doc_to_text")
        return _literal(text, "doc_to_text") if text.isdigit() and self.task.doc_to_choice is not None else text

    def target(self, doc: Doc, spec: Any = None) -> Any:
        """ConfigurableTask.doc_to_target: digits become an index when the task has choices, and
        a rendered ``[...]`` becomes a list when it parses as a Python literal."""
        spec = self.task.doc_to_target if spec is None else spec
        if callable(spec):
            return spec(doc)
        if isinstance(spec, (int, list)):
            return spec
        if not isinstance(spec, str):
            raise RowError(f"doc_to_target is a {type(spec).__name__}, not a template or field name")
        if spec in self.columns:
            return _field(doc, spec, "doc_to_target")
        text = apply_template(spec, doc, "doc_to_target")
        if text.isdigit() and self.task.doc_to_choice is not None:
            return _literal(text, "doc_to_target")
        if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
            try:
                return ast.literal_eval(text)
            except (SyntaxError, ValueError):  # what lm-eval catches: the text stays as it is
                return text
        return text

    def choices(self, doc: Doc, spec: Any = None) -> list[Any]:
        """ConfigurableTask.doc_to_choice: a field, a rendered Python list, a list, a dict's values."""
        spec = self.task.doc_to_choice if spec is None else spec
        if callable(spec):
            value = spec(doc)
        elif isinstance(spec, str) and spec in self.columns:
            value = _field(doc, spec, "doc_to_choice")
        elif isinstance(spec, str):
            value = _literal(apply_template(spec, doc, "doc_to_choice"), "doc_to_choice")
        elif isinstance(spec, dict):
            value = list(spec.values())
        else:
            value = spec
        if not isinstance(value, list):
            raise RowError(f"doc_to_choice gave a {type(value).__name__}, not a list")
        return value

    @staticmethod
    def resolve_field(doc: Doc, spec: Any, key: str) -> Any:
        """lm_eval/api/task.py Task.resolve_field (description, few-shot gen_prefix): a key of
        the document itself (not a column name), else a template; nothing for an empty value."""
        if not spec:
            return None
        return doc[spec] if spec in doc else apply_template(str(spec), doc, key)

    def prefix(self, doc: Doc) -> Any:
        """ConfigurableTask.doc_to_prefix: the eval document's ``gen_prefix``."""
        spec = self.task.gen_prefix
        if spec is None:
            return None
        return _field(doc, spec, "gen_prefix") if spec in self.columns else apply_template(str(spec), doc,
                                                                                            "gen_prefix")


# --- the few-shot context -------------------------------------------------------------------------


def maybe_delimit(prefix: str | None, suffix: str | None, delimiter: str = " ") -> str:
    """lm_eval/api/utils.py maybe_delimit."""
    if not prefix:
        return suffix or ""
    if not suffix:
        return prefix or ""
    return prefix + suffix if prefix[-1].isspace() or suffix[0].isspace() else prefix + delimiter + suffix


def requires_delimiter(prefix: str, suffix: str) -> bool:
    """lm_eval/api/utils.py requires_delimiter."""
    if prefix == "":
        return False
    return not (prefix[-1].isspace() or suffix[0].isspace())


def qa_turn(q: Any, c: list[Any] | None = None, a: Any = None, gen_prefix: str | None = None,
            tgt_delim: str = " ", few_delim: str = "\n\n") -> str:
    """ConfigurableTask.build_qa_turn rendered as plain text (``Message.to_text`` of each
    message, joined): the question, its delimiter, and the answer (an index into ``c``, the
    first of a list, or a text) with the few-shot delimiter, or the generation prefix."""
    if not isinstance(q, str):
        raise RowError(f"doc_to_text gave a {type(q).__name__}, not a text (lm-eval asserts a text; "
                       "multiple-input tasks are not read yet)")
    has_answer = a is not None and a != ""
    if has_answer and not gen_prefix:
        user_delim = tgt_delim
    else:
        user_delim = tgt_delim if gen_prefix and requires_delimiter(q, gen_prefix) else ""
    if has_answer:
        answer = c[a] if (c and isinstance(a, int)) else a[0] if isinstance(a, list) else a
        if not isinstance(answer, str):
            raise RowError(f"a few-shot answer is a {type(answer).__name__}, not a text (lm-eval asserts a text)")
        return q + user_delim + maybe_delimit(gen_prefix, answer, delimiter=" ") + few_delim
    return q + user_delim + (gen_prefix or "")


class Sampler:
    """lm_eval/api/samplers.py ContextSampler (``default``) and FirstNSampler (``first_n``), on
    indices into the few-shot pool: ``Random.sample`` picks by position only, so drawing
    indices consumes the generator exactly as drawing the documents does. One generator,
    seeded once (Task.set_fewshot_seed -> ContextSampler.set_rnd), serves every document in
    turn, so a document's examples depend on its place in the evaluated split."""

    def __init__(self, pool: list[Doc], kind: str, seed: int, file: str) -> None:
        self.pool, self.kind, self.file = pool, kind, file
        self.rnd = random.Random(seed)

    def sample(self, n: int, eval_doc: Doc | None) -> list[int]:
        if n == 0:
            return []
        if not self.pool:
            raise _problem("no documents to draw few-shot examples from", self.file, "fewshot_split")
        if self.kind == "first_n":
            return self._first_n(n, eval_doc)
        return self._default(n, eval_doc)

    def _draw(self, population: list[int], n: int, why: str = "") -> list[int]:
        if n > len(population):
            raise _problem(f"{n} few-shot documents to draw{why}, but the few-shot pool has {len(population)} "
                           "(lm-eval fails here too)", self.file, "num_fewshot")
        return self.rnd.sample(population, n)

    def _default(self, n: int, eval_doc: Doc | None) -> list[int]:
        """ContextSampler.sample: with an eval doc (the few-shot split is the evaluated one),
        n + 1 are drawn and the eval doc removed (rm_eval_doc), then cut to n; if copies of it
        left fewer than n, n are drawn again from the pool without any copy of it."""
        indices = list(range(len(self.pool)))
        if not eval_doc:
            return self._draw(indices, n)
        why = f" ({n} and one more, to leave the document itself out, as lm-eval draws them)"
        drawn = [i for i in self._draw(indices, n + 1, why) if self.pool[i] != eval_doc][:n]
        if len(drawn) < n:
            drawn = self._draw([i for i in indices if self.pool[i] != eval_doc], n)
        return drawn

    def _first_n(self, n: int, eval_doc: Doc | None) -> list[int]:
        """FirstNSampler.sample: the first n of the pool, the eval doc left out."""
        indices = [i for i in range(len(self.pool)) if eval_doc is None or self.pool[i] != eval_doc]
        if n > len(indices):
            raise _problem(f"{n} few-shot documents to take, but the few-shot pool has {len(indices)} "
                           "(lm-eval fails here too)", self.file, "num_fewshot")
        return indices[:n]


@dataclass
class Context:
    """What lm-eval sends for one document, and its parts."""

    text: str
    choices: list[Any] | None
    target: Any
    fewshot: str
    prompt: str


class ContextBuilder:
    """lm_eval/api/task.py ConfigurableTask.fewshot_context without a chat template or system
    instruction: the description (as the system message's text, with no delimiter of its own),
    each example's ``build_qa_turn`` (question, target delimiter, answer, few-shot delimiter),
    then the eval document's question with its generation prefix."""

    def __init__(self, task: TaskSettings, renderer: Renderer, pool: list[Doc]) -> None:
        self.task, self.render, self.pool = task, renderer, pool

    def build(self, doc: Doc, shots: list[int]) -> Context:
        description = Renderer.resolve_field(doc, self.task.description, "description") or ""
        if not isinstance(description, str):
            raise RowError(f"description gave a {type(description).__name__}, not a text")
        fewshot = description + "".join(self._example(self.pool[i]) for i in shots)
        q = self.render.text(doc)
        choices = self.render.choices(doc) if self.task.doc_to_choice else None
        target = self.render.target(doc)
        turn = qa_turn(q, choices, gen_prefix=self.render.prefix(doc), tgt_delim=self.task.target_delimiter,
                       few_delim="")
        return Context(q, choices, target, fewshot, fewshot + turn)

    def _example(self, shot: Doc) -> str:
        settings = self.task.fewshot
        q = self.render.text(shot, settings.doc_to_text)
        c = self.render.choices(shot, settings.doc_to_choice) if settings.doc_to_choice else None
        a = self.render.target(shot, settings.doc_to_target)
        gen_prefix = Renderer.resolve_field(shot, settings.gen_prefix, "fewshot_config.gen_prefix")
        return qa_turn(q, c, a, gen_prefix, settings.target_delimiter, settings.fewshot_delimiter)


# --- records --------------------------------------------------------------------------------------


def _targets(target: Any, choices: list[Any] | None) -> tuple[list[str], int | None]:
    """(every answer text, the index into the choices): an int indexes the choices, as
    ConfigurableTask.__init__ and build_qa_turn read it; a list holds several answers."""
    if isinstance(target, list):
        return [str(choices[t]) if choices and isinstance(t, int) and 0 <= t < len(choices) else str(t)
                for t in target if t is not None], None  # (a null in a rendered list is no answer)
    if isinstance(target, int) and choices is not None:  # (a bool too, as lm-eval's isinstance reads it)
        if not 0 <= target < len(choices):
            raise RowError(f"doc_to_target gave index {target}, but there are {len(choices)} choices")
        return [str(choices[target])], int(target)
    return [str(target)], None


_MARK = "\ue000benchc:perturbed\ue001"
"""What stands in the ``perturb`` field when the prompt around it is found (private-use characters)."""


def doc_record_id(index: int) -> str:
    return f"{index:06d}"


@dataclass
class Run:
    """One load: the task, its data and its few-shot settings, resolved."""

    task: TaskSettings
    data: TaskData
    params: LmEvalTaskParams
    split: str
    files: list[FileDigest] = field(default_factory=list)
    code: Any = None
    """The task's functions that ran (``lm_eval_code.TaskCode``), or None: no task code."""
    _processed: dict[tuple[str, int], Docs] = field(default_factory=dict)

    def docs(self, split: str, process: Any = None) -> Docs:
        """A split's documents, through ``process`` (a task's process_docs) when it has one."""
        docs = self.data.split(split)
        if process is None:
            return docs
        if (split, id(process)) not in self._processed:
            from .lm_eval_code import run_process_docs

            rows, columns = run_process_docs(process, docs.docs, docs.columns, f"split {split!r}")
            at = docs.at if len(rows) == len(docs.docs) else [
                At(Path(self.task.file), key=f"process_docs({split}) row {n + 1}") for n in range(len(rows))]
            self._processed[(split, id(process))] = Docs(rows, at, columns)
        return self._processed[(split, id(process))]

    def num_fewshot(self) -> int:
        """lm_eval/evaluator.py simple_evaluate: a task whose YAML says 0 keeps 0 whatever is
        asked; otherwise the asked number, else the YAML's, else 0."""
        if self.task.num_fewshot == 0:
            return 0
        if self.params.num_fewshot is not None:
            return self.params.num_fewshot
        return int(self.task.num_fewshot or 0)

    def test_split(self) -> str | None:
        """The YAML's test_split, or ``source.split`` standing in for it."""
        return self.params.split if self.params.split is not None else self.task.get("test_split")

    def fewshot_pool(self) -> list[Doc]:
        """ConfigurableTask.fewshot_docs: the few-shot split, else fewshot_config.samples, else
        (Task.fewshot_docs) the training split, else the validation split, else the test one."""
        settings = self.task.fewshot
        if settings.split is not None:
            return self.docs(settings.split, settings.process_docs).docs
        if settings.samples is not None:
            return list(settings.samples)
        for key in ("training_split", "validation_split"):
            if self.task.get(key) is not None:
                return self.docs(self.task.get(key), self.task.get("process_docs")).docs
        return self.docs(self.split, self.task.get("process_docs")).docs

    def records(self, ctx: SourceContext) -> list[Record]:
        docs = self.docs(self.split, self.task.get("process_docs"))
        count = len(docs.docs) if self.params.limit is None else min(self.params.limit, len(docs.docs))
        n = self.num_fewshot()
        pool = self.fewshot_pool() if n > 0 else []
        sampler = Sampler(pool, self.task.fewshot.sampler, self.params.fewshot_seed, self.task.file)
        # ConfigurableTask.fewshot_context passes the eval doc (to be left out of its own
        # examples) when fewshot_config's split equals the test_split, None == None included
        leave_out = self.task.fewshot.split == self.test_split()
        builder = ContextBuilder(self.task, Renderer(self.task, docs.columns), pool)
        records = []
        for index in range(count):  # Task.build_all_requests: the split's order, one doc at a time
            doc = docs.docs[index]
            shots = sampler.sample(n, doc if leave_out else None)  # drawn even if rendering then fails
            try:
                records.append(self._record(index, doc, shots, builder))
            except RowError as exc:
                ctx.bad_row(docs.at[index].problem(str(exc)))
        return records

    def _record(self, index: int, doc: Doc, shots: list[int], builder: ContextBuilder) -> Record:
        context = builder.build(doc, shots)
        targets, target_index = _targets(context.target, context.choices)
        if "lm_eval" in doc:
            raise RowError("the document has a field named 'lm_eval', the name this loader gives its own")
        lm_eval = {"task": self.task.name, "index": index, "output_type": self.task.output_type,
                   "text": context.text, "target": str(context.target), "targets": targets,
                   "target_index": target_index,
                   "choices": None if context.choices is None else jsonable(context.choices, "doc_to_choice"),
                   "target_delimiter": self.task.target_delimiter, "fewshot": context.fewshot,
                   "fewshot_indices": shots, "prompt": context.prompt, "until": self.task.until}
        if self.code is not None and self.code.names:
            lm_eval["code"] = self.code.pins()
        if self.params.perturb is not None:
            lm_eval["before"], lm_eval["after"] = self._around(doc, shots, builder, context.prompt)
        fields = {str(k): jsonable(v, str(k)) for k, v in doc.items()}
        return Record(id=doc_record_id(index), fields={**fields, "lm_eval": lm_eval})

    def _around(self, doc: Doc, shots: list[int], builder: ContextBuilder, prompt: str) -> tuple[str, str]:
        """The prompt before and after the text of the ``perturb`` field: the prompt is built
        again with a marker in the field's place, which must appear once, unchanged, and give
        back the prompt when the text is put in its place (a template that transforms the
        field, ``{{ question | trim }}``, or uses it twice, cannot be perturbed this way)."""
        name = str(self.params.perturb)
        value = doc.get(name)
        if not isinstance(value, str):
            raise RowError(f"source.perturb: the field {name!r} is " + ("missing" if name not in doc
                                                                          else f"a {type(value).__name__}, not a text"))
        marked = builder.build({**doc, name: _MARK}, shots).prompt
        if marked.count(_MARK) != 1:
            raise RowError(f"source.perturb: the prompt holds the field {name!r} {marked.count(_MARK)} times, not once "
                           "(the template transforms it, or uses it twice)")
        before, after = marked.split(_MARK)
        if before + value + after != prompt:
            raise RowError(f"source.perturb: the prompt around the field {name!r} depends on its text")
        return before, after


def _eval_split(task: TaskSettings, params: LmEvalTaskParams) -> str:
    """Task.eval_docs: the test split, else the validation split."""
    split = params.split or task.get("test_split") or task.get("validation_split")
    if not isinstance(split, str):
        raise _problem("the task has neither test_split nor validation_split", task.file, "test_split",
                       "set source.split")
    return split


@SOURCES.add("lm_eval_task")
class LmEvalTaskSource(SourceLoader):
    """An lm-evaluation-harness task (YAML + Jinja) on local data: one record per document, with lm-eval's prompt.

    The prompt is what lm-eval 0.4.13 sends for the document (few-shot examples included), and
    the target what it logs; see the module's docstring for what is not read."""

    version = "1.0.0"
    Params = LmEvalTaskParams
    record_id = ("the document's index in the evaluated split, zero-padded to six digits (000007): "
                 "lm-eval's doc_id")
    record_fields = {
        "<column>": "every column of the document, by its name",
        "lm_eval.prompt": "the whole context lm-eval sends (its samples' arguments.gen_args_0.arg_0): "
                          "description, few-shot examples, lm_eval.text, then gen_prefix if any",
        "lm_eval.text": "doc_to_text of the document",
        "lm_eval.target": "str(doc_to_target), the `target` lm-eval logs in its samples (for a multiple-choice "
                          "task the index as a text, '2'; for a list its Python text, \"['a', 'b']\")",
        "lm_eval.targets": "every gold answer as a text: the choice an index names, each item of a list, else "
                           "the target",
        "lm_eval.target_index": "the index into lm_eval.choices doc_to_target gave (multiple choice), else null",
        "lm_eval.choices": "doc_to_choice of the document, or null for a task without choices",
        "lm_eval.fewshot": "the prompt before lm_eval.text: description, few-shot examples ('' if neither)",
        "lm_eval.fewshot_indices": "the few-shot examples, as indices into the few-shot split, in prompt order",
        "lm_eval.until": "generation_kwargs.until (stop texts), null unless output_type is generate_until",
        "lm_eval.target_delimiter": "what lm-eval puts between the prompt and an answer (multiple choice)",
        "lm_eval.output_type": "the task's output_type",
        "lm_eval.task": "the task's name",
        "lm_eval.index": "the document's index in the evaluated split (lm-eval's doc_id)",
        "lm_eval.before": "with source.perturb: the prompt before the field's text",
        "lm_eval.after": "with source.perturb: the prompt after the field's text",
        "lm_eval.code": "with source.allow_task_code, when task code ran: its functions (key=!function), and "
                        "lm-eval's, datasets' and Python's versions",
    }

    def load(self, params: LmEvalTaskParams, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.task, key="source.task")
        files: list[FileDigest] = []
        cfg = load_task_yaml(path, ctx, files)
        code = None
        if params.allow_task_code:
            from .lm_eval_code import TaskCode, require_lm_eval

            require_lm_eval(task_label(ctx, path), "source.allow_task_code")
            code = TaskCode(ctx)
            cfg = resolve_functions(cfg, code)
        task = task_settings(cfg, task_label(ctx, path))
        run = Run(task, TaskData(task, path.parent, params, ctx), params, _eval_split(task, params), code=code)
        records = run.records(ctx)
        return LoadedSource(records, files + run.data.files + (code.files if code is not None else []))

