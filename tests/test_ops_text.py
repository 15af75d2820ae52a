# ruff: noqa: E501 - the golden outputs are kept whole, one per line
"""Text ops: MMCBench's corruptions (text.corrupt), MERLIM's and MM-R3's question ops, and the
offline NLTK data they rely on.

The golden outputs pin every corruption at both severities on one sentence and one seed, so an
upgrade of nlpaug, textattack, nltk, WordNet or the CMU dictionary that changes a single
character fails here. To change them, bump ``text.corrupt``'s version and re-pin.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import OpError
from benchc.compiler.ops import OPS, OpContext
from benchc.compiler.ops.text_corrupt import CORRUPTIONS, change_rate
from benchc.compiler.ops.text_questions import negate_question, pluralize
from benchc.compiler.seeds import rng_for
from benchc.compiler.sources.mmcbench_table import MMCBENCH_TEXT_CORRUPTIONS
from benchc.compiler.values import Record, Value
from conftest import ROOT, cli

SENTENCE = ("The Centers began overseeing federally funded contracts for fossil energy research "
            "and development.")
SEED = 2024
MERLIM = ROOT.parent / "shared" / "data" / "merlim"
HARD_TABLE = ROOT / "specs/mmcbench/data/text2speech_heavy_corrupted_hard_1k_first50.csv"

GOLDEN = {  # text.corrupt 1.0.0 on SENTENCE with rng_for(2024)
    ('substitute_char_by_ocr', 'light'): 'The Centers began overseeing federally fonded contracts for f0ssi1 energy research and development.',
    ('substitute_char_by_ocr', 'heavy'): 'The Centers began overseeing federally fonded contracts f0k f088il enek9y research and development.',
    ('substitute_char_by_keyboard', 'light'): 'The Centers began overseeing federally funded Vontractq for fossil eGerty resea#cm and development.',
    ('substitute_char_by_keyboard', 'heavy'): 'The C3nherz began overseeing federally funded DoHtrScGs for Dosso: Rn4fgy teeearVu and def#llomegt.',
    ('insert_char_randomly', 'light'): 'The Centers began overseeing federally funded xcontractYs for fossil e^nerPgy restearCch and development.',
    ('insert_char_randomly', 'heavy'): 'The C^enPter(s began overseeing federally funded QcontrFarctts for fIossAi+l @eneArhgy rkesJeoarc1h and dDev%el&op1menct.',
    ('substitute_char_randomly', 'light'): 'The Centers began overseeing federally funded Yontractx for fossil ePer^y resCarth and development.',
    ('substitute_char_randomly', 'heavy'): 'The C(nPer^ began overseeing federally funded tontrrFQs for f+ssAI hneA@y r1soJrck and dcv1l&p%enD.',
    ('swap_char_randomly', 'light'): 'The Centers began overseeing federally funded ocntracst for fossil neeryg ersearhc and development.',
    ('swap_char_randomly', 'heavy'): 'The Ecnetsr began overseeing federally funded ocntarsct for ofssli eneryg erserach and edlvoepmnet.',
    ('delete_char_randomly', 'light'): 'The Centers began overseeing federally funded ontract for fossil eegy resach and development.',
    ('delete_char_randomly', 'heavy'): 'The Cner began overseeing federally funded cnact for oil rgy rech and elopet.',
    ('uppercase_char_randomly', 'light'): 'The CentERS bEgaN oVerseeing federaLly funded cOnTracts foR fossil energy reSearCh ANd deVeloPment.',
    ('uppercase_char_randomly', 'heavy'): 'ThE CEntERS BEgaN oVerseEInG fEDeRALlY fUnded cONTraCtS fOR fOSSIl EnErgy reSEarCH AND deVeloPment.',
    ('repeat_characters', 'light'): 'TThhee  CCeenntteerrss  bbeeggaann  oovveerrsseeeeiinngg  ffeeddeerraallllyy  ffuunnddeedd  ccoonnttrraaccttss  ffoorr  ffoossssiill  eenneerrggyy  rreesseeaarrcchh  aanndd  ddeevveellooppmmeenntt..',
    ('repeat_characters', 'heavy'): 'TTTThhhheeee    CCCCeeeennnntttteeeerrrrssss    bbbbeeeeggggaaaannnn    oooovvvveeeerrrrsssseeeeeeeeiiiinnnngggg    ffffeeeeddddeeeerrrraaaallllllllyyyy    ffffuuuunnnnddddeeeedddd    ccccoooonnnnttttrrrraaaaccccttttssss    ffffoooorrrr    ffffoooossssssssiiiillll    eeeennnneeeerrrrggggyyyy    rrrreeeesssseeeeaaaarrrrcccchhhh    aaaannnndddd    ddddeeeevvvveeeellllooooppppmmmmeeeennnntttt....',
    ('leet_letters', 'light'): 'T43 Cent3rs 639an 0verse3ing f3d3rally funded contracts f0r f0ssil 3n3rg4 r3searc4 and d3v3l0p3ent.',
    ('leet_letters', 'heavy'): 'T43 Cent3rs 639an 0v3rse3in9 f3d3rally funded c0ntracts f0r f0ssil 3n3rg4 r3searc4 and d3v3l0p3ent.',
    ('whitespace_perturbation', 'light'): 'The Cen ters beg an overseeing f ederally f unded cont racts for fossi l en er g y re search anddevelopment.',
    ('whitespace_perturbation', 'heavy'): 'Th e Ce n t er s b eg an ove rsee ingf ederally f u n ded con t racts for  fossi l en e r g yre sear chandde ve l op ment.',
    ('substitute_with_homoglyphs', 'light'): 'The Ce𝙣𝐭e𝔯s 𝖇e𝐠an overseeing f𝓮derally fu𝓃𝑑ed contr𝑎cts for fossil e𝗇ergｙ 𝒓ℯse𝒶rch 𝗮nd dev𝘦l𝓸p𝒎e𝗇t.',
    ('substitute_with_homoglyphs', 'heavy'): 'T𝒽e C𝑒𝑛𝑡𝓮r𝖘 b𝐞gan 𝔬𝘃𝓮r𝓼e𝑒ｉnℊ f𝒆dera𝗹𝖑y f𝑢n𝓭𝖾𝐝 𝖼𝚘𝒏t𝐫𝓪cts fo𝓇 fo𝓈𝚜ℹ𝐥 e𝓷erg𝘆 𝘳esｅ𝔞r𝓬𝒉 𝘢𝕟d ⅆe𝚟e𝕝𝓸𝕡m𝖊n𝔱.',
    ('synonym_replacement', 'light'): 'The centre began supervise federally fund cut for fossil vim search and growing.',
    ('synonym_replacement', 'heavy'): 'The centre began supervise federally fund cut for fossil vim search and growing.',
    ('random_deletion', 'light'): 'The Centers began overseeing federally contracts for research and development.',
    ('random_deletion', 'heavy'): 'began overseeing federally contracts for research and development.',
    ('random_swap', 'light'): 'The Centers for overseeing federally funded contracts began development energy research and fossil.',
    ('random_swap', 'heavy'): 'The overseeing for Centers federally funded contracts began development energy research and fossil.',
    ('random_insertion', 'light'): 'The Centers began overseeing maturation federally funded contracts for fossil manage energy research and development.',
    ('random_insertion', 'heavy'): 'The Centers began overseeing maturation federally wangle funded contracts for fossil manage energy research fogey and development.',
    ('misspell_word', 'light'): 'The Centers began overseeing federally funded contracts aslo fossil engergy rearch and development.',
    ('misspell_word', 'heavy'): 'Thes Centers began overseeing federally funded contracts fpr fossil enegy reserch add develpment.',
    ('abbreviate_word', 'light'): 'The Centers began overseeing federally funded contracts 4 fossil energy research and development.',
    ('abbreviate_word', 'heavy'): 'Tha Centers began overseeing federally funded contracts 4 fossil nrg research and development.',
    ('multilingual_dictionary_based_code_switch', 'light'): 'The Centers began overseeing federally funded contracts pour fossil energy research and development.',
    ('multilingual_dictionary_based_code_switch', 'heavy'): 'El Centers began overseeing federally funded contracts pour fossil energy research e development.',
    ('checklist', 'light'): 'The Centers began overseeing https://t.co/oPfn federally funded contracts for fossil energy research and development. @t4X4',
    ('checklist', 'heavy'): 'The Centers began overseeing federally @9ei1ekl4 funded contracts for fossil energy research and https://t.co/oPfntt4X development.',
    ('close_homophones_swap', 'light'): 'The Centres began overseeing federally funded contracts for fossil energy research und development.',
    ('close_homophones_swap', 'heavy'): 'Thee Centres began overseeing federally funded contracts fir fossel energy research und development.',
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ContentStore:
    return ContentStore(tmp_path_factory.mktemp("store"))


def corrupt(store: ContentStore, text: str, corruption: str, severity: str, seed: int) -> str:
    op = OPS.get("text.corrupt")
    out = op.apply(Value("text", text=text), op.Params(corruption=corruption, severity=severity),
                   OpContext(Record("r", {}), rng_for(seed), store))
    assert out.value.text is not None
    return out.value.text


def clean_sentences(limit: int) -> list[str]:
    import csv

    with HARD_TABLE.open(newline="", encoding="utf-8") as fh:
        return [row["transcription"] for row in csv.DictReader(fh)][:limit]


# --- text.corrupt --------------------------------------------------------------------------


def test_corruptions_are_mmcbench_model_free_ones_in_order() -> None:
    assert CORRUPTIONS == MMCBENCH_TEXT_CORRUPTIONS[:20]
    assert MMCBENCH_TEXT_CORRUPTIONS[20:] == ("back_translation", "style_paraphraser", "paraphrase")


@pytest.mark.parametrize("corruption,severity", list(GOLDEN), ids=[f"{c}-{s}" for c, s in GOLDEN])
def test_corruption_output_is_pinned(store: ContentStore, corruption: str, severity: str) -> None:
    assert OPS.get("text.corrupt").version == "1.0.0"
    assert corrupt(store, SENTENCE, corruption, severity, SEED) == GOLDEN[(corruption, severity)]


def test_same_seed_same_output_in_another_process_and_hash_seed(store: ContentStore) -> None:
    snippet = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_ops_text import corrupt, GOLDEN, SENTENCE\n"
        "from benchc.compiler.cas import ContentStore\n"
        "import tempfile, pathlib\n"
        "store = ContentStore(pathlib.Path(tempfile.mkdtemp()))\n"
        "print(json.dumps([corrupt(store, SENTENCE, c, s, 99) for c, s in GOLDEN]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    done = subprocess.run([sys.executable, "-c", snippet], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    here = [corrupt(store, SENTENCE, c, s, 99) for c, s in GOLDEN]
    assert json.loads(done.stdout.splitlines()[-1]) == here


@pytest.mark.parametrize("corruption", [c for c in CORRUPTIONS if c != "repeat_characters"])
def test_different_seeds_give_different_outputs(store: ContentStore, corruption: str) -> None:
    outputs = {corrupt(store, SENTENCE, corruption, "heavy", seed) for seed in range(4)}
    assert len(outputs) > 1


def test_repeat_characters_is_deterministic(store: ContentStore) -> None:
    assert corrupt(store, "ab c", "repeat_characters", "light", 1) == "aabb  cc"
    assert corrupt(store, "ab c", "repeat_characters", "heavy", 2) == "aaaabbbb    cccc"


def test_heavy_changes_more_than_light_on_average(store: ContentStore) -> None:
    sentences = clean_sentences(20)
    for corruption in CORRUPTIONS:
        rates = {severity: statistics.mean(change_rate(s, corrupt(store, s, corruption, severity, i))
                                           for i, s in enumerate(sentences))
                 for severity in ("light", "heavy")}
        # MMCBench's own synonym_replacement columns differ by 0.004 (0.325 vs 0.329)
        margin = -0.03 if corruption == "synonym_replacement" else 0.0
        assert rates["heavy"] - rates["light"] > margin, (corruption, rates)


def test_empty_text_is_returned_unchanged(store: ContentStore) -> None:
    assert corrupt(store, "", "synonym_replacement", "heavy", 1) == ""


# --- question ops --------------------------------------------------------------------------


@pytest.mark.parametrize("question,negated", [
    ("Is the key on the keyboard?", "Is the key not on the keyboard?"),
    ("Are there two dogs?", "Are there not two dogs?"),
    ("Does the man hold a bat?", "Does the man not hold a bat?"),
    ("Are a group of people watching a truck?", "Are a group of people not watching a truck?"),
])
def test_negate_question(store: ContentStore, question: str, negated: str) -> None:
    op = OPS.get("text.negate_question")
    out = op.apply(Value("text", text=question), op.Params(),
                   OpContext(Record("q1", {}), rng_for(0), store))
    assert out.value.text == negated


def test_negate_refuses_a_question_that_is_not_yes_no(store: ContentStore) -> None:
    op = OPS.get("text.negate_question")
    with pytest.raises(OpError, match="q7"):
        op.apply(Value("text", text="What is on the table?"), op.Params(),
                 OpContext(Record("q7", {}), rng_for(0), store))


@pytest.mark.slow
@pytest.mark.skipif(not MERLIM.is_dir(), reason="shared/data/merlim is not beside the repository")
def test_negation_agrees_with_merlims_own_negations() -> None:
    pairs: set[tuple[str, str]] = set()
    for name in ("curated", "random"):
        with gzip.open(MERLIM / f"rel_task_set_eval_{name}_v3.json.gz", "rt") as fh:
            pairs |= {(i["question"], i["question_neg"]) for v in json.load(fh).values() for i in v}
    only_not = [(q, n) for q, n in pairs if n.replace(" not", "", 1) == q]
    agree = sum(negate_question(q) == n for q, n in only_not)
    assert (agree, len(only_not)) == (4564, 4767)


@pytest.mark.parametrize("label,plural", [
    ("traffic light", "traffic lights"), ("potted plant", "potted plants"), ("skis", "skis"),
    ("person", "people"), ("mouse", "mice"), ("bus", "buses"), ("sheep", "sheep"),
    ("scissors", "scissors"), ("wine glass", "wine glasses"), ("knife", "knives"),
])
def test_pluralize(label: str, plural: str) -> None:
    assert pluralize(label) == plural


def test_count_question_reads_the_label(store: ContentStore) -> None:
    op = OPS.get("text.count_question")
    ctx = OpContext(Record("img1", {"object": {"name": "traffic light"}}), rng_for(0), store)
    out = op.apply(None, op.Params(), ctx)
    assert out.value.text == "How many traffic lights are there? Just answer the number."
    assert out.attrs == {"label": "traffic light", "plural": "traffic lights"}  # for the follow-up
    custom = op.Params(template="Count the {plural} ({label}).")
    assert op.apply(None, custom, ctx).value.text == "Count the traffic lights (traffic light)."


def test_count_question_errors(store: ContentStore) -> None:
    op = OPS.get("text.count_question")
    with pytest.raises(OpError, match="img2"):
        op.apply(None, op.Params(), OpContext(Record("img2", {}), rng_for(0), store))
    with pytest.raises(ValueError, match="unknown field"):
        op.Params(template="How many {things}?")


def test_rephrase_from_table(store: ContentStore) -> None:
    op = OPS.get("text.rephrase_from_table")
    record = Record("okvqa/1", {"rephrasings": ["What is it?", "Which thing is it?"]})
    ctx = OpContext(record, rng_for(0), store)
    assert op.apply(None, op.Params(index=1), ctx).value.text == "Which thing is it?"
    with pytest.raises(OpError, match="okvqa/1.*no index 2"):
        op.apply(None, op.Params(index=2), ctx)
    with pytest.raises(OpError, match="okvqa/1.*no field 'questions'"):
        op.apply(None, op.Params(field="questions"), ctx)


def test_ops_command_lists_the_text_ops() -> None:
    out = cli("ops", check=True).stdout
    for line in ("text.corrupt v1.0.0", "text.negate_question v1.0.0",
                 "text.count_question v1.1.0", "text.rephrase_from_table v1.0.0"):
        assert line in out


# --- offline NLTK data ---------------------------------------------------------------------


def test_nltk_data_is_laid_out_once_under_concurrent_processes(tmp_path: Path) -> None:
    snippet = ("from benchc.compiler.ops.nltk_offline import load_wordnet\n"
               "from nltk.corpus import stopwords\n"
               "wordnet = load_wordnet()\n"  # lays the data out first
               "print(wordnet.synsets('dog')[0].name(), len(stopwords.words('english')))\n")
    env = {**os.environ, "BENCHC_NLTK_DATA": str(tmp_path / "nltk"),
           "TA_CACHE_DIR": str(tmp_path / "ta")}
    runs = [subprocess.Popen([sys.executable, "-c", snippet], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        assert out.split() == ["dog.n.01", "179"]
    corpora = tmp_path / "nltk" / "corpora"
    assert sorted(p.name for p in corpora.iterdir()) == ["stopwords", "wordnet", "wordnet_ic"]
    assert (corpora / "wordnet" / "data.noun").stat().st_size == 15_300_280  # CRLF removed
    assert (tmp_path / "ta" / "post_install_check_3").is_file()


def test_wordnet_loads_without_mapping_3_0_onto_itself() -> None:
    """load_wordnet skips NLTK's map of WordNet 3.0 onto the loaded 3.0: safe only while NLTK
    reads the map nowhere but where it loads Open Multilingual WordNet tab files."""
    import inspect

    import nltk.corpus.reader.wordnet as reader_module

    from benchc.compiler.ops.nltk_offline import load_wordnet

    original = reader_module.WordNetCorpusReader.map_wn
    wordnet = load_wordnet()
    assert load_wordnet() is wordnet and isinstance(wordnet, reader_module.WordNetCorpusReader)
    assert wordnet.get_version() == "3.0" and wordnet.map30 is None
    assert reader_module.WordNetCorpusReader.map_wn is original  # the class is left as it was
    readers = [name for name, member in inspect.getmembers(reader_module.WordNetCorpusReader, inspect.isfunction)
               if "map30" in inspect.getsource(member)]
    assert readers == ["__init__", "custom_lemmas"]  # an NLTK that reads it elsewhere: revisit
    # as a reader loaded the plain way gives them (checked by hand, NLTK 3.10.4)
    assert [s.name() for s in wordnet.synsets("happy")] == ["happy.a.01", "felicitous.s.01", "glad.s.01",
                                                            "happy.s.03"]


def test_importing_the_ops_imports_no_text_library() -> None:
    snippet = ("import sys, benchc.compiler.ops\n"
               "print([m for m in ('nltk', 'textattack', 'nlpaug', 'spacy', 'lemminflect') "
               "if m in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stdout.strip() == "[]", done.stderr


def _apply(op_name: str, record: Record, value: Value | None, tmp_path: Path, **params: object):
    op = OPS.get(op_name)
    ctx = OpContext(record, rng_for(0), ContentStore(tmp_path / "store"))
    return op.apply(value, op.Params(**params), ctx)


def test_text_field_returns_the_field_unchanged_and_names_bad_fields(tmp_path: Path) -> None:
    record = Record("r", {"question": "Is the cat on the mat?", "meta": {"n": 3}})
    out = _apply("text.field", record, None, tmp_path, field="question")
    assert out.value.text == "Is the cat on the mat?" and out.drop is None
    with pytest.raises(OpError, match="no field 'questoin'") as missing:
        _apply("text.field", record, None, tmp_path, field="questoin")
    assert missing.value.problems[0].key == "params.field"
    with pytest.raises(OpError, match="is not text"):
        _apply("text.field", record, None, tmp_path, field="meta.n")


def test_negation_that_cannot_be_made_fails_or_drops_as_asked(tmp_path: Path) -> None:
    question = Value("text", text="Is napkin on food?")
    assert negate_question(question.text) is None
    with pytest.raises(OpError, match="cannot negate"):
        _apply("text.negate_question", Record("r", {}), question, tmp_path)
    dropped = _apply("text.negate_question", Record("r", {}), question, tmp_path, on_fail="drop")
    assert dropped.drop == "no subject to negate"
