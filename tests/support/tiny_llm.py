"""A tiny, random-weight text-only causal LM (Llama), built fully offline.

``build_tiny_llm(out_dir, seed=0)`` writes a ``LlamaForCausalLM`` checkpoint with the tokenizer
and chat template of :mod:`support.tiny_vlm` (so answers are single-line printable ASCII too):
what the ``hf`` backend loads through ``AutoTokenizer`` + ``AutoModelForCausalLM`` when a folder
holds no image-text-to-text model. Same seed, same bytes; the caller's RNG is untouched.
"""

from __future__ import annotations

import pathlib

from support.tiny_vlm import _make_hf_tokenizer, _unprintable_token_ids, tiny_llama_config
from support.tiny_weights import save, seeded

__all__ = ["build_tiny_llm"]


def build_tiny_llm(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    import torch
    from transformers import GenerationConfig, LlamaForCausalLM

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _make_hf_tokenizer()
    config = tiny_llama_config(tokenizer)
    model = seeded(lambda: LlamaForCausalLM(config).to(torch.float32).eval(), seed)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, suppress_tokens=_unprintable_token_ids(tokenizer),
        do_sample=False, max_new_tokens=16)
    return save(out_dir, model, tokenizer)
