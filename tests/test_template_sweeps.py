"""Template sweeps (issue 16 part 3): `[prompt] template` and a `[[stage]]`'s template swept by
name, like `[generation]`'s values: each name makes every item once more, with the name as an
attribute, so one run and one report carry the whole instruction comparison."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from benchc import api
from benchc.compiler.diff import Change, needed_bump
from benchc.compiler.errors import SpecError
from conftest import SPECS, cli

SPEC = """
[benchmark]
name = "t/template-sweep"
version = "1.0.0"
seed = 0

[source]
loader = "table"
path = "data/easy_vqa/questions.jsonl"
id = "id"
image_column = "image"
images = "data/easy_vqa/images"

[[filter]]
where = "question_type"
equals = "color"

[sample]
n = 3

[prompt]
template = TEMPLATE

[[metric]]
name = "general.accuracy"
target = "{{ record.answer }}"
by = ["template"]
"""
NAMED = '{ grid = { right = "{{ record.answer }}", asked = "{{ record.question }}" } }'


def _spec(folder: Path, template: str = NAMED, extra: str = "", name: str = "spec.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "data").exists():
        shutil.copytree(SPECS / "examples" / "data", folder / "data")
    path = folder / name
    path.write_text(SPEC.replace("TEMPLATE", template) + extra)
    return path


def _items(manifest: Path) -> pl.DataFrame:
    return pl.read_parquet(manifest / "items.parquet")


def _compile(spec: Path, out: Path) -> pl.DataFrame:
    api.compile(spec, out, cache_dir=out.parent / "cache", progress=False, check_version=False)
    return _items(out)


# --- expansion ---------------------------------------------------------------------------------

def test_a_named_grid_makes_each_item_once_per_template_named_in_its_id_and_attrs(tmp_path: Path) -> None:
    items = _compile(_spec(tmp_path), tmp_path / "m")
    assert items.height == 6  # 3 records x 2 templates
    for row in items.iter_rows(named=True):
        name = json.loads(row["attrs"])["template"]
        assert row["item_id"] == f"{row['record_id']}#prompt[template={name}]"
        assert row["group_id"] == row["record_id"]
        record = json.loads(row["targets"])["{{ record.answer }}"][0]
        assert (row["prompt"] == record) == (name == "right")
    assert sorted({json.loads(a)["template"] for a in items["attrs"]}) == ["asked", "right"]
    spec = json.loads((tmp_path / "m" / "spec.json").read_text())
    assert spec["prompt"]["template"]["grid"]["right"] == "{{ record.answer }}"  # as written


def test_a_list_grid_names_its_templates_by_index(tmp_path: Path) -> None:
    items = _compile(_spec(tmp_path, '{ grid = ["A {{ record.question }}", "B {{ record.question }}"] }'),
                     tmp_path / "m")
    names = {json.loads(a)["template"] for a in items["attrs"]}
    assert names == {0, 1}
    assert all(i.endswith(("#prompt[template=0]", "#prompt[template=1]")) for i in items["item_id"])
    assert all(p.startswith("AB"[json.loads(a)["template"]]) for p, a in zip(items["prompt"], items["attrs"]))


def test_a_system_sweep_and_a_generation_sweep_multiply_in_one_segment_order(tmp_path: Path) -> None:
    extra = ('\n[generation]\ntemperature = { grid = [0.0, 0.5] }\n')
    spec = _spec(tmp_path, '"{{ record.question }}"', extra)
    spec.write_text(spec.read_text().replace(
        'template = "{{ record.question }}"',
        'template = "{{ record.question }}"\nsystem = { grid = { brief = "Be brief.", none = "" } }')
        .replace('by = ["template"]', 'by = ["system"]'))
    items = _compile(spec, tmp_path / "m")
    assert items.height == 3 * 2 * 2
    first = sorted(items["item_id"])[0]
    assert first.endswith("#prompt[system=brief]/generation[temperature=0.0]")
    assert set(items["system"]) == {"Be brief.", ""}


def test_request_keys_differ_per_template_by_the_rendered_prompt_alone(tmp_path: Path) -> None:
    from benchc.compiler.spec.models import Generation
    from benchc.runtime.run.core import request_digest

    items = _compile(_spec(tmp_path), tmp_path / "m")
    keys = {request_digest({"backend": "echo"}, "generate", Generation(), p, None, [], 0) for p in items["prompt"]}
    assert len(keys) == items.height


def test_the_manifest_is_the_same_in_processes_of_other_hash_seeds(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '{ choice = { a = "A {{ record.question }}", b = "B {{ record.question }}" } }',
                 '\n[generation]\ntemperature = { grid = [0.0, 0.5] }\n')
    results = []
    for seed in ("0", "4242"):
        out = tmp_path / f"m{seed}"
        done = cli("compile", spec, "-o", out, "--cache", tmp_path / f"c{seed}", "--no-version-check",
                   env={"PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        results.append((json.loads((out / "lock.json").read_text())["manifest_digest"],
                        (out / "items.parquet").read_bytes()))
    assert results[0] == results[1]


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("template, key, words", [
    ("{ grid = {} }", "prompt.template", "at least one value"),
    ("{ grid = [] }", "prompt.template", "at least one value"),
    ('{ grid = { terse = "{{ record.question ", full = "{{ record.question }}" } }', "prompt.template.grid.terse",
     "syntax"),
    ('{ grid = { a = "{{ record.question }}", b = "{{ record.question }}" } }', "prompt.template",
     "same value under two names"),
    ('{ grid = ["{{ record.question }}", "{{ record.question }}"] }', "prompt.template", "same value under two names"),
    ('{ grid = { terse = "{{ questin }}" } }', "prompt.template.grid.terse", "undefined variable 'questin'"),
    ('{ grid = { terse = 3 } }', "prompt.template.grid.terse", "a swept template is a string"),
    ('{ text = "x" }', "prompt.template", "a template is a string"),
])
def test_a_bad_template_sweep_is_one_message_with_its_key_path(tmp_path: Path, template: str, key: str,
                                                               words: str) -> None:
    with pytest.raises(SpecError) as caught:
        api.validate(_spec(tmp_path, template))
    text = str(caught.value)
    assert key in text and words in (text.lower() if words == "syntax" else text), text


def test_a_name_written_twice_is_refused_by_toml_with_its_line(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '{ grid = { a = "x {{ record.question }}", a = "y {{ record.question }}" } }')
    done = cli("validate", spec)
    assert done.returncode == 2 and "spec.toml" in done.stderr and "a" in done.stderr, done.stderr


# --- the run -------------------------------------------------------------------------------------

def test_echo_answers_give_one_row_per_template_counted_by_hand_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    api.compile(spec, tmp_path / "m", cache_dir=tmp_path / "c", progress=False, check_version=False)
    [first] = api.run(tmp_path / "m", tmp_path / "r1", model="echo", cache_dir=tmp_path / "c",
                      store_dir=tmp_path / "s", progress=False)
    assert (first.requests, first.ran) == (6, 6)
    [again] = api.run(tmp_path / "m", tmp_path / "r2", model="echo", cache_dir=tmp_path / "c",
                      store_dir=tmp_path / "s", progress=False)
    assert (again.cached, again.ran) == (6, 0)
    [metric] = api.score(tmp_path / "r1", cache_dir=tmp_path / "c", store_dir=tmp_path / "s")["metrics"]
    rows = {row["template"]: row for row in metric["rows"]}
    # echo answers the prompt itself: "right" renders the answer (3 of 3), "asked" the question (0 of 3)
    assert sorted(rows) == ["asked", "right"]
    assert (rows["right"]["accuracy"], rows["asked"]["accuracy"]) == (100.0, 0.0)
    assert all(row["items"] == 3 for row in rows.values())


STAGES = """
[[stage]]
id = "ask"

[[stage]]
id = "again"
backend = "echo"
input = "ask"
template = { grid = { plain = "{{ answer }}", loud = "{{ answer }}!" } }
"""


def test_a_stage_template_sweep_makes_items_per_name_and_renders_each_at_run_time(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '"{{ record.question }}"', STAGES)
    spec.write_text(spec.read_text().replace('by = ["template"]', 'by = ["again.template"]\nstage = "again"'))
    items = _compile(spec, tmp_path / "m")
    assert items.height == 6
    assert all(i.endswith(("#prompt[again.template=plain]", "#prompt[again.template=loud]")) for i in items["item_id"])
    [ask, again] = api.run(tmp_path / "m", tmp_path / "r", model="echo", cache_dir=tmp_path / "cache",
                           store_dir=tmp_path / "s", progress=False)
    assert (again.requests, again.ran) == (6, 6)  # the first stage's prompts are equal, its keys shared
    answers = pl.read_parquet(tmp_path / "r" / "responses.parquet").filter(pl.col("stage") == "again")
    by_item = dict(zip(answers["item_id"], answers["text"]))
    for item_id, text in by_item.items():
        assert text.endswith("!") == item_id.endswith("=loud]"), (item_id, text)
    [rerun_ask, rerun_again] = api.run(tmp_path / "m", tmp_path / "r2", model="echo", cache_dir=tmp_path / "cache",
                                       store_dir=tmp_path / "s", progress=False)
    assert (rerun_ask.ran, rerun_again.ran) == (0, 0)


def test_a_stage_template_with_a_syntax_error_names_its_key_path(tmp_path: Path) -> None:
    spec = _spec(tmp_path, '"{{ record.question }}"', STAGES.replace('"{{ answer }}!"', '"{{ answer !"'))
    with pytest.raises(SpecError) as caught:
        api.validate(spec)
    assert "stage[1].template.grid.loud" in str(caught.value)


# --- versioning ----------------------------------------------------------------------------------

@pytest.mark.parametrize("path, before, after, kind, needed", [
    ("generation.temperature.grid", [0.2, 0.7], [0.2, 0.7, 1.0], "changed", "minor"),
    ("generation.temperature.grid", [0.2, 0.7], [0.2], "changed", "major"),
    ("prompt.template.grid.terse", None, "{{ text }} In one word.", "added", "minor"),
    ("prompt.template.grid.terse", "{{ text }} In one word.", None, "removed", "major"),
    ("stage[again].template.grid.loud", None, "{{ answer }}!", "added", "minor"),
])
def test_a_sweep_value_added_needs_a_minor_bump_and_one_removed_a_major(path: str, before: object, after: object,
                                                                        kind: str, needed: str) -> None:
    from benchc.compiler.diff.core import section_of
    from benchc.compiler.diff.items import ItemDiff

    change = Change(section_of(path, "other"), path, before, after, kind)
    items = ItemDiff(6, 9, added=3) if needed == "minor" else ItemDiff(6, 3, removed=3)
    assert needed_bump([change], [], items) == needed


def test_diff_of_an_added_generation_value_is_minor_with_the_settings_cause(tmp_path: Path) -> None:
    a = _spec(tmp_path, extra='\n[generation]\ntemperature = { grid = [0.0] }\n', name="a.toml")
    b = _spec(tmp_path, extra='\n[generation]\ntemperature = { grid = [0.0, 0.5] }\n', name="b.toml")
    done = cli("diff", a, b, "--format", "json", "--cache", tmp_path / "c")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert (report["items"]["added"], report["items"]["removed"], report["items"]["changed"]) == (6, 0, 0)
    assert report["items"]["added_causes"] == {"settings": 6}  # 3 records x 2 templates at temperature 0.5
    assert report["bump"]["needed"] == "minor"


def test_diff_of_an_added_template_is_minor_with_the_settings_cause(tmp_path: Path) -> None:
    a = _spec(tmp_path, '{ grid = { right = "{{ record.answer }}" } }', name="a.toml")
    b = _spec(tmp_path, name="b.toml")
    done = cli("diff", a, b, "--format", "json", "--cache", tmp_path / "c")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert (report["items"]["added"], report["items"]["removed"], report["items"]["changed"]) == (3, 0, 0)
    assert report["items"]["added_causes"] == {"settings": 3}
    assert report["bump"]["needed"] == "minor"


def test_a_template_turned_into_a_sweep_is_one_spec_change_at_its_key() -> None:
    from benchc.compiler.diff import spec_changes

    before = {"prompt": {"template": "{{ text }}"}}
    after = {"prompt": {"template": {"grid": {"terse": "{{ text }} In one word.", "plain": "{{ text }}"}}}}
    [change] = spec_changes(before, after)
    assert (change.path, change.kind, change.section) == ("prompt.template", "changed", "templates")
    assert change.after == {"grid.terse": "{{ text }} In one word.", "grid.plain": "{{ text }}"}
