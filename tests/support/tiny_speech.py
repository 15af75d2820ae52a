"""Tiny random-weight speech models, built fully offline: a Whisper and a VITS (MMS-TTS class).

``build_tiny_whisper(out_dir, seed=0)`` writes a checkpoint folder that loads with
``AutoProcessor`` + ``AutoModelForSpeechSeq2Seq`` (``local_files_only=True``):

* **Tokenizer**: a ``WhisperTokenizer`` over a byte-level BPE written by hand (the 256 GPT-2 byte
  symbols plus a few merges), with Whisper's special tokens: ``<|endoftext|>`` (eos, pad, bos,
  unk), ``<|startoftranscript|>`` (the decoder start), ``<|en|>`` and ``<|fr|>`` (language),
  ``<|translate|>``, ``<|transcribe|>``, ``<|startoflm|>``, ``<|startofprev|>``, ``<|nospeech|>``
  and ``<|notimestamps|>``. ``generate`` needs the generation config to map them
  (``lang_to_id``, ``task_to_id``, ``no_timestamps_token_id``, ``decoder_start_token_id``), so
  ``language="en"`` and ``task="transcribe"`` work as on a real multilingual Whisper.
* **Feature extractor**: ``WhisperFeatureExtractor`` (80 mel bins, 16 kHz) with a 2 s window
  (``chunk_length=2``: 200 frames, so ``max_source_positions=100``) to keep the tests fast.
* **Model**: ``WhisperForConditionalGeneration``, d_model 16, one encoder and one decoder layer.
  Weights are drawn with ``init_std=1.0`` (not 0.02) so that transcripts differ from clip to clip.
  The generation config suppresses every special token but eos and every byte that is not
  printable ASCII, so transcripts are printable gibberish, deterministic for a seed.

``build_tiny_wav2vec2(out_dir, seed=0)`` writes a CTC model (``Wav2Vec2ForCTC``, hidden 16, one
layer, two convolutions of stride 5 and 4) with a character ``Wav2Vec2CTCTokenizer`` (upper-case
letters, ``'`` and ``|`` between words, ``<pad>`` the CTC blank) and a ``Wav2Vec2FeatureExtractor``
(16 kHz, no attention mask), loadable with ``AutoProcessor`` + ``AutoModelForCTC``, like
facebook/wav2vec2-base-960h; weights drawn with ``initializer_range=1.0`` so transcripts vary.

``build_tiny_vits(out_dir, seed=0)`` writes a ``VitsModel`` (hidden 16, one layer, 16 kHz) with
a character-level ``VitsTokenizer`` (lowercase letters, digits, punctuation; no phonemizer),
loadable with ``AutoTokenizer`` + ``AutoModelForTextToWaveform``.

Weights are drawn under ``torch.manual_seed(seed)`` inside ``fork_rng``: the same seed gives the
same files, and the caller's global RNG is left alone.
"""

from __future__ import annotations

import json
import pathlib

from support.tiny_weights import save, seeded

__all__ = ["WHISPER_SPECIALS", "WHISPER_WINDOW_S", "build_tiny_vits", "build_tiny_wav2vec2", "build_tiny_whisper"]

WHISPER_SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|fr|>", "<|translate|>",
                    "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"]
WHISPER_WINDOW_S = 2
_MERGES = [("t", "h"), ("th", "e"), ("Ġ", "t"), ("Ġt", "h"), ("Ġth", "e"), ("a", "n"), ("Ġ", "a")]


def _write_bpe(out_dir: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode  # in 4.x and 5.x

    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
    for a, b in _MERGES:
        vocab[a + b] = len(vocab)
    vocab_file, merges_file = out_dir / "vocab.json", out_dir / "merges.txt"
    vocab_file.write_text(json.dumps(vocab), encoding="utf-8")
    merges_file.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in _MERGES), encoding="utf-8")
    return vocab_file, merges_file


def _whisper_tokenizer(out_dir: pathlib.Path):
    from transformers import WhisperTokenizer

    vocab_file, merges_file = _write_bpe(out_dir)
    eot = WHISPER_SPECIALS[0]
    tokenizer = WhisperTokenizer(str(vocab_file), str(merges_file), unk_token=eot, bos_token=eot,
                                 eos_token=eot, pad_token=eot)
    tokenizer.add_special_tokens({"additional_special_tokens": WHISPER_SPECIALS[1:]})
    return tokenizer


def _suppressed(tokenizer, ids: dict[str, int]) -> list[int]:
    """Every special token but eos, and every byte token that is not printable ASCII."""
    out = [i for token, i in ids.items() if token != "<|endoftext|>"]
    for token_id in range(len(tokenizer)):
        if token_id in ids.values():
            continue
        text = tokenizer.convert_tokens_to_string([tokenizer.convert_ids_to_tokens(token_id)])
        if not text or any(not (" " <= ch <= "~") for ch in text):
            out.append(token_id)
    return sorted(out)


def build_tiny_whisper(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
    )

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _whisper_tokenizer(out_dir)
    extractor = WhisperFeatureExtractor(feature_size=80, sampling_rate=16_000, chunk_length=WHISPER_WINDOW_S,
                                        hop_length=160, n_fft=400)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in WHISPER_SPECIALS}
    eot, start = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    suppress = _suppressed(tokenizer, ids)
    config = WhisperConfig(
        vocab_size=len(tokenizer), num_mel_bins=80, d_model=16, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
        max_source_positions=extractor.nb_max_frames // 2, max_target_positions=448,
        pad_token_id=eot, bos_token_id=eot, eos_token_id=eot, decoder_start_token_id=start,
        suppress_tokens=None, begin_suppress_tokens=None, init_std=1.0)
    model = seeded(lambda: WhisperForConditionalGeneration(config).eval(), seed)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=start, bos_token_id=eot, eos_token_id=eot, pad_token_id=eot, max_length=448,
        lang_to_id={"<|en|>": ids["<|en|>"], "<|fr|>": ids["<|fr|>"]},
        task_to_id={"translate": ids["<|translate|>"], "transcribe": ids["<|transcribe|>"]},
        no_timestamps_token_id=ids["<|notimestamps|>"], is_multilingual=True,
        suppress_tokens=suppress, begin_suppress_tokens=[eot])
    return save(out_dir, model, WhisperProcessor(feature_extractor=extractor, tokenizer=tokenizer))


CTC_VOCAB = ["<pad>", "<s>", "</s>", "<unk>", "|", *"ABCDEFGHIJKLMNOPQRSTUVWXYZ'"]


def build_tiny_wav2vec2(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    from transformers import (Wav2Vec2Config, Wav2Vec2CTCTokenizer, Wav2Vec2FeatureExtractor, Wav2Vec2ForCTC,
                              Wav2Vec2Processor)

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab_file = out_dir / "vocab.json"
    vocab_file.write_text(json.dumps({ch: i for i, ch in enumerate(CTC_VOCAB)}), encoding="utf-8")
    tokenizer = Wav2Vec2CTCTokenizer(str(vocab_file), word_delimiter_token="|")
    extractor = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16_000, padding_value=0.0,
                                         do_normalize=True, return_attention_mask=False)
    config = Wav2Vec2Config(
        vocab_size=len(CTC_VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, conv_dim=(16, 16), conv_stride=(5, 4), conv_kernel=(10, 8),
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, pad_token_id=0,
        ctc_loss_reduction="mean", initializer_range=1.0)
    model = seeded(lambda: Wav2Vec2ForCTC(config).eval(), seed)
    return save(out_dir, model, Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer))


VITS_CHARS = ["<pad>", "<unk>", *" abcdefghijklmnopqrstuvwxyz'.,?!-0123456789"]


def build_tiny_vits(out_dir: pathlib.Path, seed: int = 0) -> pathlib.Path:
    from transformers import VitsConfig, VitsModel, VitsTokenizer

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab_file = out_dir / "vocab.json"
    vocab_file.write_text(json.dumps({ch: i for i, ch in enumerate(VITS_CHARS)}), encoding="utf-8")
    tokenizer = VitsTokenizer(str(vocab_file), add_blank=True, normalize=True, phonemize=False, language="eng")
    config = VitsConfig(
        vocab_size=len(VITS_CHARS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, window_size=2,
        ffn_dim=32, flow_size=8, spectrogram_bins=17, upsample_initial_channel=16, upsample_rates=[4, 4],
        upsample_kernel_sizes=[8, 8], resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1, 3]],
        prior_encoder_num_flows=1, prior_encoder_num_wavenet_layers=1, posterior_encoder_num_wavenet_layers=1,
        duration_predictor_num_flows=1, duration_predictor_filter_channels=16, depth_separable_num_layers=1,
        sampling_rate=16_000)
    return save(out_dir, seeded(lambda: VitsModel(config).eval(), seed), tokenizer)
