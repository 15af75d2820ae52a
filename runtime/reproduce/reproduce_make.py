"""How a paper file's run is made when its folder does not exist yet: ``[run.make]``.

A paper file pins each run by spec name, version and manifest digest. With a ``make`` recipe,
``benchc reproduce`` in a fresh clone compiles the spec and runs it (answers come from the
response store when it has them, from the backend otherwise) instead of failing, and then
checks the result against the recorded hashes like any other run::

    [[run]]
    id = "espeak"
    path = "../out/demo/run"
    spec = "mmcbench/text2speech"
    version = "2.0.0"

    [run.make]
    spec_file = "../specs/mmcbench/text2speech.toml"
    model = "espeak"
    set = ["sample.n=2", "sample.stratify=table"]
    manifest = "../out/demo/manifest"   # default: <path>.manifest beside the run folder

A recipe with ``answers`` imports a file of answers made elsewhere (``benchc import``: JSONL or
CSV keyed by item id or rendered prompt, or lm-eval/lmms-eval samples) instead of running a
backend, so a paper file can pin the published answers of a model this machine cannot run::

    [run.make]
    spec_file = "../specs/mm_r3/question_rephrasing.toml"
    answers = "mm_r3/answers/llava.jsonl"
    key = "prompt"
    model = "LLaVA-1.5-7B"       # with answers: the name the scores and the report give

An existing run folder is never remade or touched: a recipe only fills in what is missing.
The compile and the run themselves are the API's (``benchc.api``); this module only says what
to make and where, so the runtime does not import the API layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..run.runfolder import RUN_FILE


class RunRecipe(BaseModel):
    """``[run.make]``: the compile + run that produce a paper's run."""

    model_config = ConfigDict(extra="forbid", strict=True)

    spec_file: str = Field(description="the spec (.toml), relative to the paper file")
    model: str | None = Field(None, description="the backend, as `benchc run --model` takes it")
    backends: dict[str, str] = Field(default_factory=dict, description="stage id -> backend (`--backend`)")
    set: list[str] = Field(default_factory=list, description="`--set KEY=VALUE` overrides of the compile")
    workers: int = Field(1, ge=1, le=256, description="workers of the compile and the run")
    manifest: str | None = Field(None, description="where the manifest goes (default: <path>.manifest)")
    data_roots: list[str] = Field(default_factory=list, description="`--data-root` folders, relative to the paper")
    answers: str | None = Field(None, description="import these answers (`benchc import`) instead of running a backend")
    key: Literal["id", "prompt"] = Field("id", description="with answers: match rows by item id or rendered prompt")

    @model_validator(mode="after")
    def _answers_need_no_backend(self) -> RunRecipe:
        if self.answers is not None and self.backends:
            raise ValueError("`answers` imports a run: it takes no `backends` (the stage's answers are in the file)")
        return self


@dataclass(frozen=True)
class MakeOrder:
    """A run to make, with every path resolved against the paper file's folder."""

    run_id: str
    spec_file: Path
    manifest_dir: Path
    run_dir: Path
    model: str | None
    backends: dict[str, str]
    overrides: list[str]
    workers: int
    data_roots: list[Path]
    cache_dir: Path | None
    store_dir: Path | None
    answers: Path | None = None
    key: str = "id"


MakeRun = Callable[[MakeOrder], None]


def is_missing(run_dir: Path) -> bool:
    """A run folder that was never written (no run record): only then is a recipe used."""
    return not (run_dir / RUN_FILE).is_file()


def make_order(run_id: str, recipe: RunRecipe, run_dir: Path, folder: Path,
               cache: str | None, store: str | None) -> MakeOrder:
    manifest = folder / recipe.manifest if recipe.manifest else run_dir.with_name(run_dir.name + ".manifest")
    return MakeOrder(run_id, folder / recipe.spec_file, manifest, run_dir, recipe.model, dict(recipe.backends),
                     list(recipe.set), recipe.workers, [folder / p for p in recipe.data_roots],
                     folder / cache if cache else None, folder / store if store else None,
                     folder / recipe.answers if recipe.answers else None, recipe.key)
