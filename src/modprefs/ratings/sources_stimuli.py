"""Clips, prompts and stimuli for a ratings source that lacks them (:mod:`modprefs.ratings.sources`).

A wide table (``rating_0``/``rating_1``, one row per trial) becomes two long rows per trial
(:func:`wide_to_long`); clip ids come from the stimuli for (prompt, response) and prompt ids from the stimuli for a
clip (:func:`fill_ids`); without a stimulus table one is derived from the ratings (:func:`stimuli_from_ratings`;
the rules: the module docstring of :mod:`modprefs.ratings.sources`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from modprefs.ratings.source_tables import ATTENTION_CLIPS, WIDE_COLUMNS, Origin, RatingsSourceError
from modprefs.study.terms import ATTENTION_PROMPT


def derived_stimuli(ratings: pd.DataFrame, origin: Origin, published: pd.DataFrame | None) -> tuple[pd.DataFrame, str]:
    """A published study's own stimuli when it has them, else those derived from the ratings; and a note."""
    if published is None:
        return stimuli_from_ratings(ratings, origin)
    return published, (
        f"no clips table: the published dataset's stimuli split gives {len(published)} clips "
        "(n_chars = the length of each response text)"
    )


def is_wide(df: pd.DataFrame) -> bool:
    if "rating" in df.columns:
        return False
    present = [c for c in ("rating_0", "rating_1") if c in df.columns]
    if len(present) == 1:
        missing = "rating_1" if present[0] == "rating_0" else "rating_0"
        raise RatingsSourceError(
            f"the ratings table has {present[0]!r} but no {missing!r}: a wide table needs both "
            "(or a long table a 'rating' column)"
        )
    return len(present) == 2


def _clip_lookup(stimuli: pd.DataFrame | None) -> tuple[dict[tuple[str, str], str], dict[str, tuple[str, str]]]:
    """{(prompt_id, response as text): clip_id} and {clip_id: (prompt_id, response)}, attention check included."""
    by_pair = {(p, str(r)): c for c, (p, r) in ATTENTION_CLIPS.items()}
    by_clip = {c: (p, str(r)) for c, (p, r) in ATTENTION_CLIPS.items()}
    if stimuli is not None and {"prompt_id", "clip_id", "response"} <= set(stimuli.columns):
        for p, c, r in zip(stimuli["prompt_id"].astype(str), stimuli["clip_id"].astype(str), stimuli["response"]):
            r = str(int(r)) if pd.notna(r) else ""
            by_pair[(p, r)] = c
            by_clip[c] = (p, r)
    return by_pair, by_clip


def wide_to_long(tables: dict[str, pd.DataFrame], origins: dict[str, Origin], stimuli: pd.DataFrame | None) -> None:
    """Two long rating rows per wide row; the wide row's trial-level columns stay for :func:`split_levels`."""
    wide, origin = tables["ratings"], origins["ratings"]
    if "prompt_id" not in wide.columns:
        raise RatingsSourceError(
            f"{origin.file()}: a wide ratings table (rating_0, rating_1) needs a prompt_id column "
            "(map yours, e.g. --map prompt_id=item)"
        )
    by_pair, _ = _clip_lookup(stimuli)
    n = len(wide)
    idx = np.repeat(np.arange(n), 2)
    resp = np.tile([0, 1], n)
    long = wide.iloc[idx].reset_index(drop=True)
    prompts = long["prompt_id"].astype(str).str.strip()
    long["clip_id"] = [by_pair.get((p, str(r)), f"{p}_{r}") if p else "" for p, r in zip(prompts, resp)]
    long["rating"] = np.where(resp == 0, wide["rating_0"].to_numpy()[idx], wide["rating_1"].to_numpy()[idx])
    row_columns = {
        "rating": [origin.column(f"rating_{r}") for r in resp],
        "clip_id": [origin.column("prompt_id")] * 2 * n,
    }
    if "audio_quality_0" in wide.columns or "audio_quality_1" in wide.columns:
        aq = {
            r: wide[f"audio_quality_{r}"].to_numpy()[idx]
            if f"audio_quality_{r}" in wide.columns
            else np.full(2 * n, "", dtype=object)
            for r in (0, 1)
        }
        long["audio_quality"] = np.where(resp == 0, aq[0], aq[1])
        row_columns["audio_quality"] = [origin.column(f"audio_quality_{r}") for r in resp]
    if "first_clip" in wide.columns:
        first = wide["first_clip"].astype(str).str.strip().to_numpy()[idx]
        long["presented_first"] = [
            ("" if f == "" else ("true" if f == str(r) else ("false" if f in ("0", "1") else f"first_clip={f}")))
            for f, r in zip(first, resp)
        ]
        row_columns["presented_first"] = [origin.column("first_clip")] * 2 * n
    long = long.drop(columns=[c for c in WIDE_COLUMNS if c in long.columns])
    o = origin.take(idx)
    o.row_columns.update(row_columns)
    tables["ratings"], origins["ratings"] = long, o


_SUFFIX = r"^(.+)_(\d+)$"  # a clip id {prompt}_{response}
STIMULI_COLUMNS = ["clip_id", "prompt_id", "response"]


def _stripped(df: pd.DataFrame, name: str) -> pd.Series | None:
    return df[name].astype(str).str.strip() if name in df.columns else None


def _derived_ids(r: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series, str]:
    """(clip, prompt, response as text, how) of every ratings row, per :func:`stimuli_from_ratings`' rules."""
    clip, prompt, resp = _stripped(r, "clip_id"), _stripped(r, "prompt_id"), _stripped(r, "response")
    if resp is not None:
        resp = resp.str.replace(r"\.0$", "", regex=True)
    if prompt is not None and resp is not None:
        if clip is None:
            clip = pd.Series([f"{p}_{x}" if p and x else "" for p, x in zip(prompt, resp)], index=r.index)
        return clip, prompt, resp, "from the ratings' prompt_id and response columns"
    assert clip is not None  # the caller checked
    parts = clip.str.extract(_SUFFIX)
    numbered = bool(len(clip)) and parts[1].notna().all()
    if prompt is not None:
        if numbered:
            return clip, prompt, parts[1], "prompt from the prompt_id column, response from the clip id's _N suffix"
        rank = clip.groupby(prompt).rank(method="dense").astype(int) - 1
        return clip, prompt, rank.astype(str), "prompt from the prompt_id column, responses numbered within it"
    if numbered and 1 < parts[0].nunique() < clip.nunique():
        return clip, parts[0], parts[1], "clip ids read as {prompt}_{response}"
    zeros = pd.Series("0", index=r.index)
    return clip, clip, zeros, "each clip its own item (a single-stimulus design: no prompt_id, response 0)"


def stimuli_from_ratings(ratings: pd.DataFrame, origin: Origin) -> tuple[pd.DataFrame, str]:
    """A stimulus table (clip_id, prompt_id, response) derived from a ratings table (strings), and a note.

    Rules (module docstring): ``prompt_id`` + ``response`` columns; else a ``prompt_id`` column with the
    response from the clip id's ``_N`` suffix (every clip has one) or the clip's rank within its prompt;
    else clip ids ``{prompt}_{response}`` when that gives two or more prompts, each with fewer clips than
    all; else each clip its own item. Attention-check rows (``attn``, ``attn_0``/``attn_1``) are left out.
    A ratings table without clip ids (and without prompt + response) gives an empty table: validation
    reports the missing column.

    Raises:
        RatingsSourceError: a response that is not a whole number, one clip given two prompts or responses,
            or two clips given the same prompt and response (each naming the rows and columns).
    """
    if "clip_id" not in ratings.columns and not {"prompt_id", "response"} <= set(ratings.columns):
        return pd.DataFrame(columns=STIMULI_COLUMNS), "no clips table and no clip ids in the ratings"
    clip, prompt, resp, how = _derived_ids(ratings)
    attn = clip.isin(list(ATTENTION_CLIPS)) | prompt.eq(ATTENTION_PROMPT)
    keep = ~attn & clip.ne("") & prompt.ne("")
    problems: list[str] = []
    seen: dict[str, tuple[int, str, str]] = {}
    slot: dict[tuple[str, str], tuple[int, str]] = {}
    for i in np.flatnonzero(keep.to_numpy()):
        c, p, x = clip.iat[i], prompt.iat[i], resp.iat[i]
        if not x.isdigit():
            problems.append(f"{origin.where(int(i), 'response')}: {x!r} is not a response index (a whole number >= 0)")
            continue
        x = str(int(x))
        if c in seen:
            j, p0, x0 = seen[c]
            if (p0, x0) != (p, x) and len(problems) < 20:
                problems.append(
                    f"{origin.where(int(i), 'clip_id')}: clip {c!r} is prompt {p!r} response {x}, but at "
                    f"{origin.where(j)} prompt {p0!r} response {x0}"
                )
            continue
        seen[c] = (int(i), p, x)
        if (p, x) in slot and len(problems) < 20:
            j, c0 = slot[(p, x)]
            problems.append(
                f"{origin.where(int(i), 'clip_id')}: clip {c!r} and clip {c0!r} (at {origin.where(j)}) are both "
                f"prompt {p!r} response {x}"
            )
        slot.setdefault((p, x), (int(i), c))
    if problems:
        raise RatingsSourceError("\n".join(problems))
    stimuli = pd.DataFrame([(c, p, int(x)) for c, (_, p, x) in seen.items()], columns=STIMULI_COLUMNS).astype(
        {"response": int}
    )
    counts = stimuli.groupby("prompt_id")["response"].size().value_counts().sort_index()
    design = ", ".join(f"{n} prompt(s) with {k} response(s)" for k, n in counts.items())
    return stimuli, f"no clips table: {len(stimuli)} clips derived from the ratings ({how}): {design or 'none'}"


def fill_ids(tables: dict[str, pd.DataFrame], origins: dict[str, Origin], stimuli: pd.DataFrame | None) -> None:
    """clip_id from (prompt_id, response) and prompt_id from clip_id, via the stimuli, where absent."""
    r, origin = tables["ratings"], origins["ratings"]
    by_pair, by_clip = _clip_lookup(stimuli)
    if "clip_id" not in r.columns and {"prompt_id", "response"} <= set(r.columns):
        resp = r["response"].astype(str).str.strip().str.replace(r"\.0$", "", regex=True)
        r["clip_id"] = [
            by_pair.get((p.strip(), x), f"{p.strip()}_{x}") if p.strip() and x else ""
            for p, x in zip(r["prompt_id"].astype(str), resp)
        ]
        origin.columns.setdefault("clip_id", f"{origin.column('prompt_id')} + {origin.column('response')}")
    if "prompt_id" not in r.columns and "clip_id" in r.columns:
        r["prompt_id"] = [by_clip.get(c.strip(), ("", ""))[0] for c in r["clip_id"].astype(str)]
        origin.columns.setdefault("prompt_id", f"{origin.column('clip_id')} (prompt from the stimuli)")
    tables["ratings"] = r
