"""Koala's accuracies (seed 003, section 3.5 "Evaluation", appendix D Table 5, appendix E;
benchmarks.md 4.3; code: SegSub@542ce63 vlm_evaluation/eval.py, eval_1022.py, eval_utils.py).

``koala.accuracy`` gives one row per dataset (webqa, vqa, okvqa) and conflict type of the
items scored (original, perturbed, counterfactual, conflicting), with:
  * acknowledged: % of answers with an acknowledgment phrase (l_RET or "any response which
    acknowledges the models failure to answer"); ``phrases = "paper"``: the terms of Table 5,
    matched as case-insensitive substrings; ``"code"``: the code's list (eval_utils
    ``retrieval_predicted``), case-sensitive substrings with its leading spaces (" information",
    " not sure"...) and two terms Table 5 lacks (" sorry", "white background").
    ``count_no``: also an answer that is exactly "no" or "0" on VQAv2/OK-VQA (negative_eval.py).
  * accuracy: counterfactual and conflicting items: the acknowledged rate ("accuracy for
    counterfactual / source conflicts"); perturbed WebQA items: the bag-of-words match of the
    answer with the new label l_new; original items: WebQA, the bag-of-words match with the
    original label; VQAv2 and OK-VQA, the label (its first answer) as a case-insensitive
    substring of the answer ("the % of model responses that generate the original labels").
  * parametric: the parametric response rate of perturbed items, the bag-of-words match of the
    answer with the *original* label l_old, which is the answer of the original item with the
    same Koala id and dataset; empty when the scored items hold no original items (the bundled
    specs filter one type, and Koala's released labelled items hold no originals).
The details give the bag-of-words accuracy under each domain of ``domains`` separately, per
dataset and type ("bag_of_words_accuracy_per_domain"). The dataset and type of an item are its
attributes ``dataset`` and ``type`` if it has them, else
they are read from its record id (the koala source names records
``<dataset>/<type>/<id>/<image digest>``).

Bag-of-words (appendix E): both texts normalised as eval_1022.py ``normalize_text`` does
(lower-case; punctuation removed except a decimal point; articles a/an/the removed unless the
text is one word; number words as digits, 'point' kept; spaCy lemmas; a one-character text is
only lower-cased), each word bag restricted to the question domain's vocabulary (as sets).
``definition = "paper"``: Acc = [|bow_E ∩ bow_G| / |bow_E| == 1] (every expected domain word is
in the answer), with the vocabularies of Figure 10; ``"code"``: the code's continuous
precision |bow_E ∩ bow_G| / |bow_G| (0 without overlap), its vocabularies (``domain_dict``: no
'yes' among the colours, no 'h' among the shapes), the answer's last line only
(``format_ans``), and OK-VQA items scored by bag-of-words on the yes/no domain instead of by
substring (eval.py gives only ``dataset == 'vqa'`` the substring rule). An answer scores its best
domain among ``domains`` (the code takes the max over {color, shape}), or the domain its
``domain_attr`` names. The number domain reads the digits 0-20.
Not replayed: the released code passes the label's first character (``label[0]`` of a string)
to the bag-of-words match, so every WebQA score it computes is 0.
"""

from __future__ import annotations

import re
import string
import numpy as np

from benchc.compiler.errors import BenchcError, Problem
from benchc.compiler.metrics import KoalaParams

from .base import Metric, MetricInput, MetricResult, ScoredItem, split_by, target_value, metric
from .text import spacy_pipeline

PAPER_PHRASES = ("<RET>", "Sorry", "I cannot", "I do not", "image does not", "information", "not enough",
                 "not clear", "not visible", "not sure", "not able", "determine", "blurry", "blurred",
                 "no existence", "context", "apologize")
CODE_PHRASES = ("<RET>", "Sorry", "I cannot", "I do not", " image does not", " information", " not enough",
                " not clear", " not visible", " not sure", " not able", " determine", " blurry", " blurred",
                " no existence", " context", " apologize", " sorry", "white background")

_COLORS = ("orangebrown spot yellow blue rainbow ivory brown gray teal bluewhite orangepurple black white gold "
           "redorange pink blonde tan turquoise grey beige golden orange bronze maroon purple bluere red rust "
           "violet transparent silver chrome green aqua").split()
_SHAPES = ("globular octogon ring hoop octagon concave flat wavy shamrock cross cylinder cylindrical pentagon "
           "point pyramidal crescent rectangular hook tube cone bell spiral ball convex square arch cuboid step "
           "rectangle dot oval circle star crosse crest octagonal cube triangle semicircle domeshape obelisk "
           "corkscrew curve circular xs slope pyramid round bow straight triangular heart fork teardrop fold "
           "curl spherical diamond keyhole conical dome sphere bellshaped rounded hexagon flower globe "
           "torus").split()
_NUMBERS = [str(i) for i in range(21)]
VOCABULARY = {
    "code": {"color": frozenset(_COLORS), "shape": frozenset(_SHAPES), "yesno": frozenset({"yes", "no"}),
             "number": frozenset(_NUMBERS)},
    "paper": {"color": frozenset([*_COLORS, "yes"]), "shape": frozenset([*_SHAPES, "h"]),
              "yesno": frozenset({"yes", "no"}), "number": frozenset(_NUMBERS)},
}
"""Figure 10 (paper) and eval_1022.py ``domain_dict`` (code) differ by 'yes' and 'h'."""

RECORD_ID = re.compile(r"^(?P<dataset>[^/]+)/(?P<type>[^/]+)/(?P<id>.+)/[^/]+$")
_PUNCT_BUT_DOT = "".join(c for c in string.punctuation if c != ".")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def acknowledged(answer: str, params: KoalaParams, dataset: str = "") -> bool:
    if params.count_no and dataset in ("vqa", "okvqa") and answer.strip() in ("no", "0"):
        return True
    if params.phrases == "code":
        return any(p in answer for p in (*CODE_PHRASES, *params.extra_phrases))
    lowered = answer.lower()
    return any(p.lower() in lowered for p in (*PAPER_PHRASES, *params.extra_phrases))


def _to_number(word: str) -> str:
    if word == "point":
        return word
    from text_to_num import text2num

    try:
        return str(text2num(word, "en"))
    except ValueError:
        return word


class BagOfWords:
    """eval_1022.py's ``normalize_text``, memoised per text; spaCy runs in batches."""

    def __init__(self) -> None:
        self.nlp = spacy_pipeline()
        self._memo: dict[str, list[str]] = {}

    def prepare(self, texts: list[str]) -> None:
        todo: dict[str, str] = {}
        for text in texts:
            if text not in self._memo:
                stripped = text.strip()
                if len(stripped) == 1:
                    self._memo[text] = self._numbers(text.lower()).split()
                else:
                    todo[text] = self._pre(text)
        keys = sorted(todo)
        for text, doc in zip(keys, self.nlp.pipe([todo[k] for k in keys], batch_size=256)):
            self._memo[text] = " ".join(t.lemma_ for t in doc).split()

    def words(self, text: str) -> list[str]:
        if text not in self._memo:
            self.prepare([text])
        return self._memo[text]

    @staticmethod
    def _numbers(text: str) -> str:
        return " ".join(_to_number(w) for w in text.split())

    def _pre(self, text: str) -> str:
        text = text.lower().translate(str.maketrans("", "", _PUNCT_BUT_DOT))
        text = re.sub(r"\.(?!\d)", "", text)
        if len(text.strip().split()) > 1:
            text = _ARTICLES.sub(" ", text)
        return self._numbers(text)


def bow_score(expected: str, answer: str, domain: str, bags: BagOfWords, definition: str) -> float:
    vocabulary = VOCABULARY[definition][domain]
    e = set(bags.words(expected)) & vocabulary
    g = set(bags.words(answer)) & vocabulary
    common = e & g
    if definition == "paper":
        return float(bool(e) and common == e)
    return len(common) / len(g) if common else 0.0


def kind_of(item: ScoredItem) -> tuple[str, str, str]:
    """(dataset, type, Koala id) of an item: its attributes, else its record id."""
    match = RECORD_ID.match(item.group_id)
    dataset = item.attrs.get("dataset") or (match.group("dataset") if match else None)
    kind = item.attrs.get("type") or (match.group("type") if match else None)
    if dataset is None or kind is None:
        raise BenchcError(Problem(f"koala.accuracy: cannot tell the dataset and type of item {item.item_id!r}",
                                  hint="use the koala source (record ids <dataset>/<type>/<id>/...) or give "
                                       "items the attributes dataset and type"))
    return str(dataset), str(kind), match.group("id") if match else item.group_id


CELLS = ("img_old_label_old", "img_new_label_old", "img_old_label_new", "img_new_label_new", "img_old_label_ret",
         "img_new_label_ret")
"""eval.py's six result keys (``img_old,label_old`` ...; written with "_" as context_scores.csv does)."""
NEW_TYPES = ("perturbed", "counterfactual", "conflicting", "negative")
REFUSAL_TYPES = ("counterfactual", "conflicting", "negative")


@metric("koala.accuracy", KoalaParams)
class KoalaAccuracy(Metric):
    uses_embedder = False
    percent_columns = frozenset({*CELLS, "accuracy", "acknowledged"})

    def score(self, params: KoalaParams, data: MetricInput) -> MetricResult:
        bags = BagOfWords()
        originals: dict[str, ScoredItem] = {}
        by_koala_id: dict[tuple[str, str], ScoredItem] = {}
        for item in data.items:
            dataset, kind, koala_id = kind_of(item)
            if kind == "original":
                originals[item.group_id] = item
                by_koala_id[(dataset, koala_id)] = item
        texts = [self._answer(params, r) for i in data.items for r in i.responses]
        bags.prepare(texts + [label for i in data.items if (label := self._label(params, i))])
        rows = []
        per_domain: dict[str, dict[str, list[float]]] = {}
        unpaired = unlabelled = 0
        for key, part in split_by(data.items, params.by).items():
            cells: dict[tuple[str, str], dict[str, list[float]]] = {}
            for item in part:
                dataset, kind, koala_id = kind_of(item)
                cell = cells.setdefault((dataset, kind), {c: [] for c in (*CELLS, "accuracy", "acknowledged",
                                                                           "parametric", "paired")})
                label = self._label(params, item)
                label_of = "/".join([*(str(k) for k in key), dataset, kind])
                if kind not in NEW_TYPES:  # an original item on its own: its label, acknowledgments
                    for response in item.responses:
                        answer = self._answer(params, response)
                        cell["acknowledged"].append(float(acknowledged(answer, params, dataset)))
                        if label:
                            scores = self._label_match(params, item, dataset, kind, label, answer, bags)
                            cell["accuracy"].append(max(scores.values()))
                            self._per_domain(per_domain, label_of, scores)
                    continue
                original = self._original(item, dataset, koala_id, originals, by_koala_id)
                old_label = self._label(params, original) if original is not None else None
                unpaired += original is None or not original.responses
                unlabelled += original is not None and not old_label
                for s, response in enumerate(item.responses):
                    new = self._answer(params, response)
                    old = (self._answer(params, original.responses[min(s, len(original.responses) - 1)])
                           if original is not None and original.responses else None)
                    cell["paired"].append(float(old is not None))
                    for img, answer in (("img_new", new), ("img_old", old)):
                        if answer is None:
                            continue
                        cell[f"{img}_label_ret"].append(float(acknowledged(answer, params, dataset)))
                        scores = self._label_match(params, item, dataset, kind, label, answer, bags)
                        cell[f"{img}_label_new"].append(max(scores.values()))
                        if img == "img_new" and kind == "perturbed":
                            self._per_domain(per_domain, label_of, scores)
                        if old_label:
                            cell[f"{img}_label_old"].append(max(self._label_match(
                                params, item, dataset, kind, old_label, answer, bags).values()))
                    cell["acknowledged"] = cell["img_new_label_ret"]
                    cell["accuracy"] = cell["img_new_label_ret" if kind in REFUSAL_TYPES else "img_new_label_new"]
                    if kind == "perturbed":
                        cell["parametric"] = cell["img_new_label_old"]
            for (dataset, kind), cell in sorted(cells.items()):
                answers = len(cell["acknowledged"])
                paired = int(sum(cell.pop("paired"))) if kind in NEW_TYPES else None
                rows.append({**dict(zip(params.by, key)), "dataset": dataset, "type": kind, "answers": answers,
                             "paired": paired,
                             **{k: 100 * float(np.mean(v)) if v else None for k, v in cell.items()}})
        phrases = "Table 5, case-insensitive" if params.phrases == "paper" else "eval_utils.py, case-sensitive"
        bow = ("appendix E: every expected word present" if params.definition == "paper"
               else "eval_1022.py: precision over the answer's words")
        domains = (", ".join(params.domains) if params.domain_attr is None
                   else f"the domain in {params.domain_attr!r}")
        count_no = "; an answer 'no' or '0' on VQAv2/OK-VQA counts too (count_no)" if params.count_no else ""
        notes = [f"Acknowledgment phrases: {phrases}{count_no}; bag-of-words ({bow}) over {domains} (WebQA "
                 f"counterfactual labels: yesno, as eval.py)."]
        if unpaired:
            notes.append(f"{unpaired} edited item(s) without an answered original item: their img_old cells are "
                         f"left out (Koala's eval.py drops such items from every cell; here they keep the img_new "
                         f"cells).")
        if unlabelled:
            notes.append(f"{unlabelled} edited item(s) whose original item has no label (l_old unknown): "
                         f"label_old cells and the parametric rate leave them out.")
        columns = [*params.by, "dataset", "type", "answers", "paired", *CELLS, "accuracy", "acknowledged",
                   "parametric"]
        details = {"bag_of_words_accuracy_per_domain": {
            cell: {d: round(100 * float(np.mean(v)), 4) for d, v in sorted(domains.items())}
            for cell, domains in sorted(per_domain.items())}}
        return MetricResult(self.name, columns, rows, details=details, notes=notes)

    @staticmethod
    def _original(item: ScoredItem, dataset: str, koala_id: str, originals: dict[str, ScoredItem],
                  by_koala_id: dict[tuple[str, str], ScoredItem]) -> ScoredItem | None:
        """The original item an edited one is compared with: the one its ``original`` attribute
        names (the koala source with ``originals``), else the original of its dataset and Koala id
        (eval.py's ``original_samples``)."""
        named = item.attrs.get("original")
        if named is not None and named in originals:
            return originals[named]
        return by_koala_id.get((dataset, koala_id))

    @staticmethod
    def _per_domain(per_domain: dict[str, dict[str, list[float]]], label_of: str, scores: dict[str, float]) -> None:
        if "substring" not in scores:
            for domain, value in scores.items():
                per_domain.setdefault(label_of, {}).setdefault(domain, []).append(value)

    @staticmethod
    def _answer(params: KoalaParams, response: str) -> str:
        if params.definition == "code":
            lines = response.strip().split("\n")
            return lines[-1] if lines else ""
        return response

    @staticmethod
    def _label(params: KoalaParams, item: ScoredItem) -> str:
        """The item's label; "" when unknown (an original item the koala source derived)."""
        value = target_value(item, params.target)
        if isinstance(value, list):
            value = value[0] if value else ""
        if value is None:
            raise BenchcError(Problem(f"koala.accuracy: item {item.item_id!r} has no {params.target!r}",
                                      key="target"))
        return str(value)

    def _label_match(self, params: KoalaParams, item: ScoredItem, dataset: str, kind: str, label: str,
                     answer: str, bags: BagOfWords) -> dict[str, float]:
        """The match per question domain (the item's score is the best), or {"substring": ...}."""
        if dataset == "vqa" or (dataset == "okvqa" and params.definition == "paper"):
            return {"substring": float(label.strip().lower() in answer.lower())}
        if dataset == "okvqa":
            domains = ["yesno"]
        elif kind == "counterfactual" and params.domain_attr is None:
            domains = ["yesno"]
        elif kind == "original" and params.domain_attr is None:
            domains = [*params.domains, *(["yesno"] if "yesno" not in params.domains else [])]
        elif params.domain_attr is not None:
            domains = [str(item.attrs.get(params.domain_attr))]
            if domains[0] not in VOCABULARY[params.definition]:
                raise BenchcError(Problem(f"koala.accuracy: item {item.item_id!r} has domain {domains[0]!r}",
                                          key="domain_attr", hint="domains: color, shape, yesno, number"))
        else:
            domains = list(params.domains)
        return {d: bow_score(label, answer, d, bags, params.definition) for d in domains}
