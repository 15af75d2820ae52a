"""``[select]``: hard records chosen by the consistency of baseline models (MMCBench), on the
compiler's side with a fake model client whose answers and embeddings make every score
computable here; the lock, the memo and one clear error per bad input. (The runtime's client
with real tiny captioners is test_select_hard_e2e.)"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from benchc import api
from benchc.compiler.compile import CompileOptions, CompileResult, compile_spec, spec_digest
from benchc.compiler.errors import SpecError
from benchc.compiler.model_steps import ModelBackendRef, ModelPrompt
from benchc.compiler.resolve import resolve
from benchc.compiler.spec.parse import load_spec

CORRUPTIONS = ["gaussian_noise", "fog", "pixelate"]
VECTORS = {"A": [1.0, 0.0], "B": [0.0, 1.0], "C": [0.6, 0.8]}
"""The fake embedder's unit vectors: cos(A, B) = 0, cos(A, C) = 0.6, cos(B, C) = 0.8."""


class FakeCaptioners:
    """Each model captions an image with one of A, B, C, drawn from the image's sha256 and the
    model's name (so the models disagree); the embedder maps a caption to VECTORS."""

    def __init__(self) -> None:
        self.asked: dict[str, list[str]] = {}  # backend -> media sha256 of each prompt, in order
        self.generate_calls = 0

    def fingerprint(self, ref: ModelBackendRef) -> dict[str, Any]:
        return {"fake": ref.backend, "task": ref.task, **ref.generation.as_json()}

    def generate(self, ref: ModelBackendRef, prompts: Sequence[ModelPrompt]) -> list[str]:
        self.generate_calls += 1
        shas = [p.media[0].sha256 for p in prompts]
        self.asked.setdefault(ref.backend, []).extend(shas)
        return [caption(ref.backend, sha) for sha in shas]

    def embedder_fingerprint(self, name: str) -> dict[str, Any]:
        return {"embedder": name}

    def embed(self, name: str, texts: Sequence[str]) -> np.ndarray:
        return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def caption(backend: str, sha: str) -> str:
    salt = 7 if backend.endswith("b") else 1
    return "ABC"[(int(sha[:8], 16) // salt) % 3]


def spec_text(keep: int = 2, select: str = "") -> str:
    grid = ", ".join(f'"{c}"' for c in CORRUPTIONS)
    return f"""\
[benchmark]
name = "test/select-hard"
version = "1.0.0"

[source]
loader = "scenes"
images = 6
seed = 0
size = 64

[sample]
per = "image_id"  # one record per image (the loader makes one per object)

[prompt]
template = "Describe this image."

[select]
keep = {keep}
models = ["fake:a", "fake:b"]
prompt = "a picture of"
{select}
[select.probe]
op = "image.imagenet_c"
input = "image"
params.corruption = {{ grid = [{grid}] }}
params.severity = 3
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def compile_with(spec: Path, out: Path, client: FakeCaptioners, cache: Path, memo: bool = True) -> CompileResult:
    return compile_spec(spec, out, CompileOptions(cache_dir=cache, model_client=client, use_memo=memo))


def expected_scores(client: FakeCaptioners) -> dict[str, float]:
    """Per clean image (sha256), the mean over models of the mean cosine of each probe's caption
    to the clean caption, from what each model was asked: per record, its image then its probes."""
    per_model = []
    for backend, shas in sorted(client.asked.items()):
        scores = {}
        for start in range(0, len(shas), 1 + len(CORRUPTIONS)):
            clean, *probes = shas[start:start + 1 + len(CORRUPTIONS)]
            ref = np.array(VECTORS[caption(backend, clean)])
            scores[clean] = float(np.mean([np.array(VECTORS[caption(backend, p)]) @ ref for p in probes]))
        per_model.append(scores)
    return {sha: round(float(np.mean([m[sha] for m in per_model])), 6) for sha in per_model[0]}


def test_the_records_of_lowest_consistency_are_kept_and_every_score_is_in_the_lock(tmp_path: Path) -> None:
    client = FakeCaptioners()
    result = compile_with(write(tmp_path / "spec.toml", spec_text(keep=2)), tmp_path / "m", client, tmp_path / "c")
    lock = result.lock["select"]
    expected = expected_scores(client)
    assert len(expected) == 6 and lock["candidates"] == 6 and lock["probes"] == 6 * len(CORRUPTIONS)
    assert sorted(s["consistency"] for s in lock["scores"]) == sorted(expected.values())
    assert [s["kept"] for s in lock["scores"]] == [True, True, False, False, False, False]  # lowest first
    items = pl.read_parquet(tmp_path / "m" / "items.parquet")
    kept_shas = {json.loads(m)[0]["sha256"] for m in items["media"]}
    lowest = sorted(expected, key=lambda sha: expected[sha])[:2]
    assert kept_shas == set(lowest)
    assert sorted(items["record_id"]) == sorted(s["record"] for s in lock["scores"] if s["kept"])
    assert result.lock["source"]["selected"] == 2
    # the models and the embedder are pinned; the node steps' pins stay as they were
    assert [m["backend"] for m in lock["models"]] == ["fake:a", "fake:b"]
    assert lock["models"][0]["fingerprint"]["fake"] == "fake:a" and lock["embedder"] == {"embedder": "minilm"}
    assert result.lock["model_steps"] == {} and result.lock["ops"]["image.imagenet_c"] == "1.0.0"


def test_a_recompile_reuses_the_probes_and_gives_the_same_manifest(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.toml", spec_text())
    first = compile_with(spec, tmp_path / "m1", FakeCaptioners(), tmp_path / "c")
    again = compile_with(spec, tmp_path / "m2", FakeCaptioners(), tmp_path / "c", memo=False)
    assert again.ops_run == 0 and first.ops_run == 6 * len(CORRUPTIONS)
    assert again.lock == first.lock
    assert (tmp_path / "m1" / "items.parquet").read_bytes() == (tmp_path / "m2" / "items.parquet").read_bytes()
    memo = FakeCaptioners()
    assert compile_with(spec, tmp_path / "m3", memo, tmp_path / "c").memo_hit and memo.generate_calls == 0


def test_keep_and_the_models_enter_the_spec_digest_and_specs_without_select_have_no_select_key(
        tmp_path: Path) -> None:
    digests = {keep: spec_digest(resolve(load_spec(write(tmp_path / f"{keep}.toml", spec_text(keep)))))
               for keep in (2, 3)}
    assert digests[2] != digests[3]
    plain = spec_text().split("[select]")[0]
    resolved = resolve(load_spec(write(tmp_path / "plain.toml", plain)))
    from benchc.compiler.compile import spec_document

    assert "select" not in spec_document(resolved)


def test_keeping_more_than_there_are_keeps_them_all(tmp_path: Path) -> None:
    result = compile_with(write(tmp_path / "spec.toml", spec_text(keep=50)), tmp_path / "m", FakeCaptioners(),
                          tmp_path / "c")
    assert result.lock["select"]["kept"] == 6 and result.lock["item_count"] == 6


@pytest.mark.parametrize(("edit", "fragment"), [
    (('op = "image.imagenet_c"', 'op = "image.imagenet"'), r"select\.probe\.op: unknown op 'image\.imagenet'"),
    (('input = "image"', 'input = "record"'), r"select\.probe\.input: a probe reads a record media, not 'record'"),
    (("params.severity = 3", "params.severity = 7"), r"select\.probe\.params\.severity: .*less than or equal to 5"),
    (("keep = 2", "keep = 0"), r"select\.keep: .*greater than 0"),
    (('models = ["fake:a", "fake:b"]', 'models = ["hff:models/a"]'), r"select\.models\[0\]: unknown backend 'hff'"),
    (('models = ["fake:a", "fake:b"]', 'models = ["espeak"]'),
     r"select\.models\[0\]: backend 'espeak' cannot do generate"),
    (('prompt = "a picture of"', 'prompt = "a picture of"\nembedder = "minilmm"'),
     r"select\.embedder: unknown embedder 'minilmm'\n  hint: did you mean 'minilm'"),
])
def test_bad_select_tables_fail_validation_with_their_key_path(tmp_path: Path, edit: tuple[str, str],
                                                               fragment: str) -> None:
    spec = write(tmp_path / "spec.toml", spec_text().replace(*edit))
    with pytest.raises(SpecError, match=fragment):
        api.validate(spec)


def test_a_probe_of_the_wrong_kind_names_both_kinds(tmp_path: Path) -> None:
    text = spec_text().replace('op = "image.imagenet_c"', 'op = "audio.corrupt"').replace(
        "params.corruption = { grid = [\"gaussian_noise\", \"fog\", \"pixelate\"] }\nparams.severity = 3", "")
    with pytest.raises(SpecError, match=r"select\.probe\.op: op 'audio\.corrupt' takes audio and makes audio; "
                                        r"the generate models read image"):
        api.validate(write(tmp_path / "spec.toml", text))


def test_without_a_model_client_the_error_names_the_first_model(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.toml", spec_text())
    with pytest.raises(SpecError, match=r"select\.models\[0\]: \[select\] model 0 asks a model at compile time"):
        compile_spec(spec, tmp_path / "m", CompileOptions(cache_dir=tmp_path / "c"))


def test_the_selection_does_not_depend_on_the_worker_count(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.toml", spec_text())
    one = compile_spec(spec, tmp_path / "m1", CompileOptions(cache_dir=tmp_path / "c1", model_client=FakeCaptioners()))
    two = compile_spec(spec, tmp_path / "m2", CompileOptions(cache_dir=tmp_path / "c2", model_client=FakeCaptioners(),
                                                             workers=2))
    assert one.lock == two.lock and two.ops_run == one.ops_run


def test_a_node_of_the_graph_never_shares_the_probes_seeds(tmp_path: Path) -> None:
    """A graph node with the probe's op and params (even one named like it) draws its own noise."""
    node = """
[[node]]
id = "select_probe"
op = "image.imagenet_c"
input = "image"
params.corruption = "gaussian_noise"
params.severity = 3
"""
    text = spec_text().replace('\n[select.probe]', node + '\n[select.probe]').replace(
        'params.corruption = { grid = ["gaussian_noise", "fog", "pixelate"] }', 'params.corruption = "gaussian_noise"')
    client = FakeCaptioners()
    compile_with(write(tmp_path / "spec.toml", text), tmp_path / "m", client, tmp_path / "c")
    items = pl.read_parquet(tmp_path / "m" / "items.parquet")
    item_images = {json.loads(m)[0]["sha256"] for m in items["media"]}
    assert len(item_images) == 2 and not item_images & set(client.asked["fake:a"])


def test_a_probe_that_asks_a_model_is_refused(tmp_path: Path) -> None:
    text = spec_text().replace('op = "image.imagenet_c"', 'op = "validate.vlm_check"').replace(
        'params.corruption = { grid = ["gaussian_noise", "fog", "pixelate"] }\nparams.severity = 3',
        'params.backend = "hf:models/vlm"\nparams.question = "Is there a {{ object }}?"')
    with pytest.raises(SpecError, match=r"select\.probe\.op: op 'validate\.vlm_check' asks a model"):
        api.validate(write(tmp_path / "spec.toml", text))
