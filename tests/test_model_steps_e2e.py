"""Model steps end to end through the runtime's client: the bundled specs that ask a model at
compile time, compiled with tiny random models built here (their answers are gibberish, so this
checks the plumbing: requests, the response store, fingerprints in keys and locks, resuming)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from benchc.runtime.backends.hf import HFVision, model_digest
from conftest import SPECS, cli
from support.tiny_llm import build_tiny_llm
from support.tiny_vlm import build_tiny_llava

from benchc import api

pytestmark = pytest.mark.slow  # builds and runs (tiny) models

MMCBENCH = SPECS / "mmcbench" / "text_corruptions_model.toml.example"
REPHRASING = SPECS / "mm_r3" / "question_rephrasing_llm.toml.example"
RELATIONS = SPECS / "merlim" / "relationships_llm.toml.example"
VLM_CHECK = SPECS / "examples" / "object_removal_vlm_check.toml.example"
MODEL_NODES = ("german", "back_translation", "style_paraphraser", "paraphrase")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Data roots holding models/llm and models/vlm: LLaVA weights of seed 0 and of seed 1, and
    a text-only causal LM."""
    base = tmp_path_factory.mktemp("models")
    llava = build_tiny_llava(base / "llava0", seed=0)
    roots = {"llava0": base / "root0", "llava1": base / "root1", "llm": base / "root-llm"}
    for name, weights in (("llava0", llava), ("llava1", build_tiny_llava(base / "llava1", seed=1))):
        (roots[name] / "models").mkdir(parents=True)
        shutil.copytree(weights, roots[name] / "models" / "llm")
    (roots["llm"] / "models").mkdir(parents=True)
    build_tiny_llm(roots["llm"] / "models" / "llm", seed=0)
    shutil.copytree(llava, roots["llm"] / "models" / "vlm")
    return roots


def compile_cli(spec: Path, out: Path, root: Path, cache: Path, store: Path, *args: str) -> tuple[str, dict]:
    done = cli("compile", spec, "-o", out, "--data-root", root, "--cache", cache, "--store", store, *args,
               check=True)
    return done.stdout, json.loads((out / "lock.json").read_text())


def answered(stdout: str) -> tuple[int, int]:
    """(distinct requests, answered by a model) from `benchc compile`'s model-steps line."""
    match = re.search(r"(\d+) distinct requests: (\d+) answered by a model", stdout)
    assert match, stdout
    return int(match.group(1)), int(match.group(2))


def texts(out: Path) -> dict[str, str]:
    frame = pl.read_parquet(out / "items.parquet")
    return dict(zip(frame["item_id"], frame["text"]))


def test_mmcbench_model_corruptions_compile_and_recompile_without_the_model(tmp_path: Path,
                                                                            models: dict[str, Path]) -> None:
    store = tmp_path / "store"
    stdout, lock = compile_cli(MMCBENCH, tmp_path / "a", models["llava0"], tmp_path / "c1", store)
    assert answered(stdout) == (20, 20) and lock["item_count"] == 20 and lock["dropped"] == {}
    frame = pl.read_parquet(tmp_path / "a" / "items.parquet")
    corruptions = [json.loads(a)["corruption"] for a in frame["attrs"]]
    assert sorted(set(corruptions)) == ["back_translation", "clean", "paraphrase", "style_paraphraser"]
    assert all(t and "\n" not in t for t in frame["text"])
    digest = model_digest(str((models["llava0"] / "models" / "llm").resolve()))
    assert sorted(lock["model_steps"]) == sorted(MODEL_NODES)
    for node in MODEL_NODES:
        [pin] = lock["model_steps"][node]
        assert pin["backend"] == "hf:models/llm" and pin["fingerprint"]["model"] == digest
        assert pin["fingerprint"]["generation"] == pin["generation"]
    # a fresh compile cache, the same store: every answer comes from the store, nothing changes
    stdout, again = compile_cli(MMCBENCH, tmp_path / "b", models["llava0"], tmp_path / "c2", store)
    assert answered(stdout) == (20, 0) and again["manifest_digest"] == lock["manifest_digest"]
    # the same cache: the memo answers before any model step
    stdout, _ = compile_cli(MMCBENCH, tmp_path / "d", models["llava0"], tmp_path / "c2", store)
    assert "(unchanged)" in stdout and "model steps" not in stdout


def lineage_keys(out: Path) -> set[str]:
    frame = pl.read_parquet(out / "items.parquet")
    return {s["key"] for line in frame["lineage"] for s in json.loads(line) if s["node"] in MODEL_NODES}


def test_other_weights_give_other_keys_answers_and_pins(tmp_path: Path, models: dict[str, Path]) -> None:
    store, n = tmp_path / "store", ("--set", "sample.n=2")
    _, first = compile_cli(MMCBENCH, tmp_path / "a", models["llava0"], tmp_path / "c", store, *n)
    stdout, second = compile_cli(MMCBENCH, tmp_path / "b", models["llava1"], tmp_path / "c", store, *n)
    assert answered(stdout) == (8, 8)  # nothing served from the first model's answers
    assert lineage_keys(tmp_path / "a").isdisjoint(lineage_keys(tmp_path / "b"))
    assert second["manifest_digest"] != first["manifest_digest"]
    first_texts, second_texts = texts(tmp_path / "a"), texts(tmp_path / "b")
    model_items = [i for i in first_texts if "#source_text" in i]
    assert any(first_texts[i] != second_texts[i] for i in model_items)
    assert all(first_texts[i] == second_texts[i] for i in first_texts if i not in model_items)  # clean
    fingerprints = {second["model_steps"][node][0]["fingerprint"]["model"] for node in MODEL_NODES}
    assert fingerprints.isdisjoint({first["model_steps"][node][0]["fingerprint"]["model"] for node in MODEL_NODES})


def test_an_interrupted_compile_resumes_from_the_response_store(tmp_path: Path, models: dict[str, Path],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    n = ["sample.n=2"]
    roots = [models["llava0"]]
    reference = api.compile(MMCBENCH, tmp_path / "ref", cache_dir=tmp_path / "c0", store_dir=tmp_path / "s0",
                            data_roots=roots, overrides=n, progress=False)
    assert reference.model_calls == 8  # four nodes, one batch of two prompts each

    real, batches = HFVision.run_encoded, []  # what the executor calls for each batch (encoded ahead)

    def interrupted(self: HFVision, requests: list, encoded: object, load_media: object) -> list:
        batches.append(len(requests))
        if len(batches) == 3:
            raise KeyboardInterrupt
        return real(self, requests, encoded, load_media)

    monkeypatch.setattr(HFVision, "run_encoded", interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.compile(MMCBENCH, tmp_path / "m", cache_dir=tmp_path / "c", store_dir=tmp_path / "s",
                    data_roots=roots, overrides=n, progress=False)
    assert not (tmp_path / "m").exists()
    monkeypatch.setattr(HFVision, "run_encoded", real)
    resumed = api.compile(MMCBENCH, tmp_path / "m", cache_dir=tmp_path / "c", store_dir=tmp_path / "s",
                          data_roots=roots, overrides=n, progress=False)
    assert resumed.model_calls == 4  # the two batches committed before the interruption are not asked again
    assert resumed.lock["manifest_digest"] == reference.lock["manifest_digest"]


def test_rephrasing_and_question_building_specs_run_on_a_text_only_model(tmp_path: Path,
                                                                          models: dict[str, Path]) -> None:
    # The spec scores only the rephrasings (metric where): the random model's are all dropped, so
    # the compile is refused as scoring nothing; this test checks the model step, so it scores all.
    stdout, lock = compile_cli(REPHRASING, tmp_path / "r", models["llm"], tmp_path / "c", tmp_path / "s",
                               "--set", "metric.0.where={}")
    assert answered(stdout) == (24, 24)  # 72 variants, one request per question
    frame = pl.read_parquet(tmp_path / "r" / "items.parquet")
    kept = frame.filter(pl.col("node") == "rephrased").height
    assert frame.filter(pl.col("node") == "original").height == 24
    assert kept + sum(lock["dropped"].get("rephrased", {}).values()) == 72
    assert set(lock["dropped"].get("rephrased", {})) <= {"fewer than 3 rephrasings", "model refused"}
    assert lock["model_steps"]["rephrased"][0]["fingerprint"]["model"] == model_digest(
        str((models["llm"] / "models" / "llm").resolve()))

    # The random model's 8 built questions are gibberish: the validator drops each one (in both
    # nodes; `question` repeats `asked` from the store), and a manifest of 0 items is refused
    # with the counts rather than written (issue 13).
    done = cli("compile", RELATIONS, "-o", tmp_path / "q", "--data-root", models["llm"],
               "--cache", tmp_path / "c", "--store", tmp_path / "s")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "the manifest would have 0 items" in done.stderr
    assert "asked: 8 not a yes/no question" in done.stderr
    assert "question: 8 not a yes/no question" in done.stderr
    assert not (tmp_path / "q").exists()


def test_the_vlm_check_spec_asks_about_both_images(tmp_path: Path, models: dict[str, Path]) -> None:
    # The random VLM answers neither yes nor no to any of the 6 checks: every variant is dropped
    # and the empty manifest is refused with the reason and the count (issue 13).
    done = cli("compile", VLM_CHECK, "-o", tmp_path / "v", "--data-root", models["llm"],
               "--cache", tmp_path / "c", "--store", tmp_path / "s")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "the manifest would have 0 items" in done.stderr and "checked: 6 unclear VLM answer" in done.stderr
    assert not (tmp_path / "v").exists()


def test_a_missing_model_fails_before_any_work_with_the_node_and_line(tmp_path: Path) -> None:
    done = cli("compile", MMCBENCH, "-o", tmp_path / "m", "--cache", tmp_path / "c", "--store", tmp_path / "s")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert re.search(r"text_corruptions_model\.toml\.example:\d+ node\[2\]\.params\.backend: node 'german': "
                     r"file 'models/llm' not found", done.stderr), done.stderr
    assert not (tmp_path / "s").exists()
