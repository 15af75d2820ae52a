"""``test-hashed``: a deterministic offline model whose answer depends on the whole request
(prompt and media), so that the variants of one question (same prompt, other image) get
different answers, and an import that matched a row to the wrong variant would move a score.

Answers are easy-VQA words (sometimes right), some on a first line followed by a second one, so
that ``[answer]`` extraction (``first_line``, ``normalize``) matters. Registered on import.
``World`` compiles a bundled spec, runs it on this model and scores it, through the CLI.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from benchc.runtime.backends import BACKENDS, Backend, Request, Response
from benchc.runtime.backends.base import MediaLoader

WORDS = ("circle", "rectangle", "triangle", "red", "green", "blue", "yellow", "teal", "brown", "gray", "black",
         "yes", "no")


def hashed_answer(prompt: str, media: tuple[tuple[str, str], ...]) -> str:
    """The answer to a prompt with its media: a word, sometimes capitalised and explained."""
    h = int(hashlib.sha256((prompt + "|" + ",".join(s for _, s in media)).encode()).hexdigest()[:8], 16)
    word = WORDS[h % len(WORDS)]
    if h % 3 == 0:
        return f"{word.capitalize()}.\nIt looks like {word} to me."
    return word


class Hashed(Backend):
    name = "test-hashed"
    tasks = frozenset({"generate"})
    batch_size = 16

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name, "version": 1}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        return [Response("text", text=hashed_answer(r.prompt, r.media)) for r in requests]


if Hashed.name not in BACKENDS:
    BACKENDS.register(Hashed.name, Hashed)


# a run to import from and export ----------------------------------------------------------------

SPEC = Path(__file__).resolve().parents[2] / "specs" / "examples" / "image_invariance.toml"
"""easy-VQA image invariance: 24 questions, each asked over 8 images (original, rotated, flipped,
JPEG): one prompt per 8 items, told apart only by their media."""
MODEL = Hashed.name


def run_cli(*args: str | Path) -> int:
    """``benchc ARGS`` in this process (so that the test backend is registered)."""
    from benchc.cli import main

    return main([str(a) for a in args])


class World:
    """A compiled manifest, a `benchc run` folder on it (scored, with its lm-eval export), and the
    cache and store they used."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.common: list[str | Path] = ["--cache", root / "cache", "--store", root / "store"]
        self.manifest = root / "manifest"
        self.run = root / "run"
        assert run_cli("compile", SPEC, "-o", self.manifest, *self.common) == 0
        assert run_cli("run", self.manifest, "-o", self.run, "--model", MODEL, *self.common) == 0
        assert run_cli("score", self.run, "--format", "lm-eval", *self.common) == 0
        self.scores = json.loads((self.run / "scores.json").read_text())
        self.items = pl.read_parquet(self.manifest / "items.parquet")
        self.responses = pl.read_parquet(self.run / "responses.parquet")
        # lm-eval's output folder: a samples file per task (here per metric and slice; together
        # they answer every item, the accuracy tasks once each, the consistency tasks again)
        self.lm_eval = self.run / "lm-eval"
        self.samples = root / "samples.jsonl"
        # all of them in one file: numbered anew, as one task's file is
        lines = [json.loads(line) for p in sorted(self.lm_eval.glob("*/samples_*accuracy*"))
                 for line in p.read_text().splitlines()]
        self.samples.write_text("".join(json.dumps({**s, "doc_id": n}) + "\n" for n, s in enumerate(lines)))

    def answers(self) -> list[dict[str, Any]]:
        """Each item with its prompt, media sha256s and the run's answer, in manifest order."""
        texts = dict(self.responses.select("item_id", "text").iter_rows())
        return [{"item_id": row["item_id"], "prompt": row["prompt"], "response": texts[row["item_id"]],
                 "media_sha256": [m["sha256"] for m in json.loads(row["media"])]}
                for row in self.items.iter_rows(named=True)]

    def score(self, run: Path, *extra: str) -> dict[str, Any]:
        assert run_cli("score", run, *extra, *self.common) == 0
        return json.loads((run / "scores.json").read_text())
