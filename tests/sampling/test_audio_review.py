"""Audio-QC review rounds: failing prompts replaced from their stratum, bounded, every decision logged."""

from __future__ import annotations

import pandas as pd
import pytest

from modprefs.sampling.audio_review import AudioReviewError, failed_prompts, final_prompts, review_round
from modprefs.sampling.draw import draw_prompts, replace_prompts, take_all_prompts
from modprefs.sampling.screening import ScreeningResult
from support.interactions import interactions, screen_passes

SAMPLING = {"n_prompts": 12, "long_fraction": 0.25, "long_percentile": 90}


def _clips(prompts: pd.DataFrame, attention: bool = False) -> pd.DataFrame:
    ids = (["attn"] if attention else []) + list(prompts["prompt_id"])
    return pd.DataFrame([{"clip_id": f"{p}_{r}", "prompt_id": p, "response": r} for p in ids for r in (0, 1)])


def _qc(clips: pd.DataFrame, failing: set[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "clip_id": clips["clip_id"],
            "qc_pass": [c not in failing for c in clips["clip_id"]],
            "qc_reasons": ["wer 0.9 > 0.35" if c in failing else "" for c in clips["clip_id"]],
        }
    )


def _draw(inter: pd.DataFrame, seed: int = 3) -> pd.DataFrame:
    return draw_prompts(inter, 12, 0.25, 90, seed=seed, screen=screen_passes)[0]


def test_failed_prompts_groups_clips_by_prompt():
    prompts = _draw(interactions(200))
    clips = _clips(prompts, attention=True)
    p0, p5 = prompts["prompt_id"].iloc[0], prompts["prompt_id"].iloc[5]
    failed = failed_prompts(_qc(clips, {f"{p0}_1", f"{p5}_0", f"{p5}_1"}), clips)
    assert set(failed) == {p0, p5}
    assert failed[p5].count("wer") == 2 and f"{p5}_0" in failed[p5]
    with pytest.raises(ValueError, match="no row for clip"):
        failed_prompts(_qc(clips, set()).iloc[1:], clips)


def test_replacement_is_next_unused_candidate_of_the_same_stratum():
    inter = interactions(200)
    first = _draw(inter)
    # the replacement is what a larger first draw would have taken next in that stratum
    bigger = draw_prompts(inter, 16, 0.25, 90, seed=3, screen=screen_passes)[0]  # 4 long_diff instead of 3
    long_first = first[first["stratum"] == "long_diff"]
    victim = long_first["prompt_id"].iloc[0]
    reps, rems, _ = replace_prompts(inter, {victim: "x"}, set(), first, 90, 3, screen_passes, first_draw_order=12)
    assert len(reps) == 1 and reps["stratum"].iloc[0] == "long_diff"
    assert reps["conversation_id"].iloc[0] == bigger[bigger["stratum"] == "long_diff"]["conversation_id"].iloc[3]
    assert reps["conversation_id"].iloc[0] not in set(first["conversation_id"])
    assert reps["draw_order"].iloc[0] == 12
    assert rems.to_dict("records") == [
        {
            "conversation_id": long_first["conversation_id"].iloc[0],
            "stratum": "long_diff",
            "reason": "audio_quality",
            "detail": "x",
            "replaced_by": reps["conversation_id"].iloc[0],
        }
    ]
    again, _, _ = replace_prompts(inter, {victim: "x"}, set(), first, 90, 3, screen_passes, first_draw_order=12)
    assert again.equals(reps)


def test_replacement_skips_used_and_logs_text_screened_candidates():
    inter = interactions(200)
    first = _draw(inter)
    victim = first[first["stratum"] == "other"]["prompt_id"].iloc[0]
    plain, _, _ = replace_prompts(inter, {victim: "x"}, set(), first, 90, 3, screen_passes, 12)
    skipped = plain["conversation_id"].iloc[0]
    used_skip, _, _ = replace_prompts(inter, {victim: "x"}, {skipped}, first, 90, 3, screen_passes, 12)
    assert used_skip["conversation_id"].iloc[0] != skipped

    def screen(row):
        return (
            ScreeningResult("empty", "response 1 is empty")
            if row["conversation_id"] == skipped
            else ScreeningResult(None)
        )

    screened, rems, _ = replace_prompts(inter, {victim: "x"}, set(), first, 90, 3, screen, 12)
    assert screened["conversation_id"].iloc[0] == used_skip["conversation_id"].iloc[0]
    assert list(rems["reason"]) == ["audio_quality", "empty"]
    assert set(rems["replaced_by"]) == {screened["conversation_id"].iloc[0]}


def test_an_exhausted_stratum_returns_every_unreplaced_prompt():
    inter = interactions(40)
    first = draw_prompts(inter, 4, 0.25, 90, seed=1, screen=screen_passes)[0]
    ids = first["prompt_id"].tolist()
    used = set(inter["conversation_id"])  # everything already used
    reps, rems, unreplaced = replace_prompts(inter, {ids[0]: "x", ids[2]: "y"}, used, first, 90, 1, screen_passes, 4)
    assert reps.empty and rems.empty and unreplaced == [ids[0], ids[2]]


def _pairs_interactions(n: int) -> pd.DataFrame:
    """A lab's table of n items (conversation_type pairs) whose clips are its own files."""
    inter = interactions(n).assign(conversation_type="pairs")
    return inter


def test_a_table_used_whole_reports_every_failing_clip_with_file_row_measure_and_key():
    inter = _pairs_interactions(6)
    first = take_all_prompts(inter, 90, seed=1)[0]
    clips = _clips(first, attention=True)
    rows = {pid: i + 2 for i, pid in enumerate(sorted(first["prompt_id"]))}
    clips["source_row"] = [rows.get(pid, float("nan")) for pid in clips["prompt_id"]]
    clips["source_file"] = [
        f"lab/audio/{c}.wav" if pid in rows else "" for c, pid in zip(clips["clip_id"], clips["prompt_id"])
    ]
    ids = sorted(first["prompt_id"])
    qc = _qc(clips, set())
    failures = {
        f"{ids[0]}_0": "wer 0.42 > max 0.15",
        f"{ids[1]}_1": "dnsmos_ovrl 2.1 < min 2.5; words_per_s 5.6 > max 5",
        f"{ids[3]}_0": "source_clipping_ratio 0.55 > max 0.001",
    }
    for clip, reasons in failures.items():
        qc.loc[qc["clip_id"] == clip, ["qc_pass", "qc_reasons"]] = [False, reasons]
    used = set(first["conversation_id"])
    with pytest.raises(AudioReviewError) as info:
        review_round(0, first, clips, qc, inter, used, SAMPLING, 3, screen_passes, max_rounds=3)
    message = str(info.value)
    assert "3 clip(s) of 3 prompt(s)" in message and "used whole" in message
    assert "add data" not in message and "max_rounds" not in message.split("\n")[0]
    for clip in failures:
        pid, side = clip.rsplit("_", 1)
        line = next(line for line in message.splitlines() if f"side {side} (row {rows[pid]}" in line)
        assert f"lab/audio/{clip}.wav" in line and f"column audio_{side}" in line
    assert "wer 0.42 > max 0.15 (audio_qc.thresholds.max_wer)" in message
    assert "dnsmos_ovrl 2.1 < min 2.5 (audio_qc.thresholds.min_dnsmos_ovrl)" in message
    assert "words_per_s 5.6 > max 5 (audio_qc.thresholds.max_words_per_s)" in message
    assert "(audio_qc.thresholds.max_source_clipping_ratio)" in message
    assert "on_exhausted: drop" in message and "keep" in message

    # drop: the study without them; keep: every item stays, flagged
    dec, rep, rem = review_round(
        0, first, clips, qc, inter, used, SAMPLING, 3, screen_passes, max_rounds=3, on_exhausted="drop"
    )
    assert rep.empty and sorted(rem["conversation_id"]) == sorted(
        first.set_index("prompt_id").loc[[ids[0], ids[1], ids[3]], "conversation_id"]
    )
    assert len(final_prompts(first, [(dec, rep)])) == 3
    dec, rep, rem = review_round(
        0, first, clips, qc, inter, used, SAMPLING, 3, screen_passes, max_rounds=3, on_exhausted="keep"
    )
    assert rep.empty and rem.empty and list(dec["action"]).count("keep_failing") == 3
    final = final_prompts(first, [(dec, rep)])
    assert len(final) == 6 and sorted(final.loc[final["qc_kept_failing"], "prompt_id"]) == [ids[0], ids[1], ids[3]]


def test_review_rounds_converge_and_final_set_is_all_passing():
    inter = interactions(200)
    first = _draw(inter)
    clips0 = _clips(first, attention=True)
    bad = {f"{first['prompt_id'].iloc[1]}_0", f"{first['prompt_id'].iloc[7]}_1"}
    dec0, rep0, rem0 = review_round(
        0, first, clips0, _qc(clips0, bad), inter, set(), SAMPLING, 3, screen_passes, max_rounds=2
    )
    assert list(dec0["action"]).count("replace") == 2 and len(rep0) == 2
    assert set(rem0["reason"]) == {"audio_quality"}
    # round 1: one replacement fails again
    clips1 = _clips(rep0)
    used = set(first["conversation_id"]) | set(rem0["conversation_id"])
    dec1, rep1, rem1 = review_round(
        1,
        rep0,
        clips1,
        _qc(clips1, {clips1["clip_id"].iloc[0]}),
        inter,
        used,
        SAMPLING,
        3,
        screen_passes,
        max_rounds=2,
        first_draw_order=14,
    )
    assert len(rep1) == 1 and rep1["stratum"].iloc[0] == rep0["stratum"].iloc[0]
    clips2 = _clips(rep1)
    dec2, rep2, rem2 = review_round(
        2,
        rep1,
        clips2,
        _qc(clips2, set()),
        inter,
        used | set(rep0["conversation_id"]),
        SAMPLING,
        3,
        screen_passes,
        max_rounds=2,
    )
    assert rep2.empty and rem2.empty and set(dec2["action"]) == {"keep"}
    final = final_prompts(first, [(dec0, rep0), (dec1, rep1), (dec2, rep2)])
    assert len(final) == 12 and final["prompt_id"].is_unique
    assert (final["stratum"] == "long_diff").sum() == 3
    failed_ids = set(dec0.loc[dec0["action"] != "keep", "prompt_id"]) | set(
        dec1.loc[dec1["action"] != "keep", "prompt_id"]
    )
    assert not failed_ids & set(final["prompt_id"])


def test_bound_reached_errors_or_drops():
    inter = interactions(200)
    first = _draw(inter)
    clips = _clips(first)
    bad = {f"{first['prompt_id'].iloc[2]}_1"}
    with pytest.raises(AudioReviewError, match="after 0 replacement round"):
        review_round(0, first, clips, _qc(clips, bad), inter, set(), SAMPLING, 3, screen_passes, max_rounds=0)
    dec, rep, rem = review_round(
        0, first, clips, _qc(clips, bad), inter, set(), SAMPLING, 3, screen_passes, max_rounds=0, on_exhausted="drop"
    )
    assert rep.empty and list(dec["action"]).count("drop") == 1
    assert rem["replaced_by"].iloc[0] == "" and "max_rounds" in rem["detail"].iloc[0]
    assert len(final_prompts(first, [(dec, rep)])) == 11


def test_failing_attention_check_cannot_be_replaced():
    inter = interactions(200)
    first = _draw(inter)
    clips = _clips(first, attention=True)
    with pytest.raises(AudioReviewError, match="attention-check clip"):
        review_round(0, first, clips, _qc(clips, {"attn_1"}), inter, set(), SAMPLING, 3, screen_passes, max_rounds=3)


def test_review_and_final_sample_from_files_match_the_tables(tmp_path, monkeypatch):
    import modprefs.sampling.audio_review as ar

    monkeypatch.setattr(ar, "screen_from_config", lambda screening, harmful_terms, detect=None: screen_passes)
    inter = interactions(200)
    first = _draw(inter)
    clips0 = _clips(first, attention=True)
    qc0 = _qc(clips0, {f"{first['prompt_id'].iloc[1]}_0"})
    paths = {"prompts": tmp_path / "prompts.csv", "shard": tmp_path / "shard.csv", "qc": tmp_path / "qc.csv"}
    for df, key in ((first, "prompts"), (clips0, "shard"), (qc0, "qc")):
        df.to_csv(paths[key], index=False)
    inter.to_parquet(tmp_path / "conversations.parquet")
    got = ar.review_round_files(
        0,
        paths["prompts"],
        [paths["shard"]],
        [paths["qc"]],
        [],
        tmp_path / "conversations.parquet",
        tmp_path / "terms.txt",
        SAMPLING,
        3,
        2,
        "error",
    )
    read = dict(dtype={"prompt_id": str, "conversation_id": str, "clip_id": str}, keep_default_na=False)
    prompts = pd.read_csv(paths["prompts"], **read)
    want = review_round(
        0,
        prompts,
        pd.read_csv(paths["shard"], **read),
        pd.read_csv(paths["qc"], **read),
        pd.read_parquet(tmp_path / "conversations.parquet"),
        set(),
        SAMPLING,
        3,
        screen_passes,
        2,
        first_draw_order=ar.used_conversations([], prompts)[1],
    )
    for g, w in zip(got, want):
        pd.testing.assert_frame_equal(g.reset_index(drop=True), w.reset_index(drop=True), check_dtype=False)
    dec, rep, rem = got
    clips1 = _clips(rep)
    dec1, rep1, rem1 = review_round(1, rep, clips1, _qc(clips1, set()), inter, set(), SAMPLING, 3, screen_passes, 2)
    tables = {"dec0": dec, "rep0": rep, "rem0": rem, "dec1": dec1, "rep1": rep1, "rem1": rem1}
    for key, df in tables.items():
        df.to_csv(tmp_path / f"{key}.csv", index=False)
    final, removals, review = ar.final_sample_files(
        paths["prompts"],
        [tmp_path / "dec0.csv", tmp_path / "dec1.csv"],
        [tmp_path / "rep0.csv", tmp_path / "rep1.csv"],
        [tmp_path / "rem0.csv", tmp_path / "rem1.csv"],
    )
    assert len(review) == len(dec) + len(dec1) and len(removals) == len(rem) + len(rem1) == 1
    assert list(final["prompt_id"]) == list(final_prompts(prompts, [(dec, rep), (dec1, rep1)])["prompt_id"])
