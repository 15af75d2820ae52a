"""``benchc score``: a run's responses + the manifest -> metric results (``scores.json``).

Its API is re-exported here and loaded on first use (``__getattr__``), so that importing one
module (``answers``, ``rules``, ``metrics``) does not load the scoring stage, the embedders or the
judges' model client. See README.md for what each module does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .core import SCORES_FILE, import_notes, run_manifest_of, score_results, score_run
    from .metrics import METRICS, Metric, MetricInput, MetricResult, metric
    from .answers import extract, is_correct
    from .rules import CORRECTNESS_RULES, RULES_VERSION
    from .embed import EMBEDDERS, Embedder, load_embedder
    from .model_client import RuntimeModelClient
    from .measures import MEASURES, Measures, measure

_EXPORTS = {  # name -> the module of this package that defines it
    "SCORES_FILE": "core",
    "import_notes": "core",
    "run_manifest_of": "core",
    "score_results": "core",
    "score_run": "core",
    "METRICS": "metrics",
    "Metric": "metrics",
    "MetricInput": "metrics",
    "MetricResult": "metrics",
    "metric": "metrics",
    "extract": "answers",
    "is_correct": "answers",
    "CORRECTNESS_RULES": "rules",
    "RULES_VERSION": "rules",
    "EMBEDDERS": "embed",
    "Embedder": "embed",
    "load_embedder": "embed",
    "RuntimeModelClient": "model_client",
    "MEASURES": "measures",
    "Measures": "measures",
    "measure": "measures",
}

__all__ = ["CORRECTNESS_RULES", "EMBEDDERS", "Embedder", "MEASURES", "METRICS", "Measures", "Metric",
           "MetricInput", "MetricResult", "RULES_VERSION", "RuntimeModelClient", "SCORES_FILE", "extract",
           "import_notes", "is_correct", "load_embedder", "measure", "metric", "run_manifest_of", "score_results",
           "score_run"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
