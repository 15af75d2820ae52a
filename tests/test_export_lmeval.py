"""`benchc score RUN --format lm-eval`: results.json in lm-evaluation-harness's results schema
and a per-sample JSONL in its --log_samples shape, with benchc's digests added; the values are
those of scores.json, the per-sample values add up to the metric, the hashes are lm-eval's, and
the bytes do not change from one export to the next. The default format is unchanged."""

from __future__ import annotations

import hashlib
import json
from calendar import timegm
from pathlib import Path
from time import strptime
from typing import Any

import pytest

from benchc.runtime.answers import extract
from benchc.compiler.spec.models import Answer
from support.hashed_answers import World, run_cli

BENCH = "examples/image-invariance"
FILTER = "first_line+normalize"  # the spec's [answer].extract
RESULT_KEYS = {"results", "groups", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better",
               "n-samples", "config", "git_hash", "date", "task_hashes", "model_name", "model_name_sanitized",
               "total_evaluation_time_seconds", "benchc"}
SAMPLE_KEYS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics", "doc_hash",
               "prompt_hash", "target_hash"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("export"))


def _results(run: Path) -> dict[str, Any]:
    return json.loads((run / "lm-eval" / "results.json").read_text())


def _samples(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "lm-eval" / f"samples_{BENCH.replace('/', '__')}.jsonl").open()]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_results_have_lm_eval_keys_and_benchc_digests(world: World) -> None:
    results = _results(world.run)
    lock = json.loads((world.manifest / "lock.json").read_text())
    record = json.loads((world.run / "run.json").read_text())
    assert RESULT_KEYS <= set(results)
    accuracy = f"{BENCH}:general.accuracy"
    subtasks = [f"{accuracy}:perturbation={p}" for p in ("flipped", "jpeg", "original", "rotated")]
    assert results["group_subtasks"][accuracy] == subtasks and results["groups"][accuracy] == {"alias": accuracy}
    for task in subtasks:
        entry = results["results"][task]
        assert entry["alias"] == task
        assert set(entry) == {"alias", f"accuracy,{FILTER}", f"accuracy_stderr,{FILTER}", f"ci_low,{FILTER}",
                              f"ci_high,{FILTER}"}
        assert entry[f"accuracy_stderr,{FILTER}"] == "N/A"  # benchc has bootstrap intervals, no stderr
        assert results["versions"][task] == "1.0.0" and results["n-shot"][task] == 0
        assert results["configs"][task]["task"] == task and results["higher_is_better"][task] == {"accuracy": True}
    assert results["n-samples"][subtasks[2]] == {"original": 24, "effective": 24}  # one original per question
    assert all(k.count(",") == 1 for entry in results["results"].values() for k in entry if k != "alias")
    benchc = results["benchc"]
    assert benchc["manifest_digest"] == lock["manifest_digest"] and benchc["spec_digest"] == lock["spec_digest"]
    assert benchc["scores_sha256"] == hashlib.sha256((world.run / "scores.json").read_bytes()).hexdigest()
    assert benchc["imported"] is None and results["model_name"] == "test-hashed"
    assert results["date"] == float(timegm(strptime(record["started"], "%Y-%m-%dT%H:%M:%SZ")))  # from run.json
    assert results["config"]["gen_kwargs"]["max_new_tokens"] == 16


def test_result_values_are_those_of_scores_json(world: World) -> None:
    results = _results(world.run)["results"]
    for metric in world.scores["metrics"]:
        for row in metric["rows"]:
            labels = [f"{c}={row[c]}" for c in metric["columns"] if isinstance(row[c], str)]
            entry = results[":".join([BENCH, metric["name"], *labels])]
            for column, value in row.items():
                if isinstance(value, float):
                    assert entry[f"{column},{FILTER}"] == value


def test_samples_follow_log_samples_and_add_up_to_the_metric(world: World) -> None:
    samples = _samples(world.run)
    texts = dict(world.responses.select("item_id", "text").iter_rows())
    assert [s["doc_id"] for s in samples] == list(range(192))
    assert [s["doc"]["item_id"] for s in samples] == world.items["item_id"].to_list()  # manifest order
    reader = Answer(extract=["first_line", "normalize"])
    for sample, row in zip(samples, world.items.iter_rows(named=True)):
        assert SAMPLE_KEYS <= set(sample) and sample["metrics"] == ["general.accuracy"]
        assert sample["arguments"]["gen_args_0"]["arg_0"] == row["prompt"]
        assert sample["resps"] == [[texts[row["item_id"]]]]
        assert sample["filtered_resps"] == [extract(texts[row["item_id"]], reader)] and sample["filter"] == FILTER
        assert sample["doc_hash"] == _sha(json.dumps(sample["doc"], indent=2, ensure_ascii=False))
        assert sample["prompt_hash"] == _sha(row["prompt"]) and sample["target_hash"] == _sha(sample["target"])
        assert sample["doc"]["media_sha256"] == [m["sha256"] for m in json.loads(row["media"])]
    by_perturbation: dict[str, list[float]] = {}
    for sample in samples:
        by_perturbation.setdefault(sample["doc"]["attrs"]["perturbation"], []).append(sample["general.accuracy"])
    rows = {r["perturbation"]: r["accuracy"] for r in world.scores["metrics"][0]["rows"]}
    assert {p: pytest.approx(100 * sum(v) / len(v), abs=1e-3) for p, v in by_perturbation.items()} == rows
    assert 0 < sum(map(sum, by_perturbation.values())) < 192  # some right, some wrong: a real check


def test_the_export_is_byte_for_byte_repeatable(world: World) -> None:
    folder = world.run / "lm-eval"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    world.score(world.run, "--format", "lm-eval")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_the_default_format_is_unchanged(world: World, tmp_path: Path) -> None:
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"item_id": a["item_id"], "response": a["response"]}) + "\n"
                               for a in world.answers()))
    run = tmp_path / "run"
    assert run_cli("import", world.manifest, answers, "-o", run) == 0
    plain = world.score(run)
    assert not (run / "lm-eval").exists() and set(plain) == {"benchmark", "manifest_digest", "model", "items", "rules",
                                                             "metrics"}
    first = (run / "scores.json").read_bytes()
    world.score(run, "--format", "lm-eval")
    assert (run / "scores.json").read_bytes() == first
    results = _results(run)
    assert results["benchc"]["imported"]["source_sha256"] == hashlib.sha256(answers.read_bytes()).hexdigest()
    assert results["date"] is None and results["model_name"] == "imported"  # an import has no start time
    assert results["benchc"]["scoring_rules"] == plain["rules"]


def test_missing_answers_show_in_the_samples(world: World, tmp_path: Path) -> None:
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"item_id": a["item_id"], "response": a["response"]}) + "\n"
                               for a in world.answers()[1:]))
    run = tmp_path / "run"
    assert run_cli("import", world.manifest, answers, "-o", run, "--allow-missing") == 0
    world.score(run, "--format", "lm-eval")
    first = _samples(run)[0]
    assert first["missing"] == 1 and first["resps"] == [[]] and first["general.accuracy"] == 0.0
    assert _results(run)["benchc"]["imported"]["missing"] == 1


def test_an_unknown_format_is_refused(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli("score", world.run, "--format", "lmeval", *world.common)
    err = capsys.readouterr().err
    assert code == 2 and "unknown --format 'lmeval'" in err and "benchc, lm-eval" in err
