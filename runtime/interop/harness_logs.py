"""The sample logs of other harnesses, as those tools really write them (``benchc import``;
real files of each under ``tests/fixtures/peers/``):

* lm-eval 0.4.x ``samples_<task>_<datetime>.jsonl``: ``doc`` (the dataset row), ``arguments``
  (``gen_args_0.arg_0`` the prompt: a string from completion models and ``dummy``; with
  ``--apply_chat_template`` a one-element list holding a JSON string of the chat messages, whose
  last user message is the prompt), ``resps`` ([[raw text]]), ``filtered_resps``, ``filter``,
  ``target``. A doc is logged once per filter: one filter is read (``--filter``, else the first
  in the file); the raw ``resps`` are the same under every filter.
* lmms-eval 0.7.x ``<datetime>_samples_<task>.jsonl``: no ``doc``, ``arguments`` or ``filter``;
  ``doc_id``, ``target``, the prompt as ``input``, ``filtered_resps`` a string and ``resps`` a
  string left out when equal to it. Older lmms-eval files use lm-eval's layout and read as it.
* inspect-ai logs: ``.json``, and ``.eval`` (a zip whose members are zstd-compressed, method 93,
  which Python 3.11's zipfile cannot open: read here with ``zstandard``). Each sample's ``id``,
  ``epoch`` (sample ``epoch - 1``), ``input`` (a string, or messages: the last user message),
  ``target`` and ``output.completion`` (the answer).

``--key id`` reads ``doc.item_id`` or ``doc.id`` (lm-eval), ``doc_id`` (lmms-eval 0.7, which logs
no doc) or the sample ``id`` (inspect); ``--key prompt`` the prompt as above. Each row keeps the
harness's ``target`` so that a samples file of another task is refused rather than imported.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .answer_files import ID_COLUMNS, MEDIA_COLUMN, AnswerRow, ImportOptions, cell_media, cell_text, problem_at

ZSTD_METHOD = 93
"""The zip compression method number of zstd (APPNOTE 4.4.5), the one inspect-ai writes."""
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, 22 bytes we skip, name and extra lengths


@dataclass(frozen=True)
class HarnessRows:
    rows: list[AnswerRow]
    answer_field: str
    note: str | None = None  # what the reader chose (the filter), for the run record and the report


# lm-eval and lmms-eval ----------------------------------------------------------------------

def is_lmms_07(obj: Any) -> bool:
    """lmms-eval 0.7's sample: a doc_id and an ``input`` prompt, without lm-eval's doc and arguments."""
    return isinstance(obj, dict) and "doc_id" in obj and "input" in obj and "doc" not in obj and "arguments" not in obj


def lm_eval_rows(path: Path, lines: list[tuple[int, Any]], options: ImportOptions) -> HarnessRows:
    """The rows of an lm-eval / lmms-eval samples file, one filter's, each doc once."""
    for line, obj in lines:
        if not isinstance(obj, dict) or "doc_id" not in obj:
            raise problem_at(path, line, "not an lm-eval sample (an object with doc_id, doc, arguments, resps)",
                             "give --format jsonl for a plain answers file")
    lines, note = _one_filter(path, lines, options.filter)
    rows, seen = [], {}
    for line, obj in lines:
        doc_id = obj["doc_id"]
        if repr(doc_id) in seen:
            raise problem_at(path, line, f"doc_id {doc_id!r} is logged twice (lines {seen[repr(doc_id)]} and {line})"
                             + (f" under filter {obj['filter']!r}" if "filter" in obj else ""),
                             "a samples file logs each doc once per filter: is it two runs joined?")
        seen[repr(doc_id)] = line
        rows += [_lm_eval_row(path, line, one, options) for one in _unpaired(obj)]
    if not rows:
        raise problem_at(path, None, "the file holds no samples", "an lm-eval --log_samples file: one sample per line")
    resps = "resps" if all("resps" in obj for _, obj in lines) else "resps (else filtered_resps)"
    return HarnessRows(rows, resps, note)


def _one_filter(path: Path, lines: list[tuple[int, Any]], chosen: str | None) -> tuple[list[tuple[int, Any]],
                                                                                         str | None]:
    """The lines of one filter: ``chosen``, else the first the file names (said in the note)."""
    names = list(dict.fromkeys(str(obj["filter"]) for _, obj in lines if "filter" in obj))
    if chosen is None and len(names) <= 1:
        return lines, (f"lm-eval filter {names[0]!r}" if names else None)
    if chosen is not None and chosen not in names:
        raise problem_at(path, lines[0][0] if lines else None,
                         f"--filter {chosen!r} is not in the file (filters: {', '.join(names) or 'none'})",
                         "name one of the file's filters, or leave --filter out")
    picked = chosen if chosen is not None else names[0]
    unnamed = next((line for line, obj in lines if "filter" not in obj), None)
    if unnamed is not None:
        raise problem_at(path, unnamed, "this sample names no filter, others do: which filter is it?",
                         "import a file written by one lm-eval run")
    how = "--filter" if chosen is not None else "the file's first; --filter picks another"
    note = f"lm-eval filter {picked!r} of {', '.join(map(repr, names))} ({how})"
    return [(line, obj) for line, obj in lines if obj["filter"] == picked], note


def _unpaired(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """A sample as samples of one request each: benchc's own paired samples (``score --format
    lm-eval``'s consistency tasks: an item and its ``doc.reference``, two requests, two resps)
    become the item's and the reference's; any other sample is itself."""
    doc, args, resps = obj.get("doc"), obj.get("arguments"), obj.get("resps")
    if not (isinstance(doc, dict) and isinstance(doc.get("reference"), dict) and isinstance(args, dict)
            and set(args) == {"gen_args_0", "gen_args_1"} and isinstance(resps, list) and len(resps) == 2):
        return [obj]
    filtered = obj.get("filtered_resps")
    halves = []
    for n, half_doc in enumerate(({k: v for k, v in doc.items() if k != "reference"}, doc["reference"])):
        half = {**obj, "doc": half_doc, "arguments": {"gen_args_0": args[f"gen_args_{n}"]}, "resps": [resps[n]]}
        if isinstance(filtered, list) and len(filtered) == 2:
            half["filtered_resps"] = [filtered[n]]
        if n:
            half.pop("target", None)  # the sample's target is the item's
        halves.append(half)
    return halves


def _export_media(doc: dict[str, Any] | None) -> list[Any] | None:
    """The media sha256s of a doc that ``benchc score --format lm-eval`` wrote (``doc.media``: a
    list of {kind, name, path, sha256}); None for any other doc."""
    media = (doc or {}).get("media")
    if isinstance(media, list) and all(isinstance(m, dict) and "sha256" in m for m in media):
        return [m["sha256"] for m in media]
    return None


def _lm_eval_row(path: Path, line: int, obj: dict[str, Any], options: ImportOptions) -> AnswerRow:
    doc = obj.get("doc") if isinstance(obj.get("doc"), dict) else None
    media = None
    if options.key == "prompt":
        key = _lm_eval_prompt(path, line, obj)
        media = cell_media(path, line, (doc or {}).get(MEDIA_COLUMN, obj.get(MEDIA_COLUMN, _export_media(doc))))
    elif doc is None and is_lmms_07(obj):
        key = cell_text(path, line, obj["doc_id"], "doc_id")
    else:
        key = _lm_eval_id(path, line, doc or {}, options.id_column)
    target = obj.get("target")
    return AnswerRow(line, key, media, options.stage, 0, _lm_eval_texts(path, line, obj),
                     target if isinstance(target, str) else None)


def _lm_eval_id(path: Path, line: int, doc: dict[str, Any], id_column: str | None) -> str:
    for name in ([id_column] if id_column else list(ID_COLUMNS)):
        if name in doc:
            return cell_text(path, line, doc[name], f"doc.{name}")
    raise problem_at(path, line, f"the sample's doc has no {' or '.join(f'doc.{n}' for n in ID_COLUMNS)}",
                     "match samples by their prompt with --key prompt, or name the doc field with --id-column")


def _lm_eval_prompt(path: Path, line: int, obj: dict[str, Any]) -> str:
    arguments = obj.get("arguments")
    context: Any = obj.get("input") if arguments is None else None
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        context = first.get("arg_0") if isinstance(first, dict) else None
    elif isinstance(arguments, list) and arguments and isinstance(arguments[0], list) and arguments[0]:
        context = arguments[0][0]
    if isinstance(context, list) and len(context) == 1 and isinstance(context[0], str):
        context = _chat_prompt(path, line, context[0])  # --apply_chat_template: [JSON of the messages]
    if not isinstance(context, str):
        raise problem_at(path, line, "the sample's arguments hold no prompt (gen_args_0.arg_0)",
                         "match samples by item id with --key id")
    return context


def _chat_prompt(path: Path, line: int, text: str) -> str:
    """The last user message of a chat template's JSON message list (the text a benchc prompt renders)."""
    try:
        messages = json.loads(text)
    except ValueError:
        return text  # a one-element list holding a plain prompt
    prompt = last_user_text(messages)
    if prompt is None:
        raise problem_at(path, line, "the sample's chat messages hold no user message with text",
                         "match samples by item id with --key id")
    return prompt


def last_user_text(messages: Any) -> str | None:
    """The text of the last ``user`` message: its string content, or its text parts joined."""
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
                content = "\n".join(t for t in texts if isinstance(t, str)) if texts else None
            return content if isinstance(content, str) else None
    return None


def _lm_eval_texts(path: Path, line: int, obj: dict[str, Any]) -> tuple[str, ...]:
    """The generations of the sample's one request: ``resps[0]``, else ``filtered_resps[0]``
    (lmms-eval 0.7: a string each)."""
    resps = obj.get("resps", obj.get("filtered_resps"))
    if isinstance(resps, str):
        return (resps,)
    if not isinstance(resps, list) or not resps:
        raise problem_at(path, line, "the sample has no resps",
                         "an lm-eval --log_samples file of a generate_until task")
    if len(resps) > 1:
        raise problem_at(path, line, f"the sample has {len(resps)} requests; benchc imports one generation request "
                                     "per doc", "import the samples of a generate_until task")
    texts = resps[0] if isinstance(resps[0], list) else [resps[0]]
    if not texts or not all(isinstance(t, str) for t in texts):
        raise problem_at(path, line, "resps[0] is not a list of generated texts (a loglikelihood task?)",
                         "benchc scores generated answers: import the samples of a generate_until task")
    return tuple(texts)


# inspect-ai ---------------------------------------------------------------------------------

def inspect_rows(path: Path, data: bytes, options: ImportOptions) -> HarnessRows:
    """The samples of an inspect-ai log (``.eval`` archive or ``.json``), in the log's order."""
    samples = _eval_samples(path, data) if path.suffix.lower() == ".eval" else _json_samples(path, data)
    if not samples:
        raise problem_at(path, None, "the log holds no samples", "an inspect-ai log written with its samples")
    return HarnessRows([_inspect_row(path, n, where, s, options) for n, (where, s) in enumerate(samples, 1)],
                       "output.completion")


def _json_samples(path: Path, data: bytes) -> list[tuple[str, Any]]:
    try:
        log = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise problem_at(path, None, "the log is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise problem_at(path, exc.lineno, f"line {exc.lineno} is not JSON ({exc.msg}): a truncated log?",
                         "an inspect-ai log written with --log-format json") from None
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise problem_at(path, 1, "not an inspect-ai log (no 'eval' object)", "give --format jsonl for JSON Lines")
    samples = log.get("samples") or []
    return [(f"samples[{k}]", s) for k, s in enumerate(samples)]


def _eval_samples(path: Path, data: bytes) -> list[tuple[str, Any]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = [i for i in archive.infolist() if i.filename.startswith("samples/") and i.filename.endswith(".json")]
    except zipfile.BadZipFile as exc:
        raise problem_at(path, None, f"not a readable .eval archive ({exc}): a truncated log?",
                         "an inspect-ai .eval log as inspect wrote it") from None
    out = []
    for info in sorted(infos, key=lambda i: i.header_offset):  # the order inspect wrote them
        try:
            out.append((info.filename, json.loads(zip_member(archive, info, data))))
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise problem_at(path, None, f"member {info.filename} cannot be read ({exc})",
                             "an inspect-ai .eval log as inspect wrote it") from None
    return out


def zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes) -> bytes:
    """A member's bytes; zstd members (inspect's) decompressed from the raw local entry."""
    if info.compress_type != ZSTD_METHOD:
        return archive.read(info)
    import zstandard  # inspect-ai's .eval members are zstd; Python 3.11's zipfile has no zstd

    signature, name_length, extra_length = _LOCAL_HEADER.unpack_from(data, info.header_offset)
    if signature != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"no local header at {info.header_offset}")
    start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    raw = data[start:start + info.compress_size]
    try:
        out = zstandard.ZstdDecompressor().decompress(raw, max_output_size=max(info.file_size, 1))
    except zstandard.ZstdError as exc:
        raise zipfile.BadZipFile(f"zstd: {exc}") from None
    if len(out) != info.file_size:
        raise zipfile.BadZipFile(f"{len(out)} bytes, the archive says {info.file_size}")
    return bytes(out)


def _inspect_row(path: Path, number: int, where: str, sample: Any, options: ImportOptions) -> AnswerRow:
    def bad(why: str) -> Exception:
        return problem_at(path, number, f"sample {number} ({where}): {why}", "an inspect-ai log as inspect wrote it")

    if not isinstance(sample, dict) or "id" not in sample:
        raise bad("not a sample (an object with id, input, output)")
    if options.key == "prompt":
        given = sample.get("input")
        key = given if isinstance(given, str) else last_user_text(given)
        if key is None:
            raise bad("its input holds no user message with text")
    else:
        key = cell_text(path, number, sample["id"], "id")
    output = sample.get("output")
    completion = output.get("completion") if isinstance(output, dict) else None
    if not isinstance(completion, str):
        raise bad("it has no output.completion")
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or epoch < 1:
        raise bad(f"epoch {epoch!r} is not 1, 2, ...")
    target = sample.get("target")
    return AnswerRow(number, key, None, options.stage, epoch - 1, (completion,),
                     target if isinstance(target, str) else None)
