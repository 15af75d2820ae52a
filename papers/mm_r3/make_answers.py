"""Writes papers/mm_r3/answers/<model>/<task>.jsonl: the hand-built answers of two made-up
"models" to the six bundled MM-R3 specs, so every cell of papers/mm_r3.toml can be counted by
hand (tests/test_paper_mmr3.py does).

* ``oracle`` answers every item with its ground truth, exactly (the first value of the metric's
  target: the easy-VQA answer, or the scene object's shape): Acc 100, S_GT 100, and the answers
  of a group are one string, so Con 100 and S_C 100; O_all 100.
* ``constant`` answers every item "zebra", a word that is no target and holds none as a
  substring: Acc 0; the answers of a group are one string, so Con 100 and S_C 100; S_GT is the
  mean MiniLM cosine of "zebra" with the targets (the one measured number); O_all is the
  harmonic mean of S_GT / 2 and 100.

The Sampling specs ask each item four times (``generation.n = 4``): each item gets four rows,
``sample`` 0-3, with the same answer. So do the temperature specs (Table 7), whose items are the
Sampling ones once per temperature: a stand-in answers alike at every temperature.

Usage (after a spec's items change; then `benchc reproduce papers/mm_r3.toml --record`):
    .venv/bin/python papers/mm_r3/make_answers.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASKS = ("question_rephrasing", "image_restyling", "context_reasoning",
         "question_rephrasing_sampling", "image_restyling_sampling", "context_reasoning_sampling",
         "question_rephrasing_temperature", "image_restyling_temperature", "context_reasoning_temperature",
         "image_restyling_resolution")
MODELS = ("oracle", "constant")
CONSTANT = "zebra"


def answer(model: str, targets: dict[str, list[str]]) -> str:
    if model == "constant":
        return CONSTANT
    (truth,) = targets.values()  # each spec has one metric target: its list of answers
    return truth[0]


def main() -> None:
    import polars as pl

    from benchc import api

    out = ROOT / "papers" / "mm_r3" / "answers"
    with tempfile.TemporaryDirectory() as work:
        for task in TASKS:
            manifest = Path(work) / task
            compiled = api.compile(ROOT / "specs" / "mm_r3" / f"{task}.toml", manifest,
                                   cache_dir=Path(work) / "cache", store_dir=Path(work) / "store", progress=False)
            samples = 4 if task.endswith(("_sampling", "_temperature")) else 1
            items = pl.read_parquet(compiled.manifest_dir / "items.parquet").sort("item_id")
            for model in MODELS:
                rows = []
                for item_id, targets in zip(items["item_id"], items["targets"], strict=True):
                    text = answer(model, json.loads(targets))
                    assert model == "oracle" or not any(t in CONSTANT for v in json.loads(targets).values()
                                                        for t in v), (item_id, targets)
                    rows += ([{"item_id": item_id, "response": text}] if samples == 1 else
                             [{"item_id": item_id, "sample": k, "response": text} for k in range(samples)])
                folder = out / model
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
