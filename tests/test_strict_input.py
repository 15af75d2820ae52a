"""Strict input (issue 13, part 5): every bad value of a spec, a full disk, a damaged database and a
bad option end in one clear message (file:line key, hint), a non-zero exit and no traceback;
specs that would compile to nothing, or sample more records than there are, are refused."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from benchc import cli as cli_module
from benchc.compiler.ops.base import OPS, Op, OpContext, OpOutput, OpParams
from benchc.compiler.values import Value
from conftest import SPECS, cli

PARAPHRASE = SPECS / "examples" / "paraphrase.toml"


def _spec(folder: Path, edit=None, data: str | None = None) -> Path:
    """A copy of the paraphrase example and its data in ``folder``, its text through ``edit``."""
    shutil.copytree(SPECS / "examples" / "data", folder / "data")
    if data is not None:
        (folder / "data" / "paraphrase.csv").write_text(data)
    spec = folder / "paraphrase.toml"
    text = PARAPHRASE.read_text()
    spec.write_text(edit(text) if edit else text)
    return spec


def _replace(old: str, new: str):
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)
    return edit


def _fails(*args: object) -> str:
    done = cli(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    return done.stderr


def _line_of(spec: Path, text: str) -> int:
    return next(i for i, line in enumerate(spec.read_text().splitlines(), 1) if text in line)


# strict spec values ----------------------------------------------------------------------------

BAD_VALUES = [
    # (old, new, fragments): each value once gave a traceback or was silently accepted
    ("max_new_tokens = 16", 'max_new_tokens = "16"',
     ["generation.max_new_tokens", "valid integer", "got '16'", "without quotes"]),
    ("max_new_tokens = 16", "max_new_tokens = 16\ntemperature = inf",
     ["generation.temperature", "inf is not a finite number"]),
    ("max_new_tokens = 16", "max_new_tokens = 16\ntop_p = nan", ["generation.top_p", "nan is not a finite number"]),
    ("seed = 0", "seed = 99999999999999999999", ["benchmark.seed", "does not fit in 64 bits"]),
    ("max_new_tokens = 16", "max_new_tokens = 16\nseed = -9223372036854775809",
     ["generation.seed", "does not fit in 64 bits"]),
    ('version = "1.0.0"', 'version = "1.0.0\\n"', ["benchmark.version", "is not a semantic version"]),
    ('path = "data/paraphrase.csv"', 'path = "data/paraphrase\\u0000.csv"', ["source.path", "NUL byte"]),
    ('params.mode = "lower"', 'params.mode = "lower\\u0000"', ["node[3].params.mode", "NUL byte"]),
    ('params.mode = "lower"', "params.mode = -inf", ["node[3].params.mode", "-inf is not a finite number"]),
    ('id = "lowercased"', 'id = "lowercased\\n"', ["node[3].id", "must match"]),
]


@pytest.mark.parametrize("old,new,fragments", BAD_VALUES, ids=[case[1][-24:] for case in BAD_VALUES])
def test_a_bad_value_is_one_clear_message_with_its_line(tmp_path: Path, old: str, new: str,
                                                        fragments: list[str]) -> None:
    spec = _spec(tmp_path, _replace(old, new))
    line = _line_of(spec, new.splitlines()[-1])
    message = _fails("validate", spec)
    for fragment in [f"paraphrase.toml:{line} ", *fragments]:
        assert fragment in message, message
    assert _fails("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c") == message
    assert not (tmp_path / "m").exists()


def test_a_quoted_number_is_not_coerced_even_from_set(tmp_path: Path) -> None:
    spec = _spec(tmp_path, lambda t: t + '\n[sample]\nn = "4"\n')
    message = _fails("validate", spec)
    line = _line_of(spec, 'n = "4"')
    assert f"paraphrase.toml:{line} sample.n" in message and "valid integer" in message
    assert "sample.n" in _fails("validate", _spec(tmp_path / "b"), "--set", 'sample.n="4"')
    assert cli("validate", _spec(tmp_path / "c"), "--set", "sample.n=4").returncode == 0


def test_an_integer_is_still_a_valid_float(tmp_path: Path) -> None:
    spec = _spec(tmp_path, _replace("max_new_tokens = 16", "max_new_tokens = 16\ntemperature = 1\ntop_p = 1"))
    done = cli("validate", spec)
    assert done.returncode == 0, done.stderr


def test_duplicate_node_ids_and_stage_order_point_at_their_keys(tmp_path: Path) -> None:
    spec = _spec(tmp_path, lambda t: _replace('id = "lowercased"', 'id = "paraphrased"')(t) + """
[[stage]]
id = "check"
input = "answer"

[[stage]]
id = "answer"
""")
    message = _fails("validate", spec)
    lines = spec.read_text().splitlines()
    node_line = [i for i, line in enumerate(lines, 1) if line == 'id = "paraphrased"'][1]
    stage_line = _line_of(spec, 'input = "answer"')
    assert f"paraphrase.toml:{node_line} node[3].id: duplicate node id 'paraphrased'" in message, message
    assert f"paraphrase.toml:{stage_line} stage[0].input: stage 'check' reads 'answer'" in message, message


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.write_bytes(b"\xef\xbb\xbf" + spec.read_bytes())
    done = cli("validate", spec)
    assert done.returncode == 0 and "ok:" in done.stdout, done.stderr
    broken = _spec(tmp_path / "b", _replace("seed = 0", 'seed = "0"'))
    broken.write_bytes(b"\xef\xbb\xbf" + broken.read_bytes())
    assert f"paraphrase.toml:{_line_of(broken, 'seed = ')} benchmark.seed" in _fails("validate", broken)


def test_workers_zero_is_refused(tmp_path: Path) -> None:
    message = cli("compile", _spec(tmp_path), "-o", tmp_path / "m", "--workers", "0")
    assert message.returncode == 2 and "Traceback" not in message.stderr
    assert "--workers" in message.stderr and not (tmp_path / "m").exists()


# a full disk, a damaged database ---------------------------------------------------------------

@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT], ids=["ENOSPC", "EDQUOT"])
def test_a_full_disk_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str], code: int) -> None:
    class Full:
        def write_parquet(self, file: object, **_: object) -> None:
            raise OSError(code, os.strerror(code))  # a write to an open file names no path

    monkeypatch.setattr("benchc.compiler.manifest.items_frame", lambda rows: Full())
    out = tmp_path / "m"
    status = cli_module.main(["compile", str(_spec(tmp_path)), "-o", str(out), "--cache", str(tmp_path / "c"),
                              "--no-version-check"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err == f"error: disk full while writing {out}: free space and rerun; finished work is kept\n"
    assert not out.exists() and not list(tmp_path.glob(".m.*"))


def test_a_full_disk_names_the_file_an_op_was_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """An op's failure is wrapped in an OpError; the full disk under it is still what is said,
    with the file it was writing (found in the frames: the write itself named none)."""
    @contextmanager
    def full(path: Path, durable: bool = True) -> Iterator[Path]:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        yield path

    monkeypatch.setattr("benchc.compiler.atomic._temp_beside", full)
    spec = SPECS / "examples" / "image_invariance.toml"
    status = cli_module.main(["compile", str(spec), "-o", str(tmp_path / "m"), "--cache", str(tmp_path / "c"),
                              "--no-version-check"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"error: disk full while writing {tmp_path / 'c' / 'objects'}/"), err
    assert err.endswith(": free space and rerun; finished work is kept\n") and err.count("\n") == 1, err
    assert not (tmp_path / "m").exists()


class DiskFullParams(OpParams):
    pass


class DiskFull(Op):
    """Fails as a write to a full disk would (a test op; registered only in the processes of
    ``test_a_full_disk_in_a_worker_process_is_one_line``, whose workers import this module)."""

    name = "test.disk_full"
    version = "1.0.0"
    Params = DiskFullParams
    input_kind = "text"
    output_kind = "text"
    default_input = "text"
    reads_record = False

    def apply(self, value: Value | None, params: Any, ctx: OpContext) -> OpOutput:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(ctx.store.root / "objects" / "ab" / "cdef"))


if os.environ.get("BENCHC_TEST_DISK_FULL_OP") and DiskFull.name not in OPS:
    OPS.register(DiskFull.name, DiskFull())


def test_a_full_disk_in_a_worker_process_is_one_line(tmp_path: Path) -> None:
    """A worker's OSError comes back inside an OpError, as text: still one disk-full line."""
    spec = _spec(tmp_path, _replace("\n[prompt]", '\n[[node]]\nid = "full"\nop = "test.disk_full"\n'
                                                 'input = "question"\n\n[prompt]'))
    script = ("import sys, test_strict_input; from benchc.cli import main; "
              f"sys.exit(main(['compile', {str(spec)!r}, '-o', {str(tmp_path / 'm')!r}, "
              f"'--cache', {str(tmp_path / 'c')!r}, '-j', '2']))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).parent, env={**os.environ, "BENCHC_TEST_DISK_FULL_OP": "1"})
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr == (f"error: disk full while writing {tmp_path / 'c' / 'objects' / 'ab' / 'cdef'}: "
                           "free space and rerun; finished work is kept\n"), done.stderr[-3000:]


def _damaged_store(root: Path, pages: range) -> list[str]:
    """A response store whose database has ``pages`` overwritten; returns its keys."""
    from benchc.runtime.run.store import ResponseStore

    store = ResponseStore(root)
    keys = [f"k{i:05d}" for i in range(3000)]
    store.put_many("b", [(key, "text", "x" * 200, None) for key in keys])
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray((root / "responses.sqlite").read_bytes())
    assert len(data) > pages.stop * 4096
    for page in pages:
        data[page * 4096:(page + 1) * 4096] = b"\xff" * 4096
    (root / "responses.sqlite").write_bytes(bytes(data))
    return keys


def test_a_damaged_response_store_is_one_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Pages of the data damaged: the store opens, a read fails."""
    from benchc.runtime.run.store import ResponseStore

    store = tmp_path / "store"
    keys = _damaged_store(store, range(60, 120))

    def compile_reading_the_store(*_: object, store_dir: Path, **__: object) -> None:
        ResponseStore(Path(store_dir)).get_many(keys)

    monkeypatch.setattr("benchc.api.compile", compile_reading_the_store)
    status = cli_module.main(["compile", str(PARAPHRASE), "-o", str(tmp_path / "m"), "--store", str(store)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err == (f"error: the response store {store} is damaged: database disk image is malformed\n"
                   "  hint: move it aside (or delete it) and rerun; answers are recomputed\n")


def test_a_store_that_cannot_open_its_damaged_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Pages of the schema damaged: the store's own error (it cannot open), with the advice."""
    from benchc.runtime.run.store import ResponseStore

    store = tmp_path / "store"
    _damaged_store(store, range(1, 20))
    monkeypatch.setattr("benchc.api.compile", lambda *_, store_dir, **__: ResponseStore(Path(store_dir)))
    status = cli_module.main(["compile", str(PARAPHRASE), "-o", str(tmp_path / "m"), "--store", str(store)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "cannot open the response store: database disk image is malformed" in err
    assert err.endswith(f"hint: the response store {store} is damaged: move it aside (or delete it) and rerun; "
                        "answers are recomputed\n") and "Traceback" not in err


def test_other_database_errors_keep_their_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a full disk and a damaged file are the environment's; anything else is a bug."""
    def locked(*_: object, **__: object) -> None:
        raise sqlite3.OperationalError("no such table: responses")

    monkeypatch.setattr("benchc.api.compile", locked)
    with pytest.raises(sqlite3.OperationalError):
        cli_module.main(["compile", str(PARAPHRASE), "-o", "unused"])


# nothing to compile, too few records -----------------------------------------------------------

def test_a_filter_that_removes_every_record_is_refused_with_the_counts(tmp_path: Path) -> None:
    spec = _spec(tmp_path, lambda t: t + '\n[[filter]]\nwhere = "answer"\nin = ["Paris", "8"]\n\n'
                                          '[[filter]]\nwhere = "id"\nequals = "q9"\n')
    message = _fails("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert (f"paraphrase.toml:{len(spec.read_text().splitlines()) - 2} filter[1]: the manifest would have 0 items: "
            "6 record(s) loaded, 2 after filter[0], 0 after filter[1]") in message, message
    assert not (tmp_path / "m").exists()


def test_an_empty_source_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path, data="id,question,answer\n")
    message = _fails("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert "source: the manifest would have 0 items: 0 record(s) loaded" in message, message


def test_sample_n_above_the_records_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path, lambda t: t + '\n[sample]\nn = 50\n\n[[filter]]\nwhere = "id"\nnot_in = ["q1", "q2"]\n')
    message = _fails("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert f"paraphrase.toml:{_line_of(spec, 'n = 50')} sample.n: sample.n = 50 but only 4 records pass the filters" \
        in message, message
    assert "hint: lower n to 4 or less, or remove it" in message
    done = cli("compile", spec, "--set", "sample.n=4", "-o", tmp_path / "m", "--cache", tmp_path / "c", check=True)
    assert "16 items" in done.stdout


def test_sample_n_per_stratum_above_every_stratum_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path, lambda t: t + '\n[sample]\nn = 3\nstratify = "answer"\n')
    message = _fails("compile", spec, "-o", tmp_path / "m", "--cache", tmp_path / "c")
    assert "sample.n = 3 per answer, but no value of answer has more than 1 of the 6 records" in message, message


# show --where ----------------------------------------------------------------------------------

def test_show_where_with_a_key_no_item_has_is_an_error(tmp_path: Path) -> None:
    manifest = tmp_path / "m"
    cli("compile", _spec(tmp_path), "-o", manifest, "--cache", tmp_path / "c", check=True)
    message = _fails("show", manifest, "--where", "perturbaton=paraphrased")
    assert "--where: no item has a column or attribute 'perturbaton'" in message
    assert "did you mean 'perturbation'" in message
    message = _fails("show", manifest, "--where", "zzz=1")
    assert "columns: item_id" in message and "attributes: " in message and "perturbation" in message
    done = cli("show", manifest, "--where", "perturbation=paraphrased", "--where", "index=1", "--json", check=True)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 6 and all(r["attrs"]["index"] == 1 for r in rows)
    assert cli("show", manifest, "--where", "perturbation=nothing", check=True).stdout.count("\n") == 1


def test_a_full_disk_while_copying_the_memo_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28 item 8: shutil.copytree reports a full disk as shutil.Error, its errno only in text."""
    import shutil

    args = ["compile", str(_spec(tmp_path)), "-o", str(tmp_path / "m"), "--cache", str(tmp_path / "c"),
            "--no-version-check"]
    assert cli_module.main(args) == 0
    capsys.readouterr()

    def full(src: object, dst: object, **_: object) -> None:
        raise shutil.Error([(str(src), str(dst), f"[Errno 28] No space left on device: '{dst}/items.parquet'")])

    monkeypatch.setattr(shutil, "copytree", full)
    args[3] = str(tmp_path / "m2")
    assert cli_module.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: disk full while writing ") and "Traceback" not in err and len(err.splitlines()) == 1
    assert not (tmp_path / "m2").exists()


def test_a_full_disk_under_polars_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28 item 8: polars' parquet writer reports a full disk as ComputeError, not OSError
    (measured on a full tmpfs: 'parquet: File out of specification: underlying IO error: No space
    left on device (os error 28)'), and a compile with --no-memo ended in a traceback."""
    import polars as pl

    class Full:
        def write_parquet(self, file: object, **_: object) -> None:
            raise pl.exceptions.ComputeError("parquet: File out of specification: underlying IO error: "
                                             "No space left on device (os error 28)")

    monkeypatch.setattr("benchc.compiler.manifest.items_frame", lambda rows: Full())
    out = tmp_path / "m"
    status = cli_module.main(["compile", str(_spec(tmp_path)), "-o", str(out), "--cache", str(tmp_path / "c"),
                              "--no-version-check", "--no-memo"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err and err.startswith("error: disk full while writing "), err
    assert len(err.splitlines()) == 1 and not out.exists()
