"""Verify on every read-back (issue 13, part 1): a cached object, a node-cache row or a manifest
file that changed after it was written is refused with one clear error, or recomputed; it is
never used in silence under the key or digest of what was written.

The project of these tests: easy-VQA questions (the MM-R3 question-rephrasing data) whose images
an ``image.corrupt`` node perturbs, answered by a test backend whose answer depends on the
decoded pixels (as a vision model's does) and scored by agreement.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from benchc import api
from benchc.cli import main
from benchc.compiler.canonical import canonical_json
from benchc.compiler.cas import ContentStore, CorruptObjectError, IntegrityError
from benchc.compiler.errors import BenchcError
from benchc.compiler.manifest import (ITEM_SCHEMA, ManifestModifiedError, items_digest, manifest_digest,
                                      read_manifest)
from benchc.compiler.media import load_image, png_bytes, put_image, wav_bytes
from benchc.runtime.backends import BACKENDS, Backend, Request, Response
from benchc.runtime.backends.base import MediaLoader
from benchc.runtime.run.executor import MediaSource
from conftest import SPECS

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

DATA = SPECS / "mm_r3" / "data" / "easy_vqa_rephrasings"

SPEC = """\
[benchmark]
name = "test/integrity"
version = "1.0.0"
seed = 0

[source]
loader = "table"
path = "data/easy_vqa_rephrasings/questions.jsonl"
id = "id"
image_column = "image"
images = "data/easy_vqa_rephrasings/images"

[sample]
n = 2

[[node]]
id = "noisy"
op = "image.corrupt"
input = "image"
params.corruption = { grid = ["clean", "gaussian_noise"] }

[prompt]
template = "{{ record.question }}"

[[metric]]
name = "general.agreement"
"""


class Pixels(Backend):
    """Answers with the prompt and a digest of the decoded pixels of each image it is sent: a
    different image is a different answer, as it is for a vision model."""

    name = "test-pixels"
    tasks = frozenset({"generate"})
    batch_size = 4

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": self.name}

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        answers = []
        for request in requests:
            seen = []
            for kind, sha in request.media:
                image = Image.open(io.BytesIO(load_media(kind, sha)))
                seen.append(hashlib.sha256(image.tobytes()).hexdigest()[:8])
            answers.append(Response("text", text=f"{request.prompt} {' '.join(seen)}"))
        return answers


if Pixels.name not in BACKENDS:
    BACKENDS.register(Pixels.name, Pixels)


class Project:
    """A spec with its data, a compile cache, a manifest, a response store and a run folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.spec = root / "spec.toml"
        self.cache, self.store = root / "cache", root / "store"
        self.manifest, self.run_dir = root / "m", root / "r"

    @classmethod
    def make(cls, root: Path) -> Project:
        project = cls(root)
        shutil.copytree(DATA, root / "data" / DATA.name)
        project.spec.write_text(SPEC)
        return project

    def copy(self, root: Path) -> Project:
        shutil.copytree(self.root, root)
        return Project(root)

    def compile(self, out: Path | None = None, use_memo: bool = True, **kw: Any) -> api.CompileResult:
        return api.compile(self.spec, out or self.manifest, cache_dir=self.cache, store_dir=self.store,
                           use_memo=use_memo, progress=False, check_version=False, **kw)

    def run(self, out: Path | None = None, store: Path | None = None) -> None:
        api.run(self.manifest, out or self.run_dir, model=Pixels.name, cache_dir=self.cache,
                store_dir=store or self.store, progress=False)

    def answers(self, run_dir: Path | None = None) -> dict[str, str]:
        frame = pl.read_parquet((run_dir or self.run_dir) / "responses.parquet")
        return dict(zip(frame["item_id"], frame["text"]))

    def cli(self, capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    def source_image(self) -> Path:
        """The stored file of a record's source image: the 'clean' variant is the same pixels
        (the bundled images are RGB already), so the same object."""
        return self.item_image("[corruption=clean]")

    def item_image(self, item_suffix: str = "[corruption=gaussian_noise]") -> Path:
        frame = read_manifest(self.manifest).items()
        media = json.loads(frame.filter(pl.col("item_id").str.ends_with(item_suffix))["media"][0])
        return ContentStore(self.cache).path_of(media[0]["sha256"])


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """Compiled, run and scored once; each test works on a copy."""
    project = Project.make(tmp_path_factory.mktemp("integrity") / "p")
    project.compile()
    project.run()
    api.score(project.run_dir, cache_dir=project.cache, store_dir=project.store)
    return project


@pytest.fixture
def project(pristine: Project, tmp_path: Path) -> Project:
    return pristine.copy(tmp_path / "p")


def flip(path: Path, offset: int, mask: int = 0xFF) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= mask
    path.write_bytes(bytes(data))


def silent_flip(path: Path) -> None:
    """Flip one bit of a stored PNG's compressed pixels such that it still decodes, to other
    pixels: the damage that, unchecked, changes a model's answer without an error."""
    png = path.read_bytes()
    pixels = _decoded(png)
    start = png.index(b"IDAT") + 4
    for offset in range(start + 2, min(len(png), start + 3000)):
        damaged = bytearray(png)
        damaged[offset] ^= 0x01
        try:
            if _decoded(bytes(damaged)) != pixels:
                path.write_bytes(bytes(damaged))
                return
        except Exception:  # this flip breaks the stream: a loud failure; look for a silent one
            continue
    raise AssertionError(f"no bit of {path} decodes to other pixels")


def _decoded(png: bytes) -> bytes:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image.tobytes()


# content-addressed objects ----------------------------------------------------------------------

def test_a_flipped_image_in_the_cache_is_refused_when_a_model_is_sent_it(project: Project) -> None:
    clean = project.answers()
    image = project.item_image("[corruption=clean]")
    silent_flip(image)
    with pytest.raises(CorruptObjectError) as refused:
        project.run(project.root / "r2", store=project.root / "fresh-store")  # asked again: read again
    message = str(refused.value)
    assert "does not match its key" in message and str(image) in message
    assert "hint: delete the file and rerun: it is recomputed" in message
    image.unlink()  # as the hint says: stored again (from the source: the clean variant is its pixels)
    assert project.compile(use_memo=False).ops_run == 0 and image.is_file()
    project.run(project.root / "r3", store=project.root / "fresh-store")
    assert project.answers(project.root / "r3") == clean


def test_compile_repair_deletes_and_recomputes_every_damaged_object(project: Project,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    clean = project.answers()
    damaged = [project.item_image(), project.source_image()]  # an op's output, a source's image
    flip(damaged[0], 200)  # any damage ...
    silent_flip(damaged[1])  # ... and one that still decodes, to other pixels
    code, out, err = project.cli(capsys, "compile", project.spec, "-o", project.root / "m2", "--cache", project.cache,
                                 "--store", project.store, "--repair", "--no-version-check")
    assert code == 0, err
    assert "repair: 2 damaged object(s)" in out and "(unchanged)" not in out
    assert all(path.is_file() for path in damaged)  # made anew: by the op, and from the source
    assert ContentStore(project.cache).remove_damaged() == []
    assert read_manifest(project.root / "m2").lock["manifest_digest"] == read_manifest(project.manifest).lock[
        "manifest_digest"]
    project.run(project.root / "r2", store=project.root / "fresh-store")  # every image read again
    assert project.answers(project.root / "r2") == clean
    code, out, _ = project.cli(capsys, "compile", project.spec, "-o", project.root / "m2", "--cache", project.cache,
                               "--store", project.store, "--repair", "--no-version-check")
    assert code == 0 and "repair: 0 damaged object(s)" in out


def test_a_flipped_source_image_is_refused_when_an_op_decodes_it(project: Project) -> None:
    source = project.source_image()
    silent_flip(source)
    project.spec.write_text(SPEC.replace('"gaussian_noise"', '"gaussian_noise", "contrast"'))  # new op runs
    with pytest.raises(BenchcError) as refused:
        project.compile(project.root / "m2")
    assert "does not match its key" in str(refused.value) and str(source) in str(refused.value)
    source.unlink()  # stored again from the source by the next compile
    result = project.compile(project.root / "m2")
    assert result.ops_run == 2  # the new corruption, of both records
    again = project.compile(project.root / "m3", use_memo=False)
    assert again.lock["manifest_digest"] == result.lock["manifest_digest"]


def test_a_flipped_image_is_refused_by_preview(project: Project) -> None:
    silent_flip(project.item_image("[corruption=clean]"))
    record = read_manifest(project.manifest).items()["group_id"][0]
    with pytest.raises(CorruptObjectError, match="does not match its key"):
        api.preview(project.manifest, record, project.root / "preview", cache_dir=project.cache)


def test_a_flipped_audio_blob_is_refused_by_the_store_and_the_media_source(tmp_path: Path) -> None:
    store = ContentStore(tmp_path / "cache")
    samples = np.sin(np.linspace(0, 200, 4000)).astype(np.float32) * 0.5
    ref = store.put(wav_bytes(samples, 16000), "audio")
    assert store.get(ref) == wav_bytes(samples, 16000)
    flip(store.path_of(ref.sha256), 100, 0x01)
    with pytest.raises(CorruptObjectError, match="audio .* does not match its key"):
        store.get(ref)
    with pytest.raises(CorruptObjectError, match="object .* does not match its key"):
        MediaSource(tmp_path / "cache", tmp_path / "store")("audio", ref.sha256)
    # an answer's audio in the response store: the hint says how to ask it again
    answers = ContentStore(tmp_path / "store" / "blobs")
    (tmp_path / "store" / "responses.sqlite").write_bytes(b"")
    blob = answers.put(wav_bytes(samples[::-1], 16000), "audio")
    flip(answers.path_of(blob.sha256), 60, 0x10)
    with pytest.raises(CorruptObjectError, match="rerun `benchc run` with a new --store"):
        MediaSource(tmp_path / "cache", tmp_path / "store")("audio", blob.sha256)


def test_an_image_whose_pixels_differ_is_refused_by_load_image(tmp_path: Path) -> None:
    store = ContentStore(tmp_path)
    image = Image.fromarray(np.arange(64 * 48 * 3, dtype=np.uint8).reshape(48, 64, 3), "RGB")
    ref = put_image(store, image)
    assert load_image(store, ref).tobytes() == image.tobytes() and store.get(ref) == store.get(ref.sha256)
    other = Image.fromarray(np.asarray(image)[::-1].copy(), "RGB")  # a valid PNG of other pixels
    store.path_of(ref.sha256).write_bytes(png_bytes(other))
    fresh = ContentStore(tmp_path)  # no memory of the good bytes: decodes to check
    for read in (lambda: load_image(store, ref), lambda: store.get(ref), lambda: fresh.get(ref.sha256)):
        with pytest.raises(CorruptObjectError, match="its decoded pixels have identity"):
            read()
    store.path_of(ref.sha256).write_bytes(b"\x89PNG\r\n\x1a\n broken")
    with pytest.raises(CorruptObjectError, match="cannot be decoded"):
        load_image(store, ref)


# node cache -------------------------------------------------------------------------------------

def _edit_node_row(cache: Path) -> str:
    """Point one stored op output at another image (as a hand edit would); returns its key."""
    with sqlite3.connect(cache / "nodes.sqlite") as db:
        rows = db.execute("SELECT key, output FROM nodes ORDER BY key").fetchall()
        key, output = rows[0]
        other = json.loads(rows[1][1])["value"]
        edited = json.loads(output)
        edited["value"] = other
        db.execute("UPDATE nodes SET output = ? WHERE key = ?", (json.dumps(edited, sort_keys=True), key))
    return key


def test_an_edited_node_output_is_recomputed(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    clean = read_manifest(project.manifest).lock["manifest_digest"]
    _edit_node_row(project.cache)
    result = project.compile(project.root / "m2", use_memo=False)
    assert result.ops_run == 1  # the edited row only
    assert result.lock["manifest_digest"] == clean
    assert "do not match their digest" in capsys.readouterr().err
    assert project.compile(project.root / "m3", use_memo=False).ops_run == 0  # stored again, right


def test_a_node_output_whose_file_is_gone_is_recomputed(project: Project) -> None:
    clean = read_manifest(project.manifest).lock["manifest_digest"]
    image = project.item_image()
    image.unlink()
    result = project.compile(project.root / "m2", use_memo=False)
    assert (result.ops_run, result.lock["manifest_digest"]) == (1, clean) and image.is_file()


def test_a_damaged_node_cache_is_one_clear_error(project: Project) -> None:
    (project.cache / "nodes.sqlite").write_bytes(b"garbage" * 300)
    with pytest.raises(IntegrityError, match="the node cache is damaged") as refused:
        project.compile(project.root / "m2", use_memo=False)
    assert "delete the file and rerun" in str(refused.value)


def test_node_rows_of_a_cache_written_before_digests_are_recomputed_once(project: Project,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(project.cache / "nodes.sqlite") as db:  # the old table: no digest column
        rows = db.execute("SELECT key, output FROM nodes").fetchall()
        db.execute("DROP TABLE nodes")
        db.execute("CREATE TABLE nodes (key TEXT PRIMARY KEY, output TEXT NOT NULL)")
        db.executemany("INSERT INTO nodes VALUES (?, ?)", rows)
    assert project.compile(project.root / "m2", use_memo=False).ops_run == len(rows)
    assert f"{len(rows)} node output(s)" in capsys.readouterr().err
    assert project.compile(project.root / "m3", use_memo=False).ops_run == 0


# manifests --------------------------------------------------------------------------------------

def _edit_prompt(manifest: Path) -> None:
    frame = pl.read_parquet(manifest / "items.parquet")
    frame = frame.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.col("prompt") + " Think twice.")
                               .otherwise(pl.col("prompt")).alias("prompt"))
    frame.write_parquet(manifest / "items.parquet", compression="zstd", statistics=False)


def _delete_row(manifest: Path) -> None:
    pl.read_parquet(manifest / "items.parquet")[1:].write_parquet(manifest / "items.parquet")


def _edit_spec(manifest: Path) -> None:
    spec = json.loads((manifest / "spec.json").read_text())
    spec["generation"]["max_new_tokens"] = 7
    (manifest / "spec.json").write_text(canonical_json(spec) + "\n")  # in the form compile writes


def _reformat_spec(manifest: Path) -> None:
    spec = json.loads((manifest / "spec.json").read_text())
    (manifest / "spec.json").write_text(json.dumps(spec, indent=2))  # same content, another form


def _edit_lock_version(manifest: Path) -> None:
    lock = json.loads((manifest / "lock.json").read_text())
    lock["benchmark"]["version"] = "9.9.9"
    (manifest / "lock.json").write_text(json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


EDITS = {"prompt": (_edit_prompt, "items digest"), "deleted row": (_delete_row, "items digest"),
         "spec": (_edit_spec, "spec digest"), "reformatted spec": (_reformat_spec, "spec.json is not the file"),
         "lock": (_edit_lock_version, "benchmark version != lock's")}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_manifest_is_refused_by_run_score_and_show(project: Project, edit: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    change, what = EDITS[edit]
    project.run()  # a run of this copy's manifest (every answer is in the store)
    change(project.manifest)
    common = ["--cache", project.cache, "--store", project.store]
    for args in (["run", project.manifest, "-o", project.root / "r2", "--model", Pixels.name, *common],
                 ["score", project.run_dir, *common], ["show", project.manifest]):
        code, out, err = project.cli(capsys, *args)
        assert code == 2, (args, out, err)
        assert f"manifest {project.manifest} was modified after compile: " in err and what in err, err
        assert "hint: recompile the spec" in err and err.count("error:") == 1
    assert not (project.root / "r2").exists()


def test_the_message_names_both_digests(project: Project) -> None:
    wanted = read_manifest(project.manifest).lock["manifest_digest"]
    _delete_row(project.manifest)
    found = manifest_digest(pl.read_parquet(project.manifest / "items.parquet").to_dicts())
    with pytest.raises(ManifestModifiedError) as refused:
        read_manifest(project.manifest)
    assert f"items digest {found[:16]} != lock's {wanted[:16]}" in str(refused.value)


def test_a_tampered_compile_memo_is_not_reported_unchanged(project: Project,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    clean = read_manifest(project.manifest).lock["manifest_digest"]
    args = ["compile", project.spec, "-o", project.root / "m2", "--cache", project.cache, "--store", project.store]
    code, out, _ = project.cli(capsys, *args)
    assert code == 0 and "(unchanged)" in out  # the memo, untouched
    [memo] = [p for p in (project.cache / "compiled").iterdir() if not p.name.startswith(".")]
    _edit_prompt(memo)
    code, out, err = project.cli(capsys, *args)
    # a damaged memo is a miss: dropped, recompiled, the right items (and a fresh memo)
    assert code == 0 and "(unchanged)" not in out, err
    assert read_manifest(project.root / "m2").lock["manifest_digest"] == clean
    code, out, _ = project.cli(capsys, *args)
    assert code == 0 and "(unchanged)" in out
    assert read_manifest(project.root / "m2").lock["manifest_digest"] == clean


def test_a_verified_manifest_hands_out_the_items_it_checked(project: Project) -> None:
    manifest = read_manifest(project.manifest)
    assert manifest.frame is not None and manifest.items().equals(pl.read_parquet(project.manifest / "items.parquet"))
    assert read_manifest(project.manifest, verify=False).frame is None


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.characters(max_codepoint=0x2100), max_size=12)),
                min_size=len(ITEM_SCHEMA) * 3, max_size=len(ITEM_SCHEMA) * 3))
def test_the_fast_items_digest_is_the_manifest_digest(values: list[str | None]) -> None:
    names = list(ITEM_SCHEMA)
    rows = [dict(zip(names, values[i : i + len(names)])) for i in range(0, len(values), len(names))]
    frame = pl.DataFrame(rows, schema=ITEM_SCHEMA, orient="row")
    assert items_digest(frame) == manifest_digest(rows)
    assert items_digest(frame.head(0)) == manifest_digest([])


# the property -----------------------------------------------------------------------------------

def _targets(project: Project) -> list[Path]:
    """Every file a later command reads back: cached objects, the node cache, the manifest and
    the compile's memo of it."""
    files = sorted(p for p in (project.cache / "objects").rglob("*") if p.is_file())
    files += [project.cache / "nodes.sqlite"]
    files += sorted(project.manifest.iterdir())
    files += sorted(p for p in (project.cache / "compiled").rglob("*") if p.is_file())
    return files


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_random_flipped_byte_is_refused_or_recomputed_never_used(pristine: Project, tmp_path_factory:
                                                                  pytest.TempPathFactory, data: st.DataObject) -> None:
    project = pristine.copy(tmp_path_factory.mktemp("flip") / "p")
    targets = _targets(project)
    target = data.draw(st.sampled_from(targets), label="file")
    size = target.stat().st_size
    offset = data.draw(st.integers(0, size - 1), label="offset")
    mask = data.draw(st.integers(1, 255), label="xor")
    flip(target, offset, mask)
    clean_digest = read_manifest(pristine.manifest).lock["manifest_digest"]
    clean_scores = json.loads((pristine.run_dir / "scores.json").read_text())
    try:
        # What a user does next: compile again (through the memo), or run and score the manifest.
        compiled = project.compile(project.root / "m2", use_memo=data.draw(st.booleans(), label="memo"))
        assert compiled.lock["manifest_digest"] == clean_digest
        for manifest in (project.manifest, project.root / "m2"):
            run = project.root / f"run-{manifest.name}"
            api.run(manifest, run, model=Pixels.name, cache_dir=project.cache, store_dir=project.root / "fresh",
                    progress=False)
            assert project.answers(run) == pristine.answers()
            scores = api.score(run, cache_dir=project.cache, store_dir=project.root / "fresh")
            assert scores["metrics"] == clean_scores["metrics"]
    except BenchcError as refused:  # the clear error: what changed, where, and what to do
        text = str(refused)
        assert "hint:" in text, text
        assert any(w in text for w in ("does not match its key", "modified after compile", "damaged",
                                       "cannot read")), text
