"""`benchc show`: items of a manifest, filtered by columns and perturbation attributes."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import cli
from specfiles import write_mini


def test_show_filters_by_attribute_and_column(tmp_path: Path) -> None:
    spec = write_mini(tmp_path, n=3)
    cli("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    done = cli("show", tmp_path / "m", "--where", "corruption=leet_letters", "--json", check=True)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 3
    assert all(r["attrs"] == {"corruption": "leet_letters", "severity": "heavy", "selection": "hard",
                              "perturbation": "text"} for r in rows)
    assert all(r["prompt"] == r["text"] and r["lineage"][0]["op"] == "mmcbench.released_text" for r in rows)
    one = cli("show", tmp_path / "m", "--where", f"group_id={rows[0]['group_id']}", "--json", check=True)
    assert len(one.stdout.splitlines()) == 3
    table = cli("show", tmp_path / "m", "-n", "2", check=True).stdout
    assert "item_id" in table and "#text[" in table


def test_show_refuses_a_folder_that_is_not_a_manifest(tmp_path: Path) -> None:
    done = cli("show", tmp_path)
    assert done.returncode == 2 and "is not a compiled manifest" in done.stderr
