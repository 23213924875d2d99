"""The simulated participants table: the questionnaire's demographics (:mod:`modprefs.ratings.simulate`).

Participants
------------
Demographics by condition match Table 1 (age M/SD, woman %, White %, Hispanic/Latino %, native
English %, bachelor's or above %); the other §3.2.1 fields are drawn from fixed lists.
session_minutes = sum of the participant's trial times (attention check included; that trial's
non-listening time is scaled by ``attention_time_factor``, a quick obvious judgement)/60 + a
lognormal overhead with mean ``session_overhead_min_c`` and CV ``session_overhead_cv``
(instructions, questionnaire). Table 3 (completers): 27.0 (13.3) text, 47.3 (12.4) audio.
difficulty (1–5, completers only) from
``difficulty_probs_c`` (Table 3: 2.45/0.90 text, 2.50/0.96 audio).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from modprefs.ratings.schema import PARTICIPANTS_COLUMNS
from modprefs.ratings.simulation.latent import DoneTrials, Panel
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.study.terms import (
    BACHELOR_PLUS,
    EDUCATION_LEVELS,
    EMPLOYMENT,
    ENGLISH_PROFICIENCY,
    GENDERS,
    RACES,
)

TIMEZONES = [
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Phoenix",
    "America/Los_Angeles",
    "America/Anchorage",
    "Pacific/Honolulu",
]


OTHER_PRIMARY = ["Spanish", "Chinese", "Tagalog", "Vietnamese", "Arabic", "Korean", "Russian", "Hindi"]


OTHER_LANGUAGES = ["Spanish", "French", "German", "Chinese", "Japanese", "Italian", "Portuguese", "ASL"]


BIRTHPLACES_ABROAD = ["Mexico", "India", "Philippines", "China", "Vietnam", "Canada", "United Kingdom", "Nigeria"]


def participants_table(
    panel: Panel,
    d: DoneTrials,
    dtime: np.ndarray,
    p: SimulationParams,
    rng_part: np.random.Generator,
    rng_demo: np.random.Generator,
) -> pd.DataFrame:
    """The participants table: demographics, attention, completion, session minutes and difficulty."""
    n_part, cond, completed = panel.n_part, panel.cond, panel.completed
    session = panel.overhead + (pd.Series(dtime).groupby(d.tp).sum().reindex(range(n_part)).fillna(0).to_numpy()) / 60.0
    difficulty = (
        np.array([rng_part.choice(5, p=np.array(p.by_condition("difficulty_probs", c))) + 1 for c in cond], dtype=int)
        if n_part
        else np.zeros(0, dtype=int)
    )
    diff_col = pd.array(difficulty, dtype="Int64")
    diff_col[~completed] = pd.NA
    participants = pd.concat(
        [
            panel.part[["participant_id", "condition"]].reset_index(drop=True),
            _demographics(cond, p, rng_demo),
        ],
        axis=1,
    )
    participants["passed_attention"] = ~panel.failed
    participants["completed"] = completed
    participants["session_minutes"] = np.round(session, 2)
    participants["difficulty"] = diff_col
    participants["source"] = "simulated"
    return participants[PARTICIPANTS_COLUMNS]


def _demographics(cond: np.ndarray, p: SimulationParams, rng: np.random.Generator) -> pd.DataFrame:
    n = len(cond)

    def pc(name: str) -> np.ndarray:
        return np.where(cond == "text", getattr(p, f"{name}_text"), getattr(p, f"{name}_audio")).astype(float)

    age = np.clip(np.rint(pc("age_mean") + pc("age_sd") * rng.standard_normal(n)), 18, 90).astype(int)
    woman = rng.random(n) < pc("p_woman")
    other_gender = rng.choice(GENDERS[1:], size=n, p=[0.93, 0.05, 0.02])
    gender = np.where(woman, "Woman", other_gender)
    white = rng.random(n) < pc("p_white")
    race = np.where(white, "White", rng.choice(RACES[1:], size=n, p=[0.40, 0.25, 0.03, 0.02, 0.20, 0.10]))
    hispanic = rng.random(n) < pc("p_hispanic")
    native = rng.random(n) < pc("p_native_english")
    bach = rng.random(n) < pc("p_bachelor_plus")
    edu = np.where(
        bach,
        rng.choice(BACHELOR_PLUS, size=n, p=[0.65, 0.27, 0.08]),
        rng.choice(EDUCATION_LEVELS[:4], size=n, p=[0.04, 0.36, 0.40, 0.20]),
    )
    employment = rng.choice(EMPLOYMENT, size=n, p=[0.45, 0.15, 0.10, 0.10, 0.06, 0.06, 0.05, 0.03])
    born_abroad = rng.random(n) < np.where(native, 0.04, 0.75)
    birthplace = np.where(born_abroad, rng.choice(BIRTHPLACES_ABROAD, size=n), "United States")
    primary = np.where(native, "English", rng.choice(OTHER_PRIMARY, size=n))
    proficiency = np.where(
        native, np.array(None, dtype=object), rng.choice(ENGLISH_PROFICIENCY, size=n, p=[0.05, 0.20, 0.40, 0.35])
    )
    other: list[str | None] = []
    for is_native in native:
        if not is_native:
            other.append("English")
        elif rng.random() < 0.3:
            k = 1 + int(rng.random() < 0.25)
            other.append(";".join(sorted(rng.choice(OTHER_LANGUAGES, size=k, replace=False))))
        else:
            other.append(None)
    tz = rng.choice(TIMEZONES, size=n, p=[0.46, 0.29, 0.06, 0.03, 0.14, 0.01, 0.01])
    return pd.DataFrame(
        {
            "age": age,
            "gender": gender,
            "race": race,
            "hispanic_latino": hispanic,
            "birthplace": birthplace,
            "education": edu,
            "employment": employment,
            "country": "United States",
            "primary_language": primary,
            "native_english": native,
            "english_proficiency": proficiency,
            "other_languages": other,
            "timezone": tz,
        }
    )
