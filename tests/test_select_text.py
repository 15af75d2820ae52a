"""``[select]`` kind = "text": MMCBench's hard selection of text items by the text itself
(compiler/select_text.py). The three text measures on hand-checkable sentences, the min-max
normalisation, the selection and its lock with a fake embedder, determinism (hash seed, row
order), one clear error per bad input, and that specs of the model kind keep their digests.
The bundled spec compiled with the real embedder is test_select_text_e2e."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from benchc import api
from benchc.compiler.compile import CompileOptions, CompileResult, compile_spec, spec_digest, spec_document
from benchc.compiler.errors import SpecError
from benchc.compiler.nlp import readability_grade, spacy_pipeline
from benchc.compiler.resolve import resolve
from benchc.compiler.spec.parse import load_spec
from benchc.compiler.text_difficulty import description_words, difficulty, min_max, parse_depth
from conftest import ROOT, SPECS, other_hash_seed

TABLE = SPECS / "mmcbench" / "data" / "text2speech_heavy_corrupted_random_1k.csv"
CORRUPTIONS = ["swap_char_randomly", "leet_letters", "random_deletion"]


class FakeEmbedder:
    """A text's vector is a unit vector drawn from its sha256: the same text, the same vector."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embedder_fingerprint(self, name: str) -> dict[str, Any]:
        return {"embedder": name}

    def embed(self, name: str, texts: Sequence[str]) -> np.ndarray:
        self.embedded += list(texts)
        return np.array([vector(t) for t in texts])


def vector(text: str) -> np.ndarray:
    raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:8], dtype=np.uint8).astype(np.float64) + 1
    return raw / np.linalg.norm(raw)


# --- the measures ----------------------------------------------------------------------------

def test_the_three_measures_of_a_hand_checkable_sentence() -> None:
    doc = spacy_pipeline(("ner",))("The cat sat on the mat.")
    # sat (root, 1) <- on (2) <- mat (3) <- the (4); cat and '.' hang from sat
    assert parse_depth(doc) == 4
    assert description_words(doc) == 3  # cat, sat, mat
    # Flesch-Kincaid: 0.39 * 6 words / 1 sentence + 11.8 * 6 syllables / 6 words - 15.59
    assert readability_grade("The cat sat on the mat.") == pytest.approx(0.39 * 6 + 11.8 - 15.59)


def test_a_longer_sentence_is_deeper_more_descriptive_and_of_a_higher_grade() -> None:
    simple, hard = "Dogs run.", "A small black dog runs quickly across the green field near the old house."
    measures = difficulty([hard, simple, hard])
    assert set(measures) == {simple, hard}
    assert measures[hard].parse_depth > measures[simple].parse_depth
    assert measures[hard].description_words > measures[simple].description_words
    assert measures[hard].readability_grade > measures[simple].readability_grade
    assert difficulty([""])[""].parse_depth == 0


def test_min_max_puts_a_measure_on_zero_to_one_and_a_constant_one_at_zero() -> None:
    assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert min_max([5.0, 5.0, 5.0]) == [0.0, 0.0, 0.0]  # tells nothing apart: adds nothing to a total
    assert min_max([1.0, 2.0, 4.0]) == [0.0, 0.333333, 1.0]  # rounded to 6 decimals
    assert min_max([]) == []


# --- the selection ---------------------------------------------------------------------------

def write_table(folder: Path, rows: int, seed: int | None = None) -> Path:
    """The first ``rows`` rows of the bundled random table, in a shuffled order with ``seed``."""
    with TABLE.open(newline="", encoding="utf-8") as handle:
        header, *body = list(csv.reader(handle))
    body = body[:rows]
    if seed is not None:
        random.Random(seed).shuffle(body)
    path = folder / "table.csv"
    folder.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *body])
    return path


def spec_text(keep: int = 3, extra: str = "") -> str:
    grid = ", ".join(f'"{c}"' for c in CORRUPTIONS)
    return f"""\
[benchmark]
name = "test/select-text"
version = "1.0.0"

[source]
loader = "mmcbench.text_table"
id_column = "path"
text_column = "transcription"

[[source.tables]]
path = "table.csv"
severity = "heavy"
selection = "random"

[prompt]
template = "{{{{ text }}}}"

[[node]]
id = "clean"
op = "mmcbench.released_text"
input = "record"

[select]
kind = "text"
keep = {keep}
{extra}
[select.probe]
op = "text.corrupt"
params.severity = "heavy"
params.corruption = {{ grid = [{grid}] }}
"""


def compile_in(folder: Path, text: str, rows: int = 8, shuffle: int | None = None,
               client: FakeEmbedder | None = None) -> CompileResult:
    write_table(folder, rows, shuffle)
    spec = folder / "spec.toml"
    spec.write_text(text)
    return compile_spec(spec, folder / "m", CompileOptions(cache_dir=folder / "cache",
                                                          model_client=client or FakeEmbedder()))


def test_the_highest_totals_are_kept_and_every_measure_is_in_the_lock(tmp_path: Path) -> None:
    client = FakeEmbedder()
    result = compile_in(tmp_path, spec_text(keep=3), client=client)
    lock = result.lock["select"]
    assert (lock["kind"], lock["candidates"], lock["probes"], lock["kept"]) == ("text", 8, 8 * 3, 3)
    assert lock["weights"] == {"inconsistency": 6.0, "readability": 1.0, "syntax": 1.0, "description": 1.0}
    assert lock["embedder"] == {"embedder": "minilm"} and lock["readability"] == "flesch_kincaid_grade"
    assert {"textstat", "spacy", "spacy_pipeline", "pyphen", "pocketsphinx"} <= set(lock["libraries"])
    scores = lock["scores"]
    assert [s["kept"] for s in scores] == [True] * 3 + [False] * 5  # highest total first
    assert "shortlisted" not in scores[0] and lock["first_keep"] is None
    for name, raw in (("readability", "readability_grade"), ("syntax", "parse_depth"),
                      ("description", "description_words")):
        values = [s[raw] for s in scores]
        assert [s[name] for s in scores] == min_max([float(v) for v in values])
    for s in scores:
        assert s["total"] == round(6 * s["inconsistency"] + s["readability"] + s["syntax"] + s["description"], 6)
    items = pl.read_parquet(tmp_path / "m" / "items.parquet")
    kept = {s["record"] for s in scores if s["kept"]}
    assert set(items["record_id"]) == kept and result.lock["source"]["selected"] == 3
    assert len(set(client.embedded)) == len(client.embedded)  # each distinct text embedded once
    assert result.lock["ops"]["text.corrupt"] and result.lock["ops"]["text.field"]


def test_inconsistency_is_one_minus_the_mean_cosine_to_the_probes(tmp_path: Path) -> None:
    from benchc.compiler.model_steps import ModelSteps
    from benchc.compiler.select_text import _scores

    select = resolve(load_spec(_write(tmp_path / "spec.toml", spec_text()))).select
    clean = {"a": "The cat sat on the mat.", "b": "Dogs run."}
    probes = {"a": ["The cat sat.", "Th3 c4t s4t on the m4t."], "b": ["Dogs walk."]}
    models = ModelSteps(FakeEmbedder(), [], lambda *a: None)  # type: ignore[arg-type]
    scores = {s.record: s for s in _scores(select, ["a", "b"], clean, probes, models)}  # type: ignore[arg-type]
    for rid in clean:
        expected = 1 - np.mean([vector(p) @ vector(clean[rid]) for p in probes[rid]])
        assert scores[rid].inconsistency == pytest.approx(expected, abs=1e-6)
    assert (scores["a"].raw.parse_depth, scores["a"].raw.description_words) == (4, 3)
    assert (scores["a"].syntax, scores["b"].syntax) == (1.0, 0.0)  # min-max over the two


def test_first_keep_shortlists_the_highest_and_keeps_by_a_seeded_hash(tmp_path: Path) -> None:
    result = compile_in(tmp_path, spec_text(keep=2, extra="first_keep = 5"))
    lock = result.lock["select"]
    assert lock["first_keep"] == 5 and lock["kept"] == 2
    assert [s["shortlisted"] for s in lock["scores"]] == [True] * 5 + [False] * 3
    assert all(s["shortlisted"] for s in lock["scores"] if s["kept"])


def test_weights_change_the_ranking_and_enter_the_digest(tmp_path: Path) -> None:
    only_syntax = 'weights = { inconsistency = 0, readability = 0, syntax = 1, description = 0 }'
    lock = compile_in(tmp_path / "a", spec_text(extra=only_syntax)).lock["select"]
    depths = [s["parse_depth"] for s in lock["scores"]]
    assert depths == sorted(depths, reverse=True)
    digests = {text: spec_digest(resolve(load_spec(_write(tmp_path / f"{i}.toml", text))))
               for i, text in enumerate([spec_text(), spec_text(extra=only_syntax)])}
    assert len(set(digests.values())) == 2


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_table(path.parent, 8)
    path.write_text(text)
    return path


def test_the_selection_does_not_depend_on_row_order(tmp_path: Path) -> None:
    first = compile_in(tmp_path / "a", spec_text(), shuffle=None).lock["select"]
    shuffled = compile_in(tmp_path / "b", spec_text(), shuffle=7).lock["select"]
    assert shuffled == first


SUBPROCESS = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_select_text import compile_in, spec_text
lock = compile_in(Path(sys.argv[1]), spec_text(extra="first_keep = 5")).lock["select"]
print(json.dumps(lock["scores"]))
"""


@pytest.mark.slow
def test_the_selection_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """This process against another with another hash seed (one process start, not two: the
    text libraries are loaded here already)."""
    code = SUBPROCESS.format(tests=str(ROOT / "tests"))
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "other")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": other_hash_seed()}, check=True)
    other = json.loads(done.stdout.strip().splitlines()[-1])
    here = compile_in(tmp_path / "here", spec_text(extra="first_keep = 5")).lock["select"]["scores"]
    assert other == here and any(s["kept"] for s in here)


# --- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize(("edit", "fragment"), [
    (('kind = "text"', 'kind = "txt"'), r"select\.kind: unknown \[select\] kind 'txt'\n  hint: did you mean 'text'"),
    (("keep = 3", "keep = 3\nweights = { syntax = -1 }"),
     r"select\.weights\.syntax: .*greater than or equal to 0"),
    (("keep = 3", "keep = 3\nfirst_keep = 2"), r"select\.first_keep: first_keep \(2\) is below keep \(3\)"),
    (("keep = 3", "keep = 3\nmodels = [\"fake:a\"]"), r"select\.models: unknown key"),
    (('op = "text.corrupt"', 'op = "image.imagenet_c"'),
     r"select\.probe\.op: op 'image\.imagenet_c' takes image and makes image; a text selection's probe"),
    (("keep = 3", "keep = 3\nembedder = \"minilmm\""),
     r"select\.embedder: unknown embedder 'minilmm'\n  hint: did you mean 'minilm'"),
])
def test_bad_text_select_tables_fail_with_one_clear_message(tmp_path: Path, edit: tuple[str, str],
                                                            fragment: str) -> None:
    spec = _write(tmp_path / "spec.toml", spec_text().replace(*edit))
    with pytest.raises(SpecError, match=fragment) as raised:
        api.validate(spec)
    assert len(raised.value.problems) == 1


def test_keeping_more_than_there_are_candidates_is_an_error(tmp_path: Path) -> None:
    client = FakeEmbedder()
    with pytest.raises(SpecError, match=r"select\.keep: \[select\] keep = 9, but there are only 8 candidate"):
        compile_in(tmp_path, spec_text(keep=9), client=client)
    assert client.embedded == []  # refused before any work


def test_the_model_kind_written_out_keeps_the_digest(tmp_path: Path) -> None:
    from test_select_hard import spec_text as model_spec_text

    hard = model_spec_text()
    plain = _write(tmp_path / "a" / "spec.toml", hard)
    explicit = _write(tmp_path / "b" / "spec.toml", hard.replace("[select]\n", '[select]\nkind = "model"\n', 1))
    assert spec_digest(resolve(load_spec(plain))) == spec_digest(resolve(load_spec(explicit)))
    assert "kind" not in spec_document(resolve(load_spec(explicit)))["select"]
