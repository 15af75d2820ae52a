"""``benchc serve-rules``: the rule-based OpenAI-compatible answer server (``rule_server.py``).

The server is not a model: it answers from a table of regular expressions, so that benchc can be
tried end to end without a model (docs/tutorial.md) and tests can know every answer in advance.
``python -m benchc.rule_server`` is an alias of this command. The server's module is imported
only when the command runs (it would cost every ``benchc`` command its HTTP server imports).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DEFAULT_PORT = 8011


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""

    @app.command("serve-rules")
    def serve_rules(
            rules: Annotated[Path, typer.Option(  # help is rich markup: "\[rule]" is shown as "[rule]"
                "--rules", help="rules file (TOML: default, [\\[rule]] pattern/answer)")],
            port: Annotated[int, typer.Option(
                "--port", min=0, max=65535, help="port on 127.0.0.1 (0: pick a free one)")] = DEFAULT_PORT,
            port_file: Annotated[Path | None, typer.Option(
                "--port-file", help="write the port here once listening (removed on exit)")] = None,
            model: Annotated[str | None, typer.Option(
                "--model", help="model id /v1/models lists (default: the rules file's model, else 'rules')")] = None,
            verbose: Annotated[bool, typer.Option("--verbose", help="log every request to stderr")] = False,
    ) -> None:
        """Serve a rules file as an OpenAI-compatible chat server on 127.0.0.1 (not a model: every
        answer comes from the rules file), for trying benchc offline and for tests. The first
        rule whose pattern matches the last user message answers; SIGTERM or Ctrl-C stops it."""
        from .rule_server import run

        run(rules, port, port_file, model, verbose)
