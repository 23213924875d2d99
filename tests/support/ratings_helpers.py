"""Small balanced designs for the ratings tests (the real design lives in modprefs.study.design)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def make_stimuli(n_prompts: int = 12, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_prompts):
        pid = f"pr{i:02d}"
        stratum = "long_diff" if i < n_prompts // 4 else "other"
        for r in (0, 1):
            n = int(rng.integers(80, 1200))
            rows.append(
                {
                    "prompt_id": pid,
                    "clip_id": f"{pid}_{r}",
                    "response": r,
                    "stratum": stratum,
                    "n_chars": n,
                    "n_chars_spoken": n,
                    "duration_s": round(n / 15, 2),
                    "model_name": "m",
                    "prism_score": 60,
                    "history_chars": 0,
                    "history_turns": 0,
                }
            )
    return pd.DataFrame(rows)


def make_assignments(
    stimuli: pd.DataFrame, raters_per_condition: int = 6, trials: int = 6, seed: int = 0
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    prompts = list(dict.fromkeys(stimuli["prompt_id"]))
    rows = []
    n = 0
    for cond in ("text", "audio"):
        for j in range(raters_per_condition):
            n += 1
            pid = f"P{n:04d}"
            rows.append((pid, cond, 0, "attn", j % 2))
            chosen = [prompts[(j * trials + t) % len(prompts)] for t in range(trials)]
            for t, pr in enumerate(rng.permutation(chosen)):
                rows.append((pid, cond, t + 1, str(pr), (j + t) % 2))
    return pd.DataFrame(rows, columns=["participant_id", "condition", "trial", "prompt_id", "first_clip"])


def write_tables(directory: Path, ratings: pd.DataFrame, trials: pd.DataFrame, participants: pd.DataFrame) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    ratings.to_csv(directory / "ratings.csv", index=False)
    trials.to_csv(directory / "trials.csv", index=False)
    participants.to_csv(directory / "participants.csv", index=False)
