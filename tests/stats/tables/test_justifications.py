"""Justification text analysis (§4.3): TF-IDF/Porter vocabulary with negations, exact-word modality exclusion,
a participant-level permutation test per term with BH FDR (and the paper's document-level chi-square beside it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, chi2_contingency, false_discovery_control

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.tables.justification_tests import (
    benjamini_hochberg,
    permutation_pvalues,
    presence_test,
    stepdown_maxt_pvalues,
)
from modprefs.stats.tables.justification_tokens import (
    STOP_WORDS_PATH,
    analyze,
    exclusion_words,
    load_terms,
    normalize_negations,
    stem,
    stop_words,
)
from modprefs.stats.tables.justifications import (
    MODALITY_TERMS_PATH,
    TERM_COLUMNS,
    analyze_justifications,
    justification_terms,
    permutation_count,
    presence_tests,
)
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli
from support.workflow_runner import ROOT

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
    assert res.attrs["n_tested"] == len(res) == res.attrs["n_terms"]  # every term has >= 5 users here
    assert res.attrs["vocabulary_size"] == len(res) + res.attrs["n_excluded"]
    assert res.attrs["n_participants_audio"] == res.attrs["n_participants_text"] == 50
    row = res.set_index("term").loc["user"]
    assert (row.docs_audio, row.docs_text) == (40, 5) and (row.participants_audio, row.participants_text) == (40, 5)
    assert row.prop_audio == pytest.approx(0.8) and row.prop_text == pytest.approx(0.1)
    assert row.more_in == "audio" and bool(row.significant)
    assert row.p_perm == pytest.approx(1 / (1 + res.attrs["n_perm"]))  # no permutation reaches 0.8 vs 0.1
    expected = chi2_contingency([[40, 10], [5, 45]])  # scipy default: Yates for 2x2
    assert row.chi2 == pytest.approx(expected.statistic, rel=1e-12)
    assert row.p_chi2 == pytest.approx(expected.pvalue, rel=1e-12)
    # the evenly used fillers are not significant; "user" is the only discovery (by either test)
    assert res.loc[res.significant, "term"].tolist() == ["user"]
    assert res.loc[res.q_chi2 <= 0.05, "term"].tolist() == ["user"]
    assert (res.loc[res.term != "user", "p_chi2"] > 0.5).all() and (res.loc[res.term != "user", "p_perm"] > 0.3).all()
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
    assert row.p_perm == justification_terms(trials, participants, TERMS_FILE).set_index("term").loc["user", "p_perm"]
    assert row.chi2 > chi2_contingency([[40, 10], [5, 45]]).statistic
    assert presence_test(40, 50, 5, 50, correction=True) == pytest.approx(
        tuple(chi2_contingency([[40, 10], [5, 45]])[:2])
    )
    assert presence_test(50, 50, 40, 40) == (0.0, 1.0)  # in every document: zero margin


def test_vectorised_chi2_equals_scipy():
    rng = np.random.default_rng(3)
    na, nt = 120, 97
    docs_a, docs_t = rng.integers(0, na + 1, 100), rng.integers(0, nt + 1, 100)
    docs_a[:4], docs_t[:4] = [0, na, 3, 0], [0, nt, 0, 1]  # zero margins and tiny counts (Yates' min(0.5, |O-E|))
    for correction in (True, False):
        chi2, p = presence_tests(docs_a, na, docs_t, nt, correction)
        ref = np.array([presence_test(a, na, t, nt, correction) for a, t in zip(docs_a, docs_t)])
        np.testing.assert_allclose(chi2, ref[:, 0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(p, ref[:, 1], rtol=1e-10, atol=1e-14)


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
    # exact words, as written: "listened", "voice", "sounded", "reading", "text"
    assert {"listened", "voice", "sounded", "reading", "text"} == set(res.attrs["excluded"])
    assert not set(res.term) & {"listen", "voic", "sound", "read", "text"}
    # without the exclusion list they are in the vocabulary (and would enter the BH family)
    raw = justification_terms(trials, participants, [])
    assert {"listen", "voic", "sound", "read", "text"} <= set(raw.term)
    assert raw.attrs["n_tested"] == res.attrs["n_tested"] + res.attrs["n_excluded"]
    # the exclusion is before the FDR step: q comes from the tested terms' p-values only
    np.testing.assert_allclose(res.q, benjamini_hochberg(res.p_perm), rtol=1e-12)
    np.testing.assert_allclose(res.q_chi2, benjamini_hochberg(res.p_chi2), rtol=1e-12)


def test_modality_terms_file():
    text = TERMS_FILE.read_text(encoding="utf-8")
    assert text.startswith("#") and "BEFORE testing" in text and "EXACT WORD" in text
    words = exclusion_words(load_terms(TERMS_FILE))
    for word in (
        "listen",
        "listens",
        "listening",
        "listened",
        "audio",
        "read",
        "reads",
        "reading",
        "text",
        "hear",
        "heard",
        "sounded",
        "voice",
        "voices",
        "speak",
        "spoken",
        "speech",
        "heading",
        "headings",
    ):
        assert word in words, word
    # content words, and words with a content sense or a stem shared with a listed word, are tested
    for word in ("user", "help", "detail", "response", "give", "gave", "clear", "answer"):
        assert word not in words, word
    for word in ("head", "sound", "sounds", "robotic", "robot", "play", "playful", "pace", "paced", "volume"):
        assert word not in words, word
    for word in ("head", "playful", "sound", "robot"):
        assert stem(word) in set(analyze(f"it was {word}", words)), word


def test_exclusion_is_exact_words_not_stems():
    """ "heading" is excluded, "head" (its Porter stem) is not; "play" would not remove "playful"."""
    assert stem("heading") == stem("head") == "head" and stem("playful") == "play"
    assert analyze("the heading helped", ["heading"]) == ["help"]
    assert analyze("it went over my head", ["heading"]) == ["went", "head"]
    assert analyze("playful and fun", ["play"]) == ["play", "fun"]
    assert analyze("not audible", ["audible"]) == ["not"]  # an excluded word is no negation head either
    with pytest.raises(ValueError, match="single words"):
        exclusion_words(["text to speech"])
    # in a corpus: the stem "head" counts the "head" documents only, never the "heading" ones
    trials, participants = toy_corpus()
    heads = pd.DataFrame(
        [
            {"participant_id": f"A{i:03d}", "prompt_id": "h", "trial": 7, "preference": "0", "justification": text}
            for i, text in enumerate(["the heading was bold"] * 6 + ["it went over my head"] * 5)
        ]
    )
    res = justification_terms(pd.concat([trials, heads]), participants, TERMS_FILE).set_index("term")
    assert res.loc["head", "docs_audio"] == 5 and "heading" in res.attrs["excluded"]


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
        "than",
        "those",
        "and",
        "they",
        "don",
        "do",
        "isn",
        "it",
        "i",
    ):
        assert stem(gone) not in kept, gone
    # negation and degree stay: "don't" and "isn't" are "not", "very" and "too" are terms
    assert kept == ["think", "chosen", "veri", "much", "better", "not", "too", "not"]


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
    studies have a "discovery"; at strength 0.3, 26 of 40 have a BH discovery. (Those counts were
    measured with the document-level chi-square; ``n_significant`` is the participant-level permutation
    test's since issue 27. The simulator writes without personal phrase habits, so both tests hold here;
    with habits only the permutation test does: test_null_with_phrase_habits_keeps_family_wise_rate.)
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


# --- negation (issue 27, item 8): "not clear" is not "clear"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It was clear.", ["clear"]),
        ("It was not clear.", ["not", "not_clear"]),
        ("It wasn't clear", ["not", "not_clear"]),
        ("It wasn\u2019t clear", ["not", "not_clear"]),
        ("it wasnt clear", ["not", "not_clear"]),
        ("It cannot help, it can't help", ["not", "not_help", "not", "not_help"]),
        ("It won't help", ["not", "not_help"]),
        ("not very clear", ["not", "veri", "not_clear"]),
        ("not as clear as the first", ["not", "not_clear", "first"]),
        ("no detail at all", ["no", "no_detail"]),
        ("never helpful", ["never", "never_help"]),
        ("It was not. Clear though", ["not", "clear"]),  # punctuation ends the scope
        ("not long but clear", ["not", "not_long", "but", "clear"]),
        ("not only clear but helpful", ["not", "clear", "but", "help"]),  # "not only" negates nothing
        ("too long and very wordy", ["too", "long", "veri", "wordi"]),
    ],
)
def test_negation_terms(text, expected):
    assert analyze(text) == expected


def test_negation_words_are_not_stop_words():
    words = stop_words()
    for word in ("not", "no", "never", "cannot", "too", "very", "but"):
        assert word not in words, word
    assert normalize_negations("I Don't, it DOESN'T; can't, cannot, won't") == (
        "i do not, it does not; can not, can not, will not"
    )


def test_not_clear_and_clear_are_different_terms():
    """A corpus where audio says "not clear" and text says "clear": two terms, opposite directions."""
    rows, people = [], []
    for cond, text in (("audio", "It was not clear."), ("text", "It was clear.")):
        for i in range(12):
            pid = f"{cond}{i}"
            people.append({"participant_id": pid, "condition": cond, "passed_attention": True})
            rows.append({"participant_id": pid, "trial": 1, "justification": text})
            rows.append({"participant_id": pid, "trial": 2, "justification": "the answer was accurate"})
    res = justification_terms(pd.DataFrame(rows), pd.DataFrame(people), TERMS_FILE).set_index("term")
    assert res.loc["not_clear", ["docs_audio", "docs_text"]].tolist() == [12, 0]
    assert res.loc["clear", ["docs_audio", "docs_text"]].tolist() == [0, 12]
    assert res.loc["not_clear", "more_in"] == "audio" and res.loc["clear", "more_in"] == "text"
    assert res.loc["clear", "significant"] and res.loc["not_clear", "significant"]


# --- the participant-level permutation test (issue 27, item 1)


def test_permutation_pvalues_match_full_enumeration():
    """8 participants (4 + 4): the 70 relabellings give the exact p; random permutations approach it."""
    from itertools import combinations

    counts = np.array([[3, 0], [2, 1], [4, 0], [1, 1], [0, 2], [1, 0], [0, 3], [0, 1]])
    n_docs = np.array([5, 3, 6, 2, 4, 2, 5, 3])
    audio = np.array([True] * 4 + [False] * 4)

    def diff(mask):
        return counts[mask].sum(0) / n_docs[mask].sum() - counts[~mask].sum(0) / n_docs[~mask].sum()

    observed = diff(audio)
    all_d = np.array([diff(np.isin(np.arange(8), c)) for c in combinations(range(8), 4)])
    exact = (np.abs(all_d) >= np.abs(observed) - 1e-12).mean(axis=0)
    d, p = permutation_pvalues(counts, n_docs, audio, 20_000, np.random.default_rng(0))
    np.testing.assert_allclose(d, observed, rtol=1e-12)
    np.testing.assert_allclose(p, exact, atol=0.01)
    with pytest.raises(ValueError):
        permutation_pvalues(counts, n_docs, np.ones(8, dtype=bool), 10, np.random.default_rng(0))


def _habit_study(rng, alpha, n_per_cond, effect=1.0, n_phrases=18, trials=20):
    """Participant x phrase document counts of a between-subjects study with per-participant phrase habits.

    Each participant: Dirichlet(alpha) weights over the phrases (the effect phrase 0's weight x ``effect`` in
    audio), 20 trials justified with probability Beta(1.4, 2.6), one or two phrases per document.
    """
    counts, n_docs, audio = [], [], []
    for cond in (True, False):
        for _ in range(n_per_cond):
            w = rng.dirichlet(np.full(n_phrases, alpha))
            if cond:
                w[0] *= effect
                w /= w.sum()
            n = max(1, rng.binomial(trials, rng.beta(1.4, 2.6)))
            docs = np.zeros((n, n_phrases), dtype=bool)
            for doc in range(n):
                docs[doc, rng.choice(n_phrases, size=1 + rng.integers(2), p=w)] = True
            counts.append(docs.sum(0))
            n_docs.append(n)
            audio.append(cond)
    return np.array(counts), np.array(n_docs), np.array(audio)


def _discoveries(counts, n_docs, audio, rng):
    """(reported: Westfall-Young p_fwer <= .05, the permutation p-values' BH q <= .05, document chi-square BH)."""
    from modprefs.stats.tables.justification_tests import permutation_tests

    keep = (counts > 0).sum(0) >= 5
    c = counts[:, keep]
    res = permutation_tests(c, n_docs, audio, permutation_count(0, c.shape[1]), rng)
    docs_a, docs_t = c[audio].sum(0), c[~audio].sum(0)
    _, p_chi2 = presence_tests(docs_a, int(n_docs[audio].sum()), docs_t, int(n_docs[~audio].sum()))
    return res.p_fwer <= 0.05, benjamini_hochberg(res.p) <= 0.05, benjamini_hochberg(p_chi2) <= 0.05


def test_null_with_phrase_habits_keeps_family_wise_rate():
    """Identical conditions, strong personal phrase habits (Dirichlet(0.3) over 18 phrases), 20 + 20 participants:
    the permutation test's share of studies with >= 1 discovery -- family-wise (reported) and BH -- stays near
    .05 (at most the 99 % binomial quantile of a .05 rate over 100 studies, 10), while the document-level
    chi-square (the paper's) has a discovery in most studies. benchmarks/validity/justifications_null.py measures this
    with 1,000 studies per cell."""
    rng = np.random.default_rng(2027)
    fwer, bh, chi2 = [], [], []
    for _ in range(100):
        found_fwer, found_bh, found_chi2 = _discoveries(*_habit_study(rng, 0.3, 20), rng)
        fwer.append(found_fwer.any())
        bh.append(found_bh.any())
        chi2.append(found_chi2.any())
    assert sum(fwer) <= binom.ppf(0.99, 100, 0.05) and sum(bh) <= binom.ppf(0.99, 100, 0.05), (sum(fwer), sum(bh))
    assert sum(chi2) >= 40, sum(chi2)  # 55 for this seed


def test_planted_effect_is_found():
    """Independent documents (no habits), audio participants use phrase 0 four times as often: found."""
    rng = np.random.default_rng(11)
    hits = [_discoveries(*_habit_study(rng, 1e6, 47, effect=4.0), rng)[0][0] for _ in range(10)]
    assert sum(hits) >= 9, hits


def test_one_habitual_participant_is_not_a_modality_effect():
    """One audio participant writes "user" in all of 20 justifications, nobody else ever does: the
    document-level chi-square calls it a modality difference, the participant-level test cannot."""
    trials, participants = toy_corpus(user_audio=0, user_text=0)
    extra = pd.DataFrame(
        [
            {
                "participant_id": "A000",
                "prompt_id": f"u{j}",
                "trial": 3 + j,
                "preference": "0",
                "justification": "for the user",
            }
            for j in range(20)
        ]
    )
    res = justification_terms(pd.concat([trials, extra]), participants, TERMS_FILE, min_participants=1)
    row = res.set_index("term").loc["user"]
    assert (row.docs_audio, row.docs_text, row.participants_audio) == (20, 0, 1)
    assert row.q_chi2 < 0.01  # the paper's test: "significant"
    assert row.p_perm > 0.4 and not row.significant  # one participant is in audio half of the time


def test_rare_terms_are_not_tested():
    trials, participants = toy_corpus()
    extra = pd.DataFrame(
        [
            {"participant_id": f"A{i:03d}", "prompt_id": "z", "trial": 5, "preference": "0", "justification": "zebra"}
            for i in (0, 0, 1, 2, 3)
        ]
    )
    res = justification_terms(pd.concat([trials, extra]), participants, TERMS_FILE)
    row = res.set_index("term").loc["zebra"]  # 5 documents (min_df) from 4 participants (< min_participants 5)
    assert np.isnan(row.p_perm) and np.isnan(row.q) and not row.significant and "not tested" in row.note
    assert res.attrs["n_tested"] == len(res) - 1 and res.term.iloc[-1] == "zebra"
    tested = res[res.p_perm.notna()]
    np.testing.assert_allclose(tested.q, benjamini_hochberg(tested.p_perm), rtol=1e-12)


def test_permutation_count_resolves_bh_threshold():
    assert permutation_count(2000, 10) == 2000
    assert permutation_count(2000, 223) == 8920  # 1 / 8921 < .05 / (2 x 223)
    assert 1 / (permutation_count(0, 223) + 1) < 0.05 / 223 / 2
    assert permutation_count(0, 0) == 1


def test_seeded_and_deterministic():
    trials, participants = toy_corpus(user_audio=14, user_text=6)
    a = justification_terms(trials, participants, TERMS_FILE, seed=7, n_perm=500)
    b = justification_terms(trials, participants, TERMS_FILE, seed=7, n_perm=500)
    c = justification_terms(trials, participants, TERMS_FILE, seed=8, n_perm=500)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["seed"] == 7 and a.attrs["n_perm"] == permutation_count(500, a.attrs["n_tested"])
    user = {t.attrs["seed"]: t.set_index("term").loc["user", "p_perm"] for t in (a, c)}
    assert user[7] != user[8] and abs(user[7] - user[8]) < 0.03


# --- the family-wise procedure: Westfall-Young step-down maxT (issue 27)


def _stepdown_by_loops(observed: np.ndarray, permuted: np.ndarray) -> np.ndarray:
    """Westfall & Young's Algorithm 2.8 written out term by term (the reference for the vectorised one)."""
    m, b = observed.size, permuted.shape[0]
    ranked = sorted(range(m), key=lambda j: (-observed[j], j))
    adjusted, running = np.empty(m), 0.0
    for k, j in enumerate(ranked):
        rest = ranked[k:]
        hits = sum(1 for row in range(b) if max(permuted[row, rest]) >= observed[j] - 1e-12)
        running = max(running, (1 + hits) / (1 + b))
        adjusted[j] = running
    return adjusted


def test_stepdown_maxt_matches_the_algorithm_written_out():
    rng = np.random.default_rng(5)
    observed = np.abs(rng.normal(size=7)) + np.array([2.5, 0, 0, 1.2, 0, 0, 0])
    observed[5] = observed[6]  # a tie
    permuted = np.abs(rng.normal(size=(300, 7)))
    np.testing.assert_allclose(stepdown_maxt_pvalues(observed, permuted), _stepdown_by_loops(observed, permuted))
    single = stepdown_maxt_pvalues(observed[:1], permuted[:, :1])  # one term: the marginal permutation p
    assert single[0] == (1 + (permuted[:, 0] >= observed[0] - 1e-12).sum()) / 301
    with pytest.raises(ValueError, match="B x m"):
        stepdown_maxt_pvalues(observed, permuted[:, :3])


def test_stepdown_maxt_matches_multtest_complete_enumeration():
    """Bioconductor multtest's mt.maxT (Welch t, two-sided, B = 0: all 252 relabellings of 5 + 5) is the
    independent reference; our step-down gets the same statistics for the 251 relabellings besides the identity."""
    from itertools import combinations

    from support.multtest_reference import multtest_maxt, require_multtest

    require_multtest()
    rng = np.random.default_rng(8)
    x = rng.normal(size=(8, 10))
    x[0, 5:] += 2.5
    x[1, 5:] += 1.2
    x[2, 5:] -= 1.5
    label = np.repeat([0, 1], 5)

    def welch(mask):
        a, b = x[:, mask], x[:, ~mask]
        return (b.mean(1) - a.mean(1)) / np.sqrt(a.var(1, ddof=1) / a.shape[1] + b.var(1, ddof=1) / b.shape[1])

    observed = np.abs(welch(label == 0))
    permuted = []
    for zeros in combinations(range(10), 5):
        mask = np.isin(np.arange(10), zeros)
        if not np.array_equal(mask, label == 0):
            permuted.append(np.abs(welch(mask)))
    ref = multtest_maxt(x, label)
    np.testing.assert_allclose(observed, np.abs(ref["teststat"]), rtol=1e-10)
    ours = stepdown_maxt_pvalues(observed, np.array(permuted))
    np.testing.assert_allclose(ours, ref["adjp"], atol=1e-12)
    assert ours[0] < 0.05 < ours[3:].min()


@pytest.mark.parametrize("n_perm", [700, 2500])  # one block of relabellings, and three (the streaming path)
def test_permutation_tests_family_wise_is_stepdown_on_the_relabellings(n_perm):
    """permutation_tests streams the relabellings twice; its p_fwer equals the step-down maxT applied to the
    whole B x m matrix of the same relabellings (drawn here from the same seed), t = |d| / root mean square."""
    from modprefs.stats.tables.justification_tests import _PERM_BLOCK, _proportion_difference, permutation_tests

    counts, n_docs, audio = _habit_study(np.random.default_rng(3), 20.0, 15, effect=5.0, n_phrases=6)
    res = permutation_tests(counts, n_docs, audio, n_perm, np.random.default_rng(41))
    rng = np.random.default_rng(41)
    labels = np.vstack(
        [
            rng.permuted(np.tile(audio, (min(_PERM_BLOCK, n_perm - done), 1)), axis=1)
            for done in range(0, n_perm, _PERM_BLOCK)
        ]
    ).astype(float)
    c, n = counts.astype(float), n_docs.astype(float)
    d = _proportion_difference(c[audio].sum(0), n[audio].sum(), c.sum(0), n.sum())
    perm = _proportion_difference(labels @ c, labels @ n, c.sum(0), n.sum())
    scale = np.sqrt((d**2 + (perm**2).sum(0)) / (n_perm + 1))
    np.testing.assert_allclose(res.scale, scale, rtol=1e-12)
    np.testing.assert_allclose(res.p, (1 + (np.abs(perm) >= np.abs(d) - 1e-12).sum(0)) / (n_perm + 1))
    np.testing.assert_allclose(res.p_fwer, stepdown_maxt_pvalues(np.abs(d) / scale, np.abs(perm) / scale))
    assert np.all(res.p_fwer >= res.p)  # a term's own relabelled statistic is in every maximum it is compared with
    assert res.p_fwer[0] < 0.05  # the planted phrase


def test_permutation_tests_term_that_never_varies_is_not_significant():
    """A term in every document of every participant: d = 0 under every relabelling, so p_fwer = 1."""
    from modprefs.stats.tables.justification_tests import permutation_tests

    counts, n_docs, audio = _habit_study(np.random.default_rng(9), 20.0, 15, effect=6.0, n_phrases=5)
    counts = np.column_stack([counts, n_docs])
    res = permutation_tests(counts, n_docs, audio, 400, np.random.default_rng(0))
    assert res.scale[-1] == pytest.approx(0.0, abs=1e-15) and res.p_fwer[-1] == 1.0 and res.p[-1] == 1.0
    assert res.p_fwer[0] < 0.05
