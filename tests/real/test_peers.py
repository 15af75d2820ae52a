"""The peer-harness fixtures (tests/fixtures/peers) re-created: lm-eval 0.4.13, lmms-eval 0.7.3 and
inspect-ai 0.3.285 run again with the commands of that folder's README, against the real model on
the alpaca server (the format the committed runs used), and the new files checked as the default
suite checks the committed ones (tests/test_import_peers.py, tests/test_lm_eval_conformance.py).
The committed files are a snapshot; this says whether today's harnesses still write files that
benchc reads as it reads the snapshot:

(a) the same layout: file-name patterns, top-level keys, sample keys;
(b) `benchc import` reads each new file into the default suite's manifest, and `benchc score`, with
    the tool's own matching rule, gives the score the tool printed in its new results file (and,
    for lm-eval, its verdict on every line, gsm8k_local included);
(c) the answers against the committed ones: answers that differ are counted, written out and
    warned about, not failed on (llama.cpp's prefix cache and its thread count change greedy
    answers; scripts/test_real.sh serves with one thread, the fixtures were made with two); but an
    answer text that is the same in both files must be read by benchc the same way (the same raw
    text taken, the same filtered answer, the same verdict).

Each harness runs with the python its variable names (BENCHC_LMEVAL_PYTHON, BENCHC_LMMS_PYTHON,
BENCHC_INSPECT_PYTHON; scripts/test_real.sh makes the venvs); a harness whose variable is unset is
skipped. The new files go to $BENCHC_REAL_OUT/peers/, laid out as tests/fixtures/peers/."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

import test_lm_eval_conformance as conformance
from benchc.rule_server import served
from realtier import ALPACA, OUT, ROOT
from support.hashed_answers import run_cli
from test_import_peers import Peers, _inspect_header

pytestmark = [pytest.mark.peers, pytest.mark.slow]  # real harnesses and a real model: about 3 minutes

PEERS = ROOT / "tests" / "fixtures" / "peers"
HERE = OUT / "peers"
"""Where the re-created files go, in the committed layout (lm_eval/chat/gemma/..., inspect_ai/json/...)."""
OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
HARNESS_TIMEOUT_S = 600

LOGS: dict[str, tuple[str, str | None]] = {
    "lm_eval/dummy/capitals_qa": ("lm_eval/dummy/*/samples_capitals_qa_*.jsonl", "capitals"),
    "lm_eval/chat/capitals_qa": ("lm_eval/chat/*/samples_capitals_qa_*.jsonl", "capitals"),
    "lm_eval/chat/gsm8k_local": ("lm_eval/chat/*/samples_gsm8k_local_*.jsonl", None),
    "lm_eval/completions/capitals_qa": ("lm_eval/completions/*/samples_capitals_qa_*.jsonl", "capitals"),
    "lm_eval/completions/gsm8k_local": ("lm_eval/completions/*/samples_gsm8k_local_*.jsonl", None),
    "lmms_eval/rules": ("lmms_eval/rules/*/*_samples_color_squares.jsonl", "colors"),
    "lmms_eval/gemma": ("lmms_eval/gemma/*/*_samples_color_squares.jsonl", "colors"),
    "inspect_ai/json": ("inspect_ai/json/*.json", "inspect"),
    "inspect_ai/eval": ("inspect_ai/eval/*.eval", "inspect"),
}
"""Each log: its glob (the same under PEERS and HERE) and the default suite's manifest that imports
it (gsm8k_local has none there: test_lm_eval_conformance checks it line by line)."""
IMPORTED = [(name, key) for name, (_, manifest) in LOGS.items() if manifest
            for key in (("id",) if name.startswith("lmms_eval") else ("id", "prompt"))]
"""The logs (b) imports, by id and by prompt; lmms-eval's by doc id only, as tests/test_import_peers.py."""
ITEMS = {"capitals": 20, "colors": 5, "inspect": 10}
"""The answered items of each manifest (capitals_qa's typos variant is never asked by a harness)."""
RUN_FOLDERS = ["lm_eval/dummy", "lm_eval/chat", "lm_eval/completions", "inspect_ai/json", "inspect_ai/eval",
               "lmms_eval/rules", "lmms_eval/gemma"]
"""The committed runs in the order they were made (the first test asks for the harnesses in this
order): llama.cpp reuses the previous request's cached prefix, so the order can change answers."""


# running the harnesses -----------------------------------------------------------------------------

def _python(variable: str) -> str:
    """The harness's interpreter; a skip, saying why, where the tier was started without it."""
    python = os.environ.get(variable, "")
    if not python:
        pytest.skip(f"{variable} is unset: the harness has no venv here (scripts/test_real.sh makes one)")
    if not ALPACA:
        pytest.skip("BENCHC_REAL_ALPACA is unset: no model server (scripts/test_real.sh starts one)")
    return python


def _run(python: str, *args: str, env: dict[str, str] | None = None) -> None:
    """One README command, from the fixtures folder (the task files name their data relative to
    it), offline, in the harness's own venv, as from a shell: this process's PYTHONPATH and
    VIRTUAL_ENV stay out, and so does PYTEST_CURRENT_TEST (under it inspect-ai leaves out the git
    `revision` of its log)."""
    full = {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "VIRTUAL_ENV") and not key.startswith("PYTEST_")}
    full.update(OFFLINE, OPENAI_API_KEY="none", **(env or {}))
    done = subprocess.run([python, *args], cwd=PEERS, env=full, capture_output=True, text=True,
                          timeout=HARNESS_TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-4000:]}"


def _fresh(folder: str) -> Path:
    path = HERE / folder
    shutil.rmtree(path, ignore_errors=True)
    return path


@pytest.fixture(scope="module")
def lm_eval_made() -> Path:
    """lm-eval: dummy, then local-chat-completions and local-completions on both tasks, as the README."""
    python = _python("BENCHC_LMEVAL_PYTHON")
    common = ("-m", "lm_eval", "--include_path", "tasks/lm_eval", "--log_samples")
    _run(python, *common, "--model", "dummy", "--tasks", "capitals_qa", "--output_path", str(_fresh("lm_eval/dummy")))
    _run(python, *common, "--model", "local-chat-completions", "--model_args",
         f"model=gemma,base_url={ALPACA}/chat/completions,num_concurrent=1", "--apply_chat_template",
         "--tasks", "capitals_qa,gsm8k_local", "--output_path", str(_fresh("lm_eval/chat")))
    _run(python, *common, "--model", "local-completions", "--model_args",
         f"model=gemma,base_url={ALPACA}/completions,num_concurrent=1,tokenizer_backend=none",
         "--tasks", "capitals_qa,gsm8k_local", "--output_path", str(_fresh("lm_eval/completions")))
    return HERE


@pytest.fixture(scope="module")
def inspect_ai_made() -> Path:
    """inspect-ai: the same task twice, a json log and the default .eval archive."""
    python = _python("BENCHC_INSPECT_PYTHON")
    env = {"GEMMA_BASE_URL": ALPACA, "GEMMA_API_KEY": "none"}
    common = ("-m", "inspect_ai", "eval", "tasks/inspect_ai/task.py", "--model", "openai-api/gemma/gemma",
              "--max-connections", "1")
    _run(python, *common, "--log-format", "json", "--log-dir", str(_fresh("inspect_ai/json")), env=env)
    _run(python, *common, "--log-dir", str(_fresh("inspect_ai/eval")), env=env)
    return HERE


@pytest.fixture(scope="module")
def lmms_eval_made() -> Path:
    """lmms-eval's openai model on color_squares: against benchc's rule server (the only non-zero
    score), then against Gemma (which the alpaca format sends no image: see the README)."""
    python = _python("BENCHC_LMMS_PYTHON")
    common = ("-m", "lmms_eval", "--model", "openai", "--tasks", "color_squares", "--include_path",
              "tasks/lmms_eval/color_squares", "--batch_size", "1", "--log_samples")
    with served(PEERS / "tasks" / "lmms_eval" / "color_squares" / "rules.toml") as rules:
        _run(python, *common, "--model_args", f"model=rules,base_url={rules.url},num_concurrent=1",
             "--output_path", str(_fresh("lmms_eval/rules")))
    _run(python, *common, "--model_args", f"model=gemma,base_url={ALPACA},num_concurrent=1",
         "--output_path", str(_fresh("lmms_eval/gemma")))
    return HERE


def _made(request: pytest.FixtureRequest, name: str) -> Path:
    """The harness's fixture for a log or run folder named `tool/...`: only the harnesses needed run."""
    return Path(request.getfixturevalue(f"{name.split('/')[0]}_made"))


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Peers:
    """The default suite's three manifests (tests/test_import_peers.py), compiled once."""
    return Peers(tmp_path_factory.mktemp("peers"))


def _one(root: Path, pattern: str) -> Path:
    [path] = sorted(root.glob(pattern))
    return path


# (a) layout ----------------------------------------------------------------------------------------

def _shape(relative: str) -> str:
    """A file's path with what changes from run to run generalised: digits (datetimes), the dummy
    model's random folder name, inspect's random log id."""
    relative = re.sub(r"^[a-z0-9]{8}/", "<random>/", relative)
    relative = re.sub(r"_[A-Za-z0-9]{22}\.(json|eval)$", r"_<id>.\1", relative)
    return re.sub(r"\d+", "N", relative)


def _shapes(folder: Path) -> list[str]:
    return sorted(_shape(p.relative_to(folder).as_posix()) for p in folder.rglob("*") if p.is_file())


def _key_paths(obj: Any, depth: int = 3, prefix: str = "") -> set[str]:
    """Keys, and the keys of dict values, down to `depth` levels (lists are not entered; a key
    that is a content hash, as inspect's `attachments` has, is generalised: it is data)."""
    if not isinstance(obj, dict) or depth == 0:
        return set()
    names = {key: re.sub(r"^[0-9a-f]{32,}$", "<hash>", str(key)) for key in obj}
    return {f"{prefix}{names[key]}" for key in obj} | {
        path for key, value in obj.items() for path in _key_paths(value, depth - 1, f"{prefix}{names[key]}.")}


def _union(objects: list[Any]) -> set[str]:
    return set().union(*(_key_paths(obj) for obj in objects))


OPTIONAL_KEYS = {"lmms_eval": ("resps",), "inspect_ai": ("eval.revision",)}
"""Keys whose presence depends on the answer or the machine, not the tool: lmms-eval 0.7.3 leaves
`resps` out of a line where it equals `filtered_resps`; inspect-ai writes `eval.revision` only where
the cwd is a git checkout (and not under pytest)."""


def _without_optional(paths: set[str], tool: str) -> set[str]:
    optional = OPTIONAL_KEYS.get(tool, ())
    return {p for p in paths if not any(p == o or p.startswith(o + ".") for o in optional)}


def _layout(path: Path, tool: str) -> dict[str, set[str]]:
    """What a harness file is made of: its key paths, its samples' key paths, its archive members
    (the keys whose presence is optional left out)."""
    if path.suffix == ".jsonl":
        layout = {"sample keys": _union([json.loads(line) for line in path.read_text().splitlines()])}
    elif path.suffix == ".json":
        obj = json.loads(path.read_text())
        layout = {"keys": _key_paths({k: v for k, v in obj.items() if k != "samples"}),
                  "sample keys": _union(obj.get("samples", []))}
    else:
        layout = _eval_layout(path)
    return {part: _without_optional(paths, tool) for part, paths in layout.items()}


def _eval_layout(path: Path) -> dict[str, set[str]]:
    """An inspect .eval archive: member names (generalised), header keys, sample members' keys."""
    members = _eval_members(path)
    return {"members": {_shape(name) for name in members},
            "keys": _key_paths(_inspect_header(path)),
            "sample keys": _union([json.loads(data) for name, data in members.items() if name.startswith("samples/")])}


def _eval_members(path: Path) -> dict[str, bytes]:
    """Every member of a .eval archive, read with benchc's reader (zstd members: zipfile can't)."""
    from benchc.runtime.interop.harness_logs import zip_member

    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        return {info.filename: zip_member(archive, info, data) for info in archive.infolist()}


@pytest.mark.parametrize("folder", RUN_FOLDERS)
def test_the_new_files_keep_the_committed_layout(request: pytest.FixtureRequest, folder: str) -> None:
    """(a) the same file-name patterns and, file by file, the same key sets as the committed run."""
    made = _made(request, folder) / folder
    committed = PEERS / folder
    assert _shapes(made) == _shapes(committed)
    new_files = {_shape(p.relative_to(made).as_posix()): p for p in made.rglob("*") if p.is_file()}
    for old in (p for p in committed.rglob("*") if p.is_file()):
        new = new_files[_shape(old.relative_to(committed).as_posix())]
        tool = folder.split("/")[0]
        old_layout, new_layout = _layout(old, tool), _layout(new, tool)
        for part in old_layout:
            assert new_layout[part] == old_layout[part], (new.name, part, new_layout[part] ^ old_layout[part])


# (b) benchc scores each new file as the tool printed ---------------------------------------------

def _results_of(log: Path) -> dict[str, Any]:
    """The results file written with a samples file (lm-eval: the same datetime; lmms-eval: stamp)."""
    if log.name.startswith("samples_"):
        stamp = log.stem.rsplit("_", 1)[1]
        return dict(json.loads(_one(log.parent, f"results_{stamp}.json").read_text()))
    stamp = log.name.split("_samples_")[0]
    return dict(json.loads(_one(log.parent, f"{stamp}_results.json").read_text()))


def _printed(name: str, log: Path) -> list[tuple[int, str, float]]:
    """The tool's printed score(s) of a new log, as (benchc metric index, benchc row, value)."""
    tool = name.split("/")[0]
    if tool == "inspect_ai":
        scores = {s["name"]: s["metrics"]["accuracy"]["value"] for s in _inspect_header(log)["results"]["scores"]}
        return [(0, "all", float(scores["includes"])), (1, "all", float(scores["match"]))]
    if tool == "lmms_eval":
        return [(0, "all", float(_results_of(log)["results"]["color_squares"]["exact_match,none"]))]
    return [(0, "original", float(_results_of(log)["results"]["capitals_qa"]["exact_match,first-line"]))]


def _rows(scores: dict[str, Any], k: int) -> dict[str, dict[str, Any]]:
    return {str(r.get("perturbation", "all")): r for r in scores["metrics"][k]["rows"]}


@pytest.mark.parametrize(("name", "key"), IMPORTED)
def test_benchc_scores_each_new_file_as_the_tool_printed(request: pytest.FixtureRequest, peers: Peers,
                                                         name: str, key: str) -> None:
    """(b) imported into the default suite's manifest and scored with the tool's own rule: the
    score the tool printed in its new results file (or inspect's new log header)."""
    pattern, manifest = LOGS[name]
    assert manifest is not None
    log = _one(_made(request, name), pattern)
    scores = peers.scored(manifest, log, "--key", key)
    for k, row, printed in _printed(name, log):
        assert _rows(scores, k)[row]["accuracy"] == pytest.approx(100 * printed), (k, row, printed)
        assert _rows(scores, k)[row]["items"] == ITEMS[manifest]


@pytest.mark.parametrize("run", ["dummy", "chat", "completions"])
def test_benchc_gives_lm_evals_verdict_on_every_new_line(lm_eval_made: Path, run: str) -> None:
    """(b) lm-eval's filters read as benchc `[answer]`s, its exact_match as a `correct` table: its
    filtered answer and verdict on every line of the new files, gsm8k_local's too, and its scores."""
    [folder] = [p for p in (lm_eval_made / "lm_eval" / run).iterdir() if p.is_dir()]
    conformance.test_benchc_gives_lm_evals_verdict_on_every_item(folder)
    conformance.test_benchc_gives_lm_evals_scores(folder)


# (c) the answers against the committed ones ------------------------------------------------------

def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _native_answers(log: Path) -> dict[str, str]:
    """Record id -> the raw answer, read straight from the tool's file, not through benchc (the
    README's "Where things are"): lm-eval `resps[0][0]` of the first filter's lines, lmms-eval
    `resps` or `filtered_resps` where it is left out, inspect `output.completion`."""
    if log.suffix == ".jsonl" and log.name.startswith("samples_"):
        rows = _jsonl(log)
        first = rows[0]["filter"]
        return {str(r["doc"].get("id", r["doc_id"])): r["resps"][0][0] for r in rows if r["filter"] == first}
    if log.suffix == ".jsonl":
        return {str(r["doc_id"]): r.get("resps", r["filtered_resps"]) for r in _jsonl(log)}
    samples = (json.loads(log.read_text())["samples"] if log.suffix == ".json" else
               [json.loads(data) for name, data in _eval_members(log).items() if name.startswith("samples/")])
    return {str(s["id"]): s["output"]["completion"] for s in samples}


def _benchc_readings(peers: Peers, manifest: str, log: Path) -> dict[tuple[str, str], Any]:
    """benchc's reading of every answered item: imported, scored, exported as lm-eval samples
    (`benchc score --format lm-eval`), keyed by (metric and variant, record id): the raw text it
    took, its filtered answer, its verdict(s)."""
    run = peers.root / f"c-{manifest}-{len(list(peers.root.glob('c-*')))}"
    assert run_cli("import", peers.manifests[manifest], log, "-o", run) == 0
    assert run_cli("score", run, "--format", "lm-eval", *peers.common) == 0
    readings: dict[tuple[str, str], Any] = {}
    for path in (run / "lm-eval").glob("*/samples_*.jsonl"):
        for row in _jsonl(path):
            if not row["missing"]:
                verdicts = {metric: row[metric] for metric in row["metrics"]}
                readings[(path.name.rsplit("_", 1)[0], row["doc"]["record_id"])] = (
                    row["resps"], row["filtered_resps"], verdicts)
    return readings


def _report(name: str, old: dict[str, str], new: dict[str, str], differ: list[str]) -> None:
    """Answers that came out otherwise: written out for a person (HERE/differences/) and warned."""
    folder = HERE / "differences"
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"record": k, "committed": old[k], "new": new[k]} for k in differ]
    (folder / f"{name.replace('/', '-')}.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    print(f"{name}: {len(old) - len(differ)} of {len(old)} answers as committed, {len(differ)} differ")
    if differ:
        warnings.warn(f"{name}: {len(differ)} of {len(old)} answers differ from the committed ones "
                      f"(records {', '.join(differ)}; see {folder})", stacklevel=2)


def _record_order(key: str) -> tuple[int, str]:
    return (int(key), key) if key.isdigit() else (1 << 30, key)


@pytest.mark.parametrize("name", list(LOGS))
def test_the_same_answer_text_is_read_the_same_way(request: pytest.FixtureRequest, peers: Peers, name: str) -> None:
    """(c) answers that differ from the committed ones are counted and written out, not failed on;
    benchc must take each file's own answer text, and read an unchanged text as before."""
    pattern, manifest = LOGS[name]
    new_log, old_log = _one(_made(request, name), pattern), _one(PEERS, pattern)
    old, new = _native_answers(old_log), _native_answers(new_log)
    assert new.keys() == old.keys()
    differ = sorted((k for k in old if old[k] != new[k]), key=_record_order)
    _report(name, old, new, differ)
    if manifest is None:  # gsm8k_local: read line by line in test_benchc_gives_lm_evals_verdict_on_every_new_line
        return
    before, after = _benchc_readings(peers, manifest, old_log), _benchc_readings(peers, manifest, new_log)
    assert before.keys() == after.keys() and before
    took_other = {record for (metric, record), read in before.items() if read[0] != after[(metric, record)][0]}
    assert took_other == set(differ), "benchc's raw texts differ where the files' answers do not, or the reverse"
    changed = {key: (before[key], after[key]) for key in before if key[1] not in differ and before[key] != after[key]}
    assert not changed, f"the same answer text read otherwise: {changed}"

