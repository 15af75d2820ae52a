"""`benchc diff-runs`: two runs paired by item id; per-measure paired differences with seeded
bootstrap intervals, McNemar's test for binary measures, flipped items, items only in one run,
and the content changes between two versions of a benchmark."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import binomtest, chi2

from benchc import api
from benchc.cli import main
from benchc.runtime.report.diff_runs import mcnemar, paired_bootstrap
from support import rule_backends  # noqa: F401  (registers the test-echo backend)
from test_run_plan import _spec


# statistics ---------------------------------------------------------------------------------------

def test_mcnemar_is_exact_for_few_discordant_pairs_and_chi_squared_otherwise() -> None:
    a, b = np.array([1] * 1 + [0] * 9 + [1] * 20), np.array([0] * 1 + [1] * 9 + [1] * 20)
    exact = mcnemar(a, b)
    assert (exact["a_only"], exact["b_only"], exact["method"]) == (1, 9, "exact binomial")
    assert exact["p"] == pytest.approx(binomtest(1, 10, 0.5).pvalue)
    a, b = np.array([1] * 10 + [0] * 30), np.array([0] * 10 + [1] * 30)
    large = mcnemar(a, b)
    assert large["statistic"] == pytest.approx(19 ** 2 / 40) and large["p"] == pytest.approx(chi2.sf(19 ** 2 / 40, 1))
    assert mcnemar(np.ones(5), np.ones(5))["p"] == 1.0


def test_paired_bootstrap_is_seeded_and_both_resampling_paths_agree() -> None:
    rng = np.random.default_rng(1)
    diffs = rng.choice([-1.0, 0.0, 1.0], size=2000, p=[0.2, 0.5, 0.3])
    low, high = paired_bootstrap(diffs, 10_000, seed=0)
    assert low < diffs.mean() < high and (low, high) == paired_bootstrap(diffs, 10_000, seed=0)
    jittered = diffs + rng.normal(0, 1e-9, size=diffs.size)  # > 256 distinct values: the index path
    low2, high2 = paired_bootstrap(jittered, 10_000, seed=0)
    assert low2 == pytest.approx(low, abs=0.01) and high2 == pytest.approx(high, abs=0.01)
    se = diffs.std() / np.sqrt(diffs.size)  # the normal approximation, for scale
    assert high - low == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_bootstrap_of_100000_binary_pairs_is_fast() -> None:
    diffs = np.random.default_rng(0).integers(-1, 2, size=100_000).astype(float)
    started = time.perf_counter()
    paired_bootstrap(diffs, 10_000, seed=0)
    assert time.perf_counter() - started < 2.0


# two runs ----------------------------------------------------------------------------------------

def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def _expected_correct(manifest: Path, suffix: str) -> dict[str, float]:
    items = pl.read_parquet(manifest / "items.parquet")
    out = {}
    for row in items.iter_rows(named=True):
        answer = " " + _normal(row["prompt"] + " " + suffix) + " "
        out[row["item_id"]] = float(any(f" {_normal(t)} " in answer for t in json.loads(row["targets"])["answer"]))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    common = {"cache_dir": root / "cache", "store_dir": root / "store", "progress": False}
    v1 = api.compile(_spec(root / "v1"), root / "m1", **common).manifest_dir

    def edit(t: str) -> str:
        return t.replace("grid = [0, 1, 2, 3]", "grid = [0, 1, 2]").replace('template = "{{ text }}"',
                                                                            'template = "Q: {{ text }}"')

    v2 = api.compile(_spec(root / "v2", edit), root / "m2", **common).manifest_dir
    api.run(v1, root / "echo", model="test-echo", **common)
    api.run(v1, root / "yes", model="test-echo:suffix=yes", **common)
    api.run(v2, root / "echo-v2", model="test-echo", **common)
    return root


def test_two_models_on_one_manifest(runs: Path) -> None:
    result = api.diff_runs(runs / "echo", runs / "yes")
    assert (result.paired, result.only_a, result.only_b, result.answers_changed) == (96, 0, 0, 96)
    assert result.content is None
    measures = {m.name: m for m in result.measures}
    assert set(measures) == {"correct", "agreement"}
    expected_a = _expected_correct(runs / "m1", "")
    expected_b = _expected_correct(runs / "m1", "yes")
    correct = measures["correct"]
    assert correct.binary and correct.n == 96
    assert correct.mean_a == pytest.approx(np.mean(list(expected_a.values())))
    assert correct.mean_b == pytest.approx(np.mean(list(expected_b.values())))
    gained = sorted(i for i in expected_a if expected_b[i] > expected_a[i])
    lost = sorted(i for i in expected_a if expected_b[i] < expected_a[i])
    assert (correct.mcnemar["b_only"], correct.mcnemar["a_only"]) == (len(gained), len(lost))
    assert correct.flipped["gained"] == gained[:5] and correct.mcnemar["p"] < 0.001
    assert correct.ci[0] <= correct.diff <= correct.ci[1] and correct.ci[0] > 0
    agreement = measures["agreement"]  # the four phrasings of a question echo four different answers
    assert (agreement.mean_a, agreement.mean_b, agreement.n) == (0.0, 0.0, 96)


def test_two_versions_pair_items_by_id_and_report_the_rest(runs: Path) -> None:
    result = api.diff_runs(runs / "echo", runs / "echo-v2")
    assert (result.paired, result.only_a, result.only_b) == (72, 24, 0)
    assert all(i.endswith("#question[index=3]") for i in result.examples["only_a"])
    assert result.content["changed"] == 72 and result.content["causes"] == {"template": 72}
    assert [c["path"] for c in result.content["spec"]] == ["node[question].params.index.grid", "prompt.template"]
    assert result.answers_changed == 72  # "Q: " echoed back


def test_per_item_values_from_scores_json_are_compared(runs: Path, tmp_path: Path) -> None:
    import shutil

    for name, value in (("echo", 0), ("yes", 1)):
        folder = tmp_path / name
        shutil.copytree(runs / name, folder)
        items = pl.read_parquet(runs / "m1" / "items.parquet")["item_id"].to_list()
        per_item = {item: {"acc": value if i % 2 else 0, "label": "x"} for i, item in enumerate(items)}
        scores = {"metrics": [{"name": "custom", "columns": [], "rows": [], "details": {"per_item": per_item}}]}
        (folder / "scores.json").write_text(json.dumps(scores))
    result = api.diff_runs(tmp_path / "echo", tmp_path / "yes")
    custom = {m.name: m for m in result.measures}["custom.acc"]
    assert (custom.mean_a, custom.mean_b, custom.mcnemar["b_only"]) == (0.0, 0.5, 48)


def test_cli(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff-runs", str(runs / "echo"), str(runs / "yes"), "--resamples", "2000"]) == 0
    out = capsys.readouterr().out
    assert "96 paired items, 0 only in A, 0 only in B" in out and "McNemar (chi-squared" in out
    assert main(["diff-runs", str(runs / "echo"), str(runs / "echo-v2"), "-f", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["only_a"] == 24 and report["bootstrap"] == {"resamples": 10000, "seed": 0, "level": 0.95}
    assert main(["diff-runs", str(runs / "echo"), str(runs / "m1")]) == 2
    err = capsys.readouterr().err
    assert "is not a run folder" in err and "Traceback" not in err
    assert main(["diff-runs", str(runs / "echo"), str(runs / "yes"), "--stage", "nope"]) == 2
    assert "no stage 'nope'" in capsys.readouterr().err
