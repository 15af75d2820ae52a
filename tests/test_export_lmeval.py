"""`benchc score RUN --format lm-eval`: the folder lm-evaluation-harness 0.4 writes with
--output_path and --log_samples (RUN/lm-eval/<model>/results_<datetime>.json and one
samples_<task>_<datetime>.jsonl per task), in lm-eval's types (checked against its own
result_schema.py, allowing only what lm-eval's own files in tests/fixtures/peers break too), with
fractions where scores.json has percent, a value per sample for every metric_list metric
(consistency included), whose mean is the task's value, and media files the samples name. The
bytes do not change from one export to the next; the default format is unchanged. lm-eval's own
consumers (make_table, WandbLogger, the Zeno script) read it in tests/real/test_lm_eval_consumers.py."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from calendar import timegm
from pathlib import Path
from time import strptime
from typing import Any

import pytest
from PIL import Image

from benchc.compiler.media import image_identity
from benchc.runtime.score.answers import extract
from benchc.compiler.spec.models import Answer
from support.hashed_answers import World, run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "peers" / "lm_eval"
BENCH = "examples_image_invariance"  # examples/image-invariance, as lm-eval's sanitize_task_name writes it
FILTER = "first_line+normalize"  # the spec's [answer].extract
ACCURACY = f"{BENCH}_general_accuracy"
CONSISTENCY = f"{BENCH}_general_consistency"
PERTURBATIONS = ("flipped", "jpeg", "original", "rotated")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("export"))


def _folder(run: Path) -> Path:
    [folder] = (run / "lm-eval").iterdir()
    return folder


def _results(run: Path) -> dict[str, Any]:
    [path] = _folder(run).glob("results_*.json")
    return json.loads(path.read_text())


def _samples(run: Path, task: str) -> list[dict[str, Any]]:
    [path] = [p for p in _folder(run).glob("samples_*.jsonl") if p.name[len("samples_"):p.name.rfind("_")] == task]
    return [json.loads(line) for line in path.open()]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_folder_is_laid_out_as_lm_eval_writes_it(world: World) -> None:
    """A model folder; results_<datetime>.json and samples_<task>_<datetime>.jsonl, where the
    datetime is the run's start with ':' as '-' and the task is what lm-eval's file helpers
    (get_file_task_name, get_file_datetime) read back; no task name holds '/' or ','."""
    folder = _folder(world.run)
    record = json.loads((world.run / "run.json").read_text())
    stamp = record["started"].rstrip("Z").replace(":", "-")
    assert folder.name == "test-hashed"
    results = _results(world.run)
    tasks = set(results["configs"])
    names = sorted(p.name for p in folder.glob("*.json*"))
    assert names == sorted([f"results_{stamp}.json", *(f"samples_{t}_{stamp}.jsonl" for t in tasks)])
    for name in names:
        assert name[name.rfind("_") + 1:].replace(".jsonl", "").replace(".json", "") == stamp
    assert all(re.fullmatch(r"\w+", t) for t in [*results["results"], *results["groups"]])
    assert tasks == {f"{ACCURACY}_perturbation_{p}" for p in PERTURBATIONS} | {
        f"{CONSISTENCY}_perturbation_{p}_relation_same" for p in PERTURBATIONS if p != "original"}


def test_results_have_lm_eval_keys_types_and_benchc_digests(world: World) -> None:
    results = _results(world.run)
    lock = json.loads((world.manifest / "lock.json").read_text())
    record = json.loads((world.run / "run.json").read_text())
    subtasks = [f"{ACCURACY}_perturbation_{p}" for p in PERTURBATIONS]
    assert results["group_subtasks"][ACCURACY] == subtasks
    for task in subtasks:
        entry = results["results"][task]
        assert set(entry) == {"name", "alias", "sample_len", f"accuracy,{FILTER}", f"accuracy_stderr,{FILTER}",
                              f"ci_low,{FILTER}", f"ci_high,{FILTER}"}
        assert entry["name"] == task and entry[f"accuracy_stderr,{FILTER}"] == "N/A"  # intervals, no stderr
        assert results["versions"][task] == 1.0 and results["n-shot"][task] == 0  # a float, as lm-eval's
        config = results["configs"][task]
        assert config["task"] == task and config["group"] == ACCURACY
        assert config["metadata"]["benchc_version"] == "1.0.0"
        assert config["metric_list"] == [{"metric": "accuracy", "aggregation": "mean", "higher_is_better": True}]
        assert config["filter_list"] == [{"name": FILTER, "filter": [{"function": "first_line"},
                                                                      {"function": "normalize"}]}]
        assert results["higher_is_better"][task] == {"accuracy": True}
    assert results["n-samples"][subtasks[2]] == {"original": 24, "effective": 24}  # one original per question
    assert results["config"]["model_args"] == {"answer": "test-hashed"}  # a mapping, as lm-eval 0.4.13 writes
    assert results["config"]["gen_kwargs"]["max_gen_toks"] == 16 and results["model_source"] == "benchc"
    benchc = results["benchc"]
    assert benchc["manifest_digest"] == lock["manifest_digest"] and benchc["spec_digest"] == lock["spec_digest"]
    assert benchc["scores_sha256"] == hashlib.sha256((world.run / "scores.json").read_bytes()).hexdigest()
    assert benchc["imported"] is None and results["model_name"] == "test-hashed"
    assert results["date"] == float(timegm(strptime(record["started"], "%Y-%m-%dT%H:%M:%SZ")))  # from run.json


def test_values_are_scores_json_as_fractions(world: World) -> None:
    results = _results(world.run)["results"]
    seen = 0
    for metric in world.scores["metrics"]:
        for row in metric["rows"]:
            labels = [f"{c}_{row[c]}" for c in metric["columns"] if isinstance(row[c], str)]
            entry = results["_".join([BENCH, metric["name"].replace(".", "_"), *labels])]
            for column, value in row.items():
                if isinstance(value, float):
                    assert entry[f"{column},{FILTER}"] == pytest.approx(value / 100, abs=1e-9)
                    seen += 1
    assert seen >= 21  # 7 rows x (value, ci_low, ci_high)


def test_groups_carry_lm_eval_size_weighted_values(world: World) -> None:
    """make_table(..., "groups") has rows: a group's value is its tasks' mean weighted by size."""
    results = _results(world.run)
    group = results["groups"][ACCURACY]
    assert results["results"][ACCURACY] == group and group["sample_len"] == 192
    tasks = [results["results"][t] for t in results["group_subtasks"][ACCURACY]]
    weighted = sum(t[f"accuracy,{FILTER}"] * t["sample_len"] for t in tasks) / 192
    assert group[f"accuracy,{FILTER}"] == pytest.approx(weighted, abs=1e-6)
    overall = sum(t[f"accuracy,{FILTER}"] * t["sample_len"] for t in tasks)  # every item once: the plain mean
    assert 0 < overall < 192
    assert results["benchc"]["groups"][ACCURACY] == {"aggregation": "mean", "weight_by_size": True}


def test_samples_follow_log_samples_and_their_mean_is_the_task_value(world: World) -> None:
    texts = dict(world.responses.select("item_id", "text").iter_rows())
    items = {r["item_id"]: r for r in world.items.iter_rows(named=True)}
    reader = Answer(extract=["first_line", "normalize"])
    results = _results(world.run)["results"]
    for p in PERTURBATIONS:
        task = f"{ACCURACY}_perturbation_{p}"
        samples = _samples(world.run, task)
        assert [s["doc_id"] for s in samples] == list(range(len(samples))) == list(range(results[task]["sample_len"]))
        for sample in samples:
            row = items[sample["doc"]["item_id"]]
            assert row["attrs"] and json.loads(row["attrs"])["perturbation"] == p
            assert sample["metrics"] == ["accuracy"] and isinstance(sample["accuracy"], float)
            assert sample["arguments"]["gen_args_0"]["arg_0"] == row["prompt"]
            assert sample["resps"] == [[texts[row["item_id"]]]]
            assert sample["filtered_resps"] == [extract(texts[row["item_id"]], reader)] and sample["filter"] == FILTER
            assert sample["target"] == json.loads(row["targets"])["answer"][0]  # the metric's target, as text
            assert sample["doc_hash"] == _sha(json.dumps(sample["doc"], indent=2, sort_keys=True, ensure_ascii=False))
            assert sample["prompt_hash"] == _sha(row["prompt"]) and sample["target_hash"] == _sha(sample["target"])
        mean = sum(s["accuracy"] for s in samples) / len(samples)
        assert mean == pytest.approx(results[task][f"accuracy,{FILTER}"], abs=1e-6)


def test_consistency_tasks_have_a_value_per_sample_with_both_answers(world: World) -> None:
    texts = dict(world.responses.select("item_id", "text").iter_rows())
    results = _results(world.run)["results"]
    values = []
    for p in ("flipped", "jpeg", "rotated"):
        task = f"{CONSISTENCY}_perturbation_{p}_relation_same"
        samples = _samples(world.run, task)
        for sample in samples:
            doc, reference = sample["doc"], sample["doc"]["reference"]
            assert doc["node"] == p and reference["node"] == "original" and doc["group_id"] == reference["group_id"]
            assert sample["resps"] == [[texts[doc["item_id"]]], [texts[reference["item_id"]]]]
            assert set(sample["arguments"]) == {"gen_args_0", "gen_args_1"} and sample["metrics"] == ["holds"]
            assert sample["holds"] == float(sample["filtered_resps"][0] == sample["filtered_resps"][1] != "")
        mean = sum(s["holds"] for s in samples) / len(samples)
        assert mean == pytest.approx(results[task][f"holds,{FILTER}"], abs=1e-6)
        values += [s["holds"] for s in samples]
    assert 0 < sum(values) < len(values)  # some hold, some do not: a real check


def test_image_samples_name_their_media_files(world: World) -> None:
    folder = _folder(world.run)
    samples = _samples(world.run, f"{ACCURACY}_perturbation_rotated")
    for sample in samples:
        [medium] = sample["doc"]["media"]
        with Image.open(folder / medium["path"]) as image:  # an image's sha256 is its pixels' identity
            assert image.format == "PNG" and image_identity(image) == medium["sha256"]
        assert medium["path"] == f"media/{medium['sha256']}.png"


def _schema() -> Any:
    sys.path.insert(0, str(FIXTURES / "schema"))
    try:
        import result_schema  # lm-eval 0.4.13's own, copied unchanged
    finally:
        sys.path.pop(0)
    return result_schema


def _violations(adapter: Any, value: Any, depth: int) -> set[str]:
    from pydantic import ValidationError

    try:
        adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        return {".".join(str(p) for p in e["loc"][:depth]) for e in exc.errors()}
    return set()


def _tolerated(location: str) -> bool:
    """What lm-eval 0.4.13's own results break of its schema: config.batch_size (an int) and
    the fields of a task config that hold mappings and lists."""
    return location == "config.batch_size" or location.startswith("configs.")


def _without_na(results: dict[str, Any]) -> dict[str, Any]:
    """The results less the "N/A" standard errors, which the schema types as numbers and lm-eval
    writes itself where it has none (evaluator_utils.py: ``else "N/A"``)."""
    out = dict(results)
    for key in ("results", "groups"):
        out[key] = {task: {k: v for k, v in entry.items() if not ("_stderr," in k and v == "N/A")}
                    for task, entry in results[key].items()}
    return out


def test_results_and_samples_pass_lm_eval_s_own_schema(world: World) -> None:
    from pydantic import TypeAdapter

    schema = _schema()
    results, samples = TypeAdapter(schema.EvalResults), TypeAdapter(schema.SampleResult)
    own = sorted(FIXTURES.glob("*/*/results_*.json")) + sorted(FIXTURES.glob("*/*/*/results_*.json"))
    assert len(own) == 6  # dummy, chat, completions; hf_loglik's mmlu, arc, hellaswag (multiple choice)
    for path in own:  # the tolerance is no wider than what lm-eval's own files need
        assert all(_tolerated(v) for v in _violations(results, json.loads(path.read_text()), 3))
    assert {v for v in _violations(results, _without_na(_results(world.run)), 3) if not _tolerated(v)} == set()
    for task in _results(world.run)["configs"]:
        for sample in _samples(world.run, task):
            lm_eval_keys = {k: v for k, v in sample.items() if k not in ("stage", "missing")}
            assert _violations(samples, lm_eval_keys, 2) == set(), task


def test_the_shapes_are_those_of_lm_eval_s_own_files(world: World) -> None:
    """Every key lm-eval 0.4.13 writes at the top of results, in a task's results entry, in
    n-samples and in a sample, benchc writes too, with a value of the same JSON type (but the
    environment's: pretty_env_info, versions of lm-eval and transformers, chat template and
    system instruction, git hashes, which benchc has not)."""
    own = json.loads(next(FIXTURES.glob("completions/*/results_*.json")).read_text())
    ours = _results(world.run)
    environment = {"pretty_env_info", "transformers_version", "lm_eval_version", "upper_git_hash", "git_hash",
                   "system_instruction", "system_instruction_sha", "fewshot_as_multiturn", "chat_template",
                   "chat_template_sha"}
    assert set(own) - environment <= set(ours)
    for key in set(own) - environment:
        assert type(ours[key]) is type(own[key]) or own[key] is None, key
    their_task, our_task = own["results"]["capitals_qa"], ours["results"][f"{ACCURACY}_perturbation_jpeg"]
    assert {k for k in their_task if "," not in k} == {k for k in our_task if "," not in k}
    their_sample = json.loads(next(FIXTURES.glob("completions/*/samples_capitals_qa_*.jsonl")).open().readline())
    our_sample = _samples(world.run, f"{ACCURACY}_perturbation_jpeg")[0]
    for key, value in their_sample.items():
        if key != "exact_match":
            assert type(our_sample[key]) is type(value), key
    assert type(our_sample["accuracy"]) is type(their_sample["exact_match"])


def test_the_export_is_byte_for_byte_repeatable(world: World) -> None:
    folder = _folder(world.run)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    world.score(world.run, "--format", "lm-eval")
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


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
    assert "date" not in results and results["model_name"] == "imported"  # an import has no start time
    assert _folder(run).name == "imported" and next(_folder(run).glob("results_1970-01-01T00-00-00.json"))
    assert results["benchc"]["scoring_rules"] == plain["rules"]


def test_missing_answers_show_in_the_samples(world: World, tmp_path: Path) -> None:
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"item_id": a["item_id"], "response": a["response"]}) + "\n"
                               for a in world.answers()[1:]))
    run = tmp_path / "run"
    assert run_cli("import", world.manifest, answers, "-o", run, "--allow-missing") == 0
    world.score(run, "--format", "lm-eval")
    first = world.answers()[0]["item_id"]
    [sample] = [s for p in PERTURBATIONS for s in _samples(run, f"{ACCURACY}_perturbation_{p}")
                if s["doc"]["item_id"] == first]
    assert sample["missing"] == 1 and sample["resps"] == [[]] and sample["accuracy"] == 0.0
    assert _results(run)["benchc"]["imported"]["missing"] == 1


def test_an_unknown_format_is_refused(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli("score", world.run, "--format", "lmeval", *world.common)
    err = capsys.readouterr().err
    assert code == 2 and "unknown --format 'lmeval'" in err and "benchc, lm-eval" in err
