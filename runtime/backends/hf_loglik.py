"""``choice-loglik`` requests on the ``hf`` backend: multiple choice scored as lm-eval scores it.

Each choice is the continuation ``delimiter + choice`` of the prompt; its log-likelihood is the
sum of the log-probabilities the model gives the continuation's tokens after the prompt's. The
answer is the choice ranked first (``Choices.choose_by``): by that sum (lm-eval's ``acc``) or by
the sum over the choice's length in characters (its ``acc_norm``); a tie goes to the first
choice, as ``numpy.argmax`` gives it. Each log-likelihood, and whether the continuation is the
model's greedy one, are kept beside the answer (``loglik_details``), as lm-eval logs ``resps``.

This mirrors lm-eval 0.4.13's ``HFLM`` for a causal LM with its default arguments
(lm_eval/models/huggingface.py, lm_eval/api/model.py):

* ``TemplateLM._encode_pair``: white space at the end of the prompt moves to the start of the
  continuation; the whole text is tokenized, and the continuation's tokens are those after the
  prompt's own tokens. An empty prompt (``TemplateLM.loglikelihood``) is the model's prefix
  token (BOS, else EOS), the continuation tokenized without special tokens.
* ``HFLM.tok_encode``: the tokenizer's own special tokens (a BOS for Llama or Gemma tokenizers,
  none for GPT-2's), but none for a text that already starts with the BOS text.
* ``HFLM._loglikelihood_tokens``: the input is prompt + continuation less its last token, cut on
  the left to the model's maximum length (``resolve_max_length``); log-softmax over the
  vocabulary in the model's dtype, the continuation's positions gathered. No attention mask is
  passed, as HFLM passes none to a causal LM.

Each continuation is scored alone (no padding, so no other request can change its rounding),
which is HFLM at ``--batch_size 1``, its default, so the answers do not depend on which requests
share a batch. Choices whose inputs are the same tokens (one-token choices such as " A" .. " D")
share one forward pass, as HFLM's one-token cache does. Chat templates are not applied (HFLM applies none without
``--apply_chat_template``), and requests with images are refused: scoring a VLM's choices needs
its processor's image tokens, which is not built yet.
"""

from __future__ import annotations

import json
from typing import Any

from benchc.compiler.errors import BackendError, Problem

from .base import Choices, Request, Response

DEFAULT_MAX_LENGTH = 2048
"""lm_eval/models/huggingface.py HFLM._DEFAULT_MAX_LENGTH."""

_MAX_LENGTH_ATTRS = ("n_positions", "max_position_embeddings", "n_ctx")
"""lm_eval/models/utils.py resolve_max_length reads the first of these the config sets."""

TOKENIZER_INFINITY = 1000000000000000019884624838656
"""A tokenizer's model_max_length when it has none (lm_eval/models/utils.py)."""


def max_length(model: Any, tokenizer: Any) -> int:
    """resolve_max_length: the text config's (a composite config's ``text_config`` first), else
    the tokenizer's model_max_length, else 2048."""
    config = getattr(model.config, "text_config", None) or model.config
    for attr in _MAX_LENGTH_ATTRS:
        value = getattr(config, attr, None)
        if value is not None:
            return int(value)
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if limit is not None and limit != TOKENIZER_INFINITY else DEFAULT_MAX_LENGTH


def prefix_token(tokenizer: Any) -> int:
    """HFLM.prefix_token_id: BOS if the tokenizer has one, else EOS."""
    token = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if token is None:
        raise BackendError(Problem("hf: choice-loglik with an empty prompt needs a BOS or EOS token, and the "
                                   "tokenizer has neither"))
    return int(token)


def encode(tokenizer: Any, text: str) -> list[int]:
    """HFLM.tok_encode with add_bos_token and add_special_tokens unset."""
    bos = tokenizer.decode(prefix_token(tokenizer)) if (tokenizer.bos_token_id is not None
                                                         or tokenizer.eos_token_id is not None) else None
    if bos is not None and text.startswith(bos):
        return list(tokenizer.encode(text, add_special_tokens=False))
    return list(tokenizer.encode(text))


def encode_pair(tokenizer: Any, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """TemplateLM.loglikelihood's tokenization of one (context, continuation) pair."""
    if context == "":
        continuation_ids = list(tokenizer.encode(continuation, add_special_tokens=False))
        prefix = prefix_token(tokenizer)
        if continuation_ids and continuation_ids[0] == prefix:
            return continuation_ids[:1], continuation_ids[1:]
        return [prefix], continuation_ids
    spaces = len(context) - len(context.rstrip())
    if spaces > 0:
        continuation = context[-spaces:] + continuation
        context = context[:-spaces]
    whole = encode(tokenizer, context + continuation)
    context_ids = encode(tokenizer, context)
    return context_ids, whole[len(context_ids):]


def model_input(context_ids: list[int], continuation_ids: list[int], limit: int) -> tuple[int, ...]:
    """HFLM._loglikelihood_tokens's input: prompt + continuation less its last token, cut on the
    left to ``limit + 1`` tokens first."""
    if not continuation_ids:
        raise BackendError(Problem("hf: a choice's continuation has no tokens",
                                   hint="a choice must add text after the prompt (check stage.delimiter)"))
    return tuple((context_ids + continuation_ids)[-(limit + 1):][:-1])


def log_probs(torch: Any, model: Any, tokens: tuple[int, ...], device: Any) -> Any:
    """Log-softmax over the vocabulary at every position of ``tokens`` ([len, vocab]), in the
    model's dtype, without an attention mask (HFLM._model_call for a causal LM)."""
    inputs = torch.tensor([list(tokens)], dtype=torch.long, device=device)
    with torch.no_grad():
        return torch.nn.functional.log_softmax(model(inputs).logits, dim=-1)[0]


def continuation_loglik(torch: Any, logits: Any, continuation_ids: list[int], device: Any) -> tuple[float, bool]:
    """(sum of the continuation's log-probabilities, whether each of its tokens is the argmax),
    from the log-probabilities of its input: its last ``len(continuation)`` positions."""
    picked = logits[logits.shape[0] - len(continuation_ids):]
    wanted = torch.tensor(continuation_ids, dtype=torch.long, device=device)
    greedy = bool((picked.argmax(dim=-1) == wanted).all())
    return float(picked.gather(1, wanted.unsqueeze(-1)).sum()), greedy


def chosen(choices: Choices, logliks: list[float]) -> int:
    """The index of the answer: the first best, as numpy.argmax picks it."""
    if choices.choose_by == "loglik_per_char":
        scores = [ll / len(text) if text else float("-inf") for ll, text in zip(logliks, choices.texts, strict=True)]
    else:
        scores = list(logliks)
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def loglik_details(choices: Choices, logliks: list[float], greedy: list[bool]) -> str:
    """What is kept beside the answer: each choice's log-likelihood and greedy flag (lm-eval's
    ``resps``), as canonical JSON."""
    return json.dumps({"choices": list(choices.texts), "loglik": logliks, "greedy": greedy},
                      sort_keys=True, separators=(",", ":"))


def answer(backend: Any, request: Request) -> Response:
    """One choice-loglik request on a loaded ``hf`` backend (``HFVision``): the chosen choice's
    text as the answer."""
    choices = request.choices
    if choices is None:
        raise BackendError(Problem(f"hf: request {request.key} is a choice-loglik request without choices"))
    if request.media or backend.takes_images or backend.encoder_decoder:
        raise BackendError(Problem(f"hf: choice-loglik runs on text-only causal language models; "
                                   f"{backend.path.name} is not one, or a request has an image",
                                   hint="score a VLM's multiple choice by letter generation ([answer] kind = "
                                        "\"letter\") until choice-loglik takes images"))
    tokenizer, model = backend.tokenizer, backend.model
    limit = max_length(model, tokenizer)
    context = f"{request.system}\n\n{request.prompt}" if request.system else request.prompt
    logliks, greedy = [], []
    computed: dict[tuple[int, ...], Any] = {}  # choices of one token share their input: one forward pass
    for text in choices.texts:
        with backend.tokenizer_lock:
            context_ids, continuation_ids = encode_pair(tokenizer, context, choices.delimiter + text)
        tokens = model_input(context_ids, continuation_ids, limit)
        if tokens not in computed:
            computed[tokens] = log_probs(backend.torch, model, tokens, backend.device)
        ll, is_greedy = continuation_loglik(backend.torch, computed[tokens], continuation_ids, backend.device)
        logliks.append(ll)
        greedy.append(is_greedy)
    return Response("text", text=choices.texts[chosen(choices, logliks)],
                    data=loglik_details(choices, logliks, greedy).encode())
