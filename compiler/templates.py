"""Prompt templates: Jinja2 in a sandbox with StrictUndefined.

The sandbox refuses attribute access to Python internals (``{{ ''.__class__ }}``), and an
undefined variable is an error instead of an empty string.
"""

from __future__ import annotations

from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .numbers import first_number


def make_environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = _number
    return env


def _number(text: object) -> int | float | str:
    """``{{ answer | number }}``: the first number of a text (digits or words), or the text
    itself, stripped, when it has none (a follow-up then quotes what the model said)."""
    value = first_number(str(text))
    return str(text).strip() if value is None else value


_ENV = make_environment()


class TemplateProblem(ValueError):
    """A template failed to compile or render; message is user-facing."""


def compile_template(source: str) -> jinja2.Template:
    try:
        return _ENV.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error on template line {exc.lineno}: {exc.message}") from None


def render(template: jinja2.Template, context: dict[str, Any]) -> str:
    try:
        return template.render(**context)
    except jinja2.UndefinedError as exc:
        raise TemplateProblem(f"undefined variable in template: {exc.message}") from None
    except jinja2.exceptions.SecurityError as exc:
        raise TemplateProblem(f"template tried an unsafe operation: {exc}") from None
    except (TypeError, ValueError, jinja2.TemplateError) as exc:
        raise TemplateProblem(f"template failed to render: {exc}") from None
