"""An lm-eval task as a consistency benchmark (issue 29): specs/examples/gsm8k_typos.toml reads
lm-eval 0.4.13's own gsm8k.yaml through the `lm_eval_task` source, puts a typo node on the
question (`source.perturb`: the prompt around it), and reads the answers by the task's two
filter pipelines as two named answer rules (`[answers.strict-match]`, `[answers.flexible-extract]`).

Checked against what lm-eval itself wrote for the same 10 problems (tests/fixtures/peers: Gemma
3 270M behind llama-cpp-python's server, `local-completions`): the prompts byte for byte, and
each filter's verdict item by item, through `benchc import` and `benchc score`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from difflib import SequenceMatcher

import polars as pl
import pytest

from benchc import api
from benchc.runtime.backends.base import BackendOptions
from conftest import ROOT, SPECS
from support.rule_backends import rule_backend

SPEC = SPECS / "examples" / "gsm8k_typos.toml"
LOGS = ROOT / "tests" / "fixtures" / "peers" / "lm_eval" / "completions" / "gemma"
[LOG] = sorted(LOGS.glob("samples_gsm8k_local_*.jsonl"))
[RESULTS] = sorted(LOGS.glob("results_*.json"))
RULES = ("strict-match", "flexible-extract")


def _main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    from benchc.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from benchc.cli import main

    root = tmp_path_factory.mktemp("gsm8k")
    assert main(["compile", str(SPEC), "-o", str(root / "m"), "--cache", str(root / "c")]) == 0
    return root / "m"


def _log() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LOG.read_text().splitlines()]


def test_the_original_prompts_are_lm_evals_byte_for_byte(manifest: Path) -> None:
    items = {r["item_id"]: r for r in pl.read_parquet(manifest / "items.parquet").iter_rows(named=True)}
    sent = {s["doc_id"]: s["arguments"]["gen_args_0"]["arg_0"] for s in _log()}
    assert len(sent) == 10 and len(items) == 30
    for doc_id, prompt in sent.items():
        original = items[f"{doc_id:06d}#question/original"]
        assert original["prompt"] == prompt  # the 5 shots, the question, "\nAnswer:"
        # each variant is the same prompt around another question
        before, after = prompt.split(original["text"])
        for node in ("typos", "numbers"):
            variant = items[f"{doc_id:06d}#question/{node}"]
            assert variant["prompt"] == before + variant["text"] + after and variant["text"] != original["text"]
    # numbers in words: "Anna has 5 apples. She buys 7 more apples." reads "five", "seven"
    assert items["000000#question/numbers"]["text"].startswith("Anna has five apples. She buys seven more apples.")


def test_lm_evals_log_scores_as_lm_eval_did_filter_by_filter(manifest: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Imported by prompt (the originals; the typo variants have no answers there), each named
    rule gives lm-eval's exact_match of its filter on every document, and its score."""
    run = tmp_path / "run"
    code, out, err = _main(capsys, "import", manifest, LOG, "--key", "prompt", "-o", run, "--allow-missing")
    assert code == 0, err
    assert "imported 10 answer(s) (lm-eval, by prompt)" in out and "typos (10 items)" in out
    assert "numbers (10 items)" in out
    code, out, err = _main(capsys, "score", run, "--format", "lm-eval", "--cache", tmp_path / "c")
    assert code == 0, err
    scores = json.loads((run / "scores.json").read_text())
    assert [(m["name"], m.get("answer")) for m in scores["metrics"]] == [
        ("general.accuracy", "strict-match"), ("general.accuracy", "flexible-extract"),
        ("general.consistency", "flexible-extract")]
    lm_eval = json.loads(RESULTS.read_text())["results"]["gsm8k_local"]
    exported = next((run / "lm-eval").glob("*/"))
    for metric, rule in zip(scores["metrics"], RULES):
        original = next(r for r in metric["rows"] if r["perturbation"] == "original")
        assert original["accuracy"] / 100 == pytest.approx(lm_eval[f"exact_match,{rule}"])
        assert f"Answers read by the rule {rule!r}" in " ".join(metric["notes"])
        task = rule.replace("-", "_")
        [samples] = exported.glob(f"samples_examples_gsm8k_typos_general_accuracy_{task}_perturbation_original_*")
        ours = {json.loads(line)["doc"]["record_id"]: json.loads(line)["accuracy"]
                for line in samples.read_text().splitlines()}
        theirs = {f"{s['doc_id']:06d}": s["exact_match"] for s in _log() if s["filter"] == rule}
        assert ours == theirs and len(ours) == 10
    results = json.loads(next(exported.glob("results_*.json")).read_text())
    configs = [c for name, c in results["configs"].items() if "strict_match" in name]
    assert configs and all(c["filter_list"][0]["name"] == "strict-match" for c in configs)


class _GsmOptions(BackendOptions):
    pass


def _gsm8k_rules(_: Any, prompt: str) -> str:
    """Knows every problem: answers it in GSM8K's style ("... #### 12") when asked as written; a
    question with typos (found by its closest problem) is answered right for even-numbered
    problems only, and "I think the answer is 0." otherwise."""
    docs = [json.loads(line) for line in (SPEC.parent / "data" / "gsm8k" / "test.jsonl").read_text().splitlines()]
    asked = prompt.rsplit("Question: ", 1)[1].removesuffix("\nAnswer:")
    closest = max(range(len(docs)), key=lambda i: SequenceMatcher(None, asked, docs[i]["question"]).ratio())
    exact = asked == docs[closest]["question"]
    return docs[closest]["answer"] if exact or closest % 2 == 0 else "I think the answer is 0."


rule_backend("test-gsm8k", _GsmOptions, _gsm8k_rules).takes_stop = True  # none of its answers holds a stop text


def test_the_typo_test_runs_and_scores_as_counted_by_hand(tmp_path: Path) -> None:
    """Run on a rule model: the original questions all right by both rules; with typos or numbers
    in words, the 5 even-numbered problems right (strict-match reads '#### N', flexible-extract the
    last number), the 5 others "0." (strict: no answer; flexible: '0', wrong); consistency
    (flexible-extract, exact) holds for the 5 the perturbation did not change."""
    common = {"cache_dir": tmp_path / "c", "store_dir": tmp_path / "s"}
    manifest = api.compile(SPEC, tmp_path / "m", progress=False, **common).manifest_dir
    api.run(manifest, tmp_path / "r", model="test-gsm8k", progress=False, **common)
    metrics = api.score(tmp_path / "r", **common)["metrics"]
    rows = {(m["name"], m.get("answer"), r["perturbation"]): r for m in metrics for r in m["rows"]}
    for rule in RULES:
        assert rows["general.accuracy", rule, "original"]["accuracy"] == 100.0
        assert rows["general.accuracy", rule, "typos"]["accuracy"] == 50.0
        assert rows["general.accuracy", rule, "numbers"]["accuracy"] == 50.0
    for node in ("typos", "numbers"):
        consistency = rows["general.consistency", "flexible-extract", node]
        assert consistency["holds"] == 50.0 and consistency["pairs"] == 10


def test_a_metric_names_a_rule_the_spec_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _copy(tmp_path)
    spec.write_text(spec.read_text().replace('answer = "strict-match"', 'answer = "strict_match"'))
    code, _, err = _main(capsys, "validate", spec)
    assert code == 2 and err.count("error:") == 1 and "Traceback" not in err
    assert "metric[0].answer" in err and "no answer rule 'strict_match'" in err and "'strict-match'" in err


def test_a_field_the_template_transforms_cannot_be_perturbed(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = _copy(tmp_path)
    task = tmp_path / "lm_eval" / "gsm8k.yaml"
    task.write_text(task.read_text().replace('doc_to_text: "Question: {{question}}\\nAnswer:"',
                                             'doc_to_text: "Question: {{question | upper}}\\nAnswer:"'))
    code, _, err = _main(capsys, "compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert code == 2 and "Traceback" not in err and not (tmp_path / "m").exists()
    assert "source.perturb" in err and "'question'" in err


def test_the_task_yaml_and_its_data_are_pinned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Another task text or another problem moves the manifest digest, and `benchc diff` says where."""
    spec = _copy(tmp_path)
    digests = []
    for step in ("as shipped", "yaml", "data"):
        if step == "yaml":
            task = tmp_path / "lm_eval" / "gsm8k.yaml"
            task.write_text(task.read_text().replace('"Question: {{question}}', '"Q: {{question}}'))
        if step == "data":
            data = tmp_path / "data" / "gsm8k" / "test.jsonl"
            data.write_text(data.read_text().replace("Anna has 5 apples", "Anna has 6 apples"))
        out = tmp_path / f"m-{len(digests)}"
        code, _, err = _main(capsys, "compile", spec, "-o", out, "--cache", tmp_path / "c")
        assert code == 0, err
        digests.append(json.loads((out / "lock.json").read_text())["manifest_digest"])
    assert len(set(digests)) == 3
    code, out, err = _main(capsys, "diff", tmp_path / "m-0", tmp_path / "m-1")
    assert "lm_eval/gsm8k.yaml" in out + err


def _copy(tmp_path: Path) -> Path:
    """The example spec with its task and data, in a folder of its own."""
    shutil.copy(SPEC, tmp_path / SPEC.name)
    shutil.copytree(SPEC.parent / "lm_eval", tmp_path / "lm_eval")
    shutil.copytree(SPEC.parent / "data" / "gsm8k", tmp_path / "data" / "gsm8k")
    return tmp_path / SPEC.name


# benchc new TASK.yaml ------------------------------------------------------------------------

def _task_folder(tmp_path: Path) -> Path:
    """lm-eval's gsm8k.yaml with its data beside it, in a folder of its own."""
    shutil.copytree(SPEC.parent / "data" / "gsm8k", tmp_path / "data" / "gsm8k")
    task = tmp_path / "gsm8k.yaml"
    task.write_text((SPEC.parent / "lm_eval" / "gsm8k.yaml").read_text().replace("../data/gsm8k", "data/gsm8k"))
    return task


def test_benchc_new_writes_a_task_as_a_spec_that_scores_as_lm_eval(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The spec `benchc new` writes from lm-eval's gsm8k.yaml asks lm-eval's prompts, and lm-eval's
    log scores by each of its filters as lm-eval scored it."""
    task = _task_folder(tmp_path)
    code, out, err = _main(capsys, "new", task)
    assert code == 0, err
    spec = tmp_path / "gsm8k.toml"
    assert f"wrote {spec}" in out and "left out" not in out
    text = spec.read_text()
    assert "[answers.strict-match]" in text and "[answers.flexible-extract]" in text and 'select = "last"' in text
    code, _, err = _main(capsys, "compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert code == 0, err
    prompts = set(pl.read_parquet(tmp_path / "m" / "items.parquet").filter(pl.col("node") == "original")["prompt"])
    assert prompts == {s["arguments"]["gen_args_0"]["arg_0"] for s in _log()}
    code, _, err = _main(capsys, "import", tmp_path / "m", LOG, "--key", "prompt", "-o", tmp_path / "r",
                         "--allow-missing")
    assert code == 0, err
    code, _, err = _main(capsys, "score", tmp_path / "r", "--cache", tmp_path / "c")
    assert code == 0, err
    lm_eval = json.loads(RESULTS.read_text())["results"]["gsm8k_local"]
    metrics = json.loads((tmp_path / "r" / "scores.json").read_text())["metrics"]
    accuracy = {m["answer"]: next(r["accuracy"] for r in m["rows"] if r["perturbation"] == "original")
                for m in metrics if m["name"] == "general.accuracy"}
    assert accuracy == {rule: pytest.approx(100 * lm_eval[f"exact_match,{rule}"]) for rule in RULES}


def test_benchc_new_says_what_it_leaves_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = _task_folder(tmp_path)
    task.write_text(task.read_text().replace('      - function: "take_first"\n  - name: "flexible-extract"',
                                             '      - function: "majority_vote"\n  - name: "flexible-extract"'))
    code, out, err = _main(capsys, "new", task, "-o", tmp_path / "spec.toml")
    assert code == 0, err
    assert "left out: filter 'strict-match': the filter 'majority_vote' has no exact benchc step" in out
    text = (tmp_path / "spec.toml").read_text()
    assert "[answers.strict-match]" not in text and "#   - filter 'strict-match'" in text
    assert 'answer = "flexible-extract"' in text


@pytest.mark.parametrize("change,fragment", [
    (("output_type: generate_until", "output_type: loglikelihood"), "output_type 'loglikelihood'"),
    (('doc_to_text: "Question: {{question}}\\nAnswer:"', "doc_to_text: !function utils.doc_to_text"),
     "!function utils.doc_to_text"),
], ids=["loglikelihood", "function"])
def test_benchc_new_refuses_what_benchc_cannot_ask(change: tuple[str, str], fragment: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    task = _task_folder(tmp_path)
    assert change[0] in task.read_text()
    task.write_text(task.read_text().replace(*change))
    code, _, err = _main(capsys, "new", task)
    assert code == 2 and fragment in err and "Traceback" not in err
    assert not (tmp_path / "gsm8k.toml").exists()


def test_benchc_new_refuses_a_task_file_that_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _main(capsys, "new", tmp_path / "missing.yaml")
    assert code == 2 and "no such task file" in err and "Traceback" not in err
    assert not (tmp_path / "missing.toml").exists()


# lm-eval's filters as answer rules -----------------------------------------------------------------

FILTER_OUTPUTS = ROOT / "tests" / "fixtures" / "peers" / "lm_eval" / "filters" / "outputs.json"


@pytest.mark.parametrize("name", sorted(json.loads(FILTER_OUTPUTS.read_text())["pipelines"]))
def test_each_filter_pipeline_reads_as_lm_evals_own_filters(name: str) -> None:
    """What lm-eval 0.4.13's own filter classes gave for each answer (regex, lowercase, uppercase,
    remove_whitespace, take_first; tests/fixtures/peers/lm_eval/filters/make_outputs.py) is what
    the named rule `benchc new` writes for the pipeline reads; lm-eval's "[invalid]" (no match) is
    benchc's no answer, wrong against any target either way."""
    from benchc.compiler.lm_eval_rules import answer_rule
    from benchc.compiler.spec.models import Answer
    from benchc.runtime.score.answers import NO_ANSWER, extract

    fixture = json.loads(FILTER_OUTPUTS.read_text())
    pipeline = fixture["pipelines"][name]
    rule = answer_rule(pipeline["filter"])
    assert isinstance(rule, dict), rule
    answer = Answer.model_validate(rule)
    read = [extract(text, answer) for text in fixture["answers"]]
    assert read == [NO_ANSWER if out == "[invalid]" else out for out in pipeline["outputs"]]
