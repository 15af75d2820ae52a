"""Perturbation strength measures (runtime/score/measures.py, kornia): SSIM, PSNR, colour and edge change
of a variant against its original, shown by `benchc preview` and summarised by `benchc calibrate`.
Measurements only: never in a digest."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from benchc.compiler.cas import ContentStore
from benchc.compiler.manifest import read_manifest
from conftest import CONTEXT_REASONING, SPECS, cli
from PIL import Image, ImageDraw, ImageFilter

from benchc.calibrate import sample_groups
from benchc.preview import INDEX_FILE, manifest_rows, natural_key, original_media, source_records
from benchc.runtime.score import measures
from benchc.runtime.score.measures import Measures, measure

CORRUPTIONS = SPECS / "examples" / "image_corruptions.toml"
TEXT = SPECS / "mmcbench" / "text_corruptions_generated.toml"
BLUR_AND_NOISE = ["--set", 'node.0.params.corruption={grid=["gaussian_blur","gaussian_noise"]}',
                  "--set", "sample.n=2"]


def scene(width: int = 96, height: int = 72) -> Image.Image:
    """Coloured shapes of moderate saturation on a textured background (no clipping under a hue turn)."""
    rng = np.random.default_rng(0)
    background = np.clip(rng.normal(140, 12, (height, width, 3)), 0, 255).astype(np.uint8)
    image = Image.fromarray(background)
    draw = ImageDraw.Draw(image)
    draw.rectangle((8, 8, 40, 36), fill=(190, 100, 90))
    draw.ellipse((44, 20, 86, 62), fill=(90, 150, 110))
    draw.polygon([(10, 64), (30, 42), (50, 66)], fill=(100, 110, 190))
    return image


def hue_turn(image: Image.Image, degrees: float) -> Image.Image:
    """A hue rotation in YIQ space: the chroma (I, Q) turned, the luma Y (0.299 R + 0.587 G +
    0.114 B, as kornia's rgb_to_grayscale weighs it) kept, up to rounding to 8 bits."""
    to_yiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
    angle = math.radians(degrees)
    turn = np.array([[1, 0, 0], [0, math.cos(angle), -math.sin(angle)], [0, math.sin(angle), math.cos(angle)]])
    matrix = np.linalg.inv(to_yiq) @ turn @ to_yiq
    pixels = np.asarray(image, dtype=np.float64) @ matrix.T
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8))


# -- the measures ---------------------------------------------------------------------------------

def test_identical_images_are_unchanged_with_an_infinite_psnr() -> None:
    image = scene()
    got = measure(image, image.copy())
    assert got == Measures(ssim=1.0, psnr=math.inf, colour=0.0, edge=0.0, resized=False)
    assert got.as_json()["psnr"] is None and "PSNR inf dB" in got.text()


def test_a_stronger_blur_lowers_ssim_and_psnr_more() -> None:
    image = scene()
    light, heavy = (measure(image, image.filter(ImageFilter.GaussianBlur(r))) for r in (0.8, 2.5))
    assert 1.0 > light.ssim > heavy.ssim
    assert light.psnr > heavy.psnr and math.isfinite(heavy.psnr)
    assert 0 < light.edge < heavy.edge


def test_a_hue_turn_changes_colour_not_edges() -> None:
    image = scene()
    turned = hue_turn(image, 120)
    got, blurred = measure(image, turned), measure(image, image.filter(ImageFilter.GaussianBlur(1.5)))
    assert got.colour > 10 and got.colour > 4 * blurred.colour
    assert got.edge < 0.003 < blurred.edge
    assert got.edge * 10 < blurred.edge


def test_values_are_rounded_to_four_decimals_and_arrays_are_accepted() -> None:
    image = scene()
    noisy = np.clip(np.asarray(image, dtype=np.int16) + np.random.default_rng(1).integers(-20, 21, (72, 96, 3)),
                    0, 255).astype(np.uint8)
    got = measure(np.asarray(image), noisy)
    for value in (got.ssim, got.psnr, got.colour, got.edge):
        assert value == round(value, 4)
    assert got == measure(image, Image.fromarray(noisy))
    grey = measure(image, np.asarray(image.convert("L")))  # a grey array becomes RGB
    assert grey.edge < 0.001 and grey.colour > 1
    with pytest.raises(TypeError, match="8-bit"):
        measure(np.asarray(image, dtype=np.float32), noisy)


def test_a_variant_of_another_size_is_resized_to_the_original() -> None:
    image = scene()
    got = measure(image, image.resize((48, 36)))
    assert got.resized and 0 < got.ssim < 1 and "(resized)" in got.text()
    tiny = Image.new("RGB", (3, 2), (10, 20, 30))  # smaller than the SSIM window: fewer taps
    assert measure(tiny, tiny).ssim == 1.0


def test_the_same_numbers_with_one_or_two_torch_threads() -> None:
    image = scene()
    variant = image.filter(ImageFilter.GaussianBlur(1.2)).rotate(3)
    before = torch.get_num_threads()
    try:
        got, raw = [], []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append(measure(image, variant))
            assert torch.get_num_threads() == threads  # measure() restores the caller's count
            a, b = measures.tensor(image), measures.tensor(variant)
            with torch.no_grad():  # unrounded, without the one-thread guard: bitwise equal too
                raw.append((measures.ssim(a, b), measures.psnr(a, b), measures.colour_change(a, b),
                            measures.edge_change(a, b)))
    finally:
        torch.set_num_threads(before)
    assert got[0] == got[1] and raw[0] == raw[1]


def test_the_sample_of_groups_is_seeded_and_sorted() -> None:
    groups = [f"g{i}" for i in range(20)]
    first = sample_groups(list(reversed(groups)), 5, 3)
    assert first == sample_groups(groups, 5, 3) == sorted(first) and len(first) == 5
    assert sample_groups(groups, 5, 4) != first
    assert sample_groups(groups, None, 0) == sample_groups(groups, 50, 0) == sorted(groups)


# -- benchc calibrate -----------------------------------------------------------------------------

ROW = re.compile(r"^(\S+)\s+(\S+)\s+(.+?)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$")


def tables(text: str) -> dict[str, list[tuple[str, ...]]]:
    """Each measure's table: title's first word -> rows (node, op, setting, n, min, median, mean, max)."""
    out: dict[str, list[tuple[str, ...]]] = {}
    current = None
    for line in text.splitlines():
        if line.split(" ", 1)[0] in ("SSIM", "PSNR,", "colour", "edge"):
            current = out.setdefault(line.split(" ", 1)[0].rstrip(","), [])
        elif current is not None and (match := ROW.match(line)) and match.group(1) != "node":
            current.append(match.groups())
    return out


def test_calibrate_prints_each_measure_per_op_and_severity(tmp_path: Path, shared_cache: Path) -> None:
    done = cli("calibrate", CORRUPTIONS, "--sample", "1", "--cache", shared_cache, "--json", tmp_path / "c.json",
               *BLUR_AND_NOISE, check=True)
    assert done.stdout.startswith("examples/image-corruptions: 6 image variant(s) of 1 of 2 group(s)")
    found = tables(done.stdout)
    assert list(found) == ["SSIM", "PSNR", "colour", "edge"]
    settings = [(r[0], r[1], r[2], r[3]) for r in found["SSIM"]]
    assert settings == [
        ("corrupted", "image.corrupt", "corruption=gaussian_blur, severity=light", "1"),
        ("corrupted", "image.corrupt", "corruption=gaussian_blur, severity=heavy", "1"),
        ("corrupted", "image.corrupt", "corruption=gaussian_noise, severity=light", "1"),
        ("corrupted", "image.corrupt", "corruption=gaussian_noise, severity=heavy", "1"),
        ("gray", "image.grayscale", "-", "1"), ("small", "image.resize", "-", "1")]
    ssim = {r[2]: float(r[5]) for r in found["SSIM"]}  # the medians
    for corruption in ("gaussian_blur", "gaussian_noise"):
        assert ssim[f"corruption={corruption}, severity=heavy"] < ssim[f"corruption={corruption}, severity=light"] < 1
    written = json.loads((tmp_path / "c.json").read_text())
    assert written["measured"] == 6 and len(written["sampled"]) == 1 and written["without_original"] == 0
    first = written["rows"][0]
    assert first["setting"] == "corruption=gaussian_blur, severity=light"
    assert first["stats"]["ssim"]["median"] == ssim[first["setting"]]
    assert set(first["stats"]) == {"ssim", "psnr", "colour", "edge"}
    assert set(first["stats"]["ssim"]) == {"min", "median", "mean", "max"}
    again = cli("calibrate", CORRUPTIONS, "--sample", "1", "--cache", shared_cache, "--format", "json",
                *BLUR_AND_NOISE, check=True)
    assert json.loads(again.stdout) == written  # deterministic, and --format json prints the same document


def test_calibrate_refuses_a_text_only_spec_in_one_line(tmp_path: Path) -> None:
    done = cli("calibrate", TEXT, "--cache", tmp_path / "cache")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: calibrate measures images:") and "makes an image" in done.stderr
    assert not (tmp_path / "cache").exists()  # refused before compiling anything


# -- benchc preview -------------------------------------------------------------------------------

def test_preview_lists_each_variants_measures_against_the_original(tmp_path: Path, shared_cache: Path) -> None:
    manifest = tmp_path / "manifest"
    cli("compile", CONTEXT_REASONING, "-o", manifest, "--cache", shared_cache, "--set", "sample.n=2", check=True)
    rows = manifest_rows(read_manifest(manifest))
    group = sorted((r for r in rows if r["group_id"] == rows[0]["group_id"]), key=natural_key)
    cli("preview", manifest, group[0]["group_id"], "-o", tmp_path / "p", "--cache", shared_cache, check=True)
    index = (tmp_path / "p" / INDEX_FILE).read_text()
    assert "| # | item | attrs | SSIM | PSNR | colour | edge | prompt |" in index
    assert "never in a digest" in index
    cells = {line.split(" | ")[1]: line.split(" | ")[3:7] for line in index.splitlines()
             if line.startswith("| ") and "#masked" in line}
    assert list(cells) == [r["item_id"] for r in group]
    store = ContentStore(shared_cache)
    loaded = read_manifest(manifest)
    media = original_media(loaded, group[0], "image", source_records(loaded, store, [CONTEXT_REASONING.parent]))
    assert media is not None
    original = Image.open(store.path_of(media["sha256"]))
    for row in group:  # the measures of the stored variant against the original, as index.md prints them
        got = measure(original, Image.open(store.path_of(row["media"][0]["sha256"])))
        assert cells[row["item_id"]] == [f"{got.ssim:.4f}", f"{got.psnr:.4f}", f"{got.colour:.4f}", f"{got.edge:.4f}"]
        assert 0 < got.ssim < 1 and got.colour > 0
    store.close()


# -- reports: --by ssim_bin -----------------------------------------------------------------------

def test_a_report_splits_metrics_by_ssim_bin_without_touching_the_run(tmp_path: Path, shared_cache: Path) -> None:
    from benchc.runtime.report.strength import NO_BIN, ssim_bin

    assert [ssim_bin(v) for v in (0.2, 0.5, 0.85, 0.95, 1.0, None)] == [
        "0.00-0.50", "0.50-0.70", "0.80-0.90", "0.95-1.00", "0.95-1.00", NO_BIN]
    spec = SPECS / "examples" / "image_invariance.toml"
    out = tmp_path / "ev"
    cli("eval", spec, "-o", out, "--model", "echo:answer=red", "--cache", shared_cache, "--store", tmp_path / "s",
        "--set", "sample.n=1", check=True)
    scores_before = (out / "run" / "scores.json").read_bytes()
    digest = json.loads((out / "manifest" / "lock.json").read_text())["manifest_digest"]
    cli("report-html", out / "run", "-o", tmp_path / "rep", "--cache", shared_cache, "--by", "ssim_bin",
        "--no-browser", check=True)
    table = [line for line in (tmp_path / "rep" / "tables" / "general.accuracy.by-ssim_bin.csv").read_text()
             .splitlines() if not line.startswith("#")]  # the footer's lines
    assert table[0].startswith("ssim_bin,items")
    bins = [line.split(",")[0] for line in table[1:]]
    assert bins == sorted(bins) and "0.95-1.00" in bins and NO_BIN not in bins  # the original node's item: SSIM 1
    assert sum(int(line.split(",")[1]) for line in table[1:]) == 8  # every item in one bin
    assert "never in a digest" in (tmp_path / "rep" / "index.html").read_text()
    assert (out / "run" / "scores.json").read_bytes() == scores_before
    assert json.loads((out / "manifest" / "lock.json").read_text())["manifest_digest"] == digest
