"""A lab's own stimulus table (modprefs.data.pairs), its draw (lab strata, whole pools) and given audio."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from modprefs.data.pairs import PairsFormatError, declared_pairs_files, given_audio_files, read_pairs_table
from modprefs.data.pairs_checks import pairs_problems
from modprefs.data.pairs_interactions import Transcript, build_pair_interactions
from modprefs.data.prism import INTERACTION_COLUMNS
from modprefs.sampling.draw import given_stratum_quotas, sample_study_prompts, take_all_prompts
from modprefs.sampling.screening import ScreeningResult
from modprefs.speech.given import read_given_audio


def _tone(path: Path, rate: int, seconds: float = 1.0, channels: int = 1, freq: float = 440.0) -> str:
    t = np.arange(int(rate * seconds)) / rate
    x = 0.3 * np.sin(2 * np.pi * freq * t)
    sf.write(path, np.stack([x] * channels, axis=1) if channels > 1 else x, rate)
    return path.name


def _table(tmp_path: Path, rows: list[dict], name: str = "pairs.csv") -> Path:
    path = tmp_path / name
    frame = pd.DataFrame(rows)
    if name.endswith(".csv"):
        frame.to_csv(path, index=False)
    elif name.endswith(".tsv"):
        frame.to_csv(path, index=False, sep="\t")
    elif name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        frame.to_parquet(path)
    return path


def _rows(n: int = 3) -> list[dict]:
    return [
        {
            "item_id": f"it{i}",
            "prompt": f"question {i}?",
            "response_0": f"short answer {i}",
            "response_1": f"a longer answer number {i}",
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("name", ["pairs.csv", "pairs.tsv", "pairs.jsonl", "pairs.parquet"])
def test_every_file_format_reads_to_the_same_items(tmp_path: Path, name: str) -> None:
    table = read_pairs_table(str(_table(tmp_path, _rows(), name)))
    assert table.frame["item_id"].tolist() == ["it0", "it1", "it2"]
    assert table.frame["response_1"].tolist()[2] == "a longer answer number 2"
    assert pairs_problems(table, "kokoro-onnx") == []


def test_foreign_column_names_are_mapped(tmp_path: Path) -> None:
    rows = [{"id": r["item_id"], "q": r["prompt"], "a": r["response_0"], "b": r["response_1"]} for r in _rows()]
    path = _table(tmp_path, rows)
    table = read_pairs_table(str(path), {"item_id": "id", "prompt": "q", "response_0": "a", "response_1": "b"})
    assert table.frame["prompt"].tolist()[0] == "question 0?"
    with pytest.raises(PairsFormatError, match=r"names column\(s\) \['nope'\] that the table lacks"):
        read_pairs_table(str(path), {"item_id": "nope"})
    with pytest.raises(PairsFormatError, match="missing column"):
        read_pairs_table(str(path))


def test_problems_name_file_row_and_column(tmp_path: Path) -> None:
    _tone(tmp_path / "ok.wav", 16000)
    (tmp_path / "broken.wav").write_bytes(b"RIFF not audio at all")
    rows = [
        {
            "item_id": "a",
            "prompt": "p",
            "response_0": "x",
            "response_1": "y",
            "audio_0": "ok.wav",
            "audio_1": "missing.wav",
        },
        {
            "item_id": "a",
            "prompt": "",
            "response_0": "x",
            "response_1": "z",
            "audio_0": "broken.wav",
            "audio_1": "ok.wav",
        },
        {"item_id": "c", "prompt": "p", "response_0": "same", "response_1": "same", "audio_0": "", "audio_1": ""},
        {
            "item_id": "d",
            "prompt": "p",
            "response_0": "",
            "response_1": "y",
            "audio_0": "",
            "audio_1": "ok.wav",
            "history": "[{'role': 'user'}]",
        },
    ]
    path = _table(tmp_path, rows)
    problems = "\n".join(pairs_problems(read_pairs_table(str(path)), "given"))
    name = str(path)
    assert f"{name}, row 2, column 'audio_1': audio file not found" in problems
    assert f"{name}, row 3, column 'item_id': duplicate item_id 'a' (first at row 2)" in problems
    assert f"{name}, row 3, column 'prompt': empty prompt" in problems
    assert f"{name}, row 3, column 'audio_0': soundfile cannot read the audio" in problems
    assert f"{name}, row 4: both sides are identical" in problems
    assert f"{name}, row 5: side 0 has neither text" in problems
    assert f"{name}, row 5, column 'history': not valid JSON" in problems
    # a synthesising backend needs text on every side
    synth = "\n".join(pairs_problems(read_pairs_table(str(path)), "kokoro-onnx"))
    assert f"{name}, row 5, column 'response_0': empty; a synthesising tts.backend needs text" in synth


def test_given_audio_is_mono_at_the_study_rate(tmp_path: Path) -> None:
    for rate, channels in [(16000, 1), (22050, 2), (44100, 2), (48000, 1)]:
        _tone(tmp_path / "t.wav", rate, seconds=0.5, channels=channels)
        audio = read_given_audio(tmp_path / "t.wav", 24000, "c")
        assert audio.ndim == 1 and audio.dtype == np.float32
        assert abs(audio.size - 12000) <= 1
        # the tone keeps its frequency: the spectrum peaks at 440 Hz
        spectrum = np.abs(np.fft.rfft(audio))
        assert abs(np.argmax(spectrum) * 24000 / audio.size - 440) < 3


def test_interactions_from_text_and_from_asr(tmp_path: Path) -> None:
    _tone(tmp_path / "a.wav", 16000)
    _tone(tmp_path / "b.flac", 44100, channels=2)
    rows = [
        {
            "item_id": "x 1",
            "prompt": "p",
            "response_0": "given text",
            "response_1": "",
            "audio_0": "a.wav",
            "audio_1": "b.flac",
            "system_0": "sys-a",
            "history": json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]),
        },
    ]
    table = read_pairs_table(str(_table(tmp_path, rows)))
    heard = []

    def transcribe(path: str) -> Transcript:
        heard.append(path)
        return Transcript("words from asr", (("words", 0.9), ("from", 0.8), ("asr", 0.4)))

    def screen(text: str) -> str:
        return "harmful: transcript contains 'asr'" if "asr" in text else ""

    out = build_pair_interactions(table, None, transcribe, screen)
    assert list(out.columns[: len(INTERACTION_COLUMNS)]) == INTERACTION_COLUMNS
    row = out.iloc[0]
    assert (row["text_0"], row["transcript_0"]) == ("given text", "given")
    assert (row["text_1"], row["transcript_1"]) == ("words from asr", "asr")
    assert heard == [str(tmp_path / "b.flac")]
    # the transcript is screened and its word probabilities kept; the lab's own text is neither
    assert row["asr_flag_1"] == "harmful: transcript contains 'asr'" and row["asr_flag_0"] == ""
    assert row["asr_confidence_1"] == pytest.approx(0.7) and np.isnan(row["asr_confidence_0"])
    assert json.loads(row["asr_words_1"]) == [["words", 0.9], ["from", 0.8], ["asr", 0.4]]
    assert row["source_row"] == 2  # the CSV's header is row 1
    assert row["model_name_0"] == "sys-a" and row["model_name_1"] is None
    assert row["history"][1]["role"] == "model" and row["history_turns"] == 1
    assert given_audio_files(str(tmp_path / "pairs.csv")) == {
        "x-1_0": str(tmp_path / "a.wav"),
        "x-1_1": str(tmp_path / "b.flac"),
    }
    # the data step reads the table and the audio of audio-only sides; rendering reads the rest
    assert declared_pairs_files(str(tmp_path / "pairs.csv"), audio_only_sides=True) == [
        str(tmp_path / "pairs.csv"),
        str(tmp_path / "b.flac"),
    ]
    with pytest.raises(PairsFormatError, match="ASR heard no words"):
        build_pair_interactions(table, None, lambda path: Transcript(""))


def _interactions(n: int, strata: list[str] | None = None) -> pd.DataFrame:
    rows = []
    for i in range(n):
        rows.append(
            {
                "conversation_id": f"i{i:02d}",
                "conversation_type": "pairs",
                "abs_char_diff": i,
                "chars_0": 10,
                "chars_1": 10 + i,
                "history_chars": 0,
                "history_turns": 0,
                "stratum_given": strata[i] if strata else None,
            }
        )
    return pd.DataFrame(rows)


def _pass(row: object) -> ScreeningResult:
    return ScreeningResult(None, "")


def test_lab_strata_get_proportional_quotas() -> None:
    assert given_stratum_quotas({"a": 10, "b": 5, "c": 5}, 8) == {"a": 4, "b": 2, "c": 2}
    assert given_stratum_quotas({"a": 3, "b": 3, "c": 3}, 4) == {"a": 2, "b": 1, "c": 1}
    strata = ["easy"] * 12 + ["hard"] * 6
    sampling = {"n_prompts": 6, "long_fraction": 0.25, "long_percentile": 90}
    prompts, removals, info = sample_study_prompts(_interactions(18, strata), sampling, 7, _pass)
    assert prompts["stratum"].value_counts().to_dict() == {"easy": 4, "hard": 2}
    assert info["strata"].startswith("given")


def test_a_pool_no_larger_than_n_prompts_is_used_whole_without_screening() -> None:
    sampling = {"n_prompts": 8, "long_fraction": 0.25, "long_percentile": 90}

    def refuse(row: object) -> ScreeningResult:
        raise AssertionError("a whole pool is not screened")

    prompts, removals, _ = sample_study_prompts(_interactions(5), sampling, 3, refuse)
    assert sorted(prompts["conversation_id"]) == [f"i{i:02d}" for i in range(5)]
    assert removals.empty
    again, _ = take_all_prompts(_interactions(5), 90, 3)
    assert again.equals(prompts)


ROOT = Path(__file__).resolve().parents[2]


def _lab_config(source: Path, backend: str = "given", **sampling: int) -> dict:
    import yaml

    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    cfg["data"] = {"source": str(source), "format": "pairs"}
    cfg["tts"] = {"backend": backend, "shard_size": 7}
    if backend != "given":
        cfg["tts"] |= {"voice": "jf_alpha", "lang": "en-us"}
    cfg["sampling"].update(sampling)
    cfg["study"]["trials_per_participant"] = 2
    return cfg


def test_the_workflow_start_names_every_problem_of_the_table(tmp_path: Path) -> None:
    from modprefs.config_checks import ConfigError, check_config

    _tone(tmp_path / "ok.wav", 16000)
    rows = [
        {
            "item_id": "a",
            "prompt": "p",
            "response_0": "x",
            "response_1": "y",
            "audio_0": "ok.wav",
            "audio_1": "gone.wav",
        },
        {"item_id": "b", "prompt": "p", "response_0": "x", "response_1": "z", "audio_0": "ok.wav", "audio_1": "ok.wav"},
    ]
    path = _table(tmp_path, rows)
    with pytest.raises(ConfigError) as info:
        check_config(_lab_config(path), ROOT)
    assert f"{path}, row 2, column 'audio_1': audio file not found" in str(info.value)
    # the same audio on both sides (issue #49): refused unless the lab opts in
    assert f"{path}, row 3, column 'audio_1': the same audio as audio_0 (ok.wav)" in str(info.value)
    assert "data.allow_identical_audio: true" in str(info.value)
    _tone(tmp_path / "other.wav", 16000, freq=330.0)
    rows[1]["audio_1"] = "other.wav"
    path = _table(tmp_path, rows)
    # valid once the file exists; a text-only table with a synthesiser too
    _tone(tmp_path / "gone.wav", 22050)
    check_config(_lab_config(path), ROOT)
    check_config(_lab_config(path, "kokoro-onnx"), ROOT)
    with pytest.raises(ConfigError, match="tts.backend: given takes the audio of a pairs table"):
        cfg = _lab_config(path)
        cfg["data"] = {"source": "resources/sample/conversations.jsonl"}
        check_config(cfg, ROOT)
    with pytest.raises(ConfigError, match="data.source: file or folder not found"):
        check_config(_lab_config(tmp_path / "nope.csv"), ROOT)


def test_a_drawn_pool_must_fill_the_lab_strata(tmp_path: Path) -> None:
    from modprefs.config_checks import ConfigError, check_config

    rows = [dict(r, stratum="s1" if i < 8 else "") for i, r in enumerate(_rows(10))]
    path = _table(tmp_path, rows)
    with pytest.raises(ConfigError, match=r"row 10, column 'stratum': empty; give every item a stratum or none"):
        check_config(_lab_config(path, "kokoro-onnx", n_prompts=4), ROOT)


def test_a_hub_source_offline_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        PairsFormatError, match=r"could not load the Hugging Face dataset 'lab/own-study'.*save_to_disk"
    ):
        read_pairs_table("hf://lab/own-study")


def test_a_datasets_folder_with_audio_cells(tmp_path: Path) -> None:
    import datasets
    import pyarrow as pa

    _tone(tmp_path / "a.wav", 16000)
    cell = {"bytes": (tmp_path / "a.wav").read_bytes(), "path": "a.wav"}
    features = datasets.Features(
        {
            "item_id": datasets.Value("string"),
            "prompt": datasets.Value("string"),
            "response_0": datasets.Value("string"),
            "response_1": datasets.Value("string"),
            "audio_0": datasets.Audio(),
            "audio_1": datasets.Audio(),
        }
    )
    columns = {
        "item_id": ["i1"],
        "prompt": ["p"],
        "response_0": ["one"],
        "response_1": ["two"],
        "audio_0": [cell],
        "audio_1": [{"bytes": b"not audio", "path": "b.wav"}],
    }
    ds = datasets.Dataset(pa.table(columns, schema=features.arrow_schema), info=datasets.DatasetInfo(features=features))
    datasets.DatasetDict({"train": ds}).save_to_disk(str(tmp_path / "ds"))
    table = read_pairs_table(str(tmp_path / "ds"))
    assert table.name == f"dataset {tmp_path / 'ds'}"
    problems = pairs_problems(table, "given")
    # a garbage Audio cell is shown by its size, libsndfile's reason and its first bytes (issue #49), not the repr of
    # the buffer soundfile read it from
    assert len(problems) == 1 and "row 1, column 'audio_1': the Audio cell's 9 bytes are not audio" in problems[0]
    assert "they begin b'not audio'" in problems[0] and "BytesIO" not in problems[0]
    out = build_pair_interactions(table, tmp_path / "given", None)
    written = Path(out.at[0, "audio_0"])
    assert written == tmp_path / "given" / "i1_0.wav" and written.read_bytes() == cell["bytes"]


# ---- issue #49: what a lab feeds the table -----------------------------------------------------------------------
def test_checks_see_through_invisible_characters(tmp_path: Path) -> None:
    """A prompt of zero-width and bidi characters is empty, ids differing only in them are one id, and sides
    differing only in them are identical (NFKC + invisible characters removed); the text itself is kept."""
    rows = _rows(4)
    rows[1]["prompt"] = "\u200b\u200e\u2066"
    rows[2]["item_id"] = "it0\u200b"  # it0 with a zero-width space
    rows[3]["response_1"] = rows[3]["response_0"] + "\ufeff"
    path = _table(tmp_path, rows)
    table = read_pairs_table(str(path))
    problems = "\n".join(pairs_problems(table, "kokoro-onnx"))
    assert (
        f"{path}, row 3, column 'prompt': empty prompt (only invisible characters: U+200B ZERO WIDTH SPACE, "
        "U+200E LEFT-TO-RIGHT MARK, U+2066 LEFT-TO-RIGHT ISOLATE)" in problems
    )
    assert f"{path}, row 4, column 'item_id': duplicate item_id 'it0' (first at row 2)" in problems
    assert "differ only in what a reader does not see: U+200B ZERO WIDTH SPACE" in problems
    assert f"{path}, row 5: both sides are identical" in problems
    assert table.frame.at[2, "item_id"] == "it0\u200b"  # kept as written
    # a full-width id is the same id to a reader
    rows = _rows(2)
    rows[1]["item_id"] = "\uff49\uff54\uff10"  # ｉｔ０
    assert "duplicate item_id 'it0'" in "\n".join(pairs_problems(read_pairs_table(str(_table(tmp_path, rows))), "x"))


def test_a_cell_longer_than_the_csv_modules_limit_is_read(tmp_path: Path) -> None:
    """A 200,000-character response (the csv module's default field limit is 131,072) is read; a synthesiser is told
    it is longer than one clip speaks, a given-audio study reads it as its text condition."""
    _tone(tmp_path / "a.wav", 16000)
    _tone(tmp_path / "b.wav", 16000, freq=330.0)
    rows = [dict(r, audio_0="a.wav", audio_1="b.wav") for r in _rows(2)]
    rows[0]["response_0"] = "word " * 40_000
    path = _table(tmp_path, rows)
    table = read_pairs_table(str(path))
    assert len(table.frame.at[0, "response_0"]) == 200_000
    synth = pairs_problems(table, "kokoro-onnx")
    assert synth == [
        f"{path}, row 2, column 'response_0': 200,000 characters, more than the 20,000 a synthesiser speaks in one "
        "clip (about 20 minutes); is the cell right?"
    ]
    assert pairs_problems(table, "given") == []


def test_audio_paths_are_named_as_what_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder named x.wav, a symbolic-link loop, a dangling link and a file that may not be read are each named
    as such, not "not found" or libsndfile's "System error"."""
    import os

    _tone(tmp_path / "ok.wav", 16000)
    (tmp_path / "x.wav").mkdir()
    (tmp_path / "loop1.wav").symlink_to("loop2.wav")
    (tmp_path / "loop2.wav").symlink_to("loop1.wav")
    (tmp_path / "dangling.wav").symlink_to("gone.wav")
    _tone(tmp_path / "secret.wav", 16000, freq=330.0)
    rows = [dict(r, audio_0="ok.wav") for r in _rows(4)]
    for row, audio in zip(rows, ["x.wav", "loop1.wav", "dangling.wav", "secret.wav"]):
        row["audio_1"] = audio
    path = _table(tmp_path, rows)
    real_open = os.open

    def no_permission(file, flags, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if str(file).endswith("secret.wav"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_permission)  # root reads any file: the refusal is simulated
    problems = "\n".join(pairs_problems(read_pairs_table(str(path)), "given"))
    assert f"row 2, column 'audio_1': audio file {tmp_path / 'x.wav'} is a folder, not a file" in problems
    assert f"row 3, column 'audio_1': audio file {tmp_path / 'loop1.wav'} is a symbolic link loop" in problems
    assert f"{tmp_path / 'dangling.wav'} is a symbolic link to gone.wav, which does not exist" in problems
    secret = tmp_path / "secret.wav"
    assert f"row 5, column 'audio_1': audio file {secret} cannot be read: permission denied" in problems
    assert "not found" not in problems and "System error" not in problems


def test_audio_longer_than_the_maximum_is_refused_from_its_header(tmp_path: Path) -> None:
    from modprefs.data.pairs_checks import PairsChecks

    _tone(tmp_path / "a.wav", 16000, seconds=3.0)
    _tone(tmp_path / "b.wav", 16000, freq=330.0)
    path = _table(tmp_path, [dict(r, audio_0="a.wav", audio_1="b.wav") for r in _rows(1)])
    table = read_pairs_table(str(path))
    assert pairs_problems(table, PairsChecks("given", max_audio_s=2.5)) == [
        f"{path}, row 2, column 'audio_0': the audio lasts 0.1 min (3 s, 0 MB), longer than data.max_audio_s "
        "(2.5 s); a stimulus that long is usually the wrong file. To use it, raise data.max_audio_s and "
        "audio_qc.thresholds.max_duration_s (QC's bound on a clip, 600 s by default); long audio is rendered in blocks"
    ]
    assert pairs_problems(table, PairsChecks("given", max_audio_s=None)) == []
    assert pairs_problems(table, "given") == []  # the default maximum, 600 s


def test_the_same_audio_on_both_sides_needs_the_labs_opt_in(tmp_path: Path) -> None:
    from modprefs.data.pairs_checks import PairsChecks

    _tone(tmp_path / "a.wav", 16000)
    (tmp_path / "copy.wav").write_bytes((tmp_path / "a.wav").read_bytes())
    path = _table(tmp_path, [dict(r, audio_0="a.wav", audio_1="copy.wav") for r in _rows(1)])
    table = read_pairs_table(str(path))
    [problem] = pairs_problems(table, "given")
    assert "row 2, column 'audio_1': the same audio as audio_0 (copy.wav)" in problem
    assert pairs_problems(table, PairsChecks("given", allow_identical_audio=True)) == []


def _saved(tmp_path: Path, splits: dict[str, list[dict]]) -> Path:
    import datasets

    folder = tmp_path / "ds"
    datasets.DatasetDict({k: datasets.Dataset.from_list(v) for k, v in splits.items()}).save_to_disk(str(folder))
    return folder


def test_a_damaged_datasets_folder_names_its_file(tmp_path: Path) -> None:
    """Arrow files are memory-mapped: damage to a string shows when the column is read (pyarrow's "Wrapping ...
    failed" or a UnicodeDecodeError); the message names the damaged file."""
    folder = _saved(tmp_path, {"train": _rows(3)})
    [arrow] = sorted(folder.rglob("*.arrow"))
    data = arrow.read_bytes()
    at = data.index(b"question 1?")
    arrow.write_bytes(data[:at] + b"\xff\xfe\xfd" + data[at + 3 :])
    with pytest.raises(PairsFormatError) as info:
        read_pairs_table(str(folder))
    text = str(info.value)
    assert f"cannot read the datasets folder: {arrow}: a damaged Arrow file" in text and "Invalid UTF8" in text


def test_a_published_study_without_its_stimuli_is_said_so(tmp_path: Path) -> None:
    folder = _saved(tmp_path, {"ratings": [{"participant_id": "p", "rating": 5}], "participants": [{"x": 1}]})
    with pytest.raises(PairsFormatError, match="the ratings of a published study without its stimuli split") as info:
        read_pairs_table(str(folder))
    assert "hf_split" not in str(info.value)


def test_the_hubs_parquet_layout_is_a_pairs_source(tmp_path: Path) -> None:
    """A folder holding data/<split>/train-*.parquet (+ README.md), as a clone of a hub dataset does."""
    for split, rows in (("train", _rows(3)), ("test", _rows(2))):
        (tmp_path / "repo" / "data" / split).mkdir(parents=True)
        pd.DataFrame(rows).to_parquet(tmp_path / "repo" / "data" / split / "train-00000-of-00001.parquet")
    (tmp_path / "repo" / "README.md").write_text("---\nconfigs: []\n---\n")
    table = read_pairs_table("repo", base_dir=tmp_path)
    assert table.frame["item_id"].tolist() == ["it0", "it1", "it2"] and table.name == "repo/data/train"
    assert len(read_pairs_table("repo", split="test", base_dir=tmp_path).frame) == 2
