"""``koala.contextualization``: Koala's Figure 6. A judge (default gpt-4o-mini with the App. B
prompt) scores how much each counterfactual image contextualises its question (1-10); the rows
give, per score, the counterfactual items and the rate of acknowledged refusals (l_RET accuracy,
Koala's acknowledgment phrases). Items of other types are not judged; answers the judge's parser
cannot read are counted and listed, never given a score."""

from __future__ import annotations

from typing import Any

from benchc.compiler.errors import Problem, RunError
from benchc.compiler.metrics import KoalaContextParams

from ..judges import Case, ask
from .base import Metric, MetricInput, MetricResult, metric
from .koala import acknowledged, kind_of


@metric("koala.contextualization", KoalaContextParams)
class KoalaContextualization(Metric):
    """Per contextualisation score (a judge's, 1-10): counterfactual items and l_RET accuracy."""

    uses_embedder = False

    def score(self, params: KoalaContextParams, data: MetricInput) -> MetricResult:
        if data.models is None:
            raise RunError(Problem("koala.contextualization needs a model client (benchc score gives one)"))
        items = sorted((i for i in data.items if kind_of(i)[1] == "counterfactual"), key=lambda i: i.item_id)
        verdicts, described = ask(params.judge, [Case(i) for i in items], data.models)
        at: dict[int, list[float]] = {}
        for item, verdict in zip(items, verdicts, strict=True):
            if isinstance(verdict.value, int):
                dataset = kind_of(item)[0]
                at.setdefault(verdict.value, []).extend(
                    float(acknowledged(r, params, dataset)) for r in item.responses)
        rows: list[dict[str, Any]] = [
            {"context": score, "answers": len(hits), "acknowledged": 100 * sum(hits) / len(hits)}
            for score, hits in sorted(at.items())]
        unreadable = [{"item_id": v.item_id, "answer": v.answer} for v in verdicts if v.value is None]
        read = [v.value for v in verdicts if isinstance(v.value, int)]
        notes = [f"Judge {described['name']!r}: {described['backend']}, prompt v{described['prompt_version']} "
                 f"(template sha256 {described['template_sha256'][:12]}); {len(items)} counterfactual item(s) "
                 f"of {len(data.items)}, mean contextualisation "
                 + (f"{sum(read) / len(read):.2f}." if read else "undefined (none read).")]
        if unreadable:
            notes.append(f"WARNING: {len(unreadable)} judge answer(s) could not be read as a score "
                         f"{params.judge.scale_min}-{params.judge.scale_max}; left out (details.unreadable).")
        details = {"judges": [described], "unreadable": {described["name"]: unreadable},
                   "scores": {v.item_id: v.value for v in verdicts}}
        return MetricResult(self.name, ["context", "answers", "acknowledged"], rows, details=details, notes=notes)
