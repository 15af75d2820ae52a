"""`benchc score RUN --format inspect` (runtime/interop/export_inspect.py): an inspect-ai eval log in the
JSON format inspect-ai 0.3.285 writes, shaped as the real log in tests/fixtures/peers/inspect_ai
(same keys where benchc has the facts, same types, same top-level order), with benchc's digests
added; the sample scores are benchc's correctness of each answer, the results are scores.json's
values as fractions, and the bytes do not change from one export to the next. inspect-ai is not
installed here: tests/real/test_inspect_export.py reads these logs with inspect's own reader."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchc.compiler.errors import RunError
from benchc.compiler.spec.models import Answer
from benchc.runtime.interop import export_inspect as module
from benchc.runtime.score.answers import extract, is_correct
from benchc.runtime.interop.export_inspect import InspectExport, base57_id, export_inspect
from support.hashed_answers import SPEC, World, run_cli

ROOT = Path(__file__).resolve().parents[1]
[PEER_LOG] = sorted((ROOT / "tests" / "fixtures" / "peers" / "inspect_ai" / "json").glob("*.json"))
BENCH = "examples/image-invariance"
READER = Answer(extract=["first_line", "normalize"])  # the spec's [answer]
NAME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-00-00)_examples-image-invariance_"
                  r"([2-9A-HJ-NP-Za-km-z]{22})\.json$")
INT_OR_STR = {"task_version", "id", "sample_id"}
"""inspect takes an int or a string: the peer's are ints, benchc's versions and item ids strings."""

# What benchc has no facts for (inspect's run options, timings and token counts, git), and adds
# (its digests and the error of a missing answer): everything else is the peer log's.
LEFT_OUT = {
    "eval": {"revision", "task_file", "task_registry_name"},
    "dataset": {"location"},
    "eval.config": {"continue_on_fail", "fail_on_error", "log_images", "log_realtime", "log_shared",
                    "sandbox_cleanup", "sandbox_prebuilt", "score_display", "score_on_error"},
    "score": {"unscored_samples"},
    "sample": {"started_at", "completed_at", "total_time", "working_time", "error_retries", "events_data",
               "turn_count"},
    "output": {"usage", "input_context_tokens", "time", "response_id"},
}
ADDED = {"eval": {"metadata", "headline_metric"}, "score": {"metadata"}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("inspect"))


@pytest.fixture(scope="module")
def exported(world: World) -> InspectExport:
    return export_inspect(world.run, world.scores)


@pytest.fixture(scope="module")
def log(exported: InspectExport) -> dict[str, Any]:
    return json.loads(exported.path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def peer() -> dict[str, Any]:
    return json.loads(PEER_LOG.read_text(encoding="utf-8"))


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value) if value is None else "bool"
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def _without(obj: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != key}


def _same_shape(mine: dict[str, Any], theirs: dict[str, Any], what: str) -> None:
    """The keys of the peer's object less those benchc has no facts for, plus benchc's own; and
    each shared key holding a value of the same JSON type."""
    assert set(mine) == (set(theirs) - LEFT_OUT.get(what, set())) | ADDED.get(what, set()), what
    for key in set(mine) & set(theirs):
        if key not in INT_OR_STR:
            assert _kind(mine[key]) == _kind(theirs[key]), f"{what}.{key}"


# shape ---------------------------------------------------------------------------------------

def test_the_log_has_the_peer_logs_keys_in_its_order(log: dict[str, Any], peer: dict[str, Any]) -> None:
    assert list(log) == list(peer)  # inspect's header reader stops at "samples": the header keys come first
    assert (log["version"], log["status"], log["invalidated"]) == (2, "success", False)
    _same_shape(log["eval"], peer["eval"], "eval")
    _same_shape(log["eval"]["dataset"], peer["eval"]["dataset"], "dataset")
    _same_shape(log["eval"]["config"], peer["eval"]["config"], "eval.config")
    _same_shape(log["eval"]["scorers"][0], peer["eval"]["scorers"][0], "scorer")
    _same_shape(log["plan"], peer["plan"], "plan")
    _same_shape(log["plan"]["steps"][0], peer["plan"]["steps"][0], "step")
    _same_shape(log["results"], peer["results"], "results")
    _same_shape(log["results"]["scores"][0], peer["results"]["scores"][0], "score")
    _same_shape(log["results"]["scores"][0]["metrics"]["accuracy"], peer["results"]["scores"][0]["metrics"]["accuracy"],
                "metric")
    _same_shape(log["stats"], peer["stats"], "stats")
    _same_shape(log["reductions"][0], peer["reductions"][0], "reduction")
    _same_shape(log["reductions"][0]["samples"][0], peer["reductions"][0]["samples"][0], "reduced")


def test_each_sample_has_the_peer_samples_keys(log: dict[str, Any], peer: dict[str, Any]) -> None:
    theirs = peer["samples"][0]
    for sample in log["samples"]:
        _same_shape(_without(sample, "input"), _without(theirs, "input"), "sample")  # here messages: media
        _same_shape(sample["output"], theirs["output"], "output")
        _same_shape(sample["output"]["choices"][0], theirs["output"]["choices"][0], "choice")
        for message, peers in zip(sample["messages"], theirs["messages"]):
            _same_shape(_without(message, "content"), _without(peers, "content"), message["role"])
        _same_shape(sample["scores"]["general.accuracy"], theirs["scores"]["includes"], "sample score")


def test_the_eval_names_the_benchmark_the_model_and_benchc_digests(world: World, log: dict[str, Any],
                                                                   exported: InspectExport) -> None:
    ev = log["eval"]
    lock = json.loads((world.manifest / "lock.json").read_text())
    record = json.loads((world.run / "run.json").read_text())
    assert (ev["task"], ev["task_version"], ev["model"]) == (BENCH, "1.0.0", "test-hashed")
    assert ev["dataset"] == {"name": BENCH, "samples": 192, "sample_ids": world.items["item_id"].to_list(),
                             "shuffled": False}
    assert ev["config"] == {"epochs": 1, "log_samples": True} and "revision" not in ev
    meta = ev["metadata"]
    assert meta["manifest_digest"] == lock["manifest_digest"] and meta["spec_digest"] == lock["spec_digest"]
    assert meta["scores_sha256"] == hashlib.sha256((world.run / "scores.json").read_bytes()).hexdigest()
    assert meta["responses_sha256"] == record["responses_sha256"] and meta["imported"] is None
    assert ev["task_id"] == base57_id(f"task:{lock['manifest_digest']}")  # from the manifest, not drawn
    assert [s["name"] for s in ev["scorers"]] == ["general.accuracy", "general.consistency"]
    assert log["plan"]["config"] == {"max_tokens": 16, "temperature": 0.0, "top_p": 1.0}
    assert log["plan"]["steps"] == [{"solver": "generate", "params": {"stage": "answer", "backend": "test-hashed",
                                                                      "input": "prompt"}, "params_passed": {}}]
    started = record["started"].replace("Z", "+00:00")
    assert ev["created"] == log["stats"]["started_at"] == started and log["stats"]["completed_at"] > started
    found = NAME.match(exported.path.name)
    assert found and found[1] == started.replace(":", "-").replace("+", "-") and found[2] == ev["task_id"]
    assert exported.path.parent == world.run / "inspect" and exported.samples == 192


# values --------------------------------------------------------------------------------------

def test_sample_scores_are_benchc_correctness(world: World, log: dict[str, Any]) -> None:
    texts = dict(world.responses.select("item_id", "text").iter_rows())
    samples = log["samples"]
    assert [(s["id"], s["epoch"]) for s in samples] == [(i, 1) for i in world.items["item_id"].to_list()]
    by_perturbation: dict[str, list[bool]] = {}
    for sample, row in zip(samples, world.items.iter_rows(named=True)):
        targets = json.loads(row["targets"])["answer"]
        answer = extract(texts[row["item_id"]], READER, row["prompt"])
        right = is_correct(answer, targets, "normalized", row["prompt"])
        score = sample["scores"]["general.accuracy"]
        assert (score["value"], score["answer"]) == ("C" if right else "I", answer)
        assert sample["target"] == (targets[0] if len(targets) == 1 else targets)
        assert sample["output"]["completion"] == texts[row["item_id"]]
        assert sample["messages"][-1]["content"] == texts[row["item_id"]]
        media = json.loads(row["media"])
        assert sample["input"][0]["content"] == [{"type": "text", "text": row["prompt"]}, *(
            {"type": "image", "image": f"benchc-media:image:{m['sha256']}", "detail": "auto"} for m in media)]
        assert sample["metadata"]["attrs"] == json.loads(row["attrs"])
        assert sample["metadata"]["group_id"] == row["group_id"] and sample["metadata"]["node"] == row["node"]
        by_perturbation.setdefault(sample["metadata"]["attrs"]["perturbation"], []).append(right)
    rows = {r["perturbation"]: r["accuracy"] for r in world.scores["metrics"][0]["rows"]}
    assert {p: pytest.approx(100 * sum(v) / len(v), abs=1e-3) for p, v in by_perturbation.items()} == rows
    assert 0 < sum(map(sum, by_perturbation.values())) < 192  # some right, some wrong: a real check
    reduced = {r["sample_id"]: r["value"] for r in log["reductions"][0]["samples"]}
    assert reduced == {s["id"]: float(s["scores"]["general.accuracy"]["value"] == "C") for s in samples}


def test_results_are_scores_json_as_fractions(world: World, log: dict[str, Any]) -> None:
    results = log["results"]
    assert (results["total_samples"], results["completed_samples"]) == (192, 192)
    scores = {s["name"]: s for s in results["scores"]}
    expected = []
    for metric in world.scores["metrics"]:
        for row in metric["rows"]:
            labels = [f"{c}={row[c]}" for c in metric["columns"] if isinstance(row[c], str)]
            name = ":".join([metric["name"], *labels])
            expected.append(name)
            score = scores[name]
            assert score["scorer"] == metric["name"]
            floats = {c: v for c, v in row.items() if isinstance(v, float)}
            assert {c: m["value"] for c, m in score["metrics"].items()} == {
                c: pytest.approx(v / 100, abs=1e-9) for c, v in floats.items()}  # all rates here are percent
            assert score["metadata"]["counts"] == {c: v for c, v in row.items() if isinstance(v, int)}
    assert list(scores) == expected  # one per row, in scores.json's order
    assert results["headline"] == {"scorer": "general.accuracy", "score": "general.accuracy:perturbation=flipped",
                                   "metric": "accuracy"}
    assert log["eval"]["headline_metric"] == {"scorer": "general.accuracy", "metric": "accuracy"}


def test_the_export_is_byte_for_byte_repeatable(world: World, exported: InspectExport) -> None:
    before = exported.path.read_bytes()
    again = export_inspect(world.run, world.scores)
    assert again == exported and again.path.read_bytes() == before
    assert [p.name for p in (world.run / "inspect").iterdir()] == [exported.path.name]  # swapped in whole


# imports, epochs, repeated metrics ----------------------------------------------------------

def test_an_import_with_a_missing_answer(world: World, tmp_path: Path) -> None:
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"item_id": a["item_id"], "response": a["response"]}) + "\n"
                               for a in world.answers()[1:]))
    run = tmp_path / "run"
    assert run_cli("import", world.manifest, answers, "-o", run, "--allow-missing") == 0
    scores = world.score(run)
    done = export_inspect(run, scores)
    log = json.loads(done.path.read_text())
    assert done.path.name.startswith("1970-01-01T00-00-00-00-00_examples-image-invariance_")  # an import has no start
    assert log["eval"]["created"] == "1970-01-01T00:00:00+00:00"
    assert (log["stats"]["started_at"], log["stats"]["completed_at"]) == ("", "")
    assert log["eval"]["model"] == "imported/jsonl" and log["eval"]["metadata"]["imported"]["missing"] == 1
    assert (log["results"]["total_samples"], log["results"]["completed_samples"]) == (192, 191)
    first = log["samples"][0]
    assert "no answer" in first["error"]["message"] and set(first["error"]) == {"message", "traceback",
                                                                                   "traceback_ansi"}
    assert first["output"] == {"model": "imported/jsonl", "choices": [], "completion": ""}
    assert [m["role"] for m in first["messages"]] == ["user"]
    assert first["scores"]["general.accuracy"]["value"] == "I"  # benchc scores a missing answer wrong
    assert all("error" not in s for s in log["samples"][1:])


@pytest.fixture(scope="module")
def two_samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The example with two samples per item, general.accuracy twice (the second with a where)
    and general.worst_case."""
    root = tmp_path_factory.mktemp("epochs")
    text = SPEC.read_text().replace("max_new_tokens = 16", "max_new_tokens = 16\nn = 2\ntemperature = 0.5")
    text += ('\n[[metric]]\nname = "general.accuracy"\ntarget = "answer"\n'
             'where = { perturbation = ["original", "rotated"] }\n'
             '\n[[metric]]\nname = "general.worst_case"\ntarget = "answer"\n')
    (root / "spec.toml").write_text(text)
    common: list[str | Path] = ["--cache", root / "cache", "--store", root / "store"]
    assert run_cli("compile", root / "spec.toml", "-o", root / "manifest", "--data-root", SPEC.parent, *common) == 0
    assert run_cli("run", root / "manifest", "-o", root / "run", "--model", "test-hashed", *common) == 0
    assert run_cli("score", root / "run", *common) == 0
    return root / "run", json.loads((root / "run" / "scores.json").read_text())


def test_samples_become_epochs_and_repeated_metrics_are_numbered(two_samples: tuple[Path, dict[str, Any]]) -> None:
    run, scores = two_samples
    done = export_inspect(run, scores)
    log = json.loads(done.path.read_text())
    samples = log["samples"]
    assert done.samples == len(samples) == 384 and log["eval"]["config"]["epochs"] == 2
    assert [s["epoch"] for s in samples[:4]] == [1, 2, 1, 2] and samples[0]["id"] == samples[1]["id"]
    assert len({s["uuid"] for s in samples}) == 384
    names = ["general.accuracy_1", "general.consistency", "general.accuracy_2", "general.worst_case"]
    assert [s["name"] for s in log["eval"]["scorers"]] == names
    for sample in samples:  # the second accuracy scores only the items its where keeps
        kept = sample["metadata"]["attrs"]["perturbation"] in ("original", "rotated")
        assert set(sample["scores"]) == {"general.accuracy_1", "general.worst_case"} | (
            {"general.accuracy_2"} if kept else set())
    right = [s["scores"]["general.accuracy_2"]["value"] == "C" for s in samples if "general.accuracy_2" in s["scores"]]
    [row] = scores["metrics"][2]["rows"]
    assert len(right) == 2 * row["items"] and 100 * sum(right) / len(right) == pytest.approx(row["accuracy"], abs=1e-3)
    by_name = {s["name"]: s for s in log["results"]["scores"]}
    assert by_name["general.accuracy_2"]["metrics"]["accuracy"]["value"] == pytest.approx(row["accuracy"] / 100)
    assert by_name["general.worst_case"]["metrics"]["worst_case"]["value"] == pytest.approx(
        scores["metrics"][3]["rows"][0]["worst_case"] / 100)
    reductions = {r["scorer"]: r for r in log["reductions"]}
    assert set(reductions) == {"general.accuracy_1", "general.accuracy_2", "general.worst_case"}
    assert all(r["reducer"] == "mean" for r in reductions.values())
    assert len(reductions["general.accuracy_2"]["samples"]) == 96


# refusals ------------------------------------------------------------------------------------

def test_a_folder_that_cannot_be_written_is_refused(world: World, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    shutil.copytree(world.run, run)
    before = export_inspect(run, world.scores).path.read_bytes()
    run.chmod(0o555)
    if os.geteuid() == 0:  # root writes anywhere: fail the folder's creation as the OS would for anyone else
        def refuse(target: Path) -> Path:
            raise PermissionError(13, "Permission denied", str(target))

        monkeypatch.setattr(module, "make_staging_dir", refuse)
    try:
        with pytest.raises(RunError) as caught:
            export_inspect(run, world.scores)
    finally:
        run.chmod(0o755)
    [problem] = caught.value.problems
    assert "cannot write the inspect export: Permission denied" in problem.message
    assert problem.file == str(run / "inspect")
    [kept] = (run / "inspect").iterdir()
    assert kept.read_bytes() == before  # the earlier export is left as it was
    assert sorted(p.name for p in run.iterdir() if p.name.startswith(".inspect")) == []  # no staging left behind


def test_score_format_inspect_writes_the_log_through_the_cli(world: World, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`benchc score RUN --format inspect`: scores.json as the default format writes it, and the
    log beside it, the same bytes the export function writes."""
    run = tmp_path / "run"
    shutil.copytree(world.run, run)
    shutil.rmtree(run / "inspect", ignore_errors=True)
    plain = (world.run / "scores.json").read_bytes()
    assert run_cli("score", run, "--format", "inspect", *world.common) == 0
    [log] = (run / "inspect").glob("*.json")
    assert (run / "scores.json").read_bytes() == plain
    out = capsys.readouterr().out
    assert "inspect: 192 sample(s)" in out and str(log) in out
    assert log.read_bytes() == export_inspect(run, json.loads(plain)).path.read_bytes()
