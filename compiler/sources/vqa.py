"""Visual question answering files: VQA v2 / OK-VQA (questions + annotations JSON) and
InfographicsVQA. One record per question, with its image.

MM-R3's rephrasing task draws its questions from OK-VQA and InfographicsVQA; Koala's from VQA v2
and OK-VQA.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator

from ..values import Record
from .base import SOURCES, FileDigest, LoadedSource, SourceContext, SourceLoader, SourceParams
from .tables import MediaFiles, RowError, collect, entries_of, json_part, need, read_json


class VqaParams(SourceParams):
    questions: str = Field(description="e.g. v2_OpenEnded_mscoco_val2014_questions.json")
    annotations: str | None = Field(None, description="answers file; absent for test splits")
    images: str = Field(description="folder of the images, e.g. val2014/")
    image_name: str = Field("COCO_{subtype}_{image_id:012d}.jpg",
                            description="file name of an image; {subtype} is the questions "
                                        "file's data_subtype (val2014)")

    @field_validator("image_name")
    @classmethod
    def _template(cls, value: str) -> str:
        try:
            value.format(subtype="val2014", image_id=1)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"{value!r} is not a template of {{subtype}} and {{image_id}}: "
                             f"{exc}") from None
        return value


@SOURCES.add("vqa")
class VqaSource(SourceLoader):
    """VQA v2 and OK-VQA: one record per question, with its ten answers when annotated."""

    version = "1.0.0"
    Params = VqaParams
    record_id = "the question id"
    record_fields = {"question_id": "the question id", "image_id": "the image id", "question": "the question",
                     "answers": "the (ten) human answers' texts; empty without annotations",
                     "multiple_choice_answer": "the most common answer, or none",
                     "answer_type": "yes/no, number or other, or none",
                     "question_type": "the question's first words, e.g. 'what color is the', or none"}
    record_media = {"image": "the question's image"}

    def load(self, params: VqaParams, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.questions, key="source.questions")
        doc = read_json(path)
        questions = json_part(doc, path, "questions", list)
        files = [ctx.file_digest(path, len(questions))]
        annotations = None
        if params.annotations is not None:
            annotations, digest = self._annotations(params.annotations, ctx)
            files.append(digest)
        images = MediaFiles(ctx, params.images, "source.images")
        subtype = str(doc.get("data_subtype", ""))

        def build(question: Any) -> Record:
            return self._record(question, annotations, images, params.image_name, subtype)

        return LoadedSource(collect(ctx, entries_of(questions, path, "questions"), build), files)

    @staticmethod
    def _annotations(relative: str, ctx: SourceContext) -> tuple[dict[Any, dict[str, Any]], FileDigest]:
        """Annotations by question id (one without an id answers no question)."""
        path = ctx.resolve(relative, key="source.annotations")
        items = json_part(read_json(path), path, "annotations", list)
        by_question = {a["question_id"]: a for a in items if isinstance(a, dict) and "question_id" in a}
        return by_question, ctx.file_digest(path, len(items))

    @staticmethod
    def _record(question: Any, annotations: dict[Any, dict[str, Any]] | None, images: MediaFiles,
                image_name: str, subtype: str) -> Record:
        question = need(question, "question_id", "image_id", "question")
        qid = question["question_id"]
        annotation = {} if annotations is None else annotations.get(qid)
        if annotation is None:
            raise RowError(f"question {qid!r} has no annotation")
        try:
            name = image_name.format(subtype=subtype, image_id=question["image_id"])
        except ValueError:
            raise RowError(f"image_id {question['image_id']!r} does not fit {image_name!r}") from None
        image = images.image(name)
        fields = {"question_id": qid, "image_id": question["image_id"],
                  "question": question["question"], "answers": _answer_texts(annotation.get("answers", [])),
                  "multiple_choice_answer": annotation.get("multiple_choice_answer"),
                  "answer_type": annotation.get("answer_type"),
                  "question_type": annotation.get("question_type")}
        return Record(id=str(qid), fields=fields, media={"image": image})


def _answer_texts(answers: Any) -> list[str]:
    """VQA answers are objects ({answer, answer_confidence, answer_id}); keep their text."""
    if not isinstance(answers, list) or not all(isinstance(a, dict) and "answer" in a for a in answers):
        raise RowError("'answers' is not a list of {answer: ...} objects")
    return [str(a["answer"]) for a in answers]


class InfographicsParams(SourceParams):
    annotations: str = Field(description="e.g. infographicsVQA_val_v1.0_withQT.json")
    images: str = Field(description="folder of the images named by image_local_name")


@SOURCES.add("infographicsvqa")
class InfographicsVqaSource(SourceLoader):
    """InfographicsVQA: one record per question of its ``data`` list, with its infographic."""

    version = "1.0.0"
    Params = InfographicsParams
    record_id = "the questionId"
    record_fields = {"question_id": "the questionId", "question": "the question",
                     "image_local_name": "the infographic's file name",
                     "answers": "the answers (empty in the test split)", "answer_type": "the answer types",
                     "evidence": "the evidence types", "operation": "the operation/reasoning types"}
    record_media = {"image": "the infographic"}
    LISTS: ClassVar[dict[str, str]] = {"answers": "answers", "answer_type": "answer_type",
                                       "evidence": "evidence", "operation/reasoning": "operation"}
    """Optional list keys (absent in the test split) -> field names (no '/' in a field path)."""

    def load(self, params: InfographicsParams, ctx: SourceContext) -> LoadedSource:
        path = ctx.resolve(params.annotations, key="source.annotations")
        items = json_part(read_json(path), path, "data", list)
        images = MediaFiles(ctx, params.images, "source.images")
        records = collect(ctx, entries_of(items, path, "data"), lambda item: self._record(item, images))
        return LoadedSource(records, [ctx.file_digest(path, len(items))])

    def _record(self, item: Any, images: MediaFiles) -> Record:
        item = need(item, "questionId", "question", "image_local_name")
        fields = {"question_id": item["questionId"], "question": item["question"],
                  "image_local_name": item["image_local_name"],
                  **{name: list(item.get(key) or []) for key, name in self.LISTS.items()}}
        return Record(id=str(item["questionId"]), fields=fields,
                      media={"image": images.image(str(item["image_local_name"]))})
