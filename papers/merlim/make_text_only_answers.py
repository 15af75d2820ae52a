"""Writes papers/merlim/answers/<model>/relationships_<set>_text_only.jsonl: the answers of two
made-up language models to MERLIM's LLM-only prompt ("<Question> Please answer yes, no, or do not
know.", Table 3), so every cell of papers/merlim.toml's table3 can be counted by hand
(tests/test_paper_merlim.py does):

* ``always-yes`` says "Yes." to every question (as in the image runs).
* ``yes-or-unsure`` says "Yes." where MERLIM's answer is yes and "I do not know." where it is no:
  its accuracy is always-yes's (every "I do not know" counts as wrong), its starred accuracy
  (yes/no answers only) is 100.

Usage (after the specs' items change; then `benchc reproduce papers/merlim.toml --record`):
    .venv/bin/python papers/merlim/make_text_only_answers.py
"""

from __future__ import annotations

import ast
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = ("random", "curated")


def expected(attrs: dict[str, str], item_id: str, targets: str) -> str:
    """MERLIM's answer for the item's image and polarity (the record's `answers`)."""
    (truth,) = json.loads(targets).values()
    answers = ast.literal_eval(truth[0])  # the target renders the record's mapping
    negated = item_id.rsplit("#", 1)[1].split("/")[-1] == "negated"  # the negated node, after its input
    return str(answers[f"{attrs['image']}_neg" if negated else attrs["image"]])


def answer(model: str, truth: str) -> str:
    return "Yes." if model == "always-yes" or truth == "yes" else "I do not know."


def main() -> None:
    import polars as pl

    from benchc import api

    with tempfile.TemporaryDirectory() as work:
        for name in SETS:
            spec = f"relationships_{name}_text_only"
            compiled = api.compile(ROOT / "specs" / "merlim" / f"{spec}.toml", Path(work) / spec,
                                   cache_dir=Path(work) / "cache", store_dir=Path(work) / "store", progress=False)
            items = pl.read_parquet(compiled.manifest_dir / "items.parquet").sort("item_id")
            for model in ("always-yes", "yes-or-unsure"):
                rows = [{"item_id": item_id, "response": answer(model, expected(json.loads(attrs), item_id, targets))}
                        for item_id, attrs, targets in zip(items["item_id"], items["attrs"], items["targets"],
                                                           strict=True)]
                folder = ROOT / "papers" / "merlim" / "answers" / model
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{spec}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
