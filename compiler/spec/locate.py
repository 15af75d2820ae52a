"""Map TOML key paths to line numbers.

``tomllib`` parses correctly but keeps no positions; this scanner walks the same text once and
records the line where each key path is written (``node[2].params.color`` -> 31), so that errors
can point at a line. It understands table and array-of-tables headers, dotted keys and one level
of inline tables; anything it cannot place falls back to the line of the enclosing key or table.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*'))*)\s*=""")
_INLINE_KEY = re.compile(r"""[{,]\s*([A-Za-z0-9_\-]+|"[^"]*")\s*=""")


def _split_dotted(key: str) -> list[str]:
    parts = re.findall(r"""[A-Za-z0-9_\-]+|"[^"]*"|'[^']*'""", key)
    return [p.strip("\"'") for p in parts]


def index_lines(text: str) -> dict[str, int]:
    """Return {key path: 1-based line} for every key and table in ``text``."""
    lines: dict[str, int] = {}
    counters: dict[str, int] = {}
    prefix = ""
    in_multiline = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if in_multiline:
            in_multiline += line.count("[") - line.count("]")
            continue
        if not line or line.startswith("#"):
            continue
        header = _HEADER.match(raw)
        if header and not _KEY.match(raw):
            name = ".".join(_split_dotted(header.group(2)))
            if header.group(1) == "[[":
                index = counters.get(name, -1) + 1
                counters[name] = index
                prefix = f"{name}[{index}]"
            else:
                prefix = _with_array_indices(name, counters)
            lines.setdefault(prefix, number)
            continue
        key = _KEY.match(raw)
        if not key:
            continue
        path = ".".join(filter(None, [prefix, *_split_dotted(key.group(1))]))
        lines.setdefault(path, number)
        value = raw[key.end():]
        for inner in _INLINE_KEY.findall(value):
            lines.setdefault(f"{path}.{inner.strip(chr(34))}", number)
        in_multiline = max(0, value.count("[") - value.count("]"))
    return lines


def _with_array_indices(name: str, counters: dict[str, int]) -> str:
    """``[node.params]`` after the third ``[[node]]`` means ``node[2].params``."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        if head in counters:
            rest = ".".join(parts[cut:])
            return f"{head}[{counters[head]}]" + (f".{rest}" if rest else "")
    return name


def line_of(lines: dict[str, int], path: str) -> int | None:
    """The line of ``path`` or of its closest written ancestor."""
    while path:
        if path in lines:
            return lines[path]
        if "." not in path and "[" not in path:
            return None
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut]
    return None
