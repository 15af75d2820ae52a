"""An lm-eval task's answer filters, metrics and generation settings as benchc spec tables
(issue 29): each ``filter_list`` pipeline as a named answer rule (``[answers.NAME]``), each
``exact_match`` of ``metric_list`` as a ``correct = { rule = "lm_eval_exact", ... }`` table,
``generation_kwargs`` as ``[generation]``. Only what benchc reproduces exactly is translated
(lm-eval 0.4.13, lm_eval/filters/extraction.py RegexFilter and selection.py TakeFirstFilter;
lm_eval/api/metrics.py exact_match_hf_evaluate); anything else is returned as a reason, for the
caller to say, never approximated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

LM_EVAL_REGEX_DEFAULT = r"#### (\-?[0-9\.\,]+)"
"""RegexFilter's default ``regex_pattern`` (lm-eval 0.4.13)."""
EXACT_MATCH_FLAGS = ("ignore_case", "ignore_punctuation", "ignore_numbers", "regexes_to_ignore")
LM_EVAL_MAX_GEN_TOKS = 256
"""lm-eval's ``max_gen_toks`` when ``generation_kwargs`` gives none (TemplateAPI and HFLM)."""
MAX_STOP = 16


@dataclass
class Translated:
    """Spec tables made from a task, and what could not be made, with the reason."""

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    correct: list[dict[str, Any]] = field(default_factory=list)  # one per exact_match entry
    generation: dict[str, Any] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)


def answer_rule(pipeline: list[Any]) -> dict[str, Any] | str:
    """One filter pipeline as an ``[answers.NAME]`` table, or why it cannot be one. take_first is
    benchc's reading (one answer per request); regex with group_select 0 or -1 is the regex step
    with ``select`` first or last. Answers are read as written (``strip = false``, no echo
    dropping), as lm-eval reads them."""
    functions = [step.get("function") if isinstance(step, dict) else None for step in pipeline]
    unknown = [str(f) for f in functions if f not in ("regex", "take_first", *TEXT_FILTERS)]
    if unknown:
        return (f"the filter {unknown[0]!r} has no exact benchc step (regex, take_first, "
                f"{', '.join(TEXT_FILTERS)} have)")
    regexes = [step for step in pipeline if step.get("function") == "regex"]
    if len(regexes) > 1:
        return "two regex filters in one pipeline"
    rule: dict[str, Any] = {}
    if regexes:
        regex = _regex_rule(regexes[0])
        if isinstance(regex, str):
            return regex
        rule = regex
    steps = [TEXT_FILTERS.get(str(f), "regex") for f in functions if f != "take_first"]
    if steps:
        rule = {"extract": steps, **rule}
    return {**rule, "strip": False, "drop_echo": False}


TEXT_FILTERS = {"lowercase": "lowercase", "uppercase": "uppercase", "remove_whitespace": "trim"}
"""lm-eval filters that are a benchc step as they are (lm_eval/filters/transformation.py
LowercaseFilter, UppercaseFilter; extraction.py WhitespaceFilter: ``resp.strip()``)."""


def _regex_rule(step: dict[str, Any]) -> dict[str, Any] | str:
    """RegexFilter's pattern and group_select as the regex step's keys."""
    select = {0: "first", -1: "last"}.get(step.get("group_select", 0))
    if select is None:
        return f"group_select {step.get('group_select')!r} (benchc reads the first or the last match)"
    pattern = str(step.get("regex_pattern", LM_EVAL_REGEX_DEFAULT))
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"regex_pattern is not a regular expression: {exc}"
    return {"pattern": pattern, **({"select": "last"} if select == "last" else {})}


def correct_table(entry: dict[str, Any]) -> dict[str, Any] | str:
    """An ``exact_match`` entry of ``metric_list`` as a ``correct`` table (lm-eval's defaults:
    every flag off), or why it cannot be one."""
    if entry.get("metric") != "exact_match":
        return f"the metric {entry.get('metric')!r} (benchc translates exact_match)"
    if entry.get("aggregation", "mean") != "mean":
        return f"exact_match aggregated by {entry.get('aggregation')!r} (benchc's accuracy is the mean)"
    table: dict[str, Any] = {"rule": "lm_eval_exact", "ignore_case": False, "ignore_punctuation": False}
    for flag in EXACT_MATCH_FLAGS:
        if flag in entry and entry[flag] is not None:
            table[flag] = entry[flag]
    return table


def generation(kwargs: Any) -> dict[str, Any] | str:
    """``generation_kwargs`` as ``[generation]``: until -> stop, max_gen_toks -> max_new_tokens
    (lm-eval's 256 when absent), greedy unless do_sample with a temperature."""
    kwargs = dict(kwargs or {})
    until = kwargs.pop("until", [])
    until = [until] if isinstance(until, str) else list(until or [])
    if len(until) > MAX_STOP:
        return f"{len(until)} stop texts (until); benchc sends at most {MAX_STOP}"
    out: dict[str, Any] = {"max_new_tokens": int(kwargs.pop("max_gen_toks", LM_EVAL_MAX_GEN_TOKS)), "stop": until}
    sample = bool(kwargs.pop("do_sample", False))
    temperature = float(kwargs.pop("temperature", 0.0) or 0.0)
    out["temperature"] = temperature if sample else 0.0
    if "top_p" in kwargs:
        out["top_p"] = float(kwargs.pop("top_p"))
    if kwargs:
        return f"generation_kwargs {', '.join(sorted(kwargs))} (benchc sends until, max_gen_toks, do_sample, " \
               "temperature, top_p)"
    return out


def translate(cfg: dict[str, Any]) -> Translated:
    """The task's filters, exact_match metrics and generation settings as spec tables."""
    out = Translated()
    pipelines = cfg.get("filter_list") or [{"name": "none", "filter": [{"function": "take_first"}]}]
    for pipeline in pipelines:
        name = str(pipeline.get("name", "none"))
        rule = answer_rule(list(pipeline.get("filter") or []))
        if isinstance(rule, str):
            out.left_out.append(f"filter {name!r}: {rule}")
        else:
            out.answers[name] = rule
    for entry in cfg.get("metric_list") or [{"metric": "exact_match"}]:
        table = correct_table(entry if isinstance(entry, dict) else {"metric": entry})
        if isinstance(table, str):
            out.left_out.append(table)
        else:
            out.correct.append(table)
    made = generation(cfg.get("generation_kwargs"))
    if isinstance(made, str):
        out.left_out.append(made)
    else:
        out.generation = made
    return out


CHOICE_METRICS = {"acc": "loglik", "acc_norm": "loglik_per_char"}
"""A multiple_choice task's metrics benchc computes, each as a choice-loglik stage's ``choose_by``
(lm_eval/api/task.py ConfigurableTask.process_results: argmax of the log-likelihoods, and of
them over each choice's length in characters)."""

DEFAULT_CHOICE_METRICS = ("acc", "acc_norm")
"""lm_eval/api/registry.py DEFAULT_METRIC_REGISTRY["multiple_choice"]: a task without metric_list."""


def choice_stages(cfg: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """A multiple_choice task's ``metric_list`` as choice-loglik stages (stage id -> choose_by),
    and what is left out, each with its reason."""
    stages: dict[str, str] = {}
    left_out: list[str] = []
    for entry in cfg.get("metric_list") or [{"metric": m} for m in DEFAULT_CHOICE_METRICS]:
        name = entry.get("metric") if isinstance(entry, dict) else entry
        if name in CHOICE_METRICS:
            stages[str(name)] = CHOICE_METRICS[str(name)]
        else:
            left_out.append(f"the metric {name!r} (benchc computes acc and acc_norm of a multiple-choice task)")
    return stages, left_out
