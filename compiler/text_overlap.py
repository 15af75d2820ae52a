"""Text leakage between two manifests (issue 28 item 10): a training copy of the evaluation
prompts under other record ids shares no id and no media, yet it is the same test.

Prompts are compared normalised (NFKC, case folded, punctuation and runs of white space made one
space): exact matches first, then near duplicates, whose word 3-gram sets have a Jaccard
similarity of at least a declared threshold. Candidates come from datasketch's MinHash LSH (128
permutations, seed 1: the same pairs every run), and each is confirmed on the exact Jaccard of its
shingles, so a pair is never reported on the sketch's estimate alone. Each match says which signal
matched: the prompt alone, or the prompt and the target.

Only items without media are compared by text: "What is in the image?" asked of another image is
another test, and images are compared by their bytes and perceptual hashes (``disjoint.py``).
"""

from __future__ import annotations

import json
import string
import unicodedata
from dataclasses import dataclass
from typing import Any

SHINGLE_WORDS = 3
NUM_PERM = 128
SEED = 1
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation})


@dataclass(frozen=True)
class TextItem:
    item_id: str
    prompt: str
    targets: str
    """the item's targets as canonical text (equal targets, equal text)"""


@dataclass(frozen=True)
class TextMatch:
    how: str  # "exact" | "near"
    item: str
    other_item: str
    jaccard: float
    same_target: bool

    @property
    def signal(self) -> str:
        return "prompt and target" if self.same_target else "prompt"


def text_items(frame: Any) -> list[TextItem]:
    """The text-only items of a manifest's items table (``item_id``, ``prompt``, ``targets``,
    ``media``): an item with media is its media's test, not its prompt's."""
    columns = ("item_id", "prompt", "targets", "media")
    rows = zip(*(frame.get_column(c).to_list() for c in columns))
    return [TextItem(i, p or "", json.dumps(json.loads(t or "{}"), sort_keys=True))
            for i, p, t, media in rows if not json.loads(media or "[]")]


def normalised(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().translate(_PUNCTUATION).split())


def shingles(text: str) -> frozenset[str]:
    words = normalised(text).split()
    if len(words) <= SHINGLE_WORDS:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i:i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def text_overlap(mine: list[TextItem], other: list[TextItem], threshold: float) -> list[TextMatch]:
    """Exact (normalised) prompt matches, then near duplicates at Jaccard >= ``threshold``
    (a threshold above 1 or below 0 checks exact matches only); sorted."""
    by_text: dict[str, list[TextItem]] = {}
    for item in other:
        by_text.setdefault(normalised(item.prompt), []).append(item)
    found = [TextMatch("exact", a.item_id, b.item_id, 1.0, a.targets == b.targets)
             for a in mine if normalised(a.prompt) for b in by_text.get(normalised(a.prompt), [])]
    if 0.0 <= threshold <= 1.0:
        exact = {(m.item, m.other_item) for m in found}
        found += [m for m in _near(mine, other, threshold) if (m.item, m.other_item) not in exact]
    return sorted(found, key=lambda m: (m.item, m.other_item))


def _near(mine: list[TextItem], other: list[TextItem], threshold: float) -> list[TextMatch]:
    from datasketch import MinHash, MinHashLSH

    def sketch(words: frozenset[str]) -> MinHash:
        minhash = MinHash(num_perm=NUM_PERM, seed=SEED)
        minhash.update_batch([w.encode("utf-8") for w in sorted(words)])
        return minhash

    theirs = {b.item_id: (b, shingles(b.prompt)) for b in other}
    lsh = MinHashLSH(threshold=max(threshold, 0.01), num_perm=NUM_PERM)
    for item_id, (_, words) in sorted(theirs.items()):
        if words:
            lsh.insert(item_id, sketch(words))
    out = []
    for a in mine:
        words = shingles(a.prompt)
        if not words:
            continue
        for other_id in sorted(lsh.query(sketch(words))):
            b, other_words = theirs[other_id]
            score = jaccard(words, other_words)
            if score >= threshold:
                out.append(TextMatch("near", a.item_id, other_id, round(score, 4), a.targets == b.targets))
    return out
