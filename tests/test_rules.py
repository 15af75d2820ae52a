"""The scoring-rules version (runtime/score/rules.py): pinned to what the rules do, written into every
scores.json, and named by diff-runs when two runs were scored under different versions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchc.runtime.score import rules
from benchc.runtime.report.diff_runs import _rules_note
from benchc.runtime.score.rules import RULES_VERSION, rules_change, rules_digest
from benchc.compiler.similarity import IDENTICAL, cosine, fmean, row_cosines

# The fingerprint of each scoring-rules version; a new version adds its entry (never edit one).
# A failure here means a default, a correctness rule, an extraction step or the similarity of
# identical inputs changed: bump RULES_VERSION, add its digest, and say what changed in CHANGELOG.md.
RULES_GOLDEN = {2: "1486ae402657f6530905e49bc58cf1a088b9698731dad6087c0a73a2002da26e",
                3: "13893a4b70da9406b4657349846c35364569745aac6c335a28725f05a557de69",
                4: "8e2577e730fb262a319baac3ee8ab53bf090f24727ce0eecf8d7dc8268711456",
                5: "5e34e8c02ea2570906864049869bed99e3658b6fdc87e752d95e97b772d88207"}


def test_the_rules_version_is_pinned_to_what_the_rules_do() -> None:
    assert RULES_VERSION in RULES_GOLDEN, "a new RULES_VERSION needs its fingerprint in RULES_GOLDEN"
    assert rules_digest() == RULES_GOLDEN[RULES_VERSION], (
        "the scoring rules changed (a metric default, a correctness rule, an extraction step): bump "
        "runtime/score/rules.py RULES_VERSION, add its digest to RULES_GOLDEN and record the change in CHANGELOG.md")


@pytest.mark.parametrize("change", ["metric default", "answer rule", "extraction step"])
def test_a_changed_default_or_rule_changes_the_fingerprint(change: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = rules_digest()
    if change == "metric default":
        fields = rules.METRIC_SCHEMAS.get("general.worst_case").model_fields
        monkeypatch.setattr(fields["correct"], "default", "substring")
    elif change == "answer rule":
        from benchc.runtime.score import answers
        real = answers.is_correct
        monkeypatch.setattr(answers, "is_correct", lambda a, t, how="normalized", prompt="": real(a, t, "substring"))
    else:
        from benchc.runtime.score import answers
        monkeypatch.setattr(answers, "_first_line", lambda text: text.strip())
    assert rules_digest() != before


def test_a_rules_difference_is_named() -> None:
    assert rules_change(RULES_VERSION) is None
    assert "rules version 1 (unversioned: benchc 0.1.0), scored now under 5" in str(rules_change(None))
    same, old = {"rules": 2}, {"rules": 1}
    assert _rules_note(same, same) is None and _rules_note({"rules": None}, same) is None
    assert "different scoring-rules versions (A 1, B 2)" in str(_rules_note(old, same))


def test_identical_inputs_have_similarity_exactly_one() -> None:
    noisy = np.array([0.1, 0.2, 0.3000001], dtype=np.float32)
    assert cosine(noisy, noisy, same=True) == IDENTICAL == 1.0
    assert cosine(noisy, -noisy) == pytest.approx(-1.0)
    left = np.stack([noisy, noisy])
    assert row_cosines(left, left[::-1] * 2, [True, False]).tolist()[0] == 1.0


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=40), st.randoms())
def test_a_mean_does_not_depend_on_the_order_of_its_values(values: list[float], rng) -> None:
    shuffled = list(values)
    rng.shuffle(shuffled)
    assert fmean(values) == fmean(shuffled)
