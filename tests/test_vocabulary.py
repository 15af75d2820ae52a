"""`benchc ops / sources / metrics / backends` print allowed values, never Python types; a value
outside a Literal is answered with the closest allowed one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from benchc.compiler.ops import OPS
from benchc.compiler.registry import closest_choices, literal_hint, merge_union_errors
from benchc.compiler.sources import SOURCES, SourceContext
from benchc.compiler.cas import ContentStore
from benchc.reference import backend_entries, render, type_text
from conftest import cli

PYTHON_TYPES = ("Union", "typing.", "Optional[", "Literal[", "<class", "NoneType")


def _no_python_types(text: str) -> None:
    for fragment in PYTHON_TYPES:
        assert fragment not in text, fragment


# --- the formatter -------------------------------------------------------------------------------


class Example(BaseModel):
    mode: Literal["a", "b"] = "a"
    lines: int = Field(1, ge=0, le=15)
    share: float | None = Field(None, gt=0.0, le=1.0)
    names: list[str] = Field(default_factory=list, min_length=1)
    mapping: dict[str, str] = Field(default_factory=dict)
    anything: dict[str, Any] = Field(default_factory=dict)
    either: Literal["x"] | Literal["y"] | None = None
    box: tuple[int, int, int, int] | None = None


@pytest.mark.parametrize("name,expected", [
    ("mode", "one of: 'a', 'b'"),
    ("lines", "int in [0, 15]"),
    ("share", "number in (0.0, 1.0] or none"),
    ("names", "list of text (length >= 1)"),
    ("mapping", "table of text"),
    ("anything", "table"),
    ("either", "one of: 'x', 'y' or none"),
    ("box", "list of 4 int or none"),
])
def test_types_are_written_as_allowed_values(name: str, expected: str) -> None:
    field = Example.model_fields[name]
    assert type_text(field.annotation, field.metadata) == expected


def test_ops_lists_allowed_values_never_python_types() -> None:
    out = cli("ops", check=True).stdout
    _no_python_types(out)
    corrupt = out[out.index("image.corrupt v"):]
    corrupt = corrupt[:corrupt.index("\nimage.", 1)]
    assert "corruption: one of: 'gaussian_noise', " in corrupt
    assert "'jpeg_compression'" in corrupt and "'clean' = required" in corrupt
    assert "severity: one of: 'light', 'heavy' = 'light'" in corrupt
    assert "lines: int = 1  (in [0, 15])" in out  # bounds, after the default


def test_sources_lists_the_record_fields_of_each_loader() -> None:
    out = cli("sources", check=True).stdout
    _no_python_types(out)
    table = out[out.index("\ntable v"):]
    table = table[:table.index("\nvisual_genome v")]
    assert "record fields:\n      <column>: every column of the file by its header name" in table
    assert "record media:\n      image: the `image_column` cell" in table
    coco = out[out.index("\ncoco v"):out.index("\ncommon_voice v")]
    for path in ("object.name", "object.bbox", "object.area_ratio", "image.objects"):
        assert f"      {path}: " in coco


def test_every_loader_declares_its_records() -> None:
    for name, loader in SOURCES.items():
        assert loader.record_id, name
        assert loader.record_fields, name


@pytest.mark.parametrize("name,params", [
    ("scenes", {"images": 3}),
    ("coco", {"annotations": "instances.json", "images": "images"}),
    ("vqa", {"questions": "questions.json", "annotations": "answers.json", "images": "images",
             "image_name": "{image_id:012d}.png"}),
])
def test_a_loader_declares_every_field_and_media_of_its_records(tmp_path: Path, name: str,
                                                                 params: dict[str, Any]) -> None:
    from benchc.compiler.sources.scenes_coco import export_coco

    export_coco(0, 3, 64, 3, tmp_path / "data")
    loader = SOURCES.get(name)
    context = SourceContext(roots=[tmp_path / "data"], store=ContentStore(tmp_path / "cache"))
    source = loader.load(loader.Params(**params), context)
    leaves = {path for record in source.records for path in _leaf_paths(record.fields)}
    assert leaves == set(loader.record_fields)
    assert {m for record in source.records for m in record.media} == set(loader.record_media)


def _leaf_paths(fields: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for name, value in fields.items():
        out += _leaf_paths(value, f"{prefix}{name}.") if isinstance(value, dict) else [f"{prefix}{name}"]
    return out


def test_metrics_lists_metrics_with_their_params() -> None:
    out = cli("metrics", check=True).stdout
    _no_python_types(out)
    assert out.startswith("every metric:\n    stage: text or none = none")
    agreement = out[out.index("general.agreement  "):]
    assert "match: one of: 'exact', 'normalized', 'embedding' = 'normalized'" in agreement
    assert "threshold: number = 0.7  (in (-1.0, 1.0))" in agreement
    assert "mmr3.all  " in out and "target: text = required" in out


def test_backends_lists_each_backends_options() -> None:
    out = cli("backends", check=True).stdout
    hf = out[out.index("hf  (choice-loglik, generate)"):out.index("hf-asr  ")]
    assert "written: hf:TARGET,option=value,... where TARGET is /path/to/model" in hf
    for option in ("batch_size", "dtype", "device", "share_prefix", "decode"):
        assert f"      {option}: " in hf
    assert "one of: 'float32', 'float16', 'bfloat16' (default 'float32')" in hf
    assert "      batch_size: requests per batch, int >= 1 (default 8)" in hf
    sphinx = out[out.index("pocketsphinx  (speech-to-text)"):]
    assert "written: pocketsphinx or pocketsphinx:option=value,... (no target)" in sphinx
    assert "      beam: " in sphinx and "number in (0, 1e-20]" in sphinx


def test_backend_docs_come_from_each_backends_options_model() -> None:
    from benchc.runtime.backends import BACKENDS
    from benchc.runtime.backends.base import BackendOptions

    entries = {entry.name: entry for entry in backend_entries(builtin_only=True)}
    assert {"echo", "espeak", "hf", "hf-asr", "hf-tts", "diffusers", "openai", "pocketsphinx", "vllm"} <= set(entries)
    for name, entry in entries.items():
        cls = BACKENDS.get(name)
        assert entry.doc.summary and entry.doc.target, name  # the docstring's first line, target_help
        assert entry.doc.target.startswith("/path/to/") or not cls.target_is_path, name
        assert list(entry.doc.options) == list(cls.Options.model_fields), name
        assert cls.Options is BackendOptions or cls.Options.__module__.startswith("benchc.runtime.backends"), name
        cls.Options()  # every option has a default: a backend is written with none
        for option, field in cls.Options.model_fields.items():
            assert field.description, (name, option)
            if field.default is None:  # set by something else: the description says by what
                assert "(default" in entry.doc.options[option], (name, option)
            else:
                assert entry.doc.options[option].endswith(")") and "(default " in entry.doc.options[option]


def test_option_errors_name_the_value_and_what_is_allowed() -> None:
    from benchc.compiler.errors import BackendError
    from benchc.compiler.spec.models import Generation
    from benchc.runtime.backends import make_backend

    cases = {"openai:m,concurrency=0": "option concurrency='0' is not valid\n"
                                       "  hint: concurrency must be an integer >= 1",
             "openai:m,timeout=inf": "timeout must be a finite number > 0.0",
             "openai:m,send_seed=maybe": "send_seed must be true or false",
             "openai:m,max_tokens_field=max_tok": "must be one of: 'max_tokens', 'max_completion_tokens' "
                                                  "(did you mean 'max_tokens'?)",
             "openai:m,rate=10": "rate must be a number of requests per second or minute: N/s or N/min",
             "echo:answr=x": "unknown option(s) answr\n  hint: did you mean 'answer'?; known options: answer",
             "pocketsphinx:model=x": "known options: beam"}
    for spec, fragment in cases.items():
        with pytest.raises(BackendError) as caught:
            make_backend(spec, Generation())
        assert fragment in caught.value.render(), (spec, caught.value.render())
    with pytest.raises(BackendError) as caught:  # everything wrong, at once
        make_backend("openai:m,concurrency=0,max_retries=-1", Generation())
    assert "concurrency='0'" in caught.value.render() and "max_retries='-1'" in caught.value.render()


def test_the_reference_has_record_fields_and_backends() -> None:
    text = render()
    _no_python_types(text)
    assert "| field | `object.area_ratio` |" in text and "| id |  | \\<image_id>/\\<annotation id> |" in text
    assert "## Backends" in text and "| `share_prefix` |" in text


# --- did you mean, for values of a Literal --------------------------------------------------------


def _errors(op: str, **params: Any) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as caught:
        OPS.get(op).Params(**params)
    return merge_union_errors(caught.value.errors())


def test_a_prefix_of_an_allowed_value_is_suggested() -> None:
    [error] = _errors("image.corrupt", corruption="jpeg")  # Corruption | Literal["clean"]: one error
    assert error["loc"] == ("corruption",)
    assert literal_hint(error) == "did you mean 'jpeg_compression'?"


def test_a_misspelt_value_is_suggested_and_case_does_not_count() -> None:
    assert literal_hint(_errors("image.corrupt", corruption="gausian_noise")[0]).startswith(
        "did you mean 'gaussian_noise'")
    assert literal_hint(_errors("image.imagenet_c", corruption="JPEG")[0]) == "did you mean 'jpeg_compression'?"


def test_a_value_close_to_nothing_lists_the_allowed_values() -> None:
    [error] = _errors("image.mask_object", shape="hexagon")
    assert literal_hint(error) == "use one of: 'rectangle', 'ellipse'"


def test_a_literal_or_a_list_keeps_the_relevant_error() -> None:
    [word] = _errors("image.pad", pixels=1, fill="blak")
    assert word["loc"] == ("fill",) and literal_hint(word) == "did you mean 'black'?"
    [numbers] = _errors("image.pad", pixels=1, fill=[1, 2])
    assert numbers["type"] != "literal_error" and literal_hint(numbers) is None


def test_other_errors_have_no_literal_hint() -> None:
    assert literal_hint({"type": "int_parsing", "input": "x"}) is None
    assert closest_choices("", ["a"]) == []
