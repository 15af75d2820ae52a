"""Judges (runtime/score/judges.py, runtime/score/metrics/judge.py): parsers, the response store (a rescore
asks nothing twice; another template is asked anew), unreadable answers, two judges' agreement,
and ``benchc score`` end to end, against the rule server. Every number is worked out by hand in
the comments."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchc.compiler.metrics import Judge, JudgeParams
from benchc.rule_server import RuleServer, served
from benchc.runtime.score.judges import Case, parse, prompts
from benchc.runtime.score.metrics import METRICS, MetricInput
from benchc.runtime.score.metrics.base import ScoredItem
from benchc.runtime.score.model_client import RuntimeModelClient
from specfiles import questions_spec
from conftest import ROOT, cli

# Judge "A" (scale 1-5) reads sky -> 4, fire -> 2, fish -> "maybe" (unreadable); judge "B" (its
# template starts "Second opinion") reads sky -> 4, fire -> 3, fish -> 1. Matching ignores case.
JUDGE_RULES = {
    "default": "no idea",
    "rule": [
        {"pattern": "^Second opinion.*sky", "answer": "4"},
        {"pattern": "^Second opinion.*fire", "answer": "3"},
        {"pattern": "^Second opinion.*fish", "answer": "1"},
        {"pattern": "sky", "answer": "4"},
        {"pattern": "fire", "answer": "Score: 2 out of 5"},
        {"pattern": "fish", "answer": "maybe"},
    ],
}


@pytest.fixture
def judge_server() -> Iterator[RuleServer]:
    with served(JUDGE_RULES) as httpd:
        yield httpd


def _judge(server: RuleServer, template: str, name: str) -> dict[str, Any]:
    return {"backend": f"openai:rules,base_url={server.url},api_key_env=none", "name": name,
            "template": template, "parser": "scale", "scale_min": 1, "scale_max": 5}


def _items() -> list[ScoredItem]:
    """Three records, each asked as is and shouted (6 items, 6 distinct prompts)."""
    out = []
    for record, question in (("r1", "Is the sky blue?"), ("r2", "Is fire cold?"), ("r3", "Do fish swim?")):
        for node, text in (("original", question), ("shouted", question.upper())):
            out.append(ScoredItem(f"{record}#{node}", record, {"perturbation": node}, {}, ("yes",),
                                  node=node, prompt=text))
    return out


def _score(params: dict[str, Any], client: RuntimeModelClient) -> Any:
    schema = JudgeParams.model_validate(params)
    return METRICS.get("judge.score").score(schema, MetricInput(_items(), None, "echo", models=client))


# -- parsers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("parser", "answer", "value"), [
    ("scale", "4", 4), ("scale", "Score: 2 out of 5", 2), ("scale", "7", None), ("scale", "3.5", None),
    ("scale", "maybe", None), ("yes_no", "Yes, they are.", "yes"), ("yes_no", "no", "no"),
    ("yes_no", "I think so", None), ("label", " Entailment.\n", "entailment"), ("label", "neutral-ish", None),
])
def test_parsers_read_or_refuse(parser: str, answer: str, value: Any) -> None:
    judge = Judge(backend="echo", template="{{ question }}", parser=parser,  # type: ignore[arg-type]
                  labels=["entailment", "contradiction"] if parser == "label" else [])
    assert parse(judge, answer) == value


def test_a_judge_schema_refuses_what_cannot_work() -> None:
    for bad in ({"template": "{{ question "}, {"template": "x", "parser": "label", "labels": ["a"]},
                {"template": "x", "scale_min": 5, "scale_max": 5}):
        with pytest.raises(ValidationError):
            Judge.model_validate({"backend": "echo", **bad})
    two = [{"backend": "echo", "template": "x"}, {"backend": "echo", "template": "y"}]
    with pytest.raises(ValidationError, match="different names"):
        JudgeParams.model_validate({"judges": two})
    with pytest.raises(ValidationError, match="go together"):
        JudgeParams.model_validate({"judges": two[:1], "over": "index"})


def test_the_reference_item_reaches_the_template() -> None:
    judge = Judge(backend="echo", template="{{ reference.question }} / {{ question }} / {{ answer }}")
    original, shouted = _items()[:2]
    [prompt] = prompts(judge, [Case(shouted, original)])
    assert prompt.text == "Is the sky blue? / IS THE SKY BLUE? / yes"


# -- the metric, through the response store --------------------------------------------------------


def test_two_judges_scores_agreement_and_unreadable_answers(tmp_path: Path, judge_server: RuleServer) -> None:
    client = RuntimeModelClient(tmp_path / "cache", tmp_path / "store", progress=False)
    params = {"judges": [_judge(judge_server, "Rate: {{ question }}", "A"),
                         _judge(judge_server, "Second opinion: {{ question }}", "B")], "by": ["perturbation"]}
    result = _score(params, client)
    assert judge_server.completions == 12  # 6 items x 2 judges
    rows = {(r["judge"], r["perturbation"]): r for r in result.rows}
    # A: r1 -> 4, r2 -> 2, r3 unreadable, per perturbation: mean (4 + 2) / 2 = 3
    assert rows[("A", "original")] == {"judge": "A", "perturbation": "original", "items": 3, "read": 2,
                                       "unreadable": 1, "mean": 3.0}
    # B: 4, 3, 1 -> mean 8 / 3
    assert rows[("B", "shouted")]["mean"] == pytest.approx(8 / 3) and rows[("B", "shouted")]["unreadable"] == 0
    assert result.details["unreadable"]["A"] == [{"item_id": "r3#original", "answer": "maybe"},
                                                 {"item_id": "r3#shouted", "answer": "maybe"}]
    assert any(n.startswith("WARNING: judge 'A' gave 2 answer(s)") for n in result.notes)
    # agreement over the 4 items both read: A = [4, 4, 2, 2], B = [4, 4, 3, 3]; observed 2/4;
    # chance: P(A=4)P(B=4) = 1/2 * 1/2 = 1/4 (A never says 3, B never 2); kappa = (1/2 - 1/4) / (1 - 1/4) = 1/3
    agreement = result.details["agreement"]
    assert agreement["items"] == 4 and agreement["left_out"] == 2
    assert agreement["kappa"] == pytest.approx(1 / 3) and agreement["agree"] == 50.0
    assert agreement["disagreements"] == [{"item_id": "r2#original", "first": 2, "second": 3},
                                          {"item_id": "r2#shouted", "first": 2, "second": 3}]
    first = result.details["judges"][0]
    assert first["prompt_version"] == "1" and first["parser"] == {"kind": "scale", "min": 1, "max": 5}
    assert len(first["template_sha256"]) == 64 and first["fingerprint"]["backend"] == "openai"
    client.close()


def test_a_rescore_asks_nothing_and_a_new_template_is_asked_anew(tmp_path: Path, judge_server: RuleServer) -> None:
    store = tmp_path / "store"
    params = {"judges": [_judge(judge_server, "Rate: {{ question }}", "A")]}
    client = RuntimeModelClient(tmp_path / "cache", store, progress=False)
    first = _score(params, client)
    client.close()
    assert judge_server.completions == 6
    client = RuntimeModelClient(tmp_path / "cache", store, progress=False)  # a later `benchc score`
    again = _score(params, client)
    assert judge_server.completions == 6 and client.calls == 0 and client.requests == 6
    assert again.rows == first.rows
    changed = {"judges": [{**params["judges"][0], "template": "Rate this: {{ question }}", "version": "2"}]}
    moved = _score(changed, client)
    assert judge_server.completions == 12 and client.calls == 6  # new prompts, new request keys
    assert moved.rows == first.rows  # the rules read the same words
    assert moved.details["judges"][0]["template_sha256"] != first.details["judges"][0]["template_sha256"]
    client.close()


# -- benchc score, end to end ---------------------------------------------------------------------

SPEC = questions_spec("judge", """
[prompt]
template = "{{{{ text }}}}"

[[metric]]
name = "judge.score"
judges = [{{ backend = "openai:rules,base_url={url},api_key_env=none", template = "Rate: {{{{ answer }}}}" }}]
""")


def test_benchc_score_asks_the_judge_through_the_store_once(tmp_path: Path, judge_server: RuleServer) -> None:
    (tmp_path / "questions.csv").write_text("id,question\nr1,Is the sky blue?\nr2,Is fire cold?\nr3,Do fish swim?\n")
    (tmp_path / "spec.toml").write_text(SPEC.format(url=judge_server.url))
    done = cli("eval", "spec.toml", "-o", "out", "--model", "echo", "--store", "store", "--cache", "cache",
               cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert judge_server.completions == 3  # echo answers with the question: sky 4, fire 2, fish unreadable
    done = cli("score", "out/run", "--store", "store", "--cache", "cache", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert judge_server.completions == 3  # the rescore asked nothing
    assert "could not read" in done.stderr  # the WARNING note is printed
    [result] = json.loads((tmp_path / "out/run/scores.json").read_text())["metrics"]
    assert result["rows"] == [{"judge": f"openai:rules,base_url={judge_server.url},api_key_env=none",
                               "items": 3, "read": 2, "unreadable": 1, "mean": 3.0}]
    assert result["details"]["judges"][0]["fingerprint"]["base_url"] == judge_server.url
    assert result["details"]["unreadable"][result["rows"][0]["judge"]][0]["item_id"].startswith("r3")


# -- the bundled specs ----------------------------------------------------------------------------


def _rules_backend(server: RuleServer) -> str:
    return f"openai:rules,base_url={server.url},api_key_env=none"


def test_mmr3_rephrasing_validation_with_a_rule_judge(tmp_path: Path) -> None:
    """The bundled spec and its prompt, on two questions: the judge says no when Question 2
    mentions a picture, answers "Perhaps." (unreadable) when it asks what kind, else yes.
    Group 1: yes, unreadable, no; group 2: yes, yes, no -> 6 judged, 5 read, 3 of 5 yes = 60 %."""
    rows = [{"id": "q1", "image": "0.png", "answer": "rectangle", "questions": [
                "what is the blue shape?", "which shape is blue?", "what kind of shape is the blue one?",
                "is the shape in the picture blue?"]},
            {"id": "q2", "image": "0.png", "answer": "blue", "questions": [
                "what color is the shape?", "which color does the shape have?", "what is the shape's colour?",
                "what color is the shape in the picture?"]}]
    data = tmp_path / "data/easy_vqa_rephrasings"
    (data / "images").mkdir(parents=True)
    (data / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    source = ROOT / "specs/mm_r3/data/easy_vqa_rephrasings/images/0.png"
    (data / "images/0.png").write_bytes(source.read_bytes())
    (tmp_path / "spec.toml").write_text((ROOT / "specs/mm_r3/rephrasing_validation.toml").read_text())
    with served({"default": "Yes.", "rule": [
         {"pattern": r"Question 1: .*\nQuestion 2: [^\n]*picture", "answer": "No, it asks about a picture."},
         {"pattern": r"Question 2: [^\n]*kind", "answer": "Perhaps."}]}) as httpd:
        done = cli("eval", "spec.toml", "-o", "out", "--model", "echo", "--store", "store", "--cache", "cache",
                   "--set", f'metric.0.judges.0.backend="{_rules_backend(httpd)}"', cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert httpd.completions == 6
    [result] = json.loads((tmp_path / "out/run/scores.json").read_text())["metrics"]
    assert result["rows"] == [{"judge": "internvl-26b", "items": 6, "read": 5, "unreadable": 1, "yes": 60.0}]
    assert result["details"]["unreadable"]["internvl-26b"] == [{"item_id": "q1#question[index=2]",
                                                                "answer": "Perhaps."}]
    judge = result["details"]["judges"][0]
    assert judge["prompt_version"] == "benchc-1" and judge["parser"] == {"kind": "yes_no"}


KOALA_RULES = {"default": "Yes.", "rule": [
    {"pattern": "^Question: .*British Museum", "answer": "9"},   # the judge's prompts start "Question: "
    {"pattern": "^Question: .*Dubai Mall", "answer": "9"},
    {"pattern": "^Question: .*Boston", "answer": "2"},
    {"pattern": "^Question: ", "answer": "very high"},            # unreadable
    {"pattern": "British Museum|Boston", "answer": "<RET> Sorry, I cannot determine the answer. <RET>"},
]}


def test_koala_contextualization_with_a_rule_judge(tmp_path: Path) -> None:
    """Koala's first four reviewer-accepted counterfactual items (British Museum, Dubai Mall,
    Boston statue, CNN center). The model acknowledges (Sorry, <RET>) on British Museum and
    Boston; the judge scores 9, 9, 2 and answers "very high" (unreadable) for CNN. Rows: score 2:
    1 answer, 100 % acknowledged; score 9: 2 answers, 50 %; mean context (9 + 9 + 2) / 3."""
    entries = json.loads((ROOT / "specs/koala/data/segsub_data_labelled_reviewer2.json").read_text())
    kept = [e for e in entries if e.get("type") == "counterfactual" and e.get("label") is True][:4]
    (tmp_path / "data").mkdir()
    (tmp_path / "data/segsub_data_labelled_reviewer2.json").write_text(json.dumps(kept))
    (tmp_path / "spec.toml").write_text((ROOT / "specs/koala/contextualization.toml").read_text())
    with served(KOALA_RULES) as httpd:
        done = cli("eval", "spec.toml", "-o", "out", "--model", _rules_backend(httpd), "--store", "store",
                   "--cache", "cache", "--set", f'metric.0.judge.backend="{_rules_backend(httpd)}"', cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out/run/scores.json").read_text())["metrics"]
    assert result["rows"] == [{"context": 2, "answers": 1, "acknowledged": 100.0},
                              {"context": 9, "answers": 2, "acknowledged": 50.0}]
    [unreadable] = result["details"]["unreadable"][result["details"]["judges"][0]["name"]]
    assert unreadable["answer"] == "very high" and kept[3]["id"] in unreadable["item_id"]  # the CNN item
    assert any("mean contextualisation 6.67" in n for n in result["notes"])
    judge = result["details"]["judges"][0]
    assert judge["prompt_version"] == "koala-appB" and judge["parser"] == {"kind": "scale", "min": 1, "max": 10}


@pytest.mark.parametrize("answer, expected", [
    ("8", 8), ("8/10", 8), ("I give it 2 out of 10", 2), ("Score: 7", 7),
    ("On a scale of 1 to 10, I'd say 8", None),  # the first number is the scale's: never guessed
    ("Rating: 7. Reason: 3 issues", None), ("Score: 2 out of 5", None), ("4.5", None), ("11", None), ("", None),
])
def test_a_scale_is_read_only_when_one_number_is_the_rating(answer: str, expected: int | None) -> None:
    from benchc.runtime.score.judges import read_scale

    assert read_scale(answer, 1, 10) == expected


@pytest.mark.parametrize("answer, expected", [
    ("Yes.", "yes"), ("No, it asks about a picture.", "no"), ("yes and no", None), ("Yes, but no.", None),
    ("Perhaps.", None), ("There is no dog", None),
])
def test_a_yes_no_judge_never_reads_a_hedge_as_yes(answer: str, expected: str | None) -> None:
    from benchc.runtime.score.judges import read_yes_no

    assert read_yes_no(answer) == expected
