"""The speech examples with the real judge (Whisper tiny.en through faster-whisper, the `whisper`
backend): the ASR invariance example on all its sentences with whisper as the model under test,
and MMCBench text-to-speech on a larger sample than `make demo`'s with whisper as the judge."""

from __future__ import annotations

import json
import shutil

import pytest

from realtier import OUT, ROOT, cli

pytestmark = pytest.mark.slow  # real speech engines on every clip


def _rows(scores: dict, name: str) -> list[dict]:
    return next(m["rows"] for m in scores["metrics"] if m["name"] == name)


def test_asr_invariance_with_whisper_on_every_sentence() -> None:
    out = OUT / "asr_invariance"
    shutil.rmtree(out, ignore_errors=True)
    done = cli("eval", ROOT / "specs" / "examples" / "asr_invariance.toml", "-o", out, "--model", "whisper",
               "--set", "sample.n=6", "--store", OUT / "store", "--cache", OUT / "cache")
    assert done.returncode == 0, done.stderr
    scores = json.loads((out / "run" / "scores.json").read_text())
    accuracy = {(r["perturbation"], r.get("snr_db"), r.get("factor")): r["accuracy"]
                for r in _rows(scores, "general.accuracy")}
    print(json.dumps({str(k): v for k, v in accuracy.items()}))
    clean = next(v for (p, _, _), v in accuracy.items() if p == "original")
    assert clean >= 50.0  # whisper hears most clean espeak-ng sentences word for word


def test_mmcbench_text2speech_with_the_whisper_judge() -> None:
    out = OUT / "text2speech"
    shutil.rmtree(out, ignore_errors=True)
    done = cli("eval", ROOT / "specs" / "mmcbench" / "text2speech.toml", "-o", out, "--model", "espeak",
               "--set", "sample.n=4", "--set", "sample.stratify=table", "--workers", "2",
               "--store", OUT / "store", "--cache", OUT / "cache")
    assert done.returncode == 0, done.stderr
    scores = json.loads((out / "run" / "scores.json").read_text())
    rows = _rows(scores, "mmcbench.consistency")
    assert rows and all(r["score"] is not None for r in rows)
    print(json.dumps(rows))
