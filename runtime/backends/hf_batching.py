"""Which greedy requests share a batch in the ``hf`` backend: requests of like length together.

A batch is padded to its longest request, and every pad token costs the prefill as much as a
real one. The executor cuts the pending requests into batches of ``batch_size`` in the order
``batch_order`` gives: requests sorted by their estimated length, longest first, so that a batch
holds requests of about the same length and little of its compute goes to pads (at most
(longest - shortest) x (batch_size - 1) pad tokens over the whole run, where manifest order can pad
nearly every request to the longest), and a batch that does not fit in memory comes first.

The length is estimated without rendering the chat template (which adds the same tokens to every
request of a family): the tokens of the system and user text, plus, for families whose number of
image tokens follows the image's size (Qwen2-VL, LLaVA-NeXT, Idefics3), the images' pixel areas,
read from the image headers. The sort key is (number of images, pixel area, text tokens), each
descending, then the request key, which makes a batch's members a function of the set of pending
requests, not of the order of the manifest's rows.

With ``share_prefix=true`` the requests about one image must meet in a batch to share its prefix,
so they are sorted by their images first, then by length, and batches are cut between groups
(``pack_groups``): whole groups of requests about one image, as many as fit in ``batch_size``.

Sampling requests are generated one at a time (each with its own seed), so their order is kept.
"""

from __future__ import annotations

import io
from typing import Any

from .base import MediaLoader, Request

SIZED_IMAGE_FAMILIES = frozenset({"qwen2_vl", "qwen2_5_vl", "llava_next", "idefics3", "smolvlm"})
"""Families whose image token count grows with the image's size (dynamic resolution or tiling)."""


def batch_order(requests: list[Request], text_tokens: list[int], image_area: dict[str, int] | None,
                share_prefix: bool) -> list[Request]:
    """``requests`` in batching order (see the module docstring). ``text_tokens[i]`` is request
    i's text length in tokens; ``image_area`` maps each image's sha256 to its pixel area, or is
    None where the family's image token count does not depend on it."""
    def key(i: int) -> tuple[Any, ...]:
        request = requests[i]
        shas = [sha for kind, sha in request.media if kind == "image"]
        area = sum(image_area[s] for s in shas) if image_area is not None else 0
        by_length = (-len(shas), -area, -text_tokens[i], request.key)
        return (request.media, *by_length) if share_prefix else by_length

    return [requests[i] for i in sorted(range(len(requests)), key=key)]


def pack_groups(ordered: list[Request], size: int) -> list[list[Request]]:
    """``ordered`` (requests about one image adjacent) cut into batches of at most ``size`` that
    never split a group of requests about one image, unless the group alone exceeds ``size``
    (then it fills whole batches first). Groups are packed in order, a new batch begun when the
    next group does not fit: a group cut in two would encode and prefill its image twice, and its
    odd request would be answered without sharing."""
    groups: list[list[Request]] = []
    for request in ordered:
        if groups and groups[-1][0].media == request.media:
            groups[-1].append(request)
        else:
            groups.append([request])
    batches: list[list[Request]] = []
    current: list[Request] = []
    for group in groups:
        whole, rest = len(group) - len(group) % size, group[len(group) - len(group) % size:]
        batches += [group[start:start + size] for start in range(0, whole, size)]
        if len(current) + len(rest) > size:
            batches.append(current)
            current = []
        current += rest
    return [b for b in [*batches, current] if b]


def text_tokens(tokenizer: Any, requests: list[Request]) -> list[int]:
    """Each request's system and user text in tokens, without special tokens (one batched call)."""
    texts = [(r.system + "\n" if r.system else "") + r.prompt for r in requests]
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def image_areas(requests: list[Request], load_media: MediaLoader) -> dict[str, int]:
    """The pixel area of every image the requests show, from its header (no full decode). An
    image that cannot be read counts 0 here; decoding it in its batch fails with one clear error."""
    from PIL import Image, UnidentifiedImageError

    areas: dict[str, int] = {}
    for request in requests:
        for kind, sha in request.media:
            if kind != "image" or sha in areas:
                continue
            try:
                with Image.open(io.BytesIO(load_media(kind, sha))) as image:
                    areas[sha] = image.size[0] * image.size[1]
            except (UnidentifiedImageError, OSError):
                areas[sha] = 0
    return areas
