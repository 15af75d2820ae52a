"""lmms-eval tasks as a source (``lmms_eval_task``, issue 29 item 2).

An lmms-eval 0.7.3 task YAML (with its ``include:`` chain) and its data on disk become one record
per document of the evaluated split, each with its image as benchc media (content-hashed) and,
under ``lmms_eval``, what lmms-eval sends for it: ``prompt`` is ``doc_to_text(doc,
lmms_eval_specific_kwargs)``, the ``input`` lmms-eval logs, and ``target`` its ``doc_to_target``.

lmms-eval's multimodal tasks make their images and prompts in the task's Python (``utils.py``:
``doc_to_visual``, ``doc_to_text``), so a spec reads them only with ``allow_task_code = true`` and
lmms-eval installed; the code runs at compile time and is pinned as the ``lm_eval_task`` source
pins it (``lm_eval_code``: its files in the lock, ``lmms_eval.code`` in every record). lmms-eval's
rules, mirrored from lmms_eval/api/task.py ConfigurableTask (0.7.3):

* ``lmms_eval_specific_kwargs``: the entry of the model (``source.model``) if the YAML has one,
  else the ``default`` entry's keys merged into the whole mapping (lmms-eval's ``update``), which
  ``doc_to_text`` receives as its second argument (and ``doc_to_visual``, when it takes two).
* ``doc_to_text`` / ``doc_to_target``: a function, a field name, or a Jinja template (lm-eval's
  rendering, ``lm_eval_task.apply_template``).
* Images: each of ``doc_to_visual``'s images, in order, PNG-encoded pixels; a document with none is
  a text-only record. Parquet data with Hugging Face ``Image`` columns is decoded as ``datasets``
  decodes it (``{"bytes", "path"}`` -> a PIL image) before the task's code sees it; such columns are
  not copied into the record's fields.

Not read (refused with one line): few-shot contexts (``num_fewshot`` > 0), output types other
than ``generate_until``, audio and video (``doc_to_audio``, videos from ``doc_to_visual``), and more
than one image per document (benchc's items carry one image).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from ..errors import Problem, SourceError
from ..media import put_image
from ..values import Record
from .base import SOURCES, FileDigest, LoadedSource, SourceContext, SourceLoader, SourceParams
from .lm_eval_task import (Docs, Renderer, TaskData, doc_record_id, first_function, load_task_yaml,
                           resolve_functions, task_label, until_of)
from .tables import RowError, jsonable

LMMS_EVAL_VERSION = "0.7.3"
"""The lmms-eval release whose prompts this loader reproduces."""

RUNNABLE_KEYS = ("process_docs", "doc_to_visual", "doc_to_text", "doc_to_target")
"""The keys whose ``!function`` runs (with ``allow_task_code``)."""

READ_KEYS = frozenset({*RUNNABLE_KEYS, "task", "dataset_path", "dataset_name", "dataset_kwargs", "test_split",
                       "validation_split", "training_split", "output_type", "generation_kwargs", "description",
                       "lmms_eval_specific_kwargs", "num_fewshot", "fewshot_delimiter", "target_delimiter"})
"""The keys this loader reads; a ``!function`` in any other (metrics, process_results) is not run."""


class LmmsEvalTaskParams(SourceParams):
    task: str = Field(description="the lmms-eval task YAML (its include: files are read too)")
    split: str | None = Field(None, description="the split to evaluate (default: the YAML's test_split, else its "
                                                "validation_split)")
    data: str | None = Field(None, description="a folder the YAML's data_files are relative to (default: the "
                                               "YAML's folder), a save_to_disk dataset folder, or a folder of a hub "
                                               "dataset's jsonl/json/csv/parquet files")
    limit: int | None = Field(None, ge=1, description="only the first N documents (lmms-eval's --limit N)")
    model: str = Field("default", description="the lmms_eval_specific_kwargs entry to use (lmms-eval picks the "
                                              "model's own, else 'default')")
    allow_task_code: bool = Field(False, description="run the task's Python functions (doc_to_visual, doc_to_text, "
                                                     "...) at compile time; needs lmms-eval installed")


@dataclass(frozen=True)
class _Task:
    """What ``TaskData`` reads of a task (``get`` and ``file``)."""

    cfg: dict[str, Any]
    file: str

    def get(self, key: str) -> Any:
        return self.cfg.get(key)

    @property
    def doc_to_text(self) -> Any:
        return self.cfg.get("doc_to_text")

    @property
    def doc_to_target(self) -> Any:
        return self.cfg.get("doc_to_target")

    doc_to_choice = None
    """lmms-eval's generate_until tasks have no choices: digits stay text."""


def _problem(message: str, file: str, key: str | None = None, hint: str | None = None) -> SourceError:
    return SourceError(Problem(message, file=file, key=key, hint=hint))


def _check(cfg: dict[str, Any], file: str) -> None:
    if "group" in cfg or not isinstance(cfg.get("task"), str):
        raise _problem("not a single task (a group, or no task: name)", file, "task",
                       "point source.task at the YAML of one task")
    output_type = cfg.get("output_type", "generate_until")
    if output_type != "generate_until":
        raise _problem(f"output_type {output_type!r} is not read by lmms_eval_task yet", file, "output_type",
                       "it reads generate_until tasks")
    if cfg.get("num_fewshot"):
        raise _problem("few-shot contexts are not read by lmms_eval_task", file, "num_fewshot")
    if cfg.get("doc_to_audio"):
        raise _problem("doc_to_audio: audio tasks are not read by lmms_eval_task yet", file, "doc_to_audio")
    for key, value in cfg.items():
        found = first_function(value, key) if key in READ_KEYS else None
        if found is not None:
            path, function = found
            raise SourceError(Problem(
                f"{path} is lmms-eval Python code (!function {function.name}); benchc runs a task's code only "
                "when the spec allows it", file=function.file, line=function.line, key=path,
                hint="set source.allow_task_code = true (with lmms-eval installed) to run it at compile time"))


def specific_kwargs(cfg: dict[str, Any], model: str) -> dict[str, Any] | None:
    """ConfigurableTask.__init__'s ``lmms_eval_specific_kwargs``."""
    given = cfg.get("lmms_eval_specific_kwargs")
    if given is None:
        return None
    kwargs = dict(given)
    if model in kwargs:
        return dict(kwargs[model])
    for fallback in ("default", "dataset"):
        if fallback in kwargs:
            kwargs.update(kwargs.get(fallback) or {})
            break
    return kwargs


def _decoded(value: Any) -> Any:
    """A Hugging Face ``Image`` cell (``{"bytes", "path"}``) as the PIL image datasets decodes."""
    if isinstance(value, dict) and set(value) == {"bytes", "path"} and isinstance(value["bytes"], (bytes, bytearray)):
        from PIL import Image

        image = Image.open(io.BytesIO(value["bytes"]))
        image.load()
        return image
    return value


def _is_media(value: Any) -> bool:
    from PIL import Image

    return isinstance(value, (Image.Image, bytes, bytearray))


@dataclass
class _Reader:
    """One load: the task's functions, its kwargs, and how a document becomes a record."""

    cfg: dict[str, Any]
    file: str
    kwargs: dict[str, Any] | None
    code: Any
    renderer: Renderer

    def text(self, doc: dict[str, Any]) -> Any:
        spec = self.cfg.get("doc_to_text")
        if callable(spec):
            return spec(doc, self.kwargs) if self.kwargs is not None else spec(doc)
        return self.renderer.text(doc)

    def visuals(self, doc: dict[str, Any]) -> list[Any]:
        import inspect

        spec = self.cfg.get("doc_to_visual")
        if spec is None:
            return []
        if not callable(spec):
            raise RowError("doc_to_visual is not a !function")
        takes_two = len(inspect.signature(spec).parameters) == 2
        found = spec(doc, self.kwargs) if self.kwargs is not None and takes_two else spec(doc)
        return list(found or [])

    def record(self, index: int, doc: dict[str, Any], ctx: SourceContext) -> Record:
        from PIL import Image

        visuals = self.visuals(doc)
        if len(visuals) > 1:
            raise RowError(f"doc_to_visual gave {len(visuals)} images; benchc's items carry one")
        if visuals and not isinstance(visuals[0], Image.Image):
            raise RowError(f"doc_to_visual gave a {type(visuals[0]).__name__}, not an image (video and audio are "
                           "not read yet)")
        prompt = self.text(doc)
        description = self.cfg.get("description") or ""
        target = self.renderer.target(doc) if not callable(self.cfg.get("doc_to_target")) \
            else self.cfg["doc_to_target"](doc)
        targets = [str(t) for t in target] if isinstance(target, list) else [str(target)]
        if "lmms_eval" in doc:
            raise RowError("the document has a field named 'lmms_eval', the name this loader gives its own")
        lmms = {"task": self.cfg["task"], "index": index, "prompt": f"{description}{prompt}", "text": prompt,
                "target": str(target), "targets": targets, "until": until_of(self.cfg, "\n\n"),
                "images": len(visuals)}
        if self.code is not None and self.code.names:
            lmms["code"] = self.code.pins()
        fields = {str(k): jsonable(v, str(k)) for k, v in doc.items() if not _is_media(v)}
        media = {"image": put_image(ctx.store, visuals[0].convert("RGB"))} if visuals else {}
        return Record(id=doc_record_id(index), fields={**fields, "lmms_eval": lmms}, media=media)


@SOURCES.add("lmms_eval_task")
class LmmsEvalTaskSource(SourceLoader):
    """An lmms-eval task on local data, its Python run at compile time: a record per document, with its image.

    The image is doc_to_visual's, the prompt lmms-eval's doc_to_text with the task's
    lmms_eval_specific_kwargs; see the module's docstring for what is not read."""

    version = "1.0.0"
    Params = LmmsEvalTaskParams
    record_id = "the document's index in the evaluated split, zero-padded to six digits (000007): lmms-eval's doc_id"
    record_fields = {
        "<column>": "every column of the document that is not an image or bytes, by its name",
        "lmms_eval.prompt": "the text lmms-eval sends with the image (its samples' input): description, then "
                            "lmms_eval.text",
        "lmms_eval.text": "doc_to_text of the document, with the task's lmms_eval_specific_kwargs",
        "lmms_eval.target": "str(doc_to_target), the target lmms-eval logs",
        "lmms_eval.targets": "every gold answer as a text",
        "lmms_eval.until": "generation_kwargs.until (stop texts)",
        "lmms_eval.images": "how many images doc_to_visual gave (0 or 1; the record's image)",
        "lmms_eval.task": "the task's name",
        "lmms_eval.index": "the document's index in the evaluated split (lmms-eval's doc_id)",
        "lmms_eval.code": "the functions that ran (key=!function), and lmms-eval's, datasets' and Python's versions",
    }

    def load(self, params: LmmsEvalTaskParams, ctx: SourceContext) -> LoadedSource:
        from .lm_eval_code import TaskCode, require_lm_eval, run_process_docs

        path = ctx.resolve(params.task, key="source.task")
        label = task_label(ctx, path)
        files: list[FileDigest] = []
        cfg = load_task_yaml(path, ctx, files)
        code = None
        if params.allow_task_code:
            require_lm_eval(label, "source.allow_task_code", "lmms_eval")
            code = TaskCode(ctx, package="lmms_eval")
            cfg = resolve_functions(cfg, code, RUNNABLE_KEYS)
        _check(cfg, label)
        split = params.split or cfg.get("test_split") or cfg.get("validation_split")
        if not isinstance(split, str):
            raise _problem("the task has neither test_split nor validation_split", label, "test_split",
                           "set source.split")
        data = TaskData(_Task(cfg, label), path.parent, params, ctx)  # type: ignore[arg-type]
        docs = data.split(split)
        rows = [{k: _decoded(v) for k, v in doc.items()} for doc in docs.docs]
        if callable(cfg.get("process_docs")):
            rows, columns = run_process_docs(cfg["process_docs"], rows, docs.columns, f"split {split!r}")
            docs = Docs(rows, docs.at if len(rows) == len(docs.docs) else [docs.at[0]] * len(rows), columns)
        reader = _Reader(cfg, label, specific_kwargs(cfg, params.model), code,
                         Renderer(_Task(cfg, label), docs.columns))  # type: ignore[arg-type]
        count = len(rows) if params.limit is None else min(params.limit, len(rows))
        records = []
        for index in range(count):
            try:
                records.append(reader.record(index, rows[index], ctx))
            except RowError as exc:
                ctx.bad_row(docs.at[index].problem(str(exc)))
        return LoadedSource(records, files + data.files + (code.files if code is not None else []))
