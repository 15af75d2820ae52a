"""User errors on the run/score/report paths: one message naming the file, a hint, exit 2, no
traceback, and nothing asked of a backend; bugs still raise. Called in-process through
``benchc.cli.main`` (what the console script runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchc import api
from benchc.cli import main
from conftest import CONTEXT_REASONING
from specfiles import write_mini


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    """A compiled mini text-to-speech manifest (stages speech, transcript); cache tmp_path/c."""
    return api.compile(write_mini(tmp_path, n=1), tmp_path / "m", cache_dir=tmp_path / "c").manifest_dir


def _run(capsys: pytest.CaptureFixture[str], manifest: Path, tmp: Path, *extra: str | Path) -> tuple[int, str]:
    return _cli(capsys, "run", manifest, "-o", tmp / "r", "--cache", tmp / "c", "--store", tmp / "s", *extra)


def _one_error(code: int, err: str) -> None:
    assert code == 2 and err.startswith("error: ") and err.count("error:") == 1, err


# --backend STAGE=BACKEND ---------------------------------------------------------------------

@pytest.mark.parametrize("values,fragments", [
    (["transcript"], ["'transcript' is not STAGE=BACKEND", "hint: for example --backend transcript=pocketsphinx"]),
    (["transcrip=pocketsphinx"], ["no stage 'transcrip' in this benchmark",
                                  "did you mean 'transcript'? stages: speech, transcript"]),
    (["transcript=pocketspinx"], ["unknown backend 'pocketspinx'", "did you mean 'pocketsphinx'?"]),
    (["transcript=espeak"], ["backend 'espeak' cannot do 'speech-to-text'", "it does: text-to-speech"]),
    (["speech=espeak", "speech=model"], ["stage 'speech' is given twice"]),
])
def test_backend_overrides_are_checked_before_any_request(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          manifest: Path, values: list[str],
                                                          fragments: list[str]) -> None:
    code, err = _run(capsys, manifest, tmp_path, *[arg for v in values for arg in ("--backend", v)])
    _one_error(code, err)
    assert all(f in err for f in fragments), err
    assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()


def test_eval_checks_backend_overrides_before_compiling(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = write_mini(tmp_path, n=1)
    code, err = _cli(capsys, "eval", spec, "-o", tmp_path / "out", "--model", "espeak", "--cache", tmp_path / "c",
                     "--backend", "transcrpt=pocketsphinx")
    _one_error(code, err)
    assert "did you mean 'transcript'?" in err and not (tmp_path / "out").exists()


# files and folders -----------------------------------------------------------------------------

@pytest.mark.parametrize("content,fragment", [
    (b"\xff\xfe not json", "run.json: cannot read the run record"),
    (b"{\"manifest\": ", "run.json: cannot read the run record"),
    (b"[]", "the run record lacks manifest, manifest_digest, responses_sha256, stages"),
])
def test_a_damaged_run_record(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes,
                              fragment: str) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "run.json").write_bytes(content)
    code, err = _cli(capsys, "score", tmp_path / "r")
    _one_error(code, err)
    assert fragment in err and "hint: rerun `benchc run" in err


def test_score_of_a_folder_that_is_no_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = _cli(capsys, "score", tmp_path / "nothing")
    _one_error(code, err)
    assert "is not a run folder (no run.json)" in err


@pytest.mark.parametrize("content,fragment", [
    (b"\xff\xfe", "scores.json: cannot read the scores"),
    (b"{}", "scores.json: scores.json is not a benchc scores file"),
])
def test_a_damaged_scores_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes,
                               fragment: str) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "scores.json").write_bytes(content)
    code, err = _cli(capsys, "report", tmp_path / "r")
    _one_error(code, err)
    assert fragment in err


def test_a_store_that_is_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest: Path) -> None:
    (tmp_path / "s").write_text("not a folder")
    code, err = _run(capsys, manifest, tmp_path, "--model", "espeak")
    _one_error(code, err)
    assert "--store:" in err and "is a file, not a folder" in err and "hint: pass --store a new folder" in err


def test_a_store_whose_database_is_damaged(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           manifest: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "responses.sqlite").write_bytes(b"garbage" * 200)
    code, err = _run(capsys, manifest, tmp_path, "--model", "espeak")
    _one_error(code, err)
    assert "cannot open the response store: file is not a database" in err


def test_a_cache_that_is_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest: Path) -> None:
    code, err = _cli(capsys, "run", manifest, "-o", tmp_path / "r", "--cache", manifest / "lock.json",
                     "--store", tmp_path / "s", "--model", "espeak")
    _one_error(code, err)
    assert "--cache: cannot open the compile cache" in err


def test_a_cache_without_the_manifests_media(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             shared_cache: Path) -> None:
    manifest = api.compile(CONTEXT_REASONING, tmp_path / "m", cache_dir=shared_cache,
                           overrides=["sample.n=1"]).manifest_dir
    code, err = _run(capsys, manifest, tmp_path, "--model", "espeak")  # refused before the backend is built
    _one_error(code, err)
    assert "3 of the manifest's 3 media files are not in the compile cache" in err
    assert "hint: pass the --cache the manifest was compiled with" in err


@pytest.mark.parametrize("name,content,fragment", [
    ("lock.json", b"\xff{", "cannot read the manifest"),
    ("spec.json", b"{\"benchmark\": 1}", "cannot read the manifest"),
    ("items.parquet", b"PAR1 garbage", "cannot read the items table"),
])
def test_a_damaged_manifest(capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest: Path, name: str,
                            content: bytes, fragment: str) -> None:
    (manifest / name).write_bytes(content)
    code, err = _run(capsys, manifest, tmp_path, "--model", "espeak")
    _one_error(code, err)
    assert fragment in err and "hint: recompile" in err


@pytest.mark.parametrize("model,fragment", [
    ("espeak:speed=fast", "option speed='fast' is not valid\n  hint: speed must be an integer"),
    ("espeak:voice=xx-nope", "option voice='xx-nope' is not valid\n  hint: voice must be a voice espeak-ng knows"),
])
def test_bad_backend_options(capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest: Path, model: str,
                             fragment: str) -> None:
    code, err = _run(capsys, manifest, tmp_path, "--model", model)
    _one_error(code, err)
    assert fragment in err and not (tmp_path / "r").exists()


# exit codes ------------------------------------------------------------------------------------

def test_a_user_error_exits_2_whatever_its_file_is_called(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    spec = write_mini(tmp_path / "locks", n=1)
    spec.write_text(spec.read_text() + "\n[oops]\nx = 1\n")
    code, err = _cli(capsys, "validate", spec)
    assert code == 2 and "oops" in err


def test_a_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug, not a user error")

    monkeypatch.setattr(api, "validate", broken)
    with pytest.raises(ZeroDivisionError):
        main(["validate", str(write_mini(tmp_path, n=1))])


def test_a_spec_path_that_is_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = _cli(capsys, "validate", tmp_path)
    _one_error(code, err)
    assert "cannot read the spec" in err and "hint: give the path of a .toml spec file" in err


def test_validate_refuses_a_metric_on_the_default_stage_when_it_is_speech(capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Path) -> None:
    spec = write_mini(tmp_path, n=1)
    text = spec.read_text()
    cut = text.index("[[stage]]\nid = \"transcript\"")
    spec.write_text(text[:cut] + "[[metric]]\nname = \"mmcbench.consistency\"\n")  # speech is the last stage
    code, err = _cli(capsys, "validate", spec)
    _one_error(code, err)
    assert "metric[0].stage: metric 'mmcbench.consistency' scores stage 'speech' (the last stage, scored by " \
           "default), a text-to-speech stage whose outputs are audio" in err
    assert "hint: metrics read text: add a speech-to-text stage with input = 'speech' and score it" in err
