"""Model steps at compile time, on the compiler's side, with a fake model client: the papers'
prompts, answer parsing and refusals, node keys and the lock pinning the backend's fingerprint,
the node cache and the memo, and one clear error per bad input. (The runtime's client with real
tiny models is tests/test_model_steps_e2e.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.compile import CompileOptions, CompileResult, compile_spec
from benchc.compiler.errors import BackendError, BenchcError, OpError, SpecError
from benchc.compiler.model_steps import (
    ModelBackendRef,
    ModelPrompt,
    answer_items,
    first_answer_line,
    is_refusal,
    yes_no,
)
from benchc.compiler.ops import OPS, OpContext
from benchc.compiler.values import Record, Value

from benchc import api
from specfiles import FROM_TABLE, write_rows_spec

# --- a fake client -------------------------------------------------------------------------------


class FakeClient:
    """Answers with ``answer(prompt)``; its fingerprint names ``weights`` and the settings."""

    def __init__(self, answer: Callable[[ModelPrompt], str], weights: str = "w1") -> None:
        self.answer = answer
        self.weights = weights
        self.asked: list[tuple[ModelBackendRef, ModelPrompt]] = []
        self.calls = 0

    def fingerprint(self, ref: ModelBackendRef) -> dict[str, Any]:
        return {"fake": self.weights, **ref.generation.as_json()}

    def generate(self, ref: ModelBackendRef, prompts: Sequence[ModelPrompt]) -> list[str]:
        self.calls += 1
        self.asked += [(ref, p) for p in prompts]
        return [self.answer(p) for p in prompts]


def echo(prompt: ModelPrompt) -> str:
    """Plays an obliging LLM: answers each of benchc's prompts in the form it asks for."""
    text = prompt.text
    if text.startswith("Translate"):
        return f"Translation: \"{text.rsplit(chr(10), 1)[-1].upper()}\""
    if text.startswith("I have a question"):
        return ("Here are three rephrased questions:\n1. Which colour is the shape?\n"
                "2. Formal: What colour does the shape have?\n3. The shape is which colour?")
    if text.startswith("Correct the mistakes"):
        return "Does the skateboard have wheels?\nIt is a yes/no question."
    return "A paraphrase."


ROWS = [{"id": "q1", "question": "what color is the shape?", "answer": "blue", "text": "The cat sat.",
         "subject": "skateboard", "predicate": "HAS", "object": "wheels"},
        {"id": "q2", "question": "what shape is it?", "answer": ["circle", "round"], "text": "A dog ran.",
         "subject": "man", "predicate": "ON", "object": "horse"}]

TRANSLATE = FROM_TABLE + """
[[node]]
id = "german"
op = "text.translate"
input = "source"
params.backend = "fake:llm"
params.target_language = "German"
params.attrs = { corruption = "translated" }
"""


def write_spec(folder: Path, nodes: str, rows: list[dict[str, Any]] = ROWS) -> Path:
    return write_rows_spec(folder, "model-steps", [{**r, "texts": [r["text"]]} for r in rows], nodes)


def compile_with(spec: Path, out: Path, client: Any, cache: Path, **options: Any) -> CompileResult:
    return compile_spec(spec, out, CompileOptions(cache_dir=cache, model_client=client, **options))


def items(result: CompileResult) -> pl.DataFrame:
    return pl.read_parquet(result.manifest_dir / "items.parquet").sort("item_id")


def model_keys(frame: pl.DataFrame, node: str) -> list[str]:
    return [step["key"] for lineage in frame["lineage"] for step in json.loads(lineage) if step["node"] == node]


# --- the papers' prompts -------------------------------------------------------------------------


def context(fields: dict[str, Any], media: dict | None = None, tmp_path: Path | None = None) -> OpContext:
    store = ContentStore(tmp_path) if tmp_path else None
    return OpContext(Record("r", fields, media or {}), np.random.default_rng(0), store)  # type: ignore[arg-type]


def test_mmr3_rephrasing_asks_with_the_papers_prompt() -> None:
    op = OPS.get("text.rephrase_llm")
    params = op.Params(backend="fake:llm", answer_field="answers")
    [prompt] = op.prompts(None, params, context({"question": "What brand is the jacket?",
                                                 "answers": ["north face", "columbia"]}))
    assert prompt.text == ("I have a question: What brand is the jacket? Please give me three different "
                           "types of rephrased questions to which the answer would be north face.")
    assert prompt.seed is None and prompt.media == ()  # greedy: the three variants are one request


def test_merlim_question_building_asks_with_the_papers_prompt() -> None:
    op = OPS.get("text.yes_no_question")
    fields = {"relationship": {"subject": {"name": "skateboard"}, "predicate": "HAS", "object": {"name": "wheels"}}}
    [prompt] = op.prompts(None, op.Params(backend="fake:llm"), context(fields))
    assert prompt.text == ("Correct the mistakes in the following question: skateboard has wheels? Please, "
                           "just write the correct question in present tense and consider it is a yes or no "
                           "question.")


def test_translation_and_paraphrase_prompts_are_pinned() -> None:
    value = Value("text", text="The band stands next to a wall.")
    translate, paraphrase = OPS.get("text.translate"), OPS.get("text.paraphrase")
    [german] = translate.prompts(value, translate.Params(backend="x", target_language="German"), context({}))
    assert german.text == ("Translate the following English text into German. Reply with the translation only."
                           "\n\nThe band stands next to a wall.")
    [plain] = paraphrase.prompts(value, paraphrase.Params(backend="x"), context({}))
    [styled] = paraphrase.prompts(value, paraphrase.Params(backend="x", style="Shakespeare"), context({}))
    assert plain.text.startswith("Paraphrase the following text.")
    assert styled.text.startswith("Rewrite the following text in the style of Shakespeare.")
    assert all(not OPS.get(n).reads_record for n in ("text.translate", "text.paraphrase"))


# --- parsing answers -----------------------------------------------------------------------------


@pytest.mark.parametrize("answer,expected", [
    ("  Der Hund lief.  ", "Der Hund lief."),
    ("Here is the translation:\n\n\"Der Hund lief.\"", "Der Hund lief."),
    ("Translation: Der Hund lief.\nNote: literal.", "Der Hund lief."),
    ("\u201cThe dog ran.\u201d", "The dog ran."),
    ("Warning: the dog ran past a sign that says keep out", "the dog ran past a sign that says keep out"),
    ("", ""),
    ("\n  \n", ""),
])
def test_first_answer_line(answer: str, expected: str) -> None:
    assert first_answer_line(answer) == expected


@pytest.mark.parametrize("answer,expected", [
    ("1. What is it?\n2. Which one is it?\n3) Name it?", ["What is it?", "Which one is it?", "Name it?"]),
    ("Sure! Here are three:\n- Formal: What is it?\n* Casual: Which is it?\n\u2022 \"Name it?\"",
     ["What is it?", "Which is it?", "Name it?"]),
    ("What is it? Which one is it? Name it?", ["What is it?", "Which one is it?", "Name it?"]),
    ("a) What is it?\nb) Which?", ["What is it?", "Which?"]),
    ("Just one line of text", ["Just one line of text"]),
    ("", []),
])
def test_answer_items(answer: str, expected: list[str]) -> None:
    assert answer_items(answer) == expected


@pytest.mark.parametrize("answer,expected", [
    ("No.", "no"), ("yes, it is", "yes"), ("  \"No\" - the object is gone", "no"), ("YES", "yes"),
    ("Not sure", None), ("nothing is there", None), ("I cannot tell.", None), ("", None),
])
def test_yes_no(answer: str, expected: str | None) -> None:
    assert yes_no(answer) == expected


@pytest.mark.parametrize("answer,refused", [
    ("I'm sorry, but I can't help with that.", True), ("I cannot rephrase this.", True),
    ("As an AI language model, I ...", True), ("Sorry", True), ("I am unable to do that", True),
    ("I can see a dog.", False), ("Is the man sorry?", False),
])
def test_is_refusal(answer: str, refused: bool) -> None:
    assert is_refusal(answer) is refused


# --- compiling with a client ---------------------------------------------------------------------


def test_a_model_node_is_answered_once_per_compile_and_pinned_in_the_lock(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s", TRANSLATE)
    client = FakeClient(echo)
    result = compile_with(spec, tmp_path / "m", client, tmp_path / "c")
    frame = items(result)
    assert frame["text"].to_list() == ["THE CAT SAT.", "A DOG RAN."]
    assert [json.loads(a)["corruption"] for a in frame["attrs"]] == ["translated", "translated"]
    assert client.calls == 1 and len(client.asked) == 2 and result.model_prompts == 2
    [pin] = result.lock["model_steps"]["german"]
    assert pin == {"backend": "fake:llm", "generation": {"max_new_tokens": 128, "temperature": 0.0, "top_p": 1.0},
                   "fingerprint": {"fake": "w1", "max_new_tokens": 128, "temperature": 0.0, "top_p": 1.0}}
    assert result.lock["lock_version"] == 3

    again = compile_with(spec, tmp_path / "m2", client, tmp_path / "c", use_memo=False)
    assert client.calls == 1 and again.model_prompts == 0  # the node cache answers
    assert again.lock["manifest_digest"] == result.lock["manifest_digest"]


def test_other_weights_get_other_node_keys_and_miss_the_memo(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s", TRANSLATE)
    first = compile_with(spec, tmp_path / "m", FakeClient(echo, "w1"), tmp_path / "c")
    other = FakeClient(lambda p: "Anders.", "w2")
    second = compile_with(spec, tmp_path / "m2", other, tmp_path / "c")
    assert not second.memo_hit and other.calls == 1
    assert set(model_keys(items(first), "german")).isdisjoint(model_keys(items(second), "german"))
    assert items(second)["text"].to_list() == ["Anders.", "Anders."]
    assert second.lock["model_steps"]["german"][0]["fingerprint"]["fake"] == "w2"
    # the same weights again: the memo answers, nothing is asked
    same = FakeClient(echo, "w1")
    assert compile_with(spec, tmp_path / "m3", same, tmp_path / "c").memo_hit and same.calls == 0


def test_rephrasing_takes_each_index_from_one_list(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s", """
[[node]]
id = "rephrased"
op = "text.rephrase_llm"
input = "record"
params.backend = "fake:llm"
params.index = { grid = [0, 1, 2] }
""")
    client = FakeClient(echo)
    frame = items(compile_with(spec, tmp_path / "m", client, tmp_path / "c"))
    assert frame.filter(pl.col("record_id") == "q1")["text"].to_list() == [
        "Which colour is the shape?", "What colour does the shape have?", "The shape is which colour?"]
    by_record = {}
    for _, prompt in client.asked:
        by_record.setdefault(prompt.text, 0)
        by_record[prompt.text] += 1
    assert sorted(by_record.values()) == [3, 3]  # three identical requests per question (one store entry)
    assert any("the answer would be circle." in text for text in by_record)  # a list answer: the first


def test_yes_no_questions_are_built_and_wrong_forms_dropped(tmp_path: Path) -> None:
    nodes = """
[[node]]
id = "asked"
op = "text.yes_no_question"
input = "record"
params.backend = "fake:llm"
params.subject_field = "subject"
params.predicate_field = "predicate"
params.object_field = "object"
"""
    answers = {"skateboard has wheels": "does the skateboard have wheels? yes", "man on horse": "The man rides."}
    client = FakeClient(lambda p: next(a for k, a in answers.items() if k in p.text))
    result = compile_with(write_spec(tmp_path / "s", nodes), tmp_path / "m", client, tmp_path / "c")
    frame = items(result)
    assert frame["text"].to_list() == ["Does the skateboard have wheels?"]
    assert json.loads(frame["attrs"][0])["relation"] == "skateboard has wheels"
    assert result.lock["dropped"] == {"asked": {"not a yes/no question": 1}}


def test_refusals_drop_or_fail_as_the_node_says(tmp_path: Path) -> None:
    def refuse(prompt: ModelPrompt) -> str:
        return "I'm sorry, I can't help with that." if "DOG" in prompt.text.upper() else "Die Katze."

    dropping = compile_with(write_spec(tmp_path / "a", TRANSLATE), tmp_path / "m", FakeClient(refuse), tmp_path / "c")
    assert items(dropping)["text"].to_list() == ["Die Katze."]
    assert dropping.lock["dropped"] == {"german": {"model refused": 1}}
    failing = write_spec(tmp_path / "b", TRANSLATE + 'params.on_bad_answer = "fail"\n')
    with pytest.raises(OpError) as caught:
        compile_with(failing, tmp_path / "m2", FakeClient(refuse), tmp_path / "c")
    text = caught.value.render()
    assert "node[1].params.on_bad_answer" in text and "item 'q2'" in text and "model refused" in text
    assert "I'm sorry" in text


def test_sampled_steps_give_each_variant_its_own_seed(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s", TRANSLATE.replace('params.target_language = "German"',
                                                        'params.target_language = "German"\nparams.temperature = 0.7')
                      .replace('id = "german"', 'id = "german"\nrepeat = 2'))
    client = FakeClient(lambda p: f"seed {p.seed}")
    frame = items(compile_with(spec, tmp_path / "m", client, tmp_path / "c"))
    seeds = [p.seed for _, p in client.asked]
    assert None not in seeds and len(set(seeds)) == 4 and frame["text"].n_unique() == 4


def test_a_spec_with_model_steps_needs_a_client(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s", TRANSLATE)
    with pytest.raises(SpecError) as caught:
        compile_spec(spec, tmp_path / "m", CompileOptions(cache_dir=tmp_path / "c"))
    [problem] = caught.value.problems
    assert problem.key == "node[1].params.backend" and problem.file == str(spec) and problem.line == 20
    assert "no model client" in problem.message and "benchc compile" in (problem.hint or "")
    assert not (tmp_path / "c").exists()  # refused before the source was read


def test_a_backend_error_names_the_node_and_its_line(tmp_path: Path) -> None:
    class Broken(FakeClient):
        def fingerprint(self, ref: ModelBackendRef) -> dict[str, Any]:
            raise BackendError("hf: no model folder with config.json at 'models/llm'")

    spec = write_spec(tmp_path / "s", TRANSLATE)
    with pytest.raises(BackendError) as caught:
        compile_with(spec, tmp_path / "m", Broken(echo), tmp_path / "c")
    rendered = caught.value.render()
    assert rendered.startswith(f"{spec}:20 node[1].params.backend: node 'german': hf: no model folder")


def test_bad_templates_and_backends_are_spec_errors(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "s", TRANSLATE + 'params.template = "Translate {{ txt }}"\n')
    with pytest.raises(SpecError, match=r"node\[1\]\.params\.template: .*unknown template variable\(s\) \['txt'\]"):
        api.validate(spec)
    unknown = write_spec(tmp_path / "u", TRANSLATE.replace("fake:llm", "hff:models/llm"))
    with pytest.raises(SpecError) as caught:
        api.validate(unknown)
    [problem] = caught.value.problems
    assert problem.key == "node[1].params.backend" and "did you mean 'hf'" in (problem.hint or "")
    tts = write_spec(tmp_path / "t", TRANSLATE.replace("fake:llm", "espeak"))
    with pytest.raises(SpecError, match="backend 'espeak' cannot generate text"):
        api.validate(tts)


def test_model_ops_are_run_by_the_compiler_never_applied() -> None:
    op = OPS.get("text.translate")
    with pytest.raises(BenchcError, match="runs it as a model step"):
        op.apply(Value("text", text="x"), op.Params(backend="x", target_language="German"), context({}))


# --- the VLM check -------------------------------------------------------------------------------

VLM_SPEC = """\
[benchmark]
name = "test/vlm-check"
version = "1.0.0"

[source]
loader = "scenes"
images = 3
seed = 0
size = 64

[sample]
per = "image_id"

[[node]]
id = "gray"
op = "image.grayscale"
input = "image"

[[node]]
id = "checked"
op = "validate.vlm_check"
input = "gray"
params.backend = "fake:vlm"
params.original = "image"
params.question = "Q: is the {{ name }} in both the original image and the perturbed image?"

[prompt]
template = "What is in the image?"
"""


def test_vlm_check_sends_both_images_and_keeps_only_expected_answers(tmp_path: Path) -> None:
    spec = tmp_path / "vlm.toml"
    spec.write_text(VLM_SPEC)
    verdicts = iter(["No, it is not.", "Yes", "maybe"])
    client = FakeClient(lambda p: next(verdicts))
    result = compile_with(spec, tmp_path / "m", client, tmp_path / "c")
    assert result.lock["dropped"] == {"checked": {"VLM check failed": 1, "unclear VLM answer": 1}}
    frame = items(result)
    assert frame.height == 1 and json.loads(frame["attrs"][0])["vlm_answer"] == "no"
    records = {}
    for _, prompt in client.asked:
        original, edited = prompt.media
        assert original.kind == edited.kind == "image" and original.sha256 != edited.sha256
        assert prompt.text.startswith("Q: is the ") and prompt.text.endswith(" in both the original image and "
                                                                             "the perturbed image?")
        records[prompt.text] = edited
    kept_media = json.loads(frame["media"][0])[0]["sha256"]
    assert kept_media in {m.sha256 for m in records.values()}  # the item is the checked image
