"""The PRISM loader and the interaction rule."""

from __future__ import annotations

import pytest

from modprefs.data.prism import PrismFormatError, build_interactions, load_prism_rows
from support.prism import prism_row, write_jsonl


def _rows():
    return [
        prism_row(
            "c1",
            [
                (
                    "Hi, how do I boil an egg?",
                    [
                        ("m1", "Boil it ten minutes.", 60),
                        ("m2", "Place it in boiling water for 9 minutes, then cool.", 80),
                        ("m3", "EMPTY STRING", 1),
                    ],
                )
            ],
        ),
        prism_row(
            "c2",
            [
                ("Tell me about cats.", [("m1", "Cats are small felines.", 50), ("m2", "Cats purr.", 70)]),
                ("And dogs?", [("m2", "Dogs bark and are loyal.", 60), ("m2", "Dogs are canines.", 40)]),
            ],
        ),
        prism_row(
            "c3",
            [("Abortion views?", [("m1", "It is contested.", 50), ("m2", "Views vary.", 60)])],
            ctype="controversy guided",
        ),
    ]


def test_jsonl_loader_and_interactions(tmp_path):
    path = write_jsonl(_rows(), tmp_path / "conv.jsonl")
    table, counts = build_interactions(load_prism_rows(str(path)), seed=7)
    assert counts == {"rows": 3, "of_type": 2, "no_eligible_turn": 0}
    assert list(table["conversation_id"]) == ["c1", "c2"]
    c1 = table.iloc[0]
    assert c1["turn"] == 0 and len(c1["history"]) == 0
    assert c1["text_0"] != c1["text_1"]
    assert {c1["text_0"], c1["text_1"]} <= {
        "Boil it ten minutes.",
        "Place it in boiling water for 9 minutes, then cool.",
        "EMPTY STRING",
    }
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
    rows = [
        prism_row(f"c{i}", [(f"q{i}", [("a", "x" * 10, 1), ("b", "y" * 20, 2), ("c", "z" * 30, 3), ("d", "w", 4)])])
        for i in range(30)
    ]
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
    with pytest.raises(PrismFormatError, match=r"row 2 \(conversation 'c2'\).*conversation_history\[0\].*role"):
        build_interactions(bad, seed=1)
    dup = _rows() + [_rows()[0]]
    with pytest.raises(PrismFormatError, match="duplicate conversation_id 'c1'"):
        build_interactions(dup, seed=1)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(PrismFormatError, match="data.source"):
        load_prism_rows(str(tmp_path / "nope.jsonl"))


def _lines(tmp_path, edit=None, raw: bytes | None = None):
    """The three rows as JSONL; ``edit(rows)`` changes them first; ``raw`` replaces line 2's bytes."""
    import json

    rows = _rows()
    if edit:
        edit(rows)
    lines = [json.dumps(r).encode() for r in rows]
    if raw is not None:
        lines[1] = raw
    path = tmp_path / "conv.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _drop(key):
    return lambda rows: rows[1].pop(key)


def _set_utt(key, value):
    def edit(rows):
        rows[1]["conversation_history"][1][key] = value

    return edit


BAD_JSONL = [
    ("no conversation_id", _drop("conversation_id"), None, r"line 2: missing key\(s\) \['conversation_id'\]"),
    (
        "null conversation_id",
        lambda r: r[1].update(conversation_id=None),
        None,
        r"line 2: missing key.*conversation_id",
    ),
    ("no conversation_type", _drop("conversation_type"), None, r"line 2: missing key\(s\) \['conversation_type'\]"),
    (
        "unknown conversation_type",
        lambda r: r[1].update(conversation_type="Unguided"),
        None,
        r"line 2 \(conversation 'c2'\): conversation_type is 'Unguided'",
    ),
    (
        "turn zero",
        _set_utt("turn", "zero"),
        None,
        r"line 2 \(conversation 'c2'\): conversation_history\[1\]\.turn is 'zero'",
    ),
    (
        "score high",
        _set_utt("score", "high"),
        None,
        r"line 2 \(conversation 'c2'\): conversation_history\[1\]\.score is 'high'",
    ),
    (
        "score out of range",
        _set_utt("score", 500),
        None,
        r"line 2 \(conversation 'c2'\): conversation_history\[1\]\.score is 500, expected a number from 1 to 100",
    ),
    (
        "score zero",
        _set_utt("score", 0),
        None,
        r"conversation_history\[1\]\.score is 0, expected a number from 1 to 100",
    ),
    (
        "negative within_turn_id",
        _set_utt("within_turn_id", -1),
        None,
        r"conversation_history\[1\]\.within_turn_id is -1, expected a whole number >= 0",
    ),
    (
        "history not a list",
        lambda r: r[1].update(conversation_history="hello"),
        None,
        r"line 2 \(conversation 'c2'\): conversation_history is str",
    ),
    ("malformed line", None, b'{"conversation_id": "c2", ', r"line 2, column \d+: not valid JSON"),
    ("not an object", None, b'["c2"]', r"line 2: expected a JSON object"),
    ("non-UTF-8 byte", None, b'{"conversation_id": "c\xe92"}', r"line 2, column 23: not UTF-8 text \(byte 0xe9\)"),
]


@pytest.mark.parametrize("edit,raw,expected", [c[1:] for c in BAD_JSONL], ids=[c[0] for c in BAD_JSONL])
def test_bad_jsonl_names_file_and_line(tmp_path, edit, raw, expected):
    path = _lines(tmp_path, edit, raw)
    with pytest.raises(PrismFormatError, match=expected) as info:
        build_interactions(load_prism_rows(str(path)), seed=1)
    assert str(path) in str(info.value)


def test_blank_lines_and_bom_are_fine(tmp_path):
    path = _lines(tmp_path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\n\n", 1))
    rows = load_prism_rows(str(path))
    assert rows.locations == [f"{path} line 1", f"{path} line 3", f"{path} line 4"]
    table, counts = build_interactions(rows, seed=1)
    assert counts["rows"] == 3 and len(table) == 2


def test_duplicate_names_both_lines(tmp_path):
    path = _lines(tmp_path, lambda rows: rows[2].update(conversation_id="c1"))
    with pytest.raises(PrismFormatError, match=r"line 3: duplicate conversation_id 'c1' \(first at .*line 1\)"):
        build_interactions(load_prism_rows(str(path)), seed=1)
