"""Metric parameter schemas. The compiler checks a spec's metrics against these; the runtime
registers one implementation per name (and a test checks that both sides agree).

Several metrics tell items apart by a *role*: the value of an item attribute (``*_attr``) or,
when no attribute is named, the id of the node that made the item (``asked``, ``negated``...).
MERLIM's metrics use roles to know which image an item shows (original or edited) and which
question it asks (affirmative or negated).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from .errors import Problem
from .registry import Registry
from .spec.models import Spec
from .templates import compile_template


COMMON_ADDED = frozenset({"where", "answer"})
"""Parameters every metric gained after its first release (see ``MetricParams.added``)."""

AttrValue = str | int | float | bool
"""A value of an item attribute as a spec writes it: `reference = 0` for an integer attribute."""


def selects(where: dict[str, list[Any]], attrs: dict[str, Any]) -> bool:
    """Whether an item with ``attrs`` is one a metric's ``where`` keeps (values compared as text,
    as attribute values are everywhere else)."""
    return all(name in attrs and str(attrs[name]) in {str(v) for v in values} for name, values in where.items())


class MetricParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    reads: ClassVar[frozenset[str]] = frozenset({"text"})
    """What the scored stage must answer with (``STAGE_OUTPUT`` values)."""
    added: ClassVar[frozenset[str]] = frozenset()
    """Parameters added after the schema's first release. They are left out of the dumped
    params (the spec document, hence the spec digest) while at their default, so adding a
    parameter moves no existing spec's digest; once set, they are hashed like the others."""

    stage: str | None = Field(None, description="stage whose responses are scored (default: last)")
    by: list[str] = Field(default_factory=list, description="item attributes to split results by")
    embedder: str = Field("minilm", description="sentence embedding model for similarities")
    where: dict[str, list[StrictStr | StrictInt | StrictFloat | StrictBool]] = Field(
        default_factory=dict, description="score only the items whose attributes take one of the listed values, "
                                          "e.g. { index = [1, 2, 3] } (default: every item)")
    answer: str | None = Field(None, description="the named answer rule ([answers.NAME]) the answers are read by "
                                                 "(default: [answer])")

    @model_serializer(mode="wrap")
    def _without_added_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.added | COMMON_ADDED:
                if name in data and getattr(self, name) == type(self).model_fields[name].get_default(
                        call_default_factory=True):
                    del data[name]
        return data

    def extra_stages(self) -> list[str]:
        """Other stages whose responses the metric reads besides ``stage`` (e.g. a follow-up)."""
        return []

    def role_nodes(self) -> list[str]:
        """Node ids the metric's role lists name (checked against the spec's nodes)."""
        return []


class Bootstrap(BaseModel):
    """Percentile bootstrap over groups (resampled with replacement), seeded."""

    bootstrap: int = Field(1000, ge=0, le=100_000, description="bootstrap resamples (0: no interval)")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="level of the bootstrap interval")
    seed: int = Field(0, description="seed of the bootstrap resampling")


# --- MM-R3 --------------------------------------------------------------------------------


class MMR3Params(MetricParams):
    """MM-R3's Acc, S_GT, Con, S_C and O_all over each group of items (benchmarks.md 1.4)."""

    added: ClassVar[frozenset[str]] = frozenset({
        "setting", "subset", "correctness", "fuzzy_threshold", "lowercase_target", "published_column_bug",
        "pairs_by"})

    target: str = Field(description="record field with the ground-truth answer(s)")
    threshold: float = Field(0.7, gt=0.0, lt=1.0, description="Con counts pairs with sim > this")
    cleanup: Literal["none", "mmr3_masking_literal", "mmr3_masking_words"] = Field(
        "none", description="masking answers: the published str.replace calls (literal) or the same "
                            "filler words removed as whole words")
    setting: Literal["variants", "sampling"] = Field(
        "variants", description="variants: pairs among all answers of a group (All Data); sampling: "
                                "pairs among the samples of one item (MM-R3's Sampling setting)")
    subset: Literal["all", "failures"] = Field(
        "all", description="failures: only incorrect answers (and pairs of them), MM-R3's Table 4")
    correctness: Literal["substring", "fuzzy"] = Field(
        "substring", description="Acc: ground truth as a substring (paper), or fuzzy token-set "
                                 "ratio >= fuzzy_threshold (the follow-up code's soft correctness)")
    fuzzy_threshold: int = Field(85, ge=0, le=100, description="fuzzy: least token-set ratio")
    lowercase_target: bool = Field(
        True, description="lower-case the ground truth (false: the published restyle script, "
                          "whose capitalised labels never match the lower-cased answers)")
    published_column_bug: bool = Field(
        False, description="replay the published scripts' bug: the 2nd answer's correctness is "
                           "copied from the 3rd")
    pairs_by: Literal["touching", "within"] = Field(
        "touching", description="with `by`: a pair counts for each value of its two items "
                                "(touching) or only when both items have it (within)")


# --- MMCBench -----------------------------------------------------------------------------


class MMCBenchParams(MetricParams):
    """MMCBench's consistency: sum over corruptions of the mean cosine similarity, x100."""

    over: str = Field("corruption", description="attribute that names the perturbation")
    reference: AttrValue = Field("clean", description="value of `over` that marks the unperturbed item")
    normalize: Literal["none", "lower_strip", "whisper"] = Field(
        "lower_strip", description="outputs compared as is, lower-cased and stripped, or through Whisper's "
                                   "English text normaliser (MMCBench speech2text: WhisperTokenizer._normalize)")


class MMCBenchCrossParams(MetricParams):
    """MMCBench's CLIP consistency for image-to-text and text-to-image: cross-modal and uni-modal."""

    reads: ClassVar[frozenset[str]] = frozenset({"text", "image"})

    task: Literal["image2text", "text2image"] = Field(
        description="image2text: captions of an image stage; text2image: images of a text-to-image stage")
    clip: str = Field(description="folder of a CLIP model saved with save_pretrained")
    device: str = Field("cpu", description="device the CLIP model runs on")
    over: str = Field("corruption", description="attribute that names the perturbation")
    reference: AttrValue = Field("clean", description="value of `over` that marks the unperturbed item")
    published_keys: bool = Field(
        False, description="text2image: swap cross and uni, as MMCBench's evaluate.py names them")


# --- MERLIM -------------------------------------------------------------------------------


class MerlimRoles(MetricParams):
    image_attr: str | None = Field(
        None, description="attribute naming the image an item shows (default: the item's node)")
    original: list[str] = Field(
        default_factory=list, description="values (of image_attr, or node ids) of items that show "
                                          "the original image; other items show the edited one")

    def role_nodes(self) -> list[str]:
        return list(self.original) if self.image_attr is None else []


class MerlimRecognitionParams(MerlimRoles):
    """MERLIM's object recognition: spaCy nouns vs ground-truth labels and synonyms, P/R/F1."""

    target: str = Field("objects", description="field with the labels: a list, or {original, edited}")
    prompt_attr: str | None = Field(None, description="attribute naming the prompt (instruction bias)")
    synonyms: str | None = Field(None, description="CSV of (noun, label) synonym pairs, read at scoring")
    wordnet: Literal["off", "synonyms", "hyponyms"] = Field(
        "synonyms", description="WordNet matches: shared synset, or also any noun below the label")
    builtin_synonyms: bool = Field(True, description="a few person words (man, woman, people...)")
    place_words: list[str] = Field(default_factory=list, description="more words to discard as places")
    average: Literal["macro", "micro"] = Field(
        "macro", description="mean of per-answer P/R/F1, or P/R/F1 of the summed counts")


class MerlimRelationsParams(MerlimRoles):
    """MERLIM's relationship task: yes/no accuracy, affirmative and negated, original and edited."""

    target: str = Field("answers", description="field {original, original_neg, edited, edited_neg}")
    polarity_attr: str | None = Field(
        None, description="attribute naming the question's polarity (default: the item's node)")
    negated: list[str] = Field(
        default_factory=lambda: ["negated"], description="values (of polarity_attr, or node ids) "
                                                         "of items that ask the negated question")
    answer_parse: Literal["first_word", "anywhere"] = Field(
        "first_word", description="read yes/no from the first word, or the first yes/no word")

    def role_nodes(self) -> list[str]:
        return [*super().role_nodes(), *(self.negated if self.polarity_attr is None else [])]


class MerlimCountingParams(MerlimRoles):
    """MERLIM's counting: MAE and its std on original and edited images, and follow-up accuracy."""

    target: str = Field("count", description="field with the count: a number, or {original, edited}")
    parse: Literal["words", "int_only"] = Field(
        "words", description="digits and number words (first_number), or MERLIM's int(answer)")
    follow_up_stage: str | None = Field(None, description="stage with the yes/no follow-up answers")
    answer_parse: Literal["first_word", "anywhere"] = Field(
        "first_word", description="read the follow-up's yes from its first word, or anywhere")

    def extra_stages(self) -> list[str]:
        return [self.follow_up_stage] if self.follow_up_stage else []


# --- Koala --------------------------------------------------------------------------------


KoalaDomain = Literal["color", "shape", "yesno", "number"]
DEFAULT_KOALA_DOMAINS: tuple[KoalaDomain, ...] = ("color", "shape")


class KoalaParams(MetricParams):
    """Koala's accuracies: acknowledgments, bag-of-words labels, parametric response rate."""

    target: str = Field("answer", description="field with the expected answer (l_new, l_RET, l_old)")
    phrases: Literal["paper", "code"] = Field(
        "paper", description="acknowledgment phrases of the paper's Table 5, or the code's list")
    extra_phrases: list[str] = Field(default_factory=list, description="more acknowledgment phrases")
    count_no: bool = Field(False, description="also count answers 'no' and '0' (negative_eval.py)")
    definition: Literal["paper", "code"] = Field(
        "paper", description="bag-of-words accuracy: paper (App. E: all expected words present, "
                             "Figure 10 sets) or code (precision over the answer's words, code sets)")
    domains: list[KoalaDomain] = Field(
        default_factory=lambda: list(DEFAULT_KOALA_DOMAINS),
        description="question domains of WebQA answers; an answer scores its best domain")
    domain_attr: str | None = Field(None, description="attribute naming each item's domain")


# --- any spec -----------------------------------------------------------------------------

Match = Literal["exact", "normalized", "embedding"]
MATCH = "how two answers agree: exact (stripped), normalized (SQuAD-style), embedding (cos > threshold)"
CorrectName = Literal["normalized", "exact", "lm_eval_exact", "short_answer", "word", "substring"]


class LmEvalExact(BaseModel):
    """lm-eval's ``exact_match`` with its own flags, as a task's ``metric_list`` writes them
    (lm_eval/api/metrics.py ``exact_match_hf_evaluate``, lm-eval 0.4.13): each of
    ``regexes_to_ignore`` removed (``re.sub``) from answer and target in turn, then case,
    ``string.punctuation`` and digits dropped as asked; nothing is stripped."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rule: Literal["lm_eval_exact"] = Field(description="lm_eval_exact")
    ignore_case: bool = Field(True, description="compare in lower case")
    ignore_punctuation: bool = Field(True, description="drop string.punctuation from both")
    ignore_numbers: bool = Field(False, description="drop the digits 0-9 from both")
    regexes_to_ignore: list[str] = Field(default_factory=list, description="regular expressions removed from "
                                                                           "both, in order, before the rest")

    @field_validator("regexes_to_ignore")
    @classmethod
    def _regexes(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return value


def _correct_form(value: Any) -> str:
    return "table" if isinstance(value, (dict, LmEvalExact)) else "name"


Correct = Annotated[Annotated[CorrectName, Tag("name")] | Annotated[LmEvalExact, Tag("table")],
                    Discriminator(_correct_form)]
CORRECT = ("when an answer is right: normalized (equal after normalisation, the default), exact, lm_eval_exact "
           "(lm-eval's exact_match with ignore_case and ignore_punctuation; or as a table with lm-eval's flags: "
           "{ rule = \"lm_eval_exact\", ignore_case, ignore_punctuation, ignore_numbers, regexes_to_ignore }), "
           "short_answer (the first sentence is the target, or a plain statement ending with it: 'The capital of "
           "Spain is Madrid.'; knowing the question: 'The Nile River.'), word "
           "(the target as whole words of the answer), substring (raw substring: MM-R3's lenient rule, "
           "'no' is inside 'not'; named in the report)")
TARGET = ("the correct answer(s): a record field path ('answer'), or a Jinja template over `record` and "
          "`attrs` rendered per item (\"{{ 'no' if attrs.negated else record.answer }}\")")
PAIRS_BY = "with `by`: a pair counts for each value of its two items (touching) or only when both have it"
Relation = Literal["same", "opposite", "expected"]
RELATION = ("what should hold between an item's answer and its reference item's: same (invariance: the "
            "answers agree), opposite (negation: one reads yes, the other no), expected (each answer is "
            "right for its own target, e.g. the moved option letter after a permutation)")


def is_template(target: str) -> bool:
    """A metric target written as a Jinja template (rendered per item) instead of a field path."""
    return "{{" in target or "{%" in target


class AgreementParams(MetricParams, Bootstrap):
    """Pairwise agreement of the answers within each group, with a bootstrap interval."""

    match: Match = Field("normalized", description=MATCH)
    threshold: float = Field(0.7, gt=-1.0, lt=1.0, description="embedding: agree if cos > this")
    pairs_by: Literal["touching", "within"] = Field("touching", description=PAIRS_BY)


class FlipRateParams(MetricParams, Bootstrap):
    """Share of perturbed items whose answer differs from the unperturbed item's."""

    over: str = Field(description="attribute that names the perturbation")
    reference: AttrValue = Field(description="value of `over` that marks the unperturbed item")
    flip: Literal["answer", "correctness"] = Field(
        "answer", description="answer: the answers disagree; correctness: one is right, one wrong")
    match: Match = Field("normalized", description=MATCH)
    threshold: float = Field(0.7, gt=-1.0, lt=1.0, description="embedding: agree if cos > this")
    target: str | None = Field(None, description=TARGET + " (flip = 'correctness')")
    correct: Correct = Field("normalized", description=CORRECT)

    @model_validator(mode="after")
    def _needs_target(self) -> FlipRateParams:
        if self.flip == "correctness" and self.target is None:
            raise ValueError("flip = 'correctness' needs `target`, the field with the correct answer")
        return self


class WorstCaseParams(MetricParams, Bootstrap):
    """Worst case over a group: a group is correct only if all its answers are (CircularEval
    with a per-item target: every permutation right)."""

    target: str = Field(description=TARGET)
    correct: Correct = Field("normalized", description=CORRECT)


class AccuracyParams(MetricParams, Bootstrap):
    """Share of correct answers, with a bootstrap interval clustered by source record.

    One row per value of `by` (e.g. by = ["perturbation"] for one row per variant kind)."""

    target: str = Field(description=TARGET)
    correct: Correct = Field("normalized", description=CORRECT)


class ConsistencyParams(MetricParams, Bootstrap):
    """Share of (reference, variant) answer pairs that hold the relation expected between them.

    One row per relation (and `by` value), with a bootstrap interval clustered by source record."""

    over: str = Field("perturbation", description="attribute that names the perturbation of an item")
    reference: AttrValue = Field("original", description="value of `over` that marks each record's reference item")
    relation: Relation = Field("same", description=RELATION)
    relations: dict[str, Relation] = Field(
        default_factory=dict, description="per value of `over`, a relation other than `relation` "
                                          "(e.g. { negated = \"opposite\" })")
    match: Match = Field("normalized", description=MATCH + " (relation same)")
    threshold: float = Field(0.7, gt=-1.0, lt=1.0, description="embedding: agree if cos > this")
    target: str | None = Field(None, description=TARGET + " (relation expected)")
    correct: Correct = Field("normalized", description=CORRECT)

    @model_validator(mode="after")
    def _needs_target(self) -> ConsistencyParams:
        if "expected" in (self.relation, *self.relations.values()) and self.target is None:
            raise ValueError("relation 'expected' needs `target`: each item's correct answer")
        return self


Normalize = Literal["whisper", "lower_strip", "none"]
NORMALIZE = ("how answer and target are normalised before they are aligned: whisper (Whisper's English text "
             "normaliser, as the Whisper paper and the Open ASR Leaderboard score; English only), lower_strip "
             "(lower case, every Unicode punctuation character removed, white space collapsed), none (as they are)")


class ErrorRateParams(MetricParams, Bootstrap):
    """Edit counts of each answer against its target (jiwer), summed over the answers of a split."""

    target: str = Field(description=TARGET + " (the reference text)")
    normalize: Normalize = Field("whisper", description=NORMALIZE)


class WerParams(ErrorRateParams):
    """Word error rate: substitutions, deletions and insertions over the reference words, summed (jiwer).

    A corpus rate (summed errors over summed reference words), never a mean of per-item rates."""


class CerParams(ErrorRateParams):
    """Character error rate: substitutions, deletions and insertions over the reference characters (jiwer).

    A corpus rate (summed errors over summed reference characters, spaces included)."""


Direction = Literal["not_better", "not_worse"]
DIRECTION = ("as `over` grows (along `order`), a record's quantity must not get better (not_better: e.g. "
             "accuracy under growing noise) or must not get worse (not_worse)")


class DirectionParams(MetricParams, Bootstrap):
    """Directional expectation (CheckList's DIR): along an ordered attribute, each record's score moves one way only.

    Per record, the quantity at each value of `over` (over its answers there) against the next value's."""

    over: str = Field(description="the ordered attribute (e.g. severity, snr_db): numbers, or the values of `order`")
    relation: Direction = Field(description=DIRECTION)
    quantity: Literal["correct", "wer", "cer"] = Field(
        "correct", description="what is compared: correct (share of right answers, higher is better), wer or cer "
                               "(error rate against `target`, lower is better)")
    target: str = Field(description=TARGET)
    correct: Correct = Field("normalized", description=CORRECT + " (quantity correct)")
    normalize: Normalize = Field("whisper", description=NORMALIZE + " (quantity wer, cer)")
    order: list[StrictStr | StrictInt | StrictFloat] | None = Field(
        None, min_length=2, description="the values of `over` from first to last, e.g. [\"low\", \"mid\", \"high\"] "
                                        "(default: its values as numbers, ascending)")

    @field_validator("order")
    @classmethod
    def _distinct(cls, order: list[str | int | float] | None) -> list[str | int | float] | None:
        if order is not None and len({str(v) for v in order}) < len(order):
            raise ValueError("`order` names a value twice")
        return order


# --- judges (a model that scores answers or data) ----------------------------------------------


JudgeParser = Literal["scale", "yes_no", "label"]
JUDGE_PARSER = ("how the judge's answer is read: scale (the first integer, which must lie in "
                "[scale_min, scale_max]), yes_no (the first word, yes or no), label (the first line, "
                "punctuation and case ignored, one of `labels`); an answer it cannot read is counted "
                "and listed, never scored")
JUDGE_TEMPLATE = ("the judge's prompt (Jinja, sandboxed): question (the item's prompt), answer (its "
                  "first response), responses, targets, attrs, item_id, and reference (the group's "
                  "reference item: question, answer, attrs) when `over` is set")


class Judge(BaseModel):
    """A judge: a backend (as `benchc run --model` names one) asked with a versioned prompt
    template, and the parser that reads its answers. Every request goes through the response
    store, keyed by the backend's fingerprint and the rendered prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field(description="the judge's backend: hf:PATH, openai:MODEL,..., vllm:PATH, echo, ...")
    name: str | None = Field(None, description="the judge's name in the results (default: its backend)")
    template: str = Field(description=JUDGE_TEMPLATE)
    system: str | None = Field(None, description="the judge's system prompt (no template)")
    version: str = Field("1", min_length=1, description="the prompt's version, reported with its digest")
    parser: JudgeParser = Field("scale", description=JUDGE_PARSER)
    scale_min: int = Field(1, description="scale: the lowest score")
    scale_max: int = Field(5, description="scale: the highest score")
    labels: list[str] = Field(default_factory=list, description="label: the answers the judge may give")
    media: bool = Field(False, description="send the item's images with the prompt (a VLM judge)")
    max_new_tokens: int = Field(16, ge=1, le=4096, description="the judge's answer length limit")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="the judge's sampling temperature")

    @field_validator("template")
    @classmethod
    def _compiles(cls, template: str) -> str:
        compile_template(template)  # a syntax error is refused when the spec is validated
        return template

    @model_validator(mode="after")
    def _parser_settings(self) -> Judge:
        if self.parser == "scale" and self.scale_min >= self.scale_max:
            raise ValueError("scale_min must be below scale_max")
        if self.parser == "label" and len(set(self.labels)) < 2:
            raise ValueError("parser 'label' needs at least two distinct `labels`")
        return self

    @property
    def label(self) -> str:
        return self.name or self.backend


class JudgeParams(MetricParams):
    """A judge model's verdict on each item; with two judges, their agreement (Cohen's kappa).

    Per judge: the mean score, the share of yes or the share of each label over the answers its
    parser read; the answers it could not read are counted and listed; two judges' disagreeing
    items are listed."""

    judges: list[Judge] = Field(min_length=1, max_length=2,
                                description="one judge, or two to report their agreement")
    over: str | None = Field(None, description="attribute that names each group's reference item; the "
                                               "reference is then not judged, and the template gets it")
    reference: str | None = Field(None, description="value of `over` that marks the reference item")
    kappa_weights: Literal["none", "linear", "quadratic"] = Field(
        "none", description="Cohen's kappa of two judges: unweighted, or weighted for ordered scales")

    @model_validator(mode="after")
    def _reference_pair(self) -> JudgeParams:
        if (self.over is None) != (self.reference is None):
            raise ValueError("`over` and `reference` go together")
        if len({j.label for j in self.judges}) < len(self.judges):
            raise ValueError("two judges need different names (set `name`)")
        if self.kappa_weights != "none" and any(j.parser != "scale" for j in self.judges):
            raise ValueError("weighted kappa (kappa_weights) needs judges with parser = 'scale'")
        return self


KOALA_CONTEXT_SYSTEM = (
    "Give a contextualization score for each image question pair. The score, between 1 and 10, should "
    "reflect the degree to which the image contextualizes the question. That is, how likely is it that you "
    "might come up with the question while looking at the image. Focus on the range of possible questions "
    "that might be asked about the image; that is, how likely is the given question, in this entire set. "
    "Give just the score, no explanation.")
"""Koala's contextualisation prompt, App. B (query_image_contextualization.py), verbatim."""


class KoalaContextJudge(Judge):
    """Koala's judge by default (each field can be set on its own): gpt-4o-mini at temperature
    0, App. B's system prompt, the counterfactual image and its question, a score 1-10."""

    backend: str = Field("openai:gpt-4o-mini", description="the judge's backend (default: Koala's)")
    template: str = Field("Question: {{ question.split('Q: ')[-1] }}",
                          description=JUDGE_TEMPLATE + " (default: App. B's human turn)")
    system: str | None = Field(KOALA_CONTEXT_SYSTEM, description="the judge's system prompt (default: App. B's)")
    version: str = Field("koala-appB", min_length=1, description="the prompt's version")
    scale_max: int = Field(10, description="scale: the highest score")
    media: bool = Field(True, description="send the item's images with the prompt")


class KoalaContextParams(MetricParams):
    """Koala's Figure 6: acknowledged refusals (l_RET accuracy) per contextualisation score.

    A judge (App. B's prompt) scores each counterfactual item 1-10; one row per score."""

    judge: KoalaContextJudge = Field(default_factory=KoalaContextJudge,
                         description="the judge (default: gpt-4o-mini with Koala's App. B prompt, 1-10)")
    phrases: Literal["paper", "code"] = Field(
        "paper", description="acknowledgment phrases of the paper's Table 5, or the code's list")
    extra_phrases: list[str] = Field(default_factory=list, description="more acknowledgment phrases")
    count_no: bool = Field(False, description="also count answers 'no' and '0' (negative_eval.py)")


def params_of(implementation: Any) -> type[MetricParams]:
    """The schema of a metric implementation named by an entry point in group ``benchc.metrics``."""
    schema: type[MetricParams] = implementation.Params
    return schema


METRIC_SCHEMAS: Registry[type[MetricParams]] = Registry("metric", group="benchc.metrics", make=params_of)
BUILTIN_SCHEMAS: dict[str, type[MetricParams]] = {
    "mmr3.all": MMR3Params, "mmcbench.consistency": MMCBenchParams, "mmcbench.cross_modal": MMCBenchCrossParams,
    "merlim.recognition": MerlimRecognitionParams, "merlim.relations": MerlimRelationsParams,
    "merlim.counting": MerlimCountingParams, "koala.accuracy": KoalaParams, "general.agreement": AgreementParams,
    "general.flip_rate": FlipRateParams, "general.worst_case": WorstCaseParams, "general.accuracy": AccuracyParams,
    "general.consistency": ConsistencyParams, "general.wer": WerParams, "general.cer": CerParams,
    "general.direction": DirectionParams, "judge.score": JudgeParams, "koala.contextualization": KoalaContextParams}
"""The built-in metrics' schemas, known to the compiler without the runtime; each implementation
names the same class in its ``@metric`` (tests/test_layout.py checks that the two sides agree)."""
for _name, _schema in BUILTIN_SCHEMAS.items():
    METRIC_SCHEMAS.register(_name, _schema)


STAGE_OUTPUT: dict[str, str] = {"generate": "text", "speech-to-text": "text", "text-to-speech": "audio",
                                "text-to-image": "image", "choice-loglik": "text"}
"""What each stage task answers with. Metrics read text unless their schema says otherwise."""


def _schema_params(name: str, raw: dict[str, Any]) -> MetricParams | None:
    """The validated params, or None (unknown name or invalid params: the resolver reports it)."""
    if name not in METRIC_SCHEMAS:
        return None
    try:
        return METRIC_SCHEMAS.get(name).model_validate(raw)
    except ValidationError:
        return None


def metric_stage_problems(spec: Spec) -> list[Problem]:
    """One problem per metric that would score a stage whose answers it cannot read (a
    text-to-speech stage's audio), keyed ``metric[i].stage`` even when the stage is the default
    (the last one); per extra stage a metric reads (a follow-up) that is not in the spec or does
    not answer in text; and per role value naming a node the spec does not have. Unknown names of
    the scored stage are left to the resolver."""
    stages = {s.id: s for s in spec.stage}
    text_stages = [s.id for s in spec.stage if STAGE_OUTPUT[s.task] == "text"]
    node_ids = [n.id for n in spec.node]
    out = []
    for index, metric in enumerate(spec.metric):
        schema = METRIC_SCHEMAS.get(metric.name) if metric.name in METRIC_SCHEMAS else MetricParams
        named = metric.params.get("stage")
        stage_id = named if named is not None else spec.stage[-1].id
        stage = stages.get(stage_id) if isinstance(stage_id, str) else None
        if stage is not None and STAGE_OUTPUT[stage.task] not in schema.reads:
            how = "" if named is not None else " (the last stage, scored by default)"
            hint = (f"metrics read text: set stage to one of {', '.join(repr(t) for t in text_stages)}"
                    if text_stages else
                    f"metrics read text: add a speech-to-text stage with input = {stage_id!r} and score it")
            out.append(Problem(f"metric {metric.name!r} scores stage {stage_id!r}{how}, a {stage.task} "
                               f"stage whose outputs are {STAGE_OUTPUT[stage.task]}",
                               key=f"metric[{index}].stage", hint=hint))
        params = _schema_params(metric.name, metric.params)
        if params is None:
            continue
        for extra in params.extra_stages():
            if extra not in stages:
                out.append(Problem(f"metric {metric.name!r} reads stage {extra!r}, which the spec does not have",
                                   key=f"metric[{index}]", hint=f"stages: {', '.join(stages)}"))
            elif STAGE_OUTPUT[stages[extra].task] != "text":
                out.append(Problem(f"metric {metric.name!r} reads stage {extra!r}, a {stages[extra].task} stage",
                                   key=f"metric[{index}]", hint=f"text stages: {', '.join(text_stages)}"))
        for node in params.role_nodes():
            if node not in node_ids:
                out.append(Problem(f"metric {metric.name!r} names node {node!r}, which the spec does not have",
                                   key=f"metric[{index}]",
                                   hint=f"nodes: {', '.join(node_ids) or 'none'} (or name an attribute "
                                        "with the metric's *_attr parameter)"))
    return out
