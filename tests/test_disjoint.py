"""Leakage: `benchc check-disjoint` finds shared records, media and near-duplicate images between
a training and an evaluation manifest; `[split] disjoint_from` makes compile refuse an overlap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import cli
from training_helpers import write_images, write_project


@pytest.fixture(scope="module")
def train(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("disjoint")
    cli("compile", write_project(root / "p"), "-o", root / "train", "--cache", root / "cache", check=True)
    return root


def _eval_project(root: Path, name: str, shared: Path | None = None, tweak: bool = False) -> Path:
    """An evaluation table of its own images (other pixels, other ids); ``shared``: one image
    copied from the training data, ``tweak``: brightened by one level (a near duplicate)."""
    folder = root / name
    write_images(folder / "images", 0)
    for index in range(3):
        pixels = np.random.default_rng(1000 + index).integers(0, 256, (32, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / "images" / f"e{index}.png")
    if shared is not None:
        image = Image.open(shared).convert("RGB")
        if tweak:
            image = Image.fromarray(np.minimum(np.asarray(image).astype(int) + 1, 255).astype(np.uint8))
        image.save(folder / "images" / "e0.png")
    rows = [{"id": f"eval{i}", "image": f"e{i}.png", "question": "What is it?", "answer": "x"} for i in range(3)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "eval.toml"
    spec.write_text((root / "p" / "train.toml").read_text().split("[split]")[0].replace("t/train", "t/eval")
                    + '[prompt]\ntemplate = "{{ record.question }}"\n')
    cli("compile", spec, "-o", root / f"m-{name}", "--cache", root / "cache", check=True)
    return root / f"m-{name}"


def _train_image(root: Path) -> Path:
    """An image of the training split (the first record the training manifest holds)."""
    items = json.loads(cli("show", root / "train", "--format", "json", "-n", "1", check=True).stdout)
    return root / "p" / "images" / f"{int(items[0]['record_id'][1:]) // 3}.png"


def test_an_eval_manifest_sharing_one_training_image_is_caught(train: Path, tmp_path: Path) -> None:
    evaluation = _eval_project(train, "shares", shared=_train_image(train))
    cli("export", train / "train", "--format", "llava", "-o", tmp_path / "export", "--cache", train / "cache",
        check=True)
    done = cli("check-disjoint", train / "train", evaluation, "--cache", train / "cache")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 media object(s) in both" in done.stdout and "'eval0'" in done.stdout
    report = json.loads(cli("check-disjoint", train / "train", evaluation, "--cache", train / "cache",
                            "--format", "json").stdout)
    [shared] = report["media"]
    assert shared["other_record"] == "eval0" and not report["disjoint"] and report["records"] == []
    exported = {p.name.split(".")[0] for p in (tmp_path / "export" / "media").iterdir()}
    assert shared["sha256"] in exported  # the very image the export trains on


def test_a_near_duplicate_image_is_caught_unless_the_check_is_off(train: Path) -> None:
    evaluation = _eval_project(train, "near", shared=_train_image(train), tweak=True)
    done = cli("check-disjoint", train / "train", evaluation, "--cache", train / "cache")
    assert done.returncode == 1 and "near-duplicate image pair(s)" in done.stdout and "media object" not in done.stdout
    off = cli("check-disjoint", train / "train", evaluation, "--cache", train / "cache", "--max-distance", "-1")
    assert off.returncode == 0, off.stdout


def test_disjoint_manifests_pass(train: Path) -> None:
    done = cli("check-disjoint", train / "train", _eval_project(train, "apart"), "--cache", train / "cache")
    assert done.returncode == 0 and done.stdout.startswith("disjoint:")


def test_compile_refuses_a_spec_whose_items_overlap_its_evaluation_set(tmp_path: Path) -> None:
    write_project(tmp_path, name="eval", keep='["test"]')
    spec = write_project(tmp_path, name="train", extra='disjoint_from = "eval.toml"')
    cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)  # the other split
    evaluation = tmp_path / "eval.toml"
    evaluation.write_text(evaluation.read_text().replace('keep = ["test"]', 'keep = ["test", "train"]'))
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")  # the memo must not hide it
    assert done.returncode == 2, done.stdout
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error: ") and "split.disjoint_from[0]" in lines[0]
    assert "overlap the evaluation set" in lines[0] and "record id(s) in both" in lines[0]
    assert lines[1].startswith("  hint: ") and len(lines) == 2


def test_disjoint_from_a_manifest_folder(tmp_path: Path) -> None:
    evaluation = write_project(tmp_path, name="eval", keep='["train"]')  # the same records: an overlap
    cli("compile", evaluation, "-o", tmp_path / "eval-manifest", "--cache", tmp_path / "c", check=True)
    spec = write_project(tmp_path, name="train", extra='disjoint_from = ["eval-manifest"]')
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert done.returncode == 2 and "eval-manifest" in done.stderr and "media object(s) in both" in done.stderr
    shutil.rmtree(tmp_path / "eval-manifest")
    missing = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert missing.returncode == 2 and "cannot read the evaluation set eval-manifest" in missing.stderr


@pytest.mark.parametrize("how", ["absolute", "parent", "symlink"])
def test_disjoint_from_outside_the_spec_folder_is_refused(tmp_path: Path, how: str) -> None:
    """Issue 28 item 7: `disjoint_from` read specs outside the spec's folder (also through a
    symlink) and printed their record ids."""
    outside = write_project(tmp_path / "elsewhere", name="eval")
    project = tmp_path / "project"
    project.mkdir()
    if how == "symlink":
        (project / "eval.toml").symlink_to(outside)
    target = {"absolute": str(outside), "parent": "../elsewhere/eval.toml", "symlink": "eval.toml"}[how]
    spec = write_project(project, name="train", extra=f'disjoint_from = "{target}"')
    done = cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "m").exists()
    assert "split.disjoint_from[0]" in done.stderr and "outside the spec's folder" in done.stderr


def test_the_same_prompts_under_other_ids_are_caught_by_their_text(tmp_path: Path) -> None:
    """Issue 28 item 10: a training copy of the evaluation prompts under renamed ids shares no
    record and no media, and was reported disjoint. Exact (normalised) and near-duplicate prompts
    are caught, and each match says which signal matched."""
    from specfiles import write_rows_spec

    node = '\n[[node]]\nid = "q"\nop = "text.field"\ninput = "record"\nparams.field = "question"\n'
    questions = [f"In which year did event number {i} of the long history of the city happen?" for i in range(40)]
    evaluation = [{"id": f"e{i}", "question": q, "answer": str(1900 + i)} for i, q in enumerate(questions)]
    training = [{"id": f"t{i}", "question": q.upper().replace("?", " ?"), "answer": str(1900 + i)}
                for i, q in enumerate(questions)]
    training[0]["question"] = questions[0].replace("happen?", "happen exactly?")  # a near copy
    training[1]["answer"] = "never"  # the same prompt with another target
    for name, rows in (("eval", evaluation), ("train", training)):
        spec = write_rows_spec(tmp_path / name, name, rows, node)
        spec.write_text(spec.read_text() + '\n[[metric]]\nname = "general.accuracy"\ntarget = "answer"\n')
        cli("compile", spec, "-o", tmp_path / f"m-{name}", "--cache", tmp_path / "cache", check=True)
    done = cli("check-disjoint", tmp_path / "m-train", tmp_path / "m-eval", "--cache", tmp_path / "cache")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "39 item pair(s) with the same prompt (normalised), 38 with the same target too" in done.stdout
    assert "1 item pair(s) with near-duplicate prompts, 1 with the same target too" in done.stdout
    report = json.loads(cli("check-disjoint", tmp_path / "m-train", tmp_path / "m-eval", "--cache",
                            tmp_path / "cache", "--format", "json").stdout)
    near = [m for m in report["texts"] if m["how"] == "near"]
    assert near == [{"how": "near", "signal": "prompt and target", "item": "t0#q", "other_item": "e0#q",
                     "jaccard": near[0]["jaccard"]}] and 0.8 <= near[0]["jaccard"] < 1
    exact_only = cli("check-disjoint", tmp_path / "m-train", tmp_path / "m-eval", "--cache", tmp_path / "cache",
                     "--text-threshold", "-1")
    assert "near-duplicate prompts" not in exact_only.stdout and exact_only.returncode == 1
