"""The coco/lvis loaders and the scenes -> COCO export, on fixtures written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pycocotools.mask as mask_utils
import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import SourceError
from benchc.compiler.media import load_image
from benchc.compiler.sources.scenes_coco import export_coco, main
from conftest import cli
from source_helpers import assert_bad_rows, load, stored_pixel, write_image

W, H = 40, 30
# pycocotools 2.0.11 calls numpy's __array__ the pre-numpy-2 way; harmless, and not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")


def _rle(x0: int, y0: int, x1: int, y1: int) -> dict[str, Any]:
    mask = np.zeros((H, W), dtype=np.uint8, order="F")
    mask[y0:y1, x0:x1] = 1
    rle = mask_utils.encode(mask)
    return {"size": [H, W], "counts": rle["counts"].decode("ascii")}


def _instances(tmp_path: Path, **changes: Any) -> Path:
    """Two images: a polygon (a 10x10 square) on the first, an RLE (8x6 box) and an uncompressed
    RLE on the second."""
    doc = {
        "images": [{"id": 1, "file_name": "a.png", "width": W, "height": H},
                   {"id": 2, "file_name": "b.jpg", "width": W, "height": H}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            {"id": 10, "image_id": 1, "category_id": 1, "bbox": [5, 5, 10, 10], "area": 100.0, "iscrowd": 0,
             "segmentation": [[5, 5, 15, 5, 15, 15, 5, 15]]},
            {"id": 20, "image_id": 2, "category_id": 2, "bbox": [2, 3, 8, 6], "area": 48.0, "iscrowd": 0,
             "segmentation": _rle(2, 3, 10, 9)},
            {"id": 21, "image_id": 2, "category_id": 1, "bbox": [0, 0, 1, 3], "area": 3.0, "iscrowd": 1,
             "segmentation": {"size": [H, W], "counts": [0, 3, H * W - 3]}},
        ],
    }
    doc.update(changes)
    write_image(tmp_path / "images" / "a.png", (200, 10, 10), (W, H))
    write_image(tmp_path / "images" / "b.jpg", (10, 10, 200), (W, H))
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(doc))
    return path


def test_one_record_per_object_with_image_and_mask(tmp_path: Path) -> None:
    _instances(tmp_path)
    loaded, _ = load("coco", tmp_path, annotations="instances.json", images="images")
    by_id = {r.id: r for r in loaded.records}
    assert sorted(by_id) == ["1/10", "2/20", "2/21"]
    square = by_id["1/10"]
    assert square.fields["object"] == {"id": 10, "category_id": 1, "name": "cat", "bbox": [5.0, 5.0, 10.0, 10.0],
                                       "area": 100.0, "area_ratio": round(100 / (W * H), 6), "iscrowd": 0}
    assert square.fields["file_name"] == "a.png" and square.fields["image"]["objects"] == ["cat"]
    assert by_id["2/20"].fields["image"]["objects"] == ["cat", "dog"]
    assert by_id["2/20"].fields["object"]["area_ratio"] == round(48 / (W * H), 6)
    assert by_id["2/21"].fields["object"]["iscrowd"] == 1
    mask = np.asarray(load_image(ContentStore(tmp_path / ".store"), by_id["2/20"].media["mask"]))
    assert mask.dtype == np.uint8 and mask.shape == (H, W) and int((mask == 255).sum()) == 48
    assert stored_pixel(tmp_path, square.media["image"]) == (200, 10, 10)
    assert loaded.files[0].path == "instances.json" and loaded.files[0].rows == 3
    assert by_id["2/20"].media["image"] == by_id["2/21"].media["image"]  # one image, stored once


def test_category_filter_never_reads_the_images_of_other_classes(tmp_path: Path) -> None:
    _instances(tmp_path)
    (tmp_path / "images" / "a.png").unlink()  # only "cat" objects live on a.png
    loaded, ctx = load("coco", tmp_path, annotations="instances.json", images="images", categories=["dog"])
    assert [r.id for r in loaded.records] == ["2/20"] and not ctx.skipped
    with pytest.raises(SourceError, match="unknown categories: 'horse'"):
        load("coco", tmp_path, annotations="instances.json", images="images", categories=["horse"])


def test_lvis_images_are_named_by_their_coco_url(tmp_path: Path) -> None:
    images = [{"id": 1, "coco_url": "http://images.cocodataset.org/val2017/a.png", "width": W, "height": H},
              {"id": 2, "coco_url": "http://images.cocodataset.org/train2017/b.jpg", "width": W, "height": H}]
    _instances(tmp_path, images=images)
    write_image(tmp_path / "images" / "val2017" / "a.png", (1, 2, 3), (W, H))
    loaded, _ = load("lvis", tmp_path, annotations="instances.json", images="images")
    by_id = {r.id: r for r in loaded.records}
    assert by_id["1/10"].fields["file_name"] == "val2017/a.png"
    assert stored_pixel(tmp_path, by_id["1/10"].media["image"]) == (1, 2, 3)
    assert by_id["2/20"].fields["file_name"] == "train2017/b.jpg"  # found as the bare b.jpg


def test_a_missing_image_is_a_bad_row(tmp_path: Path) -> None:
    _instances(tmp_path)
    (tmp_path / "images" / "b.jpg").unlink()
    loaded = assert_bad_rows("coco", tmp_path, ["instances.json", "annotations[1]", "'b.jpg' not found"],
                             ["instances.json", "annotations[2]", "'b.jpg' not found"],
                             annotations="instances.json", images="images")
    assert [r.id for r in loaded.records] == ["1/10"]


def test_a_bad_segmentation_is_a_bad_row(tmp_path: Path) -> None:
    path = _instances(tmp_path)
    doc = json.loads(path.read_text())
    doc["annotations"][0]["segmentation"] = [[1, 2, 3, 4]]
    path.write_text(json.dumps(doc))
    assert_bad_rows("coco", tmp_path, ["instances.json", "annotations[0]", "polygons"],
                   annotations="instances.json", images="images")


def test_a_file_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "instances.json").write_text('{"images": [],\n "annotations": [,]}')
    with pytest.raises(SourceError) as failed:
        load("coco", tmp_path, annotations="instances.json", images="images")
    assert "instances.json:2" in failed.value.render() and "not valid JSON" in failed.value.render()


def test_a_path_outside_the_roots_is_refused(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    _instances(tmp_path)
    with pytest.raises(SourceError, match="escapes the data roots"):
        load("coco", tmp_path / "root", annotations="../instances.json", images="../images")


def test_export_matches_the_scenes_source_and_is_deterministic(tmp_path: Path) -> None:
    export_coco(seed=3, images=4, size=96, max_objects=3, out_dir=tmp_path / "a")
    main([str(tmp_path / "b"), "--seed", "3", "--images", "4", "--size", "96", "--max-objects", "3"])
    for name in ("instances.json", "questions.json", "answers.json", "images/000000000004.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    coco, _ = load("coco", tmp_path / "a", annotations="instances.json", images="images")
    scenes, _ = load("scenes", tmp_path / "a", images=4, seed=3, size=96, max_objects=3)
    assert len(coco.records) == len(scenes.records)
    for ours, theirs in zip(coco.records, scenes.records, strict=True):
        assert ours.media == theirs.media  # same pixels, same visible-object masks
        for key in ("name", "bbox", "area_ratio"):
            assert ours.fields["object"][key] == theirs.fields["object"][key]
    questions = json.loads((tmp_path / "a" / "questions.json").read_text())["questions"]
    texts = {q["question"] for q in questions}
    assert any(t.startswith("What colour is the") for t in texts)
    assert any(t.startswith("How many") for t in texts) and any(" left of the " in t for t in texts)


SPEC = """\
[benchmark]
name = "test/coco-masking"
version = "1.0.0"

[source]
loader = "coco"
annotations = "scenes/instances.json"
images = "scenes/images"
on_error = "{on_error}"

[[filter]]
where = "object.area_ratio"
between = [0.02, 0.5]

[[node]]
id = "masked"
op = "image.mask_object"
input = "image"
repeat = 2
params.color = {{ choice = ["red", "blue"] }}

[prompt]
template = "What kind of object is in the masked region? ({{{{ record.object.name }}}})"
"""


@pytest.mark.slow
def test_compile_a_spec_on_exported_scenes(tmp_path: Path) -> None:
    export_coco(seed=0, images=6, size=128, max_objects=3, out_dir=tmp_path / "scenes")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(on_error="fail"))
    cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    lock = json.loads((tmp_path / "m" / "lock.json").read_text())["source"]
    items = pl.read_parquet(tmp_path / "m" / "items.parquet")
    assert lock["loader"] == "coco" and lock["skipped_rows"] == 0
    assert [f["path"] for f in lock["files"]] == ["scenes/instances.json"]
    assert items.height == 2 * lock["selected"] > 0
    assert all(p.startswith("What kind of object") for p in items["prompt"])

    (tmp_path / "scenes" / "images" / "000000000001.png").unlink()
    failed = cli("compile", spec, "-o", tmp_path / "m2", "--cache", tmp_path / "c")
    assert failed.returncode == 2 and "000000000001.png' not found" in failed.stderr
    spec.write_text(SPEC.format(on_error="skip"))
    cli("compile", spec, "-o", tmp_path / "m3", "--cache", tmp_path / "c", check=True)
    skipped = json.loads((tmp_path / "m3" / "lock.json").read_text())["source"]["skipped_rows"]
    objects_on_image_1 = sum(a["image_id"] == 1 for a in
                             json.loads((tmp_path / "scenes" / "instances.json").read_text())["annotations"])
    assert skipped == objects_on_image_1 > 0
