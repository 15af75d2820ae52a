"""Typed models of the runtime's artifacts: the run record (``run.json``), the scores
(``scores.json``) and one metric's result in them; with the compiler's lock and item row
(``compiler/artifacts.py``), their JSON schemas are committed under ``generated/schemas/``.

Like the compiler's, these models never decide bytes: ``to_json()`` gives back the keys that were
set, each value as given, and the writers serialise it as before (``json.dumps(..., indent=2,
sort_keys=True)``). ``python -m benchc.runtime.artifacts --write`` rewrites the schemas; a test
(tests/test_artifact_schemas.py) checks that the committed ones are current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from benchc.compiler.artifacts import Artifact, ItemRow, Lock, LockBenchmark


class StageRecord(Artifact):
    """One stage of a run: its backend and how many requests it had, answered from the store
    (``cached``) or sent (``ran``); an import's stages count ``imported`` and ``missing``."""

    stage: str
    backend: str
    requests: int
    cached: int
    ran: int
    imported: int | None = None
    missing: int | None = None


class VerifyRecord(Artifact):
    """``benchc run --verify N``: answered requests asked again (a seeded choice of N), the new
    answers kept beside the stored ones (the store's ``verify`` table), and how many differ."""

    requested: int = Field(description="N, as asked for")
    asked: int = Field(description="requests asked again (N, or every answered request when there are fewer)")
    failed: int = Field(description="of those, requests the backend did not answer this time")
    differ: int = Field(description="of those answered, answers that differ from the stored ones")
    keys: list[str] = Field(description="the request keys whose new answer differs")

    def summary(self) -> str:
        """One line: how many of the re-asked answers differ (the report and the run's warning)."""
        failed = f" ({self.failed} not answered this time)" if self.failed else ""
        line = f"{self.differ} of {self.asked} re-asked request(s) answered otherwise than stored{failed}"
        if self.differ:
            line += (": the model (or its server) is not deterministic at these settings; the new answers are in "
                     "the store's verify table, the keys in run.json")
        return line


class RunRecord(Artifact):
    """``run.json``: the manifest a run was made from (absolute path and digest), the sha256 of
    its ``responses.parquet`` and what answered each stage. ``benchc import`` writes ``imported``
    (where the answers came from) and ``spec_digest`` instead of the timing keys."""

    benchc: str | None = None
    manifest: str
    benchmark: LockBenchmark | None = None
    manifest_digest: str
    spec_digest: str | None = None
    model: str | None = None
    stages: list[StageRecord]
    backends: dict[str, dict[str, Any]] = Field(default_factory=dict,
                                                description="stage -> the backend's fingerprint")
    started: str | None = None
    seconds: float | None = None
    workers: int | None = None
    text_only: bool | None = None
    executor: str | None = None
    imported: dict[str, Any] | None = None
    served: dict[str, dict[str, Any]] | None = Field(
        None, description="stage -> what its backend's server said about the model, when a request was sent")
    verify: VerifyRecord | None = None
    responses_sha256: str

    def backend_of(self) -> dict[str, str]:
        """stage id -> the backend that answered it."""
        return {s.stage: s.backend for s in self.stages}


class MetricResultRecord(Artifact):
    """One metric's result in ``scores.json``: a table (``columns``, ``rows``; floats rounded to
    4 places), the metric's details and notes."""

    name: str
    columns: list[str]
    rows: list[dict[str, Any]]
    details: dict[str, Any]
    notes: list[str]
    answer: str | None = Field(None, description="the named answer rule ([answers.NAME]) the answers were read "
                                                 "by (absent: [answer])")
    stage: str | None = Field(None, description="the choice-loglik stage whose answers were scored (absent: any "
                                                "other stage)")


class Scores(Artifact):
    """``scores.json``: the benchmark and manifest scored, the model, the item count, the
    scoring-rules version (``runtime/score/rules.py``; absent: 1) and each metric's result."""

    benchmark: LockBenchmark
    manifest_digest: str
    model: str | None
    items: int
    rules: int | None = Field(None, description="the scoring-rules version that made these numbers (absent: 1)")
    metrics: list[MetricResultRecord]


SCHEMAS: dict[str, type[BaseModel]] = {"lock": Lock, "item": ItemRow, "run": RunRecord, "scores": Scores,
                                       "metric_result": MetricResultRecord}
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "generated" / "schemas"


def schema_texts() -> dict[str, str]:
    """file name -> the committed text of each model's JSON schema."""
    return {f"{name}.schema.json": json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"
            for name, model in SCHEMAS.items()}


def main(argv: list[str]) -> int:
    """``--write`` rewrites generated/schemas/; ``--check`` fails (exit 1) when one is stale."""
    texts = schema_texts()
    if "--write" in argv:
        from benchc.compiler.atomic import write_text_atomic

        SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            write_text_atomic(SCHEMA_DIR / name, text)
        return 0
    stale = [n for n, t in texts.items()
             if not (SCHEMA_DIR / n).is_file() or (SCHEMA_DIR / n).read_text(encoding="utf-8") != t]
    for name in stale:
        print(f"generated/schemas/{name} is stale: run `python -m benchc.runtime.artifacts --write`",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
