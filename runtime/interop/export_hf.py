"""``benchc export --format hf-datasets``: the examples as a ``datasets.DatasetDict`` on disk
(``save_to_disk``), one dataset per split. Needs the ``datasets`` library (a dependency of
benchc for the ``hf_dataset`` source); without it the format fails with one message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...compiler.errors import BenchcError, Problem

if TYPE_CHECKING:
    from .export_items import Example


def hf_datasets_writer() -> Callable[[list[Example], Any, Path], None]:
    try:
        import datasets
    except ImportError:
        raise BenchcError(Problem("--format hf-datasets needs the `datasets` library, which is not installed",
                                  key="--format", hint="pip install datasets, or export llava, sharegpt or "
                                                       "jsonl")) from None

    media_type = datasets.Value("string")
    features = datasets.Features({
        "id": datasets.Value("string"), "system": datasets.Value("string"), "prompt": datasets.Value("string"),
        "target": datasets.Value("string"), "images": datasets.Sequence(media_type),
        "audios": datasets.Sequence(media_type), "attrs": datasets.Value("string")})

    def write(found: list[Example], refs: Any, root: Path) -> None:  # refs: export's media refs
        splits: dict[str, list[dict[str, Any]]] = {}
        for example in found:
            splits.setdefault(example.split, []).append({
                "id": example.id, "system": example.system, "prompt": example.prompt, "target": example.target,
                "images": refs.of(example, "image"), "audios": refs.of(example, "audio"),
                "attrs": json.dumps(example.attrs, sort_keys=True, ensure_ascii=False)})
        dataset = datasets.DatasetDict({name: datasets.Dataset.from_list(rows, features=features)
                                        for name, rows in sorted(splits.items())})
        bars = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()  # stderr is for messages; the folder appears in one step anyway
        try:
            dataset.save_to_disk(str(root / "dataset"))
        finally:
            if bars:
                datasets.enable_progress_bars()

    return write
