"""The bundled spec of ``[select]`` kind = "text" (specs/mmcbench/text2speech_hard_text.toml)
compiled through the CLI as written, with the real all-MiniLM-L6-v2, spaCy and textstat: the
committed lock is what it makes, and the items are the kept sentences' released corruptions."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import ROOT, SPECS, cli_process

pytestmark = pytest.mark.slow

SPEC = SPECS / "mmcbench" / "text2speech_hard_text.toml"


def test_the_bundled_text_selection_compiles_to_its_committed_lock(tmp_path: Path) -> None:
    # a process and a cache of its own: in the full suite (2026-12-06, twice) the selection's scores
    # differed from the committed lock in the sixth decimal, never when run alone or after the tests
    # that compile the same spec; which state of a shared worker moves them is not found yet
    done = cli_process("compile", SPEC, "-o", tmp_path / "m", "--cache", tmp_path / "cache", "--store",
                       tmp_path / "store", check=True)
    assert "select: kept 10 of 40 candidate records, hardest text under 400 probes" in done.stdout
    lock = json.loads((tmp_path / "m" / "lock.json").read_text())
    committed = json.loads((ROOT / "generated" / "mmcbench" / "text2speech_hard_text.lock.json").read_text())
    assert lock["select"] == committed["select"] and lock["manifest_digest"] == committed["manifest_digest"]
    select = lock["select"]
    assert select["embedder"]["embedder"] == "all-MiniLM-L6-v2" and select["first_keep"] == 20
    totals = [s["total"] for s in select["scores"]]
    assert totals == sorted(totals, reverse=True)
    assert sum(s["shortlisted"] for s in select["scores"]) == 20
    kept = {s["record"] for s in select["scores"] if s["kept"]}
    assert len(kept) == 10 and all(s["shortlisted"] for s in select["scores"] if s["kept"])
    assert all(0.0 <= s[k] <= 1.0 for s in select["scores"] for k in ("readability", "syntax", "description"))
    items = pl.read_parquet(tmp_path / "m" / "items.parquet")
    assert set(items["record_id"]) == kept and items.height == 10 * 24  # clean + 23 released corruptions
