"""lmms-eval tasks as a source (issue 29 item 2): ``lmms_eval_task`` runs a task's
``doc_to_visual`` and ``doc_to_text`` (lmms-eval's Python) with ``allow_task_code``, and its
images become benchc media.

Checked against what lmms-eval 0.7.3 itself logged (tests/fixtures/peers/lmms_eval: the
color_squares task, two runs): the prompt it logged as ``input``, its ``target``, and the image
file it logged as ``input_media``, pixel for pixel. And lmms-eval's own POPE task
(specs/examples/pope_image_corruptions.toml) compiled, run on a rule model and scored by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pytest
from PIL import Image
from pydantic import Field

from benchc import api
from benchc.cli import main
from benchc.compiler.media import image_identity
from benchc.runtime.backends.base import BackendOptions
from conftest import ROOT, SPECS
from support.rule_backends import rule_backend

PEERS = ROOT / "tests" / "fixtures" / "peers"
COLOR_TASK = PEERS / "tasks" / "lmms_eval" / "color_squares"


class YesOptions(BackendOptions):
    rules: Literal["yes"] = Field("yes", description="always yes")


rule_backend("lmms-yes", YesOptions, lambda opts, prompt: "Yes.")


def _color_spec(folder: Path, extra: str = "allow_task_code = true") -> Path:
    spec = folder / "spec.toml"
    spec.write_text(f"""
[benchmark]
name = "test/color-squares"
version = "1.0.0"
seed = 0

[source]
loader = "lmms_eval_task"
task = "{COLOR_TASK / 'color_squares.yaml'}"
data = "{PEERS}"          # lmms-eval read data_files from here (its working folder)
{extra}

[[node]]
id = "original"
op = "image.original"
input = "image"

[prompt]
template = "{{{{ record.lmms_eval.prompt }}}}"

[[metric]]
name = "general.accuracy"
target = "lmms_eval.targets"
""")
    return spec


def _compile(spec: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["compile", str(spec), "-o", str(out), "--cache", str(spec.parent / "c"), "--data-root", str(PEERS)])
    return code, capsys.readouterr().err


def _logged(run: str) -> dict[int, dict[str, Any]]:
    [path] = (PEERS / "lmms_eval" / run).glob("*/*_samples_color_squares.jsonl")
    return {s["doc_id"]: s for s in map(json.loads, path.read_text().splitlines())}


@pytest.mark.parametrize("run", ["rules", "gemma"])
def test_prompts_targets_and_images_are_what_lmms_eval_logged(run: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _compile(_color_spec(tmp_path), tmp_path / "m", capsys)
    assert code == 0, err
    items = {int(r["record_id"]): r for r in pl.read_parquet(tmp_path / "m" / "items.parquet").iter_rows(named=True)}
    logged = _logged(run)
    assert sorted(items) == sorted(logged) == [0, 1, 2, 3, 4]
    for doc_id, sample in logged.items():
        item = items[doc_id]
        assert item["prompt"] == sample["input"]
        assert json.loads(item["targets"]) == {"lmms_eval.targets": [sample["target"]]}
        [medium] = json.loads(item["media"])
        [media_file] = sample["input_media"]
        with Image.open(COLOR_TASK / media_file) as logged_image:
            assert medium["sha256"] == image_identity(logged_image.convert("RGB"))


def test_the_task_code_is_pinned_and_its_files_locked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    from benchc.compiler.cas import ContentStore
    from benchc.compiler.sources.base import SourceContext
    from benchc.compiler.sources.lmms_eval_task import LmmsEvalTaskParams, LmmsEvalTaskSource

    code, err = _compile(_color_spec(tmp_path), tmp_path / "m", capsys)
    assert code == 0, err
    lock = json.loads((tmp_path / "m" / "lock.json").read_text())
    assert any(f["path"].endswith("color_squares/utils.py") for f in lock["source"]["files"])
    ctx = SourceContext(roots=[PEERS], store=ContentStore(tmp_path / "cas"), spec_file=str(tmp_path / "spec.toml"))
    params = LmmsEvalTaskParams(task=str(COLOR_TASK / "color_squares.yaml"), data=str(PEERS), allow_task_code=True)
    [record, *_] = LmmsEvalTaskSource().load(params, ctx).records
    pins = record.fields["lmms_eval"]["code"]
    assert pins["functions"] == ["doc_to_text=utils.doc_to_text", "doc_to_visual=utils.doc_to_visual"]
    assert pins["lmms_eval"] == metadata.version("lmms_eval") == "0.7.3"


def test_without_allow_task_code_the_task_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _compile(_color_spec(tmp_path, extra=""), tmp_path / "m", capsys)
    assert code == 2 and "!function utils.doc_to_visual" in err and "allow_task_code = true" in err
    assert "Traceback" not in err and not (tmp_path / "m").exists()


def test_without_lmms_eval_installed_allow_task_code_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from benchc.compiler.sources import lm_eval_code

    monkeypatch.setattr(lm_eval_code, "lm_eval_installed", lambda package="lm_eval": package != "lmms_eval")
    code, err = _compile(_color_spec(tmp_path), tmp_path / "m", capsys)
    assert code == 2 and "needs lmms-eval installed" in err and "Traceback" not in err


def test_a_document_with_two_images_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = tmp_path / "task"
    shutil.copytree(COLOR_TASK, task)
    utils = task / "utils.py"
    utils.write_text(utils.read_text().replace('    return [Image.open(', '    return 2 * [Image.open('))
    spec = _color_spec(tmp_path)
    spec.write_text(spec.read_text().replace(str(COLOR_TASK / "color_squares.yaml"), str(task / "color_squares.yaml")))
    code = main(["compile", str(spec), "-o", str(tmp_path / "m"), "--cache", str(tmp_path / "c"),
                 "--data-root", str(PEERS), "--data-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "doc_to_visual gave 2 images" in err and "Traceback" not in err


# --- the worked example: lmms-eval's own POPE task ---------------------------------------------------


def test_the_pope_example_runs_and_scores_by_hand(tmp_path: Path) -> None:
    common = {"cache_dir": tmp_path / "cache", "store_dir": tmp_path / "store"}
    spec = SPECS / "examples" / "pope_image_corruptions.toml"
    manifest = api.compile(spec, tmp_path / "m", progress=False, **common).manifest_dir
    items = pl.read_parquet(manifest / "items.parquet")
    assert items.height == 14 * 4  # 14 questions: original, rotated, flipped, jpeg
    original = items.filter(pl.col("node") == "original").sort("item_id")
    first = original.row(0, named=True)
    # lmms-eval's pope_doc_to_text with its default post_prompt
    assert first["prompt"] == "Is there a rectangle in the image?\nAnswer the question using a single word or phrase."
    parquet = pl.read_parquet(SPECS / "examples" / "data" / "pope" / "data" / "test-00000-of-00001.parquet")
    import io

    with Image.open(io.BytesIO(parquet["image"][0]["bytes"])) as image:
        assert json.loads(first["media"])[0]["sha256"] == image_identity(image.convert("RGB"))
    api.run(manifest, tmp_path / "r", model="lmms-yes", progress=False, **common)
    scores = {m["name"]: m for m in api.score(tmp_path / "r", **common)["metrics"]}
    yes = int((parquet["answer"] == "yes").sum())
    assert yes == 7  # one true and one false object per image, counted in the data
    accuracy = {r["perturbation"]: r["accuracy"] for r in scores["general.accuracy"]["rows"]}
    assert accuracy == {p: pytest.approx(100 * yes / 14) for p in ("original", "rotated", "flipped", "jpeg")}
    consistency = {r["perturbation"]: r["holds"] for r in scores["general.consistency"]["rows"]}
    assert consistency == {"rotated": 100.0, "flipped": 100.0, "jpeg": 100.0}
