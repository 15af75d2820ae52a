"""Sweeps over [generation] (issue 16 part 3): `temperature = { grid = [...] }` makes every item
once per value, as an item of its own with the setting as an attribute; a run asks each item with
its own settings and the response store keys each setting apart."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchc import api
from benchc.compiler.canonical import digest
from benchc.compiler.errors import SpecError
from benchc.compiler.spec.models import Generation
from benchc.runtime.backends import BACKENDS, Backend, Request, Response, make_backend
from benchc.runtime.backends.base import MediaLoader
from benchc.runtime.run.core import request_digest
from benchc.runtime.run.settings import backend_for, setting_groups
from conftest import SPECS, cli


@BACKENDS.add("test-temperature")
class TemperatureRule(Backend):
    """Answers with the word after "the" in the prompt at temperature <= 0.5, on even samples
    only at temperature <= 0.8, never above: per-setting answers a hand count can check."""

    tasks = frozenset({"generate"})
    batch_size = 3

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "temperature": self.generation.temperature}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        return [Response("text", text=self._answer(r)) for r in requests]

    def _answer(self, request: Request) -> str:
        right = request.prompt.rstrip("?").split()[-1]
        t = self.generation.temperature
        return right if t <= 0.5 or (t <= 0.8 and request.sample % 2 == 0) else "no idea"


SPEC = """
[benchmark]
name = "t/temperature"
version = "1.0.0"

[source]
loader = "scenes"
images = 3

[sample]
n = 2

[prompt]
template = "What is the {{ record.object.name }}?"

[generation]
max_new_tokens = 16
temperature = TEMPERATURE
n = 2
seed = 0

[[metric]]
name = "general.accuracy"
target = "object.name"
by = ["temperature"]
"""
GRID = "{ grid = [0.2, 0.7, 1.0] }"


def _spec(folder: Path, temperature: str = GRID, extra: str = "", name: str = "spec.toml") -> Path:
    path = folder / name
    path.write_text(SPEC.replace("TEMPERATURE", temperature) + extra)
    return path


def _items(manifest: Path) -> pl.DataFrame:
    return pl.read_parquet(manifest / "items.parquet")


# --- expansion ---------------------------------------------------------------------------------

def test_a_grid_makes_each_item_once_per_value_with_the_setting_as_attribute(tmp_path: Path) -> None:
    api.compile(_spec(tmp_path), tmp_path / "m", cache_dir=tmp_path / "c", progress=False)
    items = _items(tmp_path / "m")
    assert items.height == 6  # 2 records x 3 temperatures
    for row in items.iter_rows(named=True):
        attrs = json.loads(row["attrs"])
        assert row["item_id"] == f"{row['record_id']}#generation[temperature={attrs['temperature']}]"
        assert row["group_id"] == row["record_id"] and row["node"] == ""
    assert sorted({json.loads(a)["temperature"] for a in items["attrs"]}) == [0.2, 0.7, 1.0]
    spec = json.loads((tmp_path / "m" / "spec.json").read_text())
    assert spec["generation"]["temperature"] == {"grid": [0.2, 0.7, 1.0]}  # as written


def test_a_setting_segment_follows_the_node_path_and_grids_multiply(tmp_path: Path) -> None:
    extra = '\n[[node]]\nid = "gray"\nop = "image.grayscale"\ninput = "image"\n'
    spec = _spec(tmp_path, extra=extra)
    spec.write_text(spec.read_text().replace("max_new_tokens = 16", "max_new_tokens = { grid = [8, 16] }"))
    api.compile(spec, tmp_path / "m", cache_dir=tmp_path / "c", progress=False)
    items = _items(tmp_path / "m")
    assert items.height == 2 * 3 * 2
    first = sorted(items["item_id"])[0]
    assert first.endswith("#gray/generation[max_new_tokens=16,temperature=0.2]")
    assert json.loads(items.filter(pl.col("item_id") == first)["attrs"][0]) == {
        "perturbation": "gray", "style": "grayscale", "max_new_tokens": 16, "temperature": 0.2}


def test_a_choice_draws_per_item_and_adds_no_id_segment(tmp_path: Path) -> None:
    spec = _spec(tmp_path, temperature="{ choice = [0.3, 0.6, 0.9] }")
    api.compile(spec, tmp_path / "a", cache_dir=tmp_path / "c", progress=False)
    items = _items(tmp_path / "a")
    assert items.height == 2 and all("#" not in i for i in items["item_id"])
    assert all(json.loads(a)["temperature"] in (0.3, 0.6, 0.9) for a in items["attrs"])


def test_a_spec_without_sweeps_dumps_its_generation_as_before() -> None:
    # the spec document and every request key hash this dump: no `sweeps` key may appear in it
    assert Generation().model_dump(mode="json") == {"max_new_tokens": 64, "temperature": 0.0, "top_p": 1.0,
                                                    "n": 1, "seed": None}
    swept = Generation.model_validate({"temperature": {"grid": [0.2, 0.7]}, "n": 4})
    assert swept.for_item({"temperature": 0.7}) == Generation(temperature=0.7, n=4)
    assert Generation.model_validate(swept.model_dump(mode="json")) == swept  # spec.json round-trips


def test_the_manifest_is_the_same_in_processes_of_other_hash_seeds(tmp_path: Path) -> None:
    spec = _spec(tmp_path, extra="")
    spec.write_text(spec.read_text().replace("seed = 0\n", "seed = 0\ntop_p = { choice = [0.8, 1.0] }\n"))
    digests = []
    for seed in ("0", "4242"):
        out = tmp_path / f"m{seed}"
        done = cli("compile", spec, "-o", out, "--cache", tmp_path / f"c{seed}", env={"PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        digests.append((json.loads((out / "lock.json").read_text())["manifest_digest"],
                        (out / "items.parquet").read_bytes()))
    assert digests[0] == digests[1]


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("line, key, words", [
    ("temprature = { grid = [0.2] }", "generation.temprature", "did you mean 'temperature'"),
    ("temperature = { grid = [] }", "generation.temperature", "non-empty list"),
    ("temperature = { grid = [0.2, 0.2] }", "generation.temperature", "names a value twice"),
    ("temperature = { grid = [0.2, -1.0] }", "generation.temperature", "greater than or equal to 0"),
    ("n = { grid = [1, 2] }", "generation.n", "n cannot be swept"),
    ("temperature = { value = 0.2 }", "generation.temperature", "a sweep is"),
])
def test_a_bad_sweep_is_one_message_with_its_key_path(tmp_path: Path, line: str, key: str, words: str) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.replace("temperature = TEMPERATURE\nn = 2", line))
    with pytest.raises(SpecError) as caught:
        api.validate(spec)
    text = str(caught.value)
    assert key in text and words in text, text


# --- the run ---------------------------------------------------------------------------------------

def _run(tmp_path: Path, spec: Path, name: str) -> list[Any]:
    api.compile(spec, tmp_path / f"m-{name}", cache_dir=tmp_path / "c", progress=False, check_version=False)
    return api.run(tmp_path / f"m-{name}", tmp_path / f"r-{name}", model="test-temperature",
                   cache_dir=tmp_path / "c", store_dir=tmp_path / "s", progress=False)


def test_each_setting_is_asked_with_its_own_generation_and_keyed_apart(tmp_path: Path) -> None:
    [first] = _run(tmp_path, _spec(tmp_path), "a")
    assert (first.requests, first.ran) == (12, 12)  # 2 records x 3 temperatures x 2 samples
    [again] = _run(tmp_path, _spec(tmp_path), "b")
    assert (again.cached, again.ran) == (12, 0)
    [moved] = _run(tmp_path, _spec(tmp_path, "{ grid = [0.2, 0.7, 0.9] }", name="moved.toml"), "c")
    assert (moved.cached, moved.ran) == (8, 4)  # only the 0.9 items: 2 records x 2 samples
    fixed_spec = _spec(tmp_path, "0.7", name="fixed.toml")
    fixed_spec.write_text(fixed_spec.read_text().replace('by = ["temperature"]\n', ""))
    [fixed] = _run(tmp_path, fixed_spec, "d")
    assert (fixed.cached, fixed.ran) == (4, 0)  # a fixed 0.7 asks exactly what the sweep's 0.7 items asked

    answers = pl.read_parquet(tmp_path / "r-a" / "responses.parquet")
    by_item = dict(zip(answers["item_id"] + "/" + answers["sample"].cast(str), answers["text"]))
    item = sorted(by_item)[0].rsplit("#", 1)[0]
    assert by_item[f"{item}#generation[temperature=1.0]/0"] == "no idea"
    assert by_item[f"{item}#generation[temperature=0.2]/1"] != "no idea"


def test_by_temperature_gives_one_row_per_setting_counted_by_hand(tmp_path: Path) -> None:
    _run(tmp_path, _spec(tmp_path), "a")
    [metric] = api.score(tmp_path / "r-a", cache_dir=tmp_path / "c", store_dir=tmp_path / "s")["metrics"]
    rows = {row["temperature"]: row for row in metric["rows"]}
    assert list(rows) == [0.2, 0.7, 1.0]
    # 0.2: both samples right; 0.7: sample 0 right, sample 1 wrong; 1.0: none right
    assert [rows[t]["accuracy"] for t in (0.2, 0.7, 1.0)] == [100.0, 50.0, 0.0]  # percentages
    assert all(row["items"] == 2 and row["groups"] == 2 for row in rows.values())


def test_a_stage_is_answered_in_groups_of_one_setting_by_copies_of_its_backend() -> None:
    spec_generation = Generation.model_validate({"temperature": {"grid": [0.2, 0.7]}})
    items = pl.DataFrame({"item_id": ["a", "b", "c"],
                          "attrs": ['{"temperature":0.7}', '{"temperature":0.2}', '{"temperature":0.7}']})

    class Spec:
        generation = spec_generation

    groups = setting_groups(Spec(), items)  # type: ignore[arg-type]
    assert [(g.temperature, part["item_id"].to_list()) for g, part in groups] == [(0.7, ["a", "c"]), (0.2, ["b"])]
    backend = make_backend("test-temperature", spec_generation, "generate")
    backend.loaded = object()  # type: ignore[attr-defined]  (what prepare() would have loaded)
    copy = backend_for(backend, groups[0][0])
    assert copy.generation.temperature == 0.7 and backend.generation is spec_generation
    assert copy.loaded is backend.loaded  # type: ignore[attr-defined]
    assert backend_for(backend, spec_generation) is backend


def test_request_keys_of_a_spec_without_sweeps_are_unchanged() -> None:
    # the recipe as it was before sweeps: the five settings, no `sweeps` key
    settings = {"max_new_tokens": 64, "temperature": 0.0, "top_p": 1.0, "n": 1, "seed": None}
    before = digest({"kind": "request", "backend": {"backend": "echo"}, "task": "generate", "prompt": "p",
                     "system": None, "media": [], "sample": 0, "generation": settings})
    assert request_digest({"backend": "echo"}, "generate", Generation(), "p", None, [], 0) == before
    swept = Generation.model_validate({"temperature": {"grid": [0.0, 0.5]}}).for_item({"temperature": 0.0})
    assert request_digest({"backend": "echo"}, "generate", swept, "p", None, [], 0) == before


def test_the_bundled_temperature_ablation_has_three_settings_per_item() -> None:
    lock = json.loads((SPECS.parent / "generated/mm_r3/context_reasoning_temperature.lock.json").read_text())
    base = json.loads((SPECS.parent / "generated/mm_r3/context_reasoning_sampling.lock.json").read_text())
    assert lock["item_count"] == 3 * base["item_count"]
    assert os.path.exists(SPECS / "mm_r3" / "context_reasoning_temperature.toml")
