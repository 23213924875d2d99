"""Strict-but-tolerant parsing of judge replies into a 1-100 integer rating.

Accepted, in this order:

1. the whole reply (optionally inside a ```json fence) is a JSON object with a ``rating`` key;
2. exactly one JSON object with a ``rating`` key appears somewhere in the text
   (several objects that disagree are *ambiguous* and rejected);
3. the reply is a lone integer (``"73"``, ``"73."``).

The ``rating`` value must be an integer (JSON int, an integral float like ``73.0``, or a string of
digits). Anything else is rejected with an explicit reason and is never clipped or defaulted:
out-of-range values (0, 101), non-numeric values (``"eighty"``), refusals, malformed JSON, empty
replies. The caller re-asks and finally records the item as failed with the last reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

RATING_MIN, RATING_MAX = 1, 100

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S | re.I)
_LONE_INT = re.compile(r"^\s*([+-]?\d+)\s*\.?\s*$")
_REFUSAL = re.compile(
    r"\b(i\s*(?:am|'m)\s+sorry|i\s+(?:can(?:no|')t|cannot|won't|will not|am unable|'m unable)|"
    r"unable to (?:rate|evaluate|assess|listen|process)|as an ai)\b",
    re.I,
)

#: JSON schema sent as ``response_format`` when the endpoint supports structured outputs.
RATING_JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "rating",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"rating": {"type": "integer", "minimum": RATING_MIN, "maximum": RATING_MAX}},
            "required": ["rating"],
            "additionalProperties": False,
        },
    },
}


@dataclass(frozen=True)
class ParseResult:
    rating: int | None
    reason: str | None  # None when ok
    kind: str | None = None  # None | "parse" | "refusal" | "range"

    @property
    def ok(self) -> bool:
        return self.rating is not None


def _fail(reason: str, kind: str = "parse") -> ParseResult:
    return ParseResult(None, reason, kind)


def _coerce(value: object) -> ParseResult:
    """Validate the value of a ``rating`` key."""
    if isinstance(value, bool) or value is None:
        return _fail(f"non-numeric rating {value!r}")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float):
        if not value.is_integer():
            return _fail(f"non-integer rating {value!r}")
        n = int(value)
    elif isinstance(value, str):
        m = _LONE_INT.match(value)
        if not m:
            return _fail(f"non-numeric rating {value!r}")
        n = int(m.group(1))
    else:
        return _fail(f"non-numeric rating {value!r}")
    if not RATING_MIN <= n <= RATING_MAX:
        return _fail(f"rating {n} out of range {RATING_MIN}-{RATING_MAX}", "range")
    return ParseResult(n, None)


def _json_objects(text: str) -> list[dict]:
    """Every JSON object that can be decoded starting at some '{' in ``text``."""
    dec = json.JSONDecoder()
    found = []
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


def parse_rating(text: str | None, refusal: str | None = None) -> ParseResult:
    """Parse one reply. ``refusal`` is the API's ``message.refusal`` field, if any."""
    if refusal:
        return _fail(f"refusal: {refusal.strip()[:200]}", "refusal")
    if text is None or not text.strip():
        return _fail("empty reply")
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()

    # 1. the whole reply is JSON
    try:
        whole = json.loads(body)
    except json.JSONDecodeError:
        whole = None
        whole_ok = False
    else:
        whole_ok = True
    if whole_ok:
        if isinstance(whole, dict):
            if "rating" in whole:
                return _coerce(whole["rating"])
            return _fail(f"JSON reply without a 'rating' key: {body[:120]!r}")
        if isinstance(whole, int) and not isinstance(whole, bool):
            return _coerce(whole)
        return _fail(f"JSON reply is not an object: {body[:120]!r}")

    # 2. JSON object(s) somewhere in the text
    rated = [o for o in _json_objects(body) if "rating" in o]
    if rated:
        values = {json.dumps(o["rating"]) for o in rated}
        if len(values) > 1:
            return _fail(f"ambiguous: several ratings in reply ({', '.join(sorted(values))})")
        return _coerce(rated[0]["rating"])

    # 3. a lone integer
    m = _LONE_INT.match(body)
    if m:
        return _coerce(int(m.group(1)))

    if _REFUSAL.search(body):
        return _fail(f"refusal: {body[:200]!r}", "refusal")
    if "{" in body or '"rating"' in body:
        return _fail(f"malformed JSON: {body[:120]!r}")
    return _fail(f"no JSON rating or lone integer in reply: {body[:120]!r}")
