"""A small image project for the training-data tests: a JSON Lines table of questions about
generated images (three questions an image), compiled by a spec with [split]."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

SPEC = """
[benchmark]
name = "t/{name}"
version = "1.0.0"

[source]
loader = "table"
path = "rows.jsonl"
id = "id"
image_column = "image"
images = "images"

[split]
key = "image_id"
fractions = {{ train = 0.5, test = 0.5 }}
keep = {keep}
{extra}

[[node]]
id = "original"
op = "image.original"
input = "image"

[[node]]
id = "gray"
op = "image.grayscale"
input = "image"

[prompt]
system = "Answer briefly."
template = "{{{{ record.question }}}}"

[[metric]]
name = "general.accuracy"
target = "answer"
"""


def write_images(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        rng = np.random.default_rng(index)
        pixels = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"{index}.png")


def write_project(folder: Path, name: str = "train", keep: str = '["train"]', extra: str = "",
                  images: int = 6) -> Path:
    """rows.jsonl (3 questions on each of ``images`` images), images/, and ``<name>.toml``."""
    write_images(folder / "images", images)
    rows = [{"id": f"q{3 * i + k}", "image": f"{i}.png", "image_id": i, "question": f"What is in image {i} ({k})?",
             "answer": f"thing {i}"} for i in range(images) for k in range(3)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / f"{name}.toml"
    spec.write_text(SPEC.format(name=name, keep=keep, extra=extra))
    return spec
