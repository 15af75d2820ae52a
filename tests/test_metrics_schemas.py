"""Metric parameters are checked when a spec is validated or compiled: types and ranges, the
stages a metric reads (its scored stage and any follow-up), and the nodes its roles name."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchc import api
from benchc.compiler.errors import SpecError
from benchc.compiler.metrics import METRIC_SCHEMAS, MMR3Params, metric_stage_problems
from benchc.compiler.spec.models import Spec
from benchc.runtime.score.metrics import METRICS
from conftest import SPECS

RELATIONS = SPECS / "merlim" / "relationships_curated.toml"


def test_every_schema_has_an_implementation_and_a_docstring() -> None:
    assert list(METRIC_SCHEMAS) == list(METRICS)
    for name, schema in METRIC_SCHEMAS.items():
        assert schema.__doc__, name


@pytest.mark.parametrize(("name", "params"), [
    ("mmr3.all", {"target": "a", "threshold": 1.5}),
    ("mmr3.all", {"target": "a", "setting": "sampled"}),
    ("merlim.counting", {"parse": "float"}),
    ("koala.accuracy", {"domains": ["colour"]}),
    ("general.agreement", {"bootstrap": -1}),
    ("general.flip_rate", {"over": "c", "reference": "clean", "flip": "correctness"}),
    ("mmcbench.cross_modal", {"task": "image2text"}),  # no clip folder
    ("general.worst_case", {"target": "a", "colour": 1}),
])
def test_bad_params_are_refused(name: str, params: dict) -> None:
    with pytest.raises(ValidationError):
        METRIC_SCHEMAS.get(name).model_validate(params)


def _spec(metric: dict, stages: list[dict] | None = None, nodes: list[dict] | None = None) -> Spec:
    return Spec.model_validate({
        "benchmark": {"name": "t/m", "version": "1.0.0"}, "source": {"loader": "scenes"},
        "prompt": {"template": "x"}, "node": nodes or [],
        "stage": stages or [{"id": "answer"}], "metric": [metric]})


def test_stage_problems_cover_follow_ups_roles_and_image_stages() -> None:
    counting = {"name": "merlim.counting", "stage": "count", "follow_up_stage": "nope"}
    [problem] = metric_stage_problems(_spec(counting, [{"id": "count"}]))
    assert "reads stage 'nope'" in problem.message
    relations = {"name": "merlim.relations"}  # its default role: items of node 'negated' are negated
    [problem] = metric_stage_problems(_spec(relations))
    assert "names node 'negated'" in problem.message and problem.key == "metric[0]"
    assert metric_stage_problems(_spec({**relations, "polarity_attr": "polarity"})) == []
    images = [{"id": "image", "task": "text-to-image"}]
    assert metric_stage_problems(_spec({"name": "mmcbench.cross_modal", "task": "text2image", "clip": "c"},
                                       images)) == []
    [problem] = metric_stage_problems(_spec({"name": "mmr3.all", "target": "a"}, images))
    assert "outputs are image" in problem.message


def test_validate_reports_metric_problems_with_their_keys() -> None:
    with pytest.raises(SpecError) as caught:
        api.validate(RELATIONS, overrides=['metric=[{name="merlim.counting", follow_up_stage="nope"}, '
                                           '{name="mmr3.all", target="question", setting="sampled"}]'])
    text = str(caught.value)
    assert "reads stage 'nope'" in text and "metric[1]" in text and "sampled" in text


def test_mmr3_defaults_follow_the_paper() -> None:
    params = MMR3Params(target="answer")
    assert (params.threshold, params.correctness) == (0.7, "substring")
    assert (params.setting, params.subset) == ("variants", "all")


def test_parameters_added_later_do_not_move_existing_spec_digests() -> None:
    """Compiled specs hash their metric params with defaults made explicit: a parameter added
    to a schema later is left out while at its default, so bundled specs keep their digests."""
    assert MMR3Params(target="a").model_dump(mode="json") == {
        "stage": None, "by": [], "embedder": "minilm", "target": "a", "threshold": 0.7, "cleanup": "none"}
    assert MMR3Params(target="a", setting="sampling").model_dump(mode="json")["setting"] == "sampling"
