"""The PRISM loader and the interaction rule."""

from __future__ import annotations

import pytest

from conftest import prism_row, write_jsonl
from modprefs.data.prism import PrismFormatError, build_interactions, load_prism_rows


def _rows():
    return [
        prism_row("c1", [("Hi, how do I boil an egg?", [("m1", "Boil it ten minutes.", 60),
                                                           ("m2", "Place it in boiling water for 9 minutes, then cool.", 80),
                                                           ("m3", "EMPTY STRING", 1)])]),
        prism_row("c2", [("Tell me about cats.", [("m1", "Cats are small felines.", 50), ("m2", "Cats purr.", 70)]),
                         ("And dogs?", [("m2", "Dogs bark and are loyal.", 60), ("m2", "Dogs are canines.", 40)])]),
        prism_row("c3", [("Abortion views?", [("m1", "It is contested.", 50), ("m2", "Views vary.", 60)])],
                  ctype="controversy guided"),
    ]


def test_jsonl_loader_and_interactions(tmp_path):
    path = write_jsonl(_rows(), tmp_path / "conv.jsonl")
    table, counts = build_interactions(load_prism_rows(str(path)), seed=7)
    assert counts == {"rows": 3, "of_type": 2, "no_eligible_turn": 0}
    assert list(table["conversation_id"]) == ["c1", "c2"]
    c1 = table.iloc[0]
    assert c1["turn"] == 0 and len(c1["history"]) == 0
    assert c1["text_0"] != c1["text_1"]
    assert {c1["text_0"], c1["text_1"]} <= {"Boil it ten minutes.", "Place it in boiling water for 9 minutes, then cool.",
                                            "EMPTY STRING"}
    assert c1["chars_0"] == len(c1["text_0"]) and c1["abs_char_diff"] == abs(c1["chars_0"] - c1["chars_1"])
    c2 = table.iloc[1]
    if c2["turn"] == 1:
        # history: user turn 0 + the chosen (highest-scored) response
        assert [h["content"] for h in c2["history"]] == ["Tell me about cats.", "Cats purr."]
        assert c2["history_chars"] == len("Tell me about cats.") + len("Cats purr.")
        assert c2["prompt"] == "And dogs?"
    else:
        assert len(c2["history"]) == 0 and c2["prompt"] == "Tell me about cats."


def test_interaction_does_not_depend_on_other_rows(tmp_path):
    rows = _rows()
    full, _ = build_interactions(rows, seed=11)
    alone, _ = build_interactions([rows[1]], seed=11)
    a = full[full.conversation_id == "c2"].iloc[0]
    b = alone.iloc[0]
    assert (a["turn"], a["response_id_0"], a["response_id_1"]) == (b["turn"], b["response_id_0"], b["response_id_1"])


def test_seed_changes_choices():
    rows = [prism_row(f"c{i}", [(f"q{i}", [("a", "x" * 10, 1), ("b", "y" * 20, 2), ("c", "z" * 30, 3), ("d", "w", 4)])])
            for i in range(30)]
    t1, _ = build_interactions(rows, seed=1)
    t2, _ = build_interactions(rows, seed=2)
    t1b, _ = build_interactions(rows, seed=1)
    assert t1.equals(t1b)
    assert not t1[["response_id_0", "response_id_1"]].equals(t2[["response_id_0", "response_id_1"]])
    # every ordered pair of distinct responses occurs: the rule draws pairs uniformly
    pairs = set(zip(t1.response_id_0.str[-2:], t1.response_id_1.str[-2:]))
    assert len(pairs) >= 8


def test_schema_errors_name_row_and_key():
    bad = _rows()
    del bad[1]["conversation_history"][0]["role"]
    with pytest.raises(PrismFormatError, match=r"row 2 \(c2\).*conversation_history\[0\].*role"):
        build_interactions(bad, seed=1)
    dup = _rows() + [_rows()[0]]
    with pytest.raises(PrismFormatError, match="duplicate conversation_id 'c1'"):
        build_interactions(dup, seed=1)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="data.source"):
        load_prism_rows(str(tmp_path / "nope.jsonl"))
