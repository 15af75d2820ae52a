"""`benchc export`: a manifest as fine-tuning conversations in four formats, with a card; the
same bytes every time; unknown formats and missing targets are one message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli
from training_helpers import write_project

FORMATS = {"llava": "train.json", "sharegpt": "train.json", "jsonl": "train.jsonl", "hf-datasets": "dataset"}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("export")
    spec = write_project(root / "p")
    cli("compile", spec, "-o", root / "m", "--cache", root / "cache", check=True)
    return root / "m", root / "cache"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_is_written_with_a_card_and_the_same_bytes_twice(manifest, tmp_path: Path, fmt: str) -> None:
    if fmt == "hf-datasets":
        pytest.importorskip("datasets")
    folder, cache = manifest
    for out in ("a", "b"):
        done = cli("export", folder, "--format", fmt, "-o", tmp_path / out, "--cache", cache, check=True)
        assert "example(s)" in done.stdout
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert (tmp_path / "a" / FORMATS[fmt]).exists()
    card = json.loads((tmp_path / "a" / "card.json").read_text())
    lock = json.loads((folder / "lock.json").read_text())
    assert card["manifest_digest"] == lock["manifest_digest"] and card["spec_digest"] == lock["spec_digest"]
    assert card["splits"] == {"train": lock["item_count"]} and card["examples"] == lock["item_count"]
    assert card["attributes"]["perturbation"] == {"gray": lock["item_count"] // 2, "original": lock["item_count"] // 2}
    assert card["split"]["key"] == "image_id" and "README.md" in card["files"]
    assert lock["manifest_digest"] in (tmp_path / "a" / "README.md").read_text()


def test_llava_conversations_hold_the_image_path_prompt_and_target(manifest, tmp_path: Path) -> None:
    folder, cache = manifest
    cli("export", folder, "--format", "llava", "-o", tmp_path / "x", "--cache", cache, check=True)
    rows = json.loads((tmp_path / "x" / "train.json").read_text())
    first = rows[0]
    assert first["conversations"][0]["value"].startswith("<image>\nWhat is in image")
    assert first["conversations"][1]["value"].startswith("thing ") and first["system"] == "Answer briefly."
    assert (tmp_path / "x" / first["image"]).is_file() and first["image"].startswith("media/")


def test_embedded_media_are_data_uris(manifest, tmp_path: Path) -> None:
    folder, cache = manifest
    cli("export", folder, "--format", "jsonl", "--media", "embed", "-o", tmp_path / "x", "--cache", cache, check=True)
    row = json.loads((tmp_path / "x" / "train.jsonl").read_text().splitlines()[0])
    assert row["media"][0]["data"].startswith("data:image/png;base64,") and not (tmp_path / "x" / "media").exists()
    assert row["split"] == "train" and row["target"].startswith("thing ")


def test_an_unknown_format_is_one_line_with_the_closest(manifest, tmp_path: Path) -> None:
    folder, cache = manifest
    done = cli("export", folder, "--format", "lava", "-o", tmp_path / "x", "--cache", cache)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == "error: --format: unknown --format 'lava'"
    assert "did you mean 'llava'" in done.stderr and not (tmp_path / "x").exists()


def test_export_never_replaces_a_folder_of_other_files(manifest, tmp_path: Path) -> None:
    folder, cache = manifest
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    done = cli("export", folder, "--format", "jsonl", "-o", tmp_path / "mine", "--cache", cache)
    assert done.returncode == 2 and "not a benchc export" in done.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_an_unknown_target_is_named_with_the_targets_there_are(manifest, tmp_path: Path) -> None:
    folder, cache = manifest
    done = cli("export", folder, "--format", "jsonl", "-o", tmp_path / "x", "--cache", cache, "--target", "answr")
    assert done.returncode == 2 and "did you mean 'answer'" in done.stderr


def test_a_format_that_cannot_carry_the_media_refuses_with_the_count(tmp_path: Path) -> None:
    """Issue 28 item 9: `--format llava` of an audio manifest wrote every example without its
    audio and an empty prompt, exit 0."""
    from conftest import SPECS

    spec = SPECS / "examples" / "asr_invariance.toml"
    cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "cache", "--set", "sample.n=1", check=True)
    done = cli("export", tmp_path / "m", "--format", "llava", "-o", tmp_path / "out", "--cache", tmp_path / "cache")
    assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "out").exists()
    assert "--format llava carries image only: 5 of 5 example(s) have audio" in done.stderr
    assert "export them as sharegpt or jsonl or hf-datasets" in done.stderr
    kept = cli("export", tmp_path / "m", "--format", "sharegpt", "-o", tmp_path / "sg", "--cache", tmp_path / "cache")
    assert kept.returncode == 0, kept.stderr
    rows = json.loads((tmp_path / "sg" / "all.json").read_text())
    assert all(row["audios"] for row in rows)
