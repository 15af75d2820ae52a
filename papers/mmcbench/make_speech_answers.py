"""Writes papers/mmcbench/answers/speech2text/<model>.jsonl: the transcripts of three made-up
"models" for specs/mmcbench/speech2text_selections.toml (one sentence of the hard and one of the
random selection, spoken, under 16 audio corruptions at two severities, and clean), so every
cell of papers/mmcbench.toml's Table 3 can be counted by hand (tests/test_paper_mmcbench.py):

* ``oracle`` transcribes every version as the sentence itself (Whisper-normalised alike: 1600).
* ``silent`` transcribes nothing ("") anywhere: "" against "" is similarity 1 too, 1600.
* ``noise-robust`` transcribes the sentence on the clean speech and under the 8 noise, filter
  and distortion corruptions, on light speech also under the 4 resampling and stretching ones
  (k = 8 heavy, 12 light), and "" otherwise: a cell is 100 x (k + (16 - k) x m), m the cosine
  of the table's normalised sentence with "".

Usage (after the spec's items change; then `benchc reproduce papers/mmcbench.toml --record`):
    .venv/bin/python papers/mmcbench/make_speech_answers.py
"""

from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "mmcbench" / "speech2text_selections.toml"
TABLES = {"hard": "text2speech_heavy_corrupted_hard_1k_first50.csv",
          "random": "text2speech_heavy_corrupted_random_1k.csv"}
KEPT = {"heavy": ("clean", "gaussian_noise", "short_noises", "gaussian_snr", "bandpass_filter", "low_pass_filter",
                  "clipping_distortion", "mp3_compression", "tanh_distortion")}
KEPT["light"] = (*KEPT["heavy"], "fast_resample", "slow_resample", "time_stretch_fast", "time_stretch_slow")


def sentences() -> dict[str, str]:
    """selection -> {path: transcription} of the released tables."""
    out = {}
    for selection, name in TABLES.items():
        with (SPEC.parent / "data" / name).open(newline="") as handle:
            out.update({f"{selection}-heavy/{row['path']}": row["transcription"] for row in csv.DictReader(handle)})
    return out


def answer(model: str, sentence: str, attrs: dict[str, str]) -> str:
    if model == "oracle":
        return sentence
    if model == "silent":
        return ""
    return sentence if attrs["corruption"] in KEPT[attrs["severity"]] else ""


def main() -> None:
    import polars as pl

    from benchc import api

    text = sentences()
    out = ROOT / "papers" / "mmcbench" / "answers" / "speech2text"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        compiled = api.compile(SPEC, Path(work) / "manifest", cache_dir=Path(work) / "cache",
                               store_dir=Path(work) / "store", progress=False)
        items = pl.read_parquet(compiled.manifest_dir / "items.parquet").sort("item_id")
        for model in ("oracle", "silent", "noise-robust"):
            rows = [{"item_id": item_id, "response": answer(model, text[record], json.loads(attrs))}
                    for item_id, record, attrs in zip(items["item_id"], items["record_id"], items["attrs"],
                                                      strict=True)]
            (out / f"{model}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
