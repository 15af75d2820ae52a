"""docs/reference.md, written from the registries: every source loader, op and metric with its
parameters, types, defaults and descriptions. Generated so it cannot drift from the code; a test
compares the committed file with a fresh rendering (`python -m benchc.reference --write`)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

HEADER = """# benchc reference: sources, ops, metrics

Generated from the registries by `python -m benchc.reference --write`; do not edit by hand.
Spec keys are in the README's *Spec reference*; how to add entries is in `docs/extending.md`.
"""


def type_name(annotation: Any) -> str:
    """A short, readable name of a parameter's type (``one of a|b`` for Literals)."""
    if get_origin(annotation) is Literal:
        return "one of " + "\\|".join(str(a) for a in get_args(annotation))
    name = getattr(annotation, "__name__", None) if get_args(annotation) == () else None
    text = name or re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(annotation))  # drop module paths
    return text.replace(" | ", " or ")


def params_table(model: type[BaseModel], skip: tuple[str, ...] = ()) -> list[str]:
    rows = [(n, f) for n, f in model.model_fields.items() if n not in skip]
    if not rows:
        return ["No parameters.", ""]
    lines = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for name, field in rows:
        default = "required" if field.is_required() else f"`{field.get_default(call_default_factory=True)!r}`"
        meaning = (field.description or "").replace("|", "\\|")
        lines.append(f"| `{name}` | {type_name(field.annotation)} | {default} | {meaning} |")
    return [*lines, ""]


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""


def render() -> str:
    from .compiler.metrics import METRIC_SCHEMAS, MetricParams
    from .compiler.ops import OPS
    from .compiler.sources import SOURCES

    out = [HEADER, "## Source loaders", ""]
    for name, loader in SOURCES.items():
        out += [f"### `{name}` (v{loader.version})", "", _first_line(loader.__doc__), ""]
        out += params_table(loader.Params)
    out += ["## Ops", ""]
    for name, op in OPS.items():
        kinds = f"{op.input_kind or 'record'} -> {op.output_kind}"
        out += [f"### `{name}` (v{op.version}, {kinds})", "", op.describe(), ""]
        out += params_table(op.Params)
    out += ["## Metrics", "", "Every metric takes the common parameters:", ""]
    out += params_table(MetricParams)
    for name, schema in METRIC_SCHEMAS.items():
        out += [f"### `{name}`", "", _first_line(schema.__doc__), ""]
        out += params_table(schema, skip=tuple(MetricParams.model_fields))
    return "\n".join(out).rstrip() + "\n"


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
