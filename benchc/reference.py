"""docs/reference.md, written from the registries: every source loader (with its parameters and
the fields of its records), op, metric and backend (with its options). Generated so it cannot
drift from the code; a test compares the committed file with a fresh rendering
(`python -m benchc.reference --write`).

The same formatter serves `benchc ops`, `benchc sources`, `benchc metrics` and `benchc backends`:
a parameter's type is written as its allowed values (``one of: 'a', 'b'``, ``int in [0, 15]``,
``text or none``, ``list of text``, ``table``), never as a Python type."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

HEADER = """# benchc reference: sources, ops, metrics, backends

Generated from the registries by `python -m benchc.reference --write`; do not edit by hand.
Spec keys are in docs/spec.md; how to add entries is in `docs/extending.md`.
The same listings are printed by `benchc sources`, `benchc ops`, `benchc metrics` and
`benchc backends`.
"""

# --- types: allowed values, never Python types ------------------------------------------------

SCALARS = {str: "text", int: "int", float: "number", bool: "true/false", type(None): "none"}


def type_text(annotation: Any, metadata: Sequence[Any] = ()) -> str:
    """A parameter's allowed values in words: ``int in [0, 15]``, ``one of: 'a', 'b'``,
    ``number in (0, 1] or none``, ``list of text``, ``table``."""
    inner = _optional_inner(annotation)
    bounds = bounds_text(metadata)
    if inner is not None and bounds:
        return f"{type_text(inner, metadata)} or none"
    if not bounds:
        return kind_text(annotation)
    inline = bounds.startswith(("in ", ">", "<"))
    return f"{kind_text(annotation)} {bounds}" if inline else f"{kind_text(annotation)} ({bounds})"


def kind_text(annotation: Any) -> str:
    """The type without its bounds (``int``, ``one of: 'a', 'b'``, ``text or none``)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_text(args[0], args[1:])
    if origin is Literal:
        return _one_of(args)
    if origin in (Union, types.UnionType):
        return _union_text(args)
    if origin in (list, set, frozenset, tuple) or origin is Sequence:
        return _list_text(origin, args)
    if origin is dict or annotation is dict:
        return "table" if len(args) < 2 or args[1] is Any else f"table of {kind_text(args[1])}"
    return _plain_text(annotation)


def _plain_text(annotation: Any) -> str:
    if annotation is Any:
        return "any value"
    if annotation in SCALARS:
        return SCALARS[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"table ({', '.join(annotation.model_fields)})"
    name = getattr(annotation, "__name__", None)
    return name or re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(annotation))  # drop module paths


def _one_of(values: Sequence[Any]) -> str:
    return "one of: " + ", ".join(repr(v) for v in values)


def _union_text(args: Sequence[Any]) -> str:
    members = [a for a in args if a is not type(None)]
    if members and all(get_origin(a) is Literal for a in members):
        text = _one_of([v for a in members for v in get_args(a)])
    else:
        text = " or ".join(kind_text(a) for a in members)
    return f"{text} or none" if len(members) < len(args) else text


def _list_text(origin: Any, args: Sequence[Any]) -> str:
    if origin is tuple and args and args[-1] is not Ellipsis:
        kinds = {kind_text(a) for a in args}
        return f"list of {len(args)} {kinds.pop()}" if len(kinds) == 1 else \
            "list of " + ", ".join(kind_text(a) for a in args)
    return f"list of {kind_text(args[0])}" if args else "list"


def _optional_inner(annotation: Any) -> Any | None:
    """X for ``X | None`` (one X), else None."""
    if get_origin(annotation) not in (Union, types.UnionType):
        return None
    members = [a for a in get_args(annotation) if a is not type(None)]
    return members[0] if len(members) == 1 and len(members) < len(get_args(annotation)) else None


def bounds_text(metadata: Sequence[Any]) -> str:
    """``in [0, 15]``, ``>= 1``, ``at least 1 item``, ``matching ^...$`` from Field constraints."""
    found = {name: getattr(m, name) for m in metadata
             for name in ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length", "pattern")
             if getattr(m, name, None) is not None}
    parts = [_range_text(found), _length_text(found)]
    if "multiple_of" in found:
        parts.insert(1, f"a multiple of {found['multiple_of']}")
    if "pattern" in found:
        parts.append(f"matching {found['pattern']}")
    return ", ".join(p for p in parts if p)


def _range_text(found: dict[str, Any]) -> str:
    low = ("[", found["ge"]) if "ge" in found else ("(", found["gt"]) if "gt" in found else None
    high = ("]", found["le"]) if "le" in found else (")", found["lt"]) if "lt" in found else None
    if low and high:
        return f"in {low[0]}{low[1]}, {high[1]}{high[0]}"
    if low:
        return f"{'>=' if low[0] == '[' else '>'} {low[1]}"
    if high:
        return f"{'<=' if high[0] == ']' else '<'} {high[1]}"
    return ""


def _length_text(found: dict[str, Any]) -> str:
    least, most = found.get("min_length"), found.get("max_length")
    if least is not None and most is not None:
        return f"length in [{least}, {most}]"
    if least is not None:
        return f"length >= {least}"
    return f"length <= {most}" if most is not None else ""


def default_text(value: Any) -> str:
    """A default as it would be written in a spec (TOML): ``'light'``, ``true``, ``[1, 2]``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(default_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {default_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, BaseModel):
        return default_text(value.model_dump(mode="json"))
    return repr(value)


# --- parameters -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamRow:
    """One parameter of a schema, in words."""

    name: str
    type: str
    """Allowed values with bounds (``int in [0, 15]``): the reference's type column."""
    kind: str
    """Allowed values without bounds (``int``)."""
    bounds: str
    default: str
    """``required``, or the default as written in a spec."""
    meaning: str

    def lines(self) -> list[str]:
        """The CLI's lines: ``lines: int = 1  (in [0, 15])``, then the meaning indented."""
        bounds = f"  ({self.bounds})" if self.bounds else ""
        head = f"{self.name}: {self.kind} = {self.default}{bounds}"
        return [head, f"    {self.meaning}"] if self.meaning else [head]


def param_row(name: str, field: FieldInfo) -> ParamRow:
    default = "required" if field.is_required() else default_text(field.get_default(call_default_factory=True))
    return ParamRow(name, type_text(field.annotation, field.metadata), kind_text(field.annotation),
                    bounds_text(field.metadata), default, " ".join((field.description or "").split()))


def param_rows(model: type[BaseModel], skip: Sequence[str] = ()) -> list[ParamRow]:
    return [param_row(n, f) for n, f in model.model_fields.items() if n not in skip]


def _cell(text: str) -> str:
    """Text for a Markdown table cell: ``|`` escaped, and ``<`` outside code spans (so
    ``<image_id>`` is not read as an HTML tag)."""
    parts = text.replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "\\<")
    return "`".join(parts)


def params_table(model: type[BaseModel], skip: Sequence[str] = ()) -> list[str]:
    rows = param_rows(model, skip)
    if not rows:
        return ["No parameters.", ""]
    lines = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for row in rows:
        default = row.default if row.default == "required" else f"`{row.default}`"
        lines.append(f"| `{row.name}` | {_cell(row.type)} | {_cell(default)} | {_cell(row.meaning)} |")
    return [*lines, ""]


def first_line(doc: str | None) -> str:
    return (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""


# --- sources: what their records hold --------------------------------------------------------


def record_lines(loader: Any) -> list[tuple[str, str, str]]:
    """(section, name, meaning) of a loader's record id, fields and media."""
    rows = [("id", "", getattr(loader, "record_id", "") or "?")]
    rows += [("field", path, text) for path, text in getattr(loader, "record_fields", {}).items()]
    rows += [("media", name, text) for name, text in getattr(loader, "record_media", {}).items()]
    return rows


def record_table(loader: Any) -> list[str]:
    lines = ["Records:", "", "| record | name | meaning |", "|---|---|---|"]
    for section, name, text in record_lines(loader):
        lines.append(f"| {section} | {f'`{name}`' if name else ''} | {_cell(text)} |")
    return [*lines, ""]


# --- backends: options parsed from NAME:TARGET,key=value -------------------------------------


@dataclass(frozen=True)
class BackendDoc:
    target: str
    summary: str
    options: dict[str, str]


@dataclass(frozen=True)
class BackendEntry:
    name: str
    tasks: list[str]
    doc: BackendDoc


def backend_entries(builtin_only: bool = False) -> list[BackendEntry]:
    from .runtime.backends import BACKENDS

    return [BackendEntry(name, sorted(cls.tasks), backend_doc(cls))
            for name, cls in BACKENDS.items() if not builtin_only or is_builtin(cls)]


def backend_doc(cls: Any) -> BackendDoc:
    """A backend's documentation from the class itself: ``target_help``, the docstring's first
    line and the fields of its ``Options`` model."""
    options = {row.name: option_text(row) for row in param_rows(cls.Options)}
    return BackendDoc(cls.target_help, first_line(cls.__doc__).rstrip("."), options)


def option_text(row: ParamRow) -> str:
    """``which word to answer with, one of: 'first', 'last' (default 'last')``.

    An option whose default is None is set by something else (another option, the model, the
    server): its description ends with what that default is, ``(default: the model's)``, which
    stays last, and its type loses ``or none`` (such an option is left out, never written none)."""
    meaning, kind, default = row.meaning, row.type, f"(default {row.default})"
    if row.default == "none":
        kind = kind.removesuffix(" or none")
        said = re.search(r"\s*(\(default\b[^()]*\))$", meaning)
        meaning, default = (meaning[:said.start()], said.group(1)) if said else (meaning, "")
    text = ", ".join(part for part in (meaning, "" if kind == "text" else kind) if part)
    return f"{text} {default}".strip()


def is_builtin(entry: Any) -> bool:
    """Whether a registry entry ships with benchc. The committed reference lists only these, so
    it does not depend on which plugins (or test doubles) happen to be registered in the process
    that renders it; `benchc backends` and friends still list everything registered."""
    module = getattr(entry, "__module__", "") or ""
    return module == "benchc" or module.startswith("benchc.")


def backend_usage(entry: BackendEntry) -> str:
    """How a backend is written: ``hf:TARGET,option=value,...`` with what TARGET is."""
    options = ",option=value,..." if entry.doc.options else ""
    if entry.doc.target == "none":
        return f"`{entry.name}`" + (f" or `{entry.name}:{options[1:]}`" if options else "") + " (no target)"
    return f"`{entry.name}:TARGET{options}` where TARGET is {entry.doc.target}"


def backend_section(entry: BackendEntry) -> list[str]:
    doc = entry.doc
    out = [f"### `{entry.name}`", "", f"{doc.summary}. Tasks: {', '.join(entry.tasks)}.", "",
           f"Written {_cell(backend_usage(entry))}.", ""]
    if not doc.options:
        return [*out, "No options.", ""]
    out += ["| option | meaning |", "|---|---|"]
    out += [f"| `{name}` | {_cell(text)} |" for name, text in doc.options.items()]
    return [*out, ""]


# --- the document -----------------------------------------------------------------------------


def render() -> str:
    from .compiler.metrics import METRIC_SCHEMAS, MetricParams
    from .compiler.ops import OPS
    from .compiler.sources import SOURCES

    out = [HEADER, "## Source loaders", ""]
    for name, loader in _builtin(SOURCES).items():
        out += [f"### `{name}` (v{loader.version})", "", first_line(loader.__doc__), ""]
        out += params_table(loader.Params) + record_table(loader)
    out += ["## Ops", ""]
    for name, op in _builtin(OPS).items():
        kinds = f"{op.input_kind or 'record'} -> {op.output_kind}"
        out += [f"### `{name}` (v{op.version}, {kinds})", "", op.describe(), ""]
        out += params_table(op.Params)
    out += ["## Metrics", "", "Every metric takes the common parameters:", ""]
    out += params_table(MetricParams)
    for name, schema in _builtin(METRIC_SCHEMAS).items():
        out += [f"### `{name}`", "", first_line(schema.__doc__), ""]
        out += params_table(schema, skip=tuple(MetricParams.model_fields))
    out += ["## Backends", ""]
    for entry in backend_entries(builtin_only=True):
        out += backend_section(entry)
    return "\n".join(out).rstrip() + "\n"


def _builtin(registry: dict[str, Any]) -> dict[str, Any]:
    return {name: entry for name, entry in registry.items() if is_builtin(entry)}


REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference.md"


def main(argv: list[str]) -> int:
    text = render()
    if "--write" in argv:
        from .compiler.atomic import write_text_atomic

        write_text_atomic(REFERENCE, text)
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
