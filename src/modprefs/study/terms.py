"""The study's fixed terms, defined once: the attention check's prompt id, the two conditions in the orders the
analyses and the paper's tables use, and the demographic questionnaire's options (the app's form, the simulated
panel and Table 1 read the same lists).

The conditions are the between-subjects modalities of the paper (§3.2.2): ``audio`` (responses heard) and ``text``
(responses read). :data:`CONDITIONS` is the analyses' order (Table 4's difference is audio - text);
:data:`PAPER_COLUMN_ORDER` is the order of the paper's Tables 1 and 3 and of the design's condition draw.
"""

from __future__ import annotations

#: prompt id of the attention check (trial 0); its clips are ``attn_0`` and ``attn_1``
ATTENTION_PROMPT = "attn"
#: the attention check's clip ids: response 0 (coherent) and 1 (nonsensical)
ATTENTION_CLIPS: tuple[str, str] = (f"{ATTENTION_PROMPT}_0", f"{ATTENTION_PROMPT}_1")
#: the conditions in the analyses' order (audio first: Table 4's difference is audio - text)
CONDITIONS: tuple[str, str] = ("audio", "text")
#: the conditions in the paper's column order (Tables 1 and 3) and the design's
PAPER_COLUMN_ORDER: tuple[str, str] = ("text", "audio")

# ---- the demographic questionnaire (paper §3.2.3; the app's form, the simulated panel, Table 1) -----------------
EDUCATION_LEVELS: tuple[str, ...] = (
    "Less than high school",
    "High school diploma or GED",
    "Some college, no degree",
    "Associate degree",
    "Bachelor's degree",
    "Master's degree",
    "Doctoral or professional degree",
)
#: Table 1's "Bachelor's+": a Bachelor's, Master's or Doctoral/professional degree
BACHELOR_PLUS: tuple[str, ...] = EDUCATION_LEVELS[4:]
GENDERS: tuple[str, ...] = ("Woman", "Man", "Non-binary", "Prefer not to say")
RACES: tuple[str, ...] = (
    "White",
    "Black or African American",
    "Asian",
    "American Indian or Alaska Native",
    "Native Hawaiian or Other Pacific Islander",
    "Multiracial",
    "Other",
)
EMPLOYMENT: tuple[str, ...] = (
    "Full-time",
    "Part-time",
    "Self-employed",
    "Unemployed",
    "Student",
    "Retired",
    "Homemaker",
    "Other",
)
ENGLISH_PROFICIENCY: tuple[str, ...] = ("Basic", "Intermediate", "Advanced", "Fluent")
