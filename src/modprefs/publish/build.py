"""The published study as tables: stimuli, ratings, participants, preferences per modality, item reliability.

:func:`read_results` reads a finished run's ``results/`` folder (docs/CONTRACTS.md) into a :class:`RunTables`;
:func:`build_splits` turns it into one pandas frame per split (pure: no files written). Audio cells are
``{"bytes": <the study WAV, byte for byte>, "path": "<clip_id>.wav"}`` dicts, for a ``datasets.Audio`` feature.

Splits (one frame each; docs/CONTRACTS.md, "results/dataset/"):

* ``stimuli``: one row per prompt (attention check excluded): history (list of {role, content}), prompt,
  response_0 / response_1 texts, audio_0 / audio_1, per side the engine, model and voice (``given`` for a lab's
  own audio), duration (s), sample rate (Hz), QC (rms_dbfs, peak, clipping_ratio) and loudness (LUFS, dBTP, dB);
* ``ratings``: one row per rating: the ratings table, the trial's columns (preference, justification, times,
  replays) and the participant's attention / headphone status, ``source`` human / simulated / judge (AI judge
  ratings of results/judges/ratings.csv, participant_id ``judge:<name>``, when present);
* ``participants``: the participants table minus the dropped fields;
* ``preferences_text`` / ``preferences_audio``: per prompt, the response preferred by the mean rating of that
  condition's analysed raters, in the chat format reward-model / DPO trainers take (``prompt`` a messages list,
  ``chosen`` / ``rejected`` one assistant message each) with ``chosen_audio`` / ``rejected_audio``, the margin
  (mean rating difference, scale units), agreement (share of raters rating the chosen response higher) and the
  number of raters; ties (equal means) are left out and counted;
* ``item_reliability``: per prompt and condition: raters, mean and SD of each response's rating, mean and SD of
  the per-rater difference (response 1 - response 0), the share of raters preferring the majority response.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.file_access import file_problem, printable
from modprefs.io_tables import read_table
from modprefs.publish.privacy import (
    find_leaks,
    identifier_columns,
    identifying_columns,
    pseudonyms,
    scrub_column,
)
from modprefs.ratings.schema import TRIALS_COLUMNS
from modprefs.study.terms import ATTENTION_PROMPT, PAPER_COLUMN_ORDER

#: files of a finished run (relative to the results folder) publishing needs
REQUIRED = (
    "data/conversations.parquet",
    "sampling/final_prompts.csv",
    "audio/manifest.csv",
    "study/stimuli.csv",
    "ratings/ratings.csv",
    "ratings/trials.csv",
    "ratings/participants.csv",
    "stats/tables/icc.csv",
)
OPTIONAL = ("judges/ratings.csv",)
#: manifest columns carried into the stimuli split, per side (``<name>_0``, ``<name>_1``)
MANIFEST_COLUMNS = (
    "backend",
    "model",
    "voice",
    "duration_s",
    "sample_rate",
    "rms_dbfs",
    "peak",
    "clipping_ratio",
    "lufs_before",
    "lufs_after",
    "true_peak_before_dbtp",
    "true_peak_after_dbtp",
    "gain_db",
    "limited",
    "speech_s",
    "words_per_s",
    "wer",
    "dnsmos_sig",
    "dnsmos_bak",
    "dnsmos_ovrl",
    "dnsmos_p808",
    "qc_pass",
    "qc_reasons",
)
#: trials.csv's own columns joined onto each rating (its keys and ``source`` left out), in the schema's order
TRIAL_COLUMNS = tuple(c for c in TRIALS_COLUMNS if c not in ("participant_id", "prompt_id", "trial", "source"))
PARTICIPANT_STATUS = ("passed_attention", "completed", "headphone_check")
FREE_TEXT = ("justification",)
#: the study's own keys: never taken for identifiers by their content (a lab's item ids may be 24-hex ObjectIds)
KEY_COLUMNS = ("participant_id", "condition", "prompt_id", "clip_id", "source", "judge_model")
SOURCE_NAMES = {"collected": "human", "simulated": "simulated", "": "human"}
SPLITS = ("stimuli", "ratings", "participants", "preferences_text", "preferences_audio", "item_reliability")
AUDIO_COLUMNS = {
    "stimuli": ("audio_0", "audio_1"),
    "preferences_text": ("chosen_audio", "rejected_audio"),
    "preferences_audio": ("chosen_audio", "rejected_audio"),
}


class PublishError(UserInputError):
    """The results folder cannot be published (a missing file or column); the message names it."""


@dataclass
class RunTables:
    """A finished run's tables (pandas, ids verbatim) and where its files are."""

    results: Path
    conversations: pd.DataFrame
    final_prompts: pd.DataFrame
    manifest: pd.DataFrame
    stimuli: pd.DataFrame
    ratings: pd.DataFrame
    trials: pd.DataFrame
    participants: pd.DataFrame
    icc: pd.DataFrame
    judges: pd.DataFrame | None = None


@dataclass
class PublishOptions:
    """The config's ``publish`` block: license id, fields dropped, free-text scrubbing, the pseudonym salt."""

    license: str = "cc-by-4.0"
    drop_fields: tuple[str, ...] = ()
    scrub_emails: bool = True
    scrub_urls: bool = True
    salt: str = ""

    @classmethod
    def from_config(cls, block: Mapping[str, Any] | None) -> PublishOptions:
        block = dict(block or {})
        scrub = dict(block.get("scrub") or {})
        return cls(
            license=str(block.get("license", "cc-by-4.0")),
            drop_fields=tuple(block.get("drop_fields") or ()),
            scrub_emails=bool(scrub.get("emails", True)),
            scrub_urls=bool(scrub.get("urls", True)),
            salt=str(block.get("salt") or ""),
        )


@dataclass
class Splits:
    """The built splits and what the card reports about them."""

    frames: dict[str, pd.DataFrame]
    ties: dict[str, int] = field(default_factory=dict)  # modality -> prompts left out of preferences_<m>
    dropped: list[str] = field(default_factory=list)  # "table.column" dropped for privacy
    notes: list[str] = field(default_factory=list)


def missing_inputs(results: Path) -> list[str]:
    """The required files (:data:`REQUIRED`) absent under ``results``."""
    return [str(results / rel) for rel in REQUIRED if not (results / rel).is_file()]


def read_results(results: str | Path) -> RunTables:
    """Read the files of :data:`REQUIRED` (and the judges' ratings when present) under ``results``.

    Raises:
        PublishError: a required file is missing (named) or unreadable.
    """
    results = Path(results)
    if not results.is_dir():
        raise PublishError(f"--results {results}: no such folder (a finished run's results/)")
    missing = missing_inputs(results)
    if missing:
        raise PublishError(
            f"--results {results}: missing {missing[0]}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
            + "; run the workflow to the end (snakemake --cores 2) first"
        )

    def table(rel: str) -> pd.DataFrame:
        try:
            return read_table(results / rel, allow_empty=True)
        except UserInputError as exc:
            raise PublishError(f"--results {results}: {exc}") from None

    judges = results / OPTIONAL[0]
    try:
        conversations = pd.read_parquet(results / REQUIRED[0])
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        raise PublishError(
            f"--results {results}: {results / REQUIRED[0]} cannot be read as Parquet "
            f"({type(exc).__name__}: {printable(exc)})"
        ) from None
    return RunTables(
        results=results,
        conversations=conversations,
        final_prompts=table(REQUIRED[1]),
        manifest=table(REQUIRED[2]),
        stimuli=table(REQUIRED[3]),
        ratings=table(REQUIRED[4]),
        trials=table(REQUIRED[5]),
        participants=table(REQUIRED[6]),
        icc=table(REQUIRED[7]),
        judges=table(OPTIONAL[0]) if judges.is_file() else None,
    )


def _need(df: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise PublishError(f"{what}: missing column(s) {missing}")


def _clean(v: Any) -> Any:
    """A cell as a plain Python value (None for NaN/NA)."""
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, np.generic):
        return _clean(v.item())
    return v


def messages(history: Any) -> list[dict[str, str]]:
    """PRISM history ({role: user|model, content}) as chat messages ({role: user|assistant, content})."""
    out = []
    for turn in list(history if history is not None else []):
        role = str(turn["role"])
        out.append({"role": "assistant" if role in ("model", "assistant") else role, "content": str(turn["content"])})
    return out


def audio_path(results: Path, path: str) -> Path:
    """A manifest ``path`` (relative to the run's working directory, the parent of ``results``) as a file."""
    p = Path(path)
    if p.is_absolute():
        return p
    for cand in (results.parent / p, results / Path(*p.parts[1:]) if p.parts[:1] == ("results",) else results / p):
        if cand.is_file():
            return cand
    return results.parent / p


def audio_cells(run: RunTables, read_bytes: Callable[[Path], bytes] | None = None) -> dict[str, dict[str, Any]]:
    """clip_id -> ``{"bytes": WAV bytes, "path": "<clip_id>.wav"}`` for every manifest clip.

    Raises:
        PublishError: a clip's WAV is missing (named).
    """
    read_bytes = read_bytes or (lambda p: p.read_bytes())
    _need(run.manifest, ("clip_id", "path"), "audio/manifest.csv")
    out = {}
    manifest = run.results / "audio/manifest.csv"
    for row, (clip, path) in enumerate(zip(run.manifest["clip_id"].astype(str), run.manifest["path"].astype(str))):
        file = audio_path(run.results, path)
        where = f"{manifest} row {row + 2}: clip {clip}"
        problem = file_problem(file)
        if problem == "file not found":
            raise PublishError(f"{where}: missing WAV {file}")
        if problem:
            raise PublishError(f"{where}: {file} {problem}")
        why = not_audio(file)
        if why:
            raise PublishError(f"{where}: {file} is not audio ({why}); the dataset's Audio cells must decode")
        out[clip] = {"bytes": read_bytes(file), "path": f"{clip}.wav"}
    return out


def not_audio(path: Path) -> str | None:
    """Why soundfile cannot read ``path`` as audio with samples (None: it can)."""
    import soundfile as sf  # noqa: PLC0415

    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError) as err:
        return printable(err).rsplit(": ", 1)[-1]
    return "no samples" if info.frames == 0 else None


def stimuli_split(run: RunTables, audio: Mapping[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per prompt of the final study (see the module docstring)."""
    _need(run.final_prompts, ("prompt_id", "conversation_id"), "sampling/final_prompts.csv")
    conv = run.conversations.set_index(run.conversations["conversation_id"].astype(str))
    man = run.manifest.set_index(run.manifest["clip_id"].astype(str))
    stim = run.stimuli.copy()
    stim["prompt_id"] = stim["prompt_id"].astype(str)
    rows = []
    for _, fp in run.final_prompts.iterrows():
        pid, cid = str(fp["prompt_id"]), str(fp["conversation_id"])
        if cid not in conv.index:
            raise PublishError(f"data/conversations.parquet: no conversation {cid!r} (prompt {pid})")
        c = conv.loc[cid]
        row: dict[str, Any] = {
            "prompt_id": pid,
            "conversation_id": cid,
            "stratum": _clean(fp.get("stratum")),
            "history": messages(c.get("history")),
            "prompt": str(c["prompt"]),
        }
        for k in (0, 1):
            clip = f"{pid}_{k}"
            row[f"clip_id_{k}"] = clip
            row[f"response_{k}"] = str(c[f"text_{k}"])
            row[f"model_name_{k}"] = _clean(c.get(f"model_name_{k}"))
            if clip not in audio:
                raise PublishError(f"audio/manifest.csv: no clip {clip!r} (prompt {pid})")
            row[f"audio_{k}"] = audio[clip]
            m = man.loc[clip]
            backend = str(m.get("backend", ""))
            row[f"engine_{k}"] = "given" if backend == "given" else backend
            for col in MANIFEST_COLUMNS:
                if col in man.columns and col != "backend":
                    row[f"{col}_{k}"] = _clean(m[col])
            row[f"spoken_text_{k}"] = _clean(m.get("spoken_text"))
        rows.append(row)
    return pd.DataFrame(rows)


def _response_of(clip: str) -> int | None:
    tail = clip.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else None


def ratings_split(run: RunTables, ids: Mapping[str, str], opts: PublishOptions) -> pd.DataFrame:
    """One row per rating (humans or simulated), then the AI judges' ratings (see the module docstring)."""
    r = run.ratings.copy()
    _need(r, ("participant_id", "clip_id", "rating"), "ratings/ratings.csv")
    r["participant_id"] = r["participant_id"].astype(str)
    r.insert(r.columns.get_loc("clip_id") + 1, "response", r["clip_id"].astype(str).map(_response_of).astype("Int64"))
    t = run.trials
    keys = [k for k in ("participant_id", "trial") if k in t.columns and k in r.columns]
    if len(keys) == 2 and len(t):
        tcols = [c for c in TRIAL_COLUMNS if c in t.columns and c not in r.columns]
        t = t.assign(participant_id=t["participant_id"].astype(str))[[*keys, *tcols]]
        r = r.merge(t.drop_duplicates(keys), on=keys, how="left")
    p = run.participants
    pcols = [c for c in PARTICIPANT_STATUS if c in p.columns]
    if pcols:
        p = p.assign(participant_id=p["participant_id"].astype(str))[["participant_id", *pcols]]
        r = r.merge(p.drop_duplicates("participant_id"), on="participant_id", how="left")
    if "source" in r.columns:
        src = r.pop("source").fillna("").astype(str).map(lambda s: SOURCE_NAMES.get(s, s))
    else:
        src = pd.Series("human", index=r.index)
    r["source"] = src
    r["participant_id"] = r["participant_id"].map(ids)
    if run.judges is not None and len(run.judges):
        r = pd.concat([r, judge_rows(run.judges)], ignore_index=True)
    for c in FREE_TEXT:
        if c in r.columns:
            r[c] = scrub_column(r[c], opts.scrub_emails, opts.scrub_urls)
    return r


def judge_rows(judges: pd.DataFrame) -> pd.DataFrame:
    """results/judges/ratings.csv as ratings-split rows: one per judge record, ``participant_id``
    ``judge:<judge>``, ``condition`` its modality, a response-quality judgement in ``rating`` and an audio-quality
    one in ``audio_quality`` (1-100; empty where the call failed), ``source`` judge, plus judge_model, judge_sample."""
    _need(judges, ("judge", "modality", "kind", "prompt_id", "clip_id", "rating"), "judges/ratings.csv")
    value = pd.to_numeric(judges["rating"], errors="coerce")
    quality = judges["kind"].astype(str) == "audio_quality"
    return pd.DataFrame(
        {
            "participant_id": "judge:" + judges["judge"].astype(str),
            "condition": judges["modality"].astype(str),
            "prompt_id": judges["prompt_id"].astype(str),
            "clip_id": judges["clip_id"].astype(str),
            "response": judges["clip_id"].astype(str).map(_response_of).astype("Int64"),
            "rating": value.where(~quality),
            "audio_quality": value.where(quality),
            "source": "judge",
            "judge_model": judges["model"].astype(str) if "model" in judges.columns else None,
            "judge_sample": pd.to_numeric(judges["sample"], errors="coerce") if "sample" in judges.columns else None,
        }
    )


def participants_split(run: RunTables, ids: Mapping[str, str]) -> pd.DataFrame:
    """The participants table, ids pseudonymous, ``source`` human/simulated."""
    p = run.participants.copy()
    p["participant_id"] = p["participant_id"].astype(str).map(ids)
    if "source" in p.columns:
        p["source"] = p["source"].fillna("").astype(str).map(lambda s: SOURCE_NAMES.get(s, s))
    return p


def analysed_ratings(run: RunTables, condition: str) -> pd.DataFrame:
    """The condition's analysed ratings: no attention-check trial, only participants who passed it."""
    r = run.ratings
    r = r[(r["condition"].astype(str) == condition) & (r["prompt_id"].astype(str) != ATTENTION_PROMPT)]
    if "trial" in r.columns:
        r = r[pd.to_numeric(r["trial"], errors="coerce").fillna(1) > 0]
    p = run.participants
    if "passed_attention" in p.columns:
        passed = p["passed_attention"].astype(str).str.strip().str.lower().isin(["true", "1", "1.0", "yes"])
        r = r[r["participant_id"].astype(str).isin(set(p.loc[passed, "participant_id"].astype(str)))]
    r = r.assign(participant_id=r["participant_id"].astype(str), response=r["clip_id"].astype(str).map(_response_of))
    return r[r["response"].isin([0, 1])]


def _pairs(r: pd.DataFrame) -> pd.DataFrame:
    """Per (prompt, rater) the two ratings: columns prompt_id, participant_id, r0, r1."""
    wide = r.pivot_table(index=["prompt_id", "participant_id"], columns="response", values="rating", aggfunc="mean")
    wide = wide.reindex(columns=[0, 1]).dropna().reset_index()
    return wide.rename(columns={0: "r0", 1: "r1"})


def preferences_split(run: RunTables, condition: str, stimuli: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The condition's preference pairs (see the module docstring) and the number of tied prompts left out."""
    pairs = _pairs(analysed_ratings(run, condition))
    by_prompt = stimuli.set_index("prompt_id")
    rows, ties = [], 0
    for pid, g in pairs.groupby("prompt_id", sort=False):
        pid = str(pid)
        if pid not in by_prompt.index:
            continue
        m0, m1 = float(g["r0"].mean()), float(g["r1"].mean())
        if m0 == m1:
            ties += 1
            continue
        win = 0 if m0 > m1 else 1
        lose = 1 - win
        s = by_prompt.loc[pid]
        diff = (g["r0"] - g["r1"]) if win == 0 else (g["r1"] - g["r0"])
        rows.append(
            {
                "prompt_id": pid,
                "prompt": [*s["history"], {"role": "user", "content": s["prompt"]}],
                "chosen": [{"role": "assistant", "content": s[f"response_{win}"]}],
                "rejected": [{"role": "assistant", "content": s[f"response_{lose}"]}],
                "chosen_audio": s[f"audio_{win}"],
                "rejected_audio": s[f"audio_{lose}"],
                "chosen_response": win,
                "margin": abs(m0 - m1),
                "agreement": float((diff > 0).mean()),
                "n_raters": len(g),
                "mean_chosen": max(m0, m1),
                "mean_rejected": min(m0, m1),
            }
        )
    cols = [
        "prompt_id", "prompt", "chosen", "rejected", "chosen_audio", "rejected_audio", "chosen_response",
        "margin", "agreement", "n_raters", "mean_chosen", "mean_rejected",
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=cols), ties


def item_reliability_split(run: RunTables) -> pd.DataFrame:
    """Per prompt and condition the raters' agreement (see the module docstring)."""
    rows = []
    for condition in sorted(run.ratings["condition"].dropna().astype(str).unique()):
        pairs = _pairs(analysed_ratings(run, condition))
        for pid, g in pairs.groupby("prompt_id", sort=True):
            d = g["r1"] - g["r0"]
            n1, n0 = int((d > 0).sum()), int((d < 0).sum())
            rows.append(
                {
                    "prompt_id": str(pid),
                    "condition": condition,
                    "n_raters": len(g),
                    "mean_0": float(g["r0"].mean()),
                    "mean_1": float(g["r1"].mean()),
                    "sd_0": float(g["r0"].std(ddof=1)) if len(g) > 1 else None,
                    "sd_1": float(g["r1"].std(ddof=1)) if len(g) > 1 else None,
                    "mean_diff": float(d.mean()),
                    "sd_diff": float(d.std(ddof=1)) if len(g) > 1 else None,
                    "n_prefer_0": n0,
                    "n_prefer_1": n1,
                    "n_tied": int((d == 0).sum()),
                    "majority_share": max(n0, n1) / len(g),
                }
            )
    return pd.DataFrame(rows)


def _text_cells(frames: Mapping[str, pd.DataFrame]) -> dict[str, pd.Series]:
    """{"split.column": its cells as text} of every text-like column but the (pseudonymous) ids and the audio."""
    return {
        f"{name}.{c}": df[c].dropna().astype(str)
        for name, df in frames.items()
        for c in df.columns
        if df[c].dtype == object and c != "participant_id" and c not in AUDIO_COLUMNS.get(name, ())
    }


def build_splits(run: RunTables, opts: PublishOptions, audio: Mapping[str, dict[str, Any]] | None = None) -> Splits:
    """Every split (:data:`SPLITS`) of the published dataset, identifiers removed (module docstring).

    Args:
        run: the run's tables (:func:`read_results`).
        opts: the ``publish`` options; ``opts.salt`` must be set (the caller draws a random one otherwise).
        audio: clip_id -> audio cell (default :func:`audio_cells`).

    Raises:
        PublishError: a table lacks a needed column or a clip its WAV.
    """
    if not opts.salt:
        raise ValueError("build_splits needs a salt (PublishOptions.salt)")
    audio = audio if audio is not None else audio_cells(run)
    originals = set(run.ratings["participant_id"].astype(str)) | set(run.participants["participant_id"].astype(str))
    if "participant_id" in run.trials.columns:
        originals |= set(run.trials["participant_id"].astype(str))
    ids = pseudonyms(originals, opts.salt)
    out = Splits({})
    stim = stimuli_split(run, audio)
    out.frames["stimuli"] = stim
    out.frames["ratings"] = ratings_split(run, ids, opts)
    out.frames["participants"] = participants_split(run, ids)
    for condition in PAPER_COLUMN_ORDER:
        prefs, ties = preferences_split(run, condition, stim)
        out.frames[f"preferences_{condition}"] = prefs
        out.ties[condition] = ties
    out.frames["item_reliability"] = item_reliability_split(run)
    for name in ("ratings", "participants"):
        df = out.frames[name]
        drop = identifier_columns([c for c in df.columns if c != "participant_id"], opts.drop_fields)
        drop += [c for c in identifying_columns(df, (*FREE_TEXT, *KEY_COLUMNS)) if c not in drop]
        if drop:
            out.frames[name] = df.drop(columns=drop)
            out.dropped += [f"{name}.{c}" for c in drop]
    leaks = find_leaks(_text_cells(out.frames), [i for i in originals if len(i) >= 8])
    if leaks:
        raise PublishError("a participant id would be published: " + "; ".join(leaks[:5]))
    return out
