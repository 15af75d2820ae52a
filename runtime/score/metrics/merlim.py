"""MERLIM's metrics (seed 001, sections 3.1-3.3 and 4; benchmarks.md 2.3). MERLIM publishes no
metric code (its repository holds generation code only), so every rule below follows the paper,
and each point the paper leaves open is marked "our reading".

Roles: an item shows the original image when its role (the value of ``image_attr``, or the id of
the node that made it) is listed in ``original``, else the edited image (MERLIM's records are
edited images). Ground truth comes from the record field ``target``: a mapping keyed by image
(``{original, edited}``, as the merlim source writes ``objects`` and ``count``) or one value for
every item. Every sample of an item is scored as one answer.

``merlim.recognition`` (section 3.1): the nouns of each answer (spaCy), place words discarded,
compound nouns kept whole; a noun is a true positive if it equals a ground-truth label or is a
synonym of one, a false positive otherwise; a label no noun matches is a false negative; P, R,
F1; an unsuitable answer ("There are many objects") scores P = R = 0. Instruction bias (Figures
3, 4): one row per prompt (``prompt_attr``) with its F1 and its mean number of nouns per answer,
and a row ``prompt = "all"`` with the mean of the per-prompt F1s and their standard deviation
(population, ddof 0: our reading of "a narrow standard deviation of 0.576").
  Nouns: tokens tagged NOUN or PROPN (a capitalised list, "Dog, Cat", is tagged PROPN); the
  head's lemma for plurals ("tennis rackets" -> "tennis racket"). Compound nouns: the chain of
  ``compound`` modifiers before a noun ("traffic light", "ice cream"), and an adjective before
  it when the pair is itself a noun (a label, a synonym-table entry or a WordNet noun: "hot
  dog", "potted plant"). Place and area words are discarded (room, street, square... and
  position words: middle, front, back, side, top...), as are words about the picture itself
  (image, picture, scene, object, item, thing), and a quantity noun before "of" ("a group of
  people" -> people). The paper keeps "the back of the car" as one noun; benchc drops the part
  word and keeps "car" (our reading: the paper does not say what such a noun matches).
  Synonyms: the user's table (``synonyms``, a CSV of noun,label rows, either order matches);
  WordNet (``wordnet = "synonyms"``: the two share a synset; ``"hyponyms"``: also a noun below
  the label, "man" -> person); and ``builtin_synonyms``, a few person words for COCO's
  "person" (man, woman, people, boy, girl, child...). MERLIM's ChatGPT-built table of 334,608
  noun pairs is not published, so recognition scores approximate the paper's.
  Unsuitable answers: no noun left after the discards (our reading of the paper's examples).
  P, R, F1 per answer, averaged over answers (``average = "macro"``, our reading), or from the
  summed counts (``"micro"``). An answer whose ground truth is empty has no recall (left out of
  the R and F1 means).

``merlim.relations`` (section 3.2, Table 2): yes/no accuracy of the affirmative question (Acc)
and of its negation (Acc^neg), on the original (Acc_org) and edited (Acc_ed) images, and
ΔAcc = |Acc_org - Acc_ed|. The expected answer is the record's ``answers`` entry for the
item's image and polarity (original, original_neg, edited, edited_neg). Yes/no is read from
the answer's first word (``answer_parse = "first_word"``) or its first yes/no word
(``"anywhere"``); an answer with neither is wrong (and counted as unparsed). Table 3's starred
accuracy (the LLM-only ablation, where models may answer "I do not know") is ``Acc_org_yn`` /
``Acc_ed_yn``: the accuracy over the answers read as yes or no only.

``merlim.counting`` (section 3.3, Figures 6, 7): the mean absolute error of the counts and its
standard deviation (population), on original and edited images, and the accuracy of the yes/no
follow-up ("Are there {n} {plural}?", ``follow_up_stage``): the share of follow-ups answered
yes, i.e. that confirm the model's own count, "regardless if the count was accurate".
``parse = "words"`` reads digits and number words (compiler.numbers.first_number: "There are
five books." -> 5); ``"int_only"`` is MERLIM's code, ``int(answer)`` (run_task.py
``parser_fn``: "5 books" and "five" are not read). As MERLIM's code keeps a record only when
both its original and edited answers parse, a record's answers (per sample) are dropped
unless all of them parse, in both modes; items with the attribute ``pair`` (the merlim source's
two records of one item, ``image_records = "both"``) are one record here. The follow-up accuracy
runs over the answers kept. ``dMAE`` = |MAE_original - MAE_edited|, on both rows (our addition,
as ΔAcc of Table 2; the paper plots the two MAEs in Figure 6).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from benchc.compiler.errors import BenchcError, Problem
from benchc.compiler.metrics import MerlimCountingParams, MerlimRecognitionParams, MerlimRelationsParams
from benchc.compiler.numbers import first_number, whole_integer
from benchc.compiler.ops.text_questions import QUANTITY_NOUNS

from .base import Metric, MetricInput, MetricResult, ScoredItem, groups_of, role_of, split_by, target_value, metric
from .text import spacy_pipeline, wordnet, yes_no

PLACE_WORDS = frozenset("""
room street square area place road city town park field court yard beach kitchen bathroom bedroom
office restaurant store shop market station airport downtown countryside neighborhood neighbourhood
intersection highway sidewalk pavement lot region location space setting environment landscape
surroundings outdoors indoors inside outside interior exterior background foreground distance
middle center centre front back side top bottom left right corner edge rear end part surface
""".split()) | {"living room", "dining room", "parking lot", "train station", "bus stop"}
META_WORDS = frozenset("""
image picture photo photograph pic scene view object item thing frame shot snapshot
""".split())
PERSON_WORDS = ("man", "woman", "men", "women", "people", "boy", "girl", "child", "children", "kid",
                "guy", "lady", "adult", "baby", "player", "person", "persons", "skier", "surfer",
                "skateboarder", "snowboarder", "pedestrian", "rider")
BUILTIN_SYNONYMS = frozenset((w, "person") for w in PERSON_WORDS)


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").replace("-", " ").split())


# --- roles and targets ---------------------------------------------------------------------


def image_of(item: ScoredItem, image_attr: str | None, original: list[str]) -> str:
    return "original" if role_of(item, image_attr) in original else "edited"


def image_label(item: ScoredItem, image: str, target: str, original: list[str]) -> str:
    """The image column of a row: 'original' or 'edited', or 'all' when nothing tells images
    apart (a plain target, such as a scene's object list, and no original roles)."""
    return image if original or isinstance(target_value(item, target), dict) else "all"


def truth_for(item: ScoredItem, target: str, image: str) -> Any:
    """The ground truth of ``item`` for the image it shows: ``value[image]`` of a mapping
    target, else the target itself. None if the item has none."""
    value = target_value(item, target)
    if isinstance(value, dict):
        return value.get(image)
    return value


# --- nouns ----------------------------------------------------------------------------------


class Synonyms:
    """Is a noun a ground-truth label or a synonym of one? Memoised per (noun, label)."""

    def __init__(self, params: MerlimRecognitionParams) -> None:
        self.mode = params.wordnet
        pairs: set[tuple[str, str]] = set(BUILTIN_SYNONYMS) if params.builtin_synonyms else set()
        if params.synonyms:
            pairs |= read_synonym_table(params.synonyms)
        self.pairs = {(_norm(a), _norm(b)) for a, b in pairs}
        self.words = {w for pair in self.pairs for w in pair}
        self.wn = wordnet()
        self._memo: dict[tuple[str, str], bool] = {}
        self._synset_memo: dict[str, frozenset[Any]] = {}
        self._above_memo: dict[str, frozenset[Any]] = {}

    def is_noun(self, phrase: str) -> bool:
        """Whether a multi-word phrase is a noun of its own (kept whole)."""
        phrase = _norm(phrase)
        return phrase in self.words or bool(self._synsets(phrase))

    def match(self, forms: tuple[str, ...], label: str) -> bool:
        return any(self._match(form, _norm(label)) for form in forms)

    def _match(self, noun: str, label: str) -> bool:
        key = (noun, label)
        if key not in self._memo:
            self._memo[key] = self._decide(noun, label)
        return self._memo[key]

    def _decide(self, noun: str, label: str) -> bool:
        if noun == label or noun.replace(" ", "") == label.replace(" ", ""):
            return True
        if (noun, label) in self.pairs or (label, noun) in self.pairs:
            return True
        if self.mode == "off":
            return False
        mine, theirs = self._synsets(noun), self._synsets(label)
        if mine & theirs:
            return True
        return self.mode == "hyponyms" and bool(theirs & self._above(noun))

    def _synsets(self, phrase: str) -> frozenset[Any]:
        if phrase not in self._synset_memo:
            self._synset_memo[phrase] = frozenset(self.wn.synsets(phrase.replace(" ", "_"), pos=self.wn.NOUN))
        return self._synset_memo[phrase]

    def _above(self, phrase: str) -> frozenset[Any]:
        if phrase not in self._above_memo:
            out: set[Any] = set()
            for synset in self._synsets(phrase):
                out |= set(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()))
            self._above_memo[phrase] = frozenset(out)
        return self._above_memo[phrase]


def read_synonym_table(path: str) -> set[tuple[str, str]]:
    """Rows ``noun,label`` (a header row naming the columns is skipped)."""
    file = Path(path).expanduser()
    try:
        with file.open(newline="", encoding="utf-8") as handle:
            rows = [r for r in csv.reader(handle) if r and not r[0].startswith("#")]
    except OSError as exc:
        raise BenchcError(Problem(f"merlim.recognition: cannot read the synonym table {path}: "
                                  f"{exc.strerror or exc}", key="synonyms",
                                  hint="a CSV of noun,label rows; a relative path is read from the "
                                       "current folder")) from None
    out = set()
    for index, row in enumerate(rows):
        if len(row) < 2:
            raise BenchcError(Problem(f"{path}: row {index + 1} has {len(row)} column(s), not noun,label",
                                      key="synonyms"))
        if index == 0 and row[0].strip().lower() in ("noun", "word", "synonym", "term"):
            continue
        out.add((row[0].strip(), row[1].strip()))
    return out


class Nouns:
    """The nouns of answers, each as its candidate forms (lemma phrase, surface phrase)."""

    def __init__(self, synonyms: Synonyms, labels: Iterable[str], extra_places: Iterable[str]) -> None:
        self.nlp = spacy_pipeline()
        self.synonyms = synonyms
        self.labels = {_norm(label) for label in labels}
        self.drop = PLACE_WORDS | META_WORDS | {_norm(w) for w in extra_places}
        self._memo: dict[str, list[tuple[str, ...]]] = {}

    def of(self, texts: list[str]) -> list[list[tuple[str, ...]]]:
        todo = sorted({t for t in texts if t not in self._memo})
        for text, doc in zip(todo, self.nlp.pipe(todo, batch_size=256)):
            self._memo[text] = self._nouns(doc)
        return [self._memo[t] for t in texts]

    def _nouns(self, doc: Any) -> list[tuple[str, ...]]:
        out: dict[tuple[str, ...], None] = {}
        for token in doc:
            if token.pos_ not in ("NOUN", "PROPN"):
                continue
            if token.dep_ in ("compound", "amod") and token.head.i > token.i and token.head.pos_ in ("NOUN", "PROPN"):
                continue  # a modifier of the noun after it ("traffic" light, "living" room)
            if token.lemma_.lower() in QUANTITY_NOUNS and any(c.lower_ == "of" for c in token.rights):
                continue  # "a group of people": the people count, not the group
            start = self._compound_start(token)
            if start > 0:
                before = doc[start - 1]
                if before.dep_ == "amod" and before.head.i == token.i:
                    joined = f"{before.lower_} {doc[start:token.i + 1].text.lower()}"
                    if _norm(joined) in self.labels or self.synonyms.is_noun(joined):
                        start -= 1
            modifiers = [t.lower_ for t in doc[start:token.i]]
            lemma = _norm(" ".join([*modifiers, token.lemma_.lower()]))
            surface = _norm(" ".join([*modifiers, token.lower_]))
            if lemma in self.drop or surface in self.drop or _norm(token.lemma_) in self.drop:
                continue
            out[(lemma, surface) if surface != lemma else (lemma,)] = None
        return list(out)

    @staticmethod
    def _compound_start(token: Any) -> int:
        start = token.i
        for child in reversed(list(token.lefts)):
            if child.dep_ == "compound" and child.i == start - 1:
                start = Nouns._compound_start(child)
            else:
                break
        return start


def answer_counts(nouns: list[tuple[str, ...]], labels: list[str], synonyms: Synonyms) -> tuple[int, int, int, int]:
    """(true positives, false positives, labels found, labels) of one answer."""
    found: set[int] = set()
    tp = 0
    for forms in nouns:
        hits = [k for k, label in enumerate(labels) if synonyms.match(forms, label)]
        if hits:
            tp += 1
            found.update(hits)
    return tp, len(nouns) - tp, len(found), len(labels)


def _prf(tp: int, fp: int, found: int, total: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = found / total if total else float("nan")
    f = 2 * p * r / (p + r) if p + r > 0 else (0.0 if total else float("nan"))
    return p, r, f


def _mean(values: list[float]) -> float | None:
    kept = [v for v in values if not np.isnan(v)]
    return float(np.mean(kept)) if kept else None


def _pct(value: float | None) -> float | None:
    return None if value is None else 100 * value


@metric("merlim.recognition", MerlimRecognitionParams)
class MerlimRecognition(Metric):
    uses_embedder = False
    percent_columns = frozenset({"P", "R", "F1", "F1_std"})

    def score(self, params: MerlimRecognitionParams, data: MetricInput) -> MetricResult:
        scored = self.answers(params, data.items)
        rows = []
        for key, part in split_by(data.items, params.by).items():
            ids = {i.item_id for i in part}
            mine = [a for a in scored if a["item"] in ids]
            images = sorted({a["image"] for a in mine})
            for image in images:
                of_image = [a for a in mine if a["image"] == image]
                prompts = sorted({a["prompt"] for a in of_image})
                per_prompt = []
                for prompt in prompts:
                    row = {**dict(zip(params.by, key)), "image": image, "prompt": prompt,
                           **self._aggregate(params, [a for a in of_image if a["prompt"] == prompt])}
                    per_prompt.append(row)
                rows += per_prompt
                if params.prompt_attr is not None:
                    f1s = [r["F1"] for r in per_prompt if r["F1"] is not None]
                    total = self._aggregate(params, of_image)
                    rows.append({**dict(zip(params.by, key)), "image": image, "prompt": "all", **total,
                                 "F1": float(np.mean(f1s)) if f1s else None,
                                 "F1_std": float(np.std(f1s)) if f1s else None})
        notes = ["Nouns: spaCy en_core_web_sm; synonyms: "
                 + ", ".join(filter(None, [f"WordNet 3.0 ({params.wordnet})" if params.wordnet != "off" else "",
                                           "builtin person words" if params.builtin_synonyms else "",
                                           f"table {params.synonyms}" if params.synonyms else ""]))
                 + ". MERLIM's ChatGPT synonym table is unpublished: scores approximate the paper's."]
        if params.prompt_attr is not None:
            notes.append("Rows with prompt = 'all': F1 is the mean of the per-prompt F1s, F1_std their "
                         "standard deviation (instruction bias).")
        columns = [*params.by, "image", "prompt", "responses", "P", "R", "F1", "nouns", "unsuitable", "F1_std"]
        return MetricResult(self.name, columns, rows, notes=notes)

    def answers(self, params: MerlimRecognitionParams, items: list[ScoredItem]) -> list[dict[str, Any]]:
        """Per answer: its item, image, prompt, nouns and counts."""
        truth: list[tuple[ScoredItem, str, list[str]]] = []
        for item in items:
            image = image_of(item, params.image_attr, params.original)
            labels = truth_for(item, params.target, image)
            if labels is None:
                raise BenchcError(Problem(f"merlim.recognition: item {item.item_id!r} has no {params.target!r} "
                                          f"labels for the {image} image", key="target"))
            truth.append((item, image_label(item, image, params.target, params.original),
                          [str(v) for v in (labels if isinstance(labels, list) else [labels])]))
        synonyms = Synonyms(params)
        nouns = Nouns(synonyms, {label for _, _, labels in truth for label in labels}, params.place_words)
        texts = [r for item, _, _ in truth for r in item.responses]
        found = iter(nouns.of(texts))
        out = []
        for item, image, labels in truth:
            prompt = role_of(item, params.prompt_attr) if params.prompt_attr is not None else "all"
            for _ in item.responses:
                these = next(found)
                out.append({"item": item.item_id, "image": image, "prompt": prompt, "nouns": len(these),
                            "counts": answer_counts(these, labels, synonyms)})
        return out

    @staticmethod
    def _aggregate(params: MerlimRecognitionParams, answers: list[dict[str, Any]]) -> dict[str, Any]:
        unsuitable = sum(1 for a in answers if a["nouns"] == 0)
        if params.average == "micro":
            tp, fp, hit, total = (sum(a["counts"][k] for a in answers) for k in range(4))
            p, r, f = _prf(tp, fp, hit, total)
            values: tuple[float | None, ...] = (p, None if np.isnan(r) else r, None if np.isnan(f) else f)
        else:
            per = [_prf(*a["counts"]) for a in answers]
            values = tuple(_mean([v[k] for v in per]) for k in range(3))
        return {"responses": len(answers), "P": _pct(values[0]), "R": _pct(values[1]), "F1": _pct(values[2]),
                "nouns": float(np.mean([a["nouns"] for a in answers])) if answers else None,
                "unsuitable": unsuitable, "F1_std": None}


@metric("merlim.relations", MerlimRelationsParams)
class MerlimRelations(Metric):
    uses_embedder = False
    percent_columns = frozenset({"Acc_org", "Acc_ed", "dAcc", "Acc_org_yn", "Acc_ed_yn"})

    def score(self, params: MerlimRelationsParams, data: MetricInput) -> MetricResult:
        rows = []
        for key, part in split_by(data.items, params.by).items():
            outcomes: dict[tuple[str, str], list[bool]] = {}
            answered: dict[tuple[str, str], list[bool]] = {}  # the yes/no answers only (Table 3's *)
            unparsed = {"affirmative": 0, "negated": 0}
            for item in part:
                image = image_of(item, params.image_attr, params.original)
                negated = role_of(item, params.polarity_attr) in params.negated
                polarity = "negated" if negated else "affirmative"
                expected = truth_for(item, params.target, f"{image}_neg" if negated else image)
                if isinstance(expected, list):
                    expected = expected[0] if expected else None
                if expected is None:
                    raise BenchcError(Problem(
                        f"merlim.relations: item {item.item_id!r} has no expected answer for the {polarity} "
                        f"question on the {image} image in {params.target!r}", key="target",
                        hint="target: a field {original, original_neg, edited, edited_neg} "
                             "(merlim source: answers)"))
                for response in item.responses:
                    said = yes_no(response, params.answer_parse)
                    unparsed[polarity] += said is None
                    right = said == str(expected).strip().lower()
                    outcomes.setdefault((polarity, image), []).append(right)
                    if said is not None:
                        answered.setdefault((polarity, image), []).append(right)
            for polarity in ("affirmative", "negated"):
                org, ed = outcomes.get((polarity, "original")), outcomes.get((polarity, "edited"))
                if org is None and ed is None:
                    continue
                acc_org = 100 * float(np.mean(org)) if org else None
                acc_ed = 100 * float(np.mean(ed)) if ed else None
                yn_org, yn_ed = answered.get((polarity, "original")), answered.get((polarity, "edited"))
                rows.append({**dict(zip(params.by, key)), "question": polarity,
                             "n_org": len(org or []), "n_ed": len(ed or []), "Acc_org": acc_org, "Acc_ed": acc_ed,
                             "dAcc": abs(acc_org - acc_ed) if acc_org is not None and acc_ed is not None else None,
                             "unparsed": unparsed[polarity],
                             "Acc_org_yn": 100 * float(np.mean(yn_org)) if yn_org else None,
                             "Acc_ed_yn": 100 * float(np.mean(yn_ed)) if yn_ed else None})
        where = "the first word" if params.answer_parse == "first_word" else "the first yes/no word"
        notes = [f"Yes/no read from {where} of each answer; an answer with neither counts as wrong (unparsed).",
                 "Acc_org_yn, Acc_ed_yn: accuracy over the answers read as yes or no only (MERLIM Table 3's *: "
                 "'I do not know' and other unparsed answers left out; n/a when none was)."]
        columns = [*params.by, "question", "n_org", "n_ed", "Acc_org", "Acc_ed", "dAcc", "unparsed", "Acc_org_yn",
                   "Acc_ed_yn"]
        return MetricResult(self.name, columns, rows, notes=notes)


@metric("merlim.counting", MerlimCountingParams)
class MerlimCounting(Metric):
    uses_embedder = False
    percent_columns = frozenset({"follow_up"})

    def score(self, params: MerlimCountingParams, data: MetricInput) -> MetricResult:
        if params.follow_up_stage and params.follow_up_stage not in data.stages:
            raise BenchcError(Problem(f"merlim.counting: the answers of stage {params.follow_up_stage!r} were "
                                      "not given to the metric", key="follow_up_stage"))
        follow = ({i.item_id: i.responses for i in data.stages[params.follow_up_stage]}
                  if params.follow_up_stage else {})
        rows = []
        for key, part in split_by(data.items, params.by).items():
            kept: dict[str, list[tuple[float, bool | None]]] = {}
            dropped = 0
            for group in _pairs(part).values():
                samples = max(len(i.responses) for i in group)
                for sample in range(samples):
                    answers = []
                    for item in group:
                        if sample >= len(item.responses):
                            continue
                        image = image_of(item, params.image_attr, params.original)
                        answers.append((item, image_label(item, image, params.target, params.original),
                                        self._read(params, item.responses[sample]),
                                        self._truth(params, item, image)))
                    if any(a[2] is None for a in answers):
                        dropped += len(answers)
                        continue
                    for item, image, predicted, truth in answers:
                        confirmed = None
                        if params.follow_up_stage:
                            replies = follow.get(item.item_id, ())
                            said = yes_no(replies[sample], params.answer_parse) if sample < len(replies) else None
                            confirmed = said == "yes"
                        kept.setdefault(image, []).append((abs(float(predicted) - truth), confirmed))
            mae = {image: float(np.mean([e for e, _ in kept[image]])) for image in kept}
            delta = abs(mae["original"] - mae["edited"]) if {"original", "edited"} <= set(mae) else None
            for image in sorted(kept):
                errors = np.array([e for e, _ in kept[image]])
                confirmed = [c for _, c in kept[image] if c is not None]
                rows.append({**dict(zip(params.by, key)), "image": image, "answers": len(errors),
                             "dropped": dropped, "MAE": float(errors.mean()), "MAE_std": float(errors.std()),
                             "dMAE": delta,
                             "follow_up": 100 * float(np.mean(confirmed)) if confirmed else None})
            if not kept:
                rows.append({**dict(zip(params.by, key)), "image": None, "answers": 0, "dropped": dropped,
                             "MAE": None, "MAE_std": None, "dMAE": None, "follow_up": None})
        how = ("digits and number words" if params.parse == "words" else "int(answer) only, as MERLIM's code")
        notes = [f"Counts read as {how}; a record's answers are dropped (per sample) unless all of them parse "
                 "(dropped: answers dropped in the split)."]
        if params.follow_up_stage:
            notes.append(f"follow_up: % of the {params.follow_up_stage!r} answers that say yes (confirm the count).")
        columns = [*params.by, "image", "answers", "dropped", "MAE", "MAE_std", "dMAE", "follow_up"]
        return MetricResult(self.name, columns, rows, notes=notes)

    @staticmethod
    def _read(params: MerlimCountingParams, text: str) -> float | None:
        value = first_number(text) if params.parse == "words" else whole_integer(text)
        return None if value is None else float(value)

    @staticmethod
    def _truth(params: MerlimCountingParams, item: ScoredItem, image: str) -> float:
        value = truth_for(item, params.target, image)
        if isinstance(value, list):
            value = value[0] if value else None
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise BenchcError(Problem(f"merlim.counting: item {item.item_id!r} has no count for the {image} "
                                      f"image in {params.target!r} (found {value!r})", key="target")) from None


def _pairs(items: list[ScoredItem]) -> dict[str, list[ScoredItem]]:
    """Items by record, the two records of one MERLIM item (attribute ``pair``) as one."""
    out: dict[str, list[ScoredItem]] = {}
    for group_id, group in groups_of(items).items():
        pair = group[0].attrs.get("pair")
        out.setdefault(group_id if pair is None else f"pair:{pair}", []).extend(group)
    return dict(sorted(out.items()))
