"""Export the synthetic scenes as a COCO-format dataset, with VQA-style questions about them.

A fixture with the file formats of real benchmarks and ground truth known by construction: the
``coco`` and ``vqa`` loaders read it exactly as they read COCO and VQA v2, so specs written for
those datasets can be tried offline. Deterministic: the same arguments write the same bytes.

    python -m benchc.compiler.sources.scenes_coco OUT_DIR [--seed 0 --images 40 --size 256]

Layout of OUT_DIR: ``images/<12-digit id>.png``, ``instances.json`` (COCO instances, RLE
masks), ``questions.json`` and ``answers.json`` (VQA v2 questions and annotations; read them
with the ``vqa`` loader and ``image_name = "{image_id:012d}.png"``). Image ids are scene
indexes + 1 (COCO tools treat id 0 as missing).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pycocotools.mask as mask_utils

from .scenes import SHAPES, Scene, SceneObject, make_scene

SUBTYPE = "scenes"


def export_coco(seed: int, images: int, size: int, max_objects: int, out_dir: Path) -> Path:
    """Write scenes ``0..images-1`` of family ``seed`` into ``out_dir``; returns ``out_dir``."""
    out_dir = Path(out_dir)
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    coco: dict[str, list[Any]] = {"images": [], "annotations": [], "categories": [
        {"id": k + 1, "name": shape, "supercategory": "shape"} for k, shape in enumerate(SHAPES)]}
    questions: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    for index in range(images):
        scene = make_scene(seed, index, size, max_objects)
        image_id = index + 1
        file_name = f"{image_id:012d}.png"
        scene.image.save(out_dir / "images" / file_name, format="PNG")
        coco["images"].append({"id": image_id, "file_name": file_name, "width": size, "height": size})
        coco["annotations"] += [_annotation(image_id, obj) for obj in scene.objects]
        for k, (question, answer, answer_type, question_type) in enumerate(scene_questions(scene)):
            question_id = image_id * 1000 + k
            questions.append({"image_id": image_id, "question": question, "question_id": question_id})
            answers.append(_vqa_annotation(image_id, question_id, answer, answer_type, question_type))
    _write(out_dir / "instances.json", coco)
    _write(out_dir / "questions.json", {"data_subtype": SUBTYPE, "questions": questions})
    _write(out_dir / "answers.json", {"data_subtype": SUBTYPE, "annotations": answers})
    return out_dir


def _annotation(image_id: int, obj: SceneObject) -> dict[str, Any]:
    rle = mask_utils.encode(np.asfortranarray(obj.mask.astype(np.uint8)))
    segmentation = {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}
    return {"id": image_id * 100 + obj.id, "image_id": image_id,
            "category_id": SHAPES.index(obj.shape) + 1, "segmentation": segmentation,
            "area": float(mask_utils.area(rle)), "bbox": [float(v) for v in mask_utils.toBbox(rle)],
            "iscrowd": 0}


def _vqa_annotation(image_id: int, question_id: int, answer: str, answer_type: str,
                    question_type: str) -> dict[str, Any]:
    """VQA v2 keeps ten human answers per question; a synthetic answer is given ten times."""
    return {"image_id": image_id, "question_id": question_id, "question_type": question_type,
            "answer_type": answer_type, "multiple_choice_answer": answer,
            "answers": [{"answer": answer, "answer_confidence": "yes", "answer_id": k + 1}
                        for k in range(10)]}


def scene_questions(scene: Scene) -> list[tuple[str, str, str, str]]:
    """(question, answer, answer_type, question_type): colour and shape of objects named
    unambiguously, counts of each present shape and of one absent shape, and left/right
    relations between unambiguous objects whose centres are clearly apart."""
    shapes = Counter(o.shape for o in scene.objects)
    colours = Counter(o.colour for o in scene.objects)
    out = [(f"What colour is the {o.shape}?", o.colour, "other", "what color is the")
           for o in scene.objects if shapes[o.shape] == 1]
    out += [(f"What shape is the {o.colour} object?", o.shape, "other", "what is the")
            for o in scene.objects if colours[o.colour] == 1]
    absent = [s for s in SHAPES if s not in shapes][:1]
    out += [(f"How many {_plural(s)} are there?", str(shapes[s]), "number", "how many")
            for s in sorted(shapes) + absent]
    kinds = Counter((o.colour, o.shape) for o in scene.objects)
    named = [o for o in scene.objects if kinds[(o.colour, o.shape)] == 1]
    margin = scene.image.width * 0.05
    for a, b in ((a, b) for i, a in enumerate(named) for b in named[i + 1:]):
        xa, xb = _centre_x(a), _centre_x(b)
        if abs(xa - xb) > margin:
            out.append((f"Is the {a.colour} {a.shape} left of the {b.colour} {b.shape}?",
                        "yes" if xa < xb else "no", "yes/no", "is the"))
    return out


def _plural(shape: str) -> str:
    return f"{shape}es" if shape.endswith("s") else f"{shape}s"


def _centre_x(obj: SceneObject) -> float:
    return float(np.nonzero(obj.mask)[1].mean())


def _write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchc.compiler.sources.scenes_coco",
                                     description="Export synthetic scenes as COCO + VQA files.")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--images", type=int, default=40)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--max-objects", type=int, default=4)
    args = parser.parse_args(argv)
    print(export_coco(args.seed, args.images, args.size, args.max_objects, args.out_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
