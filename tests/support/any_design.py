"""A small complete study on any rating scale (every column of the workflow's schemas) and its judges' ratings,
written as the files `modprefs stats` reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def any_study(
    n_prompts: int = 8, raters: int = 4, lo: int = 1, hi: int = 100, seed: int = 0
) -> dict[str, pd.DataFrame]:
    """A complete study (every column of the workflow's schemas) with ratings on lo..hi."""
    rng = np.random.default_rng(seed)
    span = hi - lo
    prompts = [f"p{i}" for i in range(n_prompts)]
    stimuli = pd.DataFrame(
        [
            {
                "clip_id": f"{p}_{r}",
                "prompt_id": p,
                "response": r,
                "n_chars": int(rng.integers(80, 900)),
                "prism_score": 60,
            }
            for p in prompts
            for r in (0, 1)
        ]
    )
    quality = dict(zip(stimuli["clip_id"], rng.normal(0, span / 5, len(stimuli))))
    ratings, trials, participants = [], [], []

    def on_scale(x: float) -> int:
        return int(np.clip(round(lo + span / 2 + x), lo, hi))

    for j in range(2 * raters):
        pid, cond = f"P{j:02d}", ("text", "audio")[j % 2]
        bias = rng.normal(0, span / 10)
        participants.append(
            {"participant_id": pid, "condition": cond, "age": 30 + j, "native_english": True, "passed_attention": True}
            | {"completed": True, "session_minutes": 20.0 + j, "difficulty": 1 + j % 5}
        )
        order = [("attn", 0), *[(p, t + 1) for t, p in enumerate(np.roll(prompts, j))]]
        for prompt, trial in order:
            r = {c: on_scale(quality.get(f"{prompt}_{c}", 0.0) + bias + rng.normal(0, span / 8)) for c in (0, 1)}
            first = (j + trial) % 2
            pref = "0" if prompt == "attn" else ("tie" if abs(r[0] - r[1]) <= span / 20 else str(int(r[1] > r[0])))
            for c in (0, 1):
                ratings.append(
                    {"participant_id": pid, "condition": cond, "prompt_id": prompt, "clip_id": f"{prompt}_{c}"}
                    | {"trial": trial, "presented_first": c == first, "rating": r[c]}
                    | {"audio_quality": on_scale(rng.normal(0, span / 6)) if cond == "audio" else None}
                )
            audio = cond == "audio"
            trials.append(
                {"participant_id": pid, "prompt_id": prompt, "trial": trial, "preference": pref}
                | {"justification": "clear and helpful answer" if trial % 2 else "the voice was natural"}
                | {"decision_time_s": float(rng.uniform(5, 60)), "rating_changes": int(rng.integers(0, 3))}
                | {"deliberation_time_s": float(rng.uniform(1, 9)) if audio else None}
                | {"replays_0": int(rng.integers(0, 2)) if audio else None}
                | {
                    "replays_1": int(rng.integers(0, 2)) if audio else None,
                    "relistened_first": audio and trial % 3 == 0,
                }
            )
    return {
        "ratings": pd.DataFrame(ratings),
        "trials": pd.DataFrame(trials),
        "participants": pd.DataFrame(participants),
        "stimuli": stimuli,
    }


def write_any_study(root: Path, study: dict[str, pd.DataFrame]) -> tuple[Path, Path]:
    """The study as a ratings folder and a clips file under ``root``."""
    src = root / "collected"
    src.mkdir(parents=True, exist_ok=True)
    for name in ("ratings", "trials", "participants"):
        if name in study:
            study[name].to_csv(src / f"{name}.csv", index=False)
    study["stimuli"].to_csv(root / "clips.csv", index=False)
    return src, root / "clips.csv"


def any_judges(stimuli: pd.DataFrame) -> pd.DataFrame:
    rows = [
        {"judge": f"j-{m}", "backend": "b", "model": "m", "prompt_version": "v1", "modality": m}
        | {"kind": "response_quality", "prompt_id": c.prompt_id, "clip_id": c.clip_id, "sample": 0}
        | {"rating": 1 + (37 * i) % 100, "status": "ok", "reason": ""}
        for i, c in enumerate(stimuli.itertuples())
        for m in ("text", "audio")
    ]
    return pd.DataFrame(rows)
