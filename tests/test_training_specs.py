"""The bundled training specs (MM-R3's adapter data, Koala's fine-tuning set) compile, export,
and share nothing with their evaluation counterparts (checked with `benchc check-disjoint`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SPECS, cli

PAIRS = [  # (training spec, evaluation spec): disjoint
    ("mm_r3/adapter_train_scenes", "mm_r3/context_reasoning"),
    ("mm_r3/adapter_train_scenes", "mm_r3/image_restyling"),
    ("mm_r3/adapter_train_rephrasing", "mm_r3/question_rephrasing"),
    ("koala/finetune", "koala/finetune_eval"),
]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("training")
    names = sorted({name for pair in PAIRS for name in pair} | {"koala/counterfactual"})
    for name in names:
        cli("compile", SPECS / f"{name}.toml", "-o", out / name, "--cache", shared_cache, check=True)
    return {name: out / name for name in names}


@pytest.mark.parametrize(("train", "evaluation"), PAIRS, ids=[f"{a}-vs-{b}" for a, b in PAIRS])
def test_training_specs_are_disjoint_from_their_evaluation(compiled, shared_cache: Path, train: str,
                                                          evaluation: str) -> None:
    done = cli("check-disjoint", compiled[train], compiled[evaluation], "--cache", shared_cache, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["disjoint"] is True


def test_koalas_reference_evaluation_overlaps_the_fine_tuning_set(compiled, shared_cache: Path) -> None:
    """What finetune.toml's header warns of: counterfactual.toml asks about every accepted item."""
    done = cli("check-disjoint", compiled["koala/finetune"], compiled["koala/counterfactual"], "--cache", shared_cache)
    assert done.returncode == 1 and "record id(s) in both" in done.stdout


def _items(manifest: Path) -> list[dict]:
    return json.loads(cli("show", manifest, "--format", "json", "-n", "100000", check=True).stdout)


def test_koala_keeps_each_question_and_its_original_in_one_split(compiled) -> None:
    splits = {}
    for name in ("koala/finetune", "koala/finetune_eval"):
        for item in _items(compiled[name]):
            splits[item["record_id"]] = item["attrs"]["split"]
    originals = [i for i in _items(compiled["koala/finetune"]) if "original" in i["attrs"]]
    assert originals and all(splits[i["attrs"]["original"]] == "train" for i in originals)
    assert set(splits.values()) == {"train", "test"}


@pytest.mark.parametrize(("name", "fmt"), [("mm_r3/adapter_train_scenes", "llava"),
                                           ("mm_r3/adapter_train_rephrasing", "sharegpt"),
                                           ("koala/finetune", "llava")])
def test_training_specs_export(compiled, shared_cache: Path, tmp_path: Path, name: str, fmt: str) -> None:
    cli("export", compiled[name], "--format", fmt, "-o", tmp_path / "x", "--cache", shared_cache, check=True)
    card = json.loads((tmp_path / "x" / "card.json").read_text())
    lock = json.loads((compiled[name] / "lock.json").read_text())
    assert card["examples"] + card["skipped_without_target"] == lock["item_count"] and card["examples"] > 0
    assert set(card["splits"]) == set(lock["split"]["keep"])
