"""Answer texts in the response store carry a digest checked on every read (issue 28 item 2): a
flipped byte or an SQL edit is one clear error, never a silent score ("90 cached", exit 0)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchc.compiler.errors import RunError
from benchc.runtime.run.store import ResponseStore

ANSWERS = [(f"{i:064x}", "text", text, None) for i, text in
           enumerate(["Paris", "The capital of France is Paris.", "Ünïcödé ✓", "", "yes\nno"])]


def _store(folder: Path) -> ResponseStore:
    store = ResponseStore(folder)
    store.put_many("echo", list(ANSWERS))
    return store


def test_answers_read_back_as_stored(tmp_path: Path) -> None:
    store = _store(tmp_path)
    got = store.get_many([k for k, *_ in ANSWERS])
    assert [got[k].text for k, *_ in ANSWERS] == [t for _, _, t, _ in ANSWERS]


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, len(ANSWERS) - 1), where=st.integers(0, 100), bit=st.integers(0, 7))
def test_a_flipped_byte_of_any_answer_is_a_clear_error(tmp_path_factory: pytest.TempPathFactory, which: int,
                                                       where: int, bit: int) -> None:
    folder = tmp_path_factory.mktemp("store")
    _store(folder).close()
    key, _, text, _ = ANSWERS[which]
    data = bytearray((text or "").encode() or b"x")
    data[where % len(data)] ^= 1 << bit
    edited = bytes(data).decode("utf-8", errors="replace")
    if edited == text:
        return
    with sqlite3.connect(folder / "responses.sqlite") as db:  # an edit behind benchc's back
        db.execute("UPDATE responses SET text = ? WHERE key = ?", (edited, key))
    store = ResponseStore(folder)
    with pytest.raises(RunError, match=f"stored answer of request {key[:16]} does not match its digest"):
        store.get_many([key])
    others = [k for k, *_ in ANSWERS if k != key]
    assert len(store.get_many(others)) == len(others)  # the others still read


def test_a_text_moved_to_another_key_fails(tmp_path: Path) -> None:
    _store(tmp_path).close()
    with sqlite3.connect(tmp_path / "responses.sqlite") as db:
        db.execute("UPDATE responses SET text = (SELECT text FROM responses WHERE key = ?) WHERE key = ?",
                   (ANSWERS[1][0], ANSWERS[0][0]))
    with pytest.raises(RunError, match="edited or damaged"):
        ResponseStore(tmp_path).get_many([ANSWERS[0][0]])


def test_a_store_without_digests_gets_them_on_open(tmp_path: Path) -> None:
    """A version-1 store: its rows are taken as found, checked from then on, and the store is
    version 2 (a benchc of version 1, which writes no digests, refuses it)."""
    with sqlite3.connect(tmp_path / "responses.sqlite") as db:
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL, kind TEXT NOT NULL,"
                   " text TEXT, blob TEXT)")
        db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO meta VALUES ('schema', '1')")
        db.execute("INSERT INTO responses VALUES (?, 'echo', 'text', 'Paris', NULL)", ("a" * 64,))
    store = ResponseStore(tmp_path)
    assert store.db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone() == ("2",)
    assert store.get_many(["a" * 64])["a" * 64].text == "Paris"
    store.close()
    with sqlite3.connect(tmp_path / "responses.sqlite") as db:
        db.execute("UPDATE responses SET text = 'Rome'")
    with pytest.raises(RunError, match="does not match its digest"):
        ResponseStore(tmp_path).get_many(["a" * 64])
    with sqlite3.connect(tmp_path / "responses.sqlite") as db:  # a row written without one is no answer either
        db.execute("UPDATE responses SET digest = NULL")
    with pytest.raises(RunError, match="does not match its digest"):
        ResponseStore(tmp_path).get_many(["a" * 64])


def test_the_cli_says_so_with_exit_2(tmp_path: Path) -> None:
    from conftest import cli
    from specfiles import write_rows_spec

    node = '\n[[node]]\nid = "q"\nop = "text.field"\ninput = "record"\nparams.field = "question"\n'
    spec = write_rows_spec(tmp_path, "digests", [{"id": "q1", "question": "hello"}], node)
    args = ("eval", spec, "-o", tmp_path / "out", "--model", "echo", "--store", tmp_path / "store",
            "--cache", tmp_path / "cache")
    assert cli(*args).returncode == 0
    with sqlite3.connect(tmp_path / "store" / "responses.sqlite") as db:
        db.execute("UPDATE responses SET text = 'edited'")
    done = cli(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "edited or damaged" in done.stderr


def test_a_text_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    _store(tmp_path).close()
    with sqlite3.connect(tmp_path / "responses.sqlite") as db:
        db.execute("UPDATE responses SET text = CAST(X'fffe41' AS TEXT) WHERE key = ?", (ANSWERS[0][0],))
    with pytest.raises(RunError, match="not UTF-8 text"):
        ResponseStore(tmp_path).get_many([ANSWERS[0][0]])


def test_an_answers_file_that_is_no_regular_file_is_refused(tmp_path: Path) -> None:
    from conftest import cli

    from conftest import SPECS

    cli("compile", SPECS / "examples" / "paraphrase.toml", "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    for path, why in (("/dev/zero", "not a regular file"),  # /dev/zero was read for ever
                      (tmp_path, "the folder holds no lm-eval samples files")):  # a folder: a harness's output
        done = cli("import", tmp_path / "m", path, "-o", tmp_path / "run")
        assert done.returncode == 2 and "Traceback" not in done.stderr and why in done.stderr
        assert not (tmp_path / "run").exists()
    done = cli("check-disjoint", "/etc/hostname", "/etc/hostname")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "is not a compiled manifest" in done.stderr
