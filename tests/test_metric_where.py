"""A metric's ``where``: score only the items whose attributes take the listed values (MM-R3's
question rephrasing scores its three rephrasings, not the original question asked beside them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from benchc.cli import main
from benchc.compiler.metrics import METRIC_SCHEMAS
from conftest import SPECS

EXAMPLES = SPECS / "examples"
WHERE = '\n[[metric]]\nname = "general.accuracy"\ntarget = "answer"\nwhere = { perturbation = ["paraphrased"] }\n'


def _project(tmp_path: Path, metric: str) -> Path:
    shutil.copytree(EXAMPLES / "data", tmp_path / "data")
    spec = tmp_path / "paraphrase.toml"
    spec.write_text((EXAMPLES / "paraphrase.toml").read_text() + metric)
    return spec


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_where_scores_only_the_items_it_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _project(tmp_path, WHERE)
    code, _, err = _cli(capsys, "compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert code == 0, err
    items = pl.read_parquet(tmp_path / "m" / "items.parquet")
    answers = tmp_path / "answers.jsonl"
    with answers.open("w") as out:  # right on the paraphrases only
        for item_id, targets, attrs in zip(items["item_id"], items["targets"], items["attrs"]):
            right = json.loads(attrs)["perturbation"] == "paraphrased"
            out.write(json.dumps({"id": item_id, "answer": json.loads(targets)["answer"][0] if right else "?"}) + "\n")
    assert _cli(capsys, "import", tmp_path / "m", answers, "-o", tmp_path / "r")[0] == 0
    assert _cli(capsys, "score", tmp_path / "r")[0] == 0
    scores = json.loads((tmp_path / "r" / "scores.json").read_text())["metrics"]
    everything, paraphrases = scores[0], scores[2]
    assert {r["perturbation"]: r["accuracy"] for r in everything["rows"]} == {
        "lowercased": 0.0, "original": 0.0, "paraphrased": 100.0}
    paraphrased = items.filter(pl.col("attrs").str.contains('"perturbation":"paraphrased"')).height
    assert paraphrases["rows"] == [{**paraphrases["rows"][0], "accuracy": 100.0, "items": paraphrased}]
    assert f"Items: the {paraphrased} of {items.height} with perturbation in ['paraphrased'] (where)." \
        in paraphrases["notes"]


@pytest.mark.parametrize(("where", "fragments"), [
    ('{ perturbaton = ["paraphrased"] }', ["metric[2].where.perturbaton", "no item has the attribute",
                                          "did you mean 'perturbation'"]),
    ('{ perturbation = ["rephrased"] }', ["metric[2].where.perturbation", "the metric would score nothing",
                                         "values of perturbation: lowercased, original, paraphrased"]),
])
def test_a_where_that_names_nothing_is_refused_at_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         where: str, fragments: list[str]) -> None:
    spec = _project(tmp_path, WHERE.replace('{ perturbation = ["paraphrased"] }', where))
    code, _, err = _cli(capsys, "compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert code == 2 and "Traceback" not in err
    assert all(fragment in err for fragment in fragments), err
    assert not (tmp_path / "m").exists()


def test_an_empty_where_moves_no_spec_digest() -> None:
    """``where`` came after the metrics' first release: left out of the spec document while empty."""
    for name, schema in METRIC_SCHEMAS.items():
        required = {k: "answer" for k, f in schema.model_fields.items() if f.is_required()}
        try:
            params = schema.model_validate(required)
        except ValueError:
            continue  # a schema whose required keys need other values; the rest cover the base class
        assert "where" not in params.model_dump(), name
        assert params.model_copy(update={"where": {"a": [1]}}).model_dump()["where"] == {"a": [1]}
