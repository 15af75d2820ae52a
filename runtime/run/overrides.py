"""``--backend STAGE=BACKEND``: parsed and checked against the spec's stages before any request.

Every problem (malformed value, unknown stage, unknown backend, a backend that cannot do the
stage's task) is collected and raised as one error, so a typo costs no model load.
"""

from __future__ import annotations

from collections.abc import Iterable

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.registry import did_you_mean
from benchc.compiler.spec.models import Stage

from ..backends import BACKENDS, BackendSpec

FLAG = "--backend"
EXAMPLE = "--backend transcript=pocketsphinx"


def parse_backend_overrides(values: Iterable[str]) -> dict[str, str]:
    """``["STAGE=BACKEND", ...]`` -> ``{stage: backend}``; a value without ``=`` (or with an
    empty side) or a stage given twice is refused."""
    out: dict[str, str] = {}
    problems = []
    for value in values:
        stage, sep, backend = (part.strip() for part in value.partition("="))
        if not sep or not stage or not backend:
            problems.append(Problem(f"{value!r} is not STAGE=BACKEND", key=FLAG, hint=f"for example {EXAMPLE}"))
        elif stage in out:
            problems.append(Problem(f"stage {stage!r} is given twice", key=FLAG, hint="give each stage once"))
        else:
            out[stage] = backend
    if problems:
        raise BackendError(problems)
    return out


def check_backend_overrides(overrides: dict[str, str], stages: list[Stage]) -> None:
    """Refuse unknown stage ids and unknown or unfit backends (``model`` is always allowed)."""
    by_id = {s.id: s for s in stages}
    problems = []
    for stage_id, backend in overrides.items():
        stage = by_id.get(stage_id)
        if stage is None:
            close = did_you_mean(stage_id, list(by_id))
            stage_list = f"stages: {', '.join(by_id)}"
            problems.append(Problem(f"{stage_id}={backend}: no stage {stage_id!r} in this benchmark", key=FLAG,
                                    hint=f"{close} {stage_list}" if close else stage_list))
        elif backend != "model":
            problem = _backend_problem(stage, backend)
            if problem is not None:
                problems.append(problem)
    if problems:
        raise BackendError(problems)


def _backend_problem(stage: Stage, backend: str) -> Problem | None:
    try:
        name = BackendSpec.parse(backend).name
    except BackendError as exc:
        return Problem(f"{stage.id}={backend}: {exc.problems[0].message}", key=FLAG, hint=exc.problems[0].hint)
    if name not in BACKENDS:
        unknown = BACKENDS.unknown(name)
        return Problem(f"{stage.id}={backend}: {unknown.message}", key=FLAG, hint=unknown.hint)
    tasks = BACKENDS.get(name).tasks
    if stage.task not in tasks:
        return Problem(f"{stage.id}={backend}: backend {name!r} cannot do {stage.task!r} (stage {stage.id!r})",
                       key=FLAG, hint=f"it does: {', '.join(sorted(tasks))}")
    return None
