"""Reading answers: the extraction steps of a spec's ``[answer]`` section, and the one
correctness function every general metric and ``benchc diff-runs`` share.

Before the steps, the leading lines of an answer that repeat a line or sentence of its prompt
are dropped (``[answer].drop_echo``, on by default; rules 4): a model that echoes "... Answer yes
or no." has not answered, and two echoes must not agree. Without steps answers are scored as
they are (a task may ask to repeat or rewrite its prompt's text).

Extraction steps (run in order; each takes the previous step's text). Rules 4 measured them on
answers real models wrote (Gemma 3 270M behind llama.cpp, issue 25); the readers of
``first_line`` onwards read the answer's text first:

* ``answer_text``: the answer without what wraps it: markdown emphasis and heading marks, lines
  that are only a label, a leading "Answer:" / "The answer is" ("### Answer: Shakespeare" ->
  "Shakespeare"; "Answer:\n\nThe capital of France is Paris." -> "The capital of France is Paris.").
* ``normalize``: SQuAD-style (lower case, number words as digits, no punctuation, no articles,
  white space collapsed); an answer that is only articles keeps them ("A" is option A).
* ``first_line``: the first line of the answer's text that is not blank.
* ``first_sentence``: the first line, up to the first ``.``, ``!`` or ``?`` followed by white
  space or the end ("3.5 cm. It is..." -> "3.5 cm.").
* ``yes_no``: "yes" or "no", from the first line: its first word when it is one of them, else the
  only one of the two it holds as a whole word; a line holding both ("Yes and no"), neither ("I do
  not know."), or only the instruction "yes or no" echoed reads as no answer. Later lines are the
  model writing on ("Yes.\nAnswer: No.\nQuestion: ..." reads yes).
* ``number``: the number after the last "=" of the first line when the answer writes an
  equation ("7+5=12" -> "12"), else the first number, in digits or words ("five dogs" -> "5").
* ``option_letter``: the one option letter the answer picks: the whole answer ("B", "(b).",
  "**C**"), "answer/option is B", or a letter that opens a line before punctuation ("B. a dog",
  "(B) ...") or stands in parentheses; an answer naming two letters, or echoing the option list,
  reads as no answer. Letters from ``[answer].letters``; a lower-case "a" after "the answer is"
  is an article, and "A rectangle" picks none.
* ``regex``: the first (``select = "first"``) or last (``"last"``) match of ``[answer].pattern``,
  stripped: group ``group``, or the first group that matched, or the whole match without groups.
* ``lowercase``, ``uppercase``, ``trim``: the text in lower or upper case, or without the white
  space around it (lm-eval's ``lowercase``, ``uppercase`` and ``remove_whitespace`` filters).

A step that finds nothing leaves no answer: the empty string, which is never correct and agrees
with no other answer (not even another empty one), so "could not read an answer" never counts
as consistent. ``benchc score`` counts such answers in a note and lists them (``details.no_answer``).

Correctness (``correct``), the same function for every general metric and ``diff-runs``:

* ``normalized`` (default): equal to a target after ``normalize`` on both sides;
* ``exact``: equal after stripping white space, ignoring case;
* ``lm_eval_exact``: lm-eval's ``exact_match`` with ``ignore_case`` and ``ignore_punctuation``
  (punctuation removed, case ignored, white space kept as it is: lm-eval does not strip);
* ``short_answer``: the answer's first sentence (after labels), normalised, is a target, or is a
  plain statement ending with one ("The capital of Spain is Madrid."; measured on real answers,
  issue 25): not a question, and holding no negation or alternative ("not", "or", "and");
* ``word``: a normalized target occurs in the normalized answer as whole words ("a red car"
  has "red"; "I do not know" has no "no");
* ``substring``: a target as a raw case-insensitive substring of the answer. This is MM-R3's
  rule and inflates scores ("no" is inside "not" and "know"); it is never a default and reports
  name it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from benchc.compiler.metrics import LmEvalExact
from benchc.compiler.numbers import first_number
from benchc.compiler.spec.models import Answer



def normalize_answer(text: str) -> str:
    """metrics.text.normalize_answer, imported on use: the metrics package imports this module."""
    from .metrics.text import normalize_answer as normalize

    return normalize(text)

NO_ANSWER = ""
_SENTENCE = re.compile(r"^(.*?[.!?])(?=\s|$)", re.DOTALL)

# What real models wrap an answer in (measured on Gemma 3 270M behind llama.cpp, issue 25):
# markdown emphasis and headings, and a label ("Answer:", "### Answer: X", "The answer is X",
# "Answer:" alone on a line with the answer below it).
_EMPHASIS = re.compile(r"\*\*|__|`+|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")
# special tokens a server left in the text (measured: Gemma through llama.cpp writes "<start_of_image>")
_SPECIAL = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?s>|<(?:eos|bos|pad|unk)>|<[a-z]+(?:_[a-z]+)+>")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*", re.MULTILINE)
_LABEL = re.compile(r"^\s*(?:(?:the\s+)?(?:correct\s+|final\s+|short\s+)?answer\s*(?:is\b|:)|"
                    r"(?:final\s+)?(?:response|output)\s*:)\s*:?\s*", re.IGNORECASE)
_LABEL_ONLY = re.compile(r"^\s*(?:(?:correct\s+|final\s+|short\s+)?answer|response|output)\s*:?\s*$",
                         re.IGNORECASE)


def answer_text(text: str) -> str:
    """The answer without its wrapping: emphasis and heading marks removed, lines that are only a
    label skipped, and a leading label cut ("### Answer: Shakespeare" -> "Shakespeare";
    "Answer:\n\nThe capital of France is Paris." -> "The capital of France is Paris.")."""
    lines = _HEADING.sub("", _EMPHASIS.sub("", _SPECIAL.sub(" ", text))).splitlines()
    while lines and (not lines[0].strip() or _LABEL_ONLY.match(lines[0])):
        lines.pop(0)
    if not lines:
        return NO_ANSWER
    lines[0] = _LABEL.sub("", lines[0], count=1)
    return "\n".join(lines).strip()


_SENTENCES = re.compile(r"(?<=[.?!:])\s+")


def drop_echo(text: str, prompt: str) -> str:
    """The answer without its leading lines that repeat a line of the prompt (compared
    normalised; lines of fewer than three words are kept: "Paris" may be in the question and
    be the answer). An answer that only repeats the prompt leaves nothing: no answer."""
    if not prompt.strip():
        return text
    echoed = {normalize_answer(line) for line in prompt.splitlines()}
    echoed |= {normalize_answer(part) for part in _SENTENCES.split(prompt)}

    def is_echo(line: str) -> bool:  # the line, or each of its sentences, is a line or sentence of the prompt
        return len(line.split()) >= 3 and (normalize_answer(line) in echoed or all(
            normalize_answer(part) in echoed for part in _SENTENCES.split(line.strip())))

    lines = text.splitlines()
    while lines and (not lines[0].strip() or is_echo(lines[0])):
        lines.pop(0)
    return "\n".join(lines).strip() if lines else NO_ANSWER


def _first_line(text: str) -> str:
    """The first line of the answer that is not blank nor a bare label ("Answer:")."""
    return next((line.strip() for line in answer_text(text).splitlines() if line.strip()), NO_ANSWER)


def _first_sentence(text: str) -> str:
    """The first sentence of the answer's first line (a pretrained model writes on after it)."""
    line = _first_line(text)
    found = _SENTENCE.match(line)
    return (found.group(1) if found else line).strip()


_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_YES_OR_NO = re.compile(r"\b(?:yes\s*(?:or|/)\s*no|no\s*(?:or|/)\s*yes)\b", re.IGNORECASE)


def _yes_no(text: str, prompt: str = "") -> str:
    """"yes" or "no", read from the answer's first line: its first word when it is one of them,
    else the one of the two it holds as a whole word; a line holding both (a hedge, or "Yes.
    No."), neither, or only the instruction "yes or no" echoed is unreadable. Later lines are
    the model writing on (measured: a pretrained model answers "Yes.\nAnswer: No.\nQuestion: ...")."""
    body = _first_line(text)  # what follows is the model writing on: new questions, other answers
    words = normalize_answer(body).split()
    if words and words[0] in ("yes", "no"):
        first = words[0]
        other = "no" if first == "yes" else "yes"
        return NO_ANSWER if re.search(rf"\b{other}\b", _YES_OR_NO.sub(" ", body), re.IGNORECASE) else first
    said = _YES_OR_NO.sub(" ", body)
    found = {m.lower() for m in _YES_NO.findall(said)}
    if not found and not _YES_OR_NO.search(body):
        return _implied_yes_no(text, question_of(prompt))
    return found.pop() if len(found) == 1 else NO_ANSWER


_QUESTION = re.compile(r"[^.?!\n]*\?")
_POLAR = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|will|would|has|have|had|should|shall|may|must)\b",
                    re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|none|nor|neither)\b|n['’]t\b", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"\b(?:or|and|but|maybe|perhaps|probably|possibly|might|unless|than)\b", re.IGNORECASE)


def question_of(prompt: str) -> str:
    """The question a prompt asks: its last sentence that ends with "?" ("" when it asks none)."""
    found = [q.strip() for q in _QUESTION.findall(prompt) if q.strip()]
    return found[-1] if found else ""


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    """spaCy's English stop words (its word list only: no pipeline is loaded)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def _content_words(text: str) -> set[str]:
    return {w for w in normalize_answer(text).split() if w not in _stop_words()}


def _implied_yes_no(text: str, question: str) -> str:
    """yes or no from an answer that says neither but restates the yes/no question as a plain
    statement (measured: a pretrained model answers "Is gold a metal?" with "Gold is a metal."):
    the answer's first sentence holds every content word of the question (spaCy's stop words
    aside); with no negation it reads yes, with one it reads no. A question that holds a negation
    itself, a statement with an alternative or a hedge ("or", "but", "maybe", "than") or two
    negations, and a question in reply read as no answer."""
    if not _POLAR.match(question) or _NEGATION.search(question):
        return NO_ANSWER
    sentence = _first_sentence(text)
    wanted = _content_words(question)
    if not wanted or not sentence or sentence.rstrip().endswith("?") or _ALTERNATIVE.search(sentence):
        return NO_ANSWER
    said = set(normalize_answer(re.sub(r"n['’]t\b", " not", sentence)).split())
    if not wanted <= said:
        return NO_ANSWER
    negations = len(_NEGATION.findall(sentence))
    return "yes" if negations == 0 else "no" if negations == 1 else NO_ANSWER


_EQUALS = re.compile(r"=([^=]*)$")


_FINAL = re.compile(r"^\s*####\s*(\S.*)$", re.MULTILINE)


def _number(text: str) -> str:
    """The number the answer gives: the one after its first "#### " line (GSM8K's final-answer
    mark, which few-shot prompts teach: the lines before it are working), else after the last "="
    of its first line when it writes an equation ("7+5=12" -> 12, "100 minus 1 = 100 - 1 = 99."
    -> 99: real models show the sum first), else its first number, in digits or words ("five
    dogs" -> 5)."""
    body = answer_text(text)
    final = _FINAL.search(text)  # before answer_text, which reads "####" as a heading mark
    if final and first_number(final.group(1), words=False) is not None:
        body = final.group(1)
    first = next((line for line in body.splitlines() if line.strip()), "")
    result = _EQUALS.search(first)
    if result and first_number(result.group(1), words=False) is not None:
        body = result.group(1)
    try:
        value = first_number(body)
    except (ValueError, IndexError):  # text2num refuses a few odd inputs
        value = first_number(body, words=False)
    return NO_ANSWER if value is None else str(value)


class _LetterPatterns:
    """The forms an option letter is given in, for one set of letters."""

    def __init__(self, letters: str) -> None:
        group = "[" + re.escape(letters) + "]"
        self.whole = re.compile(rf"^\W*({group})\W*$", re.IGNORECASE)  # "B", "(b).", "C."
        # "answer is C", "option (B)", "choice: D": upper case (after "the answer is", "a" is an article)
        self.stated = re.compile(rf"\b(?i:answer|option|choice)\s*(?i:is)?\s*:?\s*\(?({group})\b(?![\'-])")
        # a letter opening a line before punctuation ("C. William Shakespeare", "(B) ...", "b)") or
        # in parentheses anywhere: an option named, or an option list echoed when several are
        self.named = re.compile(rf"^\s*\(?({group})[).:,](?:\s|$)|\(({group})\)", re.IGNORECASE | re.MULTILINE)
        # any capital option letter standing alone ("B, no, C", "B because C is wrong"): not read
        # as a pick, but one that is not the pick makes the answer a hedge; "A" and "I" are words
        self.token = re.compile(rf"\b({group})\b(?![\'-])")


@lru_cache(maxsize=64)
def _letter_patterns(letters: str) -> _LetterPatterns:
    return _LetterPatterns(letters)


def _option_letter(text: str, letters: str, prompt: str = "") -> str:
    """The one option letter the answer picks ("C", "(c)", "C.", "**C**", "Answer: C", "The
    answer is C", "C. William Shakespeare", "I think (B)"); an answer naming two letters, or
    echoing the option list, is unreadable. A leading letter needs punctuation after it: "A
    rectangle" picks none."""
    body = answer_text(text)
    patterns = _letter_patterns(letters)
    found = patterns.whole.match(body) or patterns.whole.match(_first_line(body))  # "D\nExplanation: ..."
    if found:
        return found.group(1).upper()
    picks = {m.upper() for m in patterns.stated.findall(_EMPHASIS.sub("", text))}  # labels kept: "answer is D"
    picks |= {(a or b).upper() for a, b in patterns.named.findall(body)}
    others = set(patterns.token.findall(body)) - picks - {"A", "I"}
    if len(picks) == 1 and not others:
        return picks.pop()
    first = _first_line(body)
    if _OPTION_LINE.match(first) and len(_OPTION_LINE.findall(body)) >= 2:
        return NO_ANSWER  # it opens with an option list ("A. Blue\nB. Green"): an echo, no pick
    if first != body.strip():  # read its first line alone: what follows is the model writing on
        return _option_letter(first, letters, prompt)
    if not picks and not others:  # no letter at all: an answer may name the option's text ("Tokyo")
        return _letter_by_text(text, options_shown(prompt, letters))
    return NO_ANSWER


_OPTION_LINE = re.compile(r"^\s*\(?([A-Z])[.):]\s+(\S.*?)\s*$", re.MULTILINE)


def options_shown(prompt: str, letters: str) -> dict[str, str]:
    """letter -> option text of the option list a prompt shows ("A. Paris" lines, or "(A) ..."):
    the letters must be the first ones of ``letters``, in order, at least two, each once;
    anything else is no option list ({})."""
    found = [(letter, text) for letter, text in _OPTION_LINE.findall(prompt) if letter in letters]
    shown = [letter for letter, _ in found]
    if len(found) < 2 or shown != list(letters[:len(found)]):
        return {}
    return dict(found)


def _letter_by_text(text: str, options: dict[str, str]) -> str:
    """The letter of the option whose text the answer gives instead of a letter: its first
    sentence is the option's text ("Tokyo"), or a plain statement that ends with exactly one
    option's text and names no other ("Hot is the opposite of cold." -> the option "Cold");
    measured on real answers (issue 25). Otherwise, and without options, no answer."""
    sentence = _first_sentence(text)
    said = normalize_answer(sentence)
    texts = {letter: normalize_answer(option) for letter, option in options.items()}
    if not said or len(set(texts.values())) != len(texts):
        return NO_ANSWER
    same = [letter for letter, option in texts.items() if option and said == option]
    if same:
        return same[0]
    if sentence.rstrip().endswith("?") or _HEDGES.search(said.replace("\u2019", "")):
        return NO_ANSWER
    ending = [letter for letter, option in texts.items() if option and said.endswith(" " + option)]
    named = [letter for letter, option in texts.items() if option and f" {option} " in f" {said} "]
    return ending[0] if len(ending) == 1 and named == ending else NO_ANSWER


def _regex(text: str, pattern: str, group: int | None = None, select: str = "first") -> str:
    """The first or the last match of ``pattern`` (lm-eval's strict-match takes the first, its
    flexible-extract the last), stripped: its group ``group``, or by default its first group that
    matched (as lm-eval's regex filter reads a pattern of alternatives), or the whole match when
    the pattern has no groups."""
    matches = list(re.finditer(pattern, text))
    if not matches:
        return NO_ANSWER
    found = matches[0] if select == "first" else matches[-1]
    if group is not None:
        value = found.group(group)
    elif found.re.groups:
        value = next((g for g in found.groups() if g), None)
    else:
        value = found.group(0)
    return (value or "").strip() or NO_ANSWER


CASE_STEPS = {"lowercase": str.lower, "uppercase": str.upper, "trim": str.strip}
"""lm-eval's LowercaseFilter, UppercaseFilter and WhitespaceFilter (remove_whitespace), as they
are (lm_eval/filters/transformation.py, extraction.py 0.4.13). These steps came after scoring
rules 5 and are not in its fingerprint (runtime/score/rules.py EXTRACTION_STEPS): no earlier number
moves; tests/test_lm_eval_task_spec.py pins what they do."""


def _step(text: str, step: str, answer: Answer, prompt: str = "") -> str:
    if step == "answer_text":
        return answer_text(text)
    if step == "normalize":
        return normalize_answer(text)
    if step == "first_line":
        return _first_line(text)
    if step == "first_sentence":
        return _first_sentence(text)
    if step == "yes_no":
        return _yes_no(text, prompt)
    if step == "number":
        return _number(text)
    if step == "option_letter":
        return _option_letter(text, answer.letters, prompt)
    if step == "regex":
        assert answer.pattern is not None  # the spec model requires it with the step
        return _regex(text, answer.pattern, answer.group, answer.select)
    if step in CASE_STEPS:
        return CASE_STEPS[step](text)
    raise ValueError(f"unknown extraction step {step!r}")


def extract(text: str, answer: Answer | None, prompt: str = "") -> str:
    """The answer ``answer.extract`` reads from ``text``, after the leading lines that echo
    ``prompt`` are dropped (``answer.drop_echo``, on by default); ``text`` itself without steps
    (answers scored as they are: a task may ask to repeat or rewrite its prompt's text). The
    white space around it is removed first unless ``answer.strip`` is false (lm-eval compares
    answers as written)."""
    if answer is None or answer.strip:
        text = text.strip()
    if answer is None or not answer.extract:
        return text
    if answer.drop_echo and prompt:
        text = drop_echo(text, prompt)
    for step in answer.extract:
        if text == NO_ANSWER:
            return NO_ANSWER
        text = _step(text, step, answer, prompt)
    return text


def extract_all(texts: Iterable[str], answer: Answer | None, prompt: str = "") -> tuple[str, ...]:
    return tuple(extract(t, answer, prompt) for t in texts)


_PUNCTUATION = str.maketrans("", "", string.punctuation)
_HEDGES = re.compile(r"\b(?:not|no|never|neither|nor|none|or|and|isnt|arent|wasnt|doesnt|dont|cannot|than|"
                     r"except|instead|rather|but|which|who|whom|whose|where|although|though|because)\b")
# ... a relative or subordinate clause too: "The largest ocean is the Mariana Trench, which is in
# the Pacific Ocean." does not state the Pacific (measured, issue 25)
_LIST_MARK = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*\u2022])\s+(?=\w)")
_WH = frozenset({"what", "which", "who", "whom", "whose"})


def _states(answer: str, target: str, question: str = "") -> bool:
    """``short_answer``: the answer's first sentence (a leading list mark "1." aside), normalised,
    is the target, or is a plain statement that ends with it ("The capital of Spain is Madrid.",
    "Bees make honey."); not a question, and holding no negation, alternative, comparison or
    relative clause ("not", "or", "and", "than", "which"...), which could make a statement that
    ends with the target say something else. Knowing the question (rules 5), also the target
    followed by words of the question or a date ("The Nile River." to "... the longest river
    ...", "100 degrees Celsius", "... by Leonardo da Vinci in 1508."), the target as the subject
    of the question's own predicate ("The heart pumps blood through the body ..." to "What organ
    pumps blood through the body?"), and a later sentence of the first line when the ones before
    it do not try to answer (they lack a content word of the question and have over three words:
    "Egypt is a country in the Middle East. It has a capital city, known as Cairo.")."""
    line = _LIST_MARK.sub("", _first_line(answer), count=1)
    wanted = normalize_answer(target)
    asked = normalize_answer(question).split()
    content = _content_words(question) if question else set()
    for sentence in _SENTENCE_PARTS.findall(line)[:3] or [line]:
        said = normalize_answer(_UNITS.sub(_spell_unit, sentence))
        if not said or not wanted:
            return False
        if _sentence_states(sentence, said, wanted, asked):
            return True
        tried = not content or not said.split() or len(said.split()) <= 3 or content <= set(said.split())
        if tried or sentence.rstrip().endswith("?") or _HEDGES.search(said.replace("\u2019", "")):
            return False
    return False


_SENTENCE_PARTS = re.compile(r"\S.*?(?:[.!?](?=\s|$)|$)")
_UNITS = re.compile(r"(\d)\s*°\s*([CF])?\b")
_DATED = re.compile(r"\s(?:in|on|at|around|since|during|circa|about)\s(?:the\s)?(?:year\s)?\d[\d,]*$")


def _spell_unit(found: re.Match[str]) -> str:
    """"0°C" as "0 degrees Celsius": the words a question about temperatures uses."""
    unit = {"C": " celsius", "F": " fahrenheit"}.get(found.group(2) or "", "")
    return f"{found.group(1)} degrees{unit}"


def _sentence_states(sentence: str, said: str, wanted: str, asked: list[str]) -> bool:
    """Whether one sentence (``said``: normalised) is the target or states it (see ``_states``)."""
    if said == wanted:
        return True
    if sentence.rstrip().endswith("?") or _HEDGES.search(said.replace("\u2019", "")):
        return False
    said = _DATED.sub("", said)
    if said == wanted or said.endswith(" " + wanted):
        return True
    return bool(asked) and (_ends_with_target(said, wanted, asked) or _subject_answer(said, wanted, asked))


def _ends_with_target(said: str, wanted: str, asked: list[str]) -> bool:
    """The statement ends with the target once the words of the question after it are dropped."""
    words, spare = said.split(), set(asked) - set(wanted.split())
    while words and words[-1] in spare:
        words.pop()
    rest = " ".join(words)
    return rest == wanted or rest.endswith(" " + wanted)


def _subject_answer(said: str, wanted: str, asked: list[str]) -> bool:
    """The target, then the whole predicate of a "who/what (noun) ..." question, word for word."""
    if asked[0] not in _WH or not said.startswith(wanted + " "):
        return False
    rest = said[len(wanted) + 1:].split()
    return any(len(asked) - cut >= 2 and rest[:len(asked) - cut] == asked[cut:] for cut in (1, 2))


_DIGITS = str.maketrans("", "", string.digits)
LM_EVAL_DEFAULT = LmEvalExact(rule="lm_eval_exact")
"""``correct = "lm_eval_exact"``: ignore_case and ignore_punctuation, no regexes."""


def lm_eval_exact(text: str, rule: LmEvalExact = LM_EVAL_DEFAULT) -> str:
    """What lm-eval 0.4's ``exact_match`` compares (``exact_match_hf_evaluate``, Hugging Face
    evaluate's exact_match): each of ``regexes_to_ignore`` removed in turn, then lower case,
    ``string.punctuation`` and digits removed as ``rule`` asks; nothing stripped."""
    for pattern in rule.regexes_to_ignore:
        text = re.sub(pattern, "", text)
    if rule.ignore_case:
        text = text.lower()
    if rule.ignore_punctuation:
        text = text.translate(_PUNCTUATION)
    if rule.ignore_numbers:
        text = text.translate(_DIGITS)
    return text


def as_rule(how: Any) -> str | LmEvalExact:
    """A ``correct`` rule as a metric holds it, or as spec.json writes it (a table: a dict)."""
    return LmEvalExact.model_validate(how) if isinstance(how, dict) else how


def _has_words(answer: str, target: str) -> bool:
    return f" {target} " in f" {answer} " if target else False


def is_correct(answer: str, targets: Sequence[str], how: str | LmEvalExact | dict[str, Any] = "normalized",
               prompt: str = "") -> bool:
    """Whether ``answer`` is right for any of ``targets`` under the rule ``how`` (see above);
    ``short_answer`` also reads the question of ``prompt`` (the item's prompt)."""
    if not answer.strip():
        return False
    how = as_rule(how)
    if isinstance(how, LmEvalExact):
        said = lm_eval_exact(answer, how)
        return any(t.strip() and said == lm_eval_exact(t, how) for t in targets)
    if how == "substring":
        lowered = answer.lower()
        return any(t.strip() and t.lower() in lowered for t in targets)
    if how == "exact":
        return any(t.strip() and answer.strip().lower() == t.strip().lower() for t in targets)
    if how == "short_answer":
        question = question_of(prompt)
        return any(_states(answer, t, question) for t in targets)
    if how == "lm_eval_exact":
        return any(t.strip() and lm_eval_exact(answer) == lm_eval_exact(t) for t in targets)
    normalized = normalize_answer(answer)
    if how == "word":
        return any(_has_words(normalized, normalize_answer(t)) for t in targets)
    return any(normalized and normalized == normalize_answer(t) for t in targets)


def describe(answer: Answer | None, name: str | None = None) -> str | None:
    """A report's line for the extraction in force (the named rule ``[answers.NAME]``, else
    ``[answer]``), or None without one."""
    table = "[answer]" if name is None else f"[answers.{name}]"
    if name is not None and (answer is None or (not answer.extract and not answer.kind and answer.strip)):
        return f"Answers read by the rule {name!r} ({table}): as written."
    if answer is not None and not answer.extract and (answer.kind or not answer.strip):
        kind = f"as {answer.kind} answers ({table}.kind)" if answer.kind else "as written"
        kept = f", white space kept ({table}.strip = false)" if not answer.strip else ""
        rule = f" by the rule {name!r}" if name is not None else ""
        return f"Answers read{rule} {kind}{kept}."
    if answer is None or not answer.extract:
        return None
    steps = " -> ".join(answer.extract)
    extra: list[str] = []
    if answer.pattern is not None:
        extra.append(f"pattern {answer.pattern!r}")
    if "option_letter" in answer.extract:
        extra.append(f"letters {answer.letters}")
    if answer.kind is not None:
        extra.append(f"answer kind {answer.kind}")
    if not answer.strip:
        extra.append("white space kept")
    if answer.select != "first":
        extra.append(f"the {answer.select} match")
    rule = f"the rule {name!r}, " if name is not None else ""
    return f"Answers read by {rule}{table}.extract: {steps}" + (f" ({', '.join(extra)})" if extra else "") + "."


def correctness_note(how: Any, target: Any) -> str:
    """How a metric decided correctness, named (substring says it is the paper's lenient rule)."""
    how = as_rule(how)
    if isinstance(how, LmEvalExact):
        flags = [name for name in ("ignore_case", "ignore_punctuation", "ignore_numbers") if getattr(how, name)]
        regexes = f", regexes_to_ignore {how.regexes_to_ignore}" if how.regexes_to_ignore else ""
        return f"correctness: lm-eval's exact_match ({', '.join(flags) or 'as written'}{regexes}) with {target!r}"
    rules = {"normalized": "normalized exact match", "exact": "exact match (case-insensitive)",
             "lm_eval_exact": "lm-eval's exact_match (ignore_case, ignore_punctuation)",
             "short_answer": "short answer (the first sentence that tries to answer is the target, or states it "
                             "plainly, read with the question)",
             "word": "whole-word match of the normalized target",
             "substring": "SUBSTRING match (lenient paper rule: 'no' matches 'not')"}
    return f"correctness: {rules.get(how, how)} with {target!r}"
