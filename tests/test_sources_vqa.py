"""The vqa, infographicsvqa, visual_genome and easy_vqa loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchc.compiler.sources.scenes_coco import export_coco
from pydantic import ValidationError
from source_helpers import assert_bad_rows, load, stored_pixel, write_image


def _vqa(tmp_path: Path) -> None:
    """VQA v2's layout: COCO_<subtype>_<12-digit id>.jpg, ten answers per question."""
    write_image(tmp_path / "val2014" / "COCO_val2014_000000000042.jpg", (0, 0, 0))
    questions = [{"image_id": 42, "question": "What is it?", "question_id": 420},
                 {"image_id": 42, "question": "Is it dark?", "question_id": 421}]
    answers = [{"question_id": q, "image_id": 42, "question_type": t, "answer_type": a,
                "multiple_choice_answer": m,
                "answers": [{"answer": m, "answer_confidence": "yes", "answer_id": k} for k in range(1, 11)]}
               for q, t, a, m in ((420, "what is", "other", "cat"), (421, "is it", "yes/no", "yes"))]
    (tmp_path / "q.json").write_text(json.dumps({"data_subtype": "val2014", "questions": questions}))
    (tmp_path / "a.json").write_text(json.dumps({"annotations": answers}))


def test_vqa_one_record_per_question(tmp_path: Path) -> None:
    _vqa(tmp_path)
    loaded, _ = load("vqa", tmp_path, questions="q.json", annotations="a.json", images="val2014")
    first, second = loaded.records
    assert first.id == "420" and first.fields["answers"] == ["cat"] * 10
    assert first.fields["question_type"] == "what is" and second.fields["answer_type"] == "yes/no"
    assert first.media["image"] == second.media["image"]
    assert [f.path for f in loaded.files] == ["q.json", "a.json"]
    unanswered, _ = load("vqa", tmp_path, questions="q.json", images="val2014")  # a test split
    assert unanswered.records[0].fields["answers"] == []


def test_vqa_question_without_annotation_or_image_is_a_bad_row(tmp_path: Path) -> None:
    _vqa(tmp_path)
    doc = json.loads((tmp_path / "q.json").read_text())
    doc["questions"].append({"image_id": 7, "question": "?", "question_id": 999})
    (tmp_path / "q.json").write_text(json.dumps(doc))
    assert_bad_rows("vqa", tmp_path, ["q.json", "questions[2]", "question 999 has no annotation"],
                   questions="q.json", annotations="a.json", images="val2014")
    assert_bad_rows("vqa", tmp_path, ["q.json", "questions[2]", "COCO_val2014_000000000007.jpg' not found"],
                   questions="q.json", images="val2014")


def test_vqa_image_name_template_is_checked() -> None:
    from benchc.compiler.sources.vqa import VqaParams

    with pytest.raises(ValidationError, match="not a template"):
        VqaParams(questions="q", images="i", image_name="{img}.jpg")


def test_vqa_reads_the_scenes_export(tmp_path: Path) -> None:
    export_coco(seed=1, images=3, size=64, max_objects=3, out_dir=tmp_path)
    loaded, _ = load("vqa", tmp_path, questions="questions.json", annotations="answers.json",
                     images="images", image_name="{image_id:012d}.png")
    counts = [r for r in loaded.records if r.fields["answer_type"] == "number"]
    assert counts and all(r.fields["answers"][0].isdigit() for r in counts)


def test_infographicsvqa(tmp_path: Path) -> None:
    write_image(tmp_path / "infographics" / "10002.jpeg", (5, 5, 5))
    data = [{"questionId": 65718, "question": "Which social platform has heavy female audience?",
             "image_local_name": "10002.jpeg", "answers": ["pinterest"], "answer_type": ["single span"],
             "evidence": ["table/list"], "operation/reasoning": []},
            {"questionId": 65719, "question": "?", "image_local_name": "missing.jpeg"}]
    (tmp_path / "info.json").write_text(json.dumps({"dataset_name": "infographicsVQA", "data": data}))
    loaded = assert_bad_rows("infographicsvqa", tmp_path, ["info.json", "data[1]", "'missing.jpeg' not found"],
                            annotations="info.json", images="infographics")
    [record] = loaded.records
    assert record.id == "65718" and record.fields["answers"] == ["pinterest"]
    assert record.fields["operation"] == [] and record.fields["evidence"] == ["table/list"]


def test_visual_genome_one_record_per_relationship(tmp_path: Path) -> None:
    write_image(tmp_path / "vg" / "VG_100K" / "1.jpg", (9, 9, 9))
    image_data = [{"image_id": 1, "url": "https://cs.stanford.edu/people/rak248/VG_100K/1.jpg",
                   "width": 16, "height": 12}]
    subject = {"object_id": 5, "name": "key", "synsets": ["key.n.01"], "x": 1, "y": 2, "w": 3, "h": 4}
    obj = {"object_id": 6, "names": ["keyboard"], "synsets": ["keyboard.n.01"], "x": 0, "y": 0, "w": 9, "h": 9}
    relationships = [{"image_id": 1, "relationships": [
        {"relationship_id": 77, "predicate": "ON", "synsets": ["along.r.01"], "subject": subject, "object": obj},
        {"relationship_id": 78, "predicate": "ON", "subject": subject}]}]
    (tmp_path / "image_data.json").write_text(json.dumps(image_data))
    (tmp_path / "relationships.json").write_text(json.dumps(relationships))
    loaded = assert_bad_rows("visual_genome", tmp_path,
                            ["relationships.json", "[0].relationships[1]", "missing key(s): object"],
                            relationships="relationships.json", image_data="image_data.json", images="vg")
    [record] = loaded.records
    assert record.id == "1/77" and record.fields["predicate"] == "ON"
    assert record.fields["subject"] == {"object_id": 5, "name": "key", "synsets": ["key.n.01"], "bbox": [1, 2, 3, 4]}
    assert record.fields["object"]["name"] == "keyboard"
    assert stored_pixel(tmp_path, record.media["image"]) == (9, 9, 9)


def test_easy_vqa_reads_the_installed_package(tmp_path: Path) -> None:
    loaded, _ = load("easy_vqa", tmp_path, split="test")
    assert len(loaded.records) == 9673
    first = loaded.records[0]
    assert first.id == "test/000000" and set(first.fields) == {"question", "answer", "image_id", "question_type"}
    types = {r.fields["question_type"] for r in loaded.records}
    assert types == {"yes/no", "shape", "color"}
    assert [f.path for f in loaded.files] == ["easy_vqa/data/test/questions.json", "easy_vqa/data/test/images"]
    assert loaded.files[1].rows == 1000
    assert len({r.media["image"] for r in loaded.records}) <= 1000
