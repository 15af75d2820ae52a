"""Shared image prefixes for the ``hf`` backend (``share_prefix=true``): a consistency benchmark
asks 3 to 5 prompts about one image, and their tokens agree up to the last image token (the
chat template's head, then the image's tokens). That prefix, the image encoder's work and the
language model's prefill of the 576+ image tokens, is computed once per image; its key/value
cache is repeated for the group's prompts, and only their differing tails are prefilled.

Every request with an image and a tail goes this way, also one whose image no other request of
its batch shows (a group of one): then all of a batch's image requests whose prefixes have one
shape are prefilled in one forward pass and answered by one ``generate`` (one decoding loop per
batch, not one for the shared groups and another for the rest). The executor cuts batches
between groups (``hf_batching.pack_groups``), so a group meets in one batch.

Tails of unequal length are padded in the middle (prefix, pads, tail) with the pads masked out;
``generate`` derives positions from the attention mask's running sum, so every real token keeps
the position it has when the prompt is encoded alone and left-padded. The arithmetic is the same
up to the order of floating-point sums (other tensor shapes), which is why ``share_prefix`` is
part of the backend's fingerprint.

Only families whose image tokens sit in the prompt with plain 1-D positions qualify: LLaVA-1.5
and LLaVA-NeXT. The others, and exactly why:

* Qwen2-VL and Qwen2.5-VL: positions are 3-D (M-RoPE). In ``generate`` a token after the cached
  part gets ``cache_position + rope_deltas``, where ``rope_deltas`` (one per row, kept on the
  model) is computed at the prefill from the image grid, and positions are not read from the
  attention mask; pads between a
  shared prefix and a tail would therefore shift every tail position (an answer other than the
  unshared one), and the deltas the prefixes' prefill leaves on the model have one row per group,
  not per member. Sharing would need tails of equal length and deltas repeated for the members.
* Idefics3 / SmolVLM: the cache layout would allow it (a Llama decoder, 1-D positions, image
  features merged into the embeddings), but its processor returns pixel values per request
  (padded to the batch's largest image count, with a ``pixel_attention_mask``) rather than per
  image, so ``encode_alone`` would need a per-family split of them; not done, and refused.
* PaliGemma: its prefix (image and prompt) attends bidirectionally, so a prompt's tail changes
  the prefix's keys and values: there is no prompt-independent prefix to share.
* InstructBLIP: its Q-Former reads the prompt, so the image's query tokens differ per prompt;
  BLIP-2 and InstructBLIP on Flan-T5 feed the image to an encoder, not to a cached prefix.
  BLIP-2 on OPT would allow it (32 query tokens before the prompt), for a small gain (32 of the
  prompt's tokens, against LLaVA's 576): not done, and refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchc.compiler.errors import BackendError, Problem

from .base import MediaLoader, Request
from .hf_loaded import LoadedModel
from .media import decode_image

SHARING_FAMILIES = ("llava", "llava_next")
REVISION = 2
"""Enters the fingerprint (``share_prefix``): a new revision gives new request keys, because what
shares a forward pass, hence the rounding, changed. 2: groups of one share the batch's forward
pass and ``generate``, batches are cut between groups; 1 (written ``true``): groups of two or
more only, batches cut every ``batch_size``."""


def check_family(model_type: str) -> None:
    if model_type not in SHARING_FAMILIES:
        raise BackendError(Problem(f"hf: share_prefix is not supported for {model_type!r} models",
                                   hint=f"it works for {', '.join(SHARING_FAMILIES)}; leave share_prefix out"))


@dataclass
class Encoded:
    """One request encoded alone: its tokens, its image tensors and where its prefix ends."""

    index: int
    input_ids: Any  # (1, L)
    images: dict[str, Any]  # pixel_values (and image_sizes), batch of 1
    prefix: int  # tokens up to and including the last image token; 0: no image

    def group_key(self, request: Request) -> tuple[Any, ...] | None:
        if self.prefix == 0 or self.prefix == self.input_ids.shape[1]:  # no image, or no tail
            return None
        return (request.media, tuple(self.input_ids[0, :self.prefix].tolist()))


def encode_alone(loaded: LoadedModel, requests: list[Request], load_media: MediaLoader) -> list[Encoded]:
    """Each request's tokens unpadded, from one processor call over the batch (each image is
    decoded once and processed once per request that shows it, as in the unshared path)."""
    torch = loaded.torch
    texts, images, counts = _texts_and_images(loaded, requests, load_media)
    with loaded.tokenizer_lock:
        batch = loaded.processor(text=texts, images=images or None)  # lists: no padding, no tensors
    image_token = _image_token(loaded.model.config)
    out, first_image = [], 0
    for index, count in enumerate(counts):
        ids = torch.tensor([batch["input_ids"][index]])
        positions = (ids[0] == image_token).nonzero()
        prefix = int(positions.max()) + 1 if len(positions) else 0
        span = slice(first_image, first_image + count)
        tensors = {k: torch.tensor(np.stack(batch[k][span])) for k in ("pixel_values", "image_sizes")
                   if count and k in batch}
        out.append(Encoded(index, ids, tensors, prefix))
        first_image += count
    return out


def _texts_and_images(loaded: LoadedModel, requests: list[Request],
                      load_media: MediaLoader) -> tuple[list[str], list[Any], list[int]]:
    """The requests' prompt texts, their images in order (each decoded once) and how many each
    request has; a request the model cannot take is refused first."""
    texts: list[str] = []
    images: list[Any] = []
    counts: list[int] = []
    decoded: dict[str, Any] = {}
    for request in requests:
        shas = [sha for kind, sha in request.media if kind == "image"]
        loaded.check_images(request, len(shas))
        for sha in shas:
            if sha not in decoded:
                decoded[sha] = decode_image(load_media("image", sha), sha)
        images += [decoded[sha] for sha in shas]
        texts.append(loaded.prompt_text(request, len(shas)))
        counts.append(len(shas))
    return texts, images, counts


def _image_token(config: Any) -> int:
    """The id of the image placeholder token (``image_token_id``, or ``image_token_index`` in
    older configs)."""
    image_token = getattr(config, "image_token_id", None)
    return int(config.image_token_index if image_token is None else image_token)


def groups_of(requests: list[Request], encoded: list[Encoded]) -> tuple[list[list[Encoded]], list[int]]:
    """Requests by image prefix (groups of one or more, in first-seen order), and the indices of
    the others (no image, or nothing after the image)."""
    by_key: dict[tuple[Any, ...], list[Encoded]] = {}
    alone = []
    for request, enc in zip(requests, encoded):
        key = enc.group_key(request)
        if key is None:
            alone.append(enc.index)
        else:
            by_key.setdefault(key, []).append(enc)
    return list(by_key.values()), sorted(alone)


def buckets_of(groups: list[list[Encoded]]) -> list[list[list[Encoded]]]:
    """Groups whose prefixes and image tensors have the same shapes, so that one forward pass
    prefills all their prefixes and one ``generate`` answers all their members."""
    by_shape: dict[tuple[Any, ...], list[list[Encoded]]] = {}
    for group in groups:
        first = group[0]
        shape = (first.prefix, *((k, tuple(v.shape)) for k, v in sorted(first.images.items())))
        by_shape.setdefault(shape, []).append(group)
    return list(by_shape.values())


def generate_bucket(loaded: LoadedModel, bucket: list[list[Encoded]]) -> list[tuple[int, str]]:
    """(request index, answer) for every member of the bucket's groups: the groups' prefixes
    prefilled in one forward pass, each prefix's cache rows repeated for its group's members,
    then one ``generate`` over all members."""
    torch, device = loaded.torch, loaded.device
    firsts = [group[0] for group in bucket]
    prefix = firsts[0].prefix
    prefix_ids = torch.cat([enc.input_ids[:, :prefix] for enc in firsts]).to(device)
    images = {k: loaded.to_device(torch.cat([enc.images[k] for enc in firsts])) for k in firsts[0].images}
    members = [enc for group in bucket for enc in group]
    rows = torch.tensor([g for g, group in enumerate(bucket) for _ in group], device=device)
    with torch.inference_mode():
        # logits_to_keep=1: the prefix's logits are never read, and the LM head over every prefix
        # position (vocabulary x 577+ tokens) can cost more than the model itself
        cache = loaded.model(input_ids=prefix_ids, **images, use_cache=True, logits_to_keep=1).past_key_values
        cache.batch_select_indices(rows)
        input_ids, mask = _prefix_pads_tails(torch, members, loaded.tokenizer.pad_token_id)
        out = loaded.model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                    past_key_values=cache, **loaded.generate_kwargs())
    return list(zip((enc.index for enc in members), loaded.decode_rows(out[:, input_ids.shape[1]:])))


def _prefix_pads_tails(torch: Any, members: list[Encoded], pad_id: int) -> tuple[Any, Any]:
    """(prefix, pads, tail) rows and their mask: pads masked out, between prefix and tail."""
    tails = [enc.input_ids[0, enc.prefix:] for enc in members]
    width = max(len(t) for t in tails)
    rows, masks = [], []
    for enc, tail in zip(members, tails):
        prefix, pads = enc.input_ids[0, :enc.prefix], width - len(tail)
        rows.append(torch.cat([prefix, torch.full((pads,), pad_id, dtype=prefix.dtype), tail]))
        masks.append(torch.cat([torch.ones(len(prefix), dtype=torch.long), torch.zeros(pads, dtype=torch.long),
                                torch.ones(len(tail), dtype=torch.long)]))
    return torch.stack(rows), torch.stack(masks)
