"""benchc's rule server (benchc/rule_server.py): the rules, the OpenAI-compatible endpoints, the
command line (port file, clean stop on SIGTERM/SIGINT), and benchc's ``openai`` backend talking
to it end to end through ``benchc eval``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchc.rule_server import RuleServer, Rules, RulesError, completion, load_rules, parse_rules, served
from specfiles import questions_spec
from conftest import cli

RULES = {
    "default": "I do not know.",
    "rule": [
        {"pattern": r"capital of (\w+)", "answer": r"The capital of \1."},
        {"pattern": "capital", "answer": "never reached for a capital of X question"},
        {"pattern": r"(?P<n>\d+) \+ (?P=n)", "answer": r"twice \g<n>"},
        {"pattern": "^yes or no", "answer": "Yes."},
    ],
}


@pytest.fixture
def server() -> Iterator[RuleServer]:
    with served(RULES) as httpd:
        yield httpd


def call(url: str, body: Any = None, *, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """(status, parsed JSON) of a GET (no body) or POST."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data, {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def chat(server: RuleServer, content: Any, **extra: Any) -> dict[str, Any]:
    status, body = call(f"{server.url}/chat/completions",
                        {"model": "rules", "messages": [{"role": "user", "content": content}], **extra})
    assert status == 200, body
    return body


# -- the rules ------------------------------------------------------------------------------------


def test_first_matching_rule_answers_case_insensitively_with_groups() -> None:
    rules = parse_rules(RULES)
    assert rules.answer("What is the CAPITAL of France?") == "The capital of France."
    assert rules.answer("and the capital?") == "never reached for a capital of X question"
    assert rules.answer("what is 21 + 21?") == "twice 21"
    assert rules.answer("Yes or no: is it?") == "Yes."
    assert rules.answer("Is it? yes or no") == "I do not know."  # ^ anchors at the text's start
    assert rules.answer("") == "I do not know."


def test_defaults_of_an_empty_rules_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text("")
    rules = load_rules(path)
    assert rules == Rules((), "I do not know.", "rules")
    assert rules.answer("anything") == "I do not know."


def test_every_problem_of_a_rules_file_is_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('defualt = "x"\n'
                    '[[rule]]\npattern = "(unclosed"\nanswer = "a"\n'
                    '[[rule]]\npattern = "(one)"\nanswer = "\\\\2"\n'
                    '[[rule]]\npattern = "fine"\n'
                    '[[rule]]\npattern = "x"\nanswer = "y"\nweight = 2\n')
    with pytest.raises(RulesError) as caught:
        load_rules(path)
    text = caught.value.render()
    for expected in ("unknown key 'defualt'", "rule[0].pattern: not a valid regular expression",
                     "rule[1].answer: not a valid re.expand template", "rule[2].answer: missing",
                     "rule[3].weight: unknown key"):
        assert expected in text, text
    assert str(path) in text
    assert caught.value.exit_code == 2


def test_a_rules_file_that_is_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text("default = \n")
    with pytest.raises(RulesError, match="not valid TOML"):
        load_rules(path)
    with pytest.raises(RulesError, match="cannot read"):
        load_rules(tmp_path / "missing.toml")


# -- the endpoints --------------------------------------------------------------------------------


def test_models_lists_the_one_model(server: RuleServer) -> None:
    status, body = call(f"{server.url}/models")
    assert status == 200
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["rules"]
    assert call(f"{server.url}/models/rules") == (200, body["data"][0])
    status, body = call(f"{server.url}/models/gpt-4o")
    assert status == 404 and body["error"]["code"] == "model_not_found"


def test_chat_completion_is_a_standard_answer(server: RuleServer) -> None:
    body = chat(server, "What is the capital of Italy?", temperature=0.0, max_tokens=5, seed=7)
    assert body["object"] == "chat.completion"
    assert body["created"] == 0
    assert body["model"] == "rules"
    assert body["id"].startswith("chatcmpl-")
    [choice] = body["choices"]
    assert choice == {"index": 0, "message": {"role": "assistant", "content": "The capital of Italy."},
                      "logprobs": None, "finish_reason": "stop"}
    assert body["usage"] == {"prompt_tokens": 6, "completion_tokens": 4, "total_tokens": 10}
    # deterministic: the same request gets the same answer, id included; another gets another id
    assert chat(server, "What is the capital of Italy?", temperature=0.0, max_tokens=5, seed=7) == body
    assert chat(server, "What is the capital of Italy?", seed=8)["id"] != body["id"]


def test_default_answer_when_no_rule_matches(server: RuleServer) -> None:
    assert chat(server, "Who are you?")["choices"][0]["message"]["content"] == "I do not know."


def test_n_repeats_the_answer(server: RuleServer) -> None:
    body = chat(server, "yes or no?", n=3)
    assert [c["index"] for c in body["choices"]] == [0, 1, 2]
    assert {c["message"]["content"] for c in body["choices"]} == {"Yes."}
    assert body["usage"]["completion_tokens"] == 3


def test_the_last_user_message_text_is_matched(server: RuleServer) -> None:
    messages = [{"role": "system", "content": "yes or no: always answer"},
                {"role": "user", "content": "capital of Spain"},
                {"role": "assistant", "content": "The capital of Spain."},
                {"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    {"type": "text", "text": "Yes or no"}, {"type": "text", "text": "is it red?"}]}]
    status, body = call(f"{server.url}/chat/completions", {"model": "any-name", "messages": messages})
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "Yes."
    assert body["model"] == "any-name"  # any model name is answered, and echoed


def test_authorization_is_ignored(server: RuleServer) -> None:
    status, body = call(f"{server.url}/chat/completions",
                        {"model": "rules", "messages": [{"role": "user", "content": "yes or no"}]},
                        headers={"Authorization": "Bearer sk-whatever"})
    assert status == 200 and body["choices"][0]["message"]["content"] == "Yes."


@pytest.mark.parametrize(("body", "status", "says"), [
    (None, 400, "not valid JSON"),
    ({"messages": []}, 400, "non-empty array"),
    ({"messages": [{"role": "system", "content": "hi"}]}, 400, "no message with role 'user'"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": 0}, 400, "'n' must be"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": True}, 400, "'n' must be"),
    ({"messages": [{"role": "user", "content": "hi"}], "stream": True}, 400, "stream"),
    ({"messages": [{"role": "user", "content": 3}]}, 400, "content must be"),
    ([1, 2], 400, "JSON object"),
])
def test_bad_requests_get_openai_style_errors(server: RuleServer, body: Any, status: int, says: str) -> None:
    raw = b"{not json" if body is None else json.dumps(body).encode()
    got, answer = call(f"{server.url}/chat/completions", raw=raw)
    assert got == status
    assert answer["error"]["type"] == "invalid_request_error"
    assert says in answer["error"]["message"]


def test_unknown_endpoints_are_404(server: RuleServer) -> None:
    assert call(f"{server.url}/completions", {"prompt": "x"})[0] == 404
    assert call(f"http://127.0.0.1:{server.port}/health")[0] == 404


def test_completion_without_http() -> None:
    rules = Rules(default="no")
    body = completion({"messages": [{"role": "user", "content": "x"}], "n": 2}, rules)
    assert [c["message"]["content"] for c in body["choices"]] == ["no", "no"]
    assert body["model"] == "rules"


def test_serve_binds_localhost_only(server: RuleServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.port}/v1"


# -- the command line -----------------------------------------------------------------------------


SERVE_RULES = [sys.executable, "-m", "benchc.cli", "serve-rules"]
"""``benchc serve-rules``, in a fresh process as a user runs it."""
MODULE = [sys.executable, "-m", "benchc.rule_server"]
"""``python -m benchc.rule_server``, an alias of ``benchc serve-rules``."""


def _start(tmp_path: Path, *args: str, command: list[str] = MODULE) -> tuple[subprocess.Popen[str], Path]:
    rules = tmp_path / "rules.toml"
    rules.write_text('default = "no"\n[[rule]]\npattern = "cat"\nanswer = "yes"\n')
    port_file = tmp_path / "sub" / "port.txt"
    process = subprocess.Popen([*command, "--rules", str(rules), "--port", "0",
                                "--port-file", str(port_file), *args],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (port_file.exists() and port_file.read_text().strip()):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the server did not start: {process.communicate()}")
        time.sleep(0.05)
    return process, port_file


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_command_line_serves_and_stops_cleanly(tmp_path: Path, stop: signal.Signals) -> None:
    process, port_file = _start(tmp_path, "--model", "my-rules")
    try:
        url = f"http://127.0.0.1:{int(port_file.read_text())}/v1"
        assert [m["id"] for m in call(f"{url}/models")[1]["data"]] == ["my-rules"]
        status, body = call(f"{url}/chat/completions",
                            {"model": "my-rules", "messages": [{"role": "user", "content": "Is it a CAT?"}]})
        assert (status, body["choices"][0]["message"]["content"]) == (200, "yes")
        process.send_signal(stop)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert "rule server: stopped" in err
    assert not port_file.exists()  # removed on a clean exit


def test_benchc_serve_rules_answers_and_stops(tmp_path: Path) -> None:
    process, port_file = _start(tmp_path, command=SERVE_RULES)
    try:
        url = f"http://127.0.0.1:{int(port_file.read_text())}/v1"
        status, body = call(f"{url}/chat/completions",
                            {"model": "rules", "messages": [{"role": "user", "content": "A cat?"}]})
        assert (status, body["choices"][0]["message"]["content"]) == (200, "yes")
        process.terminate()
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Traceback" not in err and "rule server: stopped" in err
    assert not port_file.exists()


def test_benchc_serve_rules_names_a_missing_rules_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    done = subprocess.run([*SERVE_RULES, "--rules", str(missing), "--port", "0"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {missing}: cannot read the rules file"), done.stderr


def test_command_line_refuses_bad_rules_without_a_traceback(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\npattern = "("\nanswer = "x"\n')
    done = subprocess.run([sys.executable, "-m", "benchc.rule_server", "--rules", str(rules), "--port", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "rule[0].pattern" in done.stderr
    assert "Traceback" not in done.stderr


def test_command_line_refuses_a_port_in_use(tmp_path: Path, server: RuleServer) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text("")
    done = subprocess.run([sys.executable, "-m", "benchc.rule_server", "--rules", str(rules),
                           "--port", str(server.port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{server.port}" in done.stderr
    assert "Traceback" not in done.stderr


# -- benchc's openai backend, end to end ----------------------------------------------------------

YES_NO_CSV = """id,question,answer
r1,Is the sky blue?,yes
r2,Is fire cold?,no
r3,Do fish swim?,yes
"""

YES_NO_SPEC = questions_spec("rule-server", """
[[node]]
id = "original"
op = "text.original"
input = "question"

[[node]]
id = "shouted"
op = "text.case"
input = "question"
params.mode = "upper"

[prompt]
template = "{{ text }} Answer yes or no."

[[metric]]
name = "general.accuracy"
target = "answer"

[[metric]]
name = "general.consistency"
""")


def _eval(folder: Path, server: RuleServer, out: str, *extra: str) -> dict[str, Any]:
    model = f"openai:rules,base_url={server.url},api_key_env=none"
    done = cli("eval", "spec.toml", "-o", out, "--model", model, *extra, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    scores = json.loads((folder / out / "run" / "scores.json").read_text())
    return {m["name"]: m["rows"] for m in scores["metrics"]}


@pytest.fixture
def yes_no_folder(tmp_path: Path) -> Path:
    (tmp_path / "questions.csv").write_text(YES_NO_CSV)
    (tmp_path / "spec.toml").write_text(YES_NO_SPEC)
    return tmp_path


def test_a_model_that_never_knows_scores_zero_accuracy(yes_no_folder: Path) -> None:
    with served({"default": "I do not know."}) as httpd:
        metrics = _eval(yes_no_folder, httpd, "out")
    assert metrics["general.accuracy"][0]["accuracy"] == 0.0
    assert metrics["general.accuracy"][0]["items"] == 6
    # never right, but always the same answer: consistent
    assert metrics["general.consistency"][0]["holds"] == 100.0
    report = (yes_no_folder / "out" / "run" / "report.md").read_text()
    assert "general.accuracy" in report and "openai:rules" in report


def test_answers_reach_the_scores(yes_no_folder: Path) -> None:
    """A rule answers "Yes, ..." only to the lower-case wording: the yes/no extraction reads it,
    accuracy counts the two 'yes' records' original items, and the shouted items, answered with
    the default, break consistency."""
    spec = yes_no_folder / "spec.toml"
    text = spec.read_text().replace('target = "answer"', 'target = "answer"\nby = ["perturbation"]')
    spec.write_text(text + '\n[answer]\nextract = ["yes_no"]\n')
    with served({"default": "I do not know.",
                       "rule": [{"pattern": "(?-i:^[A-Z][a-z])", "answer": "Yes, I think so."}]}) as httpd:
        metrics = _eval(yes_no_folder, httpd, "out")
    accuracy = {row["perturbation"]: row["accuracy"] for row in metrics["general.accuracy"]}
    assert accuracy == pytest.approx({"original": 200 / 3, "shouted": 0.0}, abs=1e-3)
    assert metrics["general.consistency"][0]["holds"] == 0.0
    responses = pl.read_parquet(yes_no_folder / "out" / "run" / "responses.parquet")
    answers = dict(zip(responses["item_id"], responses["text"]))
    assert answers["r1#question/original"] == "Yes, I think so."
    assert answers["r1#question/shouted"] == "I do not know."
