"""Edited copies of saved model folders, for tests that a fingerprint follows a folder's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def copy_with(folder: Path, dest: Path, file: str, **changes: object) -> Path:
    """A copy of a model folder with keys of one JSON file changed. transformers 5.x saves a
    processor's image processor or feature extractor settings inside processor_config.json, where
    4.x writes preprocessor_config.json: those keys are changed where the folder keeps them."""
    shutil.copytree(folder, dest)
    if file == "preprocessor_config.json" and not (dest / file).exists():
        data = json.loads((dest / "processor_config.json").read_text())
        part = next(k for k in ("image_processor", "feature_extractor") if k in data)
        data[part] = {**data[part], **changes}
        (dest / "processor_config.json").write_text(json.dumps(data))
        return dest
    data = json.loads((dest / file).read_text())
    (dest / file).write_text(json.dumps({**data, **changes}))
    return dest
