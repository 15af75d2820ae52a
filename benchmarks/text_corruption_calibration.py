"""Measured, not asserted: how much ``text.corrupt`` changes text, against MMCBench's release.

For each of the 20 model-free corruptions and each severity, prints the mean character change
rate (``1 - difflib ratio``, see ``compiler/ops/text_corrupt.py:change_rate``) of
  * the released column of ``text2speech_{light,heavy}_corrupted_hard_1k_first50.csv`` (in
    specs/mmcbench/data/) against its clean ``transcription`` column, and
  * our op applied to the same clean sentences, one derived seed per row (as a compile would),
together with the strength each severity uses. Calibrating a corruption means changing its
strength in ``RECIPES`` until the two rates are close (and bumping the op's version).

Usage: .venv/bin/python benchmarks/text_corruption_calibration.py [--rows 50] [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import tempfile
import warnings
from pathlib import Path

from benchc.compiler.cas import ContentStore

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "specs" / "mmcbench" / "data"
TABLE = DATA / "text2speech_{severity}_corrupted_hard_1k_first50.csv"
SEVERITIES = ("light", "heavy")


def released_rows(severity: str, limit: int) -> list[dict[str, str]]:
    with open(str(TABLE).format(severity=severity), newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))[:limit]


def released_rate(rows: list[dict[str, str]], corruption: str) -> float:
    from benchc.compiler.ops.text_corrupt import change_rate

    return statistics.mean(change_rate(r["transcription"], r[corruption]) for r in rows)


def our_rate(rows: list[dict[str, str]], corruption: str, severity: str, seed: int,
             store: ContentStore) -> float:
    """Our op on each row's clean text, seeded per (row, corruption, severity)."""
    from benchc.compiler.ops import OPS, OpContext
    from benchc.compiler.ops.text_corrupt import change_rate
    from benchc.compiler.seeds import derive_seed, rng_for
    from benchc.compiler.values import Record, Value

    op = OPS.get("text.corrupt")
    params = op.Params(corruption=corruption, severity=severity)
    rates = []
    for row in rows:
        record = Record(id=row["path"], fields={})
        ctx = OpContext(record, rng_for(derive_seed(seed, row["path"], f"{corruption}/{severity}")),
                        store)
        out = op.apply(Value("text", text=row["transcription"]), params, ctx)
        rates.append(change_rate(row["transcription"], out.value.text or ""))
    return statistics.mean(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50, help="first N rows of each table")
    parser.add_argument("--seed", type=int, default=0, help="spec seed the row seeds derive from")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from benchc.compiler.ops.text_corrupt import RECIPES

    rows = {s: released_rows(s, args.rows) for s in SEVERITIES}
    store = ContentStore(Path(tempfile.mkdtemp(prefix="benchc-calibration-")))
    print(f"mean char change rate on {args.rows} rows of text2speech_*_hard_1k_first50.csv")
    print(f"{'corruption':42s} {'light: released':>15s} {'ours':>6s} {'str.':>5s}   "
          f"{'heavy: released':>15s} {'ours':>6s} {'str.':>5s}   source")
    for name, recipe in RECIPES.items():
        cells = []
        for severity in SEVERITIES:
            released = released_rate(rows[severity], name)
            ours = our_rate(rows[severity], name, severity, args.seed, store)
            cells.append(f"{released:15.3f} {ours:6.3f} {recipe.strength(severity):5.3g}")
        print(f"{name:42s} {cells[0]}   {cells[1]}   {recipe.source}")


if __name__ == "__main__":
    main()
