"""What a source loader is, and the context it runs in (roots, store, error policy)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from ..canonical import digest_file
from ..cas import ContentStore
from ..errors import Problem, SourceError
from ..paths import relative_to_roots, resolve_in_roots
from ..registry import Registry, instance
from ..values import Record


class SourceParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class FileDigest:
    path: str  # relative to the root it was found in: no absolute path enters a lock
    sha256: str
    rows: int | None = None


@dataclass
class LoadedSource:
    records: list[Record]
    files: list[FileDigest] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)


@dataclass
class SourceContext:
    """Where a loader may read (``roots``), where it writes media, and what to do on a bad row."""

    roots: list[Path]
    store: ContentStore
    on_error: str = "fail"
    spec_file: str | None = None
    skipped: list[Problem] = field(default_factory=list)

    def resolve(self, relative: str, key: str) -> Path:
        """Resolve a spec path against the roots; refuse any path that escapes them."""
        return resolve_in_roots(relative, self.roots, key, self.spec_file)

    def file_digest(self, path: Path, rows: int | None = None) -> FileDigest:
        return FileDigest(relative_to_roots(path, self.roots), digest_file(path), rows)

    def bad_row(self, problem: Problem) -> None:
        """Report a malformed row: fail now, or count it as skipped when the spec allows."""
        if self.on_error == "skip":
            self.skipped.append(problem)
        else:
            raise SourceError(Problem(problem.message, problem.file, problem.line, problem.key,
                                      hint=problem.hint or "fix the row, or set source.on_error = \"skip\""))


class SourceLoader(ABC):
    name: ClassVar[str]
    version: ClassVar[str]
    Params: ClassVar[type[SourceParams]]
    record_id: ClassVar[str] = ""
    """What a record's id is (shown by `benchc sources` and docs/reference.md)."""
    record_fields: ClassVar[dict[str, str]] = {}
    """Every field of the records, as the dotted path a spec names it by -> its meaning."""
    record_media: ClassVar[dict[str, str]] = {}
    """Every media of the records, by name (a node's ``input``) -> its meaning."""

    @abstractmethod
    def load(self, params: Any, ctx: SourceContext) -> LoadedSource: ...


SOURCES: Registry[SourceLoader] = Registry("source loader", group="benchc.sources", make=instance)
