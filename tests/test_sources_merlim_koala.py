"""The merlim and koala loaders on the real annotation files in /work/shared/data (copied into
the test's folder: spec paths must stay inside the data roots)."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from benchc.compiler.errors import SourceError
from source_helpers import assert_bad_rows, image_bytes, load, stored_pixel, write_image

DATA = Path("/work/shared/data")
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="the shared reference data is not mounted")


@pytest.fixture
def merlim(tmp_path: Path) -> Path:
    for name in ("in_data_v3.json.gz", "in_data_v3_sample50imgs.json", "rel_task_set_eval_curated_v3.json.gz"):
        shutil.copy(DATA / "merlim" / name, tmp_path / name)
    return tmp_path


def test_merlim_objects_counting_ground_truth(merlim: Path) -> None:
    loaded, _ = load("merlim", merlim, annotations="in_data_v3.json.gz", kind="objects")
    records = loaded.records
    # paper Table 1: 4,286 originals (103 of them with no edit), 31,373 edited images
    assert len(records) == 31_373 and len({r.fields["coco_id"] for r in records}) == 4_286 - 103
    assert sum(r.fields["removed_obj"]["num_rem_obj"] == 0 for r in records) == 5_636
    first = records[0]
    assert first.id == "139_0" and first.fields["coco_id"] == 139 and not first.media
    assert first.fields["removed_obj"]["cat_label"] == "potted plant"
    assert all(r.fields["count"]["original"] == r.fields["count"]["edited"] + 1 for r in records)
    assert loaded.files[0].path == "in_data_v3.json.gz" and loaded.files[0].rows == 31_373


def test_merlim_relations_expected_answers(merlim: Path) -> None:
    loaded, _ = load("merlim", merlim, annotations="rel_task_set_eval_curated_v3.json.gz", kind="relations")
    records = loaded.records
    assert len(records) == 5_630
    assert Counter(r.fields["answers"]["edited"] for r in records) == {"no": 5_556, "yes": 74}
    assert Counter(r.fields["answers"]["original"] for r in records) == {"no": 4_743, "yes": 887}
    assert records[0].fields["question"] == "Is there a lamp on the bookcase?"
    assert records[0].fields["relationship"]["predicate"] == "ON"


def test_merlim_relations_kind_on_an_objects_file_is_a_bad_row(merlim: Path) -> None:
    assert_bad_rows("merlim", merlim, ["in_data_v3_sample50imgs.json", "['139'][0]", "missing key(s): question"],
                   skipped=340, annotations="in_data_v3_sample50imgs.json", kind="relations")


def _merlim_images(root: Path) -> None:
    """Image 139 with two of its edits; MERLIM's download script saves originals as .jpg."""
    items = json.loads((DATA / "merlim" / "in_data_v3_sample50imgs.json").read_text())["139"][:2]
    (root / "two.json").write_text(json.dumps({"139": items}))
    write_image(root / "coco" / "139.jpg", (10, 20, 30))
    write_image(root / "edited" / "139_0.png", (40, 50, 60))
    instances = {"images": [{"id": 139, "file_name": "139.jpg", "width": 16, "height": 12}],
                 "categories": [{"id": 64, "name": "potted plant"}, {"id": 72, "name": "tv"}],
                 "annotations": [{"id": 1, "image_id": 139, "category_id": 64, "bbox": [0, 0, 1, 1]},
                                 {"id": 2, "image_id": 139, "category_id": 72, "bbox": [0, 0, 1, 1]}]}
    (root / "instances.json").write_text(json.dumps(instances))


def test_merlim_with_images_and_instances(tmp_path: Path) -> None:
    _merlim_images(tmp_path)
    params = {"annotations": "two.json", "kind": "objects", "images": "coco", "edited_images": "edited",
              "instances": "instances.json"}
    loaded = assert_bad_rows("merlim", tmp_path, ["two.json", "['139'][1]", "'139_1.png' not found"], **params)
    [record] = loaded.records
    assert stored_pixel(tmp_path, record.media["original"]) == (10, 20, 30)
    assert stored_pixel(tmp_path, record.media["image"]) == (40, 50, 60)
    # the potted plant was the only one: the edited image's classes lose it
    assert record.fields["objects"] == {"original": ["potted plant", "tv"], "edited": ["tv"]}
    assert [f.path for f in loaded.files] == ["two.json", "instances.json"]


def test_merlim_image_records_both_gives_each_image_its_record(tmp_path: Path) -> None:
    """image_records = "both": <id>/original and <id>/edited, attributes image and pair, media
    `image` = the image each shows (the one a text item carries); 139_1's edited image is missing,
    so only its edited record is a bad row."""
    _merlim_images(tmp_path)
    params = {"annotations": "two.json", "kind": "objects", "images": "coco", "edited_images": "edited",
              "image_records": "both"}
    loaded = assert_bad_rows("merlim", tmp_path, ["two.json", "['139'][1]", "'139_1.png' not found"], **params)
    assert [r.id for r in loaded.records] == ["139_0/original", "139_0/edited", "139_1/original"]
    original, edited, _ = loaded.records
    assert original.attrs == {"image": "original", "pair": "139_0"} and edited.attrs["image"] == "edited"
    assert list(original.media) == list(edited.media) == ["image"]
    assert stored_pixel(tmp_path, original.media["image"]) == (10, 20, 30)
    assert stored_pixel(tmp_path, edited.media["image"]) == (40, 50, 60)
    assert original.fields == edited.fields and original.fields["count"] == {"original": 1, "edited": 0}
    without, _ = load("merlim", tmp_path, annotations="two.json", kind="objects", image_records="both")
    assert len(without.records) == 4 and not any(r.media for r in without.records)
    with pytest.raises(Exception, match="both image folders"):
        load("merlim", tmp_path, annotations="two.json", kind="objects", image_records="both", images="coco")


def test_merlim_reads_plain_json_and_refuses_broken_gzip(merlim: Path) -> None:
    loaded, _ = load("merlim", merlim, annotations="in_data_v3_sample50imgs.json", kind="objects")
    assert len(loaded.records) == 340
    (merlim / "broken.json.gz").write_bytes(gzip.compress(b'{"139": [}'))
    with pytest.raises(SourceError, match="not valid JSON"):
        load("merlim", merlim, annotations="broken.json.gz", kind="objects")


@pytest.fixture
def koala(tmp_path: Path) -> Path:
    for name in ("segsub_data_labelled_reviewer1.json", "segsub_data_labelled_reviewer2.json"):
        shutil.copy(DATA / "koala" / name, tmp_path / name)
    return tmp_path


def test_koala_items_question_and_answer(koala: Path) -> None:
    loaded, _ = load("koala", koala, annotations="segsub_data_labelled_reviewer1.json")
    assert len(loaded.records) == 200
    first = loaded.records[0]
    assert first.fields["question"] == "Is sheet music?" and first.fields["dataset"] == "vqa"
    assert first.fields["answer"].startswith("<RET> Sorry, I cannot determine")
    assert first.fields["label"] is True and first.fields["captions"] == [] and not first.media
    reviewer2 = load("koala", koala, annotations="segsub_data_labelled_reviewer2.json")[0]
    assert sum(r.fields["label"] is None for r in reviewer2.records) == 4
    assert first.id.startswith("vqa/counterfactual/1342046/")


def test_koala_webqa_items_with_repeated_ids(koala: Path) -> None:
    loaded, _ = load("koala", koala, annotations="segsub_data_labelled_reviewer2.json")
    records = loaded.records
    assert len(records) == 500 and len({r.fields["id"] for r in records}) == 397
    webqa = next(r for r in records if r.fields["dataset"] == "webqa")
    assert webqa.fields["question"] == "What colors are found on the chairs in the Borthwick Castle?"
    assert webqa.fields["captions"] == ["Borthwick Castle, Interior 07", "2016 Severndroog Castle, interior 04"]
    assert Counter(r.fields["type"] for r in records)["perturbed"] == 100


def test_koala_images_from_folder_and_webqa_table(tmp_path: Path) -> None:
    item = json.loads((DATA / "koala" / "segsub_data_labelled_reviewer2.json").read_text())[0]
    assert item["image"][0] == 30171458
    (tmp_path / "items.json").write_text(json.dumps([item, {**item, "conversations": []}]))
    write_image(tmp_path / "images" / item["image"][1], (7, 7, 7))
    line = b"30171458\t" + base64.b64encode(image_bytes((1, 1, 1))) + b"\n"
    (tmp_path / "imgs.tsv").write_bytes(b"30000000\tnot-this-one\n" + line)
    offsets = ["0"] * (30171458 % 10_000_000) + [str(len(b"30000000\tnot-this-one\n"))]
    (tmp_path / "imgs.lineidx").write_text("\n".join(offsets) + "\n")
    loaded = assert_bad_rows("koala", tmp_path, ["items.json", "[1]", "no 'human' turn"],
                            annotations="items.json", images="images", webqa_images="imgs.tsv")
    [record] = loaded.records
    assert stored_pixel(tmp_path, record.media["image"]) == (1, 1, 1)
    assert stored_pixel(tmp_path, record.media["image_2"]) == (7, 7, 7)
    assert [f.path for f in loaded.files] == ["items.json", "imgs.tsv", "imgs.lineidx"]
    assert_bad_rows("koala", tmp_path, ["items.json", "[0]", "needs source.webqa_images"],
                    ["items.json", "[1]", "no 'human' turn"], annotations="items.json", images="images")


def test_koala_originals_named_by_image_and_seeded_negatives(koala: Path) -> None:
    """`originals`: each edited record's original item, derived from its image names (WebQA
    number, COCO file); `negatives`: a question with another record's original image."""
    loaded, _ = load("koala", koala, annotations="segsub_data_labelled_reviewer2.json", originals=True)
    by_id = {r.id: r for r in loaded.records}
    conflicting = next(r for r in loaded.records if r.fields["type"] == "conflicting")
    original = by_id[conflicting.attrs["original"]]
    assert original.fields["image"] == [30171458, 30136057] and original.fields["answer"] == ""
    assert original.fields["question"] == conflicting.fields["question"] and original.fields["derived"] is True
    assert original.id.endswith("@conflicting") and original.fields["task"] == "conflicting"
    vqa = by_id[next(r for r in loaded.records if r.fields["dataset"] == "vqa").attrs["original"]]
    assert vqa.fields["image"] == ["COCO_val2014_000000001342.jpg"]
    assert Counter(r.fields["task"] for r in loaded.records if r.fields["type"] == "original") == {
        "counterfactual": 300, "perturbed": 75, "conflicting": 44}
    kw = dict(annotations="segsub_data_labelled_reviewer2.json", negatives=True)
    negatives = [r for r in load("koala", koala, **kw)[0].records if r.fields["type"] == "negative"]
    assert Counter(r.fields["dataset"] for r in negatives) == {"vqa": 100, "okvqa": 100, "webqa": 47}
    again = [r for r in load("koala", koala, **kw)[0].records if r.fields["type"] == "negative"]
    assert [(r.id, r.fields["image"]) for r in again] == [(r.id, r.fields["image"]) for r in negatives]
    for r in negatives:
        partner = r.fields["image_of"]
        assert partner.split("/")[0] == r.fields["dataset"] and partner.split("/")[2] != str(r.fields["id"])
        assert r.fields["answer"].startswith("<RET> Sorry, I cannot determine")
    other = [r for r in load("koala", koala, negative_seed=1, **kw)[0].records if r.fields["type"] == "negative"]
    assert [r.fields["image_of"] for r in other] != [r.fields["image_of"] for r in negatives]
