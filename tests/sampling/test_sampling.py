"""Stratified draw, screening rules and same-stratum replacement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from modprefs.sampling.draw import SamplingError, assign_strata, draw_prompts, stratum_quotas
from modprefs.sampling.screening import ScreeningResult, WordListModerator, detect_language, screen_interaction
from support.interactions import interactions, screen_passes


def test_strata_threshold_is_percentile():
    diffs = pd.Series(np.arange(100))
    labels, thr = assign_strata(diffs, 90)
    assert thr == pytest.approx(89.1)
    assert (labels == "long_diff").sum() == 10


@pytest.mark.parametrize("n,frac", [(12, 0.25), (100, 0.25), (10, 0.0), (8, 0.5)])
def test_quotas_and_fractions(n, frac):
    inter = interactions(400)
    prompts, removals, info = draw_prompts(inter, n, frac, 90, seed=1, screen=screen_passes)
    q = stratum_quotas(n, frac)
    assert len(prompts) == n and removals.empty
    assert (prompts.stratum == "long_diff").sum() == q["long_diff"]
    long_ids = set(prompts[prompts.stratum == "long_diff"].conversation_id)
    thr = info["threshold_chars"]
    assert all(inter.set_index("conversation_id").loc[list(long_ids), "abs_char_diff"] >= thr)
    other = prompts[prompts.stratum == "other"]
    assert (other.abs_char_diff < thr).all()
    assert prompts.prompt_id.is_unique


def test_replacement_from_same_stratum_is_logged():
    inter = interactions(200)
    bad = {"c0003": "empty", "c0150": "harmful", "c0101": "other_language"}

    def screen(row):
        r = bad.get(row["conversation_id"])
        return ScreeningResult(r, "test") if r else ScreeningResult(None)

    baseline, _, _ = draw_prompts(inter, 60, 0.25, 90, seed=4, screen=screen_passes)
    prompts, removals, _ = draw_prompts(inter, 60, 0.25, 90, seed=4, screen=screen)
    assert not set(bad) & set(prompts.conversation_id)
    removed_drawn = [c for c in bad if c in set(baseline.conversation_id)] + list(removals.conversation_id)
    assert set(removals.conversation_id) <= set(bad)
    for rem in removals.itertuples():
        assert rem.reason == bad[rem.conversation_id]
        rep = prompts.set_index("conversation_id").loc[rem.replaced_by]
        assert rep.stratum == rem.stratum
    assert len(removed_drawn) >= 1


def test_exhausted_stratum_is_an_error():
    inter = interactions(40)
    with pytest.raises(SamplingError, match="stratum 'long_diff'"):
        draw_prompts(inter, 30, 0.5, 90, seed=1, screen=screen_passes)
    with pytest.raises(SamplingError, match="n_prompts"):
        draw_prompts(inter, 41, 0.25, 90, seed=1, screen=screen_passes)


def test_a_stratum_emptied_by_screening_names_the_screening():
    """All-emoji responses: the error counts the removals by reason with an example, not only the stratum quota."""
    inter = interactions(40).assign(text_1="🙂🎉")
    mod = WordListModerator(["idiot"])
    with pytest.raises(SamplingError) as info:
        draw_prompts(inter, 12, 0.25, 90, seed=1, screen=lambda row: screen_interaction(row, mod))
    assert "passed text screening (removed: empty" in str(info.value)
    assert "has no letter or digit to speak ('🙂🎉')" in str(info.value)


def test_seed_determinism():
    inter = interactions(200)
    a = draw_prompts(inter, 20, 0.25, 90, seed=9, screen=screen_passes)[0]
    assert a.equals(draw_prompts(inter, 20, 0.25, 90, seed=9, screen=screen_passes)[0])
    assert not a.equals(draw_prompts(inter, 20, 0.25, 90, seed=10, screen=screen_passes)[0])


def test_word_list_whole_words():
    mod = WordListModerator(["kill", "stab wound"])
    assert mod.flag("This will kill the weeds") is not None
    assert mod.flag("Mind the skillet") is None
    assert mod.flag("a STAB   wound") is not None
    with pytest.raises(ValueError):
        WordListModerator(["  "])


def _inter(t0, t1, prompt="How do I bake bread?"):
    return {"prompt": prompt, "text_0": t0, "text_1": t1}


def test_screen_rules():
    mod = WordListModerator(["idiot"])
    ok = "Mix flour, water, salt and yeast, knead for ten minutes, and let it rise."
    assert screen_interaction(_inter(ok, ok), mod).reason is None
    assert screen_interaction(_inter(ok, "EMPTY STRING"), mod).reason == "empty"
    assert screen_interaction(_inter("   ", ok), mod).reason == "empty"
    res = screen_interaction(_inter(ok, "👍🎉 !!"), mod)  # nothing a voice can speak
    assert res.reason == "empty" and "response 1 has no letter or digit to speak" in res.detail
    assert screen_interaction(_inter(ok, "Ok 👍"), mod).reason is None
    assert screen_interaction(_inter(ok, "42"), mod).reason is None
    es = "Mezcla la harina con el agua y la sal, amasa durante diez minutos y deja reposar la masa."
    res = screen_interaction(_inter(ok, es), mod)
    assert res.reason == "other_language" and "es" in res.detail
    res = screen_interaction(_inter(ok, "Only an idiot would ask that."), mod)
    assert res.reason == "harmful" and "response 1" in res.detail
    assert screen_interaction(_inter(ok, "Sure!"), mod).reason is None  # too short to judge language


def test_detect_language_real_model():
    assert detect_language("The quick brown fox jumps over the lazy dog near the river bank.")[0] == "en"
    assert detect_language("Ich möchte heute Abend mit meinen Freunden ins Kino gehen.")[0] == "de"


def test_the_review_rounds_first_candidates_are_the_upcoming_ones():
    """upcoming_candidates lists, per stratum and in order, the rows replace_prompts screens first: a review that
    replaces every prompt twice over never screens a row outside n_prompts x rounds upcoming candidates."""
    from modprefs.sampling.draw import replace_prompts, upcoming_candidates

    inter = interactions(300)
    prompts, removals, _ = draw_prompts(inter, 12, 0.25, 90, seed=3, screen=screen_passes)
    skip = set(prompts.conversation_id) | set(removals.conversation_id)
    upcoming = upcoming_candidates(inter, 90, 3, skip, per_stratum=12 * 2)
    screened: list[str] = []

    def every_other_fails(row) -> ScreeningResult:  # half the candidates fail, so the walk goes further
        screened.append(row["conversation_id"])
        return ScreeningResult("harmful", "x") if len(screened) % 2 else ScreeningResult(None)

    replacements, _, _ = replace_prompts(
        inter, {p: "wer" for p in prompts.prompt_id}, skip, prompts, 90, 3, every_other_fails, 12
    )
    assert len(replacements) == 12 and screened
    assert set(screened) <= set(upcoming.conversation_id)
    for stratum, rows in upcoming.groupby("stratum", sort=False):
        ours = [c for c in screened if c in set(rows.conversation_id)]
        assert ours == list(rows.conversation_id[: len(ours)]), stratum  # the same order, from the start
    assert skip.isdisjoint(upcoming.conversation_id)


def test_a_language_table_answers_for_lingua_and_round_trips_exactly(tmp_path, monkeypatch):
    """The review rounds' lookup gives what lingua gives (through the CSV, bit for bit), asks lingua only for texts
    not in the table, and the table skips what the screen never identifies (short, empty, repeated texts)."""
    import modprefs.sampling.screening as scr
    from modprefs.io import write_csv

    en = "The quick brown fox jumps over the lazy dog near the river bank."
    de = "Ich möchte heute Abend mit meinen Freunden ins Kino gehen."
    table = scr.language_ids([en, de, en, "Sure thing!", "EMPTY STRING"])
    assert list(table.columns) == scr.LANGUAGE_ID_COLUMNS and len(table) == 2
    write_csv(table, tmp_path / "ids.csv")
    back = scr.read_language_ids(tmp_path / "ids.csv")
    assert back["confidence"].tolist() == table["confidence"].tolist()  # the CSV keeps every bit
    # lingua's own confidence can differ in the last bit from call to call, so the truth is compared to 1e-12
    truth = {t: detect_language(t) for t in (en, de)}
    asked: list[str] = []
    monkeypatch.setattr(scr, "detect_language", lambda t: asked.append(t) or ("xx", 1.0))
    detect = scr.known_language_detector(back)
    for t in (en, de):
        assert detect(t)[0] == truth[t][0] and detect(t)[1] == pytest.approx(truth[t][1], abs=1e-12)
    assert asked == []
    assert detect("Un texte que la table ne connaît pas du tout.") == ("xx", 1.0) and len(asked) == 1
    mod = WordListModerator(["idiot"])
    row = {"prompt": "q", "text_0": en, "text_1": de}
    assert screen_interaction(row, mod, detect=detect) == screen_interaction(row, mod, detect=lambda t: truth[t])
    assert screen_interaction(row, mod, detect=detect).reason == "other_language"
    with pytest.raises(ValueError, match="confidence"):
        scr.known_language_detector(back.drop(columns="confidence"))
