"""Writes papers/merlim/answers/<model>/object_recognition{,_vanished}.jsonl: the answers of the
two made-up "models" of papers/merlim.toml to MERLIM's object recognition (five instructions,
original and edited image), so every cell of its recognition tables and figures can be counted
by hand (tests/test_paper_merlim.py does). Offline the ground truth of an image is the removed
object's class only (object_recognition.toml's header): the original holds it, the edited image
holds it only if an instance of it is left.

* ``always-yes`` says "Yes." to every instruction: no noun, an unsuitable answer (P = R = 0).
* ``originals-only`` answers as if it saw the original image: "A <class>." ("An oven.") to the first,
  third and fifth instruction, "A zebra and a <class>." to the second and fourth (a false
  positive, so the instructions differ: P 50, F1 66.67 and 2 nouns there), on both images. On
  an edited image whose class is gone the class is a false positive too (P 0, no recall).

Usage (after the specs' items change; then `benchc reproduce papers/merlim.toml --record`):
    .venv/bin/python papers/merlim/make_recognition_answers.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS = ("object_recognition", "object_recognition_vanished")
INSTRUCTIONS = ("List the objects that appear in the image.", "Enumerate the items visible in the picture.",
                "Itemize the things seen in the image.", "Detail the items shown in the picture.",
                "Identify the objects within the image.")
WITH_ZEBRA = frozenset(INSTRUCTIONS[1::2])


def answer(model: str, label: str, instruction: str) -> str:
    if model == "always-yes":
        return "Yes."
    article = "an" if label[0] in "aeiou" else "a"
    # "A zebra and an oven.", not "An oven and a zebra.": en_core_web_sm tags that "oven" ADJ
    return f"A zebra and {article} {label}." if instruction in WITH_ZEBRA else f"{article.title()} {label}."


def main() -> None:
    import polars as pl

    from benchc import api

    out = ROOT / "papers" / "merlim" / "answers"
    with tempfile.TemporaryDirectory() as work:
        for spec in SPECS:
            compiled = api.compile(ROOT / "specs" / "merlim" / f"{spec}.toml", Path(work) / spec,
                                   cache_dir=Path(work) / "cache", store_dir=Path(work) / "store", progress=False)
            items = pl.read_parquet(compiled.manifest_dir / "items.parquet").sort("item_id")
            for model in ("always-yes", "originals-only"):
                rows = []
                for item_id, attrs, targets in zip(items["item_id"], items["attrs"], items["targets"], strict=True):
                    instruction = json.loads(attrs)["text"]
                    (truth,) = json.loads(targets).values()  # "{'original': [label], 'edited': [...]}"
                    label = truth[0].split("'original': ['", 1)[1].split("'", 1)[0]
                    assert "zebra" not in label
                    rows.append({"item_id": item_id, "response": answer(model, label, instruction)})
                (out / model / f"{spec}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
