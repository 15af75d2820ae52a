"""benchc writes and deletes only in folders it made (issue 28 item 6): `--cache /` wrote into
`/`, and `compile --repair` deleted files under `objects/??/` of any folder it was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchc.compiler.errors import RunError
from benchc.compiler.folders import MARKERS, own_folder
from benchc.runtime.run.store import ResponseStore
from conftest import SPECS, cli

PARAPHRASE = SPECS / "examples" / "paraphrase.toml"


@pytest.mark.parametrize("option", ["--cache", "--store"])
def test_a_folder_holding_other_files_is_refused_and_left_as_it_was(tmp_path: Path, option: str) -> None:
    folder = tmp_path / "mine"
    (folder / "objects" / "ab").mkdir(parents=True)
    (folder / "objects" / "ab" / "notes.txt").write_text("keep me")
    (folder / "thesis.tex").write_text("keep me too")
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    args = ["eval", PARAPHRASE, "-o", tmp_path / "out", "--model", "echo", option, folder]
    args += ["--store", tmp_path / "s"] if option == "--cache" else ["--cache", tmp_path / "c"]
    done = cli(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert option in done.stderr and "holds files benchc did not write (" in done.stderr and "thesis.tex" in done.stderr
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before


def test_repair_never_deletes_in_a_folder_benchc_did_not_make(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    (folder / "objects" / "ab").mkdir(parents=True)
    victim = folder / "objects" / "ab" / "cdef"
    victim.write_text("not a benchc object")
    (folder / "README").write_text("a folder of mine")
    done = cli("compile", PARAPHRASE, "-o", tmp_path / "m", "--cache", folder, "--repair")
    assert done.returncode == 2 and victim.read_text() == "not a benchc object"


@pytest.mark.parametrize("path", ["/", "FILE", "HOME"])
def test_the_root_a_file_and_home_are_refused(tmp_path: Path, path: str) -> None:
    target = {"/": Path("/"), "FILE": tmp_path / "file", "HOME": Path.home()}[path]
    if path == "FILE":
        target.write_text("x")
    with pytest.raises(RunError, match="filesystem's root|is a file|home folder"):
        own_folder(target, "cache", "--cache")
    assert not (Path("/") / MARKERS["cache"]).exists()


def test_new_empty_and_old_benchc_folders_are_taken_and_marked(tmp_path: Path) -> None:
    old = tmp_path / "old-store"  # a store made before markers: only benchc's files
    ResponseStore(old).close()
    (old / MARKERS["store"]).unlink()
    ResponseStore(old).close()
    assert (old / MARKERS["store"]).is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert own_folder(empty, "cache", "--cache") == empty and (empty / MARKERS["cache"]).is_file()
    marked = own_folder(tmp_path / "new" / "cache", "cache", "--cache")
    (marked / "anything").write_text("benchc's to keep")  # a marked folder is benchc's whatever it holds
    assert own_folder(marked, "cache", "--cache") == marked
