"""Golden files: the committed locks of the bundled specs, the manifest schema, node keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, cli
from benchc.compiler.canonical import HASH_RECIPE_VERSION
from benchc.compiler.expand import node_key
from benchc.compiler.manifest import ITEM_SCHEMA, LOCK_VERSION, MANIFEST_SCHEMA_VERSION

BUNDLED = sorted((ROOT / "specs").rglob("*.toml"))


@pytest.mark.parametrize("spec", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_spec_matches_its_committed_lock(spec: Path, shared_cache: Path) -> None:
    done = cli("lock", "--check", spec, "--cache", shared_cache)
    assert done.returncode == 0, done.stdout + done.stderr


def test_manifest_schema_is_pinned() -> None:
    # Changing the columns means bumping MANIFEST_SCHEMA_VERSION and updating this golden list.
    # v2: item ids by grid values instead of grid positions (issue 12).
    assert MANIFEST_SCHEMA_VERSION == 2 and LOCK_VERSION == 3
    assert list(ITEM_SCHEMA) == ["item_id", "group_id", "record_id", "record_digest", "node", "attrs",
                                 "system", "prompt", "text", "media", "targets", "lineage"]


# The node key of each hash recipe; a new recipe adds its entry (never edit an old one).
SEED_GOLDEN = 8503519430514465405  # derive_seed(0, "r", "n.0") under seed recipe 1
NODE_KEY_GOLDEN = {2: "5957b0e42968dfa8512158e8e269b1e07a615b1e2896b502e2393f250fd7b753"}
BASE_KEY = ("image.mask_object", "1.0.0", {"color": "red", "lines": 3}, ["ab"], 11, {"numpy": "2.4.6"})


def test_node_key_recipe_is_pinned() -> None:
    assert node_key(*BASE_KEY) == NODE_KEY_GOLDEN[HASH_RECIPE_VERSION]


@pytest.mark.parametrize("change", [
    ("image.mask_object", "1.0.1", {"color": "red", "lines": 3}, ["ab"], 11, {"numpy": "2.4.6"}),
    ("image.mask_object", "1.0.0", {"color": "red", "lines": 5}, ["ab"], 11, {"numpy": "2.4.6"}),
    ("image.mask_object", "1.0.0", {"color": "red", "lines": 3, "pad": 0.1}, ["ab"], 11, {"numpy": "2.4.6"}),
    ("image.mask_object", "1.0.0", {"color": "red", "lines": 3}, ["ac"], 11, {"numpy": "2.4.6"}),
    ("image.mask_object", "1.0.0", {"color": "red", "lines": 3}, ["ab"], 12, {"numpy": "2.4.6"}),
    ("image.mask_object", "1.0.0", {"color": "red", "lines": 3}, ["ab"], 11, {"numpy": "2.4.7"}),
], ids=["version", "param", "extra-param", "input", "seed", "library-version"])
def test_every_part_of_a_node_key_matters(change) -> None:
    assert node_key(*change) != node_key(*BASE_KEY)


def test_lock_check_fails_on_a_changed_spec_without_a_version_bump(tmp_path: Path) -> None:
    specs = tmp_path / "specs" / "mm_r3"
    specs.mkdir(parents=True)
    spec = specs / "context_reasoning.toml"
    spec.write_text((ROOT / "specs/mm_r3/context_reasoning.toml").read_text().replace("n = 40", "n = 39"))
    done = cli("lock", "--check", spec, "--generated", ROOT / "generated", "--cache", tmp_path / "c")
    assert done.returncode == 1
    assert "bump [benchmark].version" in done.stderr


def test_editing_the_description_needs_no_version_bump(tmp_path: Path) -> None:
    specs = tmp_path / "specs" / "mm_r3"
    specs.mkdir(parents=True)
    spec = specs / "context_reasoning.toml"
    text = (ROOT / "specs/mm_r3/context_reasoning.toml").read_text()
    assert 'description = "' in text
    spec.write_text(text.replace('description = "', 'description = "Reworded: ', 1))
    done = cli("lock", "--check", spec, "--generated", ROOT / "generated", "--cache", tmp_path / "c")
    assert done.returncode == 0, done.stderr


def test_seed_recipe_is_pinned_apart_from_the_key_recipe() -> None:
    """Seeds (and so every random draw of every op) survive key-recipe bumps unchanged."""
    from benchc.compiler.canonical import SEED_RECIPE_VERSION
    from benchc.compiler.seeds import derive_seed

    assert SEED_RECIPE_VERSION == 1
    assert derive_seed(0, "r", "n.0") == SEED_GOLDEN
