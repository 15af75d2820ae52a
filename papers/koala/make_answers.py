"""Writes papers/koala/answers/<model>-<spec>.jsonl: the hand-built answers of two made-up
"models" to the bundled Koala specs, so every cell of papers/koala.toml can be counted by hand.

* ``refuser`` answers every item with Koala's refusal ("<RET> Sorry, I cannot determine the
  answer as there is not enough information. <RET>").
* ``echo`` answers every edited item (perturbed, counterfactual, conflicting) with the item's own
  expected answer (the new label, or Koala's refusal), every original item with "No." (its label
  is unknown in the bundled file) and every negative sample with "no" (which only
  negative_eval.py's ``count_no`` counts as an acknowledgment, on VQAv2 and OK-VQA). The
  contextualisation spec's items carry no expected answer: ``echo`` says "Yes." there (no
  acknowledgment).

Usage (after a spec's items change; then `benchc reproduce papers/koala.toml --record`):
    .venv/bin/python papers/koala/make_answers.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS = ("counterfactual", "parametric", "source_conflict", "negative_samples", "contextualization")
REFUSAL = "<RET> Sorry, I cannot determine the answer as there is not enough information. <RET>"


def answer(model: str, item_id: str, expected: str) -> str:
    if model == "refuser":
        return REFUSAL
    kind = item_id.split("/")[1]
    return {"original": "No.", "negative": "no"}.get(kind, expected)


def main() -> None:
    import polars as pl

    from benchc import api

    out = ROOT / "papers" / "koala" / "answers"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for spec in SPECS:
            manifest = Path(work) / spec
            api.compile(ROOT / "specs" / "koala" / f"{spec}.toml", manifest, cache_dir=Path(work) / "cache",
                        store_dir=Path(work) / "store", progress=False)
            items = pl.read_parquet(manifest / "items.parquet").sort("item_id")
            for model in ("refuser", "echo"):
                rows = [{"item_id": i, "response": answer(model, i, (json.loads(t).get("answer", ["Yes."]) or [""])[0])}
                        for i, t in zip(items["item_id"], items["targets"], strict=True)]
                (out / f"{model}-{spec}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
