"""``validate.vlm_check``: a VLM looks at an edited image and the edit is kept or dropped.

Koala filters its generated images with a quantised Qwen2-VL-7B-Instruct: for an object removal
it asks "Q: is the {Q_obj} in both the original image and the perturbed image?" (the original and
the edited image, captioned) and keeps the edit iff the answer starts with "no"; MM-R3 checks its
data with InternVL the same way. This validator asks a yes/no ``question`` (Jinja over ``name``,
the record's object label, and ``record``) about the edited image, optionally after the record's
original image (``original = "image"``: Koala's two-image form; the images are sent in that
order, without Koala's per-image captions), and keeps the variant iff the answer is ``expect``.

The answer counts as yes or no when its first word is "yes" or "no" (``model_answers.yes_no``;
Koala's ``startswith('no')`` would also read "not sure" and "nothing" as no). Any other answer,
refusals included, is unclear: the variant is dropped ("unclear VLM answer") or, with
``on_bad_answer = "fail"``, the compile fails. A wrong answer drops it ("VLM check failed").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..errors import OpError, Problem
from ..model_answers import yes_no
from ..model_requests import ModelPrompt
from ..values import MediaRef, Value
from .base import (
    OPS,
    ModelOp,
    ModelStepParams,
    OpContext,
    OpOutput,
    check_template,
    render_prompt,
    template_variables,
)
from .fields import field_or_none

QUESTION = "Is there a {{ name }} in the image? Answer yes or no."


class VLMCheckParams(ModelStepParams):
    max_new_tokens: int = Field(8, gt=0, le=4096, description="generation: new tokens per answer")
    question: str = Field(QUESTION, description="yes/no question (Jinja): name, record")
    name_field: str = Field("object.name", description="record field given to the question as `name`")
    expect: Literal["yes", "no"] = Field("no", description="the answer that keeps the variant "
                                                           "(no: the removed object is gone)")
    original: str | None = Field(None, description="record image sent before the edited one "
                                                   "(Koala's two-image check), e.g. 'image'")

    @field_validator("question")
    @classmethod
    def _template(cls, source: str) -> str:
        return check_template(source, {"name", "record"})


@OPS.add("validate.vlm_check")
class VLMCheck(ModelOp):
    """Keep an edited image only if a VLM answers a yes/no question about it as expected."""

    version = "1.0.0"
    Params = VLMCheckParams
    input_kind = "image"

    def prompts(self, value: Value | None, params: VLMCheckParams, ctx: OpContext) -> list[ModelPrompt]:
        assert value is not None and value.media is not None
        name = field_or_none(ctx, params.name_field)
        if name is None and "name" in template_variables(params.question):
            raise OpError(Problem(f"record {ctx.record.id!r} has no field {params.name_field!r}",
                                  key="params.name_field"))
        question = render_prompt(params.question, {"name": "" if name is None else str(name),
                                                   "record": ctx.record.fields}, "params.question")
        media = (*self._original(params, ctx), value.media)
        return [ModelPrompt(question, media=media, seed=self.sampling_seed(params, ctx))]

    def _original(self, params: VLMCheckParams, ctx: OpContext) -> tuple[MediaRef, ...]:
        if params.original is None:
            return ()
        ref = ctx.record.media.get(params.original)
        if ref is None or ref.kind != "image":
            raise OpError(Problem(f"record {ctx.record.id!r} has no image named {params.original!r}",
                                  key="params.original",
                                  hint=f"record media: {', '.join(ctx.record.media) or 'none'}"))
        return (ref,)

    def finish(self, value: Value | None, params: VLMCheckParams, ctx: OpContext,
               answers: list[str]) -> OpOutput:
        [answer] = answers
        verdict = yes_no(answer)
        if verdict is None:
            return self.bad_answer(params, ctx, "unclear VLM answer", answer, value)
        attrs = {**params.attrs, "vlm_answer": verdict}
        assert value is not None
        return OpOutput(value, attrs, drop=None if verdict == params.expect else "VLM check failed")
