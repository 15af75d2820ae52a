"""benchmarks/koala_import_check.py on a small synthetic copy of Koala's two released files: the
bundled Koala spec compiles over stand-in items, every model's answers are imported and scored
through the CLI, and koala.accuracy's counts equal the file's own in every cell (the script
asserts it), so an aggregate table made from those counts matches cell for cell. The real run
(the shared data, about 10 s) is in benchmarks/results/koala_import_check.txt."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "koala_import_check.py"


def _script():
    spec = importlib.util.spec_from_file_location("koala_import_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_reproduces_a_table_made_from_the_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check = _script()
    data = tmp_path / "data"
    data.mkdir()
    rows = []
    for m, model in enumerate(check.MODELS):
        for d, dataset in enumerate(check.DATASETS):
            for k in range(3):  # every outcome pattern the answers must reproduce, shifted per model
                bits = [(k + m + d + c) % 2 if c % 3 else (k * c + m) % 3 == 0 for c in range(6)]
                rows.append({"model": model, "dataset": dataset, "type": "counterfactual",
                             "context_score_perturbed": 5, "context_score_original": 5,
                             **{c: int(b) for c, b in zip(check.COLUMNS, bits)}})
    with (data / "context_scores.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with (data / "named.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["model_path", *(c.replace("_label", ",label") for c in check.COLUMNS), "dataset", "type"])
        for model, label in check.MODELS.items():
            for dataset in check.DATASETS:
                mine = [r for r in rows if r["model"] == model and r["dataset"] == dataset]
                writer.writerow([label, *(sum(r[c] for r in mine) / len(mine) for c in check.COLUMNS), dataset,
                                 "counterfactual"])
    tally = check.run_check(data, tmp_path / "work")
    out = capsys.readouterr().out
    assert tally == {"exact": 54}, out
    assert ("bundled spec specs/koala/counterfactual.toml: 268 counterfactual items (vqa 92, okvqa 89, webqa 87)"
            in out)
    assert "no item id, question or answer" in out
