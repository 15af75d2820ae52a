"""Paper tables over several runs and specs, without a model: rows keep their keys when columns
are chosen, a combined table (MM-R3 Table 2: a row per model, a column group per task spec) with
an Average column and an order, declared in a paper file and checked with one clear message per
mistake; and the same end to end with real runs (`benchc reproduce`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchc.cli import main
from benchc.compiler.errors import BenchcError
from benchc.runtime.report.tables import (ColumnPart, LayoutError, Provenance, RunScores, Table, layout_breakdown,
                                          layout_combined, layout_rows, read_csv, sorted_by, to_latex, to_markdown,
                                          with_average)
from benchc.runtime.reproduce.core import Paper, PaperRun, load_paper, regenerate

TASKS = {"rephrasing": "mm-r3/question-rephrasing", "restyling": "mm-r3/image-restyling",
         "context": "mm-r3/context-reasoning"}
# O_all and Con of each (model, task) run; instructblip has no restyling run
RESULTS = {("llava", "rephrasing"): (40.0, 55.0), ("llava", "restyling"): (30.0, 45.0),
           ("llava", "context"): (20.0, 35.0), ("blip2", "rephrasing"): (50.0, 60.0),
           ("blip2", "restyling"): (45.0, 50.0), ("blip2", "context"): (40.0, 42.5),
           ("instructblip", "rephrasing"): (70.0, 80.0), ("instructblip", "context"): (10.0, 12.0)}


def mmr3_scores(spec: str, o_all: float, con: float, notes: list[str] | None = None) -> dict[str, Any]:
    row = {"groups": 10, "responses": 30, "Acc": 50.0, "S_GT": 60.0, "Con": con, "S_C": 70.0, "O_all": o_all}
    return {"benchmark": {"name": spec, "version": "2.0.0"}, "manifest_digest": spec.replace("/", "-") * 2,
            "model": "m", "items": 30,
            "metrics": [{"name": "mmr3.all", "columns": ["groups", "responses", "Acc", "S_GT", "Con", "S_C", "O_all"],
                         "rows": [row], "details": {}, "notes": notes or []}]}


def scored(label: str, scores: dict[str, Any], split: list[str] | None = None) -> RunScores:
    return RunScores(label, scores, [split or [] for _ in scores["metrics"]], Provenance.of(scores, label=label))


# row keys ------------------------------------------------------------------------------------

RELATIONS = {  # merlim.relations' shape: no split, but a text column says which row is which
    "benchmark": {"name": "merlim/relationships-curated", "version": "1.0.0"}, "manifest_digest": "ab" * 32,
    "items": 8, "model": "m",
    "metrics": [{"name": "merlim.relations", "columns": ["question", "n_org", "n_ed", "Acc_org", "Acc_ed", "dAcc"],
                 "rows": [{"question": "affirmative", "n_org": 4, "n_ed": 4, "Acc_org": 75.0, "Acc_ed": 50.0,
                           "dAcc": 25.0},
                          {"question": "negated", "n_org": 4, "n_ed": 4, "Acc_org": 25.0, "Acc_ed": 50.0,
                           "dAcc": 25.0}],
                 "details": {}, "notes": []}]}


def test_chosen_columns_keep_the_row_keys() -> None:
    table = layout_rows([scored("llava", RELATIONS)], "t", "t", "merlim.relations", columns=["Acc_org", "Acc_ed"])
    assert table.columns == ["question", "Acc_org", "Acc_ed"]
    assert table.rows == [["affirmative", 75.0, 50.0], ["negated", 25.0, 50.0]]
    two = layout_rows([scored("llava", RELATIONS), scored("blip2", RELATIONS)], "t", "t", "merlim.relations",
                      columns=["dAcc"])
    assert two.columns == ["run", "question", "dAcc"] and two.rows[2] == ["blip2", "affirmative", 25.0]


def test_a_breakdown_keeps_rows_apart_by_all_their_keys() -> None:
    scores = {**RELATIONS, "metrics": [{**RELATIONS["metrics"][0], "columns": ["color", *RELATIONS["metrics"][0]
                                                                                ["columns"]],
                                        "rows": [{"color": "red", **r} for r in RELATIONS["metrics"][0]["rows"]]}]}
    table = layout_breakdown([scored("llava", scores, ["color"])], "t", "t", "merlim.relations",
                             columns=["Acc_org"])
    assert table.groups == [("red/affirmative", 1), ("red/negated", 1)] and table.rows == [["llava", 75.0, 25.0]]


# combined tables --------------------------------------------------------------------------------

def _parts(columns: list[str]) -> list[ColumnPart]:
    parts = []
    for index, (task, spec) in enumerate(TASKS.items()):
        runs = [scored(model, mmr3_scores(spec, *RESULTS[(model, task)]))
                for model in ("llava", "blip2", "instructblip") if (model, task) in RESULTS]
        parts.append(ColumnPart(task, runs, "mmr3.all", columns=columns, key=f"part[{index}]"))
    return parts


def test_a_combined_table_has_a_row_per_model_and_a_group_per_spec() -> None:
    table = layout_combined(_parts(["Con", "O_all"]), "table2", "MM-R3 Table 2")
    assert table.columns == ["model", "Con", "O_all", "Con", "O_all", "Con", "O_all"]
    assert table.groups == [("rephrasing", 2), ("restyling", 2), ("context", 2)] and table.stub == 1
    assert table.rows[2] == ["instructblip", 80.0, 70.0, None, None, 12.0, 10.0]
    assert "n/a in restyling: no run of instructblip." in table.notes
    assert "| instructblip | 80.00 | 70.00 | n/a | n/a | 12.00 | 10.00 |" in to_markdown(table)
    assert r"& \multicolumn{2}{c}{rephrasing} & \multicolumn{2}{c}{restyling}" in to_latex(table)
    # every run's provenance is in the footer
    assert sum("mm-r3/" in line for line in table.footer) == len(RESULTS)


def test_the_average_is_named_and_n_a_when_a_column_is_missing_and_sorting_puts_n_a_last() -> None:
    table = with_average(layout_combined(_parts(["Con", "O_all"]), "t", "t"), ["O_all"])
    assert table.columns[-1] == "Average" and table.flat_columns()[-1] == "Average"
    assert table.notes[0] == ("Average: the mean of rephrasing/O_all, restyling/O_all, context/O_all "
                              "(n/a where any of them is n/a).")
    assert [r[0] for r in table.rows] == ["llava", "blip2", "instructblip"]
    assert table.rows[0][-1] == pytest.approx(30.0) and table.rows[2][-1] is None
    ordered = sorted_by(table, "Average")
    assert [r[0] for r in ordered.rows] == ["blip2", "llava", "instructblip"]  # 45, 30, then n/a
    assert [r[0] for r in sorted_by(table, "rephrasing/O_all", descending=False).rows] == [
        "llava", "blip2", "instructblip"]
    assert to_markdown(ordered).splitlines()[2].startswith("| model | rephrasing/Con |")
    assert "Average |" in to_markdown(ordered).splitlines()[2]


def test_the_average_of_the_printed_cells_is_mmcbenchs_rule_and_named() -> None:
    table = Table("t", "t", ["model", "a", "b", "c", "d"], [["x", 2023.4, 2130.4, 2007.4, 2115.4]], digits=2)
    assert with_average(table, None).rows[0][-1] == pytest.approx(2069.15)  # the values' mean
    printed = with_average(table, None, of_rounded=True, cell_digits=0)
    assert printed.rows[0] == ["x", 2023.0, 2130.0, 2007.0, 2115.0, 2068.75]  # the paper's Table 4 row
    assert "each cell rounded to 0 decimals first as printed (average_of = 'rounded'" in printed.notes[0]
    noisy = Table("t", "t", ["m", "a"], [["x", 2300.0000000001], ["y", -0.0000001]], digits=2)
    assert noisy.rounded().rows == [["x", 2300.0], ["y", 0.0]] and str(noisy.rounded().rows[1][1]) == "0.0"
    paper = {"paper": {"title": "t"}, "run": [{"id": "r", "path": "r", "spec": "s", "version": "1.0.0"}],
             "table": [{"name": "t", "metric": "m", "average": "of_rounded"}]}
    assert Paper.model_validate(paper).table[0].average_of == "rounded"


def test_column_names_that_do_not_resolve_say_why() -> None:
    table = layout_combined(_parts(["Con", "O_all"]), "t", "t")
    with pytest.raises(LayoutError, match="'O_all' is in 3 column groups") as ambiguous:
        sorted_by(table, "O_all")
    assert ambiguous.value.key == "sort"
    with pytest.raises(LayoutError, match=r"no column 'rephrasing/O_al' \(did you mean 'rephrasing/O_all' or"):
        with_average(table, ["rephrasing/O_al"])
    with pytest.raises(LayoutError, match="two runs are labelled 'llava'"):
        layout_combined([ColumnPart("x", [scored("llava", mmr3_scores("a/b", 1.0, 2.0))] * 2, "mmr3.all")], "t", "t")


def test_a_combined_part_takes_one_row_per_run() -> None:
    split = {**RELATIONS}
    part = ColumnPart("curated", [scored("llava", split)], "merlim.relations", columns=["Acc_ed"], key="part[0]")
    with pytest.raises(LayoutError, match=r"has 2 rows of 'merlim.relations' \(question: affirmative; negated\)") as e:
        layout_combined([part], "t", "t")
    assert e.value.key == "part[0].where"
    chosen = ColumnPart("curated", [scored("llava", split)], "merlim.relations", columns=["Acc_ed"],
                        where={"question": "negated"})
    assert layout_combined([chosen], "t", "t").rows == [["llava", 50.0]]


def test_warnings_of_the_metrics_are_carried_into_paper_tables() -> None:
    warned = mmr3_scores("a/b", 1.0, 2.0, notes=["WARNING: Con: 3 of 3 answer pairs are short.", "plain note"])
    table = layout_combined([ColumnPart("x", [scored("llava", warned)], "mmr3.all", columns=["Con"])], "t", "t")
    assert table.notes == ["llava (x): WARNING: Con: 3 of 3 answer pairs are short."]
    rows = layout_rows([scored("llava", warned)], "t", "t", "mmr3.all", columns=["Con"])
    assert rows.notes == ["WARNING: Con: 3 of 3 answer pairs are short."]


# the declaration in a paper file -------------------------------------------------------------------

PAPER = """[paper]
title = "MM-R3"

{runs}
[[table]]
name = "table2"
title = "MM-R3 Table 2"
layout = "combined"
metric = "mmr3.all"
columns = ["Con", "O_all"]
average = ["O_all"]
sort = "Average"

[[table.part]]
label = "Rephrasing"
spec = "mm-r3/question-rephrasing"

[[table.part]]
label = "Restyling"
spec = "mm-r3/image-restyling"

[[table.part]]
label = "Context"
runs = ["llava-context", "blip2-context", "instructblip-context"]
columns = ["O_all"]
"""


def _runs_toml() -> str:
    return "\n".join(f'[[run]]\nid = "{model}-{task}"\npath = "runs/{model}-{task}"\nspec = "{TASKS[task]}"\n'
                     f'version = "2.0.0"\nlabel = "{model}"\n' for model, task in RESULTS)


@dataclass
class FakeRun:
    """A RunContext stand-in: the paper's run and the scores a rescoring would give."""

    config: PaperRun

    @property
    def label(self) -> str:
        return self.config.label or self.config.id

    def scored(self, by: list[str] | None, metric: str, params: dict[str, Any] | None = None,
               row_labels: dict[str, str] | None = None) -> RunScores:
        task = self.config.id.split("-", 1)[1]
        return scored((row_labels or {}).get(self.label, self.label),
                      mmr3_scores(TASKS[task], *RESULTS[(self.config.label, task)]))


def _paper(tmp_path: Path, text: str) -> Path:
    paper = tmp_path / "paper.toml"
    paper.write_text(text)
    return paper


def test_a_paper_file_declares_a_combined_table(tmp_path: Path) -> None:
    loaded = load_paper(_paper(tmp_path, PAPER.format(runs=_runs_toml())))
    files = regenerate(loaded, [FakeRun(r) for r in loaded.paper.run])  # type: ignore[arg-type]
    assert set(files) == {"table2.md", "table2.tex", "table2.csv"}
    columns, rows = read_csv(files["table2.csv"][2].decode())
    assert columns == ["model", "Rephrasing/Con", "Rephrasing/O_all", "Restyling/Con", "Restyling/O_all",
                       "Context/O_all", "Average"]
    assert [r[0] for r in rows] == ["blip2", "llava", "instructblip"]
    assert rows[0][-1] == str((50.0 + 45.0 + 40.0) / 3) and rows[2][-1] == ""
    markdown = files["table2.md"][2].decode()
    assert "| instructblip | 80.00 | 70.00 | n/a | n/a | 10.00 | n/a |" in markdown
    assert "> Average: the mean of Rephrasing/O_all, Restyling/O_all, Context/O_all" in markdown


@pytest.mark.parametrize("change,fragment", [
    (('label = "Rephrasing"', 'label = "Rephrasing"\ncolums = ["Con"]'),
     "table[0].part[0].colums: unknown key\n  hint: did you mean 'columns'?"),
    (('label = "Restyling"\nspec = "mm-r3/image-restyling"', 'label = "Restyling"\nspec = "mm-r3/image-restylin"'),
     "table[0].part[1].spec: no [[run]] is pinned to spec 'mm-r3/image-restylin'\n"
     "  hint: did you mean 'mm-r3/image-restyling'"),
    (('runs = ["llava-context",', 'runs = ["llava-contxt",'),
     "table[0].part[2].runs[0]: no [[run]] has id 'llava-contxt'\n  hint: did you mean 'llava-context'"),
    (('label = "Restyling"\nspec = "mm-r3/image-restyling"', 'label = "Restyling"'),
     "table[0].part[1]: a part needs `runs` (run ids) or `spec` (every run of that spec), not both"),
    (('average = ["O_all"]', 'average = "O_all"'),
     "table[0].average: average is true (the mean of every value column), a list of column names, or 'of_rounded'"),
    (('layout = "combined"', 'layout = "rows"'), "table[0]: [[table.part]] is read by layout 'combined' only"),
    (('sort = "Average"', 'sort = "Averag"'),
     "table[0].sort: the table has no column 'Averag' (did you mean 'Average'?)"),
    (('sort = "Average"', 'sort = "O_all"'), "table[0].sort: column 'O_all' is in 3 column groups"),
])
def test_a_bad_combined_table_gets_one_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     change: tuple[str, str], fragment: str) -> None:
    text = PAPER.format(runs=_runs_toml())
    assert change[0] in text
    paper = _paper(tmp_path, text.replace(*change))
    try:
        loaded = load_paper(paper)
        regenerate(loaded, [FakeRun(r) for r in loaded.paper.run])  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - the CLI's rendering of the error is what is checked
        from benchc.compiler.errors import BenchcError

        assert isinstance(exc, BenchcError), exc
        rendered = exc.render()
    else:
        pytest.fail("no error")
    assert fragment in rendered, rendered
    assert rendered.count("error:") <= 1 and "Traceback" not in rendered


def test_an_error_in_a_part_points_at_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = PAPER.format(runs=_runs_toml()).replace('label = "Context"', 'label = "Context"\nsepc = "x"')
    paper = _paper(tmp_path, text)
    line = text.splitlines().index('sepc = "x"') + 1
    assert main(["reproduce", str(paper)]) == 2
    err = capsys.readouterr().err
    assert f"paper.toml:{line} table[0].part[2].sepc: unknown key\n  hint: did you mean 'spec'?" in err, err


# end to end: real runs, `benchc reproduce` ---------------------------------------------------------


@pytest.mark.slow
def test_reproduce_records_and_checks_a_combined_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two specs (the mini text-to-speech spec under two names), each spoken at two speeds: a
    row per speed, a column group per spec, an Average, sorted by it; recorded, then reproduced."""
    from benchc import api
    from specfiles import MINI_SPEC, TABLE, write_mini

    runs = []
    for spec_name in ("test/mini", "test/mini-b"):
        folder = tmp_path / spec_name.replace("/", "_")
        text = MINI_SPEC.format(table=TABLE, n=1).replace('name = "test/mini"', f'name = "{spec_name}"')
        manifest = api.compile(write_mini(folder, text=text), folder / "m", cache_dir=tmp_path / "c").manifest_dir
        for label, model in (("175 wpm", "espeak"), ("120 wpm", "espeak:speed=120")):
            run = folder / "runs" / label.split()[0]
            api.run(manifest, run, model=model, cache_dir=tmp_path / "c", store_dir=tmp_path / "s", progress=False)
            runs.append((spec_name, label, run))
    papers = tmp_path / "paper"
    papers.mkdir()
    text = '[paper]\ntitle = "mini"\n\n' + "".join(
        f'[[run]]\nid = "r{i}"\npath = "{os.path.relpath(run, papers)}"\nspec = "{spec}"\nversion = "1.0.0"\n'
        f'label = "{label}"\n\n' for i, (spec, label, run) in enumerate(runs))
    text += ('[[table]]\nname = "both"\nlayout = "combined"\nmetric = "mmcbench.consistency"\ncolumns = ["score"]\n'
             'average = true\nsort = "Average"\ndescending = false\n\n'
             '[[table.part]]\nlabel = "A"\nspec = "test/mini"\n\n[[table.part]]\nlabel = "B"\nspec = "test/mini-b"\n')
    paper = papers / "paper.toml"
    paper.write_text(text)
    assert main(["reproduce", str(paper), "--record"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["reproduce", str(paper)]) == 0
    assert "all 3 file(s) match" in capsys.readouterr().out
    columns, rows = read_csv((papers / "artifacts" / "both.csv").read_text())
    assert columns == ["model", "A/score", "B/score", "Average"] and {r[0] for r in rows} == {"175 wpm", "120 wpm"}
    averages = [float(r[3]) for r in rows]
    assert averages == sorted(averages)  # ascending, as asked
    for row in rows:
        assert float(row[3]) == pytest.approx((float(row[1]) + float(row[2])) / 2)


def test_row_labels_rename_rows_with_a_note_and_rows_by_splits_a_combined_table(tmp_path: Path) -> None:
    text = PAPER.format(runs=_runs_toml()).replace(
        'sort = "Average"', 'sort = "Average"\nrow_labels = { blip2 = "BLIP-2 (stand-in)" }')
    loaded = load_paper(_paper(tmp_path, text))
    files = regenerate(loaded, [FakeRun(r) for r in loaded.paper.run])  # type: ignore[arg-type]
    _, rows = read_csv(files["table2.csv"][2].decode())
    assert [r[0] for r in rows] == ["BLIP-2 (stand-in)", "llava", "instructblip"]
    assert "> 'BLIP-2 (stand-in)': the rows of run 'blip2'." in files["table2.md"][2].decode()
    by_temperature = {"benchmark": {"name": "a/b", "version": "1"}, "manifest_digest": "d" * 64, "model": "m",
                      "items": 2, "metrics": [{"name": "mmr3.all", "columns": ["temperature", "Acc"], "details": {},
                                               "notes": [], "rows": [{"temperature": 0.2, "Acc": 10.0},
                                                                     {"temperature": 1.0, "Acc": 20.0}]}]}
    part = ColumnPart("QR", [scored("llava", by_temperature, ["temperature"])], "mmr3.all", columns=["Acc"])
    table = layout_combined([part], "t", "t", rows_by=["temperature"])
    assert table.columns == ["model", "temperature", "Acc"] and table.stub == 2
    assert table.rows == [["llava", 0.2, 10.0], ["llava", 1.0, 20.0]]
    with pytest.raises(LayoutError, match="not split by size"):
        layout_combined([part], "t", "t", rows_by=["size"])


def test_bad_params_and_row_labels_are_named_with_their_key(tmp_path: Path) -> None:
    text = PAPER.format(runs=_runs_toml()).replace(
        'sort = "Average"', 'sort = "Average"\nparams = { subsett = "failures" }\nrow_labels = { lava = "x" }')
    with pytest.raises(BenchcError) as caught:
        load_paper(_paper(tmp_path, text))
    message = caught.value.render()
    assert "table[0].params.subsett: metric 'mmr3.all' has no parameter 'subsett'" in message
    assert "did you mean 'subset'?" in message
    assert "table[0].row_labels.lava: no [[run]] is labelled 'lava'" in message and "did you mean 'llava'?" in message
