"""MM-R3 context reasoning end to end through the CLI, on the hf backend with a tiny random-weight
LLaVA built in the test (tokenizer trained here, save_pretrained, reloaded by path)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import CONTEXT_REASONING, cli
from support.tiny_vlm import build_tiny_llava

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"), seed=0)


def test_eval_with_a_tiny_vlm(tmp_path: Path, tiny_llava: Path) -> None:
    out = tmp_path / "out"
    done = cli("eval", CONTEXT_REASONING, "--model", f"hf:{tiny_llava},batch_size=4", "--set", "sample.n=5",
               "--set", "generation.max_new_tokens=6", "-o", out, "--cache", tmp_path / "c",
               "--store", tmp_path / "s", check=True)
    scores = json.loads((out / "run" / "scores.json").read_text())
    [metric] = scores["metrics"]
    [row] = metric["rows"]
    assert metric["name"] == "mmr3.all" and row["groups"] == 5 and row["responses"] == 15
    for key in ("Acc", "S_GT", "Con", "S_C", "O_all"):
        assert 0.0 <= row[key] <= 100.0
    assert "| groups | responses | Acc | S_GT | Con | S_C | O_all |" in done.stdout
    items = pl.read_parquet(out / "manifest" / "items.parquet")
    assert items.height == 15 and items["group_id"].n_unique() == 5
    attrs = [json.loads(a) for a in items["attrs"]]
    assert {a["shape"] for a in attrs} <= {"rectangle", "ellipse"} and {a["lines"] for a in attrs} <= {1, 3, 5, 7}
    responses = pl.read_parquet(out / "run" / "responses.parquet")
    assert responses.height == 15 and responses["kind"].unique().to_list() == ["text"]


def test_changed_generation_setting_never_reuses_a_cached_answer(tmp_path: Path, tiny_llava: Path) -> None:
    common = ("--model", f"hf:{tiny_llava}", "--set", "sample.n=2",
              "--cache", tmp_path / "c", "--store", tmp_path / "s")
    cli("eval", CONTEXT_REASONING, *common, "--set", "generation.max_new_tokens=4", "-o", tmp_path / "a", check=True)
    cli("eval", CONTEXT_REASONING, *common, "--set", "generation.max_new_tokens=5", "-o", tmp_path / "b", check=True)
    a = json.loads((tmp_path / "a" / "run" / "run.json").read_text())["stages"][0]
    b = json.loads((tmp_path / "b" / "run" / "run.json").read_text())["stages"][0]
    assert a["ran"] == 6 and b["cached"] == 0 and b["ran"] == 6


def test_hf_backend_with_a_missing_model_fails_before_any_request(tmp_path: Path) -> None:
    done = cli("eval", CONTEXT_REASONING, "--model", f"hf:{tmp_path / 'nope'}", "--set", "sample.n=1",
               "-o", tmp_path / "o", "--cache", tmp_path / "c", "--store", tmp_path / "s")
    assert done.returncode == 2 and "no model folder with config.json" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o" / "run").exists()


def test_sampling_setting_asks_each_input_n_times(tmp_path: Path, tiny_llava: Path) -> None:
    """MM-R3's "Sampling" setting: the same input several times, at a temperature."""
    out = tmp_path / "out"
    cli("eval", CONTEXT_REASONING, "--model", f"hf:{tiny_llava}", "--set", "sample.n=2",
        "--set", "generation.n=4", "--set", "generation.temperature=1.0", "--set", "generation.max_new_tokens=4",
        "-o", out, "--cache", tmp_path / "c", "--store", tmp_path / "s", check=True)
    responses = pl.read_parquet(out / "run" / "responses.parquet")
    assert responses.height == 2 * 3 * 4 and sorted(responses["sample"].unique()) == [0, 1, 2, 3]
    assert responses["key"].n_unique() == responses.height
    [row] = json.loads((out / "run" / "scores.json").read_text())["metrics"][0]["rows"]
    assert row["responses"] == 24
