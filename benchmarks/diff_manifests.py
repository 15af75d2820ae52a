"""Measured, not asserted: the item level of ``benchc diff`` on two 100,000-item manifests.

Builds, in a temporary folder, two synthetic manifests with the real items schema
(``compiler.manifest.ITEM_SCHEMA``: 64-hex digests, JSON attrs/media/targets/lineage, a two-node
lineage per item), B differing from A in about 1% of items, in the ways a new version does:

* source rows: every item of 1 record in 1,000 (its record digest, targets and lineage keys);
* node params: 1 item in 400 (its second node's key, text, prompt and attrs);
* template: 1 item in 500 (its prompt; the template cause also counts the items whose text
  changed, since their prompts changed too);
* removed: 1 item in 400 of A; added: as many new items in B.

Then times, best of ``--repeat``: the item diff alone on the two in-memory frames
(``compiler.diff.items.item_diff``), and the whole ``benchc.api.diff`` of the two manifest
folders (reading both items.parquet files, the spec and lock comparison and the item diff),
against the target of under 2 seconds, and checks the counts it found against the ones built.

Usage: .venv/bin/python benchmarks/diff_manifests.py [--items 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import polars as pl

from benchc import api
from benchc.compiler.diff import signals_of, spec_changes
from benchc.compiler.diff.items import item_diff
from benchc.compiler.canonical import canonical_json, digest
from benchc.compiler.manifest import (ITEM_SCHEMA, LOCK_VERSION, MANIFEST_SCHEMA_VERSION, items_digest, lock_text,
                                      spec_digest_of)

TARGET = 2.0
VARIANTS = 4  # items per record


def _hex(seed: int, *columns: str) -> pl.Expr:
    """A 64-character digest-like string from the hashes of ``columns`` (vectorised)."""
    parts = [pl.concat_str(columns).hash(seed + k).cast(pl.String).str.zfill(20) for k in range(4)]
    return pl.concat_str(parts).str.slice(0, 64)


def _cat(*parts: str | pl.Expr) -> pl.Expr:
    """Strings and expressions concatenated (literal braces, which ``pl.format`` would read)."""
    return pl.concat_str([pl.lit(p) if isinstance(p, str) else p.cast(pl.String) for p in parts])


def _lineage(record_key: pl.Expr, node_key: pl.Expr) -> pl.Expr:
    return _cat('[{"key":"', record_key, '","node":"source_text","op":"text.field","version":"1.0.0"},',
                '{"key":"', node_key, '","node":"question","op":"text.rephrase","version":"1.0.0"}]')


def build_items(n: int) -> pl.DataFrame:
    """Side A: ``n`` items, ``VARIANTS`` per record."""
    base = pl.DataFrame({"i": pl.arange(0, n, eager=True)}).with_columns(
        record=(pl.col("i") // VARIANTS), variant=(pl.col("i") % VARIANTS), src_edit=pl.lit(""),
        node_edit=pl.lit(""), tmpl_edit=pl.lit(""))
    return _rows(base)


def _rows(base: pl.DataFrame) -> pl.DataFrame:
    record_id = _cat("rec-", pl.col("record").cast(pl.String).str.zfill(8))
    record_digest = _hex(1, "rid", "src_edit")
    text = _cat("question ", pl.col("variant"), " of record ", pl.col("record"), pl.col("node_edit"))
    return base.with_columns(rid=record_id).with_columns(
        item_id=_cat(pl.col("rid"), "#question.", pl.col("variant")),
        group_id=pl.col("rid"), record_id=pl.col("rid"), record_digest=record_digest,
        node=pl.lit("question"),
        attrs=_cat('{"index":', pl.col("variant"), pl.col("node_edit").str.replace(" edited", "0"), "}"),
        system=pl.lit(None, pl.String),
        prompt=_cat(pl.col("tmpl_edit"), "Answer briefly: ", text),
        text=text,
        media=_cat('[{"kind":"image","name":"image","sha256":"', _hex(2, "rid"), '"}]'),
        targets=_cat('{"answer":["', pl.when(pl.col("src_edit") == "").then(pl.lit("yes")).otherwise(pl.lit("no")),
                     '"]}'),
        lineage=_lineage(_hex(3, "rid", "src_edit"), _hex(4, "rid", "src_edit", "node_edit", "variant")),
    ).select(list(ITEM_SCHEMA))


def build_changed(n: int) -> tuple[pl.DataFrame, dict[str, int]]:
    """Side B and the counts of each kind of change built into it."""
    i = pl.col("i")
    base = pl.DataFrame({"i": pl.arange(0, n, eager=True)}).with_columns(
        record=i // VARIANTS, variant=i % VARIANTS)
    base = base.with_columns(
        src_edit=pl.when(pl.col("record") % 1000 == 1).then(pl.lit("v2")).otherwise(pl.lit("")),
        node_edit=pl.when(i % 400 == 3).then(pl.lit(" edited")).otherwise(pl.lit("")),
        tmpl_edit=pl.when(i % 500 == 5).then(pl.lit("Q: ")).otherwise(pl.lit("")))
    kept = base.filter(i % 400 != 11)
    removed = base.height - kept.height
    added = pl.DataFrame({"i": pl.arange(n, n + removed, eager=True)}).with_columns(
        record=i // VARIANTS + 10_000_000, variant=i % VARIANTS, src_edit=pl.lit(""), node_edit=pl.lit(""),
        tmpl_edit=pl.lit(""))
    counts = {"source_row": kept.filter(pl.col("src_edit") != "").height,
              "node_params": kept.filter(pl.col("node_edit") != "").height,
              # a changed template changes every prompt: the items whose text changed count too
              "template": kept.filter((pl.col("tmpl_edit") != "") | (pl.col("node_edit") != "")).height,
              "changed": kept.filter((pl.col("src_edit") != "") | (pl.col("node_edit") != "")
                                     | (pl.col("tmpl_edit") != "")).height,
              "removed": removed, "added": removed}
    return _rows(pl.concat([kept, added])), counts


def _spec(grid: list[int], template: str) -> dict:
    return {"benchmark": {"name": "synthetic/diff", "version": "1.0.0", "seed": 0, "description": ""},
            "source": {"loader": "table", "path": "data/rows.jsonl"}, "filter": [],
            "sample": {"n": None, "per": None, "stratify": None},
            "node": [{"id": "source_text", "op": "text.field", "input": "record", "params": {"field": "q"},
                      "repeat": 1},
                     {"id": "question", "op": "text.rephrase", "input": "source_text",
                      "params": {"index": {"grid": grid}}, "repeat": 1}],
            "prompt": {"template": template, "system": None}, "metric": [], "stage": []}


def write_manifest(folder: Path, items: pl.DataFrame, spec: dict) -> Path:
    folder.mkdir(parents=True)
    items.write_parquet(folder / "items.parquet", compression="zstd", statistics=False)
    lock = {"lock_version": LOCK_VERSION, "manifest_schema": MANIFEST_SCHEMA_VERSION, "hash_recipe": 2,
            "benchmark": {key: spec["benchmark"][key] for key in ("name", "version", "seed")},
            "spec_digest": spec_digest_of(spec),
            # a stand-in source block: its digest moves with the records (B edits some)
            "source": {"loader": "table", "loader_version": "1.0.0",
                       "digest": digest(sorted(items["record_digest"].unique().to_list())), "files": [],
                       "records": items["group_id"].n_unique(), "selected": items["group_id"].n_unique(),
                       "skipped_rows": 0},
            "ops": {"text.field": "1.0.0", "text.rephrase": "1.0.0"}, "libraries": {}, "item_count": items.height,
            "manifest_digest": items_digest(items)}
    (folder / "lock.json").write_text(lock_text(lock))
    (folder / "spec.json").write_text(canonical_json(spec) + "\n")
    return folder


def _best(call, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    a = build_items(args.items)
    b, built = build_changed(args.items)
    spec_a = _spec([0, 1, 2, 3], "Answer briefly: {{ text }}")
    spec_b = _spec([0, 1, 2, 4], "Q: Answer briefly: {{ text }}")
    changes = spec_changes(spec_a, spec_b)
    # B edits source rows, so its lock's source digest moved: the folder diff sees that in the locks
    signals = replace(signals_of(changes, [], (spec_a, spec_b)), source=True)
    seconds, items = _best(lambda: item_diff(a, b, signals), args.repeat)
    print(f"items: A {a.height}, B {b.height}; built: {built}")
    print(f"found: added {items.added}, removed {items.removed}, changed {items.changed}, causes {items.causes}")
    print(f"item diff (in-memory frames)       {seconds:6.3f} s   target < {TARGET:.1f} s   "
          f"{'ok' if seconds < TARGET else 'OVER'}")
    with tempfile.TemporaryDirectory(prefix="benchc-diff-bench-") as scratch:
        ma = write_manifest(Path(scratch) / "a", a, spec_a)
        mb = write_manifest(Path(scratch) / "b", b, spec_b)
        whole, result = _best(lambda: api.diff(ma, mb), args.repeat)
    print(f"benchc diff (two manifest folders)  {whole:6.3f} s   target < {TARGET:.1f} s   "
          f"{'ok' if whole < TARGET else 'OVER'}")
    assert result.items.as_json() == items.as_json(), (result.items.as_json(), items.as_json())
    expected = {k: built[k] for k in ("source_row", "node_params", "template")}
    found = {k: items.causes.get(k, 0) for k in expected}
    assert (items.added, items.removed, items.changed) == (built["added"], built["removed"], built["changed"])
    assert found == expected, f"causes differ from what was built: {found} != {expected}"


if __name__ == "__main__":
    main()
