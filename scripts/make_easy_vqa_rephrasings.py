"""Write the bundled data of specs/mm_r3/question_rephrasing.toml from the installed easy-vqa
package and benchc's rephrasing table.

easy-VQA (PyPI ``easy-vqa``, MIT) asks 24 templated questions; it has no rephrasings. The table
``rephrasings.csv`` (written for benchc, NOT MM-R3's GPT-3.5 rephrasings) gives three rephrasings
of each template, with the template's ``{color}`` / ``{shape}`` filled from the question. This
script keeps the first question of easy-VQA's train split that matches each template (24
questions), fills in its rephrasings and writes, into the data folder:

* ``questions.jsonl``: one row per question: ``id`` (easy-VQA's own record id, as the
  ``easy_vqa`` source names it: ``train/<question index>``), ``image`` (file name), ``image_id``,
  ``question``, ``answer``, ``question_type``, ``template``, and ``questions``: the original
  question, then its three rephrasings;
* ``images/<image_id>.png``: the questions' images, copied unchanged from the package.

The output is a pure function of the package's data and the table: run it again to check
(``tests/test_bundled_specs.py`` does).

    .venv/bin/python scripts/make_easy_vqa_rephrasings.py [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "specs" / "mm_r3" / "data" / "easy_vqa_rephrasings"
SPLIT = "train"


def words(answers: list[str]) -> tuple[list[str], list[str]]:
    """easy-VQA's colours and shapes (its answers other than yes/no)."""
    from benchc.compiler.sources.easy_vqa_source import SHAPES

    colors = sorted(a for a in answers if a not in ("yes", "no") and a not in SHAPES)
    return colors, sorted(SHAPES)


def template_of(question: str, colors: list[str], shapes: list[str]) -> tuple[str, dict[str, str]]:
    """The question with its colour and shape words replaced by ``{color}`` and ``{shape}``."""
    found: dict[str, str] = {}

    def sub(kind: str, names: list[str], text: str) -> str:
        def put(match: re.Match[str]) -> str:
            found[kind] = match.group(0)
            return "{" + kind + "}"
        return re.sub(r"\b(" + "|".join(names) + r")\b", put, text)

    return sub("shape", shapes, sub("color", colors, question)), found


def build(out: Path) -> None:
    import easy_vqa
    from benchc.compiler.sources.easy_vqa_source import question_type

    with (DATA / "rephrasings.csv").open(newline="", encoding="utf-8") as fh:
        table = {row["template"]: [row[f"rephrasing_{k}"] for k in (1, 2, 3)] for row in csv.DictReader(fh)}
    texts, answers, image_ids = easy_vqa.get_train_questions()
    image_paths = easy_vqa.get_train_image_paths()
    colors, shapes = words(easy_vqa.get_answers())
    chosen: dict[str, int] = {}
    fills: dict[int, dict[str, str]] = {}
    for k, text in enumerate(texts):
        template, found = template_of(text, colors, shapes)
        if template not in table:
            raise SystemExit(f"question {k} {text!r}: template {template!r} is not in rephrasings.csv")
        if template not in chosen:
            chosen[template], fills[k] = k, found
    missing = set(table) - set(chosen)
    if missing:
        raise SystemExit(f"templates with no easy-VQA question: {sorted(missing)}")

    (out / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for template, k in sorted(chosen.items(), key=lambda item: item[1]):
        image = Path(image_paths[image_ids[k]])
        shutil.copyfile(image, out / "images" / image.name)
        rows.append({"id": f"{SPLIT}/{k:06d}", "image": image.name, "image_id": image_ids[k],
                     "question": texts[k], "answer": answers[k], "question_type": question_type(answers[k]),
                     "template": template,
                     "questions": [texts[k], *(r.format(**fills[k]) for r in table[template])]})
    with (out / "questions.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA, help=f"folder to write (default {DATA})")
    build(parser.parse_args().out)


if __name__ == "__main__":
    main()
