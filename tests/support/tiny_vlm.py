"""A tiny, random-weight LLaVA-style vision-language model, built fully offline.

``build_tiny_llava(out_dir, seed=0)`` writes a complete Hugging Face checkpoint directory
(``config.json``, ``generation_config.json``, ``model.safetensors``, tokenizer files, image
processor config, processor config and chat template) that loads with::

    from transformers import AutoProcessor, AutoModelForImageTextToText
    proc = AutoProcessor.from_pretrained(out_dir)
    model = AutoModelForImageTextToText.from_pretrained(out_dir)

without touching the network (``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1`` are fine).

What is inside
--------------
* **Tokenizer**: a byte-level BPE trained in-process with the ``tokenizers`` library on a few
  dozen short English sentences (so any input text can be encoded, no ``<unk>`` needed in
  practice), wrapped as ``transformers.PreTrainedTokenizerFast``.  Special tokens:
  ``<unk>`` (0), ``<s>`` (1, bos, prepended by the post-processor), ``</s>`` (2, eos),
  ``<pad>`` (3) and ``<image>`` (4).  ``model_input_names`` is
  ``["input_ids", "attention_mask"]`` so ``generate()`` never sees ``token_type_ids``.
* **Chat template** (Jinja, on both the tokenizer and the processor)::

      USER: <image>\\nWhat kind of object is in the masked region?\\nASSISTANT:

  Message content may be a plain string or a list of ``{"type": "image"}`` /
  ``{"type": "text", "text": ...}`` parts; image parts render as ``<image>\\n``.
  ``add_generation_prompt=True`` appends ``ASSISTANT:``.
* **Model**: ``LlavaForConditionalGeneration`` with a 2-layer CLIP vision tower
  (image 32x32, patch 8 -> 16 patches + CLS, hidden 32) and a 2-layer Llama text model
  (hidden 64, 4 heads).  ``vision_feature_select_strategy="default"`` drops CLS, so every
  image becomes exactly ``TINY_LLAVA_IMAGE_TOKENS`` (= 16) ``<image>`` tokens; the
  ``LlavaProcessor`` expands each ``<image>`` in the prompt to that many tokens.
* **Image processor**: the slow/PIL ``CLIPImageProcessor`` (resize shortest edge to 32,
  centre-crop 32x32), so any input size works.

Weights are drawn from ``torch.manual_seed(seed)`` inside ``torch.random.fork_rng()``: the
same seed gives byte-identical ``model.safetensors`` and the caller's global RNG is untouched.
The saved generation config carries the bos/eos/pad ids and ``suppress_tokens`` listing every
special token except eos plus every byte token that is not printable ASCII, so
``model.generate(**inputs, max_new_tokens=N, do_sample=False)`` needs no extra kwargs and the
decoded answers are single-line printable ASCII.  They are gibberish (random weights) but
deterministic for a given seed.

Build time is a few tens of milliseconds after imports; the directory is ~0.3 MB.
"""

from __future__ import annotations

import pathlib

from support.tiny_weights import save, seeded

__all__ = ["build_tiny_llava", "TINY_LLAVA_CHAT_TEMPLATE", "TINY_LLAVA_IMAGE_TOKENS"]

IMAGE_SIZE = 32
PATCH_SIZE = 8
#: Number of ``<image>`` tokens the processor inserts per image ((32 // 8) ** 2, CLS dropped).
TINY_LLAVA_IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]
BPE_VOCAB_SIZE = 512

TINY_LLAVA_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{%- set prefix = 'SYSTEM: ' -%}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{%- set prefix = 'ASSISTANT: ' -%}"
    "{%- else -%}"
    "{%- set prefix = 'USER: ' -%}"
    "{%- endif -%}"
    "{{ prefix }}"
    "{%- if message['content'] is string -%}"
    "{{ message['content'] }}"
    "{%- else -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] in ['image', 'image_url'] -%}"
    "{{ '<image>\\n' }}"
    "{%- elif part['type'] == 'text' -%}"
    "{{ part['text'] }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{ eos_token }}"
    "{%- endif -%}"
    "{{ '\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ 'ASSISTANT:' }}"
    "{%- endif -%}"
)

_CORPUS = [
    "What kind of object is in the masked region?",
    "What kind of object is in the red region?",
    "What colour is the object in the masked region?",
    "What shape is the object in the image?",
    "Please answer the question with one word.",
    "Please answer the question about the image.",
    "Question: what is in the masked region? Answer: a red circle.",
    "Question: what kind of animal is this? Answer: a dog.",
    "Question: what kind of object is this? Answer: a car.",
    "The answer is a blue square.",
    "The answer is a green triangle.",
    "The answer is a yellow ellipse.",
    "The answer is a white rectangle.",
    "The answer is a black circle.",
    "A red circle is next to a blue square.",
    "A green triangle is above a yellow ellipse.",
    "A white rectangle is below a black circle.",
    "There is a person in the masked region.",
    "There is a dog next to the person.",
    "There is a cat on the car.",
    "The cat is black and the dog is white.",
    "The car is red and the person is tall.",
    "Is there a person in the image? Yes.",
    "Is there a cat in the image? No.",
    "How many objects are in the image? Two.",
    "Describe the image in one sentence.",
    "The image shows a blue car and a green tree.",
    "The masked region contains a yellow triangle.",
    "The object in the masked region is a rectangle.",
    "Which colour is the square? It is red.",
    "Which shape is blue? The circle is blue.",
    "USER: <image>\nWhat kind of object is in the masked region?\nASSISTANT: a dog.",
    "USER: What is the answer?\nASSISTANT: The answer is a cat.",
    "SYSTEM: You are a helpful assistant.",
    "Answer with the name of the object: person, dog, cat or car.",
    "Red, blue, green, yellow, white and black are colours.",
    "Circle, square, triangle, ellipse and rectangle are shapes.",
    "0 1 2 3 4 5 6 7 8 9 10 one two three four five",
]


def _train_tokenizer():
    """Train a byte-level BPE (deterministic) and return the raw ``tokenizers.Tokenizer``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    bos_id = tok.token_to_id("<s>")
    # Prepend <s> when add_special_tokens=True (the processor's default), like Llama.
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A",
        pair="<s> $A <s> $B",
        special_tokens=[("<s>", bos_id)],
    )
    return tok


def _make_hf_tokenizer():
    from transformers import PreTrainedTokenizerFast

    kwargs = dict(
        tokenizer_object=_train_tokenizer(),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=["<image>"],
        model_input_names=["input_ids", "attention_mask"],
        padding_side="left",
        clean_up_tokenization_spaces=False,
        chat_template=TINY_LLAVA_CHAT_TEMPLATE,
        model_max_length=512,
    )
    try:
        # Exposes ``tokenizer.image_token`` / ``image_token_id`` (used by LlavaProcessor).
        tokenizer = PreTrainedTokenizerFast(
            **kwargs, extra_special_tokens={"image_token": "<image>"}
        )
    except (TypeError, ValueError):  # pragma: no cover - older/newer API without the kwarg
        tokenizer = PreTrainedTokenizerFast(**kwargs)
    tokenizer.chat_template = TINY_LLAVA_CHAT_TEMPLATE
    return tokenizer


def _token_ids(tokenizer) -> dict[str, int]:
    return dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id)


def tiny_llama_config(tokenizer):
    """The Llama text model of the tiny LLaVA, also the whole of :mod:`support.tiny_llm`."""
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                       tie_word_embeddings=False, **_token_ids(tokenizer))


def _make_config(tokenizer):
    from transformers import CLIPVisionConfig, LlavaConfig

    vision = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        projection_dim=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_channels=3,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
    )
    text = tiny_llama_config(tokenizer)
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    common = dict(
        vision_config=vision,
        text_config=text,
        projector_hidden_act="gelu",
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        image_seq_length=TINY_LLAVA_IMAGE_TOKENS,
        tie_word_embeddings=False,
        **_token_ids(tokenizer),
    )
    try:
        config = LlavaConfig(image_token_index=image_token_id, **common)
    except TypeError:  # pragma: no cover - renamed in some releases
        config = LlavaConfig(image_token_id=image_token_id, **common)
    # Make both spellings available whatever the installed version calls it.
    for name in ("image_token_index", "image_token_id"):
        if getattr(config, name, None) != image_token_id:
            try:
                setattr(config, name, image_token_id)
            except Exception:  # pragma: no cover - read-only alias property
                pass
    return config


def _make_processor(tokenizer):
    from transformers import CLIPImageProcessor, LlavaProcessor

    image_processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_resize=True,
        do_center_crop=True,
        do_normalize=True,
        do_convert_rgb=True,
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",
        # CLIP prepends a CLS embedding; "default" strategy drops it again -> 16 tokens.
        num_additional_image_tokens=1,
        chat_template=TINY_LLAVA_CHAT_TEMPLATE,
        image_token="<image>",
    )


def _unprintable_token_ids(tokenizer) -> list[int]:
    """Ids the model must never generate: every special token except eos (a generated
    ``<image>`` placeholder would be ambiguous) and every byte-level token whose text is not
    printable ASCII (lone UTF-8 bytes, control characters, newlines).  Suppressing them keeps
    the random model's answers single-line, readable ASCII."""
    suppressed = []
    for token_id in range(len(tokenizer)):
        if token_id == tokenizer.eos_token_id:
            continue
        token = tokenizer.convert_ids_to_tokens(token_id)
        if token in SPECIAL_TOKENS:
            suppressed.append(token_id)
            continue
        text = tokenizer.convert_tokens_to_string([token])
        if not text or any(not (" " <= ch <= "~") for ch in text):
            suppressed.append(token_id)
    return suppressed


def build_tiny_llava(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """Build a tiny random-weight LLaVA-style vision-language model fully offline and save it with
    save_pretrained (model + processor + tokenizer + chat template) into out_dir; return out_dir."""
    import torch
    from transformers import GenerationConfig, LlavaForConditionalGeneration

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    tokenizer = _make_hf_tokenizer()
    config = _make_config(tokenizer)
    processor = _make_processor(tokenizer)

    model = seeded(lambda: LlavaForConditionalGeneration(config), seed).to(torch.float32).eval()

    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        suppress_tokens=_unprintable_token_ids(tokenizer),
        do_sample=False,
        max_new_tokens=16,
    )

    # The processor saves the tokenizer too; save it explicitly as well so the tokenizer's own
    # chat template lands in tokenizer_config.json / chat_template.jinja for AutoTokenizer users.
    return save(out_dir, model, processor, tokenizer)
