"""``modprefs stats`` on any design and any rating scale (issue 26, "run a lab's own study").

* pingouin's own ICC example (4 judges x 8 wines, scores 0..10, foreign column names, no clips table,
  no condition column): ICC(2,1) and ICC(2,k) equal ``pingouin.intraclass_corr``'s ICC2 / ICC2k, and
  every analysis of rating pairs is skipped with its reason. The ratings schema no longer requires a
  ``condition`` column: without one every rating is in one condition, named ``text``
  (:data:`modprefs.ratings.ingest.DEFAULT_CONDITION`), so the ICC row is ``text``.
* every optional column dropped, alone and together: a clean run or a named skip, never an exception;
* a 1..5 table: 0 and 6 refused with file, row and column; 1..5 accepted, thresholds in scale units,
  judges' 1..100 ratings mapped onto 1..5;
* a 0..100 slider: 0 accepted with ``--scale 0:100``, refused by the default scale with a message naming
  ``--scale``;
* designs other than the paper's pairs: a response column honoured with any clip ids, and a
  single-stimulus design with both conditions (ICC, Table 2, Table 4's ICC and continuous alpha run; the
  pair analyses and the preference alphas say why not).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from modprefs.cli import main
from modprefs.ratings.ingest import RatingsValidationError
from modprefs.scale import RatingScale, parse_scale_arg, scale_from_config
from modprefs.stats.cli import run_stats
from modprefs.stats.defaults import STATS_DEFAULTS, STATS_SCALE
from modprefs.stats.tables.ai_alignment import on_study_scale
from modprefs.stats.tables.catalog import OUTPUTS
from support.any_design import any_judges, any_study, write_any_study

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--n-boot", "0", "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0", "--n-boot-threshold", "0"]
#: the outputs built on rating pairs: skipped in any design other than the paper's pairs
PAIR_OUTPUTS = (
    "thresholds_gaps",
    "thresholds_recommendations",
    "cross_modality_agreement",
    "cross_modality_binomial",
    "random_slope",
    "per_prompt_icc",
)


def _table(out: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out / "tables" / f"{name}.csv")


def _skip_reason(out: Path, name: str) -> str | None:
    t = _table(out, name)
    return str(t["reason"].iloc[0]) if list(t.columns) == ["status", "reason"] else None


# ---- a small valid study on any scale -------------------------------------------------------------------


def _params(**over) -> dict:
    p = dict(STATS_DEFAULTS)
    p.update(n_boot=0, n_perm=0, n_boot_alpha=0, n_perm_alpha=0, n_boot_threshold=0, **over)
    p["modality_terms"] = str(ROOT / STATS_DEFAULTS["modality_terms"])
    return p


# ---- pingouin's ICC example -----------------------------------------------------------------------------
def test_pingouin_icc_example_without_clips_on_a_0_to_10_scale(tmp_path):
    """4 judges x 8 wines (pingouin's dataset, offline), foreign names, no --clips, no condition column."""
    pg = pytest.importorskip("pingouin")
    wine = pg.read_dataset("icc")
    assert list(wine.columns) == ["Wine", "Judge", "Scores"] and wine["Scores"].between(0, 10).all()
    wine.to_csv(tmp_path / "wine.csv", index=False)
    out = tmp_path / "out"
    args = ["--ratings", str(tmp_path / "wine.csv"), "--map", "participant_id=Judge,clip_id=Wine,rating=Scores"]
    proc = subprocess.run(
        [sys.executable, "-m", "modprefs.cli", "stats", *args, "--scale", "0:10", "--out", str(out), "--n-boot", "20"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    icc = _table(out, "icc").set_index("condition").loc["text"]
    ref = pg.intraclass_corr(wine, targets="Wine", raters="Judge", ratings="Scores").set_index("Type")["ICC"]
    # pingouin < 0.7 labels Shrout & Fleiss' ICC2 / ICC2k; >= 0.7 McGraw & Wong's ICC(A,1) / ICC(A,k)
    ref = ref.rename({"ICC(A,1)": "ICC2", "ICC(A,k)": "ICC2k"})
    print(f"ICC(2,1) {icc['icc_2_1']!r} vs pingouin {ref['ICC2']!r}; ICC(2,k) {icc['icc_2_k']!r} vs {ref['ICC2k']!r}")
    assert (
        icc["n_clips"] == 8
        and icc["n_participants"] == 4
        and icc["model"] == "rating ~ 1 + (1|clip_id) + (1|participant_id)"
    )
    assert math.isclose(icc["icc_2_1"], ref["ICC2"], abs_tol=1e-6), (icc["icc_2_1"], ref["ICC2"])
    assert math.isclose(icc["icc_2_k"], ref["ICC2k"], abs_tol=1e-6), (icc["icc_2_k"], ref["ICC2k"])
    assert icc["scale"] == "0-10 (step 1)"
    # complete, balanced, no covariates: the default interval is McGraw & Wong's F interval, pingouin's [.43, .93]
    from pingouin.config import _no_rounding

    with _no_rounding():
        ci = pg.intraclass_corr(wine, targets="Wine", raters="Judge", ratings="Scores").set_index("Type")["CI95"]
    ci = ci.rename({"ICC2": "ICC(A,1)", "ICC2k": "ICC(A,k)"})
    print(f"ICC(2,1) CI [{icc['icc_2_1_lo']:.6f}, {icc['icc_2_1_hi']:.6f}] vs pingouin {list(ci['ICC(A,1)'])}")
    np.testing.assert_allclose([icc["icc_2_1_lo"], icc["icc_2_1_hi"]], ci["ICC(A,1)"], rtol=0, atol=1e-6)
    np.testing.assert_allclose([icc["icc_2_k_lo"], icc["icc_2_k_hi"]], ci["ICC(A,k)"], rtol=0, atol=1e-6)
    assert (round(icc["icc_2_1_lo"], 2), round(icc["icc_2_1_hi"], 2)) == (0.43, 0.93)
    assert icc["ci_method"].startswith("auto: F-based, McGraw & Wong (1996)") and icc["ci_level"] == 0.95
    title = (out / "tables" / "icc.md").read_text().splitlines()[0]
    assert title.startswith("# ICC per condition (95 % CIs: auto: F-based, McGraw & Wong (1996)"), title
    assert _skip_reason(out, "raters_needed") is None  # the ICC's follow-up runs on any design
    for name in PAIR_OUTPUTS:
        reason = _skip_reason(out, name)
        assert reason and "needs a pairwise design" in reason and "8 with 1 response" in reason, name
        assert f"skipped {name}: " in proc.stderr
    assert "skipped table5, table6: no AI judge ratings given" in proc.stderr
    written = pd.read_csv(out / "ratings" / "ratings.csv")
    assert set(written["condition"]) == {"text"} and written["rating"].min() == 0


# ---- every optional column dropped ----------------------------------------------------------------------
def _without(table: str, *columns: str):
    def drop(study: dict) -> None:
        study[table] = study[table].drop(columns=list(columns))

    return drop


DROPS = {
    "ratings.trial": _without("ratings", "trial"),
    "ratings.presented_first": _without("ratings", "presented_first"),
    "ratings.audio_quality": _without("ratings", "audio_quality"),
    "ratings.prompt_id": _without("ratings", "prompt_id"),
    "trials": lambda s: s.pop("trials"),
    "participants": lambda s: s.pop("participants"),
    "clips.n_chars": _without("stimuli", "n_chars", "prism_score"),
    "clips": lambda s: s.__setitem__("no_clips", True),
}
#: each optional part alone, two pairs, and all of them at once; over 5 s each on 2 cores, so all but two are slow
COMBINATIONS = [
    (),
    *((d,) for d in DROPS),
    ("ratings.trial", "trials"),
    ("participants", "clips"),
    tuple(DROPS),
]
FAST_DROPS = {("clips.n_chars",), tuple(DROPS)}  # the KeyError: 'n_chars' of old, and everything at once


@pytest.mark.parametrize(
    "drop",
    [pytest.param(d, marks=() if d in FAST_DROPS else pytest.mark.slow) for d in COMBINATIONS],
    ids=lambda d: "+".join(d) or "nothing",
)
def test_dropping_optional_columns_runs_or_names_the_skip(tmp_path, drop):
    study = any_study(n_prompts=5, raters=3, seed=3)
    for name in drop:
        DROPS[name](study)
    src, clips = write_any_study(tmp_path, study)
    skipped = run_stats(src, None if study.get("no_clips") else clips, tmp_path / "out", _params())
    out = tmp_path / "out"
    for name, (tables, figures) in OUTPUTS.items():
        if name in ("table5", "table6"):
            continue
        for t in tables:
            reason = _skip_reason(out, t)
            assert reason is None or reason.strip(), t
        for f in figures:
            assert (out / "figures" / f"{f}.png").is_file(), f
    assert _skip_reason(out, "raters_needed") is None and _table(out, "icc")["icc_2_1"].notna().all()
    if not drop:
        assert not [s for s in skipped if not s.startswith("table5")], skipped
    if "clips.n_chars" in drop or "clips" in drop:
        assert "stimuli.n_chars" in _skip_reason(out, "table2_lmm")


# ---- a 1..5 scale ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 6])
def test_a_1_to_5_scale_refuses_ratings_off_it_naming_row_and_column(tmp_path, capsys, bad):
    study = any_study(lo=1, hi=5, seed=1)
    study["ratings"].loc[3, "rating"] = bad
    src, clips = write_any_study(tmp_path, study)
    rc = main(["stats", "--ratings", str(src), "--clips", str(clips), "--out", str(tmp_path / "o"), "--scale", "1:5"])
    err = capsys.readouterr().err
    word = "below the minimum 1" if bad == 0 else "above the maximum 5"
    assert rc == 2 and f"ratings.csv row 5, column rating: '{bad}' is {word}" in err, err
    assert "--scale" in err and "Traceback" not in err and not (tmp_path / "o").exists()


def test_a_1_to_5_scale_reports_thresholds_in_its_units(tmp_path, capsys):
    study = any_study(lo=1, hi=5, seed=1)
    src, clips = write_any_study(tmp_path, study)
    any_judges(study["stimuli"]).to_csv(tmp_path / "judges.csv", index=False)
    out = tmp_path / "out"
    args = ["stats", "--ratings", str(src), "--clips", str(clips), "--out", str(out), "--scale", "1:5"]
    assert main([*args, "--judges", str(tmp_path / "judges.csv"), *FAST]) == 0, capsys.readouterr().err
    assert pd.read_csv(out / "ratings" / "ratings.csv")["rating"].between(1, 5).all()
    recs = _table(out, "thresholds_recommendations")
    found = recs["threshold"].dropna()
    assert len(found) and found.isin([0, 1, 2, 3, 4]).all(), recs  # gaps of a 1..5 scale: 0..4 points
    assert (recs["scale"] == "1-5 (step 1)").all()
    assert "[ratings on the scale 1-5 (step 1)" in (out / "tables" / "thresholds_recommendations.md").read_text()
    assert _table(out, "thresholds_gaps")[["mean_text", "mean_audio"]].max().max() <= 4
    clips5 = _table(out, "table5_clips")  # the judges' 1..100 ratings, mapped onto 1..5
    assert clips5[["ai_text", "ai_audio"]].stack().between(1, 5).all()
    assert "rating scale 1-5 (step 1)" in (out / "report.html").read_text()


def test_judge_ratings_are_mapped_onto_the_study_scale():
    ai = pd.DataFrame({"rating": [1.0, 100.0, 50.5]})
    assert on_study_scale(ai, RatingScale(min=1, max=5)).rating.tolist() == [1.0, 5.0, 3.0]
    assert on_study_scale(ai, RatingScale()) is ai  # the paper's scale: unchanged


# ---- a 0..100 slider ------------------------------------------------------------------------------------
def test_a_0_to_100_slider_needs_its_scale(tmp_path, capsys):
    study = any_study(lo=0, hi=100, seed=2)
    study["ratings"].loc[study["ratings"]["trial"] == 1, "rating"] = 0
    src, clips = write_any_study(tmp_path, study)
    base = ["stats", "--ratings", str(src), "--clips", str(clips), *FAST]
    assert main([*base, "--out", str(tmp_path / "paper")]) == 2
    err = capsys.readouterr().err
    assert "column rating: '0' is below the minimum 1" in err and "--scale MIN:MAX[:STEP]" in err, err
    assert "rating scale 1-100 (step 1; 1 = Terrible, 100 = Perfect)" in err
    assert main([*base, "--out", str(tmp_path / "slider"), "--scale", "0:100"]) == 0, capsys.readouterr().err
    assert pd.read_csv(tmp_path / "slider" / "ratings" / "ratings.csv")["rating"].min() == 0
    with pytest.raises(SystemExit) as exc:  # argparse: 100 is not 0 + 7k
        main([*base, "--out", str(tmp_path / "x"), "--scale", "0:100:7"])
    assert exc.value.code == 2
    assert "--scale '0:100:7'" in capsys.readouterr().err


def test_a_scale_with_half_steps_refuses_values_between_them(tmp_path):
    study = any_study(lo=1, hi=7, seed=4)
    study["ratings"]["rating"] = study["ratings"]["rating"].astype(float)
    study["ratings"].loc[2, "rating"] = 3.5
    study["ratings"].loc[4, "rating"] = 3.25
    src, clips = write_any_study(tmp_path, study)
    with pytest.raises(RatingsValidationError) as exc:
        run_stats(src, clips, tmp_path / "o", _params(scale={"min": 1, "max": 7, "step": 0.5}))
    assert exc.value.problems == [
        "ratings.csv row 6, column rating: '3.25' is not on the scale's steps (1, 1.5, ... 7: step 0.5)"
    ]


def test_the_cli_default_scale_is_the_configs():
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    default = scale_from_config(schema["properties"]["study"]["properties"]["scale"]["default"])
    cli = parse_scale_arg(STATS_SCALE)
    assert (cli.min, cli.max, cli.step) == (default.min, default.max, default.step) and default.is_paper


# ---- designs other than the paper's pairs ---------------------------------------------------------------
@pytest.mark.slow  # two runs: over 5 s on 2 cores
def test_a_response_column_is_honoured_whatever_the_clip_ids(tmp_path):
    """Clip ids that do not end in _0/_1, with prompt_id + response columns and no --clips: the pairs are found."""
    study = any_study(seed=5)
    reference = tmp_path / "ref"
    src, clips = write_any_study(reference, study)
    run_stats(src, clips, reference / "out", _params())
    r = study["ratings"].copy()
    is_attn = r["prompt_id"] == "attn"
    r["response"] = r["clip_id"].str[-1]
    r.loc[~is_attn, "clip_id"] = "clip-" + r["prompt_id"] + r["response"].map({"0": "-x", "1": "-y"})
    other = tmp_path / "other"
    src2, _ = write_any_study(other, {**study, "ratings": r})
    run_stats(src2, None, other / "out", _params())
    for name in ("thresholds_gaps", "thresholds_recommendations", "cross_modality_agreement", "random_slope"):
        pd.testing.assert_frame_equal(_table(other / "out", name), _table(reference / "out", name), check_exact=False)


def test_a_single_stimulus_design_runs_what_needs_no_pairs(tmp_path, capsys):
    study = any_study(seed=6)
    r, t = study["ratings"], study["trials"]
    study["ratings"] = r[(r["clip_id"].str.endswith("_0")) & (r["prompt_id"] != "attn")].reset_index(drop=True)
    study["trials"] = t[t["prompt_id"] != "attn"].drop(columns="preference").reset_index(drop=True)
    study["stimuli"] = study["stimuli"][study["stimuli"]["response"] == 0].reset_index(drop=True)
    src, clips = write_any_study(tmp_path, study)
    out = tmp_path / "out"
    assert main(["stats", "--ratings", str(src), "--clips", str(clips), "--out", str(out), *FAST]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for name in ("table2_lmm", "table4_reliability", "raters_needed", "table1_demographics"):
        assert _skip_reason(out, name) is None, (name, _skip_reason(out, name))
    t4 = _table(out, "table4_reliability").set_index("metric")
    assert np.isfinite(t4.loc["Krippendorff's alpha (cont.)", ["audio", "text"]].astype(float)).all()
    for metric in ("Krippendorff's alpha (ord.)", "Krippendorff's alpha (nom.)"):
        assert (
            "skipped: needs trials.preference" in t4.loc[metric, "note"] and "pairwise design" in t4.loc[metric, "note"]
        )
    for name in PAIR_OUTPUTS:
        assert "8 with 1 response (a single-stimulus design)" in _skip_reason(out, name), name


def test_more_than_two_responses_per_prompt(tmp_path):
    """Three responses per prompt from {prompt}_{response} clip ids (no --clips): ICC runs, pairs are skipped."""
    study = any_study(n_prompts=4, raters=3, seed=7)
    r = study["ratings"]
    r = r[r["prompt_id"] != "attn"]
    third = r[r["clip_id"].str.endswith("_1")].assign(
        clip_id=lambda d: d["prompt_id"] + "_2", rating=lambda d: (d["rating"] + 7).clip(1, 100), presented_first=False
    )
    study["ratings"] = pd.concat([r, third], ignore_index=True).drop(columns="trial")
    study.pop("trials")
    src, _ = write_any_study(tmp_path, study)
    run_stats(src, None, tmp_path / "out", _params())
    assert _table(tmp_path / "out", "icc")["icc_2_1"].notna().all()
    for name in PAIR_OUTPUTS:
        assert "4 of 4 prompt(s) are not pairs: 4 with 3 responses" in _skip_reason(tmp_path / "out", name), name
