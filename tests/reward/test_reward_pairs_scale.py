"""Study pairs on a 1..5 rating scale: margins and ``min_gap`` in scale units, judges' 1..100 ratings mapped."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from modprefs.reward.study_pairs import study_pairs
from modprefs.reward.synthetic import write_clips
from modprefs.scale import RatingScale

FIVE = RatingScale(1, 5, 1, "Bad", "Excellent")


@pytest.fixture
def study(tmp_path: Path) -> dict[str, pd.DataFrame]:
    manifest = write_clips(tmp_path / "clips", 4, seed=1, seconds=0.3)
    manifest["clip_id"] = ["p1_0", "p1_1", "p2_0", "p2_1"]
    manifest["prompt_id"] = ["p1", "p1", "p2", "p2"]
    stimuli = manifest[["prompt_id", "clip_id"]].assign(response=[0, 1, 0, 1], n_chars=[100, 200, 150, 150])
    # 1..5 ratings: p1 text 2.5 vs 4.5 (gap 2), p1 audio 4 vs 3.5 (gap 0.5), p2 text 3 vs 3 (a tie)
    cells = [
        ("p1", "text", "p1_0", [2, 3]),
        ("p1", "text", "p1_1", [5, 4]),
        ("p1", "audio", "p1_0", [4, 4]),
        ("p1", "audio", "p1_1", [3, 4]),
        ("p2", "text", "p2_0", [3]),
        ("p2", "text", "p2_1", [3]),
    ]
    ratings = pd.DataFrame(
        [
            {"participant_id": f"{c}{k}", "condition": c, "prompt_id": p, "clip_id": clip, "trial": 1, "rating": v}
            for p, c, clip, values in cells
            for k, v in enumerate(values)
        ]
    )
    # the judge rates p2 on its 1..100 prompt: 75 vs 20 (on 1..5: 3.99 vs 1.77, a gap of 2.22)
    judges = pd.DataFrame(
        [
            {"modality": "text", "kind": "response_quality", "prompt_id": "p2", "clip_id": clip, "sample": s}
            | {"rating": r, "status": "ok"}
            for clip, s, r in (("p2_0", 0, 80), ("p2_0", 1, 70), ("p2_1", 0, 20))
        ]
    )
    conversations = pd.DataFrame({"conversation_id": ["p1", "p2"], "history": [[], []], "prompt": ["a?", "b?"]})
    return {"ratings": ratings, "stimuli": stimuli, "manifest": manifest, "conversations": conversations} | {
        "judges": judges
    }


def test_min_gap_and_margins_are_in_scale_units(study: dict[str, pd.DataFrame]) -> None:
    report: dict = {}
    pairs = study_pairs(
        study["ratings"],
        study["stimuli"],
        study["manifest"],
        study["conversations"],
        judges=study["judges"],
        min_gap={"text": 1, "audio": 1},
        report=report,
        scale=FIVE,
    )
    got = pairs.set_index("pair_id")
    assert set(got.index) == {"human:text:p1", "judge:text:p2"}  # the audio gap 0.5 < 1; p2's humans tie
    assert got.loc["human:text:p1", "margin"] == 2 and got.loc["human:text:p1", "chosen_clip_id"] == "p1_1"
    assert got.loc["judge:text:p2", "margin"] == pytest.approx(55 * 4 / 99)
    assert report["skipped"] == {"human_audio: gap below min_gap": 1, "human_text: tie": 1}
    # a threshold above the scale's range keeps nothing; 0 keeps every non-tied prompt
    assert (
        study_pairs(
            study["ratings"], study["stimuli"], study["manifest"], study["conversations"], min_gap={"text": 4.5}
        )
        .query("label_modality == 'text'")
        .empty
    )
    every = study_pairs(study["ratings"], study["stimuli"], study["manifest"], study["conversations"], scale=FIVE)
    assert set(every["pair_id"]) == {"human:text:p1", "human:audio:p1"}


def test_without_a_scale_judge_ratings_stay_as_given(study: dict[str, pd.DataFrame]) -> None:
    pairs = study_pairs(
        study["ratings"], study["stimuli"], study["manifest"], study["conversations"], judges=study["judges"]
    )
    assert pairs.set_index("pair_id").loc["judge:text:p2", "margin"] == 55
