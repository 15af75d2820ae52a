"""The node cache never serves an output made from other inputs: edited annotations, other
library versions. And it still serves what did not change."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from benchc import api
from benchc.compiler.ops import OPS
from benchc.compiler.sources.scenes_coco import export_coco

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

SPEC = """\
[benchmark]
name = "test/node-cache"
version = "1.0.0"

[source]
loader = "coco"
annotations = "scenes/instances.json"
images = "scenes/images"

[[node]]
id = "{node_id}"
op = "{op}"
input = "image"
{params}

[prompt]
template = "What is in the image?"
"""


def _compile(tmp_path: Path, name: str, op: str, params: str) -> tuple[api.CompileResult, pl.DataFrame]:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(node_id="edited", op=op, params=params))
    result = api.compile(spec, tmp_path / name, cache_dir=tmp_path / "cache", use_memo=False)
    return result, pl.read_parquet(tmp_path / name / "items.parquet")


def _move_first_box(tmp_path: Path) -> int:
    path = tmp_path / "scenes" / "instances.json"
    doc = json.loads(path.read_text())
    first = doc["annotations"][0]
    first["bbox"] = [first["bbox"][0] + 3, first["bbox"][1] + 2, first["bbox"][2], first["bbox"][3]]
    path.write_text(json.dumps(doc))
    return first["id"]


@pytest.fixture()
def scenes(tmp_path: Path) -> Path:
    export_coco(seed=0, images=3, size=96, max_objects=2, out_dir=tmp_path / "scenes")
    return tmp_path


def test_an_edited_box_recomputes_the_mask_of_that_object_only(scenes: Path) -> None:
    params = 'params.color = "red"'
    first, before = _compile(scenes, "a", "image.mask_object", params)
    assert first.ops_run == before.height > 1
    _move_first_box(scenes)
    second, after = _compile(scenes, "b", "image.mask_object", params)
    assert second.ops_run == 1, "only the object whose box moved is masked again"
    changed = before.join(after, on="item_id").filter(pl.col("media") != pl.col("media_right"))
    assert changed.height == 1


def test_ops_that_read_only_their_input_keep_their_cache_when_annotations_change(scenes: Path) -> None:
    params = 'params.corruption = "gaussian_noise"'
    first, _ = _compile(scenes, "a", "image.corrupt", params)
    assert first.ops_run > 0
    _move_first_box(scenes)
    second, _ = _compile(scenes, "b", "image.corrupt", params)
    assert second.ops_run == 0


def test_another_library_version_is_another_node_key(scenes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    params = 'params.corruption = "gaussian_noise"'
    _compile(scenes, "a", "image.corrupt", params)
    op = OPS.get("image.corrupt")
    real = op.environment()
    monkeypatch.setattr(type(op), "environment", lambda self, params=None: {**real, "imagecorruptions": "9.9.9"})
    again, _ = _compile(scenes, "b", "image.corrupt", params)
    assert again.ops_run > 0, "outputs of the old library version must not be served"
