"""What an op is: a named, versioned, pure function of (input value, record, params, seed)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..cas import ContentStore
from ..paths import resolve_in_roots
from ..registry import Registry
from ..values import Kind, Record, Value


@cache
def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def library_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed version of each distribution, "not installed" where it is absent."""
    return {name: _version(name) for name in sorted(set(names))}


class OpParams(BaseModel):
    """Base of every op's parameter schema: strict, frozen, defaults made explicit when hashed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class OpOutput:
    value: Value
    attrs: dict[str, Any] = field(default_factory=dict)
    drop: str | None = None
    """A validator's reason to drop this variant and everything built on it (counted per node
    and reason in the lock), e.g. "removed object still detected"."""


@dataclass(frozen=True)
class OpContext:
    """What an op may use besides its input: the record, a private RNG, the content store and
    the data roots (for files an op reads, such as style-transfer weights)."""

    record: Record
    rng: np.random.Generator
    store: ContentStore
    data_roots: tuple[Path, ...] = ()

    def resolve(self, relative: str, key: str) -> Path:
        """A file named in a param, inside the data roots (the spec's folder, --data-root)."""
        return resolve_in_roots(relative, self.data_roots, key)


class Op(ABC):
    name: ClassVar[str]
    version: ClassVar[str]
    """Bump when the output for the same input and params changes; it is part of every node key."""
    Params: ClassVar[type[OpParams]]
    input_kind: ClassVar[Kind | None]
    """Kind of the upstream value, or None when the op reads only the record."""
    output_kind: ClassVar[Kind]
    default_input: ClassVar[str]
    libraries: ClassVar[tuple[str, ...]] = ()
    """Distributions whose versions shape the output; recorded in the lock and in node keys."""
    reads_record: ClassVar[bool] = True
    """False when the output depends only on the input value, params and seed. Then the record's
    digest stays out of the node key; otherwise an edited annotation (a box, a label) must give a
    new key, or the cache would serve the output made from the old one."""

    def environment(self, params: Any = None) -> dict[str, str]:
        """What outside the params shapes the output under ``params``: the versions of
        ``libraries`` (and, for ops that call an engine, its version). Part of every node key,
        so a library upgrade recomputes instead of serving outputs of the old version. An op
        whose libraries depend on a param (a model detector only when chosen) narrows the set
        for those params; ``params=None`` asks for everything it may use (lock, memo key)."""
        return library_versions(self.libraries)

    @abstractmethod
    def apply(self, value: Value | None, params: Any, ctx: OpContext) -> OpOutput: ...

    def describe(self) -> str:
        return (self.__doc__ or "").strip().splitlines()[0] if self.__doc__ else ""


OPS: Registry[Op] = Registry("op")
