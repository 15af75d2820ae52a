"""MMCBench's text corruptions (benchmarks.md 3.1) as one op, ``text.corrupt``.

MMCBench released its corrupted captions but neither the generating code nor the heavy/light
parameters. We rebuild the 20 corruptions that need no model, each from the library it most
likely came from, and calibrate one strength per severity so that the mean character change
(``1 - difflib.SequenceMatcher(None, clean, corrupted, autojunk=False).ratio()``) on the
released ``text2speech_*_hard_1k_first50.csv`` tables is close to the released columns'
(``benchmarks/text_corruption_calibration.py`` measures it; the table is in that script's output).

Where each one comes from:

* nlpaug 1.1.11 (the char augmenters, ``aug_char_p = aug_word_p = strength``):
  ``substitute_char_by_ocr`` (OcrAug), ``substitute_char_by_keyboard`` (KeyboardAug),
  ``insert_char_randomly`` / ``substitute_char_randomly`` / ``swap_char_randomly`` /
  ``delete_char_randomly`` (RandomCharAug), and ``misspell_word`` (SpellingAug, ``aug_p``). The
  released tables show upper-case letters, digits and symbols in these columns, which nlpaug
  draws and textattack's character swaps (lower-case letters only) cannot. nlpaug is very
  likely MMCBench's own generator: OcrAug with ``random.seed(0); np.random.seed(0)`` and
  p = 0.4 (heavy) / 0.2 (light) reproduces the first row of the released OCR columns exactly,
  and p = 0.2 / 0.4 gives the released change rates of all seven nlpaug columns.
* textattack 0.3.11 (EDA: an ``Augmenter`` with ``pct_words_to_swap = strength``):
  ``synonym_replacement`` (WordSwapWordNet), ``random_insertion``
  (WordInsertionRandomSynonym), ``random_deletion`` (WordDeletion), ``random_swap``
  (WordInnerSwapRandom). Their WordNet candidates come from a set, whose order changes with
  ``PYTHONHASHSEED``; we sort them, and skip WordSwapWordNet's ``nltk.download("omw-1.4")``.
* Rules with no table: ``uppercase_char_randomly`` (each letter upper-cased with p),
  ``repeat_characters`` (every character 2x light / 4x heavy, as released), and
  ``whitespace_perturbation`` (NL-Augmenter's rule: drop a space with p, add one after a
  character with p/2).
* Rules with small tables, where no installed library has the transformation:
  ``leet_letters`` (the 23 letter->digit swaps measured on the released columns),
  ``substitute_with_homoglyphs`` (Unicode's own font and full-width variants of each letter and
  digit, derived from Python's ``unicodedata``: textattack 0.3.11's WordSwapHomoglyphSwap cannot
  be built, its ``intentional_homoglyphs.txt`` is missing from the wheel),
  ``abbreviate_word`` (chat abbreviations, imitating NL-Augmenter's slang abbreviations as seen
  in the released column), ``multilingual_dictionary_based_code_switch`` (frequent English words
  in five languages, imitating NL-Augmenter's MUSE-dictionary code switch),
  ``checklist`` (CheckList's "add irrelevant": a random ``https://t.co/...`` link and
  ``@handle``, 4 characters light, 8 heavy, as released) and ``close_homophones_swap``
  (homophones from the CMU pronouncing dictionary that pocketsphinx installs).

Left out: ``back_translation``, ``style_paraphraser`` and ``paraphrase`` need a translation or
paraphrase model; they will be model-backed nodes.

All randomness comes from the op's seed: rules draw from ``ctx.rng``, libraries run inside
``seeded_globals``. nlpaug and textattack are imported on first use, never at import time.
"""

from __future__ import annotations

import difflib
import re
import string
import sys
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..values import Value
from .base import OPS, Op, OpContext, OpOutput, OpParams
from .nltk_offline import ensure_nltk_data, load_wordnet
from .rng_guard import seeded_globals

Severity = Literal["light", "heavy"]
Runner = Callable[[str, float, np.random.Generator], str]


@dataclass(frozen=True)
class Recipe:
    """How to apply one corruption, and its calibrated strength at each severity."""

    run: Runner
    light: float
    heavy: float
    source: str
    """Where the transformation comes from, for the docs and the calibration report."""

    def strength(self, severity: Severity) -> float:
        return self.light if severity == "light" else self.heavy


def change_rate(clean: str, corrupted: str) -> float:
    """The share of characters changed, as measured on MMCBench's released tables."""
    return 1.0 - difflib.SequenceMatcher(None, clean, corrupted, autojunk=False).ratio()


# --- library-backed corruptions ------------------------------------------------------------


def _library_seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**32))


def _nlpaug(build: Callable[[float], Any]) -> Runner:
    """Run an nlpaug augmenter built (once per strength) by ``build``, seeded from ``rng``."""

    def run(text: str, strength: float, rng: np.random.Generator) -> str:
        augmenter = build(strength)
        with seeded_globals(_library_seed(rng)):
            out = augmenter.augment(text)
        return (out[0] if out else text) if isinstance(out, list) else out

    return run


@cache
def _char_augmenter(kind: str, p: float) -> Any:
    import nlpaug.augmenter.char as nac

    if kind == "ocr":
        return nac.OcrAug(aug_char_p=p, aug_word_p=p)
    if kind == "keyboard":
        return nac.KeyboardAug(aug_char_p=p, aug_word_p=p)
    return nac.RandomCharAug(action=kind, aug_char_p=p, aug_word_p=p)


@cache
def _spelling_augmenter(p: float) -> Any:
    """nlpaug's SpellingAug, with each word's misspellings sorted: nlpaug stores them as
    ``list(set(...))``, whose order (and so the sampled misspelling) changes with
    ``PYTHONHASHSEED``."""
    import nlpaug.augmenter.word as naw

    augmenter = naw.SpellingAug(aug_p=p)
    for candidates in augmenter.model.dict.values():
        candidates.sort()
    return augmenter


def _textattack(kind: str) -> Runner:
    """Run one EDA transformation of textattack on ``strength`` of the words."""

    def run(text: str, strength: float, rng: np.random.Generator) -> str:
        augmenter = _eda_augmenter(kind, strength)
        with seeded_globals(_library_seed(rng)):
            out = augmenter.augment(text)
        return out[0] if out else text

    return run


@cache
def _eda_augmenter(kind: str, pct: float) -> Any:
    """A textattack Augmenter for one EDA operation. Synonym swaps leave stopwords alone, as
    textattack's recipes do; deletion and swapping may touch any word, as the released
    columns do."""
    if kind in ("synonym", "insert"):
        load_wordnet()
    else:
        ensure_nltk_data()
    from textattack.augmentation import Augmenter
    from textattack.constraints.pre_transformation import RepeatModification, StopwordModification
    from textattack.transformations import WordDeletion, WordInnerSwapRandom

    constraints: list[Any] = [RepeatModification()]
    if kind in ("synonym", "insert"):
        constraints.append(StopwordModification())
    synonym_swap, synonym_insertion = _sorted_wordnet_classes()
    transformation = {"synonym": synonym_swap, "insert": synonym_insertion,
                      "delete": WordDeletion, "swap": WordInnerSwapRandom}[kind]()
    return Augmenter(transformation=transformation, constraints=constraints,
                     pct_words_to_swap=pct, transformations_per_example=1)


@lru_cache(maxsize=1)
def _sorted_wordnet_classes() -> tuple[type, type]:
    """textattack's WordNet transformations with their candidates in a fixed order."""
    from textattack.transformations import WordInsertionRandomSynonym, WordSwapWordNet
    from textattack.transformations.word_swaps import WordSwap

    class SortedWordNetSwap(WordSwapWordNet):  # type: ignore[misc]  # textattack has no type hints
        def __init__(self) -> None:  # WordSwapWordNet's own __init__ calls nltk.download
            WordSwap.__init__(self)
            self.language = "eng"

        def _get_replacement_words(self, word: str, random: bool = False) -> list[str]:
            return sorted(super()._get_replacement_words(word))

    class SortedSynonymInsertion(WordInsertionRandomSynonym):  # type: ignore[misc]  # (no type hints)
        def _get_synonyms(self, word: str) -> list[str]:
            return sorted(super()._get_synonyms(word))

    return SortedWordNetSwap, SortedSynonymInsertion


# --- rule-based corruptions ----------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def _pick(options: Sequence[str], rng: np.random.Generator) -> str:
    return options[int(rng.integers(len(options)))]


def _swap_chars(table: Callable[[], Mapping[str, Sequence[str]]]) -> Runner:
    """Replace each character that has options in ``table()`` with probability ``strength``."""

    def run(text: str, strength: float, rng: np.random.Generator) -> str:
        entries = table()
        out = []
        for ch in text:
            options = entries.get(ch)
            out.append(_pick(options, rng) if options and rng.random() < strength else ch)
        return "".join(out)

    return run


def _swap_words(table: Callable[[], Mapping[str, Sequence[str]]]) -> Runner:
    """Replace each word found in ``table()`` (lower-cased) with probability ``strength``,
    keeping the word's capitalisation."""

    def run(text: str, strength: float, rng: np.random.Generator) -> str:
        entries = table()

        def swap(match: re.Match[str]) -> str:
            word = match.group(0)
            options = entries.get(word.lower())
            if not options or rng.random() >= strength:
                return word
            return _match_case(word, _pick(options, rng))

        return _WORD.sub(swap, text)

    return run


def _match_case(original: str, replacement: str) -> str:
    if len(original) > 1 and original.isupper():
        return replacement.upper()
    if original[0].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _repeat_characters(text: str, strength: float, rng: np.random.Generator) -> str:
    return "".join(ch * int(strength) for ch in text)


def _whitespace(text: str, strength: float, rng: np.random.Generator) -> str:
    """NL-Augmenter's whitespace perturbation: drop a space with p, add one with p/2."""
    out = []
    for i, ch in enumerate(text):
        if ch == " " and rng.random() < strength:
            continue
        out.append(ch)
        if ch != " " and i + 1 < len(text) and rng.random() < strength / 2:
            out.append(" ")
    return "".join(out)


_ALPHANUMERIC = string.ascii_letters + string.digits


def _add_irrelevant(text: str, strength: float, rng: np.random.Generator) -> str:
    """CheckList's "add irrelevant": a random t.co link and @handle of ``strength`` characters,
    each put before, between or after the words."""
    words = text.split(" ")
    for prefix in ("https://t.co/", "@"):
        token = prefix + "".join(_pick(_ALPHANUMERIC, rng) for _ in range(int(strength)))
        words.insert(int(rng.integers(len(words) + 1)), token)
    return " ".join(words)


UPPERCASE = {c: (c.upper(),) for c in string.ascii_lowercase}

# leet_letters: every swap seen in the released columns (aligned same-length rows of all four
# text2speech tables), e.g. e->3 3,920 times, o->0 2,485, h->4 1,255; a, i, l, s, t never change.
LEET = {"e": "3", "o": "0", "h": "4", "m": "3", "g": "9", "y": "4", "w": "3", "b": "6",
        "j": "7", "S": "5", "C": "0", "B": "8", "A": "4", "G": "6", "L": "7", "T": "7",
        "D": "0", "I": "1", "E": "3", "J": "9", "O": "0", "Z": "2", "!": "1"}


@lru_cache(maxsize=1)
def homoglyphs() -> dict[str, tuple[str, ...]]:
    """Each ASCII letter and digit -> its mathematical-font and full-width variants, i.e. the
    characters whose Unicode compatibility decomposition is ``<font>`` or ``<wide>`` of it
    (𝐚 𝑎 𝒂 ... ａ). Taken from Python's unicodedata (Unicode 14.0 on Python 3.11)."""
    table: dict[str, list[str]] = defaultdict(list)
    for code in range(0x80, sys.maxunicode + 1):
        decomposition = unicodedata.decomposition(chr(code)).split()
        if len(decomposition) == 2 and decomposition[0] in ("<font>", "<wide>"):
            base = chr(int(decomposition[1], 16))
            if base in _ALPHANUMERIC:
                table[base].append(chr(code))
    return {k: tuple(v) for k, v in table.items()}


# abbreviate_word: common chat abbreviations (NL-Augmenter style; the released column has
# the->tha, to->tuh, that->tht, people->pplz, never->nvr, energy->nrg, and->nd, was->wuz ...).
ABBREVIATIONS = {
    "the": ("tha", "da"), "to": ("2", "tuh"), "too": ("2",), "for": ("4", "fo"),
    "you": ("u", "yu"), "your": ("ur",), "you're": ("ur",), "are": ("r",), "and": ("nd", "&"),
    "that": ("tht",), "this": ("dis",), "what": ("wht", "wat"), "with": ("w/", "wit"),
    "without": ("w/o",), "people": ("ppl", "pplz"), "never": ("nvr",), "because": ("cuz", "bc"),
    "before": ("b4",), "please": ("pls",), "thanks": ("thx",), "really": ("rly",),
    "probably": ("prob",), "tonight": ("2nite",), "tomorrow": ("tmrw",), "today": ("2day",),
    "see": ("c",), "be": ("b",), "why": ("y",), "was": ("wuz",), "could": ("cud",),
    "would": ("wud",), "should": ("shud",), "great": ("gr8",), "later": ("l8r",),
    "next": ("nxt",), "time": ("tym",), "know": ("kno",), "some": ("sum",), "love": ("luv",),
    "night": ("nite",), "about": ("abt",), "between": ("btwn",), "government": ("govt",),
    "information": ("info",), "energy": ("nrg",), "something": ("smth",), "boy": ("boi",),
    "of": ("o'", "uv"), "is": ("iz",), "in": ("n",), "have": ("hv",), "from": ("frm",),
    "were": ("wer",), "has": ("haz",), "his": ("hiz",), "which": ("wich",), "been": ("bin",),
    "at": ("@",), "as": ("az",), "said": ("sed",), "just": ("jst",), "like": ("lyk",),
    "one": ("1",), "first": ("1st",), "second": ("2nd",), "very": ("v",),
}

# multilingual_dictionary_based_code_switch: frequent English words in Spanish, French, German,
# Italian and Portuguese (the released column switches function words too: the, and, was, for).
CODE_SWITCH = {
    "the": ("el", "le", "der", "il", "o"), "and": ("y", "et", "und", "e", "e"),
    "was": ("era", "était", "war", "era", "era"), "is": ("es", "est", "ist", "è", "é"),
    "are": ("son", "sont", "sind", "sono", "são"), "for": ("para", "pour", "für", "per", "para"),
    "with": ("con", "avec", "mit", "con", "com"), "also": ("también", "aussi", "auch", "anche",
                                                         "também"),
    "this": ("este", "ce", "dieser", "questo", "este"), "not": ("no", "pas", "nicht", "non", "não"),
    "his": ("su", "son", "sein", "suo", "seu"), "they": ("ellos", "ils", "sie", "loro", "eles"),
    "he": ("él", "il", "er", "lui", "ele"), "she": ("ella", "elle", "sie", "lei", "ela"),
    "in": ("en", "dans", "in", "in", "em"), "of": ("de", "de", "von", "di", "de"),
    "from": ("de", "de", "aus", "da", "de"), "but": ("pero", "mais", "aber", "ma", "mas"),
    "or": ("o", "ou", "oder", "o", "ou"), "first": ("primero", "premier", "erste", "primo",
                                                   "primeiro"),
    "two": ("dos", "deux", "zwei", "due", "dois"), "new": ("nuevo", "nouveau", "neu", "nuovo",
                                                          "novo"),
    "people": ("gente", "gens", "Leute", "gente", "pessoas"),
    "time": ("tiempo", "temps", "Zeit", "tempo", "tempo"),
    "year": ("año", "année", "Jahr", "anno", "ano"),
    "city": ("ciudad", "ville", "Stadt", "città", "cidade"),
    "family": ("familia", "famille", "Familie", "famiglia", "família"),
    "school": ("escuela", "école", "Schule", "scuola", "escola"),
    "world": ("mundo", "monde", "Welt", "mondo", "mundo"),
    "house": ("casa", "maison", "Haus", "casa", "casa"),
    "water": ("agua", "eau", "Wasser", "acqua", "água"),
    "small": ("pequeño", "petit", "klein", "piccolo", "pequeno"),
    "good": ("bueno", "bon", "gut", "buono", "bom"),
    "other": ("otro", "autre", "andere", "altro", "outro"),
    "after": ("después", "après", "nach", "dopo", "depois"),
    "many": ("muchos", "beaucoup", "viele", "molti", "muitos"),
    "name": ("nombre", "nom", "Name", "nome", "nome"),
    "song": ("canción", "chanson", "Lied", "canzone", "canção"),
    "church": ("iglesia", "église", "Kirche", "chiesa", "igreja"),
    "river": ("río", "rivière", "Fluss", "fiume", "rio"),
    "book": ("libro", "livre", "Buch", "libro", "livro"),
    "day": ("día", "jour", "Tag", "giorno", "dia"),
    "man": ("hombre", "homme", "Mann", "uomo", "homem"),
    "war": ("guerra", "guerre", "Krieg", "guerra", "guerra"),
    "known": ("conocido", "connu", "bekannt", "noto", "conhecido"),
    "born": ("nacido", "né", "geboren", "nato", "nascido"),
    "a": ("un", "un", "ein", "un", "um"), "to": ("a", "à", "zu", "a", "para"),
    "on": ("en", "sur", "auf", "su", "em"), "at": ("en", "à", "bei", "a", "em"),
    "by": ("por", "par", "von", "da", "por"), "as": ("como", "comme", "als", "come", "como"),
    "has": ("tiene", "a", "hat", "ha", "tem"), "were": ("eran", "étaient", "waren", "erano",
                                                      "eram"),
    "which": ("que", "qui", "die", "che", "que"), "her": ("su", "sa", "ihr", "sua", "sua"),
    "their": ("su", "leur", "ihr", "loro", "seu"), "one": ("uno", "un", "eins", "uno", "um"),
    "all": ("todos", "tous", "alle", "tutti", "todos"), "there": ("allí", "là", "dort", "lì", "lá"),
    "when": ("cuando", "quand", "wenn", "quando", "quando"),
    "who": ("quien", "qui", "wer", "chi", "quem"),
    "then": ("entonces", "alors", "dann", "allora", "então"),
}


@lru_cache(maxsize=1)
def homophones() -> dict[str, tuple[str, ...]]:
    """Lower-case word -> the other spellings of its pronunciations in the CMU pronouncing
    dictionary that pocketsphinx installs (the -> thee, in -> inn, by -> buy, bye)."""
    import pocketsphinx

    spellings: dict[str, set[str]] = defaultdict(set)
    sounds: dict[str, set[str]] = defaultdict(set)
    path = Path(pocketsphinx.get_model_path()) / "en-us" / "cmudict-en-us.dict"
    for line in path.read_text(encoding="utf-8").splitlines():
        head, _, phones = line.partition(" ")
        word = head.split("(")[0]
        if word.isalpha():
            spellings[phones].add(word)
            sounds[word].add(phones)
    return {word: tuple(sorted(set().union(*(spellings[p] for p in prons)) - {word}))
            for word, prons in sounds.items()
            if len(set().union(*(spellings[p] for p in prons))) > 1}


# --- the table -----------------------------------------------------------------------------

RECIPES: dict[str, Recipe] = {
    "substitute_char_by_ocr": Recipe(_nlpaug(partial(_char_augmenter, "ocr")), 0.2, 0.4,
                                     "nlpaug OcrAug"),
    "substitute_char_by_keyboard": Recipe(_nlpaug(partial(_char_augmenter, "keyboard")), 0.2,
                                          0.4, "nlpaug KeyboardAug"),
    "insert_char_randomly": Recipe(_nlpaug(partial(_char_augmenter, "insert")), 0.2, 0.4,
                                   "nlpaug RandomCharAug(insert)"),
    "substitute_char_randomly": Recipe(_nlpaug(partial(_char_augmenter, "substitute")), 0.2,
                                       0.4, "nlpaug RandomCharAug(substitute)"),
    "swap_char_randomly": Recipe(_nlpaug(partial(_char_augmenter, "swap")), 0.2, 0.4,
                                 "nlpaug RandomCharAug(swap)"),
    "delete_char_randomly": Recipe(_nlpaug(partial(_char_augmenter, "delete")), 0.2, 0.4,
                                   "nlpaug RandomCharAug(delete)"),
    "uppercase_char_randomly": Recipe(_swap_chars(lambda: UPPERCASE), 0.2, 0.375, "rule"),
    "repeat_characters": Recipe(_repeat_characters, 2, 4, "rule"),
    "leet_letters": Recipe(_swap_chars(lambda: LEET), 0.5, 0.6, "rule + LEET table"),
    "whitespace_perturbation": Recipe(_whitespace, 0.2, 0.5, "rule (NL-Augmenter)"),
    "substitute_with_homoglyphs": Recipe(_swap_chars(homoglyphs), 0.2, 0.4,
                                         "rule + unicodedata variants"),
    "synonym_replacement": Recipe(_textattack("synonym"), 0.55, 0.6,
                                  "textattack WordSwapWordNet"),
    "random_deletion": Recipe(_textattack("delete"), 0.25, 0.45, "textattack WordDeletion"),
    "random_swap": Recipe(_textattack("swap"), 0.3, 0.475, "textattack WordInnerSwapRandom"),
    "random_insertion": Recipe(_textattack("insert"), 0.35, 0.65,
                               "textattack WordInsertionRandomSynonym"),
    "misspell_word": Recipe(_nlpaug(_spelling_augmenter), 0.2, 0.4, "nlpaug SpellingAug"),
    "abbreviate_word": Recipe(_swap_words(lambda: ABBREVIATIONS), 0.55, 0.9,
                              "rule + ABBREVIATIONS table"),
    "multilingual_dictionary_based_code_switch": Recipe(_swap_words(lambda: CODE_SWITCH), 0.55,
                                                        1.0, "rule + CODE_SWITCH table"),
    "checklist": Recipe(_add_irrelevant, 4, 8, "rule (CheckList)"),
    "close_homophones_swap": Recipe(_swap_words(homophones), 0.45, 1.0,
                                    "rule + CMU dict (pocketsphinx)"),
}

CORRUPTIONS = tuple(RECIPES)
Corruption = Literal[CORRUPTIONS]  # type: ignore[valid-type]


class Params(OpParams):
    corruption: Corruption
    severity: Severity = "light"


TextCorruptParams = Params  # for annotations: in the class body below, ``Params`` is the ClassVar


@OPS.add("text.corrupt")
class Corrupt(Op):
    """Corrupt text as MMCBench does (20 model-free corruptions, light or heavy)."""

    reads_record = False
    version = "1.0.0"
    Params = Params
    input_kind = "text"
    libraries = ("nlpaug", "textattack", "nltk", "wn", "pocketsphinx")

    def apply(self, value: Value | None, params: TextCorruptParams, ctx: OpContext) -> OpOutput:
        assert value is not None and value.text is not None
        if not value.text.strip():  # nothing to corrupt; some libraries fail on empty text
            return OpOutput(value)
        recipe = RECIPES[params.corruption]
        text = recipe.run(value.text, recipe.strength(params.severity), ctx.rng)
        return OpOutput(Value("text", text=text))
