"""`benchc` commands of the diff family, registered on the main app by benchc/cli.py."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
