"""Justification text analysis (§4.3): TF-IDF/Porter vocabulary, chi-square per term, BH FDR."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, chi2_contingency, false_discovery_control

from conftest import ROOT
from modprefs.ratings.simulate import SimulationParams, simulate_ratings
from modprefs.stats.tables.justifications import (
    MODALITY_TERMS_PATH,
    STOP_WORDS_PATH,
    TERM_COLUMNS,
    analyze,
    analyze_justifications,
    benjamini_hochberg,
    exclusion_stems,
    justification_terms,
    load_terms,
    presence_test,
    stem,
    stop_words,
)
from modprefs.study.design import make_assignments
from test_recovery import paper_stimuli

TERMS_FILE = ROOT / MODALITY_TERMS_PATH
FILLER = ["clear", "answer", "correct", "concise", "friendly", "accurate", "topic", "simple"]


def toy_corpus(n: int = 50, user_audio: int = 40, user_text: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """n audio and n text justifications; "user" in ``user_audio`` audio and ``user_text`` text docs.

    Filler words rotate identically in both conditions; modality-specific words ("listened",
    "reading", "voice", "text") appear only in their own condition. Extra rows that must be
    ignored: trial 0, an attention failure, empty and whitespace-only justifications.
    """
    trials, participants = [], []
    for cond, k_user, channel in (
        ("audio", user_audio, "I listened and the voice sounded"),
        ("text", user_text, "while reading the text it was"),
    ):
        for i in range(n):
            pid = f"{cond[0].upper()}{i:03d}"
            participants.append({"participant_id": pid, "condition": cond, "passed_attention": True})
            words = f"{channel} {FILLER[i % len(FILLER)]} and {FILLER[(i + 3) % len(FILLER)]}"
            if i < k_user:
                words += " for the user"
            trials.append(
                {"participant_id": pid, "prompt_id": f"p{i}", "trial": 1, "preference": "0", "justification": words}
            )
            trials.append(
                {
                    "participant_id": pid,
                    "prompt_id": "attn",
                    "trial": 0,
                    "preference": "0",
                    "justification": "the user user user",
                }
            )  # attention check: not analysed
            trials.append(
                {
                    "participant_id": pid,
                    "prompt_id": f"q{i}",
                    "trial": 2,
                    "preference": "1",
                    "justification": "   " if i % 2 else None,
                }
            )
        participants.append({"participant_id": f"{cond}_fail", "condition": cond, "passed_attention": False})
        for j in range(10):
            trials.append(
                {
                    "participant_id": f"{cond}_fail",
                    "prompt_id": f"p{j}",
                    "trial": 1 + j,
                    "preference": "0",
                    "justification": "the user needed help from the user",
                }
            )
    return pd.DataFrame(trials), pd.DataFrame(participants)


def test_toy_corpus_modality_specific_term():
    trials, participants = toy_corpus()
    res = justification_terms(trials, participants, TERMS_FILE)
    assert list(res.columns) == TERM_COLUMNS
    assert res.attrs["n_justifications_audio"] == 50 and res.attrs["n_justifications_text"] == 50
    assert res.attrs["n_tested"] == len(res) and res.attrs["vocabulary_size"] == len(res) + res.attrs["n_excluded"]
    row = res.set_index("term").loc["user"]
    assert (row.docs_audio, row.docs_text) == (40, 5)
    assert row.prop_audio == pytest.approx(0.8) and row.prop_text == pytest.approx(0.1)
    assert row.more_in == "audio" and bool(row.significant)
    expected = chi2_contingency([[40, 10], [5, 45]])  # scipy default: Yates for 2x2
    assert row.chi2 == pytest.approx(expected.statistic, rel=1e-12)
    assert row.p == pytest.approx(expected.pvalue, rel=1e-12)
    # the evenly used fillers are not significant; "user" is the only discovery
    assert res.loc[res.significant, "term"].tolist() == ["user"]
    assert (res.loc[res.term != "user", "p"] > 0.5).all()
    # reversed: text-heavy use is flagged in the other direction
    t2, p2 = toy_corpus(user_audio=5, user_text=40)
    row2 = justification_terms(t2, p2, TERMS_FILE).set_index("term").loc["user"]
    assert row2.more_in == "text" and bool(row2.significant)
    assert row2.chi2 == pytest.approx(expected.statistic, rel=1e-12)


def test_yates_flag():
    trials, participants = toy_corpus()
    res = justification_terms(trials, participants, TERMS_FILE, correction=False)
    row = res.set_index("term").loc["user"]
    plain = chi2_contingency([[40, 10], [5, 45]], correction=False)
    assert row.chi2 == pytest.approx(plain.statistic, rel=1e-12) and res.attrs["yates_correction"] is False
    assert row.chi2 > chi2_contingency([[40, 10], [5, 45]]).statistic
    assert presence_test(40, 50, 5, 50, correction=True) == pytest.approx(
        tuple(chi2_contingency([[40, 10], [5, 45]])[:2])
    )
    assert presence_test(50, 50, 40, 40) == (0.0, 1.0)  # in every document: zero margin


def test_benjamini_hochberg_by_hand():
    p = np.array([0.042, 0.001, 0.041, 0.039, 0.008])
    # sorted 0.001, 0.008, 0.039, 0.041, 0.042 -> m p_(i)/i = 0.005, 0.02, 0.065, 0.05125, 0.042;
    # running minimum from the top: 0.005, 0.02, 0.042, 0.042, 0.042 (step-up: 0.039 is rejected
    # at .05 although its own m p / i is .065)
    expected = np.array([0.042, 0.005, 0.042, 0.042, 0.02])
    q = benjamini_hochberg(p)
    np.testing.assert_allclose(q, expected, rtol=1e-12)
    np.testing.assert_allclose(q, false_discovery_control(p, method="bh"), rtol=1e-12)
    np.testing.assert_allclose(benjamini_hochberg([0.5, 0.9, 0.7]), [0.9, 0.9, 0.9])
    assert benjamini_hochberg([]).size == 0
    with pytest.raises(ValueError):
        benjamini_hochberg([0.1, 1.5])


def test_excluded_terms_never_appear():
    trials, participants = toy_corpus()
    res = justification_terms(trials, participants, TERMS_FILE)
    banned = exclusion_stems(load_terms(TERMS_FILE))
    assert {"listen", "voic", "sound", "read", "text"} <= set(res.attrs["excluded"])
    assert not set(res.term) & banned
    # without the exclusion list they are in the vocabulary (and would enter the BH family)
    raw = justification_terms(trials, participants, [])
    assert {"listen", "voic", "sound", "read", "text"} <= set(raw.term)
    assert raw.attrs["n_tested"] == res.attrs["n_tested"] + res.attrs["n_excluded"]
    # the exclusion is before the FDR step: q comes from the tested terms' p-values only
    np.testing.assert_allclose(res.q, benjamini_hochberg(res.p), rtol=1e-12)


def test_modality_terms_file():
    text = TERMS_FILE.read_text(encoding="utf-8")
    assert text.startswith("#") and "BEFORE testing" in text and "stem" in text.lower()
    stems = exclusion_stems(load_terms(TERMS_FILE))
    for word in (
        "listen",
        "listening",
        "audio",
        "read",
        "reading",
        "text",
        "hear",
        "heard",
        "sound",
        "voice",
        "speak",
        "spoken",
        "speech",
    ):
        assert stem(word) in stems, word
    for word in ("user", "help", "detail", "response", "give", "gave", "clear", "answer"):
        assert stem(word) not in stems, word


def test_tokenizer_and_min_df():
    assert analyze("It was MORE detailed, and the responses gave 2 details; user's help!") == [
        "more",
        "detail",
        "respons",
        "gave",
        "detail",
        "user",
        "help",
    ]
    assert "wa" not in analyze("it was")  # stop words are removed before stemming
    trials, participants = toy_corpus()
    extra = pd.DataFrame(
        [{"participant_id": "A000", "prompt_id": "z", "trial": 5, "preference": "0", "justification": "zebra"}] * 4
    )
    res = justification_terms(pd.concat([trials, extra]), participants, TERMS_FILE, min_df=5)
    assert "zebra" not in set(res.term)
    res = justification_terms(pd.concat([trials, extra]), participants, TERMS_FILE, min_df=4)
    assert "zebra" in set(res.term)


#: the terms §4.3 reports, as words a justification would use
PAPER_TERMS = {
    "user": "user",
    "users": "user",
    "help": "help",
    "helps": "help",
    "helpful": "help",
    "response": "respons",
    "responses": "respons",
    "detail": "detail",
    "details": "detail",
    "detailed": "detail",
    "give": "give",
    "gives": "give",
    "giving": "give",
}
#: words about order, length, amount, clarity, tone and ties that the analysis must see
DOMAIN_WORDS = (
    "first",
    "second",
    "third",
    "last",
    "next",
    "former",
    "latter",
    "before",
    "after",
    "order",
    "short",
    "shorter",
    "long",
    "longer",
    "length",
    "full",
    "empty",
    "whole",
    "enough",
    "more",
    "less",
    "few",
    "much",
    "brief",
    "concise",
    "clear",
    "clearer",
    "clarity",
    "vague",
    "tone",
    "well",
    "serious",
    "sincere",
    "same",
    "answer",
    "show",
    "describe",
    "find",
    "explain",
    "top",
    "bottom",
)


@pytest.mark.parametrize("word", sorted(PAPER_TERMS))
def test_paper_terms_survive_analyze(word):
    """§4.3's reported terms reach the vocabulary, alone and in a sentence (scikit-learn's list dropped
    "detail" and "give": ``analyze("More detail.")`` returned [])."""
    assert analyze(word) == [PAPER_TERMS[word]]
    assert PAPER_TERMS[word] in analyze(f"The second one was better, it has more {word} than the other.")
    assert word not in stop_words()


def test_more_detail_regression():
    assert analyze("More detail.") == ["more", "detail"]
    assert analyze("Give the first and last one.") == ["give", "first", "last"]


@pytest.mark.parametrize("word", DOMAIN_WORDS)
def test_order_length_clarity_words_survive(word):
    assert analyze(word) == [stem(word)], word


def test_real_stop_words_still_go():
    text = (
        "I think that it was the one which we would have chosen, because it is so very much "
        "better than those, and they don't do it too; isn't it?"
    )
    kept = analyze(text)
    for gone in (
        "that",
        "was",
        "the",
        "which",
        "we",
        "would",
        "have",
        "because",
        "is",
        "so",
        "very",
        "than",
        "those",
        "and",
        "they",
        "don",
        "do",
        "too",
        "isn",
        "it",
        "i",
    ):
        assert stem(gone) not in kept, gone
    assert kept == ["think", "chosen", "much", "better"]


def test_stop_word_file_is_documented_and_function_words_only():
    text = STOP_WORDS_PATH.read_text(encoding="utf-8")
    head = text.split("\n\n", 1)[0]
    assert head.startswith("#") and "scikit-learn" in head and "Rule" in text and "BEFORE" in head
    words = stop_words()
    assert 250 <= len(words) <= 330
    assert all(w == w.lower() and w.isalpha() for w in words)
    # the scikit-learn content words the file says it keeps are really kept, and are sklearn's
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    record = text.split("for the record:", 1)[1]
    kept = {w for line in record.splitlines() for w in line.lstrip("#").split()}
    assert {"detail", "give", "first", "last", "full", "well", "same"} <= kept
    assert kept <= set(ENGLISH_STOP_WORDS) and not kept & words
    # every other sklearn word is still a stop word (the list is sklearn minus the documented content words)
    assert set(ENGLISH_STOP_WORDS) - kept <= words


def _simulated(strength: float, seed: int, raters: int = 53):
    stimuli = paper_stimuli()
    prompts = list(dict.fromkeys(stimuli.prompt_id))
    assignments = make_assignments(prompts, raters, 20, seed=5000 + seed)
    params = SimulationParams(justification_modality_strength=strength)
    _, trials, participants, _ = simulate_ratings(stimuli, assignments, params, seed=seed)
    return trials, participants


@pytest.mark.parametrize("seed", [1, 2])
def test_simulated_paper_directions(seed):
    """At the default (paper-calibrated) strength the five terms lean the paper's way.

    A paper-size study's chi2 for "help" averages 9.8, so one study does not always reach BH
    significance; with three times the raters (about 1,050 / 930 justifications) every paper term
    is significant in its direction. Paper-size counts are checked for the document numbers.
    """
    trials, participants = _simulated(1.0, seed)
    res = analyze_justifications(trials, participants, TERMS_FILE)
    assert 250 <= res.n_docs["audio"] <= 450 and 220 <= res.n_docs["text"] <= 400  # paper: 347 / 311
    assert 150 <= res.vocabulary_size <= 300  # paper: 223 terms
    trials, participants = _simulated(1.0, seed, raters=159)
    table = analyze_justifications(trials, participants, TERMS_FILE).terms.set_index("term")
    for term, modality in (
        ("user", "audio"),
        ("help", "audio"),
        ("detail", "text"),
        ("respons", "text"),
        ("give", "text"),
    ):
        assert table.loc[term, "more_in"] == modality, term
        assert bool(table.loc[term, "significant"]), term


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_null_false_discoveries():
    """Global null (justification_modality_strength = 0): BH at q = .05 keeps P(>= 1 discovery) <= .05.

    Under the global null every discovery is false and FDR = P(at least one discovery), so BH
    (valid for independent or positively dependent tests) bounds that probability by q = .05.
    Criterion: over 40 independent simulated studies, the number with >= 1 significant term must
    not exceed the 99 % binomial quantile for a rate of exactly .05 (= 6 of 40), and the mean number of
    discoveries must stay small (<= .25). Observed for these seeds: 3 of 40 studies (10 of 200 over
    other seeds). The test has teeth: with unadjusted p <= .05 instead of BH, 30 of these 40 null
    studies have a "discovery"; at strength 0.3, 26 of 40 have a BH discovery.
    """
    n_studies, alpha = 40, 0.05
    n_sig = []
    for seed in range(n_studies):
        trials, participants = _simulated(0.0, 100 + seed)
        n_sig.append(analyze_justifications(trials, participants, TERMS_FILE, alpha=alpha).n_significant)
    n_sig = np.array(n_sig)
    limit = binom.ppf(0.99, n_studies, alpha)
    assert (n_sig > 0).sum() <= limit, n_sig
    assert n_sig.mean() <= 0.25, n_sig
