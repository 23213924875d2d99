"""Every analysis on degenerate data: a clear error or a documented NaN with its reason, never a crash.

The sweep runs each analysis of the registry (and the ICC table) on a small simulated study bent
into one degenerate shape at a time:

- ``one_rater``: a single participant in the audio condition;
- ``constant``: every rating the same value;
- ``single_rating_clip``: one clip rated by one participant only;
- ``all_ties``: every trial a tie with equal ratings for the two responses.

Acceptable outcomes: the analysis returns tables, and every table that holds a NaN also says why
(a ``note``/``reason``-like column or a non-empty text cell on that row); or it raises
``ValueError`` whose message names what is wrong. Any other exception (KeyError, IndexError,
ZeroDivisionError, LinAlgError, ...) is a crash trace and fails the test.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from modprefs.ratings.simulate import simulate_ratings
from modprefs.stats.reliability.icc_ci import DEFAULT_CI_METHOD, icc_with_ci
from modprefs.stats.tables.analyses import ANALYSES
from support.ratings_helpers import make_assignments, make_stimuli

matplotlib.use("Agg")

PARAMS = {
    "seed": 1,
    "n_perm": 20,
    "n_boot_alpha": 20,
    "n_perm_alpha": 20,
    "n_boot_threshold": 10,
    "ci_level": 0.95,
    "modality_terms": None,
}
REASON_WORDS = ("note", "reason", "status", "warning", "comment", "message")


def _base() -> dict[str, pd.DataFrame]:
    stimuli = make_stimuli(8, seed=2)
    assignments = make_assignments(stimuli, raters_per_condition=6, trials=6, seed=2)
    ratings, trials, participants, _ = simulate_ratings(stimuli, assignments, seed=3)
    return {
        "ratings": ratings,
        "trials": trials,
        "participants": participants,
        "stimuli": stimuli,
        "assignments": assignments,
    }


def _one_rater(t):
    audio = t["participants"].loc[t["participants"]["condition"] == "audio", "participant_id"]
    drop = set(audio.iloc[1:])
    return {k: (v[~v["participant_id"].isin(drop)] if "participant_id" in v.columns else v) for k, v in t.items()}


def _constant(t):
    r = t["ratings"].copy()
    r["rating"] = 50
    return {**t, "ratings": r}


def _single_rating_clip(t):
    r = t["ratings"]
    clip = t["stimuli"]["clip_id"].iloc[0]
    rows = r.index[(r["clip_id"] == clip)]
    keep_r = r.drop(rows[1:])
    # the trial rows of the dropped ratings go too (a partly rated trial is a different defect)
    gone = r.loc[rows[1:], ["participant_id", "trial"]]
    key = pd.MultiIndex.from_frame(gone)
    tr = t["trials"]
    keep_t = tr[~pd.MultiIndex.from_frame(tr[["participant_id", "trial"]]).isin(key)]
    keep_r = keep_r[
        ~pd.MultiIndex.from_frame(keep_r[["participant_id", "trial"]]).isin(key) | (keep_r["clip_id"] == clip)
    ]
    return {**t, "ratings": keep_r, "trials": keep_t}


def _all_ties(t):
    r = t["ratings"].copy()
    r["rating"] = r.groupby(["participant_id", "trial"])["rating"].transform("first")
    tr = t["trials"].copy()
    tr["preference"] = "tie"
    return {**t, "ratings": r, "trials": tr}


SHAPES = {
    "one_rater": _one_rater,
    "constant": _constant,
    "single_rating_clip": _single_rating_clip,
    "all_ties": _all_ties,
}


def _icc(t):
    return icc_with_ci(t["ratings"], t["participants"], DEFAULT_CI_METHOD, n_boot=20, seed=1, stimuli=t["stimuli"])


def _nan_rows_explained(name: str, table: pd.DataFrame) -> list[str]:
    """Rows with a NaN number and no text saying why."""
    problems = []
    numeric = table.select_dtypes(include=[np.number])
    if numeric.empty:
        return problems
    text_cols = [c for c in table.columns if c not in numeric.columns]
    reason_cols = [c for c in table.columns if any(w in str(c).lower() for w in REASON_WORDS)]
    for idx in table.index[numeric.isna().any(axis=1)]:
        cells = reason_cols or text_cols
        explained = any(isinstance(table.at[idx, c], str) and table.at[idx, c].strip() for c in cells)
        if not explained and not table.attrs.get("note"):
            problems.append(
                f"{name} row {idx}: NaN in {list(numeric.columns[numeric.loc[idx].isna()])} without a reason"
            )
    return problems


@pytest.fixture(scope="module")
def base():
    return _base()


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("analysis", sorted(ANALYSES) + ["icc_table", "table4_permutation"])
def test_degenerate_input_gives_clear_error_or_explained_nan(base, shape, analysis, tmp_path):
    params = dict(PARAMS)
    if analysis.startswith("table4"):  # both ICC-difference tests (stats.icc_test)
        params["icc_test"] = "permutation" if analysis == "table4_permutation" else "jackknife"
        analysis = "table4"
    tables = SHAPES[shape]({k: v.copy() for k, v in base.items()})
    if analysis in ("raters_needed", "table4"):
        tables["icc"] = _icc(tables)
    if analysis in ("table1", "table3", "justifications") and shape in ("constant", "all_ties"):
        pass  # these do not read ratings, but must still run
    try:
        if analysis == "icc_table":
            results = {"icc": _icc(tables)}
            figures = {}
        else:
            if analysis == "justifications":
                from pathlib import Path

                params["modality_terms"] = str(
                    Path(__file__).resolve().parents[3] / "resources/analysis/modality_terms.txt"
                )
            out = ANALYSES[analysis](tables, params)
            results, figures = out.tables, out.figures
    except ValueError as err:
        assert len(str(err)) > 15, f"{analysis}/{shape}: uninformative error {err!r}"
        return
    problems = [p for name, table in results.items() for p in _nan_rows_explained(name, table)]
    assert not problems, problems
    for name, draw in figures.items():
        draw(str(tmp_path / f"{name}.png"))
