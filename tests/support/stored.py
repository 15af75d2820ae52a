"""Counting a response store's rows from outside the run that writes it (the store may not exist
yet, or be mid-transaction: both read as 0)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def stored_responses(store: Path) -> int:
    db = store / "responses.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return int(con.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
