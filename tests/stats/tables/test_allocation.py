"""AI-guided rater allocation (issue #5, item 6): the plan reaches its target under its own model
with the fewest raters, equals the uniform design when the AI carries no information, respects a
budget (greedy = exhaustive optimum on small cases), and names the column of bad input."""

from __future__ import annotations

import itertools
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from modprefs.stats.reliability.rater_scaling import icc_k, raters_needed
from modprefs.stats.tables import rater_allocation as AL

ROOT = Path(__file__).resolve().parents[3]


def diffs(n: int = 40, seed: int = 0, modalities=("audio", "text")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        [
            {"prompt_id": f"p{i:03d}", "modality": m, "ai_diff": float(g)}
            for m in modalities
            for i, g in enumerate(rng.gamma(1.5, 10.0, n))
        ]
    )


def test_minimal_raters_equals_raters_needed_and_brute_force():
    rho = np.linspace(0.02, 0.98, 97)
    for t in (0.5, 0.75, 0.9):
        k = AL.minimal_raters(rho, t)
        assert list(k) == [int(raters_needed(r, t)) for r in rho]
        assert np.all(icc_k(rho, k) >= t - 1e-12) and np.all((k == 1) | (icc_k(rho, k - 1) < t))
    assert list(AL.minimal_raters([0.05, 0.9], 0.75, 2, 30)) == [30, 2]


def test_plan_meets_target_under_its_own_model_with_fewest_raters():
    cfg = AL.AllocationConfig(target=0.75, min_raters=2, max_raters=40)
    plan = AL.rater_plan(diffs(), cfg)
    assert list(plan.columns) == AL.PLAN_COLUMNS and len(plan) == 80
    assert plan.loc[plan.raters_planned < 40, "reaches_target"].all()
    reach = plan[plan.reaches_target]
    assert (reach.predicted_icc_k >= 0.75).all()
    less = icc_k(reach.predicted_icc.to_numpy(), reach.raters_planned.to_numpy() - 1)
    assert np.all((reach.raters_planned.to_numpy() == 2) | (less < 0.75))  # one fewer would miss
    assert np.allclose(plan.predicted_icc_k, icc_k(plan.predicted_icc, plan.raters_planned))
    capped = plan[~plan.reaches_target]
    assert (capped.raters_planned == 40).all()
    assert not plan.budget_binding.any()


def test_prior_mean_matches_the_paper_and_is_stated():
    d = diffs(seed=1)
    cfg = AL.AllocationConfig(icc_floor=0.001, icc_ceiling=0.999)
    plan = AL.rater_plan(d, cfg)
    for m, b in plan.groupby("modality"):
        g = d[d.modality == m].ai_diff
        b0 = 0.30 - 0.014 * g.mean()
        assert b.predicted_icc.mean() == pytest.approx(0.30)
        assert np.allclose(b.predicted_icc, b0 + 0.014 * b.ai_diff)
        assert f"b0 = 0.3 - 0.014 x mean ai_diff = {b0:.4f}" in b.icc_model.iloc[0]
        assert "auto: no human per-prompt ICC given" in b.icc_model.iloc[0]


@pytest.mark.parametrize("how", ["zero slope", "equal gaps"])
def test_without_a_link_the_plan_is_the_uniform_design(how):
    d = diffs(seed=2)
    if how == "zero slope":
        cfg = AL.AllocationConfig(prior_slope=0.0, icc_model="prior")
    else:
        d = d.assign(ai_diff=12.0)
        cfg = AL.AllocationConfig(icc_model="prior")
    plan = AL.rater_plan(d, cfg)
    assert (plan.raters_planned == plan.uniform_raters).all()
    assert (plan.raters_planned == int(raters_needed(0.30, 0.75))).all()  # 7 raters, as Figure 4
    summ = AL.plan_summary(plan)
    assert (summ.total_planned == summ.total_uniform).all()


def test_budget_is_respected_and_greedy_is_optimal():
    cfg = AL.AllocationConfig(budget=150, min_raters=2, max_raters=30)
    plan = AL.rater_plan(diffs(), cfg)
    free = AL.rater_plan(diffs(), AL.AllocationConfig(min_raters=2, max_raters=30))
    for m, b in plan.groupby("modality"):
        assert free[free.modality == m].raters_planned.sum() > 150
        assert b.raters_planned.sum() == 150 and b.budget_binding.all()
        assert (b.raters_planned >= 2).all()
        assert (b.raters_planned.to_numpy() <= free[free.modality == m].raters_planned.to_numpy()).all()
        assert (b.uniform_raters == 150 // 40).all()
    # exhaustive check on a small case: the greedy maximises the summed predicted ICC(2,k)
    rho = np.array([0.08, 0.2, 0.35, 0.6])
    k, binding = AL.allocate(rho, 0.75, 1, 12, budget=14)
    assert binding and k.sum() == 14
    need = AL.minimal_raters(rho, 0.75, 1, 12)
    best = max(
        icc_k(rho, np.array(c)).sum() for c in itertools.product(*[range(1, n + 1) for n in need]) if sum(c) <= 14
    )
    assert icc_k(rho, k).sum() == pytest.approx(best)


def test_budget_too_small_and_not_binding():
    with pytest.raises(ValueError, match="cannot give 40 prompts min_raters = 2"):
        AL.rater_plan(diffs(), AL.AllocationConfig(budget=50))
    plan = AL.rater_plan(diffs(), AL.AllocationConfig(budget=100_000))
    assert not plan.budget_binding.any()


def test_fitted_model_recovers_a_known_line_and_auto_falls_back_with_reason():
    d = diffs(n=60, seed=3)
    human = d.rename(columns={"modality": "condition"}).assign(icc_2_1=lambda x: 0.1 + 0.02 * x.ai_diff)
    plan = AL.rater_plan(d, AL.AllocationConfig(icc_model="fitted", icc_ceiling=0.999), human)
    unclipped = ~plan.icc_clipped
    assert np.allclose(plan.loc[unclipped, "predicted_icc"], 0.1 + 0.02 * plan.loc[unclipped, "ai_diff"])
    assert plan.icc_model.str.startswith("fitted").all() and "OLS on 60 prompts" in plan.icc_model.iloc[0]
    few = human.groupby("condition").head(5)
    with pytest.raises(ValueError, match="has 5 prompts .* needs min_fit_prompts = 10"):
        AL.rater_plan(d, AL.AllocationConfig(icc_model="fitted"), few)
    auto = AL.rater_plan(d, AL.AllocationConfig(icc_model="auto"), few)
    assert auto.icc_model.str.contains("auto: fewer than 10 prompts with human ICC").all()
    with pytest.raises(ValueError, match="needs human per-prompt ICCs"):
        AL.rater_plan(d, AL.AllocationConfig(icc_model="fitted"))


def test_a_fitted_slope_without_evidence_means_no_link():
    d = diffs(n=60, seed=6)
    rng = np.random.default_rng(6)
    human = d.rename(columns={"modality": "condition"}).assign(icc_2_1=rng.normal(0.3, 0.2, len(d)))
    plan = AL.rater_plan(d, AL.AllocationConfig(icc_model="fitted"), human)
    assert plan.icc_model.str.contains("slope p > fit_max_p = 0.05: no usable link").all()
    assert (plan.raters_planned == plan.uniform_raters).all()
    ungated = AL.rater_plan(d, AL.AllocationConfig(icc_model="fitted", fit_max_p=None), human)
    assert ungated.raters_planned.nunique() > 1 and not ungated.icc_model.str.contains("no usable").any()


def test_predictions_are_clipped_and_flagged():
    # mean gap 35 -> b0 = .30 - .014 x 35 = -.19: the 90-point gap predicts 1.07, the 0-point gap -.19
    d = pd.DataFrame({"prompt_id": list("abcdef"), "modality": "text", "ai_diff": [0.0, 22, 24, 28, 46, 90]})
    plan = AL.rater_plan(d, AL.AllocationConfig(icc_model="prior"))
    assert plan.icc_clipped.tolist() == [True, False, False, False, False, True]
    assert plan.predicted_icc.iloc[-1] == 0.95 and plan.predicted_icc.iloc[0] == 0.05


def test_prompt_without_ai_differentiation_gets_the_uniform_count_and_says_so():
    d = diffs(n=20, seed=4, modalities=("text",))
    d.loc[3, "ai_diff"] = np.nan
    plan = AL.rater_plan(d, AL.AllocationConfig())
    row = plan[plan.prompt_id == "p003"].iloc[0]
    assert row.raters_planned == row.uniform_raters and "no AI differentiation" in row.note
    with pytest.raises(ValueError, match="no prompt has an AI differentiation in modality 'text'"):
        AL.rater_plan(d.assign(ai_diff=np.nan), AL.AllocationConfig())


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: d.drop(columns="ai_diff"), r"lacks column\(s\) \['ai_diff'\]"),
        (lambda d: d.drop(columns="modality"), r"lacks column\(s\) \['modality'\]"),
        (lambda d: d.assign(ai_diff=-1.0), "column 'ai_diff' must be >= 0"),
        (lambda d: d.assign(modality="video"), "column 'modality' has unknown values"),
        (lambda d: pd.concat([d, d.head(1)]), r"duplicate \(prompt_id, modality\)"),
    ],
)
def test_bad_input_names_the_column(mutate, match):
    with pytest.raises(ValueError, match=match):
        AL.rater_plan(mutate(diffs()), AL.AllocationConfig())


def test_bad_human_table_and_config_are_named():
    with pytest.raises(ValueError, match=r"per-prompt ICC table lacks column\(s\) \['icc_2_1'\]"):
        AL.rater_plan(diffs(), AL.AllocationConfig(), pd.DataFrame({"prompt_id": ["p000"], "condition": ["text"]}))
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['targt'\]"):
        AL.AllocationConfig.from_mapping({"targt": 0.8})
    with pytest.raises(ValueError, match="target must be in"):
        AL.AllocationConfig.from_mapping({"target": 1.2})
    with pytest.raises(ValueError, match="min_raters <= max_raters"):
        AL.AllocationConfig(min_raters=5, max_raters=3)


def test_figure(tmp_path):
    AL.figure_rater_plan(AL.rater_plan(diffs(), AL.AllocationConfig()), tmp_path / "plan.png")
    assert (tmp_path / "plan.png").stat().st_size > 5000


class _Named(dict):
    """Stands in for Snakemake's named lists (attribute and ``items()`` access)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(name) from e


def test_workflow_script(tmp_path):
    from support.ai_alignment_study import linked_study

    ratings, participants, stimuli, judges, _ = linked_study(n_prompts=30, n_raters=12, seed=5)
    paths = {}
    for name, df in (("judges", judges), ("stimuli", stimuli), ("ratings", ratings), ("participants", participants)):
        paths[name] = str(tmp_path / f"{name}.csv")
        df.to_csv(paths[name], index=False)
    out = {
        "plan": str(tmp_path / "rater_plan.csv"),
        "figure": str(tmp_path / "rater_plan.png"),
        "summary": str(tmp_path / "summary.csv"),
    }
    sm = _Named(
        input=_Named(paths),
        output=_Named(out),
        log=[str(tmp_path / "log.txt")],
        params=_Named(allocation={"target": 0.75, "icc_model": "auto"}, judge_by_modality=None),
    )
    runpy.run_path(str(ROOT / "workflow/scripts/rater_plan.py"), init_globals={"snakemake": sm})
    plan = pd.read_csv(out["plan"], dtype={"prompt_id": str})
    assert list(plan.columns) == AL.PLAN_COLUMNS and len(plan) == 60
    assert plan.icc_model.str.startswith("fitted").all()
    assert Path(out["figure"]).stat().st_size > 5000 and len(pd.read_csv(out["summary"])) == 2
    assert "raters planned" in Path(sm.log[0]).read_text()
