"""Answers as real models write them (issue 25, rules 4). The forms below are those Gemma 3
270M wrote behind llama.cpp's OpenAI server ("The capital of France is Paris.", "### Answer:
Shakespeare", "Answer:\\n\\n..."), and the common forms of multiple-choice answers; each reader
must read the right ones and read no answer, never a guess, from hedges, two letters and echoes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchc.compiler.metrics import AccuracyParams, WorstCaseParams
from benchc.compiler.spec.models import Answer
from benchc.runtime.score.answers import answer_text, drop_echo, extract, is_correct
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem

LETTER = Answer(extract=["option_letter"], letters="ABCDEF")


@pytest.mark.parametrize("text, letter", [
    ("C", "C"), ("(c)", "C"), ("C.", "C"), ("**C**", "C"), ("Answer: C", "C"), ("The answer is C", "C"),
    ("C. William Shakespeare", "C"), ("(A) Paris", "A"), ("A", "A"), ("### Answer: B", "B"),
    ("Answer:\n\n**D**", "D"), ("B) five", "B"), ("The correct answer is (E).", "E"), ("I think (B) is right", "B"),
    ("Option F", "F"), ("B, because the others are wrong", "B"), ("A dog (B)", "B"),
    # no answer, never a guess
    ("A or B", ""), ("A. Paris\nB. London\nC. Rome", ""), ("The answer is a dog", ""), ("A rectangle", ""),
    ("(A) or (C)", ""), ("The answer is B, no, C", ""), ("", ""), ("G", ""), ("B (because (A) is wrong)", ""),
    ("The answer is (B), not (C)", ""), ("B, because C is wrong", ""),
], ids=repr)
def test_option_letters_in_the_forms_models_write(text: str, letter: str) -> None:
    assert extract(text, LETTER) == letter


@pytest.mark.parametrize("text, word", [
    ("Yes", "yes"), ("No, it is not.", "no"), ("**Yes**", "yes"), ("Answer: no", "no"), ("Well... YES.", "yes"),
    ("There is no dog.", "no"), ("yes or no? Yes", "yes"),
    ("I do not know.", ""), ("Is it red? Answer yes or no.", ""), ("Yes and no", ""), ("Yes. No.", ""),
    ("Answer yes/no", ""),
], ids=repr)
def test_yes_or_no_is_read_only_when_the_answer_gives_one(text: str, word: str) -> None:
    assert extract(text, Answer(extract=["yes_no"])) == word


@pytest.mark.parametrize("text, read", [
    ("### Answer: Shakespeare", "Shakespeare"),
    ("Answer:\n\nThe capital of France is Paris.", "The capital of France is Paris."),
    ("**Paris**", "Paris"), ("The answer is 42.", "42."), ("Final answer: blue", "blue"), ("Paris", "Paris"),
    ("Answer:", ""), ("###", ""),
], ids=repr)
def test_answer_text_without_markdown_and_labels(text: str, read: str) -> None:
    assert answer_text(text) == read


def test_first_line_skips_a_bare_answer_label() -> None:
    # rules 3 kept "Answer:" alone, so every such answer was wrong
    assert extract("Answer:\n\nThe capital of France is Paris.", Answer(extract=["first_line"])) == \
        "The capital of France is Paris."
    assert extract("### Answer: Shakespeare\nHe wrote it.", Answer(extract=["first_line", "normalize"])) == \
        "shakespeare"


def test_an_answer_that_only_repeats_the_prompt_is_no_answer() -> None:
    prompt = "Question: Is the sky blue? Answer yes or no."
    assert extract(prompt, Answer(extract=["yes_no"]), prompt) == ""
    assert extract("Is the sky blue? Answer yes or no.\nYes", Answer(extract=["yes_no"]), prompt) == "yes"
    assert extract(prompt, None, prompt) == prompt  # without steps answers are scored as they are
    assert extract(prompt, Answer(drop_echo=False), prompt) == prompt
    assert drop_echo("Paris", "Is Paris the capital of France?") == "Paris"  # short lines are kept
    assert not is_correct(extract(prompt, None, prompt), ["yes"])


def test_regex_first_or_last_match_and_group() -> None:
    # lm-eval's gsm8k filters: strict-match takes the first "#### N", flexible-extract the last number
    flexible = Answer(extract=["regex"], pattern=r"(-?[$0-9.,]{2,})|(-?[0-9]+)", select="last")
    assert extract("3 + 4 = 7, then 7 * 2 = 14", flexible) == "14"
    assert extract("3 + 4 = 7, then 7 * 2 = 14", flexible.model_copy(update={"select": "first"})) == "3"
    grouped = Answer(extract=["regex"], pattern=r"(\w+) is (\w+)", group=2)
    assert extract("Paris is nice", grouped) == "nice"
    assert extract("Paris is nice", grouped.model_copy(update={"group": 0})) == "Paris is nice"
    with pytest.raises(ValueError, match="group 3: the pattern has 2 group"):
        Answer(extract=["regex"], pattern=r"(\w+) is (\w+)", group=3)


@pytest.mark.parametrize("answer, target, right", [
    ("Paris.", "paris", True), ("PARIS", "Paris", True), (" Paris", "Paris", False), ("Paris", "Paris!", True),
    ("the Paris", "Paris", False), ("5", "five", False),
], ids=repr)
def test_lm_eval_exact_is_lm_evals_exact_match(answer: str, target: str, right: bool) -> None:
    # exact_match(ignore_case=True, ignore_punctuation=True): nothing stripped, no articles dropped
    assert is_correct(answer, [target], "lm_eval_exact") is right


# --- multiple choice scored: an always-X model and CircularEval ------------------------------

FORMS = ("{}", "({})", "{}.", "**{}**", "Answer: {}", "The answer is {}", "{}. the option's text", "### Answer: {}")


def _circular_items(k: int, answers: list[list[str]], right: list[int]) -> list[ScoredItem]:
    """Question q asked k times with its options rotated by s: the right letter moves to
    (right[q] + s) mod k; answers[q][s] is the model's raw answer, read by option_letter."""
    letters = "ABCDEF"[:k]
    items = []
    for q, correct in enumerate(right):
        for shift in range(k):
            expected = letters[(correct + shift) % k]
            prompt = f"Question {q}?\n" + "\n".join(f"{x}. option {x}" for x in letters)
            read = extract(answers[q][shift], LETTER, prompt)
            items.append(ScoredItem(f"q{q}#{shift}", f"q{q}", {"shift": shift}, {"answer": [expected]}, (read,),
                                    prompt=prompt))
    return items


@settings(max_examples=60, deadline=None)
@given(k=st.integers(2, 6), data=st.data())
def test_an_always_x_model_scores_exactly_one_in_k(k: int, data: st.DataObject) -> None:
    questions = data.draw(st.integers(1, 5))
    letter = data.draw(st.sampled_from("ABCDEF"[:k]))
    right = data.draw(st.lists(st.integers(0, k - 1), min_size=questions, max_size=questions))
    form = data.draw(st.sampled_from(FORMS))
    items = _circular_items(k, [[form.format(letter)] * k for _ in right], right)
    params = AccuracyParams(target="answer", bootstrap=0)
    [row] = METRICS.get("general.accuracy").score(params, MetricInput(items, None, "m")).rows
    assert row["accuracy"] * k == pytest.approx(100.0)  # every rotation puts the right letter under X once
    [worst] = METRICS.get("general.worst_case").score(WorstCaseParams(target="answer", bootstrap=0),
                                                       MetricInput(items, None, "m")).rows
    assert worst["worst_case"] == 0.0


@settings(max_examples=60, deadline=None)
@given(k=st.integers(2, 6), data=st.data())
def test_circular_eval_counts_equal_a_hand_count(k: int, data: st.DataObject) -> None:
    letters = "ABCDEF"[:k]
    questions = data.draw(st.integers(1, 6))
    right = data.draw(st.lists(st.integers(0, k - 1), min_size=questions, max_size=questions))
    picks = data.draw(st.lists(st.lists(st.integers(0, k - 1), min_size=k, max_size=k),
                               min_size=questions, max_size=questions))
    forms = data.draw(st.lists(st.sampled_from(FORMS), min_size=k, max_size=k))
    answers = [[forms[s].format(letters[p]) for s, p in enumerate(row)] for row in picks]
    items = _circular_items(k, answers, right)
    hand_right = [[picks[q][s] == (right[q] + s) % k for s in range(k)] for q in range(questions)]
    [worst] = METRICS.get("general.worst_case").score(WorstCaseParams(target="answer", bootstrap=0),
                                                       MetricInput(items, None, "m")).rows
    assert worst["groups"] == questions and worst["answers"] == questions * k
    assert worst["worst_case"] == pytest.approx(100.0 * sum(all(r) for r in hand_right) / questions)
    assert worst["accuracy"] == pytest.approx(100.0 * sum(map(sum, hand_right)) / (questions * k))
