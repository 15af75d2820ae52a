"""``benchc new TASK.yaml``: a consistency spec written from an lm-eval task (issue 29).

The task YAML (with its ``include:`` chain, as the ``lm_eval_task`` source reads it) gives the
source, the prompt (lm-eval's, few-shot included, with the perturbed field in its place:
``source.perturb``), ``[generation]`` from ``generation_kwargs``, a named answer rule per
``filter_list`` pipeline and an accuracy per rule and ``exact_match`` entry
(``compiler/lm_eval_rules.py``). What the spec adds is written out too, to be edited: the
question as asked and with typos, and consistency between them. What the task holds that benchc
does not reproduce exactly (another filter, another metric) is left out and said, in the spec's
header and on the command line; a task benchc cannot ask at all (Python functions, output types
other than generate_until and multiple_choice) is refused. A multiple-choice task gets a
``choice-loglik`` stage per metric it lists (``acc``, ``acc_norm``): its choices scored by
log-likelihood on a local causal LM, as lm-eval's ``hf`` model scores them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta

from .compiler.cas import ContentStore
from .compiler.errors import Problem
from .compiler.lm_eval_rules import Translated, choice_stages, translate
from .compiler.sources.base import SourceContext
from .compiler.sources.lm_eval_task import load_task_yaml, refuse_functions
from .scaffold import ScaffoldError

TASK_SUFFIXES = (".yaml", ".yml")
PREFERRED_FIELDS = ("question", "query", "prompt", "input", "text", "problem", "sentence")


def is_task_file(path: Path) -> bool:
    return Path(path).suffix.lower() in TASK_SUFFIXES


def scaffold_task(task: Path, out: Path, question: str | None = None) -> tuple[Path, list[str]]:
    """Write the spec for the lm-eval task at ``task`` to ``out``; return its path and what of
    the task was left out (each with its reason)."""
    if not task.is_file():
        raise ScaffoldError(Problem("no such task file" if not task.exists() else "not a regular file",
                                    file=str(task), hint="give the path of an lm-eval task .yaml"))
    relative = _relative(task, out)
    cfg = _task_config(task, out)
    output_type = cfg.get("output_type", "generate_until")
    if output_type not in ("generate_until", "multiple_choice"):
        raise ScaffoldError(Problem(
            f"output_type {output_type!r} is not written as a spec by benchc new", file=str(task), key="output_type",
            hint="generate_until and multiple_choice tasks are"))
    field = _perturbed_field(cfg, task, question)
    if output_type == "multiple_choice":
        text, left_out = _choice_spec(task, relative, cfg, field)
    else:
        text, left_out = _generate_spec(task, relative, cfg, field)
    try:
        with out.open("x", encoding="utf-8") as fh:  # never overwrite, even in a race
            fh.write(text)
    except FileExistsError:
        raise ScaffoldError(Problem("the file exists; benchc new never overwrites a file", file=str(out),
                                    key="--out")) from None
    return out, left_out


def _generate_spec(task: Path, relative: str, cfg: dict[str, Any], field: str) -> tuple[str, list[str]]:
    made = translate(cfg)
    if not made.answers or not made.correct:
        raise ScaffoldError(Problem("no filter pipeline and exact_match metric benchc reproduces exactly: "
                                    + "; ".join(made.left_out), file=str(task), key="filter_list"))
    return "\n".join(_spec_lines(task, relative, cfg, field, made)), made.left_out


def _choice_spec(task: Path, relative: str, cfg: dict[str, Any], field: str) -> tuple[str, list[str]]:
    stages, left_out = choice_stages(cfg)
    if not stages:
        raise ScaffoldError(Problem("no metric benchc computes for a multiple-choice task: " + "; ".join(left_out),
                                    file=str(task), key="metric_list"))
    return "\n".join(_choice_lines(task, relative, cfg, field, stages, left_out)), left_out


def _relative(task: Path, out: Path) -> str:
    if out.suffix != ".toml":
        raise ScaffoldError(Problem("a spec file must end in .toml", file=str(out), key="--out"))
    if out.exists() or out.is_symlink():
        raise ScaffoldError(Problem("the file exists; benchc new never overwrites a file", file=str(out),
                                    key="--out", hint="choose another name with -o, or delete the file first"))
    folder = out.parent.resolve()
    if not folder.is_dir():
        raise ScaffoldError(Problem(f"the folder {out.parent} does not exist", file=str(out), key="--out"))
    target = task.resolve()
    if folder not in target.parents:
        raise ScaffoldError(Problem(
            f"the task ({task}) is outside the spec's folder ({out.parent}); benchc reads a spec's files only "
            "from its folder (and --data-root folders)", file=str(out), key="--out",
            hint=f"write the spec in a folder that holds the task and its data, e.g. -o {task.parent / 'spec.toml'}"))
    return Path(os.path.relpath(target, folder)).as_posix()


def _task_config(task: Path, out: Path) -> dict[str, Any]:
    """The task's keys (its include chain merged), as the source reads them; a task with Python
    functions is refused here, as it would be at compile time."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="benchc-new-") as scratch:  # the loader's store: nothing is written
        ctx = SourceContext(roots=[out.parent.resolve()], store=ContentStore(Path(scratch)), spec_file=str(out))
        cfg = load_task_yaml(task.resolve(), ctx, [])
    refuse_functions(cfg)
    return cfg


def _perturbed_field(cfg: dict[str, Any], task: Path, given: str | None) -> str:
    """The document field the typos go into: ``--question``, else the one field doc_to_text
    reads (or the preferred one of several)."""
    if given is not None:
        return given
    source = cfg.get("doc_to_text")
    if not isinstance(source, str):
        raise ScaffoldError(Problem("doc_to_text is not a template or a field name", file=str(task),
                                    key="doc_to_text", hint="name the field to perturb with --question FIELD"))
    try:
        used = sorted(meta.find_undeclared_variables(jinja2.Environment().parse(source)))
    except jinja2.TemplateSyntaxError:
        used = []
    if not used:  # a field name: lm-eval's doc_to_text reads the field itself
        used = [source] if source.isidentifier() else []
    picked = used[0] if len(used) == 1 else next((f for f in PREFERRED_FIELDS if f in used), None)
    if picked is None:
        raise ScaffoldError(Problem(f"doc_to_text reads {', '.join(used) or 'no field'}: which one to perturb?",
                                    file=str(task), key="doc_to_text", hint="name it with --question FIELD"))
    return picked


def _toml(value: Any) -> str:
    """A TOML value: strings as basic strings (JSON's escapes are TOML's), lists, inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)


def _key(name: str) -> str:
    return name if name.replace("-", "").replace("_", "").isalnum() else _toml(name)


def _header(task: Path, relative: str, cfg: dict[str, Any], field: str, what: str,
            left_out: list[str]) -> list[str]:
    """The spec's header, [benchmark], [source], the typo nodes and lm-eval's prompt."""
    name = str(cfg.get("task", task.stem))
    return [f"# {name} (lm-eval task {relative}) as a consistency benchmark, written by `benchc new`:",
            f"# lm-eval's prompts, {what}, with typos in the {field!r} field.",
            "# Edit it freely: add perturbations as [[node]]s, metrics as [[metric]]s.",
            *(["# Left out (benchc does not reproduce them exactly):"] + [f"#   - {w}" for w in left_out]
              if left_out else []),
            "", "[benchmark]", f"name = {_toml('lm-eval/' + name)}", 'version = "0.1.0"', "seed = 0",
            f"description = {_toml(f'lm-eval task {name}, with typos in the {field} field')}", "",
            "# the task as lm-eval reads it (its data on disk, as its dataset_kwargs name it)",
            "[source]", 'loader = "lm_eval_task"', f"task = {_toml(relative)}",
            f"perturb = {_toml(field)}    # the prompt around this field: lm_eval.before / lm_eval.after", "",
            "[[node]]", 'id = "question"', 'op = "text.field"', 'input = "record"', f"params.field = {_toml(field)}",
            "", "[[node]]", 'id = "original"', 'op = "text.original"', 'input = "question"', "",
            "[[node]]", 'id = "typos"', 'op = "text.typos"', 'input = "question"', "params.rate = 0.2",
            'params.kind = "keyboard"', "",
            "# lm-eval's prompt (description, few-shot examples, doc_to_text) with the item's text in place",
            "[prompt]", 'template = "{{ record.lm_eval.before }}{{ text }}{{ record.lm_eval.after }}"', ""]


EXACT_CHOICE = {"rule": "lm_eval_exact", "ignore_case": False, "ignore_punctuation": False}
"""A chosen choice is right when it is the gold choice's text, exactly (choices may differ only
in case or punctuation)."""


def _choice_lines(task: Path, relative: str, cfg: dict[str, Any], field: str, stages: dict[str, str],
                  left_out: list[str]) -> list[str]:
    delimiter = cfg.get("target_delimiter", " ")
    lines = _header(task, relative, cfg, field, "choices scored by log-likelihood (" + ", ".join(stages) + ")",
                    left_out)
    for stage, choose_by in stages.items():
        lines += [f"# {stage}: each of doc_to_choice scored after target_delimiter; needs a local causal LM (hf)",
                  "[[stage]]", f"id = {_toml(stage)}", 'task = "choice-loglik"', 'choices = "lm_eval.choices"',
                  f"delimiter = {_toml(delimiter)}", f"choose_by = {_toml(choose_by)}", ""]
    for stage in stages:
        lines += [f"# lm-eval's {stage}", "[[metric]]", 'name = "general.accuracy"', f"stage = {_toml(stage)}",
                  'target = "lm_eval.targets"', 'by = ["perturbation"]', f"correct = {_toml(EXACT_CHOICE)}", ""]
    first = next(iter(stages))
    lines += [f"# does the chosen answer survive the typos? ({first})", "[[metric]]", 'name = "general.consistency"',
              f"stage = {_toml(first)}", 'by = ["perturbation"]', 'match = "exact"', ""]
    return lines


def _spec_lines(task: Path, relative: str, cfg: dict[str, Any], field: str, made: Translated) -> list[str]:
    rules = list(made.answers)
    lines = [*_header(task, relative, cfg, field, "answer filters and exact_match", made.left_out),
             "# generation_kwargs", "[generation]", *(f"{k} = {_toml(v)}" for k, v in made.generation.items()), ""]
    for rule, table in made.answers.items():
        lines += [f"# filter_list {rule!r}", f"[answers.{_key(rule)}]",
                  *(f"{k} = {_toml(v)}" for k, v in table.items()), ""]
    for rule in rules:
        for correct in made.correct:
            lines += [f"# exact_match read by {rule!r}", "[[metric]]", 'name = "general.accuracy"',
                      f"answer = {_toml(rule)}", 'target = "lm_eval.targets"', 'by = ["perturbation"]',
                      f"correct = {_toml(correct)}", ""]
    lines += [f"# does the answer survive the typos? read by {rules[0]!r}, compared as read",
              "[[metric]]", 'name = "general.consistency"', f"answer = {_toml(rules[0])}", 'by = ["perturbation"]',
              'match = "exact"', ""]
    return lines
