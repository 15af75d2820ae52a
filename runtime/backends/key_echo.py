"""Whether an answer carries the API key (issue 28 item 4): a server or a proxy that repeats the
request's Authorization header has not answered as a model, and its answer must never be stored.

An exact substring is not enough: a red-team round found the key stored when the answer gave it
without its ``sk-`` prefix, split in two, upper-cased, spaced out or base64-encoded. The answer is
compared with the key's body (the key without a known vendor prefix) after both are reduced to
their letters and digits, case folded; each half of the body counts on its own; and the base64
forms of the key and its body at each of the three byte alignments are looked for in the answer
without white space.
"""

from __future__ import annotations

import base64
import re

MIN_KEY = 8
"""A key body at least this long is looked for (a shorter one would match by chance)."""
MIN_HALF = 8
"""A half of the body at least this long counts on its own."""
_PREFIX = re.compile(r"^(?:sk-(?:proj-|ant-(?:api\d+-)?)?|key-|Bearer\s+)", re.IGNORECASE)
_NOT_ALNUM = re.compile(r"[^0-9a-z]")
_SPACE = re.compile(r"\s+")


def _folded(text: str) -> str:
    return _NOT_ALNUM.sub("", text.casefold())


def _base64_forms(secret: str) -> set[str]:
    """The parts of ``secret``'s base64 (standard and URL-safe) that stay the same wherever in a
    longer text it is encoded: the encoding at each byte alignment without its edge quanta."""
    forms = set()
    for pad in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * pad + secret.encode()).decode().rstrip("=")
            middle = encoded[4 if pad else 0:-4]
            if len(middle) >= MIN_KEY:
                forms.add(middle)
    return forms


def echoes_key(answer: str, key: str | None) -> bool:
    """Whether ``answer`` holds ``key`` in any of the forms above."""
    if not key:
        return False
    body = _folded(_PREFIX.sub("", key.strip()))
    if len(body) < MIN_KEY:
        return False
    said = _folded(answer)
    half = len(body) // 2
    if body in said or (half >= MIN_HALF and (body[:half] in said or body[half:] in said)):
        return True
    compact = _SPACE.sub("", answer)
    return any(form in compact for secret in {key.strip(), _PREFIX.sub("", key.strip())}
               for form in _base64_forms(secret))
