"""Reports of real runs, made offline: MM-R3 context reasoning answered by a tiny random LLaVA
(images) and a text-to-speech mini spec spoken by espeak (audio). Every format, the footer on
every artifact, byte-identical renders, per-attribute breakdowns, and the HTML item browser
checked in headless Chromium: its images and audio load, and no response text becomes markup."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from PIL import Image

from benchc import api
from benchc.cli import main
from benchc.compiler.canonical import digest_file
from benchc.runtime.report.tables import read_csv
from conftest import CONTEXT_REASONING
from specfiles import write_mini
from support.tiny_vlm import build_tiny_llava

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed here (Debian package `chromium`; scripts/setup.sh "
                             "installs it), so the HTML cannot be checked in a browser")


@dataclass(frozen=True)
class Run:
    run_dir: Path
    manifest: Path
    cache: Path
    store: Path

    def report(self, out: Path, **options) -> object:
        return api.report_folder(self.run_dir, out, cache_dir=self.cache, store_dir=self.store, **options)


@pytest.fixture(scope="module")
def image_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("image-run")
    model = build_tiny_llava(root / "llava", seed=0)
    result = api.evaluate(CONTEXT_REASONING, root / "out", model=f"hf:{model}", cache_dir=root / "c",
                          store_dir=root / "s", overrides=["sample.n=3", "generation.max_new_tokens=6"],
                          progress=False)
    return Run(result.run_dir, result.manifest_dir, root / "c", root / "s")


@pytest.fixture(scope="module")
def audio_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("audio-run")
    result = api.evaluate(write_mini(root, n=1), root / "out", model="espeak", cache_dir=root / "c",
                          store_dir=root / "s", progress=False)
    return Run(result.run_dir, result.manifest_dir, root / "c", root / "s")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_format_carries_the_scores_and_the_footer(image_run: Run, tmp_path: Path) -> None:
    result = image_run.report(tmp_path / "rep", by=["color"])
    scores = json.loads((image_run.run_dir / "scores.json").read_text())
    record = json.loads((image_run.run_dir / "run.json").read_text())
    [metric] = scores["metrics"]
    digest, folder = scores["manifest_digest"], tmp_path / "rep"
    tables = folder / "tables"
    columns, rows = read_csv((tables / "mmr3.all.csv").read_text())
    assert columns == metric["columns"]
    assert [[float(c) for c in row] for row in rows] == [[float(r[c]) for c in columns] for r in metric["rows"]]
    markdown = (tables / "mmr3.all.md").read_text()
    assert "| " + " | ".join(c.replace("_", "\\_") if c.endswith("_") else c for c in columns) + " |" in markdown
    tex = (tables / "mmr3.all.tex").read_text()
    assert r"\begin{tabular}" in tex and r"S\_GT" in tex and r"\bottomrule" in tex
    # the footer: spec and version, manifest digest, each backend's fingerprint digest, benchc version
    texts = [(p.name, p.read_text()) for p in tables.iterdir()] + [("report.md", result.markdown.read_text())]
    for name, text in texts:
        assert f"mm-r3/context-reasoning 2.0.0 · manifest {digest}" in text, name
        assert "backends answer=hf@" in text and "benchc 0.1.0" in text, name
    for png in folder.glob("plots/*.png"):
        description = Image.open(png).info["Description"]
        assert digest[:16] in description and "answer=hf@" in description
        assert "mm-r3/context-reasoning 2.0.0" in png.with_suffix(".svg").read_text()
    assert {"plots/mmr3.all.bar.png", "plots/mmr3.all.bar.svg",
            "plots/mmr3.all.by-color.breakdown.svg"} <= set(result.files)
    # the breakdown: the run re-scored per masking colour (MM-R3 Table 9)
    items = pl.read_parquet(image_run.manifest / "items.parquet")
    colours = {json.loads(a)["color"] for a in items["attrs"]}
    by_colour_columns, by_colour = read_csv((tables / "mmr3.all.by-color.csv").read_text())
    assert by_colour_columns[0] == "color" and {r[0] for r in by_colour} == colours
    # the page: every figure and medium is a file of the report, nothing comes from a network
    html = (folder / "index.html").read_text()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all((folder / s).is_file() for s in sources)
    assert not re.search(r"(?:src|href|url)\(?=?[\"']?(?:https?:)?//", html)
    media = {json.loads(m)[0]["sha256"] for m in items["media"]}
    assert {p.name.split(".")[0] for p in (folder / "media").iterdir()} == media
    assert f"mm-r3/context-reasoning 2.0.0 · manifest {digest} · backends answer=hf@" in html
    assert record["backends"]["answer"]["backend"] == "hf"


def test_two_renders_of_a_run_are_byte_identical(image_run: Run, tmp_path: Path) -> None:
    image_run.report(tmp_path / "a", by=["shape"])
    image_run.report(tmp_path / "b", by=["shape"])
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert first == second
    assert any(n.endswith(".png") for n in first) and any(n.startswith("media/") for n in first)


def _dump_dom(page: Path, profile: Path) -> str:
    done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", "--mute-audio", f"--user-data-dir={profile}",
                           "--virtual-time-budget=15000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def _media_check(dom: str) -> dict[str, str]:
    match = re.search(r'<p id="media-check"([^>]*)>', dom)
    assert match, "the item browser's script did not run"
    return dict(re.findall(r'([\w-]+)="([^"]*)"', match.group(1)))


INJECTED = 'x <b id="pwned">bold</b></script><img src=nope onerror="document.body.setAttribute(\'data-pwned\',1)"> & y'


def _tamper(run: Run, target: Path) -> Run:
    """A copy of the run whose first response is HTML (with run.json's checksum updated)."""
    shutil.copytree(run.run_dir, target)
    responses = pl.read_parquet(target / "responses.parquet")
    first = responses["item_id"][0]
    responses = responses.with_columns(pl.when(pl.col("item_id") == first).then(pl.lit(INJECTED))
                                       .otherwise(pl.col("text")).alias("text"))
    responses.write_parquet(target / "responses.parquet", statistics=False)
    record = json.loads((target / "run.json").read_text())
    record["responses_sha256"] = digest_file(target / "responses.parquet")
    (target / "run.json").write_text(json.dumps(record))
    return Run(target, run.manifest, run.cache, run.store)


@needs_chromium
def test_the_item_browser_in_chromium_shows_every_image_and_no_markup(image_run: Run, tmp_path: Path) -> None:
    run = _tamper(image_run, tmp_path / "run")
    run.report(tmp_path / "rep")
    page = tmp_path / "rep" / "index.html"
    assert "</script><img" not in page.read_text()
    dom = _dump_dom(page, tmp_path / "profile")
    items = pl.read_parquet(image_run.manifest / "items.parquet")
    check = _media_check(dom)
    assert check["data-state"] == "done"
    assert int(check["data-images"]) == items.height and check["data-images-loaded"] == check["data-images"]
    assert dom.count('<section class="group"') == items["group_id"].n_unique()
    assert dom.count('class="item"') == items.height
    assert dom.count('<li class="active">') == 1
    # the response shows as text; none of it became an element or ran
    assert '&lt;b id="pwned"&gt;bold&lt;/b&gt;&lt;/script&gt;&lt;img src=nope' in dom and "&amp; y" in dom
    assert '<b id="pwned">' not in dom and not re.search(r"<body[^>]*data-pwned", dom)
    # per-group scores sit next to the group's items
    assert dom.count('<table class="scores">') == items["group_id"].n_unique()


@needs_chromium
def test_the_item_browser_in_chromium_loads_every_spoken_answer(audio_run: Run, tmp_path: Path) -> None:
    result = audio_run.report(tmp_path / "rep")
    dom = _dump_dom(result.folder / "index.html", tmp_path / "profile")
    responses = pl.read_parquet(audio_run.run_dir / "responses.parquet")
    speech = responses.filter(pl.col("kind") == "audio")
    check = _media_check(dom)
    assert int(check["data-audio"]) == speech.height == 3
    assert check["data-audio-loaded"] == "3" and check["data-state"] == "done"
    assert {p.name for p in (result.folder / "media").iterdir()} == {f"{b}.wav" for b in speech["blob"]}
    transcripts = responses.filter(pl.col("stage") == "transcript")["text"].to_list()
    assert all(t.replace("&", "&amp;") in dom for t in transcripts if t)


def test_the_report_commands(image_run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(image_run.run_dir, tmp_path / "run")
    assert main(["report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# mm-r3/context-reasoning 2.0.0") and "report/index.html" in out
    assert (tmp_path / "run" / "report" / "tables" / "mmr3.all.tex").is_file()
    before = _files(tmp_path / "run")
    code = main(["report-html", str(tmp_path / "run"), "-o", str(tmp_path / "html"), "--cache", str(image_run.cache),
                 "--store", str(image_run.store), "--by", "lines", "--max-groups", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "media: 3" in out and str(tmp_path / "html") in out
    # a report command writes nothing outside -o: the run (its report.md included) is as it was
    assert _files(tmp_path / "run") == before
    assert "`index.html`" in (tmp_path / "html" / "report.md").read_text()
    assert (tmp_path / "html" / "tables" / "mmr3.all.by-lines.csv").is_file()
    assert "1 of 3 groups" in (tmp_path / "html" / "index.html").read_text()
    # with the wrong cache the explicit command fails with a hint, and leaves no half folder
    code = main(["report-html", str(tmp_path / "run"), "-o", str(tmp_path / "nope"),
                 "--cache", str(tmp_path / "empty")])
    err = capsys.readouterr().err
    assert code == 2 and "media file(s) of the report are in neither the compile cache" in err and "--cache" in err
    assert not (tmp_path / "nope").exists()
