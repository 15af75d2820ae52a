"""The scoring-rules version: which rules turned a run's answers into its numbers.

A score can move because the model changed or because benchc changed how it reads and scores
answers (an extraction step, a correctness rule, a metric's default, how a similarity or a mean
is taken). ``RULES_VERSION`` names the second: ``scores.json`` records it, a paper file's
``[recorded]`` table records it, and ``benchc diff-runs`` and ``benchc reproduce`` name a
difference as the cause when numbers move. CHANGELOG.md says what each version changed.

``rules_fingerprint`` is what the version stands for, observed rather than declared: every
metric's parameter defaults, the ``[answer]`` defaults, the verdict of every correctness rule
and the output of every extraction step on a fixed set of probe answers, and the similarity of
identical inputs. A golden test pins the fingerprint of each version, so a changed default or
rule without a bump of ``RULES_VERSION`` fails the suite.
"""

from __future__ import annotations

from typing import Any

from benchc.compiler.canonical import digest
from benchc.compiler.metrics import METRIC_SCHEMAS
from benchc.compiler.spec.models import Answer

RULES_VERSION = 5
"""1: benchc 0.1.0 as first released (unversioned scores). 2: identical inputs have similarity
exactly 1, float64 cosines and fsum means, paper artifacts rounded to their printed digits.
3: an answer that is only articles keeps its words when normalised ("A" is option A, not "").
4: answers read as real models write them (issue 25): leading lines that echo the prompt dropped;
first_line, first_sentence, yes_no, number and option_letter read the answer without markdown and
"Answer:" labels; yes_no and option_letter read no answer from a hedge, two letters or an echoed
instruction or option list; regex takes the first group that matched, stripped, and can take
the last match; the answer_text step and the lm_eval_exact rule.
5: answers read knowing their question (issue 25): short_answer takes the target followed by words of
the question ("The Nile River.") and the target as the subject of the question's predicate, after a
list mark, and reads no comparison ("than") as a statement of the target; yes_no reads an answer that
restates the question ("Gold is a metal." -> yes); option_letter reads the option's text ("Tokyo"),
and an answer's first line alone when the whole names several letters; lm_eval_exact as a table of
lm-eval's flags (regexes_to_ignore, ignore_numbers); number reads GSM8K's "#### N" final answer; a relative
clause is no statement of the target; special tokens a server leaves ("<start_of_image>") are no text;
short_answer reads a later sentence of the first line when the ones before it do not try to answer, a date
after the target ("... da Vinci in 1508.") and "0°C" as "0 degrees Celsius";
general.wer, general.cer and general.direction."""

CORRECTNESS_RULES = ("normalized", "exact", "lm_eval_exact", "short_answer", "word", "substring")
EXTRACTION_STEPS = ("answer_text", "normalize", "first_line", "first_sentence", "yes_no", "number", "option_letter",
                    "regex")
BUILT_IN = ("general", "judge", "koala", "merlim", "mmcbench", "mmr3")  # plugins' metrics are theirs
PROBE_PATTERN = r"answer:\s*(\w+)"

# (answer as the model wrote it, the item's targets): short and long answers, articles, option
# letters, numbers in words, echoes and hedges, the cases whose reading has moved before.
PROBES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("A", ("A",)), ("(B).", ("B",)), ("B. a dog", ("B",)), ("The answer is C", ("C",)),
    ("A rectangle", ("A",)), ("Paris", ("Paris",)), ("The capital of France is Paris.", ("Paris",)),
    ("paris.", ("Paris",)), ("the Paris", ("Paris",)), ("Answer: Shakespeare", ("Shakespeare",)),
    ("Answer:\n\nThe capital of France is Paris.", ("Paris",)), ("five", ("5",)), ("5 dogs", ("five",)),
    ("3.5 cm. It is long.", ("3.5 cm",)), ("No, it is not.", ("no",)), ("I do not know.", ("no",)),
    ("Is it red? Answer yes or no.", ("yes",)), ("Yes", ("yes",)), ("not", ("no",)), ("", ("",)),
    ("   ", ("a",)), ("a red car", ("red",)), ("42", ("42", "forty-two")), ("Rome", ("Paris", "Rome")),
    # rules 4: forms real models write (issue 25)
    ("**C**", ("C",)), ("### Answer: Shakespeare", ("Shakespeare",)), ("A or B", ("A",)), ("Yes and no", ("yes",)),
    ("C. William Shakespeare", ("C",)), ("B, because C is wrong", ("B",)), ("answer: 7, then 14", ("14",)),
    ("Paris.", ("paris",)), ("The capital of Spain is Madrid.", ("Madrid",)), ("It is not Madrid.", ("Madrid",)),
    ("7+5=12", ("12",)),
)
# rules 5: (answer, targets, the item's prompt): readings that need the question (issue 25)
PROMPTED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("The Nile River.", ("Nile",), "What is the longest river in Africa?"),
    ("100 degrees Celsius", ("100",), "What is the boiling point of water in degrees Celsius?"),
    ("1. The heart pumps blood through the body.", ("heart",), "What organ pumps blood through the body?"),
    ("London is bigger than Paris.", ("Paris",), "Which is bigger, London or Paris?"),
    ("Gold is a metal.", ("yes",), "Is gold a metal?\nAnswer yes or no."),
    ("Gold is not a metal.", ("no",), "Is gold a metal?\nAnswer yes or no."),
    ("Gold is a metal or a rock.", ("yes",), "Is gold a metal?\nAnswer yes or no."),
    (" Tokyo\nAnswer: Beijing", ("A",), "Capital of Japan?\nA. Tokyo\nB. Beijing\nAnswer with the letter."),
    ("Hot is the opposite of cold.", ("B",), "Opposite of hot?\nA. Warm\nB. Cold\nAnswer with the letter."),
    ("A. Blue\nB. Green", ("A",), "Sky colour?\nA. Blue\nB. Green\nAnswer with the letter."),
    ("The largest ocean is the Mariana Trench, which is in the Pacific Ocean.", ("Pacific Ocean",),
     "What is the largest ocean on Earth?"),
    ("<start_of_image>The Mona Lisa was painted by<start_of_image>Leonardo da Vinci.", ("Leonardo da Vinci",),
     "Who painted the Mona Lisa?"),
    ("6 rows = <<6*5=30>>30 desks.\nIn total 15 desks.\n#### 15", ("30",), "How many desks?"),
    ("Egypt is a country in Africa. It has a capital city, known as Cairo.", ("Cairo",),
     "What is the capital of Egypt?"),
    ("Rome. The capital of France is Paris.", ("Paris",), "What is the capital of France?"),
    ("It was painted by Leonardo da Vinci in 1508.", ("Leonardo da Vinci",), "Who painted the Mona Lisa?"),
    ("Water freezes at 0°C.", ("0",), "What is the freezing point of water in degrees Celsius?"),
)
LM_EVAL_FLAGS = {"rule": "lm_eval_exact", "ignore_case": True, "ignore_punctuation": False,
                 "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}
"""lm-eval's gsm8k.yaml exact_match flags: a probe of the table form of ``correct``."""


NO_RULE_PARAMS = frozenset({"answer"})
"""Metric parameters that are no scoring rule: ``answer`` picks which of the spec's own answer
rules reads a metric's answers, and its default (none: ``[answer]``) is what every metric did
before it existed, so no score moves."""


def _metric_defaults() -> dict[str, dict[str, Any]]:
    """metric name -> parameter -> its default (required parameters are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(n for n in METRIC_SCHEMAS.names() if n.split(".")[0] in BUILT_IN):
        fields = METRIC_SCHEMAS.get(name).model_fields
        out[name] = {key: _plain(f.get_default(call_default_factory=True)) for key, f in sorted(fields.items())
                     if not f.is_required() and key not in NO_RULE_PARAMS}
    return out


def _plain(value: Any) -> Any:
    """A default as canonical JSON can hold it (models and tuples as their JSON, others by repr)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _verdicts() -> dict[str, list[Any]]:
    from .answers import extract, is_correct

    out: dict[str, list[Any]] = {rule: [is_correct(a, list(t), rule) for a, t in PROBES] for rule in CORRECTNESS_RULES}
    for step in EXTRACTION_STEPS:
        answer = Answer(extract=[step], pattern=PROBE_PATTERN if step == "regex" else None)
        out[f"extract:{step}"] = [extract(a, answer) for a, _ in PROBES]
    out["prompted:short_answer"] = [is_correct(a, list(t), "short_answer", p) for a, t, p in PROMPTED]
    for step in ("yes_no", "option_letter", "number"):
        out[f"prompted:extract:{step}"] = [extract(a, Answer(extract=[step]), p) for a, _, p in PROMPTED]
    out["lm_eval_exact:gsm8k"] = [is_correct(a, list(t), LM_EVAL_FLAGS) for a, t in PROBES]
    return out


def rules_fingerprint() -> dict[str, Any]:
    """What the scoring rules do, observed (see the module docstring)."""
    import numpy as np

    from benchc.compiler.similarity import cosine

    vector = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    return {"metric_defaults": _metric_defaults(), "answer_defaults": Answer().model_dump(mode="json"),
            "verdicts": _verdicts(), "identical_similarity": cosine(vector, vector, same=True)}


def rules_digest() -> str:
    return digest(rules_fingerprint())


def rules_change(recorded: int | None, now: int = RULES_VERSION) -> str | None:
    """A sentence naming a scoring-rules difference, or None when there is none."""
    if recorded == now:
        return None
    then = "1 (unversioned: benchc 0.1.0)" if recorded is None else str(recorded)
    return (f"the scoring rules changed: recorded under rules version {then}, scored now under {now} "
            f"(CHANGELOG.md says what changed)")
