"""Tiny random-weight vision-language models of several families, built fully offline.

Each ``build_<family>(out_dir, seed=0)`` writes a folder that the ``hf`` backend loads the way it
loads a real checkpoint (``AutoProcessor`` + ``AutoModelForImageTextToText``): weights, config,
generation config, tokenizer, image processor, processor config and (for chat families) a chat
template shaped like the family's own. ``FAMILIES`` maps a family name to its builder.

Sizes are as small as each architecture allows (hidden sizes 16-32, one or two layers, images
16-32 pixels, a 512-token byte-level BPE trained in-process on :mod:`support.tiny_vlm`'s corpus),
so a build takes tens of milliseconds and a forward pass a few milliseconds. Weights come from
``torch.manual_seed(seed)`` inside ``fork_rng``: the same seed gives the same bytes and the
caller's RNG is untouched. A different seed gives other weights (and another fingerprint).

The saved generation config suppresses every special or added token except eos and every byte
token that is not printable ASCII, so the random answers are readable one-line strings.

What could not be done as the real checkpoints do, and why:

* Qwen2-VL / Qwen2.5-VL processors also hold a video processor, which needs torchvision (not
  installed here, on purpose). The builder saves the processor's parts (image processor,
  tokenizer, chat template, ``processor_config.json``) without constructing the processor; the
  backend then falls back to an image-only processor (see ``runtime/backends/hf_processor.py``).
* SmolVLM2's processor module imports torchvision at import time under transformers 4.x, so
  ``build_smolvlm`` saves the parts without the processor and the backend can only refuse that
  folder there (with one clear error); under 5.x, or with torchvision, it loads like the others.
* Under transformers 5.x the image processors are taken in their PIL form
  (``_pil_image_processor``): the plain names are the torchvision ones there.
* Tokenizers are byte-level BPEs wrapped in each family's fast tokenizer class where the
  processor checks the class (``Qwen2TokenizerFast``, ``GemmaTokenizerFast``), not the real
  vocabularies.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable, Sequence
from typing import Any

from support.tiny_vlm import _CORPUS, TINY_LLAVA_CHAT_TEMPLATE, _make_hf_tokenizer
from support.tiny_weights import save, seeded

__all__ = [
    "FAMILIES",
    "build_blip2",
    "build_idefics3",
    "build_instructblip",
    "build_llava_next",
    "build_paligemma",
    "build_qwen2_5_vl",
    "build_qwen2_vl",
    "build_smolvlm",
]

VOCAB = 512

QWEN_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' -%}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif part['type'] == 'text' -%}{{ part['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

IDEFICS3_CHAT_TEMPLATE = (
    "{{ '<|begin_of_text|>' }}"
    "{%- for message in messages -%}"
    "{{ message['role'] | capitalize }}"
    "{%- if message['content'] is string -%}{{ ': ' + message['content'] }}"
    "{%- else -%}"
    "{%- if message['content'][0]['type'] == 'image' -%}{{ ':' }}{%- else -%}{{ ': ' }}{%- endif -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{ '<image>' }}"
    "{%- elif part['type'] == 'text' -%}{{ part['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<end_of_utterance>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ 'Assistant:' }}{%- endif -%}"
)


# --- tokenizers -----------------------------------------------------------------------------------

def _bpe(special: Sequence[str], bos: str | None = None, eos_after: str | None = None) -> Any:
    """A byte-level BPE over the shared corpus whose first ids are ``special``; ``bos`` is
    prepended and ``eos_after`` appended by the post-processor when given (as the family's real
    tokenizer does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, min_frequency=1, special_tokens=list(special),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    single = " ".join(filter(None, [bos, "$A", eos_after]))
    pair = " ".join(filter(None, [bos, "$A", eos_after, "$B", eos_after]))
    marks = [t for t in (bos, eos_after) if t]
    if marks:
        tok.post_processor = processors.TemplateProcessing(
            single=single, pair=pair, special_tokens=[(t, tok.token_to_id(t)) for t in marks])
    return tok


def _fast(cls: Any, raw: Any, **kwargs: Any) -> Any:
    """Wrap a raw tokenizer in ``cls`` (a fast tokenizer class) with left padding."""
    return cls(tokenizer_object=raw, model_input_names=["input_ids", "attention_mask"], padding_side="left",
               clean_up_tokenization_spaces=False, model_max_length=4096, **kwargs)


def _suppressed(tokenizer: Any) -> list[int]:
    """Ids the random model must never generate: special and added tokens except eos (a generated
    image placeholder would be ambiguous) and byte tokens that are not printable ASCII."""
    added = set(tokenizer.get_added_vocab().values()) | set(tokenizer.all_special_ids)
    out = []
    for token_id in range(len(tokenizer)):
        if token_id == tokenizer.eos_token_id:
            continue
        text = tokenizer.convert_tokens_to_string([tokenizer.convert_ids_to_tokens(token_id)])
        if token_id in added or not text or any(not (" " <= ch <= "~") for ch in text):
            out.append(token_id)
    return out


# --- saving ---------------------------------------------------------------------------------------

def _seeded(make: Callable[[], Any], seed: int) -> Any:
    """Build the model under ``seed``, then redraw its matrices with a larger spread than the
    families' initialisers (std 0.02): at these sizes those give near-uniform logits whose argmax
    hardly depends on the input, and a test of batching should see answers that do."""
    import torch

    def spread() -> Any:
        model = make()
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() >= 2:
                    parameter.normal_(0.0, 0.25)
        return model.to(torch.float32).eval()

    return seeded(spread, seed)


def _save(out_dir: pathlib.Path, model: Any, tokenizer: Any, parts: Sequence[Any], **generation: Any) -> pathlib.Path:
    """Save the model with a generation config that keeps answers printable, then the processor
    (or its parts)."""
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, suppress_tokens=_suppressed(tokenizer),
        do_sample=False, max_new_tokens=16, **generation)
    return save(out_dir, model, *parts)


def _folder(out_dir: pathlib.Path) -> pathlib.Path:
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


# --- LLaVA-NeXT -----------------------------------------------------------------------------------

def build_llava_next(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """LLaVA-NeXT (v1.6): CLIP tower on 32x32 crops, "anyres" grid of 32x64/64x32/64x64, so images
    of other aspect ratios take other numbers of patches (``image_sizes`` unpads them)."""
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextImageProcessor,
        LlavaNextProcessor,
    )

    out_dir = _folder(out_dir)
    tokenizer = _make_hf_tokenizer()
    ids = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
               pad_token_id=tokenizer.pad_token_id)
    grid = [[32, 64], [64, 32], [64, 64]]
    image_processor = LlavaNextImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                              image_grid_pinpoints=grid)
    processor = LlavaNextProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=8,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                                   chat_template=TINY_LLAVA_CHAT_TEMPLATE, image_token="<image>")
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, projection_dim=16, num_hidden_layers=1,
                                       num_attention_heads=2, image_size=32, patch_size=8),
        text_config=LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                max_position_embeddings=1024, tie_word_embeddings=False, **ids),
        image_grid_pinpoints=grid, image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default", vision_feature_layer=-1, image_seq_length=16,
        tie_word_embeddings=False, **ids)
    model = _seeded(lambda: LlavaNextForConditionalGeneration(config), seed)
    return _save(out_dir, model, tokenizer, [processor])


# --- Qwen2-VL and Qwen2.5-VL ----------------------------------------------------------------------

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]


def _qwen_tokenizer() -> Any:
    from transformers import Qwen2TokenizerFast

    return _fast(Qwen2TokenizerFast, _bpe(QWEN_SPECIAL), unk_token=None, bos_token=None,
                 eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=QWEN_CHAT_TEMPLATE)


def _save_qwen(out_dir: pathlib.Path, model: Any, tokenizer: Any, processor_class: str) -> pathlib.Path:
    """Save a Qwen-VL folder without building its processor (whose video processor needs
    torchvision): image processor, tokenizer, chat template and the processor's class name."""
    from transformers import Qwen2VLImageProcessor

    # 4x4 patches merged 2x2: a 32x32 image is 8x8 patches, 16 tokens; bigger ones shrink to fit.
    image_processor = Qwen2VLImageProcessor(min_pixels=16 * 16, max_pixels=32 * 32, patch_size=4,
                                            temporal_patch_size=2, merge_size=2)
    _save(out_dir, model, tokenizer, [image_processor, tokenizer])
    (out_dir / "processor_config.json").write_text(json.dumps({"processor_class": processor_class}))
    (out_dir / "chat_template.jinja").write_text(QWEN_CHAT_TEMPLATE)
    return out_dir


def _qwen_ids(tokenizer: Any) -> dict[str, int]:
    return dict(image_token_id=tokenizer.convert_tokens_to_ids("<|image_pad|>"),
                video_token_id=tokenizer.convert_tokens_to_ids("<|video_pad|>"),
                vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
                vision_end_token_id=tokenizer.convert_tokens_to_ids("<|vision_end|>"))


def _qwen_text(tokenizer: Any) -> dict[str, Any]:
    # head_dim 16: the three M-RoPE sections (time, height, width) must add up to head_dim / 2.
    return dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024,
                rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}, tie_word_embeddings=False,
                eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)


def build_qwen2_vl(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """Qwen2-VL: native-resolution patches (``image_grid_thw``) and M-RoPE positions."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    out_dir = _folder(out_dir)
    tokenizer = _qwen_tokenizer()
    vision = dict(depth=1, embed_dim=16, hidden_size=32, mlp_ratio=2, num_heads=2, in_channels=3, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=2)
    config = Qwen2VLConfig(text_config=_qwen_text(tokenizer), vision_config=vision, **_qwen_ids(tokenizer),
                           tie_word_embeddings=False)
    model = _seeded(lambda: Qwen2VLForConditionalGeneration(config), seed)
    return _save_qwen(out_dir, model, tokenizer, "Qwen2VLProcessor")


def build_qwen2_5_vl(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """Qwen2.5-VL: Qwen2-VL with windowed attention in the vision tower (one full-attention
    block here)."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    out_dir = _folder(out_dir)
    tokenizer = _qwen_tokenizer()
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, in_channels=3, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=2, window_size=16, out_hidden_size=32,
                  fullatt_block_indexes=[0])
    config = Qwen2_5_VLConfig(text_config=_qwen_text(tokenizer), vision_config=vision, **_qwen_ids(tokenizer),
                              tie_word_embeddings=False)
    model = _seeded(lambda: Qwen2_5_VLForConditionalGeneration(config), seed)
    return _save_qwen(out_dir, model, tokenizer, "Qwen2_5_VLProcessor")


# --- Idefics3 and SmolVLM -------------------------------------------------------------------------

IDEFICS3_SPECIAL = ["<|endoftext|>", "<|begin_of_text|>", "<end_of_utterance>", "<fake_token_around_image>",
                    "<image>", "<global-img>"] + [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]


def _pil_image_processor(name: str) -> type:
    """A family's PIL image processor class, which needs no torchvision. transformers 5.x names the
    torchvision one plainly and the PIL one "...Pil", and its top-level names of both demand
    torchvision (a lazy-import placeholder), so the PIL class is taken from its own module; 4.x
    has only the plain, PIL-based class."""
    import importlib

    import transformers

    family = name.removesuffix("ImageProcessor").lower()
    try:
        module = importlib.import_module(f"transformers.models.{family}.image_processing_pil_{family}")
    except ModuleNotFoundError:
        return getattr(transformers, name)
    return getattr(module, name + "Pil")


def _idefics3_parts(seed: int, model_cls: str, config_cls: str, vision_cls: str, image_cls: str) -> tuple:
    """Idefics3-style model, tokenizer and image processor: 16x16 tiles of 4x4 patches, pixel
    shuffle by 2, so each tile (and the global image) is 4 ``<image>`` tokens; images are split
    into up to 2x2 tiles (longest edge 32)."""
    import transformers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    tokenizer = _fast(PreTrainedTokenizerFast, _bpe(IDEFICS3_SPECIAL), bos_token="<|begin_of_text|>",
                      eos_token="<end_of_utterance>", pad_token="<|endoftext|>", unk_token="<|endoftext|>",
                      chat_template=IDEFICS3_CHAT_TEMPLATE)
    image_processor = _pil_image_processor(image_cls)(
        do_resize=True, size={"longest_edge": 32}, max_image_size={"longest_edge": 16}, do_image_splitting=True)
    vision = getattr(transformers, vision_cls)(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                               num_attention_heads=2, image_size=16, patch_size=4)
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
                       tie_word_embeddings=False, bos_token_id=tokenizer.bos_token_id,
                       eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    config = getattr(transformers, config_cls)(
        vision_config=vision.to_dict(), text_config=text.to_dict(), scale_factor=2,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"), pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False)
    model = _seeded(lambda: getattr(transformers, model_cls)(config), seed)
    return model, tokenizer, image_processor


def build_idefics3(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """Idefics3 (also SmolVLM v1, whose checkpoints are Idefics3): image splitting into tiles with
    row/column markers, ``pixel_attention_mask``."""
    from transformers import Idefics3Processor

    out_dir = _folder(out_dir)
    model, tokenizer, image_processor = _idefics3_parts(seed, "Idefics3ForConditionalGeneration", "Idefics3Config",
                                                        "Idefics3VisionConfig", "Idefics3ImageProcessor")
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=4,
                                  chat_template=IDEFICS3_CHAT_TEMPLATE)
    return _save(out_dir, model, tokenizer, [processor])


def build_smolvlm(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """SmolVLM2 (``smolvlm``): the Idefics3 design; its processor's video part needs torchvision,
    so the parts are saved without building the processor (as for Qwen-VL)."""
    out_dir = _folder(out_dir)
    model, tokenizer, image_processor = _idefics3_parts(seed, "SmolVLMForConditionalGeneration", "SmolVLMConfig",
                                                        "SmolVLMVisionConfig", "SmolVLMImageProcessor")
    _save(out_dir, model, tokenizer, [image_processor, tokenizer])
    (out_dir / "processor_config.json").write_text(json.dumps({"processor_class": "SmolVLMProcessor",
                                                               "image_seq_len": 4}))
    (out_dir / "chat_template.jinja").write_text(IDEFICS3_CHAT_TEMPLATE)
    return out_dir


# --- BLIP-2 and InstructBLIP ----------------------------------------------------------------------

def _blip_vision() -> dict[str, Any]:
    return dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16,
                patch_size=8)


def _qformer(vocab_size: int) -> dict[str, Any]:
    return dict(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                intermediate_size=32, encoder_hidden_size=16, max_position_embeddings=512)


def _blip_tokenizer(bos: str | None, eos_after: str | None) -> Any:
    """A tokenizer without ``<image>``: BLIP processors add it themselves (as a special token) when
    the tokenizer has no ``image_token``, as for the released checkpoints; no chat template."""
    from transformers import PreTrainedTokenizerFast

    return _fast(PreTrainedTokenizerFast, _bpe(["<unk>", "<s>", "</s>", "<pad>"], bos=bos, eos_after=eos_after),
                 bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


def build_blip2(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """BLIP-2 with an OPT decoder: 4 Q-Former query tokens, which the processor prepends as
    ``<image>`` tokens (``num_query_tokens``); no chat template."""
    from transformers import (
        Blip2Config,
        Blip2ForConditionalGeneration,
        Blip2Processor,
        BlipImageProcessor,
        OPTConfig,
    )

    out_dir = _folder(out_dir)
    tokenizer = _blip_tokenizer(bos="<s>", eos_after=None)  # OPT prepends its bos
    processor = Blip2Processor(image_processor=BlipImageProcessor(size={"height": 16, "width": 16}),
                               tokenizer=tokenizer, num_query_tokens=4)
    text = OPTConfig(vocab_size=len(tokenizer), hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                     num_attention_heads=2, word_embed_proj_dim=32, max_position_embeddings=512,
                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                     pad_token_id=tokenizer.pad_token_id)
    config = Blip2Config(vision_config=_blip_vision(), qformer_config=_qformer(len(tokenizer)),
                         text_config=text.to_dict(), num_query_tokens=4,
                         image_token_index=tokenizer.convert_tokens_to_ids("<image>"))
    model = _seeded(lambda: Blip2ForConditionalGeneration(config), seed)
    return _save(out_dir, model, tokenizer, [processor])


def build_instructblip(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """InstructBLIP with a Flan-T5 (encoder-decoder) language model, so ``generate`` returns only
    the new tokens; the instruction also goes to the Q-Former through its own tokenizer."""
    from transformers import (
        BlipImageProcessor,
        InstructBlipConfig,
        InstructBlipForConditionalGeneration,
        InstructBlipProcessor,
        PreTrainedTokenizerFast,
        T5Config,
    )

    out_dir = _folder(out_dir)
    tokenizer = _blip_tokenizer(bos=None, eos_after="</s>")  # T5 appends its eos
    qformer_tokenizer = _fast(PreTrainedTokenizerFast, _bpe(["[PAD]", "[CLS]", "[SEP]", "[UNK]"]),
                              pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]")
    processor = InstructBlipProcessor(image_processor=BlipImageProcessor(size={"height": 16, "width": 16}),
                                      tokenizer=tokenizer, qformer_tokenizer=qformer_tokenizer, num_query_tokens=4)
    text = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=16, d_ff=64, num_layers=1, num_decoder_layers=1,
                    num_heads=2, decoder_start_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                    pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
    config = InstructBlipConfig(vision_config=_blip_vision(), qformer_config=_qformer(len(qformer_tokenizer)),
                                text_config=text.to_dict(), num_query_tokens=4,
                                image_token_index=tokenizer.convert_tokens_to_ids("<image>"))
    model = _seeded(lambda: InstructBlipForConditionalGeneration(config), seed)
    return _save(out_dir, model, tokenizer, [processor], decoder_start_token_id=tokenizer.pad_token_id)


# --- PaliGemma ------------------------------------------------------------------------------------

def build_paligemma(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """PaliGemma: SigLIP tower (16x16 image, 8x8 patches: 4 image tokens) and a Gemma decoder; the
    processor writes ``<image>``x4, ``<bos>``, the prefix and a newline; no chat template."""
    from transformers import (
        GemmaConfig,
        GemmaTokenizerFast,
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
        SiglipVisionConfig,
    )

    out_dir = _folder(out_dir)
    raw = _bpe(["<pad>", "<eos>", "<bos>", "<unk>", "<image>"])
    tokenizer = _fast(GemmaTokenizerFast, raw, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                      unk_token="<unk>", add_bos_token=True, extra_special_tokens={"image_token": "<image>"})
    image_processor = SiglipImageProcessor(size={"height": 16, "width": 16}, image_seq_length=4)
    processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tokenizer)  # adds <loc>/<seg> tokens
    text = GemmaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
                       bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                       pad_token_id=tokenizer.pad_token_id)
    vision = SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                image_size=16, patch_size=8, projection_dim=32)
    config = PaliGemmaConfig(vision_config=vision.to_dict(), text_config=text.to_dict(), projection_dim=32,
                             hidden_size=32, image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
                             pad_token_id=tokenizer.pad_token_id)
    model = _seeded(lambda: PaliGemmaForConditionalGeneration(config), seed)
    return _save(out_dir, model, tokenizer, [processor])


FAMILIES: dict[str, Callable[[pathlib.Path, int], pathlib.Path]] = {
    "llava_next": build_llava_next, "qwen2_vl": build_qwen2_vl, "qwen2_5_vl": build_qwen2_5_vl,
    "idefics3": build_idefics3, "smolvlm": build_smolvlm, "blip2": build_blip2,
    "instructblip": build_instructblip, "paligemma": build_paligemma,
}
