"""The bundled sample (resources/sample/conversations.jsonl), the attention check and the screening list.

The sample is hand-written in PRISM's `conversations` schema; these tests pin its schema and the
composition the default workflow relies on (see resources/sample/README.md). Categories are
recognised from the data itself, not from the generator:
  guided       conversation_type "values guided" / "controversy guided"
  empty        a model response is the literal "EMPTY STRING"
  harmful      a model response matches resources/screening/harmful_terms.txt
  foreign      a model response is mostly Spanish/French/German function words
  long-gap     a model response is >= 500 characters
  normal       every other unguided conversation
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample" / "conversations.jsonl"
GENERATOR = ROOT / "resources" / "sample" / "make_sample.py"
ATTENTION = ROOT / "resources" / "attention_check.json"
TERMS = ROOT / "resources" / "screening" / "harmful_terms.txt"

EMPTY = "EMPTY STRING"
TOP_KEYS = {
    "conversation_id",
    "user_id",
    "generated_datetime",
    "timing_duration_s",
    "conversation_type",
    "opening_prompt",
    "conversation_turns",
    "conversation_history",
    "performance_attributes",
    "choice_attributes",
    "open_feedback",
    "included_in_balanced_subset",
}
ENTRY_KEYS = {"turn", "role", "content", "within_turn_id", "model_name", "model_provider", "score", "if_chosen"}
TYPES = {"unguided", "values guided", "controversy guided"}
PROVIDERS = {  # model names as PRISM spells them, with their providers
    "gpt-4-1106-preview": "openai",
    "gpt-4": "openai",
    "gpt-4-turbo": "openai",
    "gpt-3.5-turbo": "openai",
    "claude-2.1": "anthropic",
    "claude-2": "anthropic",
    "claude-instant-1": "anthropic",
    "llama-2-70b-chat": "meta",
    "llama-2-13b-chat": "meta",
    "llama-2-7b-chat": "meta",
    "mistral-7b-instruct": "mistralai",
    "zephyr-7b-beta": "huggingface",
    "command": "cohere",
    "command-light": "cohere",
    "command-nightly": "cohere",
    "gemini-pro": "google",
    "palm-2": "google",
}

# Function words that are frequent in one language and (nearly) absent from English prose.
FUNCTION_WORDS = {
    "en": {
        "the",
        "and",
        "to",
        "of",
        "is",
        "it",
        "you",
        "for",
        "with",
        "your",
        "that",
        "or",
        "on",
        "if",
        "be",
        "can",
        "are",
    },
    "es": {
        "el",
        "la",
        "los",
        "las",
        "una",
        "y",
        "que",
        "con",
        "por",
        "para",
        "porque",
        "se",
        "del",
        "al",
        "como",
        "lejos",
    },
    "fr": {"le", "les", "une", "et", "des", "du", "pour", "dans", "sur", "vous", "est", "pendant", "avec", "sol"},
    "de": {"der", "die", "das", "und", "sie", "ist", "nicht", "wenn", "mit", "den", "im", "auf", "aus", "durch"},
}


# ------------------------------------------------------------------------------------------------ helpers
def load_rows() -> list[dict]:
    rows = []
    for n, line in enumerate(SAMPLE.read_text(encoding="utf-8").splitlines(), start=1):
        assert line.strip(), f"blank line {n}"
        rows.append(json.loads(line))
    return rows


def load_terms() -> list[str]:
    lines = [ln.strip() for ln in TERMS.read_text(encoding="utf-8").splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def term_regex(terms: list[str]) -> re.Pattern:
    """The documented rule: case-insensitive whole-word / whole-phrase match."""
    alts = sorted((r"\s+".join(map(re.escape, t.split())) for t in terms), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(alts) + r")(?!\w)", re.IGNORECASE)


def language_guess(text: str) -> str:
    words = re.findall(r"[a-zäöüßéèêàâçñáíóúë']+", text.lower())
    hits = {lang: sum(w in vocab for w in words) for lang, vocab in FUNCTION_WORDS.items()}
    return max(hits, key=hits.get)


def turns_of(row: dict) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for entry in row["conversation_history"]:
        out.setdefault(entry["turn"], []).append(entry)
    return out


def responses(row: dict, turn: int | None = None) -> list[dict]:
    return [e for e in row["conversation_history"] if e["role"] == "model" and (turn is None or e["turn"] == turn)]


def pairs(row: dict):
    for turn in sorted(turns_of(row)):
        yield from itertools.combinations(responses(row, turn), 2)


def categorise(row: dict, pattern: re.Pattern) -> str:
    if row["conversation_type"] != "unguided":
        return row["conversation_type"]
    texts = [e["content"] for e in responses(row)]
    if EMPTY in texts:
        return "empty"
    if any(pattern.search(t) for t in texts):
        return "harmful"
    if any(language_guess(t) != "en" for t in texts):
        return "foreign"
    if any(len(t) >= 500 for t in texts):
        return "long_gap"
    return "normal"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return load_rows()


@pytest.fixture(scope="module")
def pattern() -> re.Pattern:
    return term_regex(load_terms())


@pytest.fixture(scope="module")
def by_category(rows, pattern) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(categorise(row, pattern), []).append(row)
    return out


# ------------------------------------------------------------------------------------------------ schema
def test_rows_have_prisms_top_level_schema(rows):
    assert len(rows) >= 72
    ids = [r["conversation_id"] for r in rows]
    assert len(set(ids)) == len(ids)
    for r in rows:
        assert set(r) == TOP_KEYS, r.get("conversation_id")
        assert re.fullmatch(r"c\d{4}", r["conversation_id"])
        assert re.fullmatch(r"user\d+", r["user_id"])
        datetime.strptime(r["generated_datetime"], "%Y-%m-%d %H:%M:%S")
        assert isinstance(r["timing_duration_s"], float) and r["timing_duration_s"] > 0
        assert r["conversation_type"] in TYPES
        assert r["performance_attributes"] is None and r["choice_attributes"] is None
        assert isinstance(r["open_feedback"], str) and r["open_feedback"]
        assert isinstance(r["included_in_balanced_subset"], bool)
        assert isinstance(r["conversation_turns"], int) and not isinstance(r["conversation_turns"], bool)
        history = r["conversation_history"]
        assert isinstance(history, list) and history
        assert r["opening_prompt"] == history[0]["content"] and history[0]["role"] == "user"
        assert r["conversation_turns"] == len({e["turn"] for e in history})


def test_history_entries(rows):
    for r in rows:
        cid = r["conversation_id"]
        turns = [e["turn"] for e in r["conversation_history"]]
        assert turns == sorted(turns), cid
        assert sorted(set(turns)) == list(range(r["conversation_turns"])), cid
        for e in r["conversation_history"]:
            assert set(e) == ENTRY_KEYS, cid
            assert isinstance(e["turn"], int) and not isinstance(e["turn"], bool)
            assert isinstance(e["content"], str) and e["content"].strip(), cid
            assert isinstance(e["within_turn_id"], int) and not isinstance(e["within_turn_id"], bool)
            if e["role"] == "user":
                assert e["within_turn_id"] == 0, cid
                assert e["model_name"] is None and e["model_provider"] is None, cid
                assert e["score"] is None and e["if_chosen"] is None, cid
            else:
                assert e["role"] == "model", cid
                assert PROVIDERS.get(e["model_name"]) == e["model_provider"], (cid, e["model_name"])
                assert isinstance(e["score"], int) and not isinstance(e["score"], bool), cid
                assert 1 <= e["score"] <= 100, cid
                assert isinstance(e["if_chosen"], bool), cid


def test_turn_structure_and_choices(rows):
    for r in rows:
        cid = r["conversation_id"]
        chosen_model = None
        for turn, entries in sorted(turns_of(r).items()):
            users = [e for e in entries if e["role"] == "user"]
            models = [e for e in entries if e["role"] == "model"]
            assert len(users) == 1 and entries[0] is users[0], (cid, turn)
            assert [e["within_turn_id"] for e in models] == list(range(len(models))), (cid, turn)
            chosen = [e for e in models if e["if_chosen"]]
            assert len(chosen) == 1, (cid, turn)
            others = [e["score"] for e in models if not e["if_chosen"]]
            assert all(chosen[0]["score"] > s for s in others), (cid, turn)  # the chosen one is the top score
            names = [e["model_name"] for e in models]
            if turn == 0:
                assert 2 <= len(models) <= 4, cid
                assert len(set(names)) == len(names), cid  # different models at turn 0
                chosen_model = chosen[0]["model_name"]
            else:
                assert len(models) == 2, (cid, turn)
                assert names == [chosen_model, chosen_model], (cid, turn)  # the model chosen at turn 0


# ------------------------------------------------------------------------------------------------ composition
def test_composition(rows, by_category):
    counts = {k: len(v) for k, v in by_category.items()}
    unguided = [r for r in rows if r["conversation_type"] == "unguided"]
    assert len(unguided) >= 62, counts
    assert counts.get("values guided", 0) >= 4 and counts.get("controversy guided", 0) >= 4, counts
    assert counts.get("empty") == 4, counts
    assert counts.get("foreign") == 3, counts
    assert counts.get("harmful") == 3, counts
    assert 9 <= counts.get("long_gap", 0) <= 10, counts
    assert counts.get("normal", 0) >= 62 - 20, counts
    single = sum(r["conversation_turns"] == 1 for r in unguided)
    assert 0.35 <= single / len(unguided) <= 0.65, single  # about half single-turn
    assert all(1 <= r["conversation_turns"] <= 4 for r in rows)
    multi_normal = [r for r in by_category["normal"] if r["conversation_turns"] > 1]
    assert len(multi_normal) >= 15
    assert {r["conversation_turns"] for r in multi_normal} == {2, 3, 4}
    prompts = [r["opening_prompt"] for r in rows]
    assert len(set(prompts)) == len(prompts)


def test_long_gap_every_pair_differs_by_at_least_350(by_category):
    for r in by_category["long_gap"]:
        for turn, entries in turns_of(r).items():
            lengths = sorted((len(e["content"]) for e in entries if e["role"] == "model"), reverse=True)
            assert 500 <= lengths[0] <= 800, (r["conversation_id"], turn, lengths)
            assert all(60 <= n <= 180 for n in lengths[1:]), (r["conversation_id"], turn, lengths)
        for a, b in pairs(r):
            assert abs(len(a["content"]) - len(b["content"])) >= 350, r["conversation_id"]
    multi = [r for r in by_category["long_gap"] if r["conversation_turns"] > 1]
    assert multi, "the long-gap stratum should include multi-turn conversations"


def test_other_unguided_pairs_differ_by_less_than_250_and_responses_are_short(rows, by_category):
    checked = 0
    for cat in ("normal", "empty", "foreign", "harmful"):
        for r in by_category[cat]:
            for a, b in pairs(r):
                assert abs(len(a["content"]) - len(b["content"])) < 250, r["conversation_id"]
                checked += 1
            for e in responses(r):
                assert e["content"] == EMPTY or 60 <= len(e["content"]) <= 400, (
                    r["conversation_id"],
                    len(e["content"]),
                )
    assert checked >= 100
    for r in rows:  # guided ones are filtered out, but keep them short too
        assert all(len(e["content"]) <= 800 for e in responses(r))


def test_markdown_appears_sometimes(by_category):
    texts = [e["content"] for r in by_category["normal"] for e in responses(r)]
    assert sum("**" in t for t in texts) >= 5
    assert sum("\n- " in t for t in texts) >= 3
    assert sum("http" in t for t in texts) >= 1
    assert sum(bool(re.search("[\U0001f300-\U0001faff\u2700-\u27bf]", t)) for t in texts) >= 3
    assert sum("**" in t or "\n" in t or "`" in t for t in texts) < len(texts) / 3  # sometimes, not always


# ------------------------------------------------------------------------------------------------ screening
def test_screening_conversations_are_single_turn_pairs(by_category, pattern):
    for cat in ("empty", "foreign", "harmful"):
        for r in by_category[cat]:
            assert r["conversation_turns"] == 1, r["conversation_id"]
            assert len(responses(r)) == 2, r["conversation_id"]


def test_empty_responses(rows, by_category):
    for r in by_category["empty"]:
        empty = [e for e in responses(r) if e["content"] == EMPTY]
        assert len(empty) == 1
        assert empty[0]["score"] <= 20 and not empty[0]["if_chosen"]
    n_empty = sum(e["content"] == EMPTY for r in rows for e in responses(r))
    assert n_empty == 4


def test_foreign_responses(by_category):
    languages = []
    for r in by_category["foreign"]:
        guesses = [language_guess(e["content"]) for e in responses(r)]
        assert sorted(guesses).count("en") == 1, (r["conversation_id"], guesses)
        languages += [g for g in guesses if g != "en"]
        foreign = [e for e in responses(r) if language_guess(e["content"]) != "en"][0]
        assert 2 <= len(re.findall(r"[.!?](\s|$)", foreign["content"])) <= 3  # 2-3 sentences
    assert sorted(languages) == ["de", "es", "fr"]


def test_harmful_responses_and_clean_rest(rows, by_category, pattern):
    for r in by_category["harmful"]:
        flagged = [e for e in responses(r) if pattern.search(e["content"])]
        assert len(flagged) == 1, r["conversation_id"]
        assert not flagged[0]["if_chosen"]
    flagged_rows = {
        r["conversation_id"] for r in rows if any(pattern.search(e["content"]) for e in r["conversation_history"])
    }
    assert flagged_rows == {r["conversation_id"] for r in by_category["harmful"]}


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_languages_with_lingua(by_category, rows):
    lingua = pytest.importorskip("lingua")
    detector = lingua.LanguageDetectorBuilder.from_all_languages().build()
    expected = {lingua.Language.SPANISH, lingua.Language.FRENCH, lingua.Language.GERMAN}
    foreign_ids = {r["conversation_id"] for r in by_category["foreign"]}
    found = set()
    for r in rows:
        for e in responses(r):
            if e["content"] == EMPTY:
                continue
            top = detector.compute_language_confidence_values(e["content"])[0]
            if r["conversation_id"] in foreign_ids and language_guess(e["content"]) != "en":
                assert top.language in expected and top.value >= 0.9, (r["conversation_id"], top)
                found.add(top.language)
            else:  # every other response is English, with the workflow's default confidence threshold
                assert top.language == lingua.Language.ENGLISH and top.value >= 0.5, (r["conversation_id"], top)
    assert found == expected


def test_harmful_terms_file(pattern):
    raw = TERMS.read_text(encoding="utf-8").splitlines()
    terms = load_terms()
    assert 40 <= len(terms) <= 80
    assert len(set(terms)) == len(terms)
    assert all(t == t.lower() and t == " ".join(t.split()) for t in terms)
    assert any(ln.startswith("#") for ln in raw)
    # whole words / phrases, case-insensitive
    assert pattern.search("What an IDIOT.") and pattern.search("kill   yourself")
    assert not pattern.search("Sussex is a county; the method works; an idiotic plan")
    assert not pattern.search("Use a sharp knife to cut the onion and shoot a photo.")


def test_scores_are_plausible(rows):
    chosen = [e["score"] for r in rows for e in responses(r) if e["if_chosen"]]
    rest = [e["score"] for r in rows for e in responses(r) if not e["if_chosen"] and e["content"] != EMPTY]
    assert sum(chosen) / len(chosen) > sum(rest) / len(rest) + 5
    assert len(set(chosen + rest)) >= 30
    # "usually but not always": longer is not always better
    longer_wins = [
        (len(a["content"]) > len(b["content"])) == (a["score"] > b["score"])
        for r in rows
        for a, b in pairs(r)
        if EMPTY not in (a["content"], b["content"])
    ]
    assert 0.5 < sum(longer_wins) / len(longer_wins) < 0.95


def test_model_mix(rows):
    names = Counter(e["model_name"] for r in rows for e in responses(r, 0))
    assert len(names) >= 8
    providers = {PROVIDERS[n] for n in names}
    assert {"openai", "anthropic", "meta", "mistralai", "huggingface", "cohere", "google"} <= providers


def test_generator_reproduces_the_file(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("make_sample", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path / "conversations.jsonl")
    module.main()
    assert (tmp_path / "conversations.jsonl").read_bytes() == SAMPLE.read_bytes()


# ------------------------------------------------------------------------------------------------ attention check
def test_attention_check():
    data = json.loads(ATTENTION.read_text(encoding="utf-8"))
    assert set(data) == {"prompt_id", "history", "prompt", "responses"}
    assert data["prompt_id"] == "attn"
    assert isinstance(data["history"], list)
    assert all(set(h) == {"role", "content"} and h["role"] in ("user", "model") for h in data["history"])
    assert isinstance(data["prompt"], str) and data["prompt"].endswith("?")
    assert len(data["responses"]) == 2 and all(set(r) == {"text"} for r in data["responses"])
    coherent, nonsense = (r["text"] for r in data["responses"])
    for text in (coherent, nonsense):
        assert 60 <= len(text) <= 400
        assert 2 <= len(re.findall(r"[.!?](\s|$)", text)) <= 3
        assert language_guess(text) == "en"

    def content_words(text):
        return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3} - {
            "what",
            "that",
            "with",
            "from",
            "this",
            "longer",
            "whenever",
        }

    prompt_words = content_words(data["prompt"])
    assert prompt_words & content_words(coherent)  # response 0 answers the question
    assert not prompt_words & content_words(nonsense)  # response 1 is unrelated word salad
