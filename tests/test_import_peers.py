"""`benchc import` reads the real logs of lm-eval 0.4.13, lmms-eval 0.7.3 and inspect-ai 0.3.285
(tests/fixtures/peers, whose README documents every field) as those tools wrote them, and
`benchc score`, with the tool's own matching rule written as a spec's `correct`, gives the score
the tool printed: lm-eval's capitals_qa exact_match (0.0 chat, 0.4 completions, 0.0 dummy),
lmms-eval's color_squares exact_match (0.2 rule server, 0.0 Gemma), inspect's `includes()`
(0.7) through benchc's `substring` and `match()` (0.0). Nothing here runs a harness or a model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from support.hashed_answers import run_cli

PEERS = ROOT / "tests" / "fixtures" / "peers"
DATA = PEERS / "tasks" / "data" / "capitals_qa.jsonl"
COLORS = PEERS / "tasks" / "lmms_eval" / "color_squares"
LM_EVAL = {p.parts[-3]: p for p in sorted(PEERS.glob("lm_eval/*/*/samples_capitals_qa_*.jsonl"))}
LMMS = {p.parts[-3]: p for p in sorted(PEERS.glob("lmms_eval/*/*/*_samples_color_squares.jsonl"))}
INSPECT = sorted(PEERS.glob("inspect_ai/*/*.*"))
LM_EVAL_RULE = ("{ rule = \"lm_eval_exact\", ignore_case = true, ignore_punctuation = true, "
                "regexes_to_ignore = ['(?i)^\\s*the\\s+', '^\\s+|\\s+$'] }")  # capitals_qa.yaml's exact_match

CAPITALS = f'''
[benchmark]
name = "peers/capitals_qa"
version = "1.0.0"
seed = 0

[source]
loader = "table"
path = "{DATA}"
id = "id"

[[node]]
id = "question"
op = "text.field"
input = "record"
params.field = "question"

[[node]]
id = "original"
op = "text.original"
input = "question"

[[node]]
id = "typos"
op = "text.typos"
input = "question"
params.rate = 0.2

[prompt]
template = "Question: {{{{ text }}}}\\nAnswer:"

[generation]
max_new_tokens = 32

# capitals_qa.yaml's filter "first-line": regex '^\\s*([^\\n]*)', then take_first
[answer]
extract = ["regex"]
pattern = '^\\s*([^\\n]*)'
select = "first"
strip = false

[[metric]]
name = "general.accuracy"
target = "{{{{ record.answer }}}}"
correct = {LM_EVAL_RULE}
by = ["perturbation"]
'''

COLOR_SQUARES = f'''
[benchmark]
name = "peers/color_squares"
version = "1.0.0"
seed = 0

[source]
loader = "table"
path = "{COLORS / 'color_squares.jsonl'}"
id = "id"
image_column = "image"
images = "{COLORS}"

[prompt]
template = "{{{{ record.question }}}}"

[generation]
max_new_tokens = 16

[[metric]]
name = "general.accuracy"
target = "{{{{ record.answer }}}}"
correct = {{ rule = "lm_eval_exact", ignore_case = true, ignore_punctuation = true }}
'''

STRIP = "'^\\s+|\\s+$'"  # outer white space, as inspect's match() strips it

# inspect's task: the first 10 questions asked as written; includes() and match()
INSPECT_SPEC = f'''
[benchmark]
name = "peers/capitals_inspect"
version = "1.0.0"
seed = 0

[source]
loader = "table"
path = "{DATA}"
id = "id"

[[filter]]
where = "id"
max = 9

[prompt]
template = "{{{{ record.question }}}}"

[generation]
max_new_tokens = 32

[[metric]]
name = "general.accuracy"
target = "{{{{ record.answer }}}}"
correct = "substring"

[[metric]]
name = "general.accuracy"
target = "{{{{ record.answer }}}}"
correct = {{ rule = "lm_eval_exact", ignore_case = true, ignore_punctuation = true, regexes_to_ignore = [{STRIP}] }}
'''


class Peers:
    """The three specs compiled once, and a helper that imports and scores a log."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.common: list[str | Path] = ["--cache", root / "cache", "--store", root / "store"]
        self.manifests = {name: self._compile(name, text) for name, text in
                          (("capitals", CAPITALS), ("colors", COLOR_SQUARES), ("inspect", INSPECT_SPEC))}

    def _compile(self, name: str, text: str) -> Path:
        spec = self.root / f"{name}.toml"
        spec.write_text(text, encoding="utf-8")
        out = self.root / f"m-{name}"
        assert run_cli("compile", spec, "-o", out, "--data-root", PEERS, *self.common) == 0
        return out

    def scored(self, manifest: str, log: Path, *args: str) -> dict[str, Any]:
        run = self.root / f"r-{manifest}-{len(list(self.root.glob('r-*')))}"
        assert run_cli("import", self.manifests[manifest], log, "-o", run, *args) == 0
        assert run_cli("score", run, *self.common) == 0
        return json.loads((run / "scores.json").read_text())


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Peers:
    return Peers(tmp_path_factory.mktemp("peers"))


def _printed(results_glob: str, task: str, key: str) -> float:
    [path] = sorted(PEERS.glob(results_glob))
    return float(json.loads(path.read_text())["results"][task][key])


def _rows(scores: dict[str, Any], k: int = 0) -> dict[str, dict[str, Any]]:
    return {str(r.get("perturbation", "all")): r for r in scores["metrics"][k]["rows"]}


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = run_cli(*args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# every file imports, and scores as the tool printed ----------------------------------------------

@pytest.mark.parametrize("key", ["id", "prompt"])
@pytest.mark.parametrize("run", sorted(LM_EVAL), ids=str)
def test_lm_eval_logs_score_as_lm_eval_printed(peers: Peers, run: str, key: str) -> None:
    """Chat (the prompt a JSON message list), completions and dummy; by doc.id or by prompt.
    The typos variant, which lm-eval never saw, is missing by design, and said so."""
    log = LM_EVAL[run]
    scores = peers.scored("capitals", log, "--key", key)
    printed = _printed(f"lm_eval/{run}/*/results_*.json", "capitals_qa", "exact_match,first-line")
    rows = _rows(scores)
    assert rows["original"]["accuracy"] == pytest.approx(100 * printed) and rows["original"]["items"] == 20
    notes = scores["metrics"][0]["notes"]
    assert any("Variants with no answers in the imported file: typos (20 items)" in n for n in notes), notes
    assert any("lm-eval filter 'first-line'" in n for n in notes)


def test_the_completions_log_is_not_all_wrong(peers: Peers) -> None:
    """0.4 is 8 of 20: a real check that answers reached their items."""
    assert _printed("lm_eval/completions/*/results_*.json", "capitals_qa", "exact_match,first-line") == 0.4


@pytest.mark.parametrize("run", sorted(LMMS), ids=str)
def test_lmms_eval_logs_score_as_lmms_eval_printed(peers: Peers, run: str) -> None:
    """lmms-eval 0.7.3: no doc, filtered_resps a string, resps left out when equal to it."""
    scores = peers.scored("colors", LMMS[run])
    [printed] = [json.loads(p.read_text())["results"]["color_squares"]["exact_match,none"]
                 for p in (PEERS / "lmms_eval" / run).glob("*/*_results.json")]
    assert _rows(scores)["all"]["accuracy"] == pytest.approx(100 * printed)
    assert (run, printed) in (("rules", 0.2), ("gemma", 0.0))


@pytest.mark.parametrize("key", ["id", "prompt"])
@pytest.mark.parametrize("log", INSPECT, ids=lambda p: p.suffix)
def test_inspect_logs_score_as_inspect_printed(peers: Peers, log: Path, key: str) -> None:
    """includes() 0.7 is benchc's substring; match() 0.0 is read here as an exact match after
    case, punctuation and outer white space (benchc has no rule anchored at the end)."""
    scores = peers.scored("inspect", log, "--key", key)
    header = _inspect_header(log)
    printed = {s["name"]: s["metrics"]["accuracy"]["value"] for s in header["results"]["scores"]}
    assert printed == {"includes": 0.7, "match": 0.0}
    assert _rows(scores, 0)["all"]["accuracy"] == pytest.approx(100 * printed["includes"])
    assert _rows(scores, 1)["all"]["accuracy"] == pytest.approx(100 * printed["match"])


def _inspect_header(log: Path) -> dict[str, Any]:
    if log.suffix == ".json":
        return dict(json.loads(log.read_text()))
    import zipfile

    from benchc.runtime.interop.harness_logs import zip_member

    data = log.read_bytes()
    with zipfile.ZipFile(log) as archive:
        return dict(json.loads(zip_member(archive, archive.getinfo("header.json"), data)))


def test_the_two_inspect_logs_hold_the_same_answers(peers: Peers, tmp_path: Path) -> None:
    from benchc.runtime.interop.answer_files import ImportOptions, read_answers

    [a, b] = [read_answers(p, ImportOptions()).rows for p in INSPECT]
    assert [(r.key, r.texts, r.target) for r in a] == [(r.key, r.texts, r.target) for r in b] and len(a) == 10


# record ids, variants ----------------------------------------------------------------------------

def test_record_ids_go_to_the_named_variant(peers: Peers, capsys: pytest.CaptureFixture[str]) -> None:
    run = peers.root / "r-variant"
    code, out, err = _cli(capsys, "import", peers.manifests["capitals"], LM_EVAL["completions"], "-o", run,
                          "--variant", "typos")
    assert code == 0, err
    assert "variants the file answers no item of, recorded as unanswered: original (20 items)" in out
    record = json.loads((run / "run.json").read_text())["imported"]
    assert record["by_record"] == {"variant": "typos", "items": 20}
    assert record["unanswered_variants"] == {"original": 20} and record["missing"] == 20
    code, _, err = _cli(capsys, "import", peers.manifests["capitals"], LM_EVAL["completions"], "-o",
                        peers.root / "r-novariant", "--variant", "swapped")
    assert code == 2 and "--variant 'swapped' is no variant of this manifest" in err and "'typos'" in err


def test_a_missing_original_answer_is_still_refused(peers: Peers, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Only whole variants the harness never saw are missing by design; a doc it left out is not."""
    lines = LM_EVAL["completions"].read_text().splitlines(keepends=True)
    short = tmp_path / "samples_capitals_qa_short.jsonl"
    short.write_text("".join(lines[1:]))
    code, _, err = _cli(capsys, "import", peers.manifests["capitals"], short, "-o", tmp_path / "r")
    assert code == 2 and "1 of 40 answers are missing" in err and "'0#question/original'" in err


# lm-eval filters -----------------------------------------------------------------------------------

GSM8K = next(PEERS.glob("lm_eval/completions/*/samples_gsm8k_local_*.jsonl"))


def test_one_filter_is_read_and_named(tmp_path: Path) -> None:
    from benchc.runtime.interop.answer_files import ImportOptions, read_answers

    first = read_answers(GSM8K, ImportOptions(key="prompt"))
    assert len(first.rows) == 10 and first.note is not None
    assert "lm-eval filter 'strict-match' of 'strict-match', 'flexible-extract'" in first.note
    other = read_answers(GSM8K, ImportOptions(key="prompt", filter="flexible-extract"))
    assert [r.texts for r in other.rows] == [r.texts for r in first.rows]  # the raw resps are the filter's input
    assert other.note is not None and "(--filter)" in other.note


# refused: one clear error each, with file:line, nothing written ------------------------------------

def _refused(peers: Peers, capsys: pytest.CaptureFixture[str], manifest: str, log: Path, *args: str) -> str:
    run = peers.root / "r-refused"
    code, _, err = _cli(capsys, "import", peers.manifests[manifest], log, "-o", run, *args)
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    assert err.count("error: ") == 1, err
    assert not run.exists()
    return err


def test_a_truncated_samples_file_is_refused(peers: Peers, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = LM_EVAL["chat"].read_text()
    cut = tmp_path / "samples_capitals_qa_cut.jsonl"
    cut.write_text(text[:len(text) // 2])  # a line cut in the middle, as a killed run leaves it
    line = text[:len(text) // 2].count("\n") + 1
    err = _refused(peers, capsys, "capitals", cut)
    assert f"{cut}:{line}: line {line} is not JSON" in err


def test_a_truncated_inspect_log_is_refused(peers: Peers, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    for log in INSPECT:
        cut = tmp_path / log.name
        data = log.read_bytes()
        cut.write_bytes(data[:len(data) // 2])
        err = _refused(peers, capsys, "inspect", cut)
        assert f"{cut}" in err and "a truncated log?" in err


def test_a_samples_file_of_another_task_is_refused(peers: Peers, capsys: pytest.CaptureFixture[str]) -> None:
    """color_squares' doc ids 0-4 are capitals records too: their targets tell the task apart."""
    err = _refused(peers, capsys, "capitals", LMMS["rules"])
    assert f"{LMMS['rules']}:1: 5 row(s) carry a target that is not their item's: line 1: target 'red', but item " \
           "'0#question/original' has 'Paris'" in err and "another task" in err


def test_duplicate_doc_ids_are_refused(peers: Peers, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = LM_EVAL["completions"].read_text().splitlines(keepends=True)
    twice = tmp_path / "samples_capitals_qa_twice.jsonl"
    twice.write_text("".join(lines + lines[3:4]))
    err = _refused(peers, capsys, "capitals", twice)
    assert f"{twice}:21: doc_id 3 is logged twice (lines 4 and 21) under filter 'first-line'" in err


def test_an_unknown_filter_is_refused(peers: Peers, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(peers, capsys, "capitals", LM_EVAL["chat"], "--filter", "strict-match")
    assert "--filter 'strict-match' is not in the file (filters: first-line)" in err


def test_an_inspect_log_read_by_copy_needs_no_inspect(tmp_path: Path) -> None:
    """The .eval reader is benchc's own (zstandard and a zip member reader): a copy elsewhere reads."""
    from benchc.runtime.interop.answer_files import ImportOptions, read_answers

    [log] = [p for p in INSPECT if p.suffix == ".eval"]
    copy = tmp_path / "x.eval"
    shutil.copy(log, copy)
    parsed = read_answers(copy, ImportOptions())
    assert parsed.format == "inspect" and parsed.answer_field == "output.completion"
    assert parsed.rows[0].texts[0].startswith("The capital of France is Paris.")


# score --format lm-eval ----------------------------------------------------------------------------

def test_a_metric_twice_keeps_each_ones_parameters_in_configs(peers: Peers) -> None:
    """Issue 27 item 4: general.accuracy twice (substring, then lm_eval_exact) showed the second's
    parameters in both tasks' configs."""
    [log] = [p for p in INSPECT if p.suffix == ".json"]
    peers.scored("inspect", log)
    run = max(peers.root.glob("r-inspect-*"), key=lambda p: p.stat().st_mtime)
    assert run_cli("score", run, "--format", "lm-eval", *peers.common) == 0
    [results] = (run / "lm-eval").glob("*/results_*.json")
    configs = json.loads(results.read_text())["configs"]
    first, second = (configs[f"peers_capitals_inspect_general_accuracy_{k}"]["metadata"]["benchc_params"]
                     for k in (1, 2))
    assert first["correct"] == "substring"
    assert second["correct"]["rule"] == "lm_eval_exact"
