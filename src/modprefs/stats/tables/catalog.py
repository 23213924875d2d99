"""What each statistics analysis writes: its tables and figures, declared once.

:mod:`modprefs.stats.tables.analyses` computes them, ``rules/stats.smk`` (through ``analysis_outputs`` in
``rules/common.smk``) asks for them as ``results/stats/tables/<table>.csv|.md`` and
``results/stats/figures/<figure>.png``, and ``modprefs stats`` writes the same files. This module imports
nothing heavy, because the Snakefile reads it every time it is parsed (on a cluster: once per job).
"""

from __future__ import annotations

# analysis -> (tables, figures)
OUTPUTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "table1": (("table1_demographics",), ()),
    "table3": (("table3_session", "behaviour"), ()),
    "decision_thresholds": (("thresholds_gaps", "thresholds_recommendations"), ("figure2_gap_cdf",)),
    "table4": (("table4_reliability",), ()),
    "raters_needed": (("raters_needed",), ("figure4_icc_by_k",)),
    "cross_modality": (("cross_modality_agreement", "cross_modality_binomial"), ("figure3_agreement",)),
    "justifications": (("justifications", "justifications_counts"), ()),
    "table2": (("table2_lmm", "practice_effects"), ()),
    "modality_effects": (("random_slope", "audio_quality", "per_prompt_icc"), ()),
    "table5": (("table5_ai_human", "table5_clips"), ("figure_ai_human",)),
    "table6": (("table6_ai_diff_icc", "table6_per_prompt"), ("figure_ai_diff_icc",)),
}
