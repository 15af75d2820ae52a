"""Tiny random-weight image captioners of MMCBench's baseline families, built fully offline:
BLIP (blip-image-captioning-base), GIT (git-base) and a ViT-GPT2 vision-encoder-decoder
(vit-gpt2-image-captioning), each saved as its real checkpoint is laid out (BLIP and GIT with
their processors, ViT-GPT2 with an image processor and a tokenizer only). ``CAPTIONERS`` maps a
family (``config.model_type``) to its builder. Sizes, tokenizers, seeding and the printable-answer
generation config are those of :mod:`support.tiny_families`.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

from support.tiny_families import _bpe, _fast, _folder, _save, _seeded

BERT_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]"]


def _bert_like() -> Any:
    """A BERT-style tokenizer ([CLS] text [SEP]) as BLIP's and GIT's processors hold."""
    from tokenizers import normalizers
    from transformers import BertTokenizerFast

    raw = _bpe(BERT_SPECIAL, bos="[CLS]", eos_after="[SEP]")
    # BertTokenizerFast reads its normalizer's settings; uncased, as bert-base-uncased (BLIP's, GIT's)
    raw.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=False)
    tokenizer = _fast(BertTokenizerFast, raw,
                      pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                      mask_token="[MASK]", bos_token="[DEC]", eos_token="[SEP]")
    return tokenizer


def _vision() -> dict[str, Any]:
    return {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
            "image_size": 16, "patch_size": 8}


def build_blip(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """BLIP captioning: ViT tower, BERT-style text decoder with cross-attention; its decoder
    starts from [DEC] and stops at [SEP]."""
    from transformers import BlipConfig, BlipForConditionalGeneration, BlipImageProcessor, BlipProcessor

    out_dir = _folder(out_dir)
    tokenizer = _bert_like()
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in
           (("bos_token_id", "[DEC]"), ("sep_token_id", "[SEP]"), ("eos_token_id", "[SEP]"), ("pad_token_id", "[PAD]"))}
    text = {"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 2, "encoder_hidden_size": 16, "max_position_embeddings": 128, **ids}
    config = BlipConfig(vision_config=_vision(), text_config=text, projection_dim=16)
    model = _seeded(lambda: BlipForConditionalGeneration(config), seed)
    processor = BlipProcessor(image_processor=BlipImageProcessor(size={"height": 16, "width": 16}), tokenizer=tokenizer)
    return _save(out_dir, model, tokenizer, [processor])


def build_git(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """GIT: CLIP-style image encoder whose tokens precede the text in one BERT-style decoder;
    it starts from [CLS] and stops at [SEP]."""
    from transformers import CLIPImageProcessor, GitConfig, GitForCausalLM, GitProcessor

    out_dir = _folder(out_dir)
    tokenizer = _bert_like()
    cls, sep, pad = (tokenizer.convert_tokens_to_ids(t) for t in ("[CLS]", "[SEP]", "[PAD]"))
    config = GitConfig(vision_config=_vision(), vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=128,
                       bos_token_id=cls, eos_token_id=sep, pad_token_id=pad)
    model = _seeded(lambda: GitForCausalLM(config), seed)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16})
    processor = GitProcessor(image_processor=image_processor, tokenizer=tokenizer)
    tokenizer.bos_token = "[CLS]"  # GIT's generation config starts from [CLS]
    return _save(out_dir, model, tokenizer, [processor])


def build_vit_gpt2(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    """A ViT encoder and a GPT-2 decoder with cross-attention (``VisionEncoderDecoderModel``); as
    vit-gpt2-image-captioning, no processor class: an image processor and a GPT-2 tokenizer whose
    one special token is bos, eos and the decoder's start."""
    from transformers import (
        GPT2Config,
        PreTrainedTokenizerFast,
        ViTConfig,
        ViTImageProcessor,
        VisionEncoderDecoderConfig,
        VisionEncoderDecoderModel,
    )

    out_dir = _folder(out_dir)
    tokenizer = _fast(PreTrainedTokenizerFast, _bpe(["<|endoftext|>"]), bos_token="<|endoftext|>",
                      eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    end = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    decoder = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2, n_positions=128,
                         add_cross_attention=True, is_decoder=True, bos_token_id=end, eos_token_id=end)
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(
        ViTConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  image_size=16, patch_size=8), decoder)
    config.decoder_start_token_id = config.pad_token_id = config.eos_token_id = end
    model = _seeded(lambda: VisionEncoderDecoderModel(config), seed)
    image_processor = ViTImageProcessor(size={"height": 16, "width": 16})
    return _save(out_dir, model, tokenizer, [image_processor, tokenizer], decoder_start_token_id=end)


CAPTIONERS: dict[str, Callable[[pathlib.Path, int], pathlib.Path]] = {
    "blip": build_blip, "git": build_git, "vision-encoder-decoder": build_vit_gpt2,
}
