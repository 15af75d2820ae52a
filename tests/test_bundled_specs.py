"""The bundled specs of the reference benchmarks' tasks, compiled end to end through the CLI:
item counts, groups, prompts as the papers write them, and each op's visible effect.

(Their committed locks are checked by test_golden.py, which compiles every specs/**/*.toml.)
MM-R3's four-style restyling needs user weights, so it is a .toml.example that no lock covers;
it is compiled here with deterministic weights made in the test.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.media import load_image
from conftest import ROOT, SPECS, cli
from PIL import Image

REPHRASING = SPECS / "mm_r3" / "question_rephrasing.toml"
RESTYLING = SPECS / "mm_r3" / "image_restyling.toml"
STYLES_EXAMPLE = SPECS / "mm_r3" / "image_restyling_styles.toml.example"
RELATIONS = SPECS / "merlim" / "relationships_curated.toml"
KOALA = SPECS / "koala" / "counterfactual.toml"
EASY_VQA_DATA = SPECS / "mm_r3" / "data" / "easy_vqa_rephrasings"
STYLES = ("candy", "mosaic", "udnie")


def compile_spec(spec: Path, out: Path, cache: Path, *args: str | Path) -> pl.DataFrame:
    cli("compile", spec, "-o", out, "--cache", cache, *args, check=True)
    return pl.read_parquet(out / "items.parquet")


def attrs_of(items: pl.DataFrame) -> list[dict]:
    return [json.loads(a) for a in items["attrs"]]


def image_of(cache: Path, media_json: str) -> np.ndarray:
    [media] = json.loads(media_json)
    assert media["name"] == "image"
    return np.asarray(load_image(ContentStore(cache), media["sha256"]).convert("RGB")).astype(np.int32)


def scene_input(image_id: str, size: int | None) -> Image.Image:
    """What the restyling specs feed their styles: the scene's image, resized as image.resize does
    (size None: at its own resolution, as the restyling specs use it)."""
    from benchc.compiler.ops.image_style import target_size
    from benchc.compiler.sources.scenes import make_scene

    seed, index = image_id.split("-")[1:]
    image = make_scene(int(seed), int(index)).image.convert("RGB")
    if size is None:
        return image
    return image.resize(target_size(image.size, size, "shorter_side"), Image.Resampling.LANCZOS)


# --- MM-R3 question rephrasing ------------------------------------------------------------------


def test_question_rephrasing_asks_the_original_and_three_rephrasings(tmp_path: Path, shared_cache: Path) -> None:
    import easy_vqa

    items = compile_spec(REPHRASING, tmp_path / "m", shared_cache)
    rows = {row["id"]: row for row in map(json.loads, (EASY_VQA_DATA / "questions.jsonl").read_text().splitlines())}
    assert items.height == 96 and items["group_id"].n_unique() == 24 == len(rows)
    texts, answers, _ = easy_vqa.get_train_questions()
    for group_id, group in items.group_by("group_id"):
        group = group.sort("item_id")
        row = rows[group_id[0]]
        assert [a["index"] for a in attrs_of(group)] == [0, 1, 2, 3]
        prompts = group["prompt"].to_list()
        assert prompts == group["text"].to_list()  # MM-R3 asks the (rephrased) question as is
        # index 0 is easy-VQA's own question for that record id; 1-3 differ from it and each other
        index = int(group_id[0].split("/")[1])
        assert prompts[0] == row["question"] == texts[index]
        assert len(set(prompts)) == 4
        assert group["media"].n_unique() == 1  # the same image for all four wordings
        assert {json.dumps(json.loads(t)) for t in group["targets"]} == {json.dumps({"answer": [answers[index]]})}


def test_question_rephrasing_data_is_what_the_script_writes(tmp_path: Path) -> None:
    import runpy

    script = runpy.run_path(str(ROOT / "scripts" / "make_easy_vqa_rephrasings.py"))
    script["build"](tmp_path)
    assert (tmp_path / "questions.jsonl").read_bytes() == (EASY_VQA_DATA / "questions.jsonl").read_bytes()
    made = sorted(p.name for p in (tmp_path / "images").iterdir())
    assert made == sorted(p.name for p in (EASY_VQA_DATA / "images").iterdir())
    for name in made:
        assert (tmp_path / "images" / name).read_bytes() == (EASY_VQA_DATA / "images" / name).read_bytes()


# --- MM-R3 image restyling ----------------------------------------------------------------------


def test_image_restyling_grays_each_image_at_its_own_resolution(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    items = compile_spec(RESTYLING, tmp_path / "m", cache)
    assert items.height == 6 and items["group_id"].n_unique() == 6
    assert set(items["prompt"]) == {"Please describe the place in the image in two sentences."}
    for group_id, group in items.group_by("group_id"):
        (attrs,) = attrs_of(group)
        assert attrs["style"] == "grayscale"
        gray = image_of(cache, group["media"][0])
        source = scene_input(group_id[0].split("/")[0], None)
        assert gray.shape[:2] == (256, 256)  # the scene's own size: no resize
        assert np.ptp(np.asarray(source).astype(np.int32), axis=2).max() > 50  # the input has colour
        assert np.array_equal(gray, np.asarray(source.convert("L").convert("RGB")))


def make_weights(folder: Path) -> dict[str, str]:
    """One TransformerNet state dict per style, saved as PyTorch's fast_neural_style example saves
    them (torch.save(model.state_dict(), path)); returns their sha256. Freshly initialised
    networks output almost black images, so the last layer is scaled to give visible colours."""
    import torch
    from benchc.compiler.ops._transformer_net import TransformerNet

    (folder / "weights").mkdir(parents=True)
    digests = {}
    for seed, style in enumerate(STYLES):
        torch.manual_seed(seed)
        network = TransformerNet()
        with torch.no_grad():
            network.deconv3.conv2d.weight.mul_(300)
            network.deconv3.conv2d.bias.fill_(128)
        path = folder / "weights" / f"{style}.pth"
        torch.save(network.state_dict(), path)
        digests[style] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def pin(example: str, digests: dict[str, str]) -> str:
    """The example spec with each style's placeholder digest replaced by its weights' sha256."""
    pinned, count = re.subn(r'(params\.weights = "weights/(\w+)\.pth"\nparams\.sha256 = ")0{64}"',
                            lambda m: f'{m.group(1)}{digests[m.group(2)]}"', example)
    assert count == len(STYLES)
    return pinned


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("style-weights")
    return folder, make_weights(folder)


def test_image_restyling_styles_with_user_weights(tmp_path: Path, weights: tuple[Path, dict[str, str]]) -> None:
    root, digests = weights
    spec = tmp_path / "image_restyling_styles.toml"
    spec.write_text(pin(STYLES_EXAMPLE.read_text(), digests))
    cache = tmp_path / "c"
    items = compile_spec(spec, tmp_path / "m", cache, "--data-root", root, "--set", "source.images=2")
    assert items.height == 8 and items["group_id"].n_unique() == 2
    assert set(items["prompt"]) == {"Please describe the place in the image in two sentences."}
    for group_id, group in items.group_by("group_id"):
        source = np.asarray(scene_input(group_id[0].split("/")[0], None)).astype(np.int32)
        images = {a["style"]: image_of(cache, m) for a, m in zip(attrs_of(group), group["media"])}
        assert sorted(images) == sorted([*STYLES, "grayscale"])
        for style in STYLES:
            styled = images[style]
            assert styled.shape == source.shape
            assert np.abs(styled - source).mean() > 20  # restyled, not the input
            assert np.ptp(styled, axis=2).max() > 50  # and in colour, unlike the grayscale item
        for a, b in ((STYLES[0], STYLES[1]), (STYLES[1], STYLES[2]), (STYLES[0], STYLES[2])):
            assert np.abs(images[a] - images[b]).mean() > 10  # other weights, other style


def test_image_restyling_styles_example_refuses_unpinned_weights(tmp_path: Path,
                                                                 weights: tuple[Path, dict[str, str]]) -> None:
    root, digests = weights
    assert cli("validate", STYLES_EXAMPLE).returncode == 0
    done = cli("compile", STYLES_EXAMPLE, "-o", tmp_path / "m", "--cache", tmp_path / "c", "--data-root", root,
               "--set", "source.images=1")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert digests["candy"] in done.stderr  # the message gives the digest to pin


# --- MERLIM relationships -----------------------------------------------------------------------


def test_merlim_relationships_ask_each_question_as_is_and_negated(tmp_path: Path, shared_cache: Path) -> None:
    """Each released item is two records (its original and its edited image); each asks the
    question and MERLIM's released negation (question_neg)."""
    items = compile_spec(RELATIONS, tmp_path / "m", shared_cache)
    data = json.loads((SPECS / "merlim" / "data" / "rel_task_set_eval_curated_v3_first25imgs.json").read_text())
    released = {Path(item["in_img"]).stem: item for per_image in data.values() for item in per_image}
    lock = json.loads((tmp_path / "m" / "lock.json").read_text())
    assert lock["source"]["records"] == lock["source"]["selected"] == 2 * 88 == 2 * len(released)
    assert not lock.get("dropped")
    assert items.height == 4 * 88 and items["group_id"].n_unique() == 2 * 88
    assert items["prompt"].to_list() == items["text"].to_list()  # MERLIM's prompt is the question
    for group_id, group in items.group_by("group_id"):
        stem, image = group_id[0].split("/")
        assert {json.loads(a)["image"] for a in group["attrs"]} == {image} and image in ("original", "edited")
        assert {json.loads(a)["pair"] for a in group["attrs"]} == {stem}
        by_node = dict(zip(group["node"], group["prompt"]))
        assert by_node == {"asked": released[stem]["question"], "negated": released[stem]["question_neg"]}


def test_merlim_relationships_rule_negation_as_the_header_says(tmp_path: Path, shared_cache: Path) -> None:
    """The header's opt-in: without `params.field` text.negation negates by rule ("not" after
    the subject); it agrees with MERLIM's question_neg on 67 of the 85 items it can negate."""
    text = RELATIONS.read_text()
    assert 'params.field = "question_neg"\n' in text
    spec = tmp_path / "rule.toml"
    spec.write_text(text.replace('params.field = "question_neg"\n', 'params.on_fail = "drop"\n'))
    items = compile_spec(spec, tmp_path / "m", shared_cache, "--data-root", SPECS / "merlim")
    data = json.loads((SPECS / "merlim" / "data" / "rel_task_set_eval_curated_v3_first25imgs.json").read_text())
    released = {Path(item["in_img"]).stem: item for per_image in data.values() for item in per_image}
    lock = json.loads((tmp_path / "m" / "lock.json").read_text())
    # 3 items ask questions the rule cannot negate, on each of their two images
    assert lock["dropped"] == {"negated": {"no subject to negate": 6}}
    negated = items.filter(pl.col("node") == "negated")
    assert negated.height == 2 * 85
    same_as_merlim = 0
    for group_id, prompt in zip(negated["group_id"], negated["prompt"]):
        asked = released[group_id.split("/")[0]]["question"]
        assert " not " in prompt and prompt.replace(" not", "", 1) == asked
        same_as_merlim += prompt == released[group_id.split("/")[0]]["question_neg"]
    assert same_as_merlim == 2 * 67


# --- Koala counterfactual -----------------------------------------------------------------------

KOALA_SYSTEM = "Answer the question Q. If you need help answer <RET> to get the context."


def test_koala_counterfactual_prompts_are_koalas(tmp_path: Path, shared_cache: Path) -> None:
    every = compile_spec(KOALA, tmp_path / "m", shared_cache)
    released = json.loads((SPECS / "koala" / "data" / "segsub_data_labelled_reviewer2.json").read_text())
    kept = [x for x in released if x["type"] == "counterfactual" and x.get("label") is True]
    # each counterfactual item with its original item (same question, the original image, no answer)
    originals = every.filter(pl.col("item_id").str.split("/").list.get(1) == "original")
    items = every.filter(pl.col("item_id").str.split("/").list.get(1) == "counterfactual")
    assert originals.height == 268 and set(originals["prompt"]) == set(items["prompt"])
    assert all(i.endswith("@counterfactual") for i in originals["item_id"])
    assert items.height == len(kept) == 268 and items["group_id"].n_unique() == 268
    assert items["item_id"].str.split("/").list.first().value_counts().sort("item_id").rows() == [
        ("okvqa", 89), ("vqa", 92), ("webqa", 87)]
    assert set(items["system"]) == {KOALA_SYSTEM}
    prompts = set(items["prompt"])
    expected = {x["conversations"][0]["value"].replace("<image>\n", "") for x in kept}
    assert prompts == expected
    for prompt in prompts:
        assert "<image>" not in prompt and re.search(r"(^|\n)Q: .+\Z", prompt, re.DOTALL)
    webqa = items.filter(pl.col("item_id").str.starts_with("webqa/"))["prompt"]
    assert all(p.startswith("Caption: ") for p in webqa)
    assert set(items["media"]) == {"[]"}  # Koala's images are not bundled
