"""What every ``benchc`` command shares: the default folders, ``--format json`` output, the
global ``-v/--verbose`` logging, ``--version``, and the one-line form of a usage error."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .defaults import DEFAULT_CACHE, DEFAULT_STORE

__all__ = ["DEFAULT_CACHE", "DEFAULT_STORE", "TEXT_JSON", "OutputFormat", "check_format", "echo_json",
           "package_version", "configure_logging", "reset_logging", "usage_error_text"]

TEXT_JSON = ("text", "json")
"""The output formats of a command that reports: lines for people, or one JSON document on stdout."""

OutputFormat = Annotated[str, typer.Option("--format", "-f", help="text, or json: one JSON document on stdout")]


def check_format(fmt: str, allowed: tuple[str, ...] = TEXT_JSON) -> str:
    """``fmt`` if it is one of ``allowed``, else a user error (exit 2) that lists them."""
    from .compiler.errors import BenchcError, Problem

    if fmt not in allowed:
        raise BenchcError(Problem(f"unknown --format {fmt!r}", key="--format", hint=f"one of {', '.join(allowed)}"))
    return fmt


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def echo_json(value: Any) -> None:
    """Print ``value`` as one JSON document (paths as strings, dataclasses as objects)."""
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=_plain))


def package_version() -> str:
    """benchc's version as installed (package metadata), else the source's ``__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("benchc")
    except PackageNotFoundError:
        from . import __version__

        return __version__


LOGGER = "benchc"
_handler: logging.Handler | None = None
_saved_level: int | None = None


def configure_logging(verbosity: int) -> None:
    """``-v``: the benchc loggers at INFO, ``-vv``: at DEBUG, to stderr; 0 leaves logging alone."""
    global _handler, _saved_level
    if verbosity <= 0:
        return
    reset_logging()
    logger = logging.getLogger(LOGGER)
    _saved_level = logger.level
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(logging.INFO if verbosity == 1 else logging.DEBUG)


def reset_logging() -> None:
    """Undo ``configure_logging`` (``main`` may run more than once in a process, as in tests)."""
    global _handler, _saved_level
    logger = logging.getLogger(LOGGER)
    if _handler is not None:
        logger.removeHandler(_handler)
        _handler = None
    if _saved_level is not None:
        logger.setLevel(_saved_level)
        _saved_level = None


def usage_error_text(exc: Any) -> str:
    """A click usage error as one line, ``error: ...``, and a second naming the command's help."""
    message = " ".join(str(exc.format_message()).split())
    lines = [f"error: {message}"]
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        lines.append(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.")
    return "\n".join(lines)
