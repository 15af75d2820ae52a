"""Image captioners in the ``hf`` backend: BLIP, GIT and vision-encoder-decoder models (ViT-GPT2),
MMCBench's baseline captioners (blip-base, git-base, vit-gpt2) for its hard-image selection.

They take one image and no instruction: the request's prompt, when there is one, is the start
of the caption ("a picture of"), and the answer is what the model writes after it. Each family
takes that start in its own way, as its model card does:

* GIT (``GitForCausalLM``): ``input_ids`` = [CLS] + the prompt's tokens; ``generate`` returns them
  then the caption. (Its processor would append [SEP], GIT's end of sequence.)
* BLIP (``BlipForConditionalGeneration``): ``input_ids`` = [CLS] + prompt + [SEP], as its processor
  makes them; ``generate`` replaces [CLS] with its decoder's bos, drops the last token and
  returns the rest then the caption.
* vision-encoder-decoder (ViT-GPT2): ``decoder_input_ids`` = the decoder's start token + the
  prompt's tokens; ``generate`` returns them then the caption. Its checkpoints have no processor
  class, only an image processor and a tokenizer.

So each family gets its image processor (the PIL one, as ``hf_processor`` loads it) and its
tokenizer, not ``AutoProcessor``. A batch is generated in groups of requests whose prompts have
the same number of tokens: these decoders have absolute positions, so a padded prompt would not
answer as it does alone, and a captioning prompt is usually the same for every image.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import MediaLoader, Request, Response
from .hf_loaded import LoadedModel
from .media import decode_image

CAPTIONER_FAMILIES = frozenset({"blip", "git", "vision-encoder-decoder"})
REVISION = 1
"""How a captioner's request becomes its input and answer (this module); in the fingerprint of
captioner folders, so answers made another way (before it: GIT through its processor with
``<image>``) are never served from the response store."""


@dataclass
class CaptionerParts:
    """What stands in for a captioner's processor."""

    image_processor: Any
    tokenizer: Any
    chat_template: None = None


def load_parts(path: Path, model_type: str) -> CaptionerParts:
    from transformers import AutoTokenizer

    from .hf_processor import pil_image_processor

    return CaptionerParts(pil_image_processor(path, model_type),
                          AutoTokenizer.from_pretrained(path, local_files_only=True))


def prefix_ids(family: str, tokenizer: Any, model: Any, prompt: str) -> list[int]:
    """The start of the caption as the family's ``generate`` takes it (see the module docstring)."""
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"] if prompt else []
    if family == "git":
        return [tokenizer.cls_token_id, *ids]
    if family == "blip":
        return [tokenizer.cls_token_id, *ids, tokenizer.sep_token_id]
    start = getattr(model.generation_config, "decoder_start_token_id", None)
    return [model.config.decoder_start_token_id if start is None else start, *ids]


def returned_prefix(family: str, prefix: list[int]) -> int:
    """How many tokens of the prefix ``generate`` returns before the caption."""
    return len(prefix) - 1 if family == "blip" else len(prefix)


def _caption_kwargs(loaded: LoadedModel) -> dict[str, Any]:
    """The backend's generation settings; BLIP's ``generate`` sets the pad (and end) token of its
    text decoder itself and refuses a second one."""
    kwargs = loaded.generate_kwargs()
    if loaded.family == "blip":
        del kwargs["pad_token_id"]
    return kwargs


def generate(loaded: LoadedModel, requests: list[Request], load_media: MediaLoader,
             seed: int | None) -> list[Response]:
    """Captions for ``requests`` (each with one image), in groups of equal prefix length."""
    parts: CaptionerParts = loaded.processor
    prefixes = []
    for request in requests:
        shas = [sha for kind, sha in request.media if kind == "image"]
        loaded.check_images(request, len(shas))
        prefixes.append(prefix_ids(loaded.family, parts.tokenizer, loaded.model, loaded.prompt_text(request, 1)))
    groups: dict[int, list[int]] = {}
    for index, prefix in enumerate(prefixes):
        groups.setdefault(len(prefix), []).append(index)
    answers: dict[int, Response] = {}
    for indices in groups.values():
        images = [decode_image(load_media("image", sha), sha) for i in indices
                  for kind, sha in requests[i].media if kind == "image"]
        captions = _caption_group(loaded, images, [prefixes[i] for i in indices], seed)
        answers.update((i, Response("text", text=caption)) for i, caption in zip(indices, captions))
    return [answers[i] for i in range(len(requests))]


def _caption_group(loaded: LoadedModel, images: list[Any], prefixes: list[list[int]], seed: int | None) -> list[str]:
    """One ``generate`` over images whose caption prefixes have the same length (nothing padded)."""
    parts: CaptionerParts = loaded.processor
    pixels = parts.image_processor(images=images, return_tensors="pt")["pixel_values"]
    ids = loaded.torch.tensor(prefixes)
    decoder = "decoder_" if loaded.family == "vision-encoder-decoder" else ""
    inputs = {"pixel_values": pixels, f"{decoder}input_ids": ids,
              f"{decoder}attention_mask": loaded.torch.ones_like(ids)}  # nothing is padded
    out = loaded.run_generate({k: loaded.to_device(v) for k, v in inputs.items()}, seed, _caption_kwargs(loaded))
    cut = returned_prefix(loaded.family, prefixes[0])
    return [parts.tokenizer.decode(row, skip_special_tokens=True).strip() for row in out[:, cut:]]
