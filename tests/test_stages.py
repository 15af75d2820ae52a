"""Multi-stage items: a later stage's prompt is a template over an earlier answer (MERLIM's
counting follow-up), with the item's media or none; and the text-only (LLM-only) ablation."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from benchc.compiler.numbers import first_number, whole_integer
from benchc.compiler.spec.models import Spec
from benchc.runtime.run.core import build_requests
from benchc.runtime.run.store import StoredResponse
from conftest import SPECS, cli
from support.tiny_vlm import build_tiny_llava

COUNTING = SPECS / "merlim" / "counting_scenes.toml"
FOLLOW_UP = """{%- set n = answer | number -%}
{%- if n == 1 -%}Is there 1 {{ attrs.label }}?{%- else -%}Are there {{ n }} {{ attrs.plural }}?{%- endif -%}"""


def _spec(**follow_up: str) -> Spec:
    return Spec.model_validate({
        "benchmark": {"name": "t/stages", "version": "1.0.0"}, "source": {"loader": "scenes"},
        "prompt": {"template": "{{ text }}"},
        "stage": [{"id": "count"}, {"id": "follow_up", "input": "count", **follow_up}]})


def _items() -> pl.DataFrame:
    media = json.dumps([{"name": "image", "kind": "image", "sha256": "a" * 64}])
    return pl.DataFrame({"item_id": ["i1", "i2", "i3"], "prompt": ["How many cats are there?"] * 3,
                         "system": [None] * 3, "media": [media] * 3,
                         "attrs": [json.dumps({"label": "cat", "plural": "cats"})] * 3})


def _answers(*texts: str) -> dict[tuple[str, int], StoredResponse]:
    return {(f"i{i}", 0): StoredResponse(f"k{i}", "text", text, None) for i, text in enumerate(texts, 1)}


@pytest.mark.parametrize(("text", "number"), [("3", 3), ("There are three cats.", 3), ("twenty-one", 21),
                                              ("no, zero", 0), ("2.5", 2.5), ("none", None)])
def test_numbers_in_digits_and_words(text: str, number: int | float | None) -> None:
    assert first_number(text) == number


def test_merlims_int_only_parsing_reads_bare_integers_only() -> None:
    assert [whole_integer(t) for t in ("5", " 7\n", "5 books", "five", "2.0")] == [5, 7, None, None, None]


def test_follow_up_prompt_is_rendered_from_the_earlier_answer_with_the_item_image() -> None:
    spec = _spec(template=FOLLOW_UP, media="item")
    requests = build_requests(spec.stage[1], spec, _items(), {"backend": "x"},
                              _answers("three", "1", "I am not sure"))
    prompts = {item: r.prompt for (item, _), r in requests.items()}
    assert prompts == {"i1": "Are there 3 cats?", "i2": "Is there 1 cat?", "i3": "Are there I am not sure cats?"}
    assert all(r.media == (("image", "a" * 64),) for r in requests.values())


def test_text_only_leaves_the_image_out_and_changes_the_request_key() -> None:
    spec = _spec(template=FOLLOW_UP, media="item")
    with_image = build_requests(spec.stage[0], spec, _items(), {"backend": "x"}, None)
    text_only = build_requests(spec.stage[0], spec, _items(), {"backend": "x"}, None, text_only=True)
    assert all(r.media == () for r in text_only.values())
    assert [r.prompt for r in text_only.values()] == [r.prompt for r in with_image.values()]
    assert not {r.key for r in text_only.values()} & {r.key for r in with_image.values()}


def test_a_later_stage_by_default_sends_the_answer_itself() -> None:
    spec = _spec()
    [request, *_] = build_requests(spec.stage[1], spec, _items(), {"backend": "x"}, _answers("a", "b", "c")).values()
    assert request.prompt == "a" and request.media == ()


def test_stage_template_errors_name_the_key(tmp_path: Path) -> None:
    text = COUNTING.read_text().replace("{{ attrs.plural }}", "{{ atrs.plural }}")
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    done = cli("validate", bad)
    assert done.returncode != 0 and "stage[1].template" in done.stderr and "atrs" in done.stderr
    assert "did you mean 'attrs'" in done.stderr and "Traceback" not in done.stderr
    first = tmp_path / "first.toml"
    first.write_text(text.replace('[[stage]]\nid = "count"', '[[stage]]\nid = "count"\ntemplate = "x"'))
    done = cli("validate", first)
    assert done.returncode != 0 and "need an earlier stage" in done.stderr


@pytest.mark.slow
def test_counting_with_its_follow_up_end_to_end(tmp_path: Path) -> None:
    """Both stages through the CLI on a tiny random LLaVA: each follow-up prompt is the template
    over that item's count answer; then the LLM-only ablation asks the same without images."""
    model = build_tiny_llava(tmp_path / "tiny", seed=0)
    common = ("--model", f"hf:{model}", "--set", "sample.n=3", "--cache", tmp_path / "c", "--store", tmp_path / "s")
    cli("eval", COUNTING, *common, "-o", tmp_path / "out", check=True)
    responses = pl.read_parquet(tmp_path / "out" / "run" / "responses.parquet")
    items = pl.read_parquet(tmp_path / "out" / "manifest" / "items.parquet")
    assert sorted(responses["stage"].unique()) == ["count", "follow_up"] and responses.height == 6
    record = json.loads((tmp_path / "out" / "run" / "run.json").read_text())
    assert [s["requests"] for s in record["stages"]] == [3, 3] and record["text_only"] is False
    # the follow-up keys are those of the template rendered over each item's own count answer
    spec = Spec.model_validate(json.loads((tmp_path / "out" / "manifest" / "spec.json").read_text()))
    counts = {(r["item_id"], r["sample"]): StoredResponse(r["key"], "text", r["text"], None)
              for r in responses.filter(pl.col("stage") == "count").iter_rows(named=True)}
    rebuilt = build_requests(spec.stage[1], spec, items, record["backends"]["follow_up"], counts)
    asked = responses.filter(pl.col("stage") == "follow_up")
    assert sorted(asked["key"]) == sorted(r.key for r in rebuilt.values())
    assert all(r.prompt.startswith(("Is there 1 ", "Are there ")) and r.media for r in rebuilt.values())
    cli("eval", COUNTING, *common, "--text-only", "-o", tmp_path / "llm", check=True)
    llm = json.loads((tmp_path / "llm" / "run" / "run.json").read_text())
    assert llm["text_only"] is True and llm["stages"][0]["cached"] == 0  # other requests, other keys
