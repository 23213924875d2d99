"""Load a study into the app's database: assignments + stimuli + conversations + audio manifest.

Inputs (the workflow's artifacts; docs/CONTRACTS.md):

* ``assignments.csv``: participant_id, condition, trial (0 = attention check), prompt_id, first_clip.
  Each assigned participant id becomes a *slot*.
* ``stimuli.csv``: prompt_id, clip_id, response (the prompts and clips that may be assigned).
* the conversations: ``prompts.csv`` (prompt_id -> conversation_id) with ``conversations.parquet``
  (history, prompt, text_0, text_1), or one ``conversations`` table already keyed by prompt_id.
* ``attention_check.json`` (prompt ``attn``; response 0 coherent, 1 nonsensical).
* ``manifest.csv`` (clip_id, path[, duration_s, sample_rate, lufs_after]): the audio of every clip, the
  attention check's included. Needed when any slot is in the audio condition; relative paths are
  resolved against ``base_dir`` (the workflow's root), then beside the manifest. Every WAV that is
  loaded is decoded (soundfile) and checked against its manifest row (:func:`check_wav`): an empty,
  undecodable or silent-length file is refused, and so is one that is not mono, whose sample rate is
  not the manifest's ``sample_rate``, whose duration differs from ``duration_s`` by more than
  :data:`DURATION_TOLERANCE_S`, or whose integrated loudness (ITU-R BS.1770-4,
  :func:`modprefs.speech.loudness.integrated_loudness`) differs from ``lufs_after`` by more than
  :data:`LOUDNESS_TOLERANCE_LU`; each refusal names the clip, the file and what differs. A column
  that is absent, or a value that is empty or not finite, is not checked. The decoded duration is
  stored (the server's listening check uses it).

Slots are ordered so that arriving participants fill the two conditions alternately, and within a
condition in the design's participant order (which keeps per-prompt rater counts within one of each
other after every participant; modprefs.study.design).
"""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import func, inspect, select
from sqlalchemy.exc import SQLAlchemyError

from modprefs.app.db import Database, make_sqlite_folder, sqlite_path
from modprefs.app.models import SCHEMA_VERSION, Base, Clip, Meta, Participant, Prompt, Slot, SlotTrial
from modprefs.app.texts import StudyTexts
from modprefs.errors import UserInputError
from modprefs.study.terms import ATTENTION_PROMPT as ATTENTION
from modprefs.study.terms import CONDITIONS

# A rendered clip's manifest duration is its sample count / rate, written in full: a faithful file matches
# it to ~1e-12 s. 1 ms still accepts a duration rounded to 3 decimals and is at least one sample at any
# rate from 1 kHz; a clip cut or padded by more is refused.
DURATION_TOLERANCE_S = 0.001
# The manifest's lufs_after is measured on the float audio before the 16-bit WAV is written; the same
# meter reads the file within ~0.01 LU of it. EBU R 128's tolerance for a normalised programme is 0.5 LU.
LOUDNESS_TOLERANCE_LU = 0.5
DEFAULT_META = {
    "schema_version": SCHEMA_VERSION,
    "headphone_seed": "1",
    "abandon_minutes": "30",
    "entry": "any",  # any | prolific | invite
    "screenout_code": "",
    "attention_fail_code": "",
    "prolific_complete_url": "https://app.prolific.com/submissions/complete?cc={code}",
    "study_title": "Rating AI assistant responses",
}


class StudyLoadError(UserInputError):
    """A study input that cannot be loaded; the message names the file (and row or clip)."""


@dataclass
class StudyFiles:
    assignments: Path
    stimuli: Path
    conversations: Path
    attention_check: Path
    prompts: Path | None = None
    manifest: Path | None = None
    base_dir: Path | None = None

    @classmethod
    def from_results(cls, results: Path, attention_check: Path, base_dir: Path | None = None) -> StudyFiles:
        """The workflow's default locations under ``results``."""
        return cls(
            assignments=results / "study/assignments.csv",
            stimuli=results / "study/stimuli.csv",
            conversations=results / "data/conversations.parquet",
            prompts=results / "sampling/final_prompts.csv",
            manifest=results / "audio/manifest.csv",
            attention_check=attention_check,
            base_dir=base_dir or results.resolve().parent,
        )


def _read_table(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise StudyLoadError(f"{path}: file not found")
    try:
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise StudyLoadError(
            f"{path}: cannot be read as a {'Parquet' if path.suffix == '.parquet' else 'CSV'} "
            f"table ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None


def check_wav(
    path: Path, expected_s: float | None, *, sample_rate: int | None = None, lufs: float | None = None
) -> tuple[float | None, str | None]:
    """Decode ``path`` with soundfile: (duration in seconds, None) or (None, the problems, "; "-joined).

    The file must be mono. From the manifest (``None``: not checked): ``expected_s``, its duration
    (seconds; a decoded duration more than :data:`DURATION_TOLERANCE_S` away is a problem);
    ``sample_rate`` (Hz, must match exactly); ``lufs``, its ``lufs_after`` (LUFS; the file's BS.1770-4
    integrated loudness more than :data:`LOUDNESS_TOLERANCE_LU` away is a problem).
    """
    import soundfile as sf

    if path.stat().st_size == 0:
        return None, "is empty (0 bytes)"
    try:
        data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises LibsndfileError/RuntimeError/TypeError for non-audio bytes
        return None, f"cannot be decoded as audio ({type(exc).__name__}: {str(exc).strip()[:200]})"
    if len(data) == 0 or sr <= 0:
        return None, "holds no audio samples"
    duration = len(data) / float(sr)
    problems = []
    if data.shape[1] != 1:
        problems.append(f"has {data.shape[1]} channels but the manifest's clips are mono")
    if sample_rate is not None and sr != sample_rate:
        problems.append(f"has sample rate {sr} Hz but the manifest says {sample_rate} Hz")
    if expected_s is not None and abs(duration - expected_s) > DURATION_TOLERANCE_S:
        problems.append(
            f"lasts {duration:.4f} s but the manifest says {expected_s:.4f} s "
            f"(more than {DURATION_TOLERANCE_S} s apart)"
        )
    if lufs is not None and data.shape[1] == 1:
        from modprefs.speech.loudness import integrated_loudness

        measured = integrated_loudness(data[:, 0], sr)
        if not abs(measured - lufs) <= LOUDNESS_TOLERANCE_LU:
            problems.append(
                f"reads {measured:.2f} LUFS but the manifest says lufs_after {lufs:.2f} LUFS "
                f"(more than {LOUDNESS_TOLERANCE_LU} LU apart)"
            )
    return (None, "; ".join(problems)) if problems else (duration, None)


def _manifest_expectations(row: Any, manifest: Path | None) -> tuple[dict[str, Any], str | None]:
    """A manifest row's duration_s, sample_rate and lufs_after (None: absent, empty or not finite); or a problem."""
    out: dict[str, Any] = {}
    for col in ("duration_s", "sample_rate", "lufs_after"):
        raw = str(getattr(row, col, "")).strip()
        try:
            value = float(raw) if raw else None
        except ValueError:
            return {}, f"{manifest}: {col} {raw!r} is not a number"
        if value is not None and not math.isfinite(value):
            value = None
        if value is not None and col == "sample_rate":
            if not (value > 0 and value.is_integer()):
                return {}, f"{manifest}: sample_rate {raw!r} is not a positive whole number"
            value = int(value)
        out[col] = value
    return out, None


def _history(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    out = []
    for turn in list(value if value is not None else []):
        turn = dict(turn)
        out.append({"role": str(turn["role"]), "content": str(turn["content"])})
    return out


def read_prompts(files: StudyFiles) -> dict[str, dict[str, Any]]:
    """prompt_id -> {history, prompt, text_0, text_1}, the attention check included."""
    conv = _read_table(files.conversations)
    need = {"prompt", "text_0", "text_1", "history"}
    missing = need - set(conv.columns)
    if missing:
        raise StudyLoadError(f"{files.conversations}: missing column(s) {sorted(missing)}")
    if "prompt_id" not in conv.columns:
        if files.prompts is None:
            raise StudyLoadError(
                f"{files.conversations} has no prompt_id column: give the prompts table (prompt_id, conversation_id)"
            )
        prompts = _read_table(files.prompts)
        conv = conv.assign(conversation_id=conv["conversation_id"].astype(str))
        conv = prompts[["prompt_id", "conversation_id"]].merge(conv, on="conversation_id", how="left")
    out: dict[str, dict[str, Any]] = {}
    for row in conv.itertuples(index=False):
        if not isinstance(row.prompt, str):
            continue
        out[str(row.prompt_id)] = {
            "history": _history(row.history),
            "prompt": row.prompt,
            "text_0": str(row.text_0),
            "text_1": str(row.text_1),
        }
    try:
        attn = json.loads(Path(files.attention_check).read_text(encoding="utf-8"))
        out[ATTENTION] = {
            "history": _history(attn.get("history", [])),
            "prompt": attn["prompt"],
            "text_0": attn["responses"][0]["text"],
            "text_1": attn["responses"][1]["text"],
        }
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        raise StudyLoadError(
            f"{files.attention_check}: not an attention check (JSON with prompt and two "
            f"responses[].text): {type(exc).__name__}: {exc}"
        ) from None
    return out


def _resolve_audio(path: str, files: StudyFiles, clip_id: str) -> Path | None:
    candidates = [Path(path)]
    if not Path(path).is_absolute():
        candidates = [(files.base_dir or Path.cwd()) / path]
        if files.manifest is not None:
            candidates += [files.manifest.parent / path, files.manifest.parent / "clips" / f"{clip_id}.wav"]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    return None


def _read_assignments(files: StudyFiles) -> pd.DataFrame:
    """The assignments table with its columns checked and ``trial``/``first_clip`` as integers."""
    asg = _read_table(files.assignments)
    for col in ("participant_id", "condition", "trial", "prompt_id", "first_clip"):
        if col not in asg.columns:
            raise StudyLoadError(f"{files.assignments}: missing column {col!r}")
    if asg.empty:
        raise StudyLoadError(f"{files.assignments}: no assignments (a header without rows)")
    for col in ("trial", "first_clip"):
        bad = ~asg[col].astype(str).str.fullmatch(r"\d+")
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise StudyLoadError(
                f"{files.assignments}: row {i + 2}, column {col}: {asg[col].iloc[i]!r} is not a non-negative integer"
            )
        asg[col] = asg[col].astype(int)
    return asg


def _assignment_problems(asg: pd.DataFrame, known: set[str], prompts: dict[str, dict[str, Any]]) -> list[str]:
    """Each assignment row's problems, then each participant's (one condition, trials 0..n)."""
    problems: list[str] = []
    for row in asg.itertuples(index=False):
        if row.condition not in CONDITIONS:
            problems.append(f"assignments: {row.participant_id} trial {row.trial}: condition {row.condition!r}")
        if row.prompt_id not in known:
            problems.append(
                f"assignments: {row.participant_id} trial {row.trial}: prompt {row.prompt_id!r} is not in stimuli.csv"
            )
        elif row.prompt_id not in prompts:
            problems.append(f"prompt {row.prompt_id!r}: no conversation (history, prompt, responses)")
        if (row.trial == 0) != (row.prompt_id == ATTENTION):
            problems.append(f"assignments: {row.participant_id}: the attention check must be trial 0")
        if row.first_clip not in (0, 1):
            problems.append(f"assignments: {row.participant_id} trial {row.trial}: first_clip {row.first_clip}")
    for pid, grp in asg.groupby("participant_id"):
        if grp["condition"].nunique() != 1:
            problems.append(f"assignments: participant {pid} has more than one condition")
        trials = sorted(grp["trial"])
        if trials != list(range(len(trials))):
            problems.append(f"assignments: participant {pid}: trials {trials} are not 0..n")
    return problems


def _attach_audio(asg: pd.DataFrame, clips: dict[str, dict[str, Any]], files: StudyFiles, problems: list[str]) -> None:
    """Fill each clip's ``path`` and ``duration_s`` from the manifest; append what is wrong to ``problems``."""
    if files.manifest is None or not Path(files.manifest).is_file():
        problems.append("the audio condition needs the audio manifest (manifest.csv)")
        return
    man = _read_table(files.manifest)
    for col in ("clip_id", "path"):
        if col not in man.columns:
            raise StudyLoadError(f"{files.manifest}: missing column {col!r}")
    by_clip = {str(r.clip_id): r for r in man.itertuples(index=False)}
    audio_prompts = set(asg.loc[asg["condition"] == "audio", "prompt_id"])
    for cid, c in clips.items():
        row = by_clip.get(cid)
        if row is None:
            if c["prompt_id"] in audio_prompts:
                problems.append(f"clip {cid}: not in the audio manifest")
            continue
        path = _resolve_audio(str(row.path), files, cid)
        if path is None:
            if c["prompt_id"] in audio_prompts:
                problems.append(f"clip {cid}: audio file {row.path!r} not found")
            continue
        expected, problem = _manifest_expectations(row, files.manifest)
        if problem is not None:
            problems.append(f"clip {cid}: {problem}")
            continue
        duration, problem = check_wav(
            path, expected["duration_s"], sample_rate=expected["sample_rate"], lufs=expected["lufs_after"]
        )
        if problem is not None:
            problems.append(f"clip {cid}: audio file {path} {problem}")
            continue
        c["path"], c["duration_s"] = str(path), duration


def read_study(files: StudyFiles) -> dict[str, Any]:
    """Read and cross-check every input; every problem is listed before giving up."""
    asg = _read_assignments(files)
    stim = _read_table(files.stimuli)
    if "prompt_id" not in stim.columns:
        raise StudyLoadError(f"{files.stimuli}: missing column 'prompt_id'")
    prompts = read_prompts(files)
    known = set(stim["prompt_id"]) | {ATTENTION}
    problems = _assignment_problems(asg, known, prompts)
    used_prompts = set(asg["prompt_id"])
    clips: dict[str, dict[str, Any]] = {}
    for p in used_prompts:
        for r in (0, 1):
            clips[f"{p}_{r}"] = {"clip_id": f"{p}_{r}", "prompt_id": p, "response": r, "path": None, "duration_s": None}
    if (asg["condition"] == "audio").any():
        _attach_audio(asg, clips, files, problems)
    if problems:
        shown = "\n".join(f"  - {p}" for p in problems[:50])
        raise StudyLoadError(f"{len(problems)} problem(s) with the study:\n{shown}")
    return {"assignments": asg, "prompts": {p: prompts[p] for p in used_prompts}, "clips": clips}


def slot_order(asg: pd.DataFrame) -> list[tuple[str, str]]:
    """(participant_id, condition) in the order arriving participants take them: conditions alternate."""
    first = asg.drop_duplicates("participant_id")[["participant_id", "condition"]]
    cond_rank = {c: i for i, c in enumerate(dict.fromkeys(first["condition"]))}
    ranked = []
    for cond, grp in first.groupby("condition", sort=False):
        for k, pid in enumerate(grp["participant_id"]):
            ranked.append((k, cond_rank[cond], pid, cond))
    return [(pid, cond) for _, _, pid, cond in sorted(ranked)]


def load_study(
    db: Database,
    files: StudyFiles,
    *,
    replace: bool = False,
    force: bool = False,
    meta: dict[str, str] | None = None,
    texts: StudyTexts | None = None,
) -> dict[str, int]:
    """Create the tables and load the study (see the module docstring); returns counts.

    A database that already holds a study is refused unless ``replace``; one that already holds
    participants' data is refused unless ``force`` too (their data would be deleted). The study texts
    (consent, instructions, debrief: ``texts``, the packaged ones by default) are filled and rendered with
    the design's duration (:mod:`.texts`) and stored in app_meta.
    """
    study = read_study(files)  # every input checked before the database is touched
    asg = study["assignments"]
    given = {**DEFAULT_META, **(meta or {})}
    per_participant = int(asg.groupby("participant_id").size().max()) if len(asg) else 0
    rendered = (texts or StudyTexts()).render(
        per_participant, practice=given.get("practice", "on") == "on", title=given["study_title"]
    )
    path = sqlite_path(db.url)
    if path is not None:
        make_sqlite_folder(path)
    try:
        tables = set(inspect(db.engine).get_table_names())
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StudyLoadError(f"cannot open the database {db.url}: {reason}") from None
    with db.transaction() as s:
        n_slots = s.scalar(select(func.count()).select_from(Slot)) if "app_slots" in tables else 0
        n_people = s.scalar(select(func.count()).select_from(Participant)) if "app_participants" in tables else 0
        if n_slots and not replace:
            raise StudyLoadError(f"the database already holds a study ({n_slots} slots); pass --replace to load anew")
        if n_people and not force:
            raise StudyLoadError(
                f"the database holds {n_people} participant session(s); --replace --force deletes them (export first)"
            )
    if replace:
        Base.metadata.drop_all(db.engine)
    Base.metadata.create_all(db.engine)
    with db.transaction() as s:
        values = {**DEFAULT_META, "completion_code": secrets.token_hex(4).upper(), **rendered, **(meta or {})}
        for k, v in values.items():
            s.merge(Meta(key=k, value=str(v)))
        for pid, p in sorted(study["prompts"].items()):
            s.add(
                Prompt(
                    prompt_id=pid,
                    history_json=json.dumps(p["history"]),
                    prompt=p["prompt"],
                    text_0=p["text_0"],
                    text_1=p["text_1"],
                )
            )
        s.flush()
        for c in study["clips"].values():
            s.add(Clip(**c))
        for pos, (pid, cond) in enumerate(slot_order(asg)):
            s.add(Slot(slot_id=pid, condition=cond, position=pos, status="open", issues=0))
        s.flush()
        for row in asg.itertuples(index=False):
            s.add(
                SlotTrial(
                    slot_id=row.participant_id,
                    trial=int(row.trial),
                    prompt_id=row.prompt_id,
                    first_clip=int(row.first_clip),
                )
            )
    return {
        "slots": int(asg["participant_id"].nunique()),
        "trials": int(len(asg)),
        "prompts": len(study["prompts"]),
        "clips": len(study["clips"]),
    }
