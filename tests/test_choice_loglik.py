"""Multiple choice scored by log-likelihood, as lm-eval scores it (issue 29, item 3): a
``task = "choice-loglik"`` stage on the ``hf`` backend.

Checked against lm-eval 0.4.13 itself: tests/fixtures/peers/lm_eval/hf_loglik/ holds what its
``hf`` model (HFLM, batch size 1, CPU) logged for two of its own multiple-choice tasks (MMLU's
template 5-shot, ARC-Easy 0-shot, on local data) with the tiny random-weight Llama of
support/tiny_llm.py; tests/fixtures/peers/make_hf_loglik.sh made them. benchc, on the same model
folder (rebuilt here, byte for byte: its digest is the fixture's), sends the same prompts, finds
the same log-likelihood for every choice, chooses what lm-eval's argmax chooses, and scores acc
and acc_norm as lm-eval printed them."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchc.cli import main
from benchc.runtime.backends.base import Choices
from benchc.runtime.backends.hf_loglik import chosen, encode_pair
from benchc.runtime.backends.local_model import model_digest
from benchc.runtime.run.store import ResponseStore
from conftest import ROOT, SPECS
from support.tiny_llm import build_tiny_llm

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FIXTURE = ROOT / "tests" / "fixtures" / "peers" / "lm_eval" / "hf_loglik"
LOGLIK_TOLERANCE = 1e-4
"""lm-eval's float32 sums and benchc's differ by a few units in the last place (measured: at
most 1.9e-6 on log-likelihoods near -12); 1e-4 is far below any gap that decides a choice here."""


def _samples(task: str) -> dict[int, dict[str, Any]]:
    [path] = sorted(FIXTURE.glob(f"*/*/samples_{task}_*.jsonl"))
    return {s["doc_id"]: s for s in map(json.loads, path.read_text().splitlines())}


def _printed(task: str) -> dict[str, float]:
    [path] = [p for p in FIXTURE.glob("*/*/results_*.json") if task in json.loads(p.read_text())["results"]]
    result = json.loads(path.read_text())["results"][task]
    return {k.split(",")[0]: v for k, v in result.items() if k.endswith(",none") and "stderr" not in k}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = build_tiny_llm(tmp_path_factory.mktemp("tiny") / "tiny-llm", seed=0)
    assert model_digest(str(folder)) == (FIXTURE / "model_digest.txt").read_text().strip(), \
        "the tiny model is no longer the one lm-eval scored: rerun tests/fixtures/peers/make_hf_loglik.sh"
    return folder


def _spec(folder: Path, task: str, stages: str, extra: str = "") -> Path:
    spec = folder / "spec.toml"
    spec.write_text(f"""
[benchmark]
name = "test/choice-loglik"
version = "1.0.0"
seed = 0

[source]
loader = "lm_eval_task"
task = "{SPECS / 'examples' / 'lm_eval' / task}"
{extra}

[prompt]
template = "{{{{ record.lm_eval.prompt }}}}"
{stages}
""")
    return spec


def _roots(spec: Path) -> list[str]:
    """The specs written here read lm-eval tasks beside the bundled examples."""
    return [] if spec.is_relative_to(SPECS) else ["--data-root", str(SPECS / "examples")]


def _run(tmp_path: Path, model: Path, spec: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "out"
    code = main(["eval", str(spec), "--model", f"hf:{model}", "--out", str(out), "--store", str(tmp_path / "s"),
                 "--cache", str(tmp_path / "c"), *_roots(spec)])
    assert code == 0, capsys.readouterr().err
    return out


def _answers(out: Path, store: Path, stage: str) -> dict[int, tuple[str, dict[str, Any]]]:
    responses = pl.read_parquet(out / "run" / "responses.parquet").filter(pl.col("stage") == stage)
    kept = ResponseStore(store)
    try:
        return {int(r["item_id"]): (r["text"], json.loads(kept.blob(r["blob"])))
                for r in responses.iter_rows(named=True)}
    finally:
        kept.close()


def _scores(out: Path) -> list[dict[str, Any]]:
    return json.loads((out / "run" / "scores.json").read_text())["metrics"]


MMLU_STAGE = """
[[stage]]
id = "answer"
task = "choice-loglik"
choices = "lm_eval.choices"
delimiter = " "

[[metric]]
name = "general.accuracy"
target = "lm_eval.targets"
correct = "exact"
"""


def test_mmlu_five_shot_scores_as_lm_evals_hf_model(model: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(tmp_path, model, _spec(tmp_path, "mmlu_geography.yaml", MMLU_STAGE, "num_fewshot = 5"), capsys)
    logged = _samples("mmlu_geography_local")
    items = {int(r["item_id"]): r for r in pl.read_parquet(out / "manifest" / "items.parquet").iter_rows(named=True)}
    answers = _answers(out, tmp_path / "s", "answer")
    assert len(logged) == len(answers) == 10
    for doc_id, sample in logged.items():
        requests = [sample["arguments"][f"gen_args_{i}"] for i in range(4)]
        assert items[doc_id]["prompt"] == requests[0]["arg_0"]  # the 5 shots, byte for byte
        assert [" " + c for c in ("A", "B", "C", "D")] == [r["arg_1"] for r in requests]
        text, details = answers[doc_id]
        lm_lls = [float(ll) for ll, _ in sample["filtered_resps"]]
        assert details["choices"] == ["A", "B", "C", "D"]
        assert all(abs(a - b) <= LOGLIK_TOLERANCE for a, b in zip(details["loglik"], lm_lls, strict=True))
        assert details["greedy"] == [g == "True" for _, g in sample["filtered_resps"]]
        assert text == "ABCD"[max(range(4), key=lambda i: (lm_lls[i], -i))]
        assert (text == "ABCD"[sample["doc"]["answer"]]) == (sample["acc"] == 1.0)
    [accuracy] = _scores(out)
    assert accuracy["stage"] == "answer" and "lm-eval's acc" in accuracy["notes"][-1]
    assert accuracy["rows"][0]["accuracy"] == pytest.approx(100 * _printed("mmlu_geography_local")["acc"])


ARC_STAGES = """
[[stage]]
id = "acc"
task = "choice-loglik"
choices = "lm_eval.choices"

[[stage]]
id = "acc_norm"
task = "choice-loglik"
choices = "lm_eval.choices"
choose_by = "loglik_per_char"

[[metric]]
name = "general.accuracy"
stage = "acc"
target = "lm_eval.targets"
correct = "exact"

[[metric]]
name = "general.accuracy"
stage = "acc_norm"
target = "lm_eval.targets"
correct = "exact"
"""


def test_arc_text_choices_give_lm_evals_acc_and_acc_norm(model: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(tmp_path, model, _spec(tmp_path, "arc_easy.yaml", ARC_STAGES), capsys)
    logged = _samples("arc_easy_local")
    by_ll, by_char = _answers(out, tmp_path / "s", "acc"), _answers(out, tmp_path / "s", "acc_norm")
    for doc_id, sample in logged.items():
        texts = sample["doc"]["choices"]["text"]
        assert [sample["arguments"][f"gen_args_{i}"]["arg_1"] for i in range(len(texts))] == [" " + t for t in texts]
        lm_lls = [float(ll) for ll, _ in sample["filtered_resps"]]
        for _, details in (by_ll[doc_id], by_char[doc_id]):
            assert all(abs(a - b) <= LOGLIK_TOLERANCE for a, b in zip(details["loglik"], lm_lls, strict=True))
        gold = sample["doc"]["choices"]["label"].index(sample["doc"]["answerKey"])
        assert (by_ll[doc_id][0] == texts[gold]) == (sample["acc"] == 1.0)
        assert (by_char[doc_id][0] == texts[gold]) == (sample["acc_norm"] == 1.0)
    printed = _printed("arc_easy_local")
    scores = _scores(out)
    assert [(m["stage"], m["rows"][0]["accuracy"]) for m in scores] == [
        ("acc", pytest.approx(100 * printed["acc"])), ("acc_norm", pytest.approx(100 * printed["acc_norm"]))]
    report = (out / "run" / "report.md").read_text()
    assert "## general.accuracy (stage acc)" in report and "## general.accuracy (stage acc_norm)" in report
    assert "lm-eval's acc_norm" in report


def test_the_mmlu_example_with_circular_eval_runs(model: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """specs/examples/mmlu_circular.toml: shift 0 is lm-eval's prompt, and its accuracy lm-eval's acc."""
    spec = SPECS / "examples" / "mmlu_circular.toml"
    out = _run(tmp_path, model, spec, capsys)
    items = pl.read_parquet(out / "manifest" / "items.parquet")
    logged = _samples("mmlu_geography_local")
    assert items.height == 40
    for row in items.iter_rows(named=True):
        attrs = json.loads(row["attrs"])
        prompt = logged[int(row["record_id"])]["arguments"]["gen_args_0"]["arg_0"]
        if attrs["shift"] == 0:
            assert row["prompt"] == prompt
        else:  # the same shots and question, the options rotated
            assert row["prompt"] != prompt and row["prompt"].split("\nA. ")[0] == prompt.split("\nA. ")[0]
    accuracy, worst, consistency = _scores(out)
    shift0 = next(r for r in accuracy["rows"] if r["shift"] == 0)
    assert shift0["accuracy"] == pytest.approx(100 * _printed("mmlu_geography_local")["acc"])
    right = pl.read_parquet(out / "run" / "responses.parquet").join(items.select("item_id", "attrs"), on="item_id")
    per_record: dict[str, list[bool]] = {}
    for row in right.iter_rows(named=True):
        per_record.setdefault(row["item_id"].split("#")[0], []).append(
            row["text"] == json.loads(row["attrs"])["expected"])
    assert worst["rows"][0]["worst_case"] == pytest.approx(100 * sum(all(v) for v in per_record.values()) / 10)


def test_benchc_new_writes_a_multiple_choice_task_that_scores_as_lm_eval(model: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`benchc new` on lm-eval's arc_easy.yaml: a choice-loglik stage per metric it lists, whose
    original questions score lm-eval's acc and acc_norm; typos and consistency on top."""
    shutil.copytree(SPECS / "examples" / "data" / "arc", tmp_path / "data" / "arc")
    task = tmp_path / "arc_easy.yaml"
    text = (SPECS / "examples" / "lm_eval" / "arc_easy.yaml").read_text()
    task.write_text(text.replace("../data/arc", "data/arc").replace(
        "  - metric: acc_norm\n", "  - metric: mcc\n    aggregation: matthews_corrcoef\n  - metric: acc_norm\n"))
    code = main(["new", str(task)])
    out = capsys.readouterr().out
    assert code == 0
    assert "left out: the metric 'mcc'" in out and "--model hf:/path/to/causal-lm" in out
    spec = tmp_path / "arc_easy.toml"
    run = _run(tmp_path, model, spec, capsys)
    printed = _printed("arc_easy_local")
    original = {m.get("stage"): next(r["accuracy"] for r in m["rows"] if r["perturbation"] == "original")
                for m in _scores(run) if m["name"] == "general.accuracy"}
    assert original == {"acc": pytest.approx(100 * printed["acc"]),
                        "acc_norm": pytest.approx(100 * printed["acc_norm"])}


# --- a task with Python functions (allow_task_code) -------------------------------------------------

HELLASWAG = SPECS / "examples" / "lm_eval" / "hellaswag" / "hellaswag.yaml"


def test_hellaswag_runs_its_process_docs_and_scores_as_lm_eval(model: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """lm-eval's own hellaswag.yaml and utils.py (process_docs is Python), read with
    allow_task_code: the processed documents' prompts and choices are lm-eval's, and acc and
    acc_norm are what lm-eval printed."""
    spec = _spec(tmp_path, "hellaswag/hellaswag.yaml", ARC_STAGES, "allow_task_code = true")
    out = _run(tmp_path, model, spec, capsys)
    logged = _samples("hellaswag_local")
    items = {int(r["item_id"]): r for r in pl.read_parquet(out / "manifest" / "items.parquet").iter_rows(named=True)}
    by_ll, by_char = _answers(out, tmp_path / "s", "acc"), _answers(out, tmp_path / "s", "acc_norm")
    assert len(logged) == len(items) == 10
    for doc_id, sample in logged.items():
        requests = [sample["arguments"][f"gen_args_{i}"] for i in range(4)]
        assert items[doc_id]["prompt"] == requests[0]["arg_0"]  # process_docs' query: "[header]" removed
        assert by_ll[doc_id][1]["choices"] == [r["arg_1"][1:] for r in requests]
        lm_lls = [float(ll) for ll, _ in sample["filtered_resps"]]
        for _, details in (by_ll[doc_id], by_char[doc_id]):
            assert all(abs(a - b) <= LOGLIK_TOLERANCE for a, b in zip(details["loglik"], lm_lls, strict=True))
        gold = sample["doc"]["gold"]
        assert (by_ll[doc_id][0] == by_ll[doc_id][1]["choices"][gold]) == (sample["acc"] == 1.0)
        assert (by_char[doc_id][0] == by_ll[doc_id][1]["choices"][gold]) == (sample["acc_norm"] == 1.0)
    printed = _printed("hellaswag_local")
    assert [(m["stage"], m["rows"][0]["accuracy"]) for m in _scores(out)] == [
        ("acc", pytest.approx(100 * printed["acc"])), ("acc_norm", pytest.approx(100 * printed["acc_norm"]))]
    lock = json.loads((out / "manifest" / "lock.json").read_text())
    assert any(f["path"].endswith("hellaswag/utils.py") for f in lock["source"]["files"])


def _hellaswag_copy(tmp_path: Path) -> Path:
    """lm-eval's hellaswag task and its data in a folder of its own (to edit)."""
    shutil.copytree(SPECS / "examples" / "data" / "hellaswag", tmp_path / "data" / "hellaswag")
    shutil.copytree(HELLASWAG.parent, tmp_path / "lm_eval" / "hellaswag")
    spec = tmp_path / "spec.toml"
    spec.write_text(_spec(tmp_path, "hellaswag/hellaswag.yaml", ARC_STAGES, "allow_task_code = true").read_text()
                    .replace(str(SPECS / "examples" / "lm_eval"), "lm_eval"))
    return spec


def _records(folder: Path) -> list[Any]:
    """The lm_eval_task source's records of the copied task, loaded as a compile loads them."""
    from benchc.compiler.cas import ContentStore
    from benchc.compiler.sources.base import SourceContext
    from benchc.compiler.sources.lm_eval_task import LmEvalTaskParams, LmEvalTaskSource

    ctx = SourceContext(roots=[folder], store=ContentStore(folder / "cas"), spec_file=str(folder / "spec.toml"))
    params = LmEvalTaskParams(task="lm_eval/hellaswag/hellaswag.yaml", allow_task_code=True)
    return LmEvalTaskSource().load(params, ctx).records


def _compile(spec: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["compile", str(spec), "-o", str(out), "--cache", str(spec.parent / "c")])
    return code, capsys.readouterr().err


def test_the_task_code_and_its_versions_are_pinned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    spec = _hellaswag_copy(tmp_path)
    code, err = _compile(spec, tmp_path / "a", capsys)
    assert code == 0, err
    first = json.loads((tmp_path / "a" / "lock.json").read_text())
    # every record says what ran, and with which lm-eval (a new version: new record digests)
    [record, *_] = _records(tmp_path)
    assert record.fields["lm_eval"]["code"] == {
        "functions": ["process_docs=utils.process_docs"], "lm_eval": metadata.version("lm_eval"),
        "datasets": metadata.version("datasets"), "python": f"{sys.version_info[0]}.{sys.version_info[1]}"}
    utils = tmp_path / "lm_eval" / "hellaswag" / "utils.py"
    utils.write_text(utils.read_text().replace('text.replace("  ", " ")', 'text.replace("  ", " ").upper()'))
    code, err = _compile(spec, tmp_path / "b", capsys)
    assert code == 0, err
    second = json.loads((tmp_path / "b" / "lock.json").read_text())
    assert first["manifest_digest"] != second["manifest_digest"]
    assert first["source"]["digest"] != second["source"]["digest"]


def test_task_code_is_refused_without_allow_task_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _hellaswag_copy(tmp_path)
    spec.write_text(spec.read_text().replace("allow_task_code = true", ""))
    code, err = _compile(spec, tmp_path / "m", capsys)
    assert code == 2 and "!function utils.process_docs" in err and "allow_task_code = true" in err
    assert "hellaswag.yaml" in err and "Traceback" not in err and not (tmp_path / "m").exists()


def test_allow_task_code_without_lm_eval_installed_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from benchc.compiler.sources import lm_eval_code

    monkeypatch.setattr(lm_eval_code, "lm_eval_installed", lambda package="lm_eval": False)
    code, err = _compile(_hellaswag_copy(tmp_path), tmp_path / "m", capsys)
    assert code == 2 and "needs lm-eval installed" in err and "pip install" in err and "Traceback" not in err


def test_a_function_outside_the_prompt_keys_is_still_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = _hellaswag_copy(tmp_path)
    task = tmp_path / "lm_eval" / "hellaswag" / "hellaswag.yaml"
    task.write_text(task.read_text().replace("output_type: multiple_choice",
                                             "output_type: multiple_choice\ndescription: !function utils.preprocess"))
    code, err = _compile(spec, tmp_path / "m", capsys)
    assert code == 2 and "description is lm-eval Python code (!function utils.preprocess)" in err


def test_failing_task_code_is_one_error_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _hellaswag_copy(tmp_path)
    utils = tmp_path / "lm_eval" / "hellaswag" / "utils.py"
    utils.write_text(utils.read_text().replace('"gold": int(doc["label"]),', '"gold": int(doc["nope"]),'))
    code, err = _compile(spec, tmp_path / "m", capsys)
    assert code == 2 and "process_docs failed" in err and "KeyError" in err and "Traceback" not in err


# --- the rule, without a model --------------------------------------------------------------------


def test_ties_go_to_the_first_choice_and_per_char_divides_by_the_choice_length() -> None:
    assert chosen(Choices(("A", "B")), [-1.0, -1.0]) == 0  # numpy.argmax's first
    # -6 over 6 characters beats -2 over 1 per character, not in sum
    choices = Choices(("longer", "x"), choose_by="loglik_per_char")
    assert chosen(choices, [-6.0, -2.0]) == 0
    assert chosen(Choices(("longer", "x")), [-6.0, -2.0]) == 1


class _Chars:
    """A tokenizer of one token per character (BOS 1, EOS 2), adding BOS as a Llama's does."""

    bos_token_id, eos_token_id = 1, 2

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return ([1] if add_special_tokens else []) + [ord(c) for c in text]

    def decode(self, token: int) -> str:
        return {1: "<s>", 2: "</s>"}.get(token, chr(token))


def test_the_prompts_trailing_space_moves_to_the_continuation_as_in_lm_eval() -> None:
    context, continuation = encode_pair(_Chars(), "Answer: ", "B")
    assert context == [1] + [ord(c) for c in "Answer:"] and continuation == [ord(" "), ord("B")]
    # an empty prompt is the BOS token, the continuation without special tokens
    assert encode_pair(_Chars(), "", " B") == ([1], [ord(" "), ord("B")])
    # a text that starts with the BOS text gets no second BOS
    assert encode_pair(_Chars(), "<s>Q", " B")[0][:2] == [ord("<"), ord("s")]


# --- what is refused ------------------------------------------------------------------------------


def _bad(tmp_path: Path, stages: str, capsys: pytest.CaptureFixture[str]) -> str:
    spec = _spec(tmp_path, "arc_easy.yaml", stages)
    code = main(["compile", str(spec), "-o", str(tmp_path / "m"), "--cache", str(tmp_path / "c"), *_roots(spec)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and not (tmp_path / "m").exists()
    return err


@pytest.mark.parametrize(("stages", "said"), [
    ('[[stage]]\nid = "a"\ntask = "choice-loglik"\n', "choice-loglik needs choices"),
    ('[[stage]]\nid = "a"\ntask = "choice-loglik"\nchoices = ["A"]\n', "choice-loglik needs choices"),
    ('[[stage]]\nid = "a"\ntask = "choice-loglik"\nchoices = ["A", "A"]\n', "choices repeat a text"),
    ('[[stage]]\nid = "a"\nchoices = ["A", "B"]\n', 'belong to task = "choice-loglik"'),
    ('[[stage]]\nid = "a"\ntask = "choice-loglik"\nchoices = "lm_eval.choice"\n', "has no field 'lm_eval.choice'"),
    ('[[stage]]\nid = "a"\ntask = "choice-loglik"\nchoices = "question"\n', "not a list of at least two choices"),
])
def test_a_bad_choice_stage_is_one_error(tmp_path: Path, stages: str, said: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    err = _bad(tmp_path, stages, capsys)
    assert said in err and "stage" in err


def test_a_backend_that_cannot_score_choices_is_refused_before_any_request(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    stage = '[[stage]]\nid = "a"\ntask = "choice-loglik"\nchoices = "lm_eval.choices"\n'
    spec = _spec(tmp_path, "arc_easy.yaml", stage)
    code = main(["eval", str(spec), "--model", "echo", "--out", str(tmp_path / "out"), "--store", str(tmp_path / "s"),
                 "--cache", str(tmp_path / "c"), *_roots(spec)])
    err = capsys.readouterr().err
    assert code == 2 and "cannot do 'choice-loglik'" in err and "Traceback" not in err


def test_choices_enter_the_request_key_and_not_other_stages_specs(tmp_path: Path) -> None:
    from benchc.runtime.run.core import request_digest

    base = dict(fingerprint={"b": 1}, task="choice-loglik", generation=None, prompt="Q", system=None, media=[],
                sample=0)
    keys = {request_digest(**base, choices=Choices(texts)) for texts in (("A", "B"), ("B", "A"), ("A", "C"))}
    keys.add(request_digest(**base, choices=Choices(("A", "B"), choose_by="loglik_per_char")))
    keys.add(request_digest(**base, choices=Choices(("A", "B"), delimiter="")))
    assert len(keys) == 5


def test_without_a_correct_rule_a_choice_is_right_only_as_the_gold_text(model: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A metric on a choice-loglik stage that sets no `correct` compares the chosen choice with the
    gold one exactly: "normalized" (the general default) would count "A mirror." right for "a
    mirror" (case, punctuation, article)."""
    stage = ARC_STAGES.replace('correct = "exact"\n', "")
    out = _run(tmp_path, model, _spec(tmp_path, "arc_easy.yaml", stage), capsys)
    scores = _scores(out)
    assert all(any("lm-eval's exact_match (as written)" in n for n in m["notes"]) for m in scores), scores
    printed = _printed("arc_easy_local")
    assert [m["rows"][0]["accuracy"] for m in scores] == [pytest.approx(100 * printed["acc"]),
                                                           pytest.approx(100 * printed["acc_norm"])]
