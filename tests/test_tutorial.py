"""docs/tutorial.md works as written, and ``benchc new`` (benchc/scaffold.py) writes specs that do.

The tutorial: every ```sh block, in order, runs in one bash shell in an empty folder (the
environment's bin folder first on PATH, as with the venv activated), each block must succeed, and
the numbers the tutorial states (its report tables, its by-hand bootstrap, its per-item answers)
must be the run's. The shell runs in its own process group, which is killed at the end, so a
failed block never leaves the rule server running.

The scaffold: specs written for tables (text and image kinds, odd column names) and image
folders pass ``benchc validate --data`` and ``benchc compile``; a scaffolded paraphrase spec on
the tutorial's data scores what the tutorial computes; refusals (no id column, an existing
file, data outside the spec's folder) are clear errors.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchc.scaffold import ScaffoldError, default_out, scaffold
from conftest import ROOT, cli

TUTORIAL = ROOT / "docs" / "tutorial.md"
BIN = Path(sys.executable).parent
BLOCK_MARK = "### tutorial block "


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```[ \t]*$", text, re.S | re.M)


def stated_tables(text: str) -> list[list[str]]:
    """The Markdown tables of the tutorial's ```text blocks (the report as it states it)."""
    tables = []
    for block in re.findall(r"^```text\n(.*?)^```[ \t]*$", text, re.S | re.M):
        current: list[str] = []
        for line in block.splitlines() + [""]:
            if line.startswith("|"):
                current.append(line)
            elif current:
                tables.append(current)
                current = []
    return tables


@dataclass
class Run:
    folder: Path
    returncode: int
    output: str

    def block_output(self, containing: str) -> str:
        """What the tutorial's first ```sh block with ``containing`` in it printed."""
        number = next(i for i, block in enumerate(sh_blocks(TUTORIAL.read_text()), 1) if containing in block)
        for part in self.output.split(BLOCK_MARK)[1:]:
            head, _, rest = part.partition("\n")
            if head.strip() == str(number):
                return rest
        raise AssertionError(f"block {number} did not run:\n{self.output[-3000:]}")


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory: pytest.TempPathFactory) -> Run:
    folder = tmp_path_factory.mktemp("tutorial")
    blocks = sh_blocks(TUTORIAL.read_text())
    script = "set -eo pipefail\n" + "".join(f"echo '{BLOCK_MARK}{i}'\n{block}" for i, block in enumerate(blocks, 1))
    script_path = folder.parent / f"{folder.name}.sh"  # outside the folder: it starts empty
    script_path.write_text(script)
    assert (BIN / "benchc").exists(), f"benchc is not installed next to {sys.executable}"
    local = "127.0.0.1,localhost"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "NO_PROXY": ",".join(filter(None, [local, os.environ.get("NO_PROXY")])),
           "no_proxy": ",".join(filter(None, [local, os.environ.get("no_proxy")]))}
    process = subprocess.Popen(["bash", str(script_path)], cwd=folder, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        output = "(timed out)"
    finally:
        try:  # the rule server, if a block failed before the tutorial stopped it
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    return Run(folder, process.returncode, output)


def test_every_sh_block_runs_in_order(tutorial: Run) -> None:
    blocks = sh_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 10
    assert tutorial.returncode == 0, f"a tutorial block failed:\n{tutorial.output[-6000:]}"
    assert f"{BLOCK_MARK}{len(blocks)}" in tutorial.output
    assert "Traceback" not in tutorial.output


def test_the_rule_server_was_stopped(tutorial: Run) -> None:
    assert tutorial.returncode == 0
    assert "rule server: stopped" in tutorial.output
    assert not (tutorial.folder / "port.txt").exists()  # removed by a clean stop


def test_the_report_has_the_tables_the_tutorial_states(tutorial: Run) -> None:
    tables = stated_tables(TUTORIAL.read_text())
    assert len(tables) == 2
    report = (tutorial.folder / "out" / "run" / "report.md").read_text()
    for table in tables:
        assert "\n".join(table) in report, f"the tutorial states\n{chr(10).join(table)}\nbut the report is\n{report}"


def _rows(folder: Path, metric: str) -> list[dict[str, Any]]:
    scores = json.loads((folder / "run" / "scores.json").read_text())
    [found] = [m for m in scores["metrics"] if m["name"] == metric]
    return found["rows"]


def test_the_scores_are_the_ones_computed_by_hand(tutorial: Run) -> None:
    out = tutorial.folder / "out"
    accuracy = {row["perturbation"]: row for row in _rows(out, "general.accuracy")}
    # original: 5 of 6 right (q6 is wrong); paraphrased: 8 of 12 (q2 and q3 lose one, q6 both)
    assert accuracy["original"]["accuracy"] == pytest.approx(100 * 5 / 6, abs=1e-3)
    assert accuracy["paraphrased"]["accuracy"] == pytest.approx(100 * 8 / 12, abs=1e-3)
    assert (accuracy["paraphrased"]["items"], accuracy["paraphrased"]["groups"]) == (12, 6)
    [consistency] = _rows(out, "general.consistency")
    # 12 (original, paraphrased) pairs, 2 disagree: q2 with template 0, q3 with template 1
    assert (consistency["pairs"], consistency["holds"]) == (12, pytest.approx(100 * 10 / 12, abs=1e-3))
    text = TUTORIAL.read_text()
    for stated in ("**83.33**", "**66.67**"):
        assert stated in text


def test_the_bootstrap_by_hand_matches_the_report(tutorial: Run) -> None:
    """Section 5 recomputes the paraphrased accuracy's interval with numpy: its output, the
    sentence that quotes it and the report's row must agree."""
    printed = "paraphrased accuracy 66.67, 95% interval 33.33 to 91.67"
    assert printed in tutorial.block_output("default_rng")
    assert f"which prints `{printed}`" in TUTORIAL.read_text()
    [row] = [r for r in _rows(tutorial.folder / "out", "general.accuracy") if r["perturbation"] == "paraphrased"]
    assert (round(row["ci_low"], 2), round(row["ci_high"], 2)) == (33.33, 91.67)


def test_the_answers_are_the_ones_the_tutorial_lists(tutorial: Run) -> None:
    responses = pl.read_parquet(tutorial.folder / "out" / "run" / "responses.parquet")
    answers = dict(zip(responses["item_id"], responses["text"]))
    assert len(answers) == 18
    assert answers["q2#question/paraphrased[index=0]"] == "I do not know."
    assert answers["q3#question/paraphrased[index=1]"] == "I do not know."
    assert answers["q5#question/original"] == "Seven."
    assert {answers[f"q6#question/{i}"] for i in ("original", "paraphrased[index=0]", "paraphrased[index=1]")} \
        == {"Christopher Marlowe"}
    wrong = {item for item, text in answers.items() if text == "I do not know."}
    assert wrong == {"q2#question/paraphrased[index=0]", "q3#question/paraphrased[index=1]"}


def test_the_image_part(tutorial: Run) -> None:
    out = tutorial.folder / "out-shapes"
    accuracy = {row["perturbation"]: row["accuracy"] for row in _rows(out, "general.accuracy")}
    assert accuracy == pytest.approx({"original": 100 / 3, "rotated": 100 / 3}, abs=1e-3)
    consistency = {row["angle"]: row["holds"] for row in _rows(out, "general.consistency")}
    assert consistency == {90: 100.0, 180: 100.0}
    assert "accuracy is 33.33" in TUTORIAL.read_text()
    assert (tutorial.folder / "preview" / "s1" / "contact_sheet.png").stat().st_size > 0
    requests = pl.read_parquet(tutorial.folder / "out-shapes" / "run" / "responses.parquet")
    assert len(requests) == 9


# -- benchc new (benchc/scaffold.py) --------------------------------------------------------------

QUESTIONS = """id,question,answer
q1,What is the capital of France?,Paris
q2,How many legs does a spider have?,8
q3,What colour is a ripe banana?,yellow
"""


def _png(path: Path, colour: str = "red") -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (24, 16), colour).save(path)


def _validate_and_compile(spec: Path, items: int) -> str:
    done = cli("validate", spec.name, "--data", cwd=spec.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    done = cli("compile", spec.name, "-o", "manifest", "--cache", "cache", "--store", "store", cwd=spec.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f": {items} items," in done.stdout, done.stdout
    return spec.read_text()


def test_new_from_a_csv_writes_a_paraphrase_spec_that_compiles(tmp_path: Path) -> None:
    data = tmp_path / "my data" / "questions.csv"
    data.parent.mkdir()
    data.write_text(QUESTIONS)
    spec = scaffold(data, default_out(data), kind=None)
    assert spec == tmp_path / "my data" / "questions.toml"
    text = _validate_and_compile(spec, items=9)  # 3 records x (original + 2 paraphrases)
    assert 'path = "questions.csv"' in text and str(tmp_path) not in text  # relative, never absolute
    for section in ("[benchmark]", "[source]", "[[node]]", "[prompt]", "[answer]", "[[metric]]"):
        # each section is explained by a comment right above it
        assert re.search(rf"^# {re.escape(section)}: .+\n(#.*\n)*{re.escape(section)}$", text, re.M), section
    assert 'name = "general.accuracy"' in text and 'target = "answer"' in text
    assert 'name = "general.consistency"' in text
    assert 'op = "text.paraphrase_template"' in text and "params.index = { grid = [0, 1] }" in text
    assert 'extract = ["first_line"]' in text


def test_new_refuses_to_overwrite(tmp_path: Path) -> None:
    data = tmp_path / "questions.csv"
    data.write_text(QUESTIONS)
    spec = tmp_path / "spec.toml"
    spec.write_text("# mine\n")
    with pytest.raises(ScaffoldError, match="never overwrites"):
        scaffold(data, spec, kind=None)
    assert spec.read_text() == "# mine\n"


def test_new_refuses_data_outside_the_spec_folder(tmp_path: Path) -> None:
    data = tmp_path / "data" / "questions.csv"
    data.parent.mkdir()
    data.write_text(QUESTIONS)
    (tmp_path / "specs").mkdir()
    with pytest.raises(ScaffoldError) as caught:
        scaffold(data, tmp_path / "specs" / "spec.toml", kind=None)
    message = caught.value.render()
    assert "outside the spec's folder" in message and f"-o {tmp_path / 'data' / 'questions.toml'}" in message
    assert not (tmp_path / "specs" / "spec.toml").exists()
    # a spec above the data is fine: its path goes down into the data's folder
    spec = scaffold(data, tmp_path / "spec.toml", kind=None)
    assert 'path = "data/questions.csv"' in _validate_and_compile(spec, items=9)


def test_new_without_an_id_column_suggests_one(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text('{"key": "a", "prompt": "Is it red?", "label": "yes"}\n'
                    '{"key": "b", "prompt": "Is it blue?", "label": "no"}\n')
    with pytest.raises(ScaffoldError) as caught:
        scaffold(data, tmp_path / "spec.toml", kind=None)
    message = caught.value.render()
    assert "no id column" in message and "--id" in message and "key, prompt, label" in message
    with pytest.raises(ScaffoldError, match="no column 'nope'"):
        scaffold(data, tmp_path / "spec.toml", kind=None, id_column="nope")
    spec = scaffold(data, tmp_path / "spec.toml", kind=None, id_column="key")
    text = _validate_and_compile(spec, items=6)
    assert 'id = "key"' in text and 'params.field = "prompt"' in text and 'target = "label"' in text


def test_new_maps_column_names_that_are_not_plain_fields(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("ID,Question Text,Gold Answer\n1,Is it red?,yes\n2,Is it blue?,no\n")
    spec = scaffold(data, tmp_path / "spec.toml", kind=None, question_column="Question Text",
                    answer_column="Gold Answer")
    text = _validate_and_compile(spec, items=6)
    assert 'id = "ID"' in text  # found case-insensitively
    assert 'columns = { question = "Question Text", answer = "Gold Answer" }' in text


def test_new_without_an_answer_column_scores_consistency_only(tmp_path: Path) -> None:
    data = tmp_path / "data.tsv"
    data.write_text("qid\ttext\n1\tIs it red?\n2\tIs it blue?\n")
    text = _validate_and_compile(scaffold(data, tmp_path / "spec.toml", kind=None), items=6)
    assert "general.accuracy\"" not in text and 'name = "general.consistency"' in text


def test_new_from_an_image_folder_writes_a_rotation_spec_that_compiles(tmp_path: Path) -> None:
    _png(tmp_path / "photos" / "a.png", "red")
    _png(tmp_path / "photos" / "more" / "b.jpg", "blue")
    spec = scaffold(tmp_path / "photos", default_out(tmp_path / "photos"), kind=None)
    assert spec == tmp_path / "photos.toml"
    text = _validate_and_compile(spec, items=6)  # 2 images x (original + 2 angles)
    assert 'loader = "image_folder"' in text and 'folder = "photos"' in text
    assert 'op = "image.rotate"' in text and "params.angle = { grid = [90, 180] }" in text
    assert 'template = "Describe this image."' in text
    assert "general.accuracy" not in text.replace("add a general.accuracy", "")
    with pytest.raises(ScaffoldError, match="only --kind image"):
        scaffold(tmp_path / "photos", tmp_path / "text.toml", kind="text")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScaffoldError, match="no image files"):
        scaffold(tmp_path / "empty", tmp_path / "empty.toml", kind=None)


def test_new_from_a_table_with_images(tmp_path: Path) -> None:
    folder = tmp_path / "vqa"
    _png(folder / "images" / "a.png", "red")
    _png(folder / "images" / "b.png", "blue")
    data = folder / "questions.jsonl"
    data.write_text('{"question_id": 1, "image": "a.png", "question": "What colour is it?", "answer": "red"}\n'
                    '{"question_id": 2, "image": "b.png", "question": "What colour is it?", "answer": "blue"}\n')
    image_spec = scaffold(data, folder / "rotation.toml", kind="image")
    text = _validate_and_compile(image_spec, items=6)
    assert 'image_column = "image"' in text and 'images = "images"' in text
    assert 'template = "{{ record.question }}"' in text and 'op = "image.rotate"' in text
    text_spec = scaffold(data, folder / "paraphrase.toml", kind=None)
    _validate_and_compile(text_spec, items=6)
    shown = cli("show", "manifest", "--json", cwd=folder)
    assert all(json.loads(line)["media"] for line in shown.stdout.splitlines())  # the image goes along
    with pytest.raises(ScaffoldError, match="unknown kind"):
        scaffold(data, folder / "x.toml", kind="audio")


def test_new_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ScaffoldError, match="not a table benchc reads"):
        scaffold(tmp_path / "notes.txt", tmp_path / "spec.toml", kind=None)
    (tmp_path / "empty.csv").write_text("id,question\n")
    with pytest.raises(ScaffoldError, match="no rows"):
        scaffold(tmp_path / "empty.csv", tmp_path / "spec.toml", kind=None)
    with pytest.raises(ScaffoldError, match="no such file"):
        scaffold(tmp_path / "missing.csv", tmp_path / "spec.toml", kind=None)
    (tmp_path / "q.csv").write_text("id,question\n1,Why?\n")
    with pytest.raises(ScaffoldError, match="must end in .toml"):
        scaffold(tmp_path / "q.csv", tmp_path / "spec.yaml", kind=None)


def test_a_scaffolded_spec_scores_what_the_tutorial_computes(tmp_path: Path) -> None:
    """`benchc new` on the tutorial's CSV, run against the tutorial's rules: the same templates,
    so the same accuracy per perturbation, and its consistency split by template."""
    from benchc.rule_server import served

    text = TUTORIAL.read_text()
    blocks = sh_blocks(text)
    csv_block = next(b for b in blocks if "questions.csv <<" in b)
    rules_block = next(b for b in blocks if "rules.toml <<" in b)
    (tmp_path / "questions.csv").write_text(csv_block.split("<<'EOF'\n", 1)[1].rsplit("EOF\n", 1)[0])
    rules = tmp_path / "rules.toml"
    rules.write_text(rules_block.split("<<'EOF'\n", 1)[1].rsplit("EOF\n", 1)[0])
    spec = scaffold(tmp_path / "questions.csv", tmp_path / "spec.toml", kind=None)
    with served(rules) as httpd:
        done = cli("eval", spec.name, "-o", "out", "--model", f"openai:rules,base_url={httpd.url},api_key_env=none",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    accuracy = {row["perturbation"]: row["accuracy"] for row in _rows(tmp_path / "out", "general.accuracy")}
    assert accuracy == pytest.approx({"original": 100 * 5 / 6, "paraphrased": 100 * 8 / 12}, abs=1e-3)
    by_template = {row["index"]: row["holds"] for row in _rows(tmp_path / "out", "general.consistency")}
    assert by_template == pytest.approx({0: 100 * 5 / 6, 1: 100 * 5 / 6}, abs=1e-3)


def _new_is_wired() -> bool:
    from benchc.cli import app

    return any((c.name or getattr(c.callback, "__name__", "")) == "new" for c in app.registered_commands)


@pytest.mark.skipif(not _new_is_wired(), reason="`benchc new` is not registered in benchc/cli.py yet")
def test_benchc_new_command(tmp_path: Path) -> None:
    data = tmp_path / "questions.csv"
    data.write_text(QUESTIONS)
    done = cli("new", "questions.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "questions.toml" in done.stdout
    _validate_and_compile(tmp_path / "questions.toml", items=9)
    again = cli("new", "questions.csv", "-o", "questions.toml", cwd=tmp_path)
    assert again.returncode == 2 and "never overwrites" in again.stderr and "Traceback" not in again.stderr
    (tmp_path / "bare.csv").write_text("key,question\n1,Why?\n")
    no_id = cli("new", "bare.csv", cwd=tmp_path)
    assert no_id.returncode == 2 and "--id" in no_id.stderr and "Traceback" not in no_id.stderr
    assert cli("new", "bare.csv", "--id", "key", cwd=tmp_path).returncode == 0
