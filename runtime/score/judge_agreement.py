"""Agreement of two judges over the items both could read: Cohen's kappa (scikit-learn's
``cohen_kappa_score``, unweighted or with linear/quadratic weights for ordered scales), the share
of items on which they agree, and the items on which they disagree."""

from __future__ import annotations

import math
from typing import Any

from .judges import Verdict


def agreement(first: list[Verdict], second: list[Verdict], weights: str = "none") -> dict[str, Any]:
    """``first`` and ``second`` hold the two judges' verdicts on the same items, in the same
    order. Items either judge could not read are left out (and counted)."""
    from sklearn.metrics import cohen_kappa_score

    pairs = [(a, b) for a, b in zip(first, second, strict=True) if a.value is not None and b.value is not None]
    left_out = len(first) - len(pairs)
    if not pairs:
        return {"items": 0, "left_out": left_out, "kappa": None, "agree": None, "disagreements": []}
    ones, twos = [str(a.value) for a, _ in pairs], [str(b.value) for _, b in pairs]
    if weights != "none":  # weighted kappa needs the ordered values (a scale's scores)
        ones, twos = [a.value for a, _ in pairs], [b.value for _, b in pairs]  # type: ignore[misc]
    kappa = float(cohen_kappa_score(ones, twos, weights=None if weights == "none" else weights))
    disagreements = [{"item_id": a.item_id, "first": a.value, "second": b.value}
                     for a, b in pairs if a.value != b.value]
    return {"items": len(pairs), "left_out": left_out, "kappa": None if math.isnan(kappa) else kappa,
            "agree": 100 * (len(pairs) - len(disagreements)) / len(pairs), "disagreements": disagreements}
