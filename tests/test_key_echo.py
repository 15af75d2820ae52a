"""An answer that carries the API key is refused in every form a red-team round stored it in
(issue 28 item 4): without its prefix, split in two, upper case, spaced out, base64."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchc.runtime.backends.key_echo import echoes_key

KEY = "sk-proj-9fQ2xLr7Tz4mWv8bN1cK5yHs3dJ6gPa0"
BODY = KEY.removeprefix("sk-proj-")


@pytest.mark.parametrize("answer", [
    f"Your key is {KEY}.", f"key: {BODY}", f"first {BODY[:16]} then {BODY[16:]}", KEY.upper(),
    " ".join(KEY), "-".join(BODY), base64.b64encode(KEY.encode()).decode(),
    "header: " + base64.b64encode(f"Bearer {KEY}".encode()).decode(),
    base64.urlsafe_b64encode(f"xx{BODY}".encode()).decode(), f"Authorization: Bearer {KEY}",
], ids=["exact", "no prefix", "split", "upper", "spaced", "dashed", "base64", "base64 offset", "urlsafe offset",
        "header"])
def test_the_key_in_any_form_is_found(answer: str) -> None:
    assert echoes_key(answer, KEY)


@pytest.mark.parametrize("answer", ["The capital of France is Paris.", "sk-proj-", "Your key is sk-...a0.", ""])
def test_ordinary_answers_are_not_refused(answer: str) -> None:
    assert not echoes_key(answer, KEY)


def test_short_or_missing_keys_are_not_looked_for() -> None:
    assert not echoes_key("abc", "abc") and not echoes_key("anything", None) and not echoes_key("x", "sk-12")


@given(st.text(max_size=200))
def test_text_without_the_key_never_matches(text: str) -> None:
    """A refusal means the key, never chance: random text of any characters is no echo."""
    assert not echoes_key(text, KEY)
