"""A tiny study for the app tests: prompts, conversations, 1-2 s sine-tone clips, assignments."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

from modprefs.app.db import Database
from modprefs.app.loader import StudyFiles, load_study
from modprefs.study.design import make_assignments

ROOT = Path(__file__).resolve().parents[2]
ATTENTION = json.loads((ROOT / "resources/attention_check.json").read_text(encoding="utf-8"))
SR = 16000


@dataclass
class Study:
    dir: Path
    files: StudyFiles
    stimuli: pd.DataFrame
    assignments: pd.DataFrame
    durations: dict[str, float]


def tone(path: Path, seconds: float, freq: float) -> None:
    t = np.arange(int(SR * seconds)) / SR
    fade = np.minimum(1.0, np.minimum(t, seconds - t) / 0.02)
    sf.write(path, (0.2 * np.sin(2 * np.pi * freq * t) * fade).astype(np.float32), SR, subtype="PCM_16")


def make_study(
    directory: Path,
    n_prompts: int = 6,
    raters_per_condition: int = 2,
    trials: int = 2,
    seed: int = 7,
    durations: tuple[float, float] = (1.0, 1.6),
) -> Study:
    """Write every input of ``modprefs app load`` under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    clips_dir = directory / "clips"
    clips_dir.mkdir(exist_ok=True)
    rng = np.random.default_rng(seed)
    conv_rows, prompt_rows, stim_rows, man_rows = [], [], [], []
    durs: dict[str, float] = {}
    for i in range(n_prompts):
        pid = f"pr{i:02d}"
        history = (
            []
            if i % 2 == 0
            else [
                {"role": "user", "content": f"Earlier question {i}?"},
                {"role": "model", "content": f"An earlier answer {i}."},
            ]
        )
        texts = [
            f"Response zero to prompt {i}: " + "lorem ipsum " * (3 + i),
            f"Response one to prompt {i}: " + "dolor sit amet " * (2 + 2 * i),
        ]
        conv_rows.append(
            {
                "conversation_id": f"conv-{i}",
                "conversation_type": "unguided",
                "turn": len(history) // 2,
                "history": history,
                "prompt": f"What about topic {i}?",
                "text_0": texts[0],
                "text_1": texts[1],
            }
        )
        prompt_rows.append({"prompt_id": pid, "conversation_id": f"conv-{i}", "stratum": "other"})
        for r in (0, 1):
            cid = f"{pid}_{r}"
            stim_rows.append(
                {
                    "prompt_id": pid,
                    "clip_id": cid,
                    "response": r,
                    "stratum": "other",
                    "n_chars": len(texts[r]),
                    "n_chars_spoken": len(texts[r]),
                    "duration_s": 1.0,
                    "model_name": "m",
                    "prism_score": 50,
                    "history_chars": 0,
                    "history_turns": len(history) // 2,
                }
            )
    for cid in ["attn_0", "attn_1"] + [r["clip_id"] for r in stim_rows]:
        d = float(np.round(rng.uniform(*durations), 2))
        durs[cid] = d
        tone(clips_dir / f"{cid}.wav", d, 330.0 + 110.0 * int(cid[-1]))
        man_rows.append(
            {
                "clip_id": cid,
                "prompt_id": cid.rsplit("_", 1)[0],
                "response": int(cid[-1]),
                "path": f"clips/{cid}.wav",
                "sample_rate": SR,
                "duration_s": d,
            }
        )
    pd.DataFrame(conv_rows).to_parquet(directory / "conversations.parquet")
    pd.DataFrame(prompt_rows).to_csv(directory / "prompts.csv", index=False)
    stimuli = pd.DataFrame(stim_rows)
    stimuli.to_csv(directory / "stimuli.csv", index=False)
    pd.DataFrame(man_rows).to_csv(directory / "manifest.csv", index=False)
    asg = make_assignments([f"pr{i:02d}" for i in range(n_prompts)], raters_per_condition, trials, seed)
    asg.to_csv(directory / "assignments.csv", index=False)
    files = StudyFiles(
        assignments=directory / "assignments.csv",
        stimuli=directory / "stimuli.csv",
        conversations=directory / "conversations.parquet",
        prompts=directory / "prompts.csv",
        manifest=directory / "manifest.csv",
        attention_check=ROOT / "resources/attention_check.json",
        base_dir=directory,
    )
    return Study(directory, files, stimuli, asg, durs)


# The steps before the first trial that `modprefs app load` turns on by default (the calibration and the
# headphone check of the audio condition, the instructions and the practice trial): off in the tests that
# are about something else; the tests of those steps turn them on (``load(..., practice="on")``) or load
# through the CLI, whose defaults they check.
STEPS_OFF = {"headphone_check": "off", "calibration": "off", "practice": "off"}


def load(study: Study, url: str, **meta: str) -> Database:
    db = Database(url)
    values = {"completion_code": "DONE1234", **STEPS_OFF, **meta}
    load_study(db, study.files, replace=True, force=True, meta=values)
    return db
