"""The generic loaders: table (CSV/TSV/JSON Lines/Parquet), hf_dataset, common_voice,
image_folder, audio_folder, and MMCBench's Parquet releases."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile
from benchc.compiler.errors import SourceError
from benchc.compiler.sources.tables import AUDIO_RATE
from source_helpers import (
    assert_bad_rows,
    image_bytes,
    load,
    stored_audio,
    stored_pixel,
    tone,
    write_image,
)


def test_csv_with_column_mapping_id_and_image_files(tmp_path: Path) -> None:
    write_image(tmp_path / "imgs" / "a.png", (255, 0, 0))
    write_image(tmp_path / "imgs" / "b.png", (0, 255, 0))
    (tmp_path / "t.csv").write_text("uid,q,file,extra\nx1,what?,a.png,1\nx2,\"why, then?\",b.png,2\n")
    loaded, _ = load("table", tmp_path, path="t.csv", id="uid", columns={"question": "q"},
                     image_column="file", images="imgs")
    first, second = loaded.records
    assert (first.id, first.fields) == ("x1", {"question": "what?"})
    assert second.fields == {"question": "why, then?"}
    assert stored_pixel(tmp_path, second.media["image"]) == (0, 255, 0)
    assert loaded.files[0].path == "t.csv" and loaded.files[0].rows == 2


def test_default_fields_are_every_column_and_ids_are_row_numbers(tmp_path: Path) -> None:
    (tmp_path / "t.tsv").write_text('sentence\tn\nsay "hi"\t1\nbye\t2\n')
    loaded, _ = load("table", tmp_path, path="t.tsv")
    assert [(r.id, r.fields) for r in loaded.records] == [("1", {"sentence": 'say "hi"', "n": "1"}),
                                                          ("2", {"sentence": "bye", "n": "2"})]


def test_csv_missing_image_file_and_missing_cell_are_bad_rows(tmp_path: Path) -> None:
    write_image(tmp_path / "imgs" / "a.png", (1, 1, 1))
    (tmp_path / "t.csv").write_text("id,q,file\n1,a,a.png\n2,b,gone.png\n3,c\n")
    params = {"path": "t.csv", "id": "id", "image_column": "file", "images": "imgs"}
    loaded = assert_bad_rows("table", tmp_path, ["t.csv:3", "'gone.png' not found"],
                             ["t.csv:4", "missing column 'file'"], **params)
    assert [r.id for r in loaded.records] == ["1"]


def test_a_file_name_in_the_data_cannot_leave_its_folder(tmp_path: Path) -> None:
    write_image(tmp_path / "secret.png", (1, 1, 1))
    (tmp_path / "imgs").mkdir()
    (tmp_path / "t.csv").write_text("file\n../secret.png\n")
    assert_bad_rows("table", tmp_path, ["t.csv:2", "'../secret.png' escapes source.images"],
                    path="t.csv", image_column="file", images="imgs")


def test_a_header_without_a_named_column_fails_the_file(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("id,q\n1,a\n")
    with pytest.raises(SourceError) as failed:
        load("table", tmp_path, path="t.csv", columns={"question": "question"})
    assert "t.csv:1" in failed.value.render() and "missing column(s): question" in failed.value.render()


def test_jsonl_bad_line_missing_key_and_duplicate_id(tmp_path: Path) -> None:
    lines = ['{"id": 1, "q": "a", "n": 1.5}', "{not json", "", '{"id": 2, "n": 2}', '{"id": 1, "q": "b", "n": 3}',
             '{"id": 3, "q": "c", "n": NaN}']
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    loaded = assert_bad_rows("table", tmp_path, ["t.jsonl:2", "not valid JSON"], ["t.jsonl:4", "missing column 'q'"],
                             ["t.jsonl:5", "duplicate record id '1' (first at line 1)"],
                             path="t.jsonl", id="id", columns={"question": "q", "n": "n"})
    assert [(r.id, r.fields) for r in loaded.records] == [("1", {"question": "a", "n": 1.5}),
                                                          ("3", {"question": "c", "n": None})]


def test_parquet_with_encoded_images(tmp_path: Path) -> None:
    table = pa.table({"key": [7, 8], "caption": ["red", "blue"],
                      "img": [image_bytes((255, 0, 0)), image_bytes((0, 0, 255))],
                      "score": [np.float32(0.5), None]})
    pq.write_table(table, tmp_path / "t.parquet")
    loaded, _ = load("table", tmp_path, path="t.parquet", id="key", image_column="img")
    assert [r.id for r in loaded.records] == ["7", "8"]
    assert loaded.records[0].fields == {"key": 7, "caption": "red", "score": 0.5}
    assert stored_pixel(tmp_path, loaded.records[1].media["image"]) == (0, 0, 255)


def test_parquet_undecodable_image_names_its_row(tmp_path: Path) -> None:
    pq.write_table(pa.table({"img": [image_bytes((1, 2, 3)), b"not an image"]}), tmp_path / "t.parquet")
    assert_bad_rows("table", tmp_path, ["t.parquet row 2", "cannot decode image"],
                   path="t.parquet", image_column="img")


def _hf_dataset(folder: Path, dict_split: str | None = None) -> None:
    """A dataset with Image and Audio features, saved as `datasets` saves it (no hub)."""
    from datasets import Audio, Dataset, DatasetDict, Features, Image, Value

    wav = io.BytesIO()
    soundfile.write(wav, tone(rate=8000), 8000, format="WAV")
    table = pa.table({"question": ["q0", "q1"], "qid": ["a", "b"],
                      "image": [{"bytes": image_bytes((9, 8, 7)), "path": None}] * 2,
                      "audio": [{"bytes": wav.getvalue(), "path": None}] * 2})
    features = Features({"question": Value("string"), "qid": Value("string"), "image": Image(), "audio": Audio()})
    dataset = Dataset(table).cast(features)
    (DatasetDict({dict_split: dataset}) if dict_split else dataset).save_to_disk(str(folder))


def test_hf_dataset_saved_to_disk(tmp_path: Path) -> None:
    _hf_dataset(tmp_path / "ds")
    loaded, _ = load("hf_dataset", tmp_path, path="ds", id="qid", columns={"question": "question"},
                     image_column="image", audio_column="audio")
    first = loaded.records[0]
    assert first.id == "a" and first.fields == {"question": "q0"}
    assert stored_pixel(tmp_path, first.media["image"]) == (9, 8, 7)
    samples, rate = stored_audio(tmp_path, first.media["audio"])
    assert rate == AUDIO_RATE and abs(len(samples) - AUDIO_RATE // 4) <= 2
    assert loaded.files[0].path == "ds" and loaded.files[0].rows == 3  # arrow shard + 2 json files


def test_hf_dataset_dict_split_and_parquet_shards(tmp_path: Path) -> None:
    _hf_dataset(tmp_path / "dd", dict_split="validation")
    loaded, _ = load("hf_dataset", tmp_path, path="dd", split="validation", image_column="image",
                     audio_column="audio")
    assert [r.id for r in loaded.records] == ["1", "2"] and set(loaded.records[0].fields) == {"question", "qid"}
    with pytest.raises(SourceError, match="unknown split 'train'"):
        load("hf_dataset", tmp_path, path="dd", split="train")
    shards = tmp_path / "hub" / "data"
    shards.mkdir(parents=True)
    for k in range(2):
        pq.write_table(pa.table({"q": [f"s{k}"], "image": [{"bytes": image_bytes((k, k, k)), "path": None}]}),
                       shards / f"test-0000{k}-of-00002.parquet")
    loaded, _ = load("hf_dataset", tmp_path, path="hub", split="test", image_column="image")
    assert [(r.id, r.fields["q"]) for r in loaded.records] == [("1", "s0"), ("2", "s1")]
    assert [f.path for f in loaded.files] == ["hub/data/test-00000-of-00002.parquet",
                                              "hub/data/test-00001-of-00002.parquet"]


def test_common_voice_tsv_with_mp3_and_wav_clips(tmp_path: Path) -> None:
    clips = tmp_path / "clips"
    clips.mkdir()
    soundfile.write(clips / "common_voice_en_1.mp3", tone(1.0, 44100), 44100, format="MP3")
    soundfile.write(clips / "common_voice_en_2.wav", np.stack([tone(), tone()], axis=1), 8000)
    header = "client_id\tpath\tsentence\tup_votes\tdown_votes\tage\tgender\taccents\tlocale\tsegment\n"
    rows = ["c1\tcommon_voice_en_1.mp3\tHe said \"no\".\t2\t0\t\t\t\ten\t\n",
            "c2\tcommon_voice_en_2.wav\tSecond one.\t3\t1\ttwenties\t\t\ten\t\n",
            "c3\tcommon_voice_en_3.mp3\tGone.\t2\t0\t\t\t\ten\t\n"]
    (tmp_path / "validated.tsv").write_text(header + "".join(rows))
    loaded = assert_bad_rows("common_voice", tmp_path, ["validated.tsv:4", "'common_voice_en_3.mp3' not found"],
                            path="validated.tsv", audio="clips")
    mp3, wav = loaded.records
    assert mp3.id == "common_voice_en_1.mp3" and mp3.fields["sentence"] == 'He said "no".'
    assert "path" not in mp3.fields and wav.fields["age"] == "twenties"
    samples, rate = stored_audio(tmp_path, mp3.media["audio"])
    assert rate == AUDIO_RATE and abs(len(samples) - AUDIO_RATE) < 0.05 * AUDIO_RATE  # MP3 pads a little
    samples, rate = stored_audio(tmp_path, wav.media["audio"])
    assert rate == AUDIO_RATE and abs(len(samples) - AUDIO_RATE // 4) <= 2


def test_image_and_audio_folders(tmp_path: Path) -> None:
    write_image(tmp_path / "pics" / "dog" / "b.png", (2, 2, 2))
    write_image(tmp_path / "pics" / "cat" / "a.jpg", (3, 3, 3))
    (tmp_path / "pics" / "notes.txt").write_text("not an image")
    loaded, _ = load("image_folder", tmp_path, folder="pics", labels=True)
    assert [(r.id, r.fields["label"]) for r in loaded.records] == [("cat/a.jpg", "cat"), ("dog/b.png", "dog")]
    assert loaded.files[0].path == "pics" and loaded.files[0].rows == 2
    (tmp_path / "pics" / "dog" / "broken.png").write_bytes(b"not a png")
    assert_bad_rows("image_folder", tmp_path, ["broken.png", "cannot decode image"], folder="pics")

    (tmp_path / "sounds").mkdir()
    soundfile.write(tmp_path / "sounds" / "x.flac", tone(), 8000)
    loaded, _ = load("audio_folder", tmp_path, folder="sounds")
    [record] = loaded.records
    assert record.id == "x.flac" and stored_audio(tmp_path, record.media["audio"])[1] == AUDIO_RATE
    with pytest.raises(SourceError, match="no .wav files"):
        load("audio_folder", tmp_path, folder="pics", extensions=["wav"])


def test_mmcbench_image2text_parquet(tmp_path: Path) -> None:
    table = pa.table({"key": ["9676134", "11"], "caption": ["a dog", "a cat"],
                      "clean": [image_bytes((10, 10, 10)), image_bytes((20, 20, 20))],
                      "gaussian_noise": [image_bytes((11, 11, 11)), image_bytes((21, 21, 21))],
                      "jigsaw": [image_bytes((12, 12, 12)), b""]})
    pq.write_table(table, tmp_path / "i2t.parquet")
    loaded = assert_bad_rows("mmcbench.parquet", tmp_path, ["i2t.parquet row 2", "'jigsaw'"],
                            files=["i2t.parquet"], task="image2text")
    [record] = loaded.records
    assert record.id == "9676134" and record.fields == {"key": "9676134", "text": "a dog",
                                                        "corruptions": ["gaussian_noise", "jigsaw"]}
    assert sorted(record.media) == ["clean", "gaussian_noise", "jigsaw"]
    assert stored_pixel(tmp_path, record.media["jigsaw"]) == (12, 12, 12)


def test_mmcbench_speech2text_parquet(tmp_path: Path) -> None:
    clean = tone(0.5, AUDIO_RATE).astype("<f8")
    table = pa.table({"path": ["common_voice_en_1.mp3"], "transcription": ["hello"],
                      "clean": [clean.tobytes()], "time_mask": [(clean * 0.5).tobytes()]})
    pq.write_table(table, tmp_path / "s2t.parquet")
    loaded, _ = load("mmcbench.parquet", tmp_path, files=["s2t.parquet"], task="speech2text")
    [record] = loaded.records
    samples, rate = stored_audio(tmp_path, record.media["clean"])
    assert rate == AUDIO_RATE and len(samples) == len(clean)
    assert np.abs(samples / 32767 - clean).max() < 1e-3
    with pytest.raises(SourceError, match="missing column"):
        load("mmcbench.parquet", tmp_path, files=["s2t.parquet"], task="image2text")


def test_fields_are_json(tmp_path: Path) -> None:
    """Every loader's fields survive canonical JSON (no numpy scalars, no NaN, no bytes)."""
    from benchc.compiler.canonical import canonical_json

    pq.write_table(pa.table({"a": pa.array([1.0, float("nan")], pa.float32()), "d": [[1, 2], None],
                             "m": [{"x": 1}, {"x": None}]}), tmp_path / "t.parquet")
    loaded, _ = load("table", tmp_path, path="t.parquet")
    assert json.loads(canonical_json([r.fields for r in loaded.records])) == [
        {"a": 1.0, "d": [1, 2], "m": {"x": 1}}, {"a": None, "d": None, "m": {"x": None}}]
