"""Stage 1: read a TOML spec into a frozen ``Spec``, reporting every error at once."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import Problem, SpecError
from ..registry import Registry, did_you_mean
from .locate import index_lines, line_of
from .models import INT64_MAX, INT64_MIN, Select, Spec, SpecKeyError, TextSelect

BOM = "\ufeff"


@dataclass(frozen=True)
class LoadedSpec:
    """A parsed spec with what is needed to point at its lines later."""

    spec: Spec
    path: Path
    text: str
    raw: dict[str, Any]
    lines: dict[str, int]

    def problem(self, key: str, message: str, hint: str | None = None) -> Problem:
        return Problem(message, file=str(self.path), line=line_of(self.lines, key), key=key, hint=hint)

    def unknown(self, registry: Registry[Any], name: str, key: str) -> Problem:
        """An unknown registered name at ``key``, with did-you-mean suggestions."""
        found = registry.unknown(name)
        return self.problem(key, found.message, found.hint)


def load_spec(path: Path | str, overrides: list[str] | None = None) -> LoadedSpec:
    path = Path(path)
    if path.exists() and not path.is_file():  # a folder, a FIFO (a read would wait for ever), /dev/zero
        raise SpecError(Problem("cannot read the spec: not a regular file (a folder, a FIFO or a device)",
                                file=str(path), hint="give the path of a .toml spec file"))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(Problem("spec file not found", file=str(path))) from None
    except UnicodeDecodeError as exc:
        raise SpecError(Problem(f"spec is not UTF-8 text ({exc.reason})", file=str(path))) from None
    except OSError as exc:  # a folder, no permission
        raise SpecError(Problem(f"cannot read the spec: {exc.strerror or exc}", file=str(path),
                                hint="give the path of a .toml spec file")) from None
    return parse_spec_text(text, path, overrides or [])


def parse_spec_text(text: str, path: Path, overrides: list[str]) -> LoadedSpec:
    text = text.removeprefix(BOM)  # editors on Windows write one; TOML would call it an invalid statement
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        raise SpecError(
            Problem(
                f"not valid TOML: {exc}",
                file=str(path),
                line=int(match.group(1)) if match else None,
                hint="check quotes, brackets and '=' on that line",
            )
        ) from None
    if "extends" in raw:
        raw = _extend(raw, path)
    for override in overrides:
        _apply_override(raw, override, path)
    lines = index_lines(text)
    problems = [Problem(message, file=str(path), line=line_of(lines, key), key=key, hint=hint)
                for key, message, hint in value_problems(raw)]
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as exc:
        found = {p.key for p in problems}
        problems += [p for err in exc.errors() for p in _problems_of(dict(err), path, lines) if p.key not in found]
    if problems:
        raise SpecError(problems)
    return LoadedSpec(spec=spec, path=path, text=text, raw=raw, lines=lines)


def value_problems(value: Any, key: str = "") -> list[tuple[str, str, str | None]]:
    """(key path, message, hint) of every value no spec may hold, parameters included: a NUL
    byte in a string or key (it ends a path at the filesystem, and no text needs one), a
    non-finite number (it has no canonical JSON, so no digest) and an integer beyond 64 bits
    (TOML's integers are 64-bit; seeds and counts are too)."""
    out: list[tuple[str, str, str | None]] = []
    if isinstance(value, dict):
        for name, item in value.items():
            shown = str(name).replace("\0", "\\u0000")
            inner = f"{key}.{shown}" if key else shown
            if "\0" in str(name):
                out.append((inner, "a key holds a NUL byte (\\u0000)", "remove it"))
            out += value_problems(item, inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += value_problems(item, f"{key}[{index}]")
    elif isinstance(value, str) and "\0" in value:
        out.append((key, f"the value holds a NUL byte (\\u0000) at character {value.index(chr(0))}",
                    "remove it: no path or text of a spec may hold one"))
    elif isinstance(value, float) and not math.isfinite(value):
        out.append((key, f"{value} is not a finite number", "write a finite number"))
    elif isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        out.append((key, f"{value} does not fit in 64 bits",
                    f"integers lie between {INT64_MIN} and {INT64_MAX}"))
    return out


def _extend(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """``extends = "base.toml"``: the base spec's keys, with this spec's on top. Tables merge key
    by key; arrays of tables ([[node]], [[stage]], [[metric]], [[filter]]) and other values are
    replaced whole. The base must sit in this spec's folder (or below it), so the relative data
    paths of both mean the same files; a base may extend another, never in a cycle."""
    chain = [path.resolve()]
    merged = dict(raw)
    while "extends" in merged:
        name = merged.pop("extends")
        base = _base_path(name, chain[-1], path)
        if base in chain:
            raise SpecError(Problem(f"extends {name!r} makes a cycle", file=str(path), key="extends"))
        chain.append(base)
        try:
            merged = _merge(tomllib.loads(base.read_text(encoding="utf-8").removeprefix(BOM)), merged)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SpecError(Problem(f"cannot read the base spec {base.name}: {exc}", file=str(path),
                                    key="extends", hint="check it with `benchc validate` on its own")) from None
    return merged


def _base_path(name: Any, extending: Path, spec: Path) -> Path:
    folder = spec.resolve().parent
    if not isinstance(name, str) or not name.endswith(".toml"):
        raise SpecError(Problem(f"extends must name a .toml spec (got {name!r})", file=str(spec), key="extends"))
    base = (extending.parent / name).resolve()
    if not base.is_relative_to(folder):
        raise SpecError(Problem(f"extends {name!r} leaves the spec's folder", file=str(spec), key="extends",
                                hint="a base spec lives in the same folder as the specs that extend it"))
    if not base.is_file():
        raise SpecError(Problem(f"extends {name!r}: no such spec", file=str(spec), key="extends",
                                hint=f"looked for {base}"))
    return base


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _apply_override(raw: dict[str, Any], override: str, path: Path) -> None:
    """``sample.n=20`` -> raw["sample"]["n"] = 20 (the value is parsed as a TOML value)."""
    key, sep, value = override.partition("=")
    if not sep or not key.strip():
        raise SpecError(Problem(f"override {override!r} is not KEY=VALUE", hint="e.g. --set sample.n=20"))
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    target: Any = raw
    parts = key.strip().split(".")
    for part in parts[:-1]:
        target = _step_into(target, part, key, path)
    if isinstance(target, list):
        raise SpecError(Problem(f"override {key!r} replaces an entry of an array",
                                file=str(path), hint="set a key inside it, e.g. metric.0.threshold=0.5"))
    target[parts[-1]] = parsed


def _step_into(target: Any, part: str, key: str, path: Path) -> Any:
    """One step of an override's key: a table's key (made when missing), or an entry of an array
    of tables by its number (``metric.0.threshold``: the spec's first [[metric]])."""
    if isinstance(target, list):
        if not part.isdigit() or int(part) >= len(target):
            raise SpecError(Problem(f"override {key!r}: {part!r} is not an entry of an array of {len(target)}",
                                    file=str(path), hint=f"use a number from 0 to {len(target) - 1}"))
        target = target[int(part)]
    else:
        target = target.setdefault(part, {})
    if not isinstance(target, (dict, list)):
        raise SpecError(Problem(f"override {key!r} goes through a non-table value", file=str(path)))
    return target


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


STRICT_TYPES = {"int_type": "an integer", "float_type": "a number", "bool_type": "true or false"}


def _problems_of(err: dict[str, Any], path: Path, lines: dict[str, int]) -> list[Problem]:
    tagged = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    loc = tagged[:1] + tagged[2:] if tagged[:1] == ("select",) and tagged[1:2] in SELECT_TAGS else tagged
    key = _key_path(loc)
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, SpecKeyError):  # a whole-spec check: each problem at its own key
        prefix = f"{key}." if key else ""
        return [Problem(message, file=str(path), line=line_of(lines, prefix + inner), key=prefix + inner,
                        hint=cause.hints.get(inner)) for inner, message in cause.problems]
    kind = err["type"]
    message = err["msg"].removeprefix("Value error, ")
    hint = None
    if kind == "extra_forbidden":
        message = "unknown key"
        hint = _suggest_key(tagged)
    elif kind == "missing":
        message = "required key is missing"
        hint = "add this key"
    elif "input" in err and not isinstance(err["input"], (dict, list)):
        if repr(err["input"]) not in message:
            message = f"{message} (got {err['input']!r})"
        if kind in STRICT_TYPES and isinstance(err["input"], str):
            hint = f"write {STRICT_TYPES[kind]} without quotes (a quoted value is a string)"
    return [Problem(message, file=str(path), line=line_of(lines, key), key=key, hint=hint)]


SELECT_TAGS: dict[tuple[str], type[Select] | type[TextSelect]] = {("model",): Select, ("text",): TextSelect}
"""[select]'s kinds: pydantic puts the tag of its tagged union in an error's location
(``select.text.keep``), which is not a key of the spec; ``_suggest_key`` reads it to pick the kind's model."""


def _suggest_key(loc: tuple[Any, ...]) -> str | None:
    """Suggest a known key of the model that owns the unknown one."""
    from pydantic import BaseModel

    model: type[BaseModel] | None = Spec
    for index, part in enumerate(loc[:-1]):
        if model is None or isinstance(part, int):
            continue
        if index == 1 and loc[0] == "select" and (part,) in SELECT_TAGS:
            model = SELECT_TAGS[(part,)]
            continue
        field = model.model_fields.get(part)
        model = _model_of(field.annotation) if field else None
    if model is None:
        return None
    names = list(model.model_fields) + [f.alias for f in model.model_fields.values() if f.alias]
    return did_you_mean(str(loc[-1]), names) or f"known keys: {', '.join(sorted(model.model_fields))}"


def _model_of(annotation: Any) -> Any:
    from typing import get_args

    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None
