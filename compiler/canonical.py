"""The one canonical serializer and the one digest function of benchc.

Every hash in the project (node keys, request keys, spec and manifest digests) is
``digest(value)`` of a canonical-JSON-able value. Canonical JSON: sorted keys, fixed
separators, UTF-8, no NaN/Infinity, and floats written one way (``repr`` of the float,
which is the shortest round-tripping form). Integral floats stay floats (``1.0``) so that
``1`` and ``1.0`` do not collide silently; callers that mean the same value must pass
the same type (the spec models normalise parameter types before hashing).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

HASH_RECIPE_VERSION = 2
"""Bump when canonical_json, digest or what goes into a key change; golden tests pin them.
v2: node keys carry the op's environment (library and engine versions) and, for ops that read
the record, the record's digest."""


class NotCanonicalError(TypeError):
    """A value that has no canonical JSON form (a set, bytes, NaN, an object...)."""


def _normalise(value: Any, path: str) -> Any:
    """``value`` as plain JSON types; the error names where in ``value`` the bad part lies.
    Used only to word an error: ``_plain`` is the same walk without the path strings, which
    cost more than the walk itself on the hot path (every key of every item)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotCanonicalError(f"{path}: non-finite float {value!r} has no canonical form")
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotCanonicalError(f"{path}: mapping key {key!r} is not a string")
            out[key] = _normalise(item, f"{path}.{key}")
        return out
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [_normalise(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise NotCanonicalError(f"{path}: {type(value).__name__} has no canonical JSON form")


class _NotPlain(Exception):
    """Raised by ``_plain`` for a value ``_normalise`` refuses (it then words the error)."""


_ATOMS = (type(None), bool, str, int)


def _plain(value: Any) -> Any:
    """``_normalise`` for the built-in types alone, without the error paths: the same result;
    anything else (refused, or a subclass) raises ``_NotPlain`` and takes the general walk."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _NotPlain
        return value
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            out[key] = _plain(item)
        return out
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    raise _NotPlain  # subclasses, other Mappings and Sequences: the general walk, from the top


def canonical_json(value: Any) -> str:
    """Serialise ``value`` to its canonical JSON text."""
    try:
        plain = _plain(value)
    except _NotPlain:
        plain = _normalise(value, "$")  # the general walk; an error names the bad part
    return json.dumps(
        plain,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


SEED_RECIPE_VERSION = 1
"""The recipe of digests that become randomness (derived seeds, sample order, scene layouts).
Versioned apart from HASH_RECIPE_VERSION: changing what goes into a cache key must not change
which records are sampled or what an op draws. Bump only to change every random draw."""


def digest(value: Any, recipe: int = HASH_RECIPE_VERSION) -> str:
    """sha256 hex digest of the canonical JSON of ``value``, prefixed by the recipe version."""
    payload = f"benchc-hash-v{recipe}\n{canonical_json(value)}".encode()
    return hashlib.sha256(payload).hexdigest()


def digest_bytes(data: bytes) -> str:
    """sha256 hex digest of raw bytes (media, source files): the content address."""
    return hashlib.sha256(data).hexdigest()


def digest_file(path: str | bytes | Any, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
