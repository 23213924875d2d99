"""Pair builders (study ratings, corpus modality pairs, colloquial rewrites, degradations) and the
input checks that stop a bad pair set before any training starts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from modprefs.reward import train as train_mod
from modprefs.reward.audio import AudioReadError, degradation_spec, degrade, load_audio
from modprefs.reward.pairs import (
    CORPUS_COLUMNS,
    PAIR_COLUMNS,
    PairDataError,
    assign_split,
    read_pairs,
    validate_pairs,
    write_pairs,
)
from modprefs.reward.speech_pairs import (
    colloquial_pairs,
    degradation_pairs,
    modality_pairs,
    read_corpus_manifest,
    request_rewrites,
    validate_corpus,
)
from modprefs.reward.study_pairs import study_pairs
from modprefs.reward.synthetic import SR, speechlike, write_clips
from modprefs.reward.train import TrainConfig, train_reward_model


@pytest.fixture
def study(tmp_path: Path) -> dict[str, pd.DataFrame]:
    manifest = write_clips(tmp_path / "clips", 6, seed=1, seconds=0.5)
    manifest["clip_id"] = ["p1_0", "p1_1", "p2_0", "p2_1", "p3_0", "p3_1"]
    manifest["prompt_id"] = ["p1", "p1", "p2", "p2", "p3", "p3"]
    stimuli = pd.DataFrame(
        {
            "prompt_id": manifest["prompt_id"],
            "clip_id": manifest["clip_id"],
            "response": [0, 1] * 3,
            "n_chars": [100, 300, 250, 50, 80, 80],
        }
    )
    # human ratings: p1 text 40 vs 80 (gap 40), audio 70 vs 60 (gap 10); p2 text tie; p3 audio 90 vs 20
    rows = []

    def rate(pid, cond, clip, values):
        for k, v in enumerate(values):
            rows.append(
                {
                    "participant_id": f"{cond}{k}",
                    "condition": cond,
                    "prompt_id": pid,
                    "clip_id": clip,
                    "trial": 1,
                    "rating": v,
                }
            )

    for args in (
        ("p1", "text", "p1_0", [30, 50]),
        ("p1", "text", "p1_1", [70, 90]),
        ("p1", "audio", "p1_0", [70, 70]),
        ("p1", "audio", "p1_1", [60, 60]),
        ("p2", "text", "p2_0", [50, 50]),
        ("p2", "text", "p2_1", [40, 60]),
        ("p3", "audio", "p3_0", [90]),
        ("p3", "audio", "p3_1", [20]),
    ):
        rate(*args)
    rows.append(
        {
            "participant_id": "text0",
            "condition": "text",
            "prompt_id": "attn",
            "clip_id": "attn_0",
            "trial": 0,
            "rating": 90,
        }
    )
    judges = pd.DataFrame(
        [
            {
                "judge": "j",
                "modality": "text",
                "kind": "response_quality",
                "prompt_id": "p2",
                "clip_id": "p2_0",
                "sample": 0,
                "rating": 80,
                "status": "ok",
            },
            {
                "judge": "j",
                "modality": "text",
                "kind": "response_quality",
                "prompt_id": "p2",
                "clip_id": "p2_0",
                "sample": 1,
                "rating": 70,
                "status": "ok",
            },
            {
                "judge": "j",
                "modality": "text",
                "kind": "response_quality",
                "prompt_id": "p2",
                "clip_id": "p2_1",
                "sample": 0,
                "rating": 20,
                "status": "ok",
            },
            {
                "judge": "j",
                "modality": "text",
                "kind": "response_quality",
                "prompt_id": "p2",
                "clip_id": "p2_1",
                "sample": 1,
                "rating": None,
                "status": "failed",
            },
            {
                "judge": "j",
                "modality": "audio",
                "kind": "audio_quality",
                "prompt_id": "p2",
                "clip_id": "p2_1",
                "sample": 0,
                "rating": 99,
                "status": "ok",
            },
        ]
    )
    conversations = pd.DataFrame(
        {
            "conversation_id": ["p1", "p2", "p3"],
            "history": [[{"role": "user", "content": "hi"}, {"role": "model", "content": "hello"}], [], []],
            "prompt": ["What is rain?", "Tell a joke.", "Plan a trip."],
        }
    )
    return {
        "ratings": pd.DataFrame(rows),
        "stimuli": stimuli,
        "manifest": manifest,
        "conversations": conversations,
        "judges": judges,
    }


def test_study_pairs_from_human_and_judge_ratings(study: dict[str, pd.DataFrame]) -> None:
    report: dict = {}
    pairs = study_pairs(
        study["ratings"],
        study["stimuli"],
        study["manifest"],
        study["conversations"],
        judges=study["judges"],
        report=report,
    )
    assert list(pairs.columns) == PAIR_COLUMNS
    got = pairs.set_index("pair_id")
    assert set(got.index) == {"human:text:p1", "human:audio:p1", "human:audio:p3", "judge:text:p2"}
    assert got.loc["human:text:p1", "chosen_clip_id"] == "p1_1" and got.loc["human:text:p1", "margin"] == 40
    assert got.loc["human:audio:p1", "chosen_clip_id"] == "p1_0" and got.loc["human:audio:p1", "margin"] == 10
    assert got.loc["judge:text:p2", "chosen_clip_id"] == "p2_0" and got.loc["judge:text:p2", "margin"] == 55
    assert got.loc["judge:text:p2", "category"] == "judge_text" and got.loc["judge:text:p2", "source"] == "judge"
    assert got.loc["human:text:p1", "chosen_chars"] == 300 and got.loc["human:text:p1", "rejected_chars"] == 100
    ctx = got.loc["human:text:p1", "context"]
    assert [t["text"] for t in ctx] == ["hi", "hello", "What is rain?"] and ctx[-1]["role"] == "user"
    assert got.loc["human:text:p1", "chosen_text"] == study["manifest"].set_index("clip_id").at["p1_1", "spoken_text"]
    assert report["skipped"] == {"human_text: tie": 1}


def test_study_pairs_decisiveness_threshold_per_modality(study: dict[str, pd.DataFrame]) -> None:
    pairs = study_pairs(
        study["ratings"],
        study["stimuli"],
        study["manifest"],
        study["conversations"],
        min_gap={"text": 45, "audio": 20},
        sources=["human"],
    )
    assert set(pairs["pair_id"]) == {"human:audio:p3"}  # text gap 40 < 45; audio p1 gap 10 < 20


def test_study_pairs_name_missing_columns(study: dict[str, pd.DataFrame]) -> None:
    with pytest.raises(PairDataError, match=r"ratings.csv lacks column\(s\) \['rating'\]"):
        study_pairs(
            study["ratings"].drop(columns="rating"), study["stimuli"], study["manifest"], study["conversations"]
        )
    with pytest.raises(PairDataError, match=r"audio manifest.csv lacks column\(s\) \['spoken_text'\]"):
        study_pairs(
            study["ratings"], study["stimuli"], study["manifest"].drop(columns="spoken_text"), study["conversations"]
        )
    with pytest.raises(PairDataError, match="judges ratings.csv lacks"):
        study_pairs(
            study["ratings"],
            study["stimuli"],
            study["manifest"],
            study["conversations"],
            judges=study["judges"].drop(columns="status"),
        )


def test_pairs_parquet_round_trip(study: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    pairs = study_pairs(study["ratings"], study["stimuli"], study["manifest"], study["conversations"])
    write_pairs(pairs, tmp_path / "p.parquet")
    write_pairs(pairs.iloc[:0], tmp_path / "empty.parquet")
    back = read_pairs([tmp_path / "p.parquet", tmp_path / "empty.parquet"])
    assert back["pair_id"].tolist() == pairs["pair_id"].tolist()
    assert list(back.loc[0, "context"][0].keys()) == ["role", "text", "audio"]
    validate_pairs(back)


# --------------------------------------------------------------------------- corpus and rewrites


def _corpus(tmp_path: Path) -> pd.DataFrame:
    m = write_clips(tmp_path / "natural", 5, seed=2, seconds=0.5)
    return pd.DataFrame(
        {
            "audio_path": m["path"],
            "transcript": m["spoken_text"],
            "dialogue_id": ["d1", "d1", "d1", "d2", "d2"],
            "turn": [0, 1, 2, 0, 1],
            "speaker": ["A", "B", "A", "A", "B"],
            "tier": ["wild", "wild", "wild", "Scripted", "scripted"],
        }
    )


def _fake_tts(tmp_path: Path):
    calls = []

    def render(text: str, key: str) -> str:
        path = tmp_path / "tts" / f"{key}.wav"
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(path, speechlike(len(calls), 0.5), SR)
        calls.append((text, key))
        return str(path)

    return render, calls


def test_modality_pairs_natural_vs_tts_matched_context(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    render, calls = _fake_tts(tmp_path)
    pairs = modality_pairs(corpus, render, corpus_name="demo")
    assert len(pairs) == 3  # d1 turns 1, 2; d2 turn 1
    row = pairs.set_index("pair_id").loc["modality:demo:d1_2"]
    assert row["chosen_audio"] == corpus.loc[2, "audio_path"] and row["rejected_audio"].endswith("d1_2.wav")
    assert row["chosen_text"] == row["rejected_text"] == corpus.loc[2, "transcript"]
    assert [t["audio"] for t in row["context"]] == corpus.loc[:1, "audio_path"].tolist()
    assert set(pairs["category"]) == {"wild", "scripted"} and (pairs["criterion"] == "modality").all()
    assert [c[0] for c in calls] == [corpus.loc[i, "transcript"] for i in (1, 2, 4)]
    validate_pairs(pairs)


def test_corpus_manifest_errors_name_file_and_column(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    path = tmp_path / "corpus.csv"
    corpus.drop(columns=["speaker", "tier"]).to_csv(path, index=False)
    with pytest.raises(PairDataError, match=r"corpus manifest .*corpus.csv lacks column\(s\) \['speaker', 'tier'\]"):
        read_corpus_manifest(path)
    with pytest.raises(PairDataError, match=r"column tier has value\(s\) \['studio'\]"):
        validate_corpus(corpus.assign(tier="studio"))
    with pytest.raises(PairDataError, match="column turn is not an integer"):
        validate_corpus(corpus.assign(turn=["0", "x", "2", "0", "1"]))
    with pytest.raises(PairDataError, match="not found"):
        read_corpus_manifest(tmp_path / "nope.csv")
    corpus.to_csv(path, index=False)
    assert list(read_corpus_manifest(path).columns)[:6] == CORPUS_COLUMNS


def test_colloquial_pairs_and_rewrite_requests(tmp_path: Path) -> None:
    prompts = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "  so, yeah, basically it rains when clouds get heavy.  "

    rewrites = request_rewrites({"p1": "Rain forms when water vapour condenses into droplets."}, complete)
    assert rewrites.loc[0, "spoken"] == "so, yeah, basically it rains when clouds get heavy."
    assert "Rain forms when" in prompts[0]
    render, calls = _fake_tts(tmp_path)
    pairs = colloquial_pairs(rewrites, render, contexts={"p1": [{"role": "user", "text": "Why rain?", "audio": None}]})
    row = pairs.iloc[0]
    assert row["chosen_text"].startswith("so, yeah") and row["rejected_text"].startswith("Rain forms")
    assert row["criterion"] == "colloquialness" and row["context"][0]["text"] == "Why rain?"
    with pytest.raises(PairDataError, match=r"rewrites table lacks column\(s\) \['spoken'\]"):
        colloquial_pairs(rewrites.drop(columns="spoken"), render)


# ---------------------------------------------------------------------------------- degradation


def test_degradation_pairs_are_seeded_and_change_only_the_audio(tmp_path: Path) -> None:
    manifest = write_clips(tmp_path / "c", 4, seed=3, seconds=0.5)
    a = degradation_pairs(manifest, per_clip=2, seed=7)
    b = degradation_pairs(manifest, per_clip=2, seed=7)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 8 and set(a["category"]) <= {"noise", "clipping", "lowpass"}
    assert (a["chosen_audio"] == a["rejected_audio"]).all() and (a["chosen_text"] == a["rejected_text"]).all()
    assert a["chosen_transform"].isna().all() and a["rejected_transform"].notna().all()
    spec = a.loc[0, "rejected_transform"]
    x1 = load_audio(a.loc[0, "rejected_audio"], transform=spec)
    x2 = load_audio(a.loc[0, "rejected_audio"], transform=spec)
    clean = load_audio(a.loc[0, "chosen_audio"])
    np.testing.assert_array_equal(x1, x2)
    assert x1.shape == clean.shape and not np.allclose(x1, clean)
    assert (
        degradation_pairs(manifest, per_clip=1, seed=8)["rejected_transform"].tolist()
        != degradation_pairs(manifest, per_clip=1, seed=7)["rejected_transform"].tolist()
    )


@pytest.mark.parametrize("kind", ["noise", "clipping", "lowpass"])
def test_degradations_do_what_they_say(kind: str) -> None:
    x = speechlike(0, 1.0)
    y = degrade(x, SR, degradation_spec(kind, 1))
    if kind == "noise":
        snr = 10 * np.log10(np.mean(x**2) / np.mean((y - x) ** 2))
        assert snr == pytest.approx(10, abs=0.5)
    elif kind == "clipping":
        assert np.max(np.abs(y)) == pytest.approx(0.3 * np.max(np.abs(x)), rel=1e-5)
    else:
        spec = np.abs(np.fft.rfft(y)) ** 2
        freqs = np.fft.rfftfreq(len(y), 1 / SR)
        assert spec[freqs > 3000].sum() < 1e-3 * spec.sum()


# ---------------------------------------------------------------------- bad inputs before training


def _pairs_with(tmp_path: Path) -> pd.DataFrame:
    return degradation_pairs(write_clips(tmp_path / "ok", 3, seed=4, seconds=0.5), per_clip=1, seed=0)


def _no_model(*args, **kwargs):
    raise AssertionError("the model was built: the input check should have stopped training first")


def test_missing_audio_is_named_before_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train_mod, "build_model", _no_model)
    pairs = _pairs_with(tmp_path)
    pairs.loc[1, "rejected_audio"] = str(tmp_path / "gone" / "missing.wav")
    with pytest.raises(PairDataError, match=r"pair degradation:\w+:c001_0: audio file not found: .*missing.wav"):
        train_reward_model(pairs, tmp_path / "run", {}, TrainConfig(progress=False))
    assert not (tmp_path / "run").exists()


def test_unreadable_audio_is_named_before_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train_mod, "build_model", _no_model)
    pairs = _pairs_with(tmp_path)
    bad = tmp_path / "broken.wav"
    bad.write_bytes(b"RIFF\x00\x00not really a wave file")
    pairs.loc[2, "chosen_audio"] = str(bad)
    with pytest.raises(PairDataError, match=r"audio file unreadable: .*broken.wav"):
        train_reward_model(pairs, tmp_path / "run", {}, TrainConfig(progress=False))
    ctx_pairs = _pairs_with(tmp_path)
    ctx_pairs.at[0, "context"] = [{"role": "user", "text": "hi", "audio": str(tmp_path / "ctx.wav")}]
    with pytest.raises(PairDataError, match=r"ctx.wav"):
        validate_pairs(ctx_pairs)
    with pytest.raises(AudioReadError, match="broken.wav"):
        load_audio(bad)


def test_empty_pair_set_and_missing_columns_fail_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train_mod, "build_model", _no_model)
    pairs = _pairs_with(tmp_path)
    with pytest.raises(PairDataError, match="the pair set is empty"):
        train_reward_model(pairs.iloc[:0], tmp_path / "run", {}, TrainConfig(progress=False))
    with pytest.raises(PairDataError, match=r"lacks column\(s\) \['rejected_audio'\]"):
        train_reward_model(pairs.drop(columns="rejected_audio"), None, {}, TrainConfig(progress=False))
    with pytest.raises(PairDataError, match=r"criterion value\(s\) \['vibes'\]"):
        train_reward_model(pairs.assign(criterion="vibes"), None, {}, TrainConfig(progress=False))
    with pytest.raises(PairDataError, match="no training pairs"):
        train_reward_model(pairs, None, {}, TrainConfig(progress=False, train_on=["human_text"]))
    with pytest.raises(PairDataError, match="pair file not found"):
        read_pairs(tmp_path / "none.parquet")


def test_split_is_by_group_and_stable() -> None:
    pairs = pd.DataFrame({"pair_id": [f"x{i}" for i in range(200)], "group": [f"g{i // 2}" for i in range(200)]})
    s1, s2 = assign_split(pairs, 0.25, seed=3), assign_split(pairs, 0.25, seed=3)
    assert s1.tolist() == s2.tolist()
    assert (s1.groupby(pairs["group"]).nunique() == 1).all()  # a group's pairs stay together
    assert 0.15 < (s1 == "val").mean() < 0.35
    assert assign_split(pairs.assign(split="train"), 0.5).eq("train").all()  # an explicit split wins


def test_split_honours_val_fraction_and_stratifies_by_source_and_type() -> None:
    """120 prompts: 40 with study pairs only, 40 with study and colloquial pairs, 40 with degradation pairs only;
    a quarter held out overall and a quarter (± 1) of every kind of prompt; prompts never split."""
    rows = []
    for p in range(120):
        kinds = [("human", "human_text"), ("human", "human_audio")] if p < 80 else [("degradation", "noise")]
        if 40 <= p < 80:
            kinds.append(("colloquial", "colloquial_rule_based"))
        rows += [{"pair_id": f"{c}:{p}", "group": f"q{p}", "source": s, "category": c} for s, c in kinds]
    pairs = pd.DataFrame(rows)
    for fraction, seed in ((0.25, 0), (0.25, 7), (0.1, 3), (0.5, 1)):
        split = assign_split(pairs, fraction, seed=seed)
        assert (split.groupby(pairs["group"]).nunique() == 1).all()
        held = pairs.assign(split=split).drop_duplicates("group").set_index("group")["split"].eq("val")
        assert abs(held.sum() - round(120 * fraction)) <= 1, (fraction, held.sum())
        for block in (range(0, 40), range(40, 80), range(80, 120)):
            got = held[[f"q{p}" for p in block]].sum()
            assert abs(got - 40 * fraction) <= 1, (fraction, seed, block, got)
    assert not assign_split(pairs, 0.25, seed=0).equals(assign_split(pairs, 0.25, seed=7))


def test_study_pairs_criterion_by_modality(study: dict[str, pd.DataFrame]) -> None:
    from modprefs.reward.model import DEFAULT_CRITERIA

    pairs = study_pairs(
        study["ratings"],
        study["stimuli"],
        study["manifest"],
        study["conversations"],
        judges=study["judges"],
        criterion_by_modality=True,
    )
    crit = pairs.set_index("pair_id")["criterion"]
    assert crit["human:text:p1"] == "quality_text" and crit["human:audio:p1"] == "quality_audio"
    assert set(crit) <= set(DEFAULT_CRITERIA)


def test_default_conditioning_leaves_no_contradictory_pairs(study: dict[str, pd.DataFrame]) -> None:
    """p1: the human readers prefer p1_1, the listeners p1_0, and a judge reading the text p1_0: under one
    `quality` instruction three pairs on identical inputs, two of them opposite; the workflow's defaults
    (criterion_by_modality, criterion_by_source) give each label set its own instruction."""
    from modprefs.reward.build import build_pair_sets
    from modprefs.reward.config import DEFAULTS
    from modprefs.reward.pairs import contradictions

    judges = pd.concat(
        [
            study["judges"],
            pd.DataFrame(
                {
                    "judge": "j",
                    "modality": "text",
                    "kind": "response_quality",
                    "prompt_id": "p1",
                    "clip_id": ["p1_0", "p1_1"],
                    "sample": 0,
                    "rating": [90, 10],
                    "status": "ok",
                }
            ),
        ],
        ignore_index=True,
    )
    args = (study["ratings"], study["stimuli"], study["manifest"], study["conversations"])
    shared = study_pairs(*args, judges=judges)
    assert set(contradictions(shared)["pair_id"]) == {"human:text:p1", "human:audio:p1", "judge:text:p1"}
    by_modality = study_pairs(*args, judges=judges, criterion_by_modality=True)
    assert set(contradictions(by_modality)["pair_id"]) == {"human:text:p1", "judge:text:p1"}
    cfg = {**DEFAULTS["pairs"], "colloquial": None, "degradation": None}
    sets, summary = build_pair_sets(cfg, *args, judges, {}, "unused", seed=0)
    built = sets["study"].set_index("pair_id")
    assert contradictions(sets["study"]).empty and summary["contradictions"]["pairs"] == 0
    assert built.loc["judge:text:p1", "criterion"] == "quality_text_judge"
    assert built.loc["human:text:p1", "criterion"] == "quality_text"
    assert built.loc["human:text:p1", "chosen_response"] == 1 and built.loc["human:audio:p1", "chosen_response"] == 0


def test_degradation_kinds_are_balanced(tmp_path: Path) -> None:
    manifest = write_clips(tmp_path / "c", 9, seed=3, seconds=0.2)
    counts = degradation_pairs(manifest, per_clip=1, seed=1)["category"].value_counts()
    assert sorted(counts.tolist()) == [3, 3, 3]
    counts2 = degradation_pairs(manifest, per_clip=2, seed=1).groupby("chosen_clip_id")["category"].nunique()
    assert (counts2 == 2).all()
