"""lm-eval's own consumers read `benchc score --format lm-eval` (issue 27 item 3), under a real
lm-eval 0.4.13 with wandb 0.31.0 (BENCHC_LMEVAL_PYTHON; scripts/test_real.sh makes that
environment): `make_table` on results and groups, the Zeno script's discovery and frames, and
the WandbLogger (offline) with the samples, each giving benchc's numbers as fractions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.hashed_answers import World

LMEVAL = os.environ.get("BENCHC_LMEVAL_PYTHON", "")
SCRIPT = Path(__file__).with_name("lm_eval_consumers.py")
FILTER = "first_line+normalize"

pytestmark = pytest.mark.skipif(not LMEVAL, reason="BENCHC_LMEVAL_PYTHON (an lm-eval 0.4.13 python) is not set")


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> tuple[World, dict[str, Any], dict[str, Any]]:
    root = tmp_path_factory.mktemp("consumers")
    world = World(root)
    done = subprocess.run([LMEVAL, str(SCRIPT), str(world.run / "lm-eval"), "--wandb-dir", str(root / "wandb")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = (world.run / "lm-eval").glob("*/results_*.json")
    return world, json.loads(path.read_text()), json.loads(done.stdout.strip().splitlines()[-1])


def test_make_table_prints_every_task_and_group(read: tuple[World, dict[str, Any], dict[str, Any]]) -> None:
    _, results, report = read
    for task, entry in results["results"].items():
        line = next(row for row in report["table"].splitlines() if entry["alias"] in row)
        value = next(v for k, v in entry.items() if k.endswith("," + FILTER) and "_stderr" not in k and "ci_" not in k)
        assert f"{value:.4f}" in report["table"], (task, line)
    groups = [row for row in report["groups_table"].splitlines()[2:] if row.strip()]
    assert len(groups) == len(results["groups"]) == 2
    for name, entry in results["groups"].items():
        [row] = [r for r in groups if name in r]
        value = next(v for k, v in entry.items() if k.endswith("," + FILTER) and "_stderr" not in k)
        assert f"{value:.4f}" in row


def test_the_zeno_script_finds_the_model_and_every_task(read: tuple[World, dict[str, Any], dict[str, Any]]) -> None:
    _, results, report = read
    assert report["model_dirs"] == ["test-hashed"]
    assert set(report["zeno"]) == set(results["configs"])
    for task, frame in report["zeno"].items():
        assert frame["rows"] == results["results"][task]["sample_len"]
        for metric, mean in frame["means"].items():
            assert mean == pytest.approx(results["results"][task][f"{metric},{FILTER}"], abs=1e-6)


def test_wandb_logs_the_numbers_as_fractions(read: tuple[World, dict[str, Any], dict[str, Any]]) -> None:
    world, results, report = read
    logged = report["wandb"]["logged"]
    for task, entry in results["results"].items():
        for key, value in entry.items():
            if isinstance(value, float):
                assert logged[f"{task}/{key}"] == value
    rows = {r["perturbation"]: r["accuracy"] for r in world.scores["metrics"][0]["rows"]}
    for perturbation, percent in rows.items():
        task = f"examples_image_invariance_general_accuracy_perturbation_{perturbation}"
        assert logged[f"{task}/accuracy,{FILTER}"] == pytest.approx(percent / 100, abs=1e-9)
