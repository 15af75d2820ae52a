"""Sandbox limits (issue 13, part 4): template bombs fail fast with one clear message, the
classic sandbox escapes stay blocked, a ``PATH@REV`` revision is never a git option, and a
symlink out of the data roots is never read.

Nothing here times anything: a bomb that is not caught hangs, so everything that could hang
runs in a subprocess with a 60 s timeout (a timeout fails the test)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.diff import inputs as diff_inputs
from benchc.compiler.diff.inputs import DiffError, git_show, parse_ref
from benchc.compiler.errors import SourceError
from benchc.compiler.paths import resolve_in_roots
from benchc.compiler.sources import SOURCES, SourceContext
from benchc.compiler.templates import TemplateProblem, compile_template, render
from conftest import ROOT
from source_helpers import load, write_image
from specfiles import MINI_SPEC, TABLE, write_mini

TIMEOUT = 60
# the step limit, or on a machine slowed down enough, the wall-clock backstop: either stops it
STEPS = r"over 1,000,000 steps|ran for over 10 s"


def _benchc(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``benchc ARGS`` in a fresh process; subprocess.TimeoutExpired (a failure) past 60 s."""
    return subprocess.run([sys.executable, "-m", "benchc.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=TIMEOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _bomb_spec(tmp_path: Path, template: str) -> Path:
    text = MINI_SPEC.format(table=TABLE, n=4)
    assert "{{ text }}" in text
    return write_mini(tmp_path, text=text.replace("{{ text }}", template + "{{ text }}", 1))


def _fails_with(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr
    return done.stderr


# --- template bombs, through the CLI ------------------------------------------------------------

BOMBS = [
    # (template, fails at validate already, fragments of the compile error)
    ("{{ (9**999999999) % 7 }}", True, ["'**' would make a number of about 954,242,508 digits"]),
    ("{{ 'a' * 10**10 }}", True, ["'*' would repeat a text to 10,000,000,000 elements"]),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", True,
     ["template exceeds a sandbox limit"]),
    ("{{ lipsum(10**8)|length }}", True, ["lipsum"]),
]


@pytest.mark.parametrize(("template", "at_validate", "fragments"), BOMBS, ids=["power", "repeat", "range", "lipsum"])
def test_a_template_bomb_fails_fast_naming_the_key(tmp_path: Path, template: str, at_validate: bool,
                                                   fragments: list[str]) -> None:
    spec = _bomb_spec(tmp_path, template)
    validated = _benchc("validate", spec)  # compiles and renders the template once (a sample item)
    if at_validate:
        _fails_with(validated, "mini.toml:24 prompt.template", *fragments)
    else:
        assert validated.returncode == 0, validated.stderr
    out = tmp_path / "manifest"
    message = _fails_with(_benchc("compile", spec, "-o", out, "--cache", tmp_path / "cache"),
                          "mini.toml:24 prompt.template", *fragments)
    assert at_validate or "template exceeds a sandbox limit" in message
    assert "range" not in template or re.search(STEPS, message), message
    assert not out.exists()


# --- every bounded construct, each in its own subprocess -----------------------------------------

SCRIPT = """
import json, sys
from benchc.compiler.templates import TemplateProblem, compile_template, render
for source in json.loads(sys.stdin.read()):
    try:
        print(json.dumps(["ok", render(compile_template(source), {"text": "abc"})[:200]]), flush=True)
    except TemplateProblem as exc:
        print(json.dumps(["problem", str(exc)]), flush=True)
"""

LIMITED = [
    ("{{ (9**999999999) % 7 }}", "'**' would make a number"),
    ("{{ 10 ** (10 ** 10) }}", "'**' would make a number"),
    ("{{ 'a' * 10**10 }}", "'*' would repeat a text"),
    ("{{ [0] * 10**10 }}", "'*' would repeat a list"),
    ("{{ (10**4000) * (10**4000) }}", "'*' would make a number of over 4,300 digits"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", STEPS),
    ("{% for i in range(1000) %}{% for c in 'x' * 100000 %}{% endfor %}{% endfor %}", STEPS),
    ("{{ lipsum(10**8) }}", "'lipsum' is undefined"),
    ("{{ range(10**9)|list }}", "range() of 1,000,000,000 numbers (limit 100,000)"),
    ("{{ 'x'.ljust(10**9) }}", "str.ljust() width 1,000,000,000"),
    ("{{ 'x'.center(10**9) }}", "str.center() width"),
    ("{{ ('x'|safe).rjust(10**9) }}", "Markup.rjust() width"),
    ("{{ 'x'|center(10**9) }}", "filter 'center' width"),
    ("{{ '%1000000000d' % 5 }}", "'%' formatting would pad"),
    ("{{ '%s'|format('x') ~ '%1000000000s'|format('y') }}", "filter 'format' would pad"),
    ("{{ '{:>1000000000}'.format(1) }}", "str.format() would make a text"),
    ("{{ '{0:{1}}'.format(1, 10**9) }}", "str.format() would make a text"),
    ("{{ ('x' * 1000000).replace('x', 'yy') }}", "str.replace() would make a text"),
    ("{{ ('x' * 1000000)|replace('x', 'yy') }}", "filter 'replace' would make a text"),
    ("{{ ('x' * 999999)|indent(10**6, first=true) }}", "filter 'indent' would make a text"),
    ("{{ 5|round(-10**9) }}", "filter 'round' precision"),
    ("{{ (5).to_bytes(10**10, 'big') }}", "int.to_bytes() length"),
    ("{{ [1]|batch(10**10, 0)|list }}", "filter 'batch' line count"),
    ("{{ ['x' * 999999] * 1000 }}", "an output would make a text of over 1,000,000 characters"),
    ("{{ (['x' * 999999] * 1000)|join }}", "filter 'join' would make a text"),
    ("{{ ('x' * 999999)|join('y' * 999999) }}", "filter 'join' would make a text"),
    ("{{ ', '.join(['x' * 999999] * 1000) }}", "join() would make a text"),
    ("{{ (['x' * 999] * 999)|tojson(indent=10**5) }}", "filter 'tojson' would make a text"),
    ("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
     "'~' would make a text"),
    ("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
     "'+' would make"),
    ("{% set ns = namespace(a=[1]) %}{% for i in range(1000) %}{% set ns.a = [ns.a] * 999999 %}{% endfor %}",
     "made or inspected over 20,000,000 elements"),
    ("{% for i in range(100) %}{{ 'x' * 100000 }}{% endfor %}", "the rendered text is over 1,000,000 characters"),
    ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}", STEPS),
    ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recurses too deeply"),
    ("{% for x in [0] recursive %}{% if x < 4 %}{{ loop([x + 1] * 100) }}{% endif %}{% endfor %}", STEPS),
    ("{{ " + "(" * 500 + "1" + ")" * 500 + " }}", "nests too deeply"),
]


@pytest.mark.parametrize(("source", "fragment"), LIMITED, ids=[f"{i:02d}" for i in range(len(LIMITED))])
def test_every_bounded_construct_fails_fast_with_a_clear_message(source: str, fragment: str) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], input=json.dumps([source]), cwd=ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    [(status, message)] = [json.loads(line) for line in done.stdout.splitlines()]
    assert status == "problem", message
    assert re.search(STEPS, message) if fragment == STEPS else fragment in message, message


# --- the sandbox still blocks the classic escapes and renders ordinary templates as before ---------

ESCAPES = [
    "{{ ''.__class__.__mro__ }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ ().__class__.__base__.__subclasses__() }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ joiner.__init__.__globals__.os }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ lipsum.__globals__ }}",
    "{{ range.__globals__ }}",
    "{{ self.__init__.__globals__ }}",
    "{{ ''|attr('__class__') }}",
    "{{ '{0.__class__.__mro__}'.format('') }}",
    "{{ dict.mro() }}",
    "{% set x = {} %}{{ x.update(a=1) }}",
    "{{ (range(3)|map('string')).gi_frame }}",
    "{{ '%s'.__mod__ }}",
    "{{ text.__class__ }}",
]


@pytest.mark.parametrize("source", ESCAPES)
def test_the_classic_escapes_stay_blocked(source: str) -> None:
    with pytest.raises(TemplateProblem, match="template tried an unsafe operation|'lipsum' is undefined"):
        render(compile_template(source), {"text": "abc"})


ORDINARY = [
    ("Q: {{ record.q }}", "Q: What is 2+2?"),
    ("{% for i in record['items'] %}{{ loop.index }}={{ i }}{% if not loop.last %}, {% endif %}{% endfor %}",
     "1=3, 2=1, 3=2"),
    ("{{ record['items']|sort|join('-') }} {{ record.d|dictsort }} {{ record.d|tojson }}",
     "1-2-3 [('a', 1), ('b', 2)] {\"a\": 1, \"b\": 2}"),
    ("{{ '%s has %d' % (text, 3) }} {{ '{0}-{1:>4}'.format(text, 7) }} {{ text ~ 1 ~ [2] }}",
     "abc has 3 abc-   7 abc1[2]"),
    ("{{ 2 ** 10 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 'ab' * 2 }} {{ [0] * 2 }} {{ 3.14159|round(2) }} {{ 10 ** 100 > 1 }}",
     "1024 3 1 abab [0, 0] 3.14 True"),
    ("{% macro m(x) %}<{{ x }}>{% endmacro %}{% for c in 'ab' %}{{ m(c) }}{% else %}none{% endfor %}"
     "{% for x in [] %}{% else %}|empty{% endfor %}", "<a><b>|empty"),
    ("{% set ns = namespace(acc=[]) %}{% for i in range(4) %}{% set ns.acc = ns.acc + [i * i] %}{% endfor %}"
     "{{ ns.acc }} {{ ns.acc|sum }}", "[0, 1, 4, 9] 14"),
    ("{{ answer|number }} {{ 'none'|number }} {{ text|upper|center(7) }}.", "4 none   ABC  ."),
]


@pytest.mark.parametrize(("source", "expected"), ORDINARY)
def test_ordinary_templates_render_as_before(source: str, expected: str) -> None:
    context = {"record": {"q": "What is 2+2?", "items": [3, 1, 2], "d": {"b": 2, "a": 1}}, "text": "abc",
               "answer": "I think it is four."}
    assert render(compile_template(source), context) == expected


def test_the_undefined_and_error_messages_are_unchanged() -> None:
    with pytest.raises(TemplateProblem, match="undefined variable in template: 'nope' is undefined"):
        render(compile_template("{% for x in nope %}{% endfor %}"), {})
    with pytest.raises(TemplateProblem, match="template failed to render: division by zero"):
        render(compile_template("{{ 1 / 0 }}"), {})


# --- PATH@REV: a revision is never a git option ---------------------------------------------------


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True, timeout=TIMEOUT)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    write_mini(repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "mini.toml")
    _git(repo, "commit", "-q", "-m", "v1")
    return repo


def test_an_option_as_revision_writes_nothing_and_exits_2(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "OUT"
    (tmp_path / "OUT:.").mkdir()  # git show --output=OUT:./mini.toml would write into it
    spec = repo / "mini.toml"
    done = _benchc("diff", f"{spec}@--output={target}", spec, "--spec-only")
    _fails_with(done, "is not a git revision")
    assert not target.exists() and not any((tmp_path / "OUT:.").iterdir())
    done = _benchc("diff", f"{spec}@no-such-rev", spec, "--spec-only")
    _fails_with(done, "cannot read mini.toml at revision 'no-such-rev'")


def test_every_git_call_ends_its_options_and_the_revision_is_verified_first(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    real_run = subprocess.run

    def recording_run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        return real_run(argv, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", recording_run)
    assert "[benchmark]" in git_show(repo / "mini.toml", "HEAD", "mini.toml@HEAD")
    assert [c[3] for c in calls] == ["rev-parse", "show"]
    assert calls[0][4:] == ["--verify", "--quiet", "--end-of-options", "HEAD^{commit}"]
    for call in calls:
        assert "--end-of-options" in call and call.index("--end-of-options") == len(call) - 2
    calls.clear()
    with pytest.raises(DiffError, match="cannot read mini.toml at revision 'HEAD~9'"):
        git_show(repo / "mini.toml", "HEAD~9", "mini.toml@HEAD~9")
    assert [c[3] for c in calls] == ["rev-parse"]  # nothing else ran


@pytest.mark.parametrize("rev", ["--output=x", "-p", "--exec=touch x", "a\nb"])
def test_option_like_revisions_are_refused_before_git_runs(rev: str, repo: Path) -> None:
    with pytest.raises(DiffError, match="is not a git revision"):
        parse_ref(f"{repo / 'mini.toml'}@{rev}")
    with pytest.raises(DiffError, match="is not a git revision"):
        diff_inputs.verify_revision(repo, rev, "label", "mini.toml")
    assert len(diff_inputs.verify_revision(repo, "HEAD", "label", "mini.toml")) == 40


def test_a_bomb_fed_by_a_record_field_is_refused_by_validate_data(tmp_path: Path) -> None:
    spec = _bomb_spec(tmp_path, "{{ record.text * 10**9 }}")
    assert _benchc("validate", spec).returncode == 0  # no record yet: nothing to repeat
    _fails_with(_benchc("validate", spec, "--data"), "mini.toml:24 prompt.template",
                "'*' would repeat a text to", "a sample render for record")


# --- symlinks out of the data roots ------------------------------------------------------------

IMAGE_SPEC = """\
[benchmark]
name = "test/photos"
version = "1.0.0"
seed = 0

[source]
loader = "image_folder"
folder = "photos"

[[node]]
id = "original"
op = "image.original"
input = "image"

[[node]]
id = "rotated"
op = "image.rotate"
input = "image"
params.angle = { grid = [90] }

[prompt]
template = "Describe this image."

[[metric]]
name = "general.consistency"
over = "perturbation"
reference = "original"
"""

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32",
                                    reason="symlinks are needed")


@needs_symlinks
@pytest.mark.skipif(not Path("/etc/hostname").is_file(), reason="needs /etc/hostname")
def test_a_symlink_out_of_an_image_folder_is_refused(tmp_path: Path) -> None:
    write_image(tmp_path / "photos" / "a.png", (1, 2, 3))
    (tmp_path / "photos" / "leak.png").symlink_to("/etc/hostname")
    spec = tmp_path / "photos.toml"
    spec.write_text(IMAGE_SPEC)
    out = tmp_path / "manifest"
    _fails_with(_benchc("compile", spec, "-o", out, "--cache", tmp_path / "cache"),
                "source.folder", "'photos/leak.png' is a symlink to /etc/hostname, outside the data roots")
    assert not out.exists()
    _fails_with(_benchc("validate", spec, "--data"), "source.folder", "outside the data roots")


def _image_and_a_link_out(tmp_path: Path, folder: str) -> Path:
    """root/``folder``/a.png, and b.png beside it a symlink to outside/b.png (both under
    ``tmp_path``); returns the root."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    write_image(root / folder / "a.png", (1, 2, 3))
    write_image(outside / "b.png", (4, 5, 6))
    (root / folder / "b.png").symlink_to(outside / "b.png")
    return root


@needs_symlinks
def test_a_symlink_to_an_image_outside_the_roots_is_never_read(tmp_path: Path) -> None:
    root = _image_and_a_link_out(tmp_path, "photos")
    with pytest.raises(SourceError, match="'photos/b.png' is a symlink to .*outside the data roots"):
        load("image_folder", root, folder="photos")
    (root / "photos" / "b.png").unlink()
    (root / "photos" / "inner.png").symlink_to(root / "photos" / "a.png")  # inside the roots: fine
    loaded, _ = load("image_folder", root, folder="photos")
    assert [r.id for r in loaded.records] == ["a.png", "inner.png"]


@needs_symlinks
def test_a_spec_path_through_a_symlink_must_stay_in_the_roots(tmp_path: Path) -> None:
    spec_dir, data_root, outside = tmp_path / "spec", tmp_path / "data", tmp_path / "outside"
    for folder in (spec_dir, data_root, outside):
        folder.mkdir()
    (outside / "t.csv").write_text("a\n")
    (data_root / "t.csv").write_text("a\n")
    (spec_dir / "leak").symlink_to(outside)
    (spec_dir / "shared").symlink_to(data_root)
    with pytest.raises(SourceError, match="escapes the data roots through a symlink"):
        resolve_in_roots("leak/t.csv", [spec_dir, data_root], "source.path")
    # a link from one data root into another stays inside the roots
    assert resolve_in_roots("shared/t.csv", [spec_dir, data_root], "source.path") == (data_root / "t.csv").resolve()
    with pytest.raises(SourceError, match="escapes the data roots"):
        resolve_in_roots("shared/t.csv", [spec_dir], "source.path")


@needs_symlinks
def test_an_image_a_table_names_through_a_symlink_out_of_the_roots_is_never_read(tmp_path: Path) -> None:
    root = _image_and_a_link_out(tmp_path, "images")
    (root / "rows.csv").write_text("id,image,question\n1,a.png,q1\n2,b.png,q2\n")
    params = {"path": "rows.csv", "id": "id", "image_column": "image", "images": "images"}
    # not a bad row that on_error = "skip" could pass over: the load stops
    for on_error in ("fail", "skip"):
        with pytest.raises(SourceError, match="'b.png' is a symlink to .*outside the data roots"):
            load("table", root, on_error=on_error, **params)
    (root / "images" / "b.png").unlink()
    (root / "images" / "b.png").symlink_to(root / "images" / "a.png")  # inside the roots: fine
    loaded, _ = load("table", root, **params)
    assert [r.id for r in loaded.records] == ["1", "2"]


@needs_symlinks
def test_a_dataset_folder_with_a_shard_linked_out_of_the_roots_is_refused_before_reading(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "ds").mkdir(parents=True)
    outside.mkdir()
    pl.DataFrame({"id": ["1"], "question": ["q"]}).write_parquet(root / "ds" / "train-00000-of-00002.parquet")
    pl.DataFrame({"id": ["2"], "question": ["r"]}).write_parquet(outside / "secret.parquet")
    (root / "ds" / "train-00001-of-00002.parquet").symlink_to(outside / "secret.parquet")
    with pytest.raises(SourceError, match="'ds/train-00001-of-00002.parquet' is a symlink to .*outside"):
        load("hf_dataset", root, path="ds", split="train", id="id")
    # with the linked folder as a data root too, the same dataset loads
    loader = SOURCES.get("hf_dataset")
    ctx = SourceContext(roots=[root, outside], store=ContentStore(root / ".store"), on_error="fail")
    loaded = loader.load(loader.Params(path="ds", split="train", id="id"), ctx)
    assert [r.id for r in loaded.records] == ["1", "2"]
