"""easy-VQA (PyPI ``easy-vqa``): simple shapes with yes/no, shape and colour questions.

A real, installed VQA dataset for offline tests and demos: 4,000 train / 1,000 test images of
one coloured shape, 38,575 / 9,673 questions, 13 answers. It is read from the package, not from
the spec's data roots, and its files are hashed like any source file (under ``easy_vqa/``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

from pydantic import Field

from ..canonical import digest_file
from ..values import Record
from .base import SOURCES, FileDigest, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import At, MediaFiles, collect, folder_digest

SHAPES = ("circle", "rectangle", "triangle")
"""easy-VQA's shapes; its other non-yes/no answers are colours."""


class Params(SourceParams):
    split: Literal["train", "test"] = Field("train")


EasyVqaParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


def question_type(answer: str) -> str:
    """easy-VQA ships no question types, but its answers tell them apart."""
    if answer in ("yes", "no"):
        return "yes/no"
    return "shape" if answer in SHAPES else "color"


@SOURCES.add("easy_vqa")
class EasyVqaSource(SourceLoader):
    """One record per easy-VQA question of a split, with its image."""

    version = "1.0.0"
    Params = Params
    record_id = "<split>/<question index>, e.g. train/000042"
    record_fields = {"question": "the question", "answer": "its answer (a shape, a colour, yes or no)",
                     "image_id": "easy-VQA's image id",
                     "question_type": "one of: 'yes/no', 'shape', 'color' (told by the answer)"}
    record_media = {"image": "the question's image"}

    def load(self, params: EasyVqaParams, ctx: SourceContext) -> LoadedSource:
        import easy_vqa

        texts, answers, image_ids = getattr(easy_vqa, f"get_{params.split}_questions")()
        image_paths = getattr(easy_vqa, f"get_{params.split}_image_paths")()
        data = Path(easy_vqa.__file__).parent / "data" / params.split
        # the package's folder is the only root its images are read from
        images = MediaFiles(replace(ctx, roots=[data]), "images", "source.split")
        entries = ((At(data / "questions.json", key=f"[{k}]"), k) for k in range(len(texts)))

        def build(k: int) -> Record:
            fields = {"question": texts[k], "answer": answers[k], "image_id": image_ids[k],
                      "question_type": question_type(answers[k])}
            return Record(id=f"{params.split}/{k:06d}", fields=fields,
                          media={"image": images.image(Path(image_paths[image_ids[k]]).name)})

        files = [FileDigest(f"easy_vqa/data/{params.split}/questions.json",
                            digest_file(data / "questions.json"), len(texts)),
                 folder_digest(f"easy_vqa/data/{params.split}/images", data / "images",
                               sorted(map(Path, image_paths.values())))]
        return LoadedSource(collect(ctx, entries, build), files)
