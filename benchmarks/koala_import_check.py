"""Koala's released per-item outcomes, imported with `benchc import`, scored with `benchc score`,
and compared cell by cell with Koala's released aggregate table.

Koala (SegSub@542ce63) released ``figures/data/context_scores.csv``: 7,275 rows, one per
(model, single-image counterfactual val item) for three models (qwen2_finetuned_v2,
phi3_finetuned_v1, gpt-4o-mini), with six binary outcomes ``img_{old,new}_label_{old,new,ret}``
(did the answer on the original / perturbed image hold the old label, the new label, a refusal)
and no item id, question or response. ``figures/data/named.csv`` holds the aggregates
(``Qwen2-VL-ft``, ``Phi3-ft``, ``GPT-4o-mini`` rows of type counterfactual).

1. The bundled spec (specs/koala/counterfactual.toml, on Koala's reviewer-labelled items) is
   compiled as is and its items counted against the outcome rows: the outcome file has no
   column that names an item, so none of its rows can be tied to a bundled item, and the item
   sets differ in size; the script says so.
2. So the check runs the same spec (its prompt, its koala.accuracy metric) with
   ``--set source.annotations=`` a stand-in file in Koala's item format: for each row position k
   of a dataset, a counterfactual item (the perturbed image; expected answer Koala's refusal) and
   its original item (same dataset and id; expected answer a stand-in label, "yes"), which the
   spec's ``originals = true`` pairs with it. For each model, an answers file keyed by item id
   gives every item an answer that has exactly the row's outcomes (on either image: the label for
   ``label_old``, the refusal for ``label_ret``, both or neither). Which item a row lands on is
   arbitrary (the file has no ids); no mean depends on it. The answers are imported
   (``benchc import``) and scored (``benchc score``); koala.accuracy's counterfactual row gives
   four of the six cells per model and dataset: ``img_{old,new}_label_{old,ret}``. The two
   ``label_new`` cells (the refusal text as a substring: they follow from answers' exact wording,
   which the file does not hold) are printed as the file's plain means, marked ``file``.
3. Each cell is compared with named.csv. A dataset's named.csv cells are counts over a
   denominator found from them (the smallest N >= the file's rows at which every non-zero cell of
   the dataset is a whole count): OK-VQA's is the file's 474; VQA's is 1,830 against the file's
   1,829 rows (a cell is "consistent" when named = k/1830 with k the file's count or one more: the
   missing item's outcome); WebQA's is 257 against 122 rows (not comparable, said so).

Usage: .venv/bin/python benchmarks/koala_import_check.py [--data /work/shared/data/koala] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import tempfile
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "koala" / "counterfactual.toml"
DATA = Path("/work/shared/data/koala")
MODELS = {"qwen2_finetuned_v2": "Qwen2-VL-ft", "phi3_finetuned_v1": "Phi3-ft", "gpt-4o-mini": "GPT-4o-mini"}
DATASETS = ("vqa", "okvqa", "webqa")
COLUMNS = ("img_old_label_old", "img_new_label_old", "img_old_label_new", "img_new_label_new",
           "img_old_label_ret", "img_new_label_ret")
THROUGH_BENCHC = ("img_old_label_old", "img_new_label_old", "img_old_label_ret", "img_new_label_ret")
"""named.csv columns that koala.accuracy's counterfactual row scores (the same names)."""
SYSTEM = "Answer the question Q. If you need help answer <RET> to get the context."
REFUSAL = "<RET> Sorry, I cannot determine the answer as there is not enough information. <RET>"
LABEL, OTHER = "yes", "no"
"""The stand-in original label (a yes/no word: WebQA counterfactual labels are scored on the yes/no
domain) and a wrong answer: neither holds the other nor an acknowledgment phrase."""

Outcome = dict[str, int]


# the released files ---------------------------------------------------------------------------

def read_outcomes(path: Path) -> dict[tuple[str, str], list[Outcome]]:
    """(model, dataset) -> the rows' six outcomes, in file order (all rows are counterfactual)."""
    out: dict[tuple[str, str], list[Outcome]] = {}
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            assert row["type"] == "counterfactual", row
            out.setdefault((row["model"], row["dataset"]), []).append({c: int(float(row[c])) for c in COLUMNS})
    return out


def read_named(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(named.csv model, dataset) -> the counterfactual row's six values."""
    with path.open(newline="") as fh:
        return {(row["model_path"], row["dataset"]): {c: float(row[c.replace("_label", ",label")]) for c in COLUMNS}
                for row in csv.DictReader(fh) if row["type"] == "counterfactual"}


def denominator(values: list[float], rows: int) -> int | None:
    """The smallest N >= rows at which every non-zero value is a whole count k/N."""
    nonzero = [v for v in values if v]
    for n in range(rows, 3 * rows + 1):
        if all(abs(v * n - round(v * n)) < 1e-6 for v in nonzero):
            return n
    return None


# benchc ---------------------------------------------------------------------------------------

def benchc(*args: str | Path) -> str:
    """``benchc ARGS`` through the CLI's entry (in this process: a fresh one per call would cost
    seconds of imports each); its standard output, or the run stops with its error."""
    from benchc.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    if code != 0:
        raise SystemExit(f"benchc {' '.join(map(str, args))} failed:\n{out.getvalue()}{err.getvalue()}")
    return out.getvalue().strip()


def bundled_counts(work: Path, common: list[str | Path]) -> Counter[str]:
    """Items per dataset of the bundled spec compiled as it is."""
    import polars as pl

    benchc("compile", SPEC, "-o", work / "bundled", *common)
    return Counter(i.split("/", 1)[0] for i in pl.read_parquet(work / "bundled" / "items.parquet")["item_id"]
                   if i.split("/")[1] == "counterfactual")


def standin_item(dataset: str, kind: str, k: int) -> dict[str, Any]:
    """A Koala item (the format of segsub_data_labelled_reviewer*.json) for row position k."""
    answer = REFUSAL if kind == "counterfactual" else LABEL
    question = f"Q: What colour is the object? (stand-in for row {k} of context_scores.csv, {dataset})"
    return {"system_prompt": SYSTEM, "image": [f"{dataset}/{kind}/standin_{k:05d}.jpeg"],
            "conversations": [{"from": "human", "value": f"<image>\n{question}"}, {"from": "gpt", "value": answer}],
            "type": kind, "dataset": dataset, "id": f"cs-{dataset}-{k:05d}", "label": True}


def compile_standin(work: Path, rows: dict[str, int], common: list[str | Path]) -> Path:
    items = [standin_item(d, kind, k) for d in DATASETS for k in range(rows[d])
             for kind in ("counterfactual", "original")]
    (work / "standin.json").write_text(json.dumps(items))
    manifest = work / "standin"
    said = benchc("compile", SPEC, "-o", manifest, "--data-root", work, "--set", "source.annotations=standin.json",
                  *common)
    print(f"stand-in items, compiled with the bundled spec: {said.splitlines()[-1].split(' -> ')[0]}")
    return manifest


def answer(kind: str, outcome: Outcome) -> str:
    """An answer with exactly the row's outcomes on that item."""
    img = "img_new" if kind == "counterfactual" else "img_old"
    right, refused = outcome[f"{img}_label_old"], outcome[f"{img}_label_ret"]
    return {(1, 1): f"{LABEL}. {REFUSAL}", (1, 0): LABEL, (0, 1): REFUSAL, (0, 0): OTHER}[(right, refused)]


def answers_file(path: Path, manifest: Path, outcomes: dict[str, list[Outcome]]) -> int:
    import polars as pl

    lines = []
    for item_id in pl.read_parquet(manifest / "items.parquet")["item_id"]:
        dataset, kind, koala_id, _ = item_id.split("/")
        k = int(koala_id.rsplit("-", 1)[1])
        lines.append(json.dumps({"item_id": item_id, "response": answer(kind, outcomes[dataset][k])}))
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def scored_counts(scores: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
    """(dataset, named column) -> (count, answers) from the koala.accuracy rows."""
    metric = next(m for m in scores["metrics"] if m["name"] == "koala.accuracy")
    rows = {(r["dataset"], r["type"]): r for r in metric["rows"]}
    out = {}
    for column in THROUGH_BENCHC:
        for dataset in DATASETS:
            row = rows[(dataset, "counterfactual")]
            n = row["paired"] if column.startswith("img_old") else row["answers"]
            out[(dataset, column)] = (round(row[column] * n / 100), n)
    return out


# the comparison -------------------------------------------------------------------------------

def verdict(count: int, rows: int, named: float, n: int | None) -> str:
    if n is None:
        return "DIFFERS (named.csv's value is no count over any N near the file's rows)"
    k = round(named * n)
    if n == rows:
        return "exact" if k == count and Fraction(count, rows) == Fraction(named).limit_denominator(10 * n) else \
            f"DIFFERS: file {count}/{rows}, named {k}/{n}"
    if n == rows + 1 and k in (count, count + 1):
        return f"consistent: named {k}/{n}; the file lacks 1 item (its outcome: {k - count})"
    if n == rows + 1:
        return f"DIFFERS: named {k}/{n} is not the file's {count} plus one missing item"
    return f"not comparable: named {k}/{n}, the file has {rows} of those {n} items"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="koala-check-") as scratch:
        work = args.out or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        run_check(args.data, work)


def run_check(data: Path, work: Path) -> dict[str, int]:
    common: list[str | Path] = ["--cache", work / "cache", "--store", work / "store"]
    outcomes, named = read_outcomes(data / "context_scores.csv"), read_named(data / "named.csv")
    rows = {d: len(outcomes[(next(iter(MODELS)), d)]) for d in DATASETS}
    assert all(len(outcomes[(m, d)]) == rows[d] for m in MODELS for d in DATASETS)
    bundled = bundled_counts(work, common)
    print(f"bundled spec {SPEC.relative_to(ROOT)}: {sum(bundled.values())} counterfactual items "
          f"({', '.join(f'{d} {bundled[d]}' for d in DATASETS)}), Koala's reviewer-labelled items, each with its "
          f"original item")
    print(f"context_scores.csv: {', '.join(f'{d} {rows[d]}' for d in DATASETS)} rows per model (the single-image "
          f"counterfactual val items); its columns are model, dataset, type, two context scores and six outcomes: "
          f"no item id, question or answer, so no row can be tied to a bundled item, and the item sets differ "
          f"(the bundled file holds the 300 counterfactual items drawn for human review, 100 per dataset). "
          f"Checking on stand-in items instead (see the module docstring).")
    manifest = compile_standin(work, rows, common)
    denominators = {d: denominator([v for m in MODELS.values() for v in named[(m, d)].values()], rows[d])
                    for d in DATASETS}
    print("named.csv denominators: " + ", ".join(f"{d} {denominators[d]} (file {rows[d]})" for d in DATASETS))
    tally: Counter[str] = Counter()
    by_cell: dict[tuple[str, str], Counter[str]] = {}
    print(f"\n{'model':12} {'dataset':7} {'column':18} {'via':6} {'named.csv':>10} {'ours':>10}  verdict")
    for model, label in MODELS.items():
        per_dataset = {d: outcomes[(model, d)] for d in DATASETS}
        path = work / f"answers_{model}.jsonl"
        answered = answers_file(path, manifest, per_dataset)
        run = work / f"run_{model}"
        benchc("import", manifest, path, "-o", run, "--model", label)
        benchc("score", run, *common)
        scored = scored_counts(json.loads((run / "scores.json").read_text()))
        for dataset in DATASETS:
            for column in COLUMNS:
                direct = sum(o[column] for o in per_dataset[dataset])
                via = "benchc" if column in THROUGH_BENCHC else "file"
                count, n = scored[(dataset, column)] if via == "benchc" else (direct, rows[dataset])
                assert count == direct and n == rows[dataset], (model, dataset, column, count, direct)
                value = named[(label, dataset)][column]
                said = verdict(count, n, value, denominators[dataset])
                kind = said.split(":")[0].split(" (")[0]
                tally[kind] += 1
                by_cell.setdefault((label, dataset), Counter())[kind] += 1
                print(f"{label:12} {dataset:7} {column:18} {via:6} {value:10.6f} {count / n:10.6f}  {said}")
        print(f"  ({answered} answers imported for {label}; benchc's counts equal the file's in every benchc cell)")
    print("\nper model and dataset (6 cells each):")
    for (label, dataset), kinds in by_cell.items():
        print(f"  {label:12} {dataset:6} " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print(", ".join(f"{k}: {v}" for k, v in sorted(tally.items())) + f" (of {sum(tally.values())} cells)")
    return dict(tally)


if __name__ == "__main__":
    main()
