"""User-facing errors: each names where (file, line, key path), what, and a hint.

The CLI prints ``BenchcError`` without a traceback and exits with its ``exit_code`` (2 for a
user error, 1 for a failed check); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a user's input."""

    message: str
    file: str | None = None
    line: int | None = None
    key: str | None = None
    hint: str | None = None

    def render(self) -> str:
        where = self.file or ""
        if self.file and self.line:
            where += f":{self.line}"
        if self.key:
            where = f"{where} {self.key}" if where else self.key
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class BenchcError(Exception):
    """An error in the user's input or environment, reported as one or more Problems."""

    exit_code: ClassVar[int] = 2

    def __init__(self, problems: list[Problem] | Problem | str) -> None:
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(p.render() for p in self.problems)


class SpecError(BenchcError):
    """The spec file is wrong."""


class SourceError(BenchcError):
    """Source data is missing or malformed."""


class OpError(BenchcError):
    """An op failed on an item."""


class BackendError(BenchcError):
    """A model backend cannot load or answer."""


class RunError(BenchcError):
    """A run folder, its record or the response store cannot be read or written."""


class CheckFailed(BenchcError):
    """A check ran and found differences (``benchc lock --check``): exit 1, not a usage error."""

    exit_code: ClassVar[int] = 1


@dataclass
class ProblemList:
    """Collects problems so that `validate` can report every error of a file at once."""

    problems: list[Problem] = field(default_factory=list)

    def add(self, problem: Problem) -> None:
        self.problems.append(problem)

    def raise_if_any(self, cls: type[BenchcError] = SpecError) -> None:
        if self.problems:
            raise cls(self.problems)
