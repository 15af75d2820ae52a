"""`benchc import`: answers produced outside benchc become a run folder that `benchc score` and
`benchc report` read as they read one of `benchc run`. End to end through the CLI (in-process,
``benchc.cli.main``): a bundled spec whose prompts repeat over media (easy-VQA image invariance:
one question, eight images) is compiled and run on a model whose answers depend on the image;
its answers are exported as JSONL by item id, CSV by prompt + media sha256, and lm-eval
samples, imported into new run folders, and scored: every score must be the original's.
Unmatched, ambiguous, repeated and missing rows are refused with file:line, or counted with
their flag; never guessed."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from support.hashed_answers import MODEL, SPEC, World, run_cli as _main


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = _main(*args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_error(code: int, err: str) -> None:
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("import"))


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _by_id(world: World, path: Path, skip: int = 0) -> Path:
    return _jsonl(path, [{"item_id": a["item_id"], "response": a["response"]} for a in world.answers()[skip:]])


def _same_scores(original: dict[str, Any], imported: dict[str, Any]) -> None:
    """Every metric's columns, rows and details equal; the import's notes add only its own."""
    assert imported["manifest_digest"] == original["manifest_digest"]
    assert imported["items"] == original["items"]
    assert len(imported["metrics"]) == len(original["metrics"]) > 0
    for a, b in zip(original["metrics"], imported["metrics"]):
        assert (b["name"], b["columns"], b["rows"], b["details"]) == (a["name"], a["columns"], a["rows"], a["details"])
        assert b["notes"][:len(a["notes"])] == a["notes"]
        assert any("imported with `benchc import`" in n for n in b["notes"][len(a["notes"]):])


# the same scores from every format ------------------------------------------------------------

def test_jsonl_by_item_id_scores_as_the_run(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    answers = _by_id(world, world.root / "by_id.jsonl")
    code, out, _ = _cli(capsys, "import", world.manifest, answers, "-o", world.root / "r-id", "--model", MODEL)
    assert code == 0 and "imported 192 answer(s) (jsonl, by id) for 192 item(s)" in out
    _same_scores(world.scores, world.score(world.root / "r-id"))
    assert json.loads((world.root / "r-id" / "scores.json").read_text())["model"] == MODEL


def test_csv_by_prompt_and_media_scores_as_the_run(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    path = world.root / "by_prompt.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["prompt", "media_sha256", "answer"])
        for a in reversed(world.answers()):  # order does not matter; answers hold newlines
            writer.writerow([a["prompt"], " ".join(a["media_sha256"]), a["response"]])
    first = world.answers()[0]["prompt"]
    assert len({a["response"] for a in world.answers() if a["prompt"] == first}) > 1  # the image matters
    code, out, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-prompt", "--key", "prompt")
    assert code == 0, err
    assert "(csv, by prompt)" in out
    _same_scores(world.scores, world.score(world.root / "r-prompt"))


@pytest.mark.parametrize("key", ["id", "prompt"])
def test_lm_eval_samples_score_as_the_run(world: World, key: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`benchc score --format lm-eval`'s samples file, read back by doc.item_id or by the prompt in
    arguments with doc.media_sha256 (--format auto tells it from plain JSONL)."""
    run = world.root / f"r-lm-{key}"
    code, out, err = _cli(capsys, "import", world.manifest, world.samples, "-o", run, "--key", key)
    assert code == 0, err
    assert f"(lm-eval, by {key})" in out
    _same_scores(world.scores, world.score(run))
    record = json.loads((run / "run.json").read_text())
    assert record["imported"]["answer_field"] == "resps" and record["imported"]["format"] == "lm-eval"


def test_an_lm_eval_output_folder_is_read_whole(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """The folder `score --format lm-eval` wrote (as lm-eval writes --output_path: a samples file per
    task under the model's folder): every task's file of its latest run is read; a doc in two
    tasks' files with the same answer counts once; an older run beside it is not read."""
    run = world.root / "r-folder"
    model_folder = next(world.lm_eval.glob("*/"))
    older = model_folder / "samples_examples_old_1999-01-01T00-00-00.jsonl"
    older.write_text('{"doc_id": 0, "doc": {"item_id": "nowhere"}, "resps": [["x"]], "filtered_resps": ["x"]}\n')
    try:
        code, out, err = _cli(capsys, "import", world.manifest, world.lm_eval, "-o", run)
    finally:
        older.unlink()
    assert code == 0, err
    files = len(list(model_folder.glob("samples_*.jsonl")))
    assert "imported 192 answer(s) (lm-eval, by id)" in out and "identical repeated row(s)" in out
    assert f"read {files} samples file(s) of the run of " in out and "1 older run(s) beside it not read" in out
    _same_scores(world.scores, world.score(run))
    # a conflicting answer in another task's file names both files and lines
    bad = world.root / "bad-folder" / "m"
    shutil.copytree(model_folder, bad, ignore=shutil.ignore_patterns("media"))
    first = sorted(bad.glob("samples_*accuracy*"))[0]
    lines = first.read_text().splitlines()
    sample = json.loads(lines[0])
    sample["resps"] = [["something else"]]
    first.write_text("\n".join([json.dumps(sample), *lines[1:]]) + "\n")
    code, _, err = _cli(capsys, "import", world.manifest, bad.parent, "-o", world.root / "r-bad")
    _one_error(code, err)
    assert f"m/{first.name} line 1 and m/" in err and not (world.root / "r-bad").exists()
    code, _, err = _cli(capsys, "import", world.manifest, world.root / "bad-folder" / "nothing", "-o", run)
    assert code == 2


def test_older_sample_layouts_are_read(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """arguments as a list of argument lists (lmms-eval, lm-eval before its gen_args_N keys), and
    a file with filtered_resps but no resps."""
    old = []
    for sample in map(json.loads, world.samples.open()):
        args = sample["arguments"]["gen_args_0"]
        old.append({"doc_id": sample["doc_id"], "doc": {"media_sha256": [m["sha256"] for m in sample["doc"]["media"]]},
                    "arguments": [[args["arg_0"], json.dumps(args["arg_1"])]],
                    "filtered_resps": [sample["resps"][0][0]]})
    path = _jsonl(world.root / "lmms.jsonl", old)
    code, out, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-lmms", "--key", "prompt",
                          "--format", "lmms-eval")
    assert code == 0, err
    _same_scores(world.scores, world.score(world.root / "r-lmms"))
    code, _, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-lmms-id")
    _one_error(code, err)
    assert f"{path}:1: the sample's doc has no doc.item_id or doc.id" in err and "--key prompt" in err


def test_lm_eval_logs_a_doc_once_per_filter(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """lm-eval writes one sample per (doc, filter): one filter's lines are read (the file's first,
    or --filter), and the import says which."""
    samples = [json.loads(line) for line in world.samples.read_text().splitlines()]
    path = _jsonl(world.root / "two_filters.jsonl",
                  [s for sample in samples for s in (sample, {**sample, "filter": "take_first"})])
    code, out, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-filters",
                          "--format", "lmms-eval", "--filter", "take_first")
    assert code == 0, err
    assert "imported 192 answer(s)" in out and "identical repeated" not in out
    assert "read lm-eval filter 'take_first' of 'first_line+normalize', 'take_first' (--filter)" in out
    imported = json.loads((world.root / "r-filters" / "run.json").read_text())["imported"]
    assert imported["format"] == "lmms-eval" and "'take_first'" in imported["read"]
    _same_scores(world.scores, world.score(world.root / "r-filters"))


def test_report_reads_an_import_and_says_so(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    run = world.root / "r-report"
    assert _main("import", world.manifest, _by_id(world, world.root / "report.jsonl"), "-o", run) == 0
    world.score(run)
    capsys.readouterr()
    code, out, err = _cli(capsys, "report", run, *world.common)
    assert code == 0, err
    assert "Answers imported with" in out and "from report.jsonl" in out  # Markdown escapes the backticks
    assert "answer=imported@" in out  # the provenance footer names the pseudo-backend


def test_the_run_record_says_what_was_imported(world: World) -> None:
    answers = _by_id(world, world.root / "record.jsonl")
    runs = [world.root / "r-rec-a", world.root / "r-rec-b"]
    for run in runs:
        assert _main("import", world.manifest, answers, "-o", run, "--model", "gpt-x") == 0
    record = json.loads((runs[0] / "run.json").read_text())
    lock = json.loads((world.manifest / "lock.json").read_text())
    imported = record["imported"]
    assert imported["source_sha256"] == hashlib.sha256(answers.read_bytes()).hexdigest()
    assert (imported["format"], imported["key"], imported["answer_field"]) == ("jsonl", "id", "response")
    assert (imported["rows"], imported["answers"], imported["expected"], imported["missing"]) == (192, 192, 192, 0)
    assert imported["checked_against"] == {"manifest_digest": lock["manifest_digest"],
                                           "spec_digest": lock["spec_digest"]}
    assert record["manifest_digest"] == lock["manifest_digest"] and record["model"] == "gpt-x"
    assert record["stages"][0]["backend"] == "imported" and record["backends"]["answer"]["backend"] == "imported"
    assert "started" not in record  # no timestamps: the same import writes the same bytes
    for name in ("run.json", "responses.parquet"):
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes()


# refused, never guessed -------------------------------------------------------------------------

def test_a_row_of_no_item_is_refused_or_skipped_on_request(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"item_id": a["item_id"], "response": a["response"]} for a in world.answers()]
    rows.insert(10, {"item_id": "train/999999#original", "response": "red"})
    path = _jsonl(world.root / "unmatched.jsonl", rows)
    code, _, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-unmatched")
    _one_error(code, err)
    assert f"{path}:11: 1 row(s) match no item of the manifest: line 11: no item 'train/999999#original'" in err
    assert "--ignore-unmatched" in err and not (world.root / "r-unmatched").exists()
    code, out, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-unmatched",
                          "--ignore-unmatched")
    assert code == 0, err
    assert "1 row(s) of items outside the manifest skipped" in out
    assert json.loads((world.root / "r-unmatched" / "run.json").read_text())["imported"]["unmatched_ignored"] == 1


def test_conflicting_answers_are_refused_and_identical_ones_counted(world: World,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"item_id": a["item_id"], "response": a["response"]} for a in world.answers()]
    same = _jsonl(world.root / "repeat.jsonl", rows + [dict(rows[3])])
    code, out, err = _cli(capsys, "import", world.manifest, same, "-o", world.root / "r-repeat")
    assert code == 0, err
    assert "1 identical repeated row(s) counted once" in out
    assert json.loads((world.root / "r-repeat" / "run.json").read_text())["imported"]["identical_repeats"] == 1
    conflict = _jsonl(world.root / "conflict.jsonl", rows + [{**rows[3], "response": rows[3]["response"] + "!"}])
    code, _, err = _cli(capsys, "import", world.manifest, conflict, "-o", world.root / "r-conflict")
    _one_error(code, err)
    assert f"{conflict}:193: 1 answer(s) given twice with different texts" in err
    assert f"item {rows[3]['item_id']!r} on lines 4 and 193" in err
    assert not (world.root / "r-conflict").exists()


def test_one_prompt_over_several_images_needs_the_media(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    path = world.root / "no_media.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["prompt", "answer"])
        writer.writerows([a["prompt"], a["response"]] for a in world.answers())
    code, _, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-ambiguous", "--key", "prompt")
    _one_error(code, err)
    assert f"{path}:2: 192 row(s) match several items: line 2: 8 items have prompt" in err
    assert "give each row the item's media in 'media_sha256'" in err


def test_missing_answers_are_refused_or_recorded(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    path = _by_id(world, world.root / "missing.jsonl", skip=3)
    dropped = [a["item_id"] for a in world.answers()[:3]]
    code, _, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-missing")
    _one_error(code, err)
    assert f"3 of 192 answers are missing (192 items in the manifest), e.g. {dropped[0]!r}" in err
    assert "--allow-missing" in err and not (world.root / "r-missing").exists()
    code, out, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-missing", "--allow-missing")
    assert code == 0, err
    assert "3 of 192 answer(s) missing, recorded as unanswered" in out
    record = json.loads((world.root / "r-missing" / "run.json").read_text())
    assert record["imported"]["missing"] == 3 and record["stages"][0]["missing"] == 3
    assert record["imported"]["missing_examples"] == [repr(i) for i in dropped]
    scores = world.score(world.root / "r-missing")
    accuracy = scores["metrics"][0]
    assert any("3 of 192 answers were missing" in n for n in accuracy["notes"])
    # a missing answer is wrong: the correct count drops by the dropped items that were right
    per_item = {s["doc"]["item_id"]: s["accuracy"] for s in map(json.loads, world.samples.open())}

    def correct(metric: dict[str, Any]) -> float:
        return sum(r["accuracy"] * r["items"] / 100 for r in metric["rows"])

    assert correct(world.scores["metrics"][0]) - correct(accuracy) == pytest.approx(sum(per_item[i] for i in dropped),
                                                                                  abs=1e-3)


@pytest.mark.parametrize("content,fragments", [
    ('{"item_id": "a", "response": "x"}\n{"item_id": "b", "response": "y"}\nnot json\n',
     [":3: line 3 is not JSON", "one JSON object per line"]),
    ('{"item_id": "a", "answer": "x", "response": "y"}\n', [":1: several answer columns: 'response', 'answer'",
                                                            "--answer-column"]),
    ('{"item_id": "a", "text": "x"}\n', [":1: no answer column (response or answer or prediction or output); "
                                         "found 'item_id', 'text'", "name it with --answer-column"]),
    ('{"item_id": "a", "response": null}\n', [":1: 'response' is missing, not text"]),
    ('["a", "x"]\n', [":1: line 1 is a JSON list, not an object"]),
])
def test_a_bad_file_is_one_message_with_its_line(world: World, capsys: pytest.CaptureFixture[str], content: str,
                                                 fragments: list[str]) -> None:
    path = world.root / "bad.jsonl"
    path.write_text(content)
    code, _, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-bad")
    _one_error(code, err)
    assert all(f"{path}{f}" in err or f in err for f in fragments), err
    assert not (world.root / "r-bad").exists()


def test_the_answer_column_can_be_named(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": a["item_id"], "answer": "gold", "response": a["response"]} for a in world.answers()]
    path = _jsonl(world.root / "named.jsonl", rows)
    code, _, err = _cli(capsys, "import", world.manifest, path, "-o", world.root / "r-named",
                        "--answer-column", "response")
    assert code == 0, err
    _same_scores(world.scores, world.score(world.root / "r-named"))


def test_a_modified_manifest_or_a_foreign_folder_is_refused(world: World, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    answers = _by_id(world, tmp_path / "a.jsonl")
    edited = tmp_path / "manifest"
    shutil.copytree(world.manifest, edited)
    spec = edited / "spec.json"
    spec.write_text(spec.read_text().replace("Answer with one word.", "Answer in one word."))
    code, _, err = _cli(capsys, "import", edited, answers, "-o", tmp_path / "r")
    _one_error(code, err)
    assert "modified after compile" in err and not (tmp_path / "r").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    code, _, err = _cli(capsys, "import", world.manifest, answers, "-o", tmp_path / "mine")
    _one_error(code, err)
    assert "is not a benchc run folder" in err and (tmp_path / "mine" / "notes.txt").exists()


def test_unknown_format_or_key_is_refused(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    answers = _by_id(world, world.root / "opts.jsonl")
    code, _, err = _cli(capsys, "import", world.manifest, answers, "-o", world.root / "r-opts", "--format", "parquet")
    _one_error(code, err)
    assert "unknown --format 'parquet'" in err
    code, _, err = _cli(capsys, "import", world.manifest, answers, "-o", world.root / "r-opts", "--key", "hash")
    _one_error(code, err)
    assert "unknown --key 'hash'" in err


def test_several_samples_per_item_are_matched_by_their_index(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """generation.n = 2: a `sample` column says which answer is which; a missing second sample
    and a third one are both named."""
    common = ["--cache", tmp_path / "cache", "--store", tmp_path / "store"]
    manifest, run = tmp_path / "m", tmp_path / "r"
    assert _main("compile", SPEC, "-o", manifest, "--set", "generation.n=2", "--set", "sample.n=4",
                 "--set", "generation.temperature=0.7", *common) == 0
    assert _main("run", manifest, "-o", run, "--model", MODEL, *common) == 0
    assert _main("score", run, *common) == 0
    responses = pl.read_parquet(run / "responses.parquet")
    rows = [{"item_id": r["item_id"], "sample": r["sample"], "response": r["text"]}
            for r in responses.iter_rows(named=True)]
    assert {r["sample"] for r in rows} == {0, 1} and len(rows) == 64
    path = _jsonl(tmp_path / "samples.jsonl", rows[::-1])
    assert _main("import", manifest, path, "-o", tmp_path / "r2", "--model", MODEL) == 0
    assert _main("score", tmp_path / "r2", *common) == 0
    _same_scores(json.loads((run / "scores.json").read_text()),
                 json.loads((tmp_path / "r2" / "scores.json").read_text()))
    capsys.readouterr()
    second = next(r for r in rows if r["sample"] == 1)
    short = _jsonl(tmp_path / "short.jsonl", [r for r in rows if r is not second] + [{**second, "sample": 2}])
    code, _, err = _cli(capsys, "import", manifest, short, "-o", tmp_path / "r3")
    _one_error(code, err)
    assert f"item {second['item_id']!r} sample 2, but the spec asks 2 sample(s) per item" in err
    assert (f"1 of 64 answers are missing (32 items in the manifest), e.g. {second['item_id']!r} "
            "(stage answer, sample 1)") in err


def test_an_import_and_its_run_agree_item_by_item(world: World) -> None:
    """`benchc diff-runs` between a run and the import of its answers finds nothing changed."""
    from benchc import api

    run = world.root / "r-diff"
    assert _main("import", world.manifest, _by_id(world, world.root / "diff.jsonl"), "-o", run) == 0
    diff = api.diff_runs(world.run, run)
    assert (diff.paired, diff.only_a, diff.only_b, diff.answers_changed) == (192, 0, 0, 0)
    correct = {m.name: m for m in diff.measures}["correct"]
    assert correct.mean_a == correct.mean_b and not correct.flipped.get("gained") and not correct.flipped.get("lost")


def test_a_spec_scored_on_two_stages_takes_a_stage_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """MERLIM counting: the metric reads the count and its follow-up; rows say their stage."""
    common = ["--cache", tmp_path / "cache", "--store", tmp_path / "store"]
    manifest, run = tmp_path / "m", tmp_path / "r"
    assert _main("compile", SPEC.parents[1] / "merlim" / "counting.toml", "-o", manifest, *common) == 0
    assert _main("run", manifest, "-o", run, "--model", MODEL, *common) == 0
    assert _main("score", run, *common) == 0
    rows = [{"item_id": r["item_id"], "stage": r["stage"], "response": r["text"]}
            for r in pl.read_parquet(run / "responses.parquet").iter_rows(named=True)]
    assert {r["stage"] for r in rows} == {"count", "follow_up"}
    path = _jsonl(tmp_path / "two.jsonl", rows)
    assert _main("import", manifest, path, "-o", tmp_path / "r2", "--model", MODEL) == 0
    assert _main("score", tmp_path / "r2", *common) == 0
    _same_scores(json.loads((run / "scores.json").read_text()),
                 json.loads((tmp_path / "r2" / "scores.json").read_text()))
    capsys.readouterr()
    counts = _jsonl(tmp_path / "counts.jsonl", [{k: v for k, v in r.items() if k != "stage"} for r in rows
                                                 if r["stage"] == "count"])
    code, _, err = _cli(capsys, "import", manifest, counts, "-o", tmp_path / "r3")
    _one_error(code, err)
    assert f"{counts}:1: the metrics read stages count, follow_up and this row names none" in err
    code, _, err = _cli(capsys, "import", manifest, counts, "-o", tmp_path / "r3", "--stage", "count")
    _one_error(code, err)
    assert "40 of 80 answers are missing (40 items in the manifest)" in err and "(stage follow_up, sample 0)" in err
