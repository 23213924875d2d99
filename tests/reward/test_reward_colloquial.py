"""Colloquial pairs offline (the rule-based rewriter), modality pairs with TTS negatives from several voices and
engines (gender-matched), the workflow's pair builder, and the one id normaliser shared with sampling.

Rendering uses the real engines (espeak-ng, piper, kokoro-onnx; all offline from PyPI).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from modprefs.reward.build import DEFAULT_VOICES, Renderers, build_pair_sets, voice_for
from modprefs.reward.colloquial import REWRITER_NAME, list_to_speech, markdown_excerpt, numbers_as_speech, spoken_style
from modprefs.reward.config import DEFAULTS
from modprefs.reward.pairs import PairDataError, normalise_id, validate_pairs
from modprefs.reward.study_pairs import study_context
from modprefs.reward.synthetic import write_clips
from modprefs.sampling.draw import prompt_id_for

ESPEAK = {"backend": "espeak-ng", "voice": "en-us"}


# ------------------------------------------------------------------------------------------ rewriter


def test_rule_based_rewriter_rules() -> None:
    assert numbers_as_speech("It costs $5 or 25% more, 3.5 kg, the 2nd of 10,000 in 1990.") == (
        "It costs five dollars or twenty-five percent more, three point five kg, the second of ten thousand in "
        "nineteen ninety."
    )
    spoken = spoken_style("Here are some tips:\n\n1. Make a list.\n2. Buy store brands.\n3. Do not shop hungry.", 0)
    assert "First, make a list." in spoken and "Then, buy store brands." in spoken
    assert "And finally, don't shop hungry." in spoken and "1." not in spoken
    s = spoken_style(
        "However, it is important to utilize approximately 3 cups. You are welcome to purchase "
        "more flour if you do not have enough, and you will need a large bowl for the dough.",
        0,
    )
    assert s.split(",")[0] in ("So", "Well", "Okay", "Yeah", "Right")  # a discourse marker opens it
    for phrase in ("but", "you really want to use", "about three cups", "you're", "buy", "don't", "you'll"):
        assert phrase in s.lower(), (phrase, s)
    assert "However" not in s and "utilize" not in s and "approximately" not in s
    assert s.count(".") >= 3  # the long second sentence was split into shorter clauses
    assert list_to_speech("- a\n- b") == "First, a. And finally, b."
    assert "it's raining, so we can't go" in spoken_style("It is raining, so we cannot go.", 0).lower()


def test_rewriter_is_deterministic_and_adds_fillers() -> None:
    text = (
        "Planning is the biggest money saver. Decide on your meals before you shop. Check your cupboards. "
        "Write a list so you only buy what you use."
    )
    assert spoken_style(text, seed=3) == spoken_style(text, seed=3)
    outs = {spoken_style(text, seed=s) for s in range(12)}
    assert len(outs) > 3  # the seeded choices vary with the seed
    fillers = ("You know,", "I mean,", "Like,", "Um,", "Honestly,")
    assert any(f in o for o in outs for f in fillers)
    assert all(len(o.split(". ")) <= 5 for o in outs)  # brevity: at most max_sentences (4) sentences + the opener
    assert REWRITER_NAME == "rule-based"


def test_markdown_excerpt_keeps_whole_sentences() -> None:
    text = "First sentence here. Second one is a bit longer than that. Third.\n\n- item one\n- item two"
    assert markdown_excerpt(text, 30) == "First sentence here."
    assert markdown_excerpt(text, 200).endswith("- item two")


# ----------------------------------------------------------------------------------- voices, genders


def test_voice_pool_is_gender_matched_and_varied() -> None:
    female = {voice_for(DEFAULT_VOICES, f"d{i}_1", "female", 0)["voice"] for i in range(60)}
    male = {voice_for(DEFAULT_VOICES, f"d{i}_1", "male", 0)["voice"] for i in range(60)}
    anyone = {voice_for(DEFAULT_VOICES, f"d{i}_1", None, 0)["voice"] for i in range(60)}
    assert female == {v["voice"] for v in DEFAULT_VOICES if v["gender"] == "female"}
    assert male == {v["voice"] for v in DEFAULT_VOICES if v["gender"] == "male"}
    assert anyone == {v["voice"] for v in DEFAULT_VOICES}
    assert len({v["backend"] for v in DEFAULT_VOICES}) == 3  # three engines
    assert voice_for(DEFAULT_VOICES, "x_1", "male", 5) == voice_for(DEFAULT_VOICES, "x_1", "male", 5)
    with pytest.raises(PairDataError, match="corpus.voices is empty"):
        voice_for([], "x_1", None, 0)


def _corpus(tmp_path: Path) -> Path:
    m = write_clips(tmp_path / "natural", 8, seed=2, seconds=0.4)
    corpus = pd.DataFrame(
        {
            "audio_path": m["path"],
            "transcript": m["spoken_text"],
            "dialogue_id": ["d:1"] * 4 + ["d 2"] * 4,
            "turn": [0, 1, 2, 3] * 2,
            "speaker": ["A", "B"] * 4,
            "tier": "wild",
            "gender": ["F", "M", "female", "male", "f", "m", "w", "unknown"],
        }
    )
    path = tmp_path / "corpus.csv"
    corpus.to_csv(path, index=False)
    return path


def _study(tmp_path: Path) -> dict:
    manifest = write_clips(tmp_path / "clips", 4, seed=1, seconds=0.4)
    manifest["clip_id"] = ["conv-1_0", "conv-1_1", "c2_0", "c2_1"]
    manifest["prompt_id"] = ["conv-1", "conv-1", "c2", "c2"]
    stimuli = pd.DataFrame(
        {
            "prompt_id": manifest["prompt_id"],
            "clip_id": manifest["clip_id"],
            "response": [0, 1, 0, 1],
            "n_chars": [100, 300, 250, 50],
        }
    )
    ratings = pd.DataFrame(
        [
            {
                "participant_id": f"{c}{k}",
                "condition": c,
                "prompt_id": p,
                "clip_id": f"{p}_{r}",
                "trial": 1,
                "rating": 30 + 40 * r + k,
            }
            for c in ("text", "audio")
            for p in ("conv-1", "c2")
            for r in (0, 1)
            for k in (0, 1)
        ]
    )
    conversations = pd.DataFrame(
        {
            "conversation_id": ["conv/1", "c2"],  # "conv/1": an id outside [A-Za-z0-9_-]
            "history": [[{"role": "user", "content": "hi"}, {"role": "model", "content": "hello"}], []],
            "prompt": ["How do I save money on groceries?", "What should I see in Lisbon?"],
            "text_0": [
                "Here are some tips:\n\n1. Make a list.\n2. Do not shop hungry.",
                "However, it is important to see the castle. You will love the 3 old trams.",
            ],
            "text_1": [
                "Buying store brands saves approximately 20% on most products.",
                "Belém is worth a visit, and the custard tarts are famous.",
            ],
        }
    )
    return {"ratings": ratings, "stimuli": stimuli, "manifest": manifest, "conversations": conversations}


def _pairs_cfg(**over) -> dict:
    import copy

    cfg = copy.deepcopy(DEFAULTS["pairs"])
    cfg["sources"] = ["human"]
    cfg.update(over)
    return cfg


def test_modality_pairs_use_several_gender_matched_voices(tmp_path: Path) -> None:
    s = _study(tmp_path)
    voices = [
        {"backend": "espeak-ng", "voice": "en-us+f3", "gender": "female"},
        {"backend": "espeak-ng", "voice": "en-us+f4", "gender": "female"},
        {"backend": "espeak-ng", "voice": "en-us+m3", "gender": "male"},
        {"backend": "piper", "voice": "en_US-joe-medium", "gender": "male"},
    ]
    cfg = _pairs_cfg(
        corpus={
            "manifest": str(_corpus(tmp_path)),
            "name": "demo",
            "max_pairs": None,
            "min_context_turns": 1,
            "voices": voices,
        },
        colloquial=None,
        degradation=None,
    )
    sets, summary = build_pair_sets(
        cfg, s["ratings"], s["stimuli"], s["manifest"], s["conversations"], None, ESPEAK, tmp_path / "audio", seed=0
    )
    mod = sets["modality"].set_index("pair_id")
    assert len(mod) == 6  # turns 1-3 of both dialogues
    gender = {"d-1_1": "male", "d-1_2": "female", "d-1_3": "male", "d-2_1": "male", "d-2_2": "female", "d-2_3": None}
    by_voice = {f"{v['backend']}/{v['voice']}": v["gender"] for v in voices}
    for key, g in gender.items():
        voice = mod.loc[f"modality:demo:{key}", "tts_voice"]
        assert voice in by_voice and (g is None or by_voice[voice] == g), (key, voice)
    assert len(set(mod["tts_voice"])) >= 2, mod["tts_voice"].tolist()  # not one voice for every speaker
    assert summary["modality"]["gender_matched"] and sum(summary["modality"]["tts_voices"].values()) == 6
    # the same transcript in two voices is different audio, and every file is where the pair says
    a = mod.loc["modality:demo:d-1_1", "rejected_audio"]
    assert Path(a).is_file() and "tts_resynthesis" in a
    validate_pairs(sets["modality"])


def test_without_a_corpus_the_summary_says_what_is_missing(tmp_path: Path) -> None:
    s = _study(tmp_path)
    cfg = _pairs_cfg(colloquial=None)
    sets, summary = build_pair_sets(
        cfg, s["ratings"], s["stimuli"], s["manifest"], s["conversations"], None, ESPEAK, tmp_path / "audio", seed=0
    )
    assert sets["modality"].empty and "human-speech corpus" in summary["skipped"]["modality"]
    assert summary["skipped"]["colloquial"] == "reward.pairs.colloquial is null" and sets["colloquial"].empty


def test_colloquial_pairs_by_default_rule_based_same_voice(tmp_path: Path) -> None:
    s = _study(tmp_path)
    cfg = _pairs_cfg(colloquial={**DEFAULTS["pairs"]["colloquial"], "tts": ESPEAK})
    sets, summary = build_pair_sets(
        cfg,
        s["ratings"],
        s["stimuli"],
        s["manifest"],
        s["conversations"],
        None,
        {"backend": "kokoro-onnx", "voice": "jf_alpha"},
        tmp_path / "audio",
        seed=0,
    )
    col = sets["colloquial"].set_index("pair_id")
    assert len(col) == 4 and set(col["category"]) == {"colloquial_rule_based"}
    assert set(col["rewriter"]) == {"rule-based"} and set(col["criterion"]) == {"colloquialness"}
    assert summary["colloquial"]["rewriter"] == "rule-based" and "rule-based" in summary["colloquial"]["note"]
    row = col.loc["colloquial:conv-1_0"]
    assert row["rejected_text"] == "Here are some tips: Make a list. Do not shop hungry."
    assert "First, make a list" in row["chosen_text"] and "don't shop hungry" in row["chosen_text"]
    # both sides in the same voice, different files; the context of an id with a '/' is found
    assert Path(row["chosen_audio"]).parent == Path(row["rejected_audio"]).parent
    assert Path(row["chosen_audio"]).parent.name == "espeak-ng-en-us" and row["chosen_audio"] != row["rejected_audio"]
    assert set(col["tts_voice"]) == {"espeak-ng/en-us"}
    assert [t["text"] for t in row["context"]] == ["hi", "hello", "How do I save money on groceries?"]
    assert row["group"] == "conv-1" and col.loc["colloquial:conv-1_1", "group"] == "conv-1"
    validate_pairs(sets["colloquial"])
    x, sr = sf.read(row["chosen_audio"])
    assert sr > 8000 and len(x) > sr * 0.5


def test_colloquial_rewriter_misconfiguration_is_named(tmp_path: Path) -> None:
    s = _study(tmp_path)
    for colloquial, msg in (
        ({"rewriter": "table"}, "colloquial.rewrites"),
        ({"rewriter": "llm", "endpoint": {"base_url": "http://x"}}, "lacks base_url and model"),
    ):
        cfg = _pairs_cfg(colloquial={**DEFAULTS["pairs"]["colloquial"], **colloquial})
        with pytest.raises(PairDataError, match=msg):
            build_pair_sets(
                cfg,
                s["ratings"],
                s["stimuli"],
                s["manifest"],
                s["conversations"],
                None,
                ESPEAK,
                tmp_path / "audio",
                seed=0,
            )


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_kokoro_and_the_default_voices_render(tmp_path: Path) -> None:
    """Every default voice builds and speaks (real engines): the pool is usable as shipped."""
    renderers = Renderers(tmp_path / "audio", threads=1)
    lengths = {}
    for voice in DEFAULT_VOICES:
        path = renderers("probe", voice)("Yes, that works for me.", "probe")
        x, sr = sf.read(path)
        lengths[Renderers.voice_name(voice)] = len(x) / sr
    assert len(lengths) == len(DEFAULT_VOICES) and all(0.3 < s < 5 for s in lengths.values()), lengths


# --------------------------------------------------------------------------------------------- ids


def test_one_id_normaliser_for_sampling_and_pairs() -> None:
    for cid in ("c0001", "abc_DEF-9", "conv/1", "a b:c", "ü-1"):
        assert normalise_id(cid) == prompt_id_for(cid)
    assert prompt_id_for("c0001") == "c0001" and prompt_id_for("abc_DEF-9") == "abc_DEF-9"  # unchanged ids
    conv = pd.DataFrame({"conversation_id": ["conv/1", "plain"], "history": [[], []], "prompt": ["q1", "q2"]})
    ctx = study_context(conv)
    assert set(ctx) == {prompt_id_for("conv/1"), "plain"} and ctx[prompt_id_for("conv/1")][-1]["text"] == "q1"
    assert np.all([t["role"] == "user" for t in ctx["plain"]])


def test_written_opening_longer_or_not_than_a_target() -> None:
    from modprefs.reward.colloquial import written_opening

    reply = "One two three. " * 3 + "A much longer sentence that goes on for a while here. " + "Short. " * 4
    assert written_opening(reply, 20, longer=False) == "One two three."
    assert written_opening(reply, 20, longer=True) == "One two three. One two three."
    assert written_opening(reply, 44, longer=True).endswith("goes on for a while here.")
    assert written_opening(reply, 5, longer=False) == "One two three."  # at least one sentence
    assert written_opening("Only this.", 50, longer=True) == "Only this."  # the whole reply when none is longer
    # the length as spoken (measure) decides, not the characters
    assert written_opening("Save 25%. Then more words.", 30, longer=True, measure=lambda t: 4 * len(t)) == "Save 25%."


def test_rule_based_colloquial_pairs_are_not_decided_by_length(tmp_path: Path) -> None:
    """The rewrite is longer than the excerpt it rewrites; with length_balanced (default) half the written sides
    are a longer opening of the reply, so the longer side is the spoken one in about half the pairs only."""
    s = _study(tmp_path)
    more = " Plan the meals for the week. Compare the unit prices on the labels. Buy what is in season."
    s["conversations"] = s["conversations"].assign(**{c: s["conversations"][c] + more for c in ("text_0", "text_1")})
    longer = {}
    for balanced in (True, False):
        cfg = _pairs_cfg(colloquial={**DEFAULTS["pairs"]["colloquial"], "tts": ESPEAK, "length_balanced": balanced})
        sets, summary = build_pair_sets(
            cfg, s["ratings"], s["stimuli"], s["manifest"], s["conversations"], None, ESPEAK, tmp_path / "a", seed=0
        )
        col = sets["colloquial"]
        longer[balanced] = int((col["chosen_chars"] > col["rejected_chars"]).sum())
        assert (
            summary["colloquial"]["length_balanced"] is balanced
            and summary["colloquial"]["spoken_longer"] == (longer[balanced])
        )
        assert len(col) == 4 and set(col["criterion"]) == {"colloquialness"}
    assert longer[False] == 4 and longer[True] < 4, longer  # the rewrite is no longer the longer side in every pair
