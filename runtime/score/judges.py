"""Judges: a backend asked to score items with a versioned prompt, and the parser of its answers.

A judge (``compiler.metrics.Judge``) names a backend as ``benchc run --model`` does; its
prompt is a sandboxed Jinja template (``compiler/templates.py``) over the item. Every prompt
goes through a ``ModelClient`` (the runtime's: ``model_client.RuntimeModelClient``), which keys
each request by the judge's fingerprint, generation settings, rendered prompt, system prompt and
media, and answers it from the response store when it is there: a rescore with the same judge
asks nothing again, and a changed template (another prompt text) is asked anew.

Parsers (``parse``) are strict: an answer they cannot read gives None, which the metric counts
and lists; it is never scored as 0. What identifies a judge in the scores (``describe``): its
name, backend, fingerprint (never a secret: backends fingerprint a key's variable name, not its
value), prompt version, the sha256 of its template and system prompt, and its parser.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchc.compiler.errors import BenchcError, Problem
from benchc.compiler.metrics import Judge
from benchc.compiler.model_steps import ModelBackendRef, ModelClient, ModelPrompt, StepGeneration, yes_no
from benchc.compiler.templates import TemplateProblem, compile_template, render
from benchc.compiler.values import MediaRef

if TYPE_CHECKING:  # (the metrics package imports this module: no import of it at run time)
    from .metrics.base import ScoredItem

Value = int | str
"""A judge's reading of one item: a score on its scale, "yes"/"no", or one of its labels."""

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Case:
    """One item to judge, with its group's reference item when the metric names one."""

    item: ScoredItem
    reference: ScoredItem | None = None


@dataclass(frozen=True)
class Verdict:
    item_id: str
    answer: str
    """The judge's answer as it gave it."""
    value: Value | None
    """What the parser read; None: the answer could not be read."""


def sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def ref_of(judge: Judge) -> ModelBackendRef:
    """The backend and generation settings a judge is asked with (a relative model path is
    looked up in the working folder, as ``benchc run --model`` does)."""
    return ModelBackendRef(judge.backend, StepGeneration(judge.max_new_tokens, judge.temperature, 1.0),
                           (Path.cwd(),))


def describe(judge: Judge, fingerprint: dict[str, Any]) -> dict[str, Any]:
    """What pins a judge, for the scores' details."""
    parser: dict[str, Any] = {"kind": judge.parser}
    if judge.parser == "scale":
        parser.update(min=judge.scale_min, max=judge.scale_max)
    elif judge.parser == "label":
        parser["labels"] = list(judge.labels)
    return {"name": judge.label, "backend": judge.backend, "fingerprint": fingerprint,
            "prompt_version": judge.version, "template_sha256": sha256(judge.template),
            "system_sha256": sha256(judge.system), "parser": parser, "media": judge.media,
            "generation": ref_of(judge).generation.as_json()}


def _side(item: ScoredItem) -> dict[str, Any]:
    return {"question": item.prompt, "answer": item.responses[0] if item.responses else "",
            "responses": list(item.responses), "targets": item.targets, "attrs": item.attrs,
            "item_id": item.item_id}


def context(case: Case) -> dict[str, Any]:
    """The template's variables for one item (see ``compiler.metrics.JUDGE_TEMPLATE``)."""
    out = _side(case.item)
    if case.reference is not None:
        out["reference"] = _side(case.reference)
    return out


def prompts(judge: Judge, cases: Sequence[Case]) -> list[ModelPrompt]:
    """One prompt per case; a template that fails names the judge and the item."""
    template = compile_template(judge.template)
    out = []
    for case in cases:
        try:
            text = render(template, context(case))
        except TemplateProblem as exc:
            raise BenchcError(Problem(f"judge {judge.label!r}, item {case.item.item_id!r}: {exc}",
                                      key="metric.judges.template")) from None
        media = tuple(MediaRef("image", sha) for kind, sha in case.item.media if kind == "image") \
            if judge.media else ()
        out.append(ModelPrompt(text, judge.system, media))
    return out


_OUT_OF = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:/|out of)\s*(\d+)", re.IGNORECASE)


def read_scale(answer: str, low: int, high: int) -> int | None:
    """The one whole number in the answer, or the N of an "N out of HIGH" / "N/HIGH"; None
    otherwise. The first number alone would read "On a scale of 1 to 10, 8" as 1: an answer
    with several numbers and no such form is unreadable (listed), never guessed."""
    numbers = _NUMBER.findall(answer)
    rated = [m.group(1) for m in _OUT_OF.finditer(answer) if int(m.group(2)) == high]
    candidates = rated if rated else numbers
    if len(set(candidates)) != 1 or "." in candidates[0]:
        return None
    score = int(candidates[0])
    return score if low <= score <= high else None


def read_yes_no(answer: str) -> str | None:
    """The answer's first word when it is yes or no and the other word appears nowhere in it:
    a hedge ("Yes and no", "Yes, but no.") is unreadable, not a yes."""
    first = yes_no(answer)
    other = {"yes": "no", "no": "yes"}.get(first or "")
    if other is None or re.search(rf"\b{other}\b", answer, re.IGNORECASE):
        return None
    return first


def parse(judge: Judge, answer: str) -> Value | None:
    """The judge's answer read by its parser, or None when it cannot be read."""
    if judge.parser == "yes_no":
        return read_yes_no(answer)
    if judge.parser == "scale":
        return read_scale(answer, judge.scale_min, judge.scale_max)
    line = next((part for part in answer.strip().splitlines() if part.strip()), "")
    word = line.strip().strip(string.punctuation + string.whitespace + "\"'").casefold()
    return next((label for label in judge.labels if label.casefold() == word), None)


def ask(judge: Judge, cases: Sequence[Case], client: ModelClient) -> tuple[list[Verdict], dict[str, Any]]:
    """The judge's verdict on each case, in order, and its description (with its fingerprint)."""
    ref = ref_of(judge)
    fingerprint = client.fingerprint(ref)
    answers = client.generate(ref, prompts(judge, cases)) if cases else []
    verdicts = [Verdict(case.item.item_id, answer, parse(judge, answer))
                for case, answer in zip(cases, answers, strict=True)]
    return verdicts, describe(judge, fingerprint)
