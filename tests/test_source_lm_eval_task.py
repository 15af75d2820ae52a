"""The ``lm_eval_task`` source (issue 29, first slice): lm-eval task YAMLs and their local data
give records whose ``lm_eval.prompt`` is what lm-eval 0.4.13 sends, byte for byte.

lm-eval is not installed here and never imported: the committed lm-eval sample logs
(tests/fixtures/peers, see its README) and, for the small tasks written below, prompts that
lm-eval 0.4.13 produced for the very same files (``lm_eval --model dummy --log_samples``, cwd =
the folder they are written to) are the reference.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import SourceError
from benchc.compiler.sources import SOURCES, LoadedSource, SourceContext

PEERS = Path(__file__).parent / "fixtures" / "peers"
SAMPLES = PEERS / "lm_eval" / "completions" / "gemma"


def load(root: Path, tmp_path: Path, on_error: str = "fail", **params: Any) -> tuple[LoadedSource, SourceContext]:
    ctx = SourceContext(roots=[root], store=ContentStore(tmp_path / "store"), on_error=on_error)
    loader = SOURCES.get("lm_eval_task")
    loaded = loader.load(loader.Params(**params), ctx)
    for record in loaded.records:
        assert record.digest  # fields are canonical JSON
    return loaded, ctx


def by_index(loaded: LoadedSource) -> dict[int, dict[str, Any]]:
    return {r.fields["lm_eval"]["index"]: r.fields["lm_eval"] for r in loaded.records}


def samples(task: str) -> list[dict[str, Any]]:
    (path,) = SAMPLES.glob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    return write(path, "".join(json.dumps(row) + "\n" for row in rows))


# --- the committed lm-eval logs -------------------------------------------------------------------


@pytest.mark.parametrize(("task", "docs", "lines", "shots"), [("gsm8k_local", 10, 20, 5), ("capitals_qa", 20, 20, 0)])
def test_prompts_and_targets_are_lm_evals_byte_for_byte(tmp_path: Path, task: str, docs: int, lines: int,
                                                        shots: int) -> None:
    loaded, _ = load(PEERS, tmp_path, task=f"tasks/lm_eval/{task}.yaml", data=".")
    records = by_index(loaded)
    assert len(records) == docs
    logged = samples(task)
    assert len(logged) == lines  # gsm8k: one line per document and filter
    for sample in logged:
        record = records[sample["doc_id"]]
        assert record["prompt"] == sample["arguments"]["gen_args_0"]["arg_0"]
        assert record["target"] == sample["target"]
        assert record["until"] == sample["arguments"]["gen_args_0"]["arg_1"]["until"]
        assert loaded.records[sample["doc_id"]].fields["question"] == sample["doc"]["question"]
    for record in records.values():
        assert record["prompt"] == record["fewshot"] + record["text"]
        assert len(record["fewshot_indices"]) == shots
        assert record["fewshot"] == "" or shots


def test_the_dummy_models_log_has_the_same_prompts(tmp_path: Path) -> None:
    loaded, _ = load(PEERS, tmp_path, task="tasks/lm_eval/capitals_qa.yaml", data=".")
    records = by_index(loaded)
    (path,) = (PEERS / "lm_eval" / "dummy").rglob("samples_capitals_qa_*.jsonl")
    logged = [json.loads(line) for line in path.read_text().splitlines()]
    assert [records[s["doc_id"]]["prompt"] for s in logged] == [s["arguments"]["gen_args_0"]["arg_0"] for s in logged]


def test_ids_files_and_fields(tmp_path: Path) -> None:
    loaded, _ = load(PEERS, tmp_path, task="tasks/lm_eval/gsm8k_local.yaml", data=".")
    assert [r.id for r in loaded.records][:3] == ["000000", "000001", "000002"]
    assert [(f.path, f.rows) for f in loaded.files] == [
        ("tasks/lm_eval/gsm8k_local.yaml", None), ("tasks/data/gsm8k_local_test.jsonl", 10),
        ("tasks/data/gsm8k_local_train.jsonl", 5)]
    first = loaded.records[0].fields
    assert set(first) == {"question", "answer", "lm_eval"}
    assert first["lm_eval"]["task"] == "gsm8k_local"
    assert first["lm_eval"]["choices"] is None and first["lm_eval"]["target_index"] is None
    assert first["lm_eval"]["targets"] == [first["answer"]]


def test_limit_and_num_fewshot(tmp_path: Path) -> None:
    full, _ = load(PEERS, tmp_path, task="tasks/lm_eval/gsm8k_local.yaml", data=".")
    first3, _ = load(PEERS, tmp_path, task="tasks/lm_eval/gsm8k_local.yaml", data=".", limit=3)
    assert [r.fields for r in first3.records] == [r.fields for r in full.records[:3]]
    zero, _ = load(PEERS, tmp_path, task="tasks/lm_eval/gsm8k_local.yaml", data=".", num_fewshot=0)
    assert all(r.fields["lm_eval"]["prompt"] == r.fields["lm_eval"]["text"] for r in zero.records)
    other, _ = load(PEERS, tmp_path, task="tasks/lm_eval/gsm8k_local.yaml", data=".", fewshot_seed=7)
    assert [r.fields["lm_eval"]["fewshot_indices"] for r in other.records] != \
        [r.fields["lm_eval"]["fewshot_indices"] for r in full.records]


# --- small tasks, with lm-eval 0.4.13's own prompts for them ----------------------------------------

TRAIN = [{"subject": "geo", "question": f"Train question {i}?", "choices": ["red", "green", "blue"], "label": i % 3}
         for i in range(4)]
TEST = [{"subject": ["geo", "math"][i % 2], "question": f"Test question {i}?", "choices": ["yes", "no"],
         "label": i % 2} for i in range(3)]
SAME = [{"question": f"What is {n}?", "answer": f"n{n}"} for n in (1, 2, 3, 2, 5, 6)]  # a duplicate document

BASE = """dataset_path: json
dataset_kwargs:
  data_files:
    train: data/train.jsonl
    test: data/test.jsonl
output_type: multiple_choice
doc_to_text: "{{question}}"
doc_to_choice: "{{choices}}"
doc_to_target: "{{label}}"
target_delimiter: ":"
fewshot_delimiter: "\\n###\\n"
description: "Base description\\n"
"""
STYLE = """description: "Subject: {{subject}}\\n"
fewshot_config:
  sampler: first_n
"""
CHAIN = """include:
  - common/base.yaml
  - common/style.yaml
task: chain
test_split: test
fewshot_split: train
target_delimiter: " "
num_fewshot: 2
"""
SAME_TASK = """task: same
dataset_path: json
dataset_kwargs:
  data_files:
    test: data/same.jsonl
test_split: test
fewshot_split: test
doc_to_text: "Q: {{question}}"
doc_to_target: answer
gen_prefix: "A:"
num_fewshot: 2
generation_kwargs:
  until: ["\\n"]
"""

LM_EVAL_CHAIN = [  # lm-eval 0.4.13's arg_0 and target for chain.yaml, doc by doc
    ("Subject: geo\nTrain question 0? red\n###\nTrain question 1? green\n###\nTest question 0?", "0"),
    ("Subject: math\nTrain question 0? red\n###\nTrain question 1? green\n###\nTest question 1?", "1"),
    ("Subject: geo\nTrain question 0? red\n###\nTrain question 1? green\n###\nTest question 2?", "0"),
]
LM_EVAL_SAME = [  # ... and for same.yaml (default sampler, seed 1234, each document left out of its examples)
    ("Q: What is 2? A: n2\n\nQ: What is 5? A: n5\n\nQ: What is 1? A:", "n1"),
    ("Q: What is 1? A: n1\n\nQ: What is 5? A: n5\n\nQ: What is 2? A:", "n2"),
    ("Q: What is 6? A: n6\n\nQ: What is 1? A: n1\n\nQ: What is 3? A:", "n3"),
    ("Q: What is 3? A: n3\n\nQ: What is 1? A: n1\n\nQ: What is 2? A:", "n2"),
    ("Q: What is 1? A: n1\n\nQ: What is 6? A: n6\n\nQ: What is 5? A:", "n5"),
    ("Q: What is 5? A: n5\n\nQ: What is 2? A: n2\n\nQ: What is 6? A:", "n6"),
]


def write_tasks(root: Path) -> None:
    """The small tasks, laid out as lm-eval read them (cwd = ``root``)."""
    jsonl(root / "data" / "train.jsonl", TRAIN)
    jsonl(root / "data" / "test.jsonl", TEST)
    jsonl(root / "data" / "same.jsonl", SAME)
    write(root / "tasks" / "common" / "base.yaml", BASE)
    write(root / "tasks" / "common" / "style.yaml", STYLE)
    write(root / "tasks" / "chain.yaml", CHAIN)
    write(root / "tasks" / "same.yaml", SAME_TASK)


def test_an_include_chain_merges_as_lm_eval_does(tmp_path: Path) -> None:
    write_tasks(tmp_path)
    loaded, _ = load(tmp_path, tmp_path, task="tasks/chain.yaml", data=".")
    got = [(r.fields["lm_eval"]["prompt"], r.fields["lm_eval"]["target"]) for r in loaded.records]
    assert got == LM_EVAL_CHAIN
    first = loaded.records[0].fields["lm_eval"]
    assert (first["choices"], first["target_index"], first["targets"]) == (["yes", "no"], 0, ["yes"])
    assert first["output_type"] == "multiple_choice" and first["until"] is None
    assert first["target_delimiter"] == " "  # the including file's own key wins
    assert [f.path for f in loaded.files][:3] == ["tasks/chain.yaml", "tasks/common/base.yaml",
                                                  "tasks/common/style.yaml"]


def test_same_split_few_shot_leaves_the_document_out(tmp_path: Path) -> None:
    write_tasks(tmp_path)
    loaded, _ = load(tmp_path, tmp_path, task="tasks/same.yaml", data=".")
    got = [(r.fields["lm_eval"]["prompt"], r.fields["lm_eval"]["target"]) for r in loaded.records]
    assert got == LM_EVAL_SAME
    for record in loaded.records:
        shots = record.fields["lm_eval"]["fewshot_indices"]
        assert all(SAME[i] != SAME[int(record.id)] for i in shots)


def test_yaml_data_files_are_relative_to_the_yaml_without_data(tmp_path: Path) -> None:
    write_tasks(tmp_path)
    shutil.copytree(tmp_path / "data", tmp_path / "tasks" / "data")
    loaded, _ = load(tmp_path, tmp_path, task="tasks/chain.yaml")
    assert [r.fields["lm_eval"]["prompt"] for r in loaded.records] == [p for p, _ in LM_EVAL_CHAIN]
    assert "tasks/data/test.jsonl" in [f.path for f in loaded.files]


LEGS_TASK = """task: legs
dataset_path: csv
dataset_kwargs:
  data_files:
    train: data/legs_train.csv
    validation: data/legs_val.csv
training_split: train
validation_split: validation
doc_to_text: "Question: {{question}} ({{note}})"
doc_to_target: "{{answer}}"
gen_prefix: "Answer:"
num_fewshot: 2
generation_kwargs:
  max_gen_toks: 5
"""
LEGS_TRAIN = "question,answer,note\n" + "".join(f"Train legs {i}?,{i + 1},{'abcd'[i]}\n" for i in range(4))
LEGS_VAL = "question,answer,note\n" + "".join(
    f"How many legs has animal {i}?,{legs},{note}\n" for i, (legs, note) in enumerate(zip(
        [4, 2, 6, 8, 4, 2, 6, 0], ["x", "", "y", "z", "w", "v", "u", "t"])))
LM_EVAL_LEGS = [  # no fewshot_split and no test_split: None == None, so lm-eval leaves the document
    # out of examples drawn from the training split (drawing 3 to keep 2)
    ("Question: Train legs 3? (d) Answer: 4\n\nQuestion: Train legs 0? (a) Answer: 1\n\n"
     "Question: How many legs has animal 0? (x) Answer:", "4"),
    ("Question: Train legs 0? (a) Answer: 1\n\nQuestion: Train legs 2? (c) Answer: 3\n\n"
     "Question: How many legs has animal 1? (None) Answer:", "2"),
    ("Question: Train legs 0? (a) Answer: 1\n\nQuestion: Train legs 3? (d) Answer: 4\n\n"
     "Question: How many legs has animal 2? (y) Answer:", "6"),
    ("Question: Train legs 1? (b) Answer: 2\n\nQuestion: Train legs 0? (a) Answer: 1\n\n"
     "Question: How many legs has animal 3? (z) Answer:", "8"),
    ("Question: Train legs 0? (a) Answer: 1\n\nQuestion: Train legs 1? (b) Answer: 2\n\n"
     "Question: How many legs has animal 4? (w) Answer:", "4"),
    ("Question: Train legs 3? (d) Answer: 4\n\nQuestion: Train legs 0? (a) Answer: 1\n\n"
     "Question: How many legs has animal 5? (v) Answer:", "2"),
    ("Question: Train legs 1? (b) Answer: 2\n\nQuestion: Train legs 2? (c) Answer: 3\n\n"
     "Question: How many legs has animal 6? (u) Answer:", "6"),
    ("Question: Train legs 0? (a) Answer: 1\n\nQuestion: Train legs 2? (c) Answer: 3\n\n"
     "Question: How many legs has animal 7? (t) Answer:", "0"),
]


def test_csv_data_gen_prefix_and_the_training_split_fallback(tmp_path: Path) -> None:
    write(tmp_path / "tasks" / "legs.yaml", LEGS_TASK)
    write(tmp_path / "data" / "legs_train.csv", LEGS_TRAIN)
    write(tmp_path / "data" / "legs_val.csv", LEGS_VAL)
    loaded, _ = load(tmp_path, tmp_path, task="tasks/legs.yaml", data=".")
    assert [(r.fields["lm_eval"]["prompt"], r.fields["lm_eval"]["target"]) for r in loaded.records] == LM_EVAL_LEGS
    assert loaded.records[1].fields["note"] is None
    assert loaded.records[0].fields["lm_eval"]["until"] == ["\n\n"]  # no until: the few-shot delimiter


# --- refusals -------------------------------------------------------------------------------------


def test_a_function_is_refused_naming_it_and_its_key(tmp_path: Path) -> None:
    write_tasks(tmp_path)
    write(tmp_path / "tasks" / "fn.yaml", SAME_TASK.replace("task: same", "task: fn").replace(
        'doc_to_text: "Q: {{question}}"', "doc_to_text: !function utils.doc_to_text"))
    with pytest.raises(SourceError) as refused:
        load(tmp_path, tmp_path, task="tasks/fn.yaml", data=".")
    assert refused.value.exit_code == 2
    (problem,) = refused.value.problems
    assert (problem.file, problem.key) == ("tasks/fn.yaml", "doc_to_text")
    first_line = refused.value.render().splitlines()[0]
    assert "!function utils.doc_to_text" in first_line and "doc_to_text" in first_line
    assert "not run" in refused.value.render()


def test_a_function_in_an_included_file_names_that_file(tmp_path: Path) -> None:
    write_tasks(tmp_path)
    write(tmp_path / "tasks" / "common" / "style.yaml", STYLE.replace("sampler: first_n",
                                                                      "samples: !function utils.list_fewshot"))
    with pytest.raises(SourceError) as refused:
        load(tmp_path, tmp_path, task="tasks/chain.yaml", data=".")
    (problem,) = refused.value.problems
    assert (problem.file, problem.line, problem.key) == ("tasks/common/style.yaml", 3, "fewshot_config.samples")
    assert "utils.list_fewshot" in problem.message


@pytest.mark.parametrize("where", ["task", "include", "data_files", "data"])
def test_a_path_escaping_the_roots_is_refused(tmp_path: Path, where: str) -> None:
    root = tmp_path / "root"
    write_tasks(root)
    jsonl(tmp_path / "secret.jsonl", SAME)
    params: dict[str, Any] = {"task": "tasks/same.yaml", "data": "."}
    if where == "task":
        write(tmp_path / "outside.yaml", SAME_TASK)
        params["task"] = "../outside.yaml"
    elif where == "include":
        write(tmp_path / "outside.yaml", "doc_to_text: x\n")
        write(root / "tasks" / "same.yaml", "include: ../../outside.yaml\n" + SAME_TASK)
    elif where == "data_files":
        write(root / "tasks" / "same.yaml", SAME_TASK.replace("data/same.jsonl", "../secret.jsonl"))
    else:
        params["data"] = ".."
    with pytest.raises(SourceError, match="escapes the data roots"):
        load(root, tmp_path, **params)


def test_a_hub_dataset_needs_local_data(tmp_path: Path) -> None:
    write(tmp_path / "hub.yaml", "task: hub\ndataset_path: openai/gsm8k\ndataset_name: main\ntest_split: test\n"
                                 "doc_to_text: '{{question}}'\ndoc_to_target: answer\n")
    with pytest.raises(SourceError, match="nothing is fetched"):
        load(tmp_path, tmp_path, task="hub.yaml")


def test_a_group_and_unknown_keys_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "group.yaml", "group: g\ntask: [a, b]\n")
    write(tmp_path / "typo.yaml", SAME_TASK.replace("num_fewshot", "numfewshot"))
    with pytest.raises(SourceError, match="not a single task"):
        load(tmp_path, tmp_path, task="group.yaml")
    with pytest.raises(SourceError, match="unknown task key.*numfewshot"):
        load(tmp_path, tmp_path, task="typo.yaml")


def test_too_few_documents_for_the_few_shot_draw(tmp_path: Path) -> None:
    """lm-eval draws n + 1 to leave the document out, so 6 documents give at most 5 shots (and 4
    here, where one document has a copy that is left out too)."""
    write_tasks(tmp_path)
    assert len(load(tmp_path, tmp_path, task="tasks/same.yaml", data=".", num_fewshot=4)[0].records) == 6
    with pytest.raises(SourceError, match="7 few-shot documents to draw .6 and one more"):
        load(tmp_path, tmp_path, task="tasks/same.yaml", data=".", num_fewshot=6)


def test_a_bad_line_names_its_file_and_line(tmp_path: Path) -> None:
    write_tasks(tmp_path)
    path = tmp_path / "data" / "same.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(SourceError) as failed:
        load(tmp_path, tmp_path, task="tasks/same.yaml", data=".")
    assert "data/same.jsonl:7" in failed.value.render()
    loaded, ctx = load(tmp_path, tmp_path, on_error="skip", task="tasks/same.yaml", data=".")
    assert len(loaded.records) == 6 and len(ctx.skipped) == 1


def test_a_template_error_is_a_bad_row(tmp_path: Path) -> None:
    write_tasks(tmp_path)
    jsonl(tmp_path / "data" / "same.jsonl", [*SAME[:2], {"answer": "no question"}, *SAME[3:]])
    # a missing field is None in every document (datasets fills the column), so it renders as
    # "None"; calling a method on it fails
    write(tmp_path / "tasks" / "same.yaml", SAME_TASK.replace("{{question}}", "{{question.upper()}}"))
    loaded, ctx = load(tmp_path, tmp_path, on_error="skip", task="tasks/same.yaml", data=".", num_fewshot=0)
    assert [r.id for r in loaded.records] == ["000000", "000001", "000003", "000004", "000005"]
    (problem,) = ctx.skipped
    assert problem.file == "data/same.jsonl" and problem.line == 3 and "doc_to_text" in problem.message


# --- the lock: the YAML's text and the data are digested ------------------------------------------


def test_digests_follow_the_yaml_and_the_data(tmp_path: Path) -> None:
    write_tasks(tmp_path)

    def digests() -> dict[str, str]:
        loaded, _ = load(tmp_path, tmp_path, task="tasks/chain.yaml", data=".")
        return {f.path: f.sha256 for f in loaded.files}

    before = digests()
    assert set(before) == {"tasks/chain.yaml", "tasks/common/base.yaml", "tasks/common/style.yaml",
                           "data/train.jsonl", "data/test.jsonl"}
    write(tmp_path / "tasks" / "common" / "base.yaml", "# a comment\n" + BASE)
    after_yaml = digests()
    assert {k for k in before if before[k] != after_yaml[k]} == {"tasks/common/base.yaml"}
    jsonl(tmp_path / "data" / "train.jsonl", TRAIN[::-1])
    after_data = digests()
    assert {k for k in before if after_yaml[k] != after_data[k]} == {"data/train.jsonl"}


# --- other layouts of the data ----------------------------------------------------------------------


def test_a_hub_dataset_from_a_folder_of_its_parquet_files(tmp_path: Path) -> None:
    """lm-eval's own gsm8k.yaml names openai/gsm8k; its files (main/<split>-....parquet, the hub's
    layout) under ``data`` give the same prompts as the local-JSONL copy of the task."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "root"
    shutil.copytree(PEERS / "tasks", root / "tasks")
    for split in ("train", "test"):
        rows = [json.loads(line) for line in (root / "tasks" / "data" / f"gsm8k_local_{split}.jsonl").open()]
        (root / "hub" / "main").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), root / "hub" / "main" / f"{split}-00000-of-00001.parquet")
    local = (root / "tasks" / "lm_eval" / "gsm8k_local.yaml").read_text()
    start, end = local.index("dataset_path"), local.index("output_type")
    write(root / "gsm8k.yaml", local[:start] + "dataset_path: openai/gsm8k\ndataset_name: main\n" + local[end:])
    hub, _ = load(root, tmp_path, task="gsm8k.yaml", data="hub")
    json_task, _ = load(root, tmp_path, task="tasks/lm_eval/gsm8k_local.yaml", data="tasks/..")
    assert [r.fields for r in hub.records] == [r.fields for r in json_task.records]
    assert [f.path for f in hub.files][1:] == ["hub/main/test-00000-of-00001.parquet",
                                               "hub/main/train-00000-of-00001.parquet"]


def test_a_saved_dataset_folder(tmp_path: Path) -> None:
    import datasets

    write_tasks(tmp_path)
    splits = {"train": TRAIN, "test": TEST}
    datasets.DatasetDict({k: datasets.Dataset.from_list(v) for k, v in splits.items()}).save_to_disk(
        str(tmp_path / "saved"))
    loaded, _ = load(tmp_path, tmp_path, task="tasks/chain.yaml", data="saved")
    assert [(r.fields["lm_eval"]["prompt"], r.fields["lm_eval"]["target"]) for r in loaded.records] == LM_EVAL_CHAIN
    assert [f.path for f in loaded.files][3:] == ["saved/test", "saved/train"]
