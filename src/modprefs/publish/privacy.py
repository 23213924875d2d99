"""Privacy of a published study: pseudonymous participant ids, identifier columns dropped, free text scrubbed.

Nothing here writes: every function takes tables (pandas) or strings and returns new ones.

* :func:`pseudonyms`: participant id -> ``p`` + 16 hex digits of HMAC-SHA256(salt, id). The salt is never
  written anywhere; the hashes are handed out in the order of the original ids (the i-th smallest id gets the
  i-th smallest hash), so every sort and group order of the statistics -- and so their output, byte for byte --
  is the same as the publishing run's.
* :func:`identifier_columns`: the columns dropped whole (config ``publish.drop_fields`` plus known identifier
  names: Prolific ids, session ids, tokens, IP addresses, e-mail addresses, user agents).
* :func:`scrub_text`: free text with e-mail addresses, URLs, IP addresses and Prolific-like ids (24 hex digits)
  replaced by ``[email]``, ``[url]``, ``[ip]``, ``[id]``.
* :func:`find_leaks`: every cell of every table (and the card) searched for planted-looking identifiers.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping

import pandas as pd

#: column names (lower case, any of - _ space) that identify a person or a session: always dropped
KNOWN_IDENTIFIERS = (
    "prolific_pid",
    "prolific_id",
    "prolificid",
    "pid",
    "session_id",
    "sessionid",
    "study_id",
    "token",
    "invite",
    "invite_token",
    "access_token",
    "ip",
    "ip_address",
    "ipaddress",
    "remote_addr",
    "user_agent",
    "email",
    "e_mail",
    "worker_id",
    "workerid",
    "mturk_id",
    "assignment_id",
    "cookie",
)

EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
URL_RE = re.compile(r"(?:https?://|ftp://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)
IP_RE = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b|\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b")
HEX_ID_RE = re.compile(r"\b[0-9a-fA-F]{24}\b")  # Prolific participant / session / study ids


def _norm(name: str) -> str:
    return re.sub(r"[\s\-.]+", "_", str(name).strip().lower())


def pseudonyms(ids: Iterable[str], salt: str) -> dict[str, str]:
    """{original id: ``p`` + 16 hex digits}, salted (HMAC-SHA256) and in the original ids' sort order.

    Args:
        ids: participant ids (any order, repeats allowed).
        salt: secret key; never written. A different salt gives unlinkable pseudonyms.
    """
    unique = sorted({str(i) for i in ids})
    hashes = sorted(
        {hmac.new(salt.encode("utf-8"), i.encode("utf-8"), hashlib.sha256).hexdigest()[:16] for i in unique}
    )
    if len(hashes) != len(unique):  # 64-bit collision: practically never
        raise ValueError("pseudonym collision; choose another salt")
    return {i: f"p{h}" for i, h in zip(unique, hashes)}


def identifier_columns(columns: Iterable[str], drop_fields: Iterable[str] = ()) -> list[str]:
    """The columns to drop: known identifier names and ``drop_fields`` (both matched case-insensitively)."""
    drop = {_norm(c) for c in (*KNOWN_IDENTIFIERS, *drop_fields)}
    return [c for c in columns if _norm(c) in drop]


def scrub_text(text: str, emails: bool = True, urls: bool = True) -> str:
    """``text`` with identifiers replaced: always IP addresses (``[ip]``) and 24-hex ids (``[id]``);
    e-mail addresses (``[email]``) and URLs (``[url]``) when asked. E-mails go first (a URL pattern would
    otherwise eat an address's domain)."""
    if emails:
        text = EMAIL_RE.sub("[email]", text)
    if urls:
        text = URL_RE.sub("[url]", text)
    text = IP_RE.sub("[ip]", text)
    return HEX_ID_RE.sub("[id]", text)


def scrub_column(values: pd.Series, emails: bool = True, urls: bool = True) -> pd.Series:
    """:func:`scrub_text` on every string cell (other cells as they are)."""
    return values.map(lambda v: scrub_text(v, emails, urls) if isinstance(v, str) else v)


def identifying_columns(df: pd.DataFrame, free_text: Iterable[str] = ()) -> list[str]:
    """Columns (other than ``free_text`` ones) holding an e-mail address, IP address or 24-hex id in any cell:
    such a column is an identifier whatever its name, and is dropped."""
    free = set(free_text)
    out = []
    for c in df.columns:
        if c in free or df[c].dtype.kind in "biufc":
            continue
        text = df[c].dropna().astype(str)
        if text.str.contains(EMAIL_RE).any() or text.str.contains(IP_RE).any() or text.str.contains(HEX_ID_RE).any():
            out.append(c)
    return out


def find_leaks(texts: Mapping[str, Iterable[str]], secrets: Iterable[str]) -> list[str]:
    """Where any of ``secrets`` (e.g. the original participant ids) occurs in ``texts`` ({place: strings});
    one ``'<place>: <secret>'`` per hit. Secrets shorter than 6 characters (``P1``) are matched as whole
    words only. One combined pattern scans each string once (a paper-size study: ~10^5 cells, ~10^2 ids)."""
    secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not secrets:
        return []
    parts = [re.escape(s) if len(s) >= 6 else rf"(?<![\w]){re.escape(s)}(?![\w])" for s in secrets]
    pattern = re.compile("|".join(parts))
    hits = set()
    for place, values in texts.items():
        for v in values:
            for m in pattern.finditer(v):
                hits.add(f"{place}: {m.group(0)!r}")
    return sorted(hits)
