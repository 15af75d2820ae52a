"""MMCBench's consistency score (seed 002; benchmarks.md 3.2).

For each corruption c: the mean, over source items, of the cosine similarity between the
embedding of the model's output for the clean input and for the input under c. The score is
the sum over corruptions of those means, x100 (so its maximum is 100 x the number of
corruptions: 2300 for the 23 text corruptions). Outputs are lower-cased and stripped first, as
MMCBench's text2speech evaluation does with wav2vec2 transcriptions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchc.compiler.metrics import MMCBenchParams

from .base import METRICS, Metric, MetricInput, MetricResult, ScoredItem, groups_of, split_by

PAPER_JUDGES = {"speech-to-text": "facebook/wav2vec2-base-960h", "embedder": "sentence-t5-large"}


class MMCBenchConsistency(Metric):
    name = "mmcbench.consistency"

    def score(self, params: MMCBenchParams, data: MetricInput) -> MetricResult:
        rows, details = [], {}
        for key, part in split_by(data.items, params.by).items():
            per_corruption, groups = self._per_corruption(params, part, data)
            label = "/".join(str(k) for k in key) or "all"
            details[label] = {c: round(100 * v, 4) for c, v in per_corruption.items()}
            row: dict[str, Any] = dict(zip(params.by, key))
            row.update({"groups": groups, "corruptions": len(per_corruption),
                        "score": 100 * sum(per_corruption.values()), "max": 100 * len(per_corruption)})
            rows.append(row)
        notes = [
            f"Judge: '{data.stage_backend}' transcribes the speech; similarity: "
            f"{data.embedder.fingerprint['embedder']}. MMCBench uses {PAPER_JUDGES['speech-to-text']} "
            f"and {PAPER_JUDGES['embedder']}: these are offline stand-ins, so scores are not "
            "comparable with the paper's numbers.",
        ]
        return MetricResult(self.name, [*params.by, "groups", "corruptions", "score", "max"], rows,
                            details={"per_corruption_x100": details}, notes=notes)

    def _per_corruption(self, params: MMCBenchParams, items: list[ScoredItem],
                        data: MetricInput) -> tuple[dict[str, float], int]:
        sims: dict[str, list[float]] = {}
        groups = 0
        for group in groups_of(items).values():
            refs = [i for i in group if i.attrs.get(params.over) == params.reference]
            if len(refs) != 1:
                continue
            groups += 1
            others = [i for i in group if i is not refs[0]]
            texts = [self._norm(params, refs[0].responses[0])] + [self._norm(params, i.responses[0]) for i in others]
            emb = data.embedder.encode(texts)
            for item, vector in zip(others, emb[1:]):
                sims.setdefault(str(item.attrs.get(params.over)), []).append(float(emb[0] @ vector))
        return {c: float(np.mean(v)) for c, v in sorted(sims.items())}, groups

    @staticmethod
    def _norm(params: MMCBenchParams, text: str) -> str:
        return text.lower().strip() if params.normalize == "lower_strip" else text


METRICS.register(MMCBenchConsistency.name, MMCBenchConsistency())
