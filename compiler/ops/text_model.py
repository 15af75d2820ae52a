"""Text ops that ask a model at compile time (model steps: see ``compiler/model_steps.py``).

* ``text.translate``: the text in another language. MMCBench's ``back_translation`` is two
  chained nodes, English -> German -> English, as NL-Augmenter's back-translation (which MMCBench
  cites, Ng et al. 2019) does with facebook/wmt19-en-de and wmt19-de-en. MMCBench publishes no
  prompt or model; benchc asks any instruction-following model with :data:`TRANSLATE`.
* ``text.paraphrase``: the text paraphrased (MMCBench's ``paraphrase``, made with Vorobev &
  Kuznetsov's ChatGPT-paraphrase T5 model), or rewritten in a ``style`` (MMCBench's
  ``style_paraphraser``, Krishna et al. 2020's STRAP models: Shakespeare, the Bible, tweets,
  romantic poetry, conversational speech...). benchc's prompts :data:`PARAPHRASE`, :data:`STYLE`.
* ``text.rephrase_llm``: MM-R3's question rephrasing with the paper's prompt, verbatim
  (:data:`MMR3_REPHRASE`). As in the paper (one GPT-3.5 request per question gives its three
  rephrasings), one request returns the list and a node's ``index`` grid picks one rephrasing per
  variant: the variants send the same prompt, so the model is asked once per question.
* ``text.yes_no_question``: MERLIM's yes/no question from a Visual Genome relation, with the
  paper's prompt (:data:`MERLIM_YES_NO`; the paper's example relation is "skateboard has
  wheels", its answer "Does the skateboard have wheels?").
* ``text.generate``: any prompt template over the input text and the record (e.g. an LLM
  negation of MERLIM's questions, whose prompt MERLIM does not publish; ``text.negate_question``
  is the rule-based one).

Templates are sandboxed Jinja, like the spec's ``[prompt]``; each op lists its variables.
Answers are parsed as ``compiler/model_answers.py`` documents; an unusable one drops the variant
with a fixed reason ("empty answer", "model refused", ...) or fails (``on_bad_answer``).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..errors import OpError, Problem
from ..model_answers import answer_items, first_answer_line, is_refusal
from ..model_requests import ModelPrompt
from ..values import Value
from .base import OPS, ModelOp, ModelStepParams, OpContext, OpOutput, check_template, render_prompt
from .fields import field_or_none
from .text_questions import AUXILIARIES

TRANSLATE = ("Translate the following {{ source_language }} text into {{ target_language }}. "
             "Reply with the translation only.\n\n{{ text }}")
PARAPHRASE = ("Paraphrase the following text. Keep its meaning and reply with the paraphrase "
              "only.\n\n{{ text }}")
STYLE = ("Rewrite the following text in the style of {{ style }}. Keep its meaning and reply "
         "with the rewritten text only.\n\n{{ text }}")
MMR3_REPHRASE = ("I have a question: {{ question }} Please give me three different types of "
                 "rephrased questions to which the answer would be {{ answer }}.")
MERLIM_YES_NO = ("Correct the mistakes in the following question: {{ relation }}? Please, just "
                 "write the correct question in present tense and consider it is a yes or no "
                 "question.")


def _text(value: Value | None) -> str:
    assert value is not None and value.text is not None
    return value.text


def _single_line(op: ModelOp, value: Value | None, params: Any, ctx: OpContext,
                 answers: list[str]) -> OpOutput:
    """The common finish of ops whose answer is one line of text."""
    [answer] = answers
    if is_refusal(answer):
        return op.bad_answer(params, ctx, "model refused", answer)
    line = first_answer_line(answer)
    if not line:
        return op.bad_answer(params, ctx, "empty answer", answer)
    return op.output(line, params)


def _record_field(ctx: OpContext, path: str, key: str) -> Any:
    value = field_or_none(ctx, path)
    if value is None or (isinstance(value, str) and not value.strip()) or value == []:
        raise OpError(Problem(f"record {ctx.record.id!r} has no value at {path!r}", key=key))
    return value


# --- text.translate ----------------------------------------------------------------------------


class TranslateParams(ModelStepParams):
    target_language: str = Field(description="language to translate into, e.g. 'German'")
    source_language: str = Field("English", description="language of the input text")
    template: str = Field(TRANSLATE, description="prompt (Jinja): text, source_language, target_language")

    @field_validator("template")
    @classmethod
    def _template(cls, source: str) -> str:
        return check_template(source, {"text", "source_language", "target_language"})


@OPS.add("text.translate")
class Translate(ModelOp):
    """The text translated by a model (two chained nodes make MMCBench's back-translation)."""

    version = "1.0.0"
    Params = TranslateParams
    input_kind = "text"
    reads_record = False

    def prompts(self, value: Value | None, params: TranslateParams, ctx: OpContext) -> list[ModelPrompt]:
        text = render_prompt(params.template, {"text": _text(value), "source_language": params.source_language,
                                               "target_language": params.target_language})
        return [ModelPrompt(text, seed=self.sampling_seed(params, ctx))]

    def finish(self, value: Value | None, params: TranslateParams, ctx: OpContext,
               answers: list[str]) -> OpOutput:
        return _single_line(self, value, params, ctx, answers)


# --- text.paraphrase ---------------------------------------------------------------------------


class ParaphraseParams(ModelStepParams):
    style: str | None = Field(None, description="a style to rewrite into (MMCBench's style_paraphraser), "
                                                "e.g. 'Shakespeare'; none for a plain paraphrase")
    template: str | None = Field(None, description="prompt (Jinja): text, style; default: benchc's "
                                                   "paraphrase prompt, or its style prompt when style is set")

    @field_validator("template")
    @classmethod
    def _template(cls, source: str | None) -> str | None:
        return None if source is None else check_template(source, {"text", "style"})

    def prompt_template(self) -> str:
        if self.template is not None:
            return self.template
        return STYLE if self.style else PARAPHRASE


@OPS.add("text.paraphrase")
class Paraphrase(ModelOp):
    """The text paraphrased by a model, plainly or in a style (MMCBench's two paraphrasers)."""

    version = "1.0.0"
    Params = ParaphraseParams
    input_kind = "text"
    reads_record = False

    def prompts(self, value: Value | None, params: ParaphraseParams, ctx: OpContext) -> list[ModelPrompt]:
        text = render_prompt(params.prompt_template(), {"text": _text(value), "style": params.style or ""})
        return [ModelPrompt(text, seed=self.sampling_seed(params, ctx))]

    def finish(self, value: Value | None, params: ParaphraseParams, ctx: OpContext,
               answers: list[str]) -> OpOutput:
        return _single_line(self, value, params, ctx, answers)


# --- text.rephrase_llm -------------------------------------------------------------------------


class RephraseLLMParams(ModelStepParams):
    max_new_tokens: int = Field(256, gt=0, le=4096, description="generation: new tokens per answer")
    question_field: str = Field("question", description="record field with the question")
    answer_field: str = Field("answer", description="record field with its answer (a list: the first)")
    index: int = Field(0, ge=0, description="which rephrasing of the answer's list (0-based)")
    count: int = Field(3, ge=1, le=20, description="rephrasings the prompt asks for; an answer "
                                                   "with fewer is unusable")
    template: str = Field(MMR3_REPHRASE, description="prompt (Jinja): question, answer")

    @field_validator("template")
    @classmethod
    def _template(cls, source: str) -> str:
        return check_template(source, {"question", "answer"})

    @model_validator(mode="after")
    def _index_in_count(self) -> RephraseLLMParams:
        if self.index >= self.count:
            raise ValueError(f"index {self.index} is not below count {self.count}")
        return self


@OPS.add("text.rephrase_llm")
class RephraseLLM(ModelOp):
    """One of three rephrasings of a record's question, asked of an LLM with MM-R3's prompt."""

    version = "1.0.0"
    Params = RephraseLLMParams
    input_kind = None
    output_kind = "text"

    def prompts(self, value: Value | None, params: RephraseLLMParams, ctx: OpContext) -> list[ModelPrompt]:
        question = str(_record_field(ctx, params.question_field, "params.question_field")).strip()
        answer = _record_field(ctx, params.answer_field, "params.answer_field")
        answer = str(answer[0] if isinstance(answer, list) else answer).strip()
        text = render_prompt(params.template, {"question": question, "answer": answer})
        # No per-variant seed: every index of a question must read the same list.
        return [ModelPrompt(text, seed=0 if params.temperature > 0 else None)]

    def finish(self, value: Value | None, params: RephraseLLMParams, ctx: OpContext,
               answers: list[str]) -> OpOutput:
        [answer] = answers
        if is_refusal(answer):
            return self.bad_answer(params, ctx, "model refused", answer)
        items = answer_items(answer)
        if len(items) < params.count:
            return self.bad_answer(params, ctx, f"fewer than {params.count} rephrasings", answer)
        return self.output(items[params.index], params)


# --- text.yes_no_question ----------------------------------------------------------------------


class YesNoParams(ModelStepParams):
    subject_field: str = Field("relationship.subject.name", description="record field: the subject")
    predicate_field: str = Field("relationship.predicate", description="record field: the predicate "
                                                                       "(lower-cased, as in 'has')")
    object_field: str = Field("relationship.object.name", description="record field: the object")
    template: str = Field(MERLIM_YES_NO, description="prompt (Jinja): relation, subject, predicate, object")

    @field_validator("template")
    @classmethod
    def _template(cls, source: str) -> str:
        return check_template(source, {"relation", "subject", "predicate", "object"})


@OPS.add("text.yes_no_question")
class YesNoQuestion(ModelOp):
    """A yes/no question built by an LLM from a relation triple, with MERLIM's prompt."""

    version = "1.0.0"
    Params = YesNoParams
    input_kind = None
    output_kind = "text"

    def _parts(self, params: YesNoParams, ctx: OpContext) -> dict[str, str]:
        parts = {"subject": _record_field(ctx, params.subject_field, "params.subject_field"),
                 "predicate": _record_field(ctx, params.predicate_field, "params.predicate_field"),
                 "object": _record_field(ctx, params.object_field, "params.object_field")}
        parts = {k: " ".join(str(v).split()) for k, v in parts.items()}
        parts["predicate"] = parts["predicate"].lower()
        return {**parts, "relation": f"{parts['subject']} {parts['predicate']} {parts['object']}"}

    def prompts(self, value: Value | None, params: YesNoParams, ctx: OpContext) -> list[ModelPrompt]:
        return [ModelPrompt(render_prompt(params.template, self._parts(params, ctx)),
                            seed=self.sampling_seed(params, ctx))]

    def finish(self, value: Value | None, params: YesNoParams, ctx: OpContext,
               answers: list[str]) -> OpOutput:
        [answer] = answers
        if is_refusal(answer):
            return self.bad_answer(params, ctx, "model refused", answer)
        question = yes_no_question_of(first_answer_line(answer))
        if question is None:
            return self.bad_answer(params, ctx, "not a yes/no question", answer)
        return self.output(question, params, {"relation": self._parts(params, ctx)["relation"]})


def yes_no_question_of(line: str) -> str | None:
    """The first question of ``line`` if it is a yes/no question (it starts with an auxiliary
    verb: Is, Are, Does, Can...), capitalised; None otherwise."""
    match = re.match(r"\s*([^?]*\?)", line)
    if match is None:
        return None
    question = match.group(1).strip()
    words = question.split()
    if len(words) < 2 or words[0].lower() not in AUXILIARIES:
        return None
    return question[0].upper() + question[1:]


# --- text.generate -----------------------------------------------------------------------------


class GenerateParams(ModelStepParams):
    template: str = Field(description="prompt (Jinja): text (the input), record (its fields)")
    system: str | None = Field(None, description="system prompt, if any")
    keep: Literal["first_line", "all"] = Field("first_line", description="the answer's first line "
                                               "(cleaned), or all of it (stripped)")

    @field_validator("template")
    @classmethod
    def _template(cls, source: str) -> str:
        return check_template(source, {"text", "record"})


@OPS.add("text.generate")
class Generate(ModelOp):
    """A model's answer to a prompt template over the input text and the record."""

    version = "1.0.0"
    Params = GenerateParams
    input_kind = "text"

    def prompts(self, value: Value | None, params: GenerateParams, ctx: OpContext) -> list[ModelPrompt]:
        text = render_prompt(params.template, {"text": _text(value), "record": ctx.record.fields})
        return [ModelPrompt(text, system=params.system, seed=self.sampling_seed(params, ctx))]

    def finish(self, value: Value | None, params: GenerateParams, ctx: OpContext,
               answers: list[str]) -> OpOutput:
        if params.keep == "first_line":
            return _single_line(self, value, params, ctx, answers)
        [answer] = answers
        if is_refusal(answer):
            return self.bad_answer(params, ctx, "model refused", answer)
        if not answer.strip():
            return self.bad_answer(params, ctx, "empty answer", answer)
        return self.output(answer.strip(), params)
