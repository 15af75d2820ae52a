"""Typed models of the compiler's artifacts: the lock (``lock.json``) and an item row (one row of
``items.parquet``). A leaf module: it imports nothing of benchc but pydantic, so every reader can
use it (``runtime/artifacts.py`` holds the run record, scores and a metric result).

The models describe the files; they never decide their bytes. ``to_json()`` is the value the
writers already serialise (``manifest.lock_text`` for the lock, the items table and
``canonical_json`` for rows): the keys that were given, no defaults added, ints kept ints. A lock
of an older lock version (no ``dropped``, no ``model_steps``) reads with empty defaults and dumps
back without them, so reading and writing a lock never changes it. The JSON schemas of all five
models are committed under ``generated/schemas/`` (``python -m benchc.runtime.artifacts --write``;
a test checks they are current).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Artifact(BaseModel):
    """Frozen, strict (no coercion: ``"3"`` is not 3, and 3 stays an int), no unknown keys."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid", protected_namespaces=())

    def to_json(self) -> dict[str, Any]:
        """The JSON value this model was read from or built with: given keys only, each value as
        given (python mode: a NaN in a metric row stays NaN, as `json.dumps` wrote it before)."""
        return self.model_dump(exclude_unset=True)


# the lock -------------------------------------------------------------------------------------

class LockBenchmark(Artifact):
    """The spec's ``[benchmark]`` identity."""

    name: str
    version: str
    seed: int


class LockSourceFile(Artifact):
    path: str = Field(description="the file, relative to the data root it was found under")
    sha256: str
    rows: int | None = Field(description="rows read from it, where the loader counts them")


class LockSource(Artifact):
    loader: str
    loader_version: str
    digest: str = Field(description="digest of the sorted record digests")
    files: list[LockSourceFile]
    records: int = Field(description="records the loader yielded")
    selected: int = Field(description="records kept by filters, sample and [select]")
    skipped_rows: int = Field(description="malformed rows skipped (source.on_error = 'skip')")


class SelectScore(Artifact):
    record: str
    consistency: float
    kept: bool


class SelectLock(Artifact):
    """What ``[select]`` used (models and embedder, fingerprinted) and what it scored and kept."""

    models: list[dict[str, Any]]
    embedder: dict[str, Any]
    candidates: int
    probes: int
    kept: int
    unscored: list[str]
    scores: list[SelectScore]


class TextSelectScore(Artifact):
    """One candidate of ``[select]`` kind ``text``: its raw measures, their normalised scores,
    the weighted total, and whether it was kept (and shortlisted, with ``first_keep``)."""

    record: str
    inconsistency: float = Field(description="1 - mean cosine similarity of the text to its probes")
    readability_grade: float = Field(description="textstat's grade of the text (raw)")
    parse_depth: int = Field(description="deepest dependency path, root = 1 (raw)")
    description_words: int = Field(description="nouns + verbs + adjectives (raw)")
    readability: float = Field(description="the grade, min-max normalised over the candidates")
    syntax: float = Field(description="the depth, min-max normalised")
    description: float = Field(description="the word count, min-max normalised")
    total: float = Field(description="the weighted sum the ranking uses")
    shortlisted: bool | None = Field(default=None, description="in the first_keep stage (absent without it)")
    kept: bool


class TextSelectLock(Artifact):
    """What ``[select]`` kind ``text`` used (embedder, text libraries, weights) and every
    candidate's scores."""

    kind: Literal["text"]
    embedder: dict[str, Any]
    readability: str = Field(description="the textstat measure")
    libraries: dict[str, str]
    weights: dict[str, float]
    candidates: int
    probes: int
    first_keep: int | None
    kept: int
    unscored: list[str]
    scores: list[TextSelectScore] = Field(description="highest total first (ties by record id)")


class SplitLock(Artifact):
    """How ``[split]`` assigned the records (``compiler/split.py``) and how many went where."""

    key: str | list[str] | None = Field(description="the record field path(s) hashed; null: the record id")
    seed: int
    fractions: dict[str, float]
    keep: list[str] = Field(description="the splits this manifest holds")
    attribute: str = Field(description="the item attribute holding the split's name")
    seed_recipe: int = Field(description="SEED_RECIPE_VERSION of the hash")
    recipe: str = Field(description="how a record's split follows from its key")
    records: dict[str, int] = Field(description="records (after the filters) of each split, kept or not")
    kept: int = Field(description="records of the kept splits")


class Lock(Artifact):
    """``lock.json``: what a compile made and from what (see the README's *Determinism and
    hashing*). ``manifest_digest`` hashes the items' canonical rows."""

    lock_version: int
    manifest_schema: int
    hash_recipe: int
    benchmark: LockBenchmark
    spec_digest: str | None = Field(default=None, description="digest of spec.json without the benchmark's "
                                                              "description and version (written by every "
                                                              "compile; absent only in early locks)")
    source: LockSource
    ops: dict[str, str] = Field(description="op name -> op version")
    libraries: dict[str, str] = Field(description="library or engine -> version")
    dropped: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="node -> reason -> variants a validator dropped (lock v2)")
    model_steps: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict, description="node -> the backends a model-backed node may use, each with "
                                          "its generation settings and fingerprint (lock v3)")
    item_count: int
    manifest_digest: str
    select: SelectLock | TextSelectLock | None = Field(default=None,
                                                       description="present only for specs with [select]")
    split: SplitLock | None = Field(default=None, description="present only for specs with [split] fractions")


# an item row ----------------------------------------------------------------------------------

class ItemRow(Artifact):
    """One row of ``items.parquet`` (every column a string; ``manifest.ITEM_SCHEMA``)."""

    item_id: str = Field(description='"<record id>#<variant path>", e.g. "r1#rotated[angle=90]"')
    group_id: str = Field(description="items a consistency metric compares (the source record)")
    record_id: str
    record_digest: str
    node: str = Field(description='sink node that made the item ("" when the spec has no nodes)')
    attrs: str = Field(description="canonical JSON: perturbation attributes")
    system: str | None = Field(description="rendered system prompt, or null")
    prompt: str = Field(description="rendered prompt")
    text: str | None = Field(description="the item's text value (e.g. the text to speak), or null")
    media: str = Field(description="canonical JSON list of {name, kind, sha256}")
    targets: str = Field(description="canonical JSON {field path: [answers]}")
    lineage: str = Field(description="canonical JSON list of {node, op, version, key}")
