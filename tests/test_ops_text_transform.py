# ruff: noqa: E501 - the golden outputs are kept whole, one per line
"""General text transforms (compiler/ops/text_transform.py): case, punctuation, typos, template
paraphrases, negation and multiple-choice option permutation (CircularEval).

The golden outputs pin each op on one input and seed; to change one, bump the op's version and
re-pin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import OpError
from benchc.compiler.ops import OPS, OpContext, OpOutput
from benchc.compiler.seeds import rng_for
from benchc.compiler.values import Record, Value

TEXT = "Is THE dog's ball on the red sofa? yes. i think so!  Look: (it's) e-mail, «quoted» & $5."
SENTENCE = "The quick brown fox jumps over the lazy dog near the riverbank."
NEW_OPS = ("text.case", "text.strip_punctuation", "text.typos", "text.paraphrase_template",
           "text.negation", "text.permute_options")


def run(tmp_path: Path, name: str, text: str, params: dict[str, Any], fields: dict[str, Any] | None = None,
        seed: int = 0) -> OpOutput:
    op = OPS.get(name)
    ctx = OpContext(Record("r1", fields or {}), rng_for(seed), ContentStore(tmp_path / "store"))
    return op.apply(Value("text", text=text), op.Params.model_validate(params), ctx)


def out_text(tmp_path: Path, name: str, text: str, params: dict[str, Any], **kwargs: Any) -> str:
    return run(tmp_path, name, text, params, **kwargs).value.text or ""


def test_ops_are_registered_at_version_1() -> None:
    for name in NEW_OPS:
        op = OPS.get(name)
        assert op.version == "1.0.0" and op.input_kind == op.output_kind == "text", name
        assert op.describe(), name
        for field in op.Params.model_fields.values():
            assert field.description, f"{name}: a param without a description"


# --- text.case -----------------------------------------------------------------------------

CASES = {
    "lower": "is the dog's ball on the red sofa? yes. i think so!  look: (it's) e-mail, «quoted» & $5.",
    "upper": "IS THE DOG'S BALL ON THE RED SOFA? YES. I THINK SO!  LOOK: (IT'S) E-MAIL, «QUOTED» & $5.",
    "title": "Is The Dog's Ball On The Red Sofa? Yes. I Think So!  Look: (It's) E-mail, «Quoted» & $5.",
    "sentence": "Is the dog's ball on the red sofa? Yes. I think so!  Look: (it's) e-mail, «quoted» & $5.",
    "swap": "iS the DOG'S BALL ON THE RED SOFA? YES. I THINK SO!  lOOK: (IT'S) E-MAIL, «QUOTED» & $5.",
}


@pytest.mark.parametrize("mode", CASES)
def test_case_golden(tmp_path: Path, mode: str) -> None:
    assert out_text(tmp_path, "text.case", TEXT, {"mode": mode}) == CASES[mode]


def test_sentence_case_starts_sentences_only_after_an_end_and_space(tmp_path: Path) -> None:
    text = "3 DOGS. it costs 3.5 dollars!what? ok"
    assert out_text(tmp_path, "text.case", text, {"mode": "sentence"}) == "3 Dogs. It costs 3.5 dollars!what? Ok"


# --- text.strip_punctuation ----------------------------------------------------------------


def test_strip_punctuation_golden(tmp_path: Path) -> None:
    assert out_text(tmp_path, "text.strip_punctuation", TEXT, {}) == \
        "Is THE dogs ball on the red sofa yes i think so Look its email quoted $5"
    assert out_text(tmp_path, "text.strip_punctuation", TEXT, {"keep": "'-"}) == \
        "Is THE dog's ball on the red sofa yes i think so Look it's e-mail quoted $5"
    assert out_text(tmp_path, "text.strip_punctuation", "a , b\n(c)", {"collapse_whitespace": False}) == \
        "a  b\nc"


# --- text.typos ----------------------------------------------------------------------------

TYPOS = {  # text.typos 1.0.0 on SENTENCE, rate 0.5, seed 7
    "swap": "The quick brown fox jumps ovre teh lazy odg naer teh rvierbank.",
    "delete": "The quick brown fox jumps ove th lazy og nar th rverbank.",
    "insert": "The quick brown fox jumps overx mthe lazy dogd neadr tvhe rivierbank.",
    "substitute": "The quick brown fox jumps ovex mhe lazy dod neac tve riierbank.",
    "keyboard": "The quick brown fox jumps ovef yhe lazy dof neae tbe riberbank.",
}


@pytest.mark.parametrize("kind", TYPOS)
def test_typos_golden(tmp_path: Path, kind: str) -> None:
    assert out_text(tmp_path, "text.typos", SENTENCE, {"rate": 0.5, "kind": kind}, seed=7) == TYPOS[kind]


@pytest.mark.parametrize("kind", TYPOS)
def test_typos_depend_only_on_the_seed(tmp_path: Path, kind: str) -> None:
    params = {"rate": 0.3, "kind": kind}
    first = out_text(tmp_path, "text.typos", SENTENCE, params, seed=1)
    assert first == out_text(tmp_path, "text.typos", SENTENCE, params, seed=1)
    assert first != out_text(tmp_path, "text.typos", SENTENCE, params, seed=2)
    assert first != SENTENCE


def test_typos_change_the_asked_share_of_long_words_only(tmp_path: Path) -> None:
    words = SENTENCE.split()  # 12 words of 3+ letters, one typo per word
    for rate, changed in ((0.1, 1), (0.5, 6), (1.0, 12)):
        out = out_text(tmp_path, "text.typos", SENTENCE, {"rate": rate, "kind": "substitute"}, seed=3).split()
        assert sum(a != b for a, b in zip(words, out)) == changed
    short = "a to be is ox"
    assert out_text(tmp_path, "text.typos", short, {"rate": 1.0, "kind": "delete"}) == short
    assert out_text(tmp_path, "text.typos", short, {"rate": 1.0, "kind": "delete", "min_length": 2}) != short


def test_keyboard_typos_use_neighbouring_keys(tmp_path: Path) -> None:
    out = out_text(tmp_path, "text.typos", "sss", {"rate": 1.0, "kind": "keyboard"}, seed=5)
    assert len(out) == 3 and sum(c != "s" for c in out) == 1
    assert set(out) - {"s"} <= set("adwezx")


# --- text.paraphrase_template --------------------------------------------------------------

TEMPLATES = ["Is there {{ text }}?", "Can you see {{ text }} in the {{ record.place }}?", "{{ text | upper }}"]


@pytest.mark.parametrize("index,expected", [(0, "Is there a red ball?"),
                                            (1, "Can you see a red ball in the kitchen?"),
                                            (2, "A RED BALL")])
def test_paraphrase_template_golden(tmp_path: Path, index: int, expected: str) -> None:
    out = run(tmp_path, "text.paraphrase_template", "a red ball", {"templates": TEMPLATES, "index": index},
              fields={"place": "kitchen"})
    assert out.value.text == expected and out.attrs == {}


def test_paraphrase_template_names_a_missing_record_field(tmp_path: Path) -> None:
    with pytest.raises(OpError, match="undefined") as caught:
        run(tmp_path, "text.paraphrase_template", "x", {"templates": TEMPLATES, "index": 1})
    assert caught.value.problems[0].key == "params.templates"


# --- text.negation -------------------------------------------------------------------------


def test_negation_by_rule(tmp_path: Path) -> None:
    out = run(tmp_path, "text.negation", "Is there a dog in the image?", {})
    assert out.value.text == "Is there not a dog in the image?" and "not" in out.value.text.split()
    assert out.attrs == {"negated": True}


def test_negation_from_a_record_field(tmp_path: Path) -> None:
    fields = {"question_neg": "Is the key not on the keyboard?", "meta": {"neg": ""}}
    out = run(tmp_path, "text.negation", "Is the key on the keyboard?", {"field": "question_neg"}, fields=fields)
    assert out.value.text == "Is the key not on the keyboard?" and out.attrs == {"negated": True}
    with pytest.raises(OpError, match="no field 'question_ng'") as missing:
        run(tmp_path, "text.negation", "Q?", {"field": "question_ng"}, fields=fields)
    assert missing.value.problems[0].key == "params.field" and "question_neg" in missing.value.problems[0].hint
    with pytest.raises(OpError, match="cannot negate"):
        run(tmp_path, "text.negation", "Q?", {"field": "meta.neg"}, fields=fields)
    dropped = run(tmp_path, "text.negation", "Q?", {"field": "meta.neg", "on_fail": "drop"}, fields=fields)
    assert dropped.drop and dropped.value.text == "Q?"


def test_negation_the_rule_cannot_make_fails_or_drops(tmp_path: Path) -> None:
    with pytest.raises(OpError, match="cannot negate"):
        run(tmp_path, "text.negation", "What is on the table?", {})
    dropped = run(tmp_path, "text.negation", "What is on the table?", {"on_fail": "drop"})
    assert dropped.drop == "no subject to negate"


def test_negation_from_a_field_does_not_depend_on_spacy() -> None:
    op = OPS.get("text.negation")
    assert "spacy" in op.environment(op.Params())
    assert op.environment(op.Params(field="question_neg")) == {}


# --- text.permute_options ------------------------------------------------------------------

ITEM = {"options": ["a cat", "a dog", "a bird", "a fish"], "answer": "B"}
QUESTION = "What animal is on the sofa?"


def test_permute_options_golden(tmp_path: Path) -> None:
    out = run(tmp_path, "text.permute_options", QUESTION, {"shift": 1}, fields=ITEM)
    assert out.value.text == "What animal is on the sofa?\nA. a fish\nB. a cat\nC. a dog\nD. a bird"
    assert out.attrs == {"expected": "C", "order": "DABC"}


@pytest.mark.parametrize("shift,expected", [(0, "B"), (1, "C"), (2, "D"), (3, "A")])
@pytest.mark.parametrize("answer", ["B", 1, "a dog"])
def test_circular_shifts_move_the_answer(tmp_path: Path, shift: int, expected: str, answer: Any) -> None:
    out = run(tmp_path, "text.permute_options", QUESTION, {"shift": shift}, fields={**ITEM, "answer": answer})
    assert out.attrs["expected"] == expected
    lines = dict(line.split(". ", 1) for line in (out.value.text or "").splitlines()[1:])
    assert lines[expected] == "a dog" and sorted(lines) == ["A", "B", "C", "D"]


def test_explicit_permutation_letters_and_layout(tmp_path: Path) -> None:
    params = {"permutation": [2, 3, 0, 1], "letters": "WXYZ", "layout":
              "Options:{% for o in options %} ({{ o.letter }}) {{ o.text }}{% endfor %}"}
    for answer in (1, "X", "a dog"):  # a letter is read in `letters`
        out = run(tmp_path, "text.permute_options", QUESTION, params, fields={**ITEM, "answer": answer})
        assert out.value.text == "What animal is on the sofa?\nOptions: (W) a bird (X) a fish (Y) a cat (Z) a dog"
        assert out.attrs == {"expected": "Z", "order": "YZWX"}


def test_permute_options_refuses_bad_items(tmp_path: Path) -> None:
    with pytest.raises(OpError, match="shift 4") as large:
        run(tmp_path, "text.permute_options", QUESTION, {"shift": 4}, fields=ITEM)
    assert large.value.problems[0].key == "params.shift"
    assert run(tmp_path, "text.permute_options", QUESTION, {"shift": 4, "on_large_shift": "drop"},
               fields=ITEM).drop
    for fields, hint in (({"choices": ITEM["options"], "answer": "B"}, "its fields: answer, choices"),
                         ({"options": "a cat", "answer": "B"}, "JSON list")):  # a text cell that is no list
        with pytest.raises(OpError) as bad:
            run(tmp_path, "text.permute_options", QUESTION, {}, fields=fields)
        assert bad.value.problems[0].key == "params.options" and hint in bad.value.problems[0].hint
    with pytest.raises(OpError) as wrong:
        run(tmp_path, "text.permute_options", QUESTION, {}, fields={**ITEM, "answer": "a horse"})
    assert wrong.value.problems[0].key == "params.answer"
    with pytest.raises(OpError) as length:
        run(tmp_path, "text.permute_options", QUESTION, {"permutation": [1, 0]}, fields=ITEM)
    assert length.value.problems[0].key == "params.permutation"


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize("name,params", [
    ("text.case", {"mode": "camel"}),
    ("text.case", {"mode": "lower", "locale": "en"}),
    ("text.strip_punctuation", {"collapse": True}),
    ("text.typos", {"rate": 0.0}),
    ("text.typos", {"rate": 1.5}),
    ("text.typos", {"rate": 0.2, "kind": "transpose"}),
    ("text.typos", {"rate": 0.2, "min_length": 0}),
    ("text.typos", {"rate": 0.2, "seed": 3}),
    ("text.paraphrase_template", {"templates": []}),
    ("text.paraphrase_template", {"templates": ["{{ text }}"], "index": 1}),
    ("text.paraphrase_template", {"templates": ["{{ text }}"], "index": -1}),
    ("text.paraphrase_template", {"templates": ["{{ question }}"]}),
    ("text.paraphrase_template", {"templates": ["{{ text "]}),
    ("text.negation", {"on_fail": "skip"}),
    ("text.negation", {"field": ""}),
    ("text.permute_options", {"shift": -1}),
    ("text.permute_options", {"shift": 1, "permutation": [1, 0]}),
    ("text.permute_options", {"permutation": [0, 0, 1]}),
    ("text.permute_options", {"letters": "AAB"}),
    ("text.permute_options", {"layout": "{{ question }}"}),
    ("text.permute_options", {"rotate": 1}),
])
def test_invalid_params_are_refused(name: str, params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        OPS.get(name).Params.model_validate(params)
