"""AI-guided rater allocation (issue #5, item 6): spend human raters where the AI judge says a
prompt's two responses are hard to tell apart.

The paper's Table 6 finds that a prompt's human agreement (per-prompt ICC(2,1)) rises with the AI
judge's differentiation, ``|mean AI rating(response 0) - mean AI rating(response 1)|`` (points on the
1–100 scale): B = 0.014 ICC per point. This module turns that into a recruitment plan:

1. **AI discriminability** per prompt and modality: ``ai_diff`` from the judge table
   (:func:`modprefs.stats.tables.ai_alignment_table6.ai_differentiation`).
2. **Predicted ICC(2,1)** per prompt (``icc_model``):

   * ``prior`` — the paper's slope: ICC = b0 + ``prior_slope`` x ai_diff with ``prior_slope`` = 0.014
     (Table 6, "AI Differentiation") and b0 = ``prior_mean_icc`` - ``prior_slope`` x mean(ai_diff)
     over the planned prompts of the modality, so that the mean predicted ICC equals
     ``prior_mean_icc`` = 0.30 (the paper's ICC(2,1): .333 audio, .295 text, Table 4). b0 is thus
     data dependent; it is reported in the ``icc_model`` column.
   * ``fitted`` — the Table 6 regression refitted on human data: per modality, OLS of the human
     per-prompt ICC(2,1) (:func:`modprefs.stats.tables.modality.per_prompt_icc`) on ai_diff (the per-modality
     line of ``ICC ~ AI_diff x Modality``); needs ``min_fit_prompts`` usable prompts. If the slope's
     p-value exceeds ``fit_max_p`` (default .05) there is no evidence of a link and every prompt gets
     the fitted mean (the plan is then the uniform design); otherwise the line is used as estimated
     (sign included). Both cases are reported in ``icc_model``. benchmarks/validity/judges_allocation.py shows
     why: without a true link, spurious pilot slopes cost ~4 % more raters than uniform.
     Caveat (same benchmark): a per-prompt ICC(2,1) from 2 clips x ~9 raters is biased low (mean
     .20 for a true .30), so the fitted level, and with it the planned totals, run high.
   * ``auto`` — ``fitted`` for a modality with enough human per-prompt ICCs, else ``prior``; the
     choice is written in every row's ``icc_model``.

   Predictions are clipped to [``icc_floor``, ``icc_ceiling``] (default [.05, .95]; a predicted
   ICC <= 0 would ask for infinitely many raters); clipped rows are flagged (``icc_clipped``).
3. **Raters per prompt**: the smallest k_p with Spearman–Brown ICC(2,k_p) = k rho / (1 + (k - 1) rho)
   >= ``target`` (:func:`minimal_raters`), clipped to [``min_raters``, ``max_raters``]. This
   minimises the total number of raters subject to every prompt reaching the target (each prompt's
   constraint involves only its own k_p). A prompt capped at ``max_raters`` below the target is
   flagged (``reaches_target`` False).
4. **Budget** (``budget``: total rater assignments per modality, one assignment = one rater rating
   both clips of a prompt): when the plan of step 3 exceeds it, the budget *binds* and raters are
   allocated greedily by marginal reliability gain (:func:`allocate`): every prompt starts at
   ``min_raters``, then one rater at a time goes to the prompt with the largest gain
   ICC(2,k+1) - ICC(2,k) among prompts still below their step-3 count (ties: plan order). ICC(2,k)
   is concave in k for rho > 0, so this maximises the sum (mean) of predicted ICC(2,k_p) under the
   budget. ``budget_binding`` says whether it happened.
5. **Uniform comparison**: ``uniform_raters`` is the conventional design's count for every prompt
   of the modality: the raters the mean predicted ICC(2,1) needs for the target (as Figure 4 /
   :func:`modprefs.stats.reliability.rater_scaling.raters_needed`), clipped to [min, max] and, under a budget,
   to floor(budget / n_prompts). When all predictions are equal the plan equals it.

Evidence (benchmarks/validity/judges_allocation.py, 100 prompts, target .75, true per-prompt ICC = .30 +
beta (gap - 15) + N(0, .10^2)): the ``fitted`` plan saves about 13–16 % of raters against a uniform
design reaching the same share of prompts at .75 when beta is the paper's slope or more, ~1 % at half
of it and nothing without a link (-1.6 %, from the pilots whose slope is spuriously significant).
The ``prior`` plan, which takes the paper's slope as certain, cost 12–34 % MORE than uniform at
every link strength there: it ignores the per-prompt heterogeneity the AI does not see. Prefer
``fitted`` (a human pilot) to ``prior``.

A prompt without an AI differentiation (a response the judge did not rate) cannot be predicted:
it gets the modality's mean predicted ICC, hence the uniform count, and says so in ``note``.

Output columns (:data:`PLAN_COLUMNS`): prompt_id, modality, ai_diff (points), predicted_icc,
raters_planned, predicted_icc_k (Spearman–Brown at raters_planned), uniform_raters,
predicted_icc_uniform, reaches_target, target, icc_clipped, budget_binding, icc_model, note.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from modprefs.errors import UserInputError
from modprefs.stats.reliability.rater_scaling import icc_k
from modprefs.study.terms import CONDITIONS as MODALITIES

#: Table 6's "AI Differentiation" coefficient: ICC(2,1) per point of AI gap.
PAPER_SLOPE = 0.014
#: The paper's ICC(2,1), rounded (Table 4: .333 audio, .295 text).
PAPER_MEAN_ICC = 0.30
ICC_MODELS = ("prior", "fitted", "auto")
PLAN_COLUMNS = [
    "prompt_id",
    "modality",
    "ai_diff",
    "predicted_icc",
    "raters_planned",
    "predicted_icc_k",
    "uniform_raters",
    "predicted_icc_uniform",
    "reaches_target",
    "target",
    "icc_clipped",
    "budget_binding",
    "icc_model",
    "note",
]


@dataclass(frozen=True)
class AllocationConfig:
    """Settings of a rater plan (config ``judges.allocation.*``); see the module docstring.

    Attributes:
        target: ICC(2,k) each prompt should reach, in (0, 1).
        min_raters, max_raters: bounds on raters per prompt (1 <= min <= max).
        budget: total rater assignments per modality, or None (no cap).
        icc_model: ``prior``, ``fitted`` or ``auto``.
        prior_slope: ICC(2,1) per point of AI gap under the prior (paper: 0.014).
        prior_mean_icc: mean predicted ICC(2,1) under the prior (paper: ~.30).
        icc_floor, icc_ceiling: predictions are clipped to this range (0 < floor < ceiling < 1).
        min_fit_prompts: usable prompts a modality needs for the ``fitted`` model.
        fit_max_p: a fitted slope whose p-value exceeds this is treated as no link (every prompt
            gets the fitted mean ICC, hence the uniform count); None uses any fitted slope.
    """

    target: float = 0.75
    min_raters: int = 2
    max_raters: int = 30
    budget: int | None = None
    icc_model: str = "auto"
    prior_slope: float = PAPER_SLOPE
    prior_mean_icc: float = PAPER_MEAN_ICC
    icc_floor: float = 0.05
    icc_ceiling: float = 0.95
    min_fit_prompts: int = 10
    fit_max_p: float | None = 0.05

    def __post_init__(self) -> None:
        problems = []
        if not 0 < self.target < 1:
            problems.append(f"target must be in (0, 1), got {self.target}")
        if not 1 <= self.min_raters <= self.max_raters:
            problems.append(f"need 1 <= min_raters <= max_raters, got {self.min_raters}, {self.max_raters}")
        if self.budget is not None and self.budget < 1:
            problems.append(f"budget must be a positive integer or null, got {self.budget}")
        if self.icc_model not in ICC_MODELS:
            problems.append(f"icc_model must be one of {ICC_MODELS}, got {self.icc_model!r}")
        if not 0 < self.icc_floor < self.icc_ceiling < 1:
            problems.append(f"need 0 < icc_floor < icc_ceiling < 1, got {self.icc_floor}, {self.icc_ceiling}")
        if not 0 < self.prior_mean_icc < 1:
            problems.append(f"prior_mean_icc must be in (0, 1), got {self.prior_mean_icc}")
        if self.fit_max_p is not None and not 0 < self.fit_max_p <= 1:
            problems.append(f"fit_max_p must be in (0, 1] or null, got {self.fit_max_p}")
        if self.min_fit_prompts < 3:
            problems.append(f"min_fit_prompts must be >= 3, got {self.min_fit_prompts}")
        if problems:
            raise ValueError("invalid judges.allocation config: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None) -> AllocationConfig:
        """From a ``judges.allocation`` mapping; unknown keys are an error (a typo must not be ignored)."""
        from modprefs.config_files import dataclass_kwargs

        return cls(**dataclass_kwargs(cls, mapping, "judges.allocation"))


# --- the pieces ------------------------------------------------------------------------------------


def minimal_raters(
    icc: np.ndarray | float, target: float, min_raters: int = 1, max_raters: int | None = None
) -> np.ndarray:
    """Smallest whole k with ICC(2,k) >= ``target`` for each ICC(2,1) in ``icc`` (all in (0, 1)),
    clipped to [min_raters, max_raters]: k = ceil(t (1 - rho) / (rho (1 - t))) (Spearman–Brown)."""
    rho = np.asarray(icc, dtype=float)
    if not 0 < target < 1:
        raise ValueError(f"target must be in (0, 1), got {target}")
    if not np.all((rho > 0) & (rho < 1)):
        raise ValueError("predicted ICC(2,1) must lie in (0, 1) (clip predictions first)")
    k = np.ceil(target * (1 - rho) / (rho * (1 - target)) - 1e-9)
    k = np.maximum(k, min_raters)
    if max_raters is not None:
        k = np.minimum(k, max_raters)
    return k.astype(int)


def allocate(
    icc: np.ndarray, target: float, min_raters: int, max_raters: int, budget: int | None = None
) -> tuple[np.ndarray, bool]:
    """Raters per prompt from predicted ICC(2,1) values (module docstring, steps 3–4).

    Returns (k, budget_binding). Without a binding budget, k = :func:`minimal_raters`. With one,
    greedy by marginal gain ICC(2,k+1) - ICC(2,k), each prompt between ``min_raters`` and its
    minimal count; ties go to the earlier prompt. Raises ValueError when the budget cannot give
    every prompt ``min_raters``.
    """
    rho = np.asarray(icc, dtype=float)
    need = minimal_raters(rho, target, min_raters, max_raters)
    if budget is None or need.sum() <= budget:
        return need, False
    n = rho.size
    if n * min_raters > budget:
        raise ValueError(
            f"budget {budget} cannot give {n} prompts min_raters = {min_raters} each ({n * min_raters} needed)"
        )
    k = np.full(n, min_raters, dtype=int)
    left = budget - k.sum()
    heap = [(-(icc_k(rho[i], k[i] + 1) - icc_k(rho[i], k[i])), i) for i in range(n) if k[i] < need[i]]
    heapq.heapify(heap)
    while left > 0 and heap:
        _, i = heapq.heappop(heap)
        k[i] += 1
        left -= 1
        if k[i] < need[i]:
            heapq.heappush(heap, (-(icc_k(rho[i], k[i] + 1) - icc_k(rho[i], k[i])), i))
    return k, True


def uniform_raters(icc: np.ndarray, target: float, min_raters: int, max_raters: int, budget: int | None = None) -> int:
    """The conventional uniform count: raters the mean ICC(2,1) needs for ``target``, clipped to
    [min, max] and, with a budget, to floor(budget / n)."""
    rho = np.asarray(icc, dtype=float)
    k = int(minimal_raters(float(np.mean(rho)), target, min_raters, max_raters))
    if budget is not None:
        k = min(k, budget // rho.size)
    return k


def prior_icc(
    ai_diff: np.ndarray, slope: float = PAPER_SLOPE, mean_icc: float = PAPER_MEAN_ICC
) -> tuple[np.ndarray, float]:
    """The paper's line through the data: (b0 + slope x ai_diff, b0) with b0 = mean_icc - slope x
    mean(ai_diff), so the predictions average ``mean_icc`` (before clipping)."""
    g = np.asarray(ai_diff, dtype=float)
    b0 = mean_icc - slope * float(np.mean(g))
    return b0 + slope * g, b0


def fit_icc_line(ai_diff: np.ndarray, icc: np.ndarray) -> dict[str, float]:
    """OLS ICC(2,1) = a + b ai_diff (statsmodels): intercept, slope, slope_se, slope_p, n."""
    import statsmodels.api as sm

    g = np.asarray(ai_diff, dtype=float)
    y = np.asarray(icc, dtype=float)
    res = sm.OLS(y, np.column_stack([np.ones_like(g), g])).fit()
    return {
        "intercept": float(res.params[0]),
        "slope": float(res.params[1]),
        "slope_se": float(res.bse[1]),
        "slope_p": float(res.pvalues[1]),
        "n": int(res.nobs),
    }


def fitted_predictions(
    fit: Mapping[str, float], ai_diff: np.ndarray, fit_max_p: float | None = 0.05
) -> tuple[np.ndarray, str]:
    """Predicted ICC(2,1) (unclipped) from :func:`fit_icc_line`'s ``fit`` and a description.

    With ``fit_max_p`` set and the slope's p above it, every prediction is the fitted line's mean
    over ``ai_diff`` (no usable link: the uniform design)."""
    g = np.asarray(ai_diff, dtype=float)
    line = fit["intercept"] + fit["slope"] * g
    what = (
        f"ICC = {fit['intercept']:.4f} + {fit['slope']:.5f} x ai_diff (OLS on {fit['n']} prompts, slope SE "
        f"{fit['slope_se']:.5f}, p = {fit['slope_p']:.3g})"
    )
    if fit_max_p is not None and not fit["slope_p"] <= fit_max_p:
        return np.full(g.shape, float(np.mean(line))), (
            f"{what}; slope p > fit_max_p = {fit_max_p:g}: no usable "
            f"link, every prompt gets the mean {np.mean(line):.4f}"
        )
    return line, what


def _check_diffs(diffs: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("prompt_id", "modality", "ai_diff") if c not in diffs.columns]
    if missing:
        raise ValueError(f"AI differentiation table lacks column(s) {missing}; has {list(diffs.columns)}")
    d = diffs.copy()
    d["prompt_id"] = d["prompt_id"].astype(str)
    d["modality"] = d["modality"].astype(str)
    bad = sorted(set(d["modality"]) - set(MODALITIES))
    if bad:
        raise ValueError(f"AI differentiation table: column 'modality' has unknown values {bad}")
    d["ai_diff"] = pd.to_numeric(d["ai_diff"], errors="coerce")
    if (d["ai_diff"] < 0).any():
        raise ValueError("AI differentiation table: column 'ai_diff' must be >= 0 (an absolute difference)")
    if d.duplicated(["prompt_id", "modality"]).any():
        raise ValueError("AI differentiation table: duplicate (prompt_id, modality) rows")
    if "note" not in d.columns:
        d["note"] = ""
    d["note"] = d["note"].fillna("").astype(str)
    return d


def _human_icc(per_prompt_icc: pd.DataFrame | None) -> pd.DataFrame | None:
    if per_prompt_icc is None:
        return None
    missing = [c for c in ("prompt_id", "condition", "icc_2_1") if c not in per_prompt_icc.columns]
    if missing:
        raise ValueError(f"per-prompt ICC table lacks column(s) {missing}; has {list(per_prompt_icc.columns)}")
    h = per_prompt_icc.rename(columns={"condition": "modality"})[["prompt_id", "modality", "icc_2_1"]].copy()
    h["prompt_id"] = h["prompt_id"].astype(str)
    h["icc_2_1"] = pd.to_numeric(h["icc_2_1"], errors="coerce")
    return h


def predict_icc(
    diffs: pd.DataFrame, config: AllocationConfig = AllocationConfig(), per_prompt_icc: pd.DataFrame | None = None
) -> pd.DataFrame:
    """``diffs`` (prompt_id, modality, ai_diff[, note]) with predicted_icc (clipped), icc_clipped and
    icc_model (which model, with its coefficients) added; see the module docstring, step 2.

    ``per_prompt_icc``: human per-prompt ICC(2,1) (prompt_id, condition, icc_2_1), e.g.
    results/stats/tables/per_prompt_icc.csv, for the ``fitted`` / ``auto`` models; its prompts may
    differ from the planned ones (a pilot). Raises ValueError when ``icc_model`` is ``fitted`` and a
    modality lacks ``min_fit_prompts`` usable prompts, or when a modality has no AI differentiation.
    """
    d = _check_diffs(diffs)
    human = _human_icc(per_prompt_icc)
    out = []
    for m, block in d.groupby("modality", sort=True):
        block = block.copy()
        g = block["ai_diff"].to_numpy(float)
        ok = np.isfinite(g)
        if not ok.any():
            raise ValueError(f"no prompt has an AI differentiation in modality {m!r}: nothing to plan from")
        fit = None
        if config.icc_model in ("fitted", "auto") and human is not None:
            pairs = human[human["modality"] == m].merge(d[d["modality"] == m][["prompt_id", "ai_diff"]], on="prompt_id")
            pairs = pairs[np.isfinite(pairs["ai_diff"]) & np.isfinite(pairs["icc_2_1"])]
            if len(pairs) >= config.min_fit_prompts and pairs["ai_diff"].nunique() > 1:
                fit = fit_icc_line(pairs["ai_diff"], pairs["icc_2_1"])
            elif config.icc_model == "fitted":
                raise ValueError(
                    f"icc_model 'fitted': modality {m!r} has {len(pairs)} prompts with both a human ICC "
                    f"and an AI differentiation; needs min_fit_prompts = {config.min_fit_prompts}"
                )
        elif config.icc_model == "fitted":
            raise ValueError("icc_model 'fitted' needs human per-prompt ICCs (per_prompt_icc)")
        if fit is not None:
            raw = np.full(g.shape, np.nan)
            raw[ok], model = fitted_predictions(fit, g[ok], config.fit_max_p)
            model = f"fitted ({m}): {model}"
        else:
            raw = np.full(g.shape, np.nan)
            raw[ok], b0 = prior_icc(g[ok], config.prior_slope, config.prior_mean_icc)
            why = (
                ""
                if config.icc_model == "prior"
                else (
                    "; auto: no human per-prompt ICC given"
                    if human is None
                    else f"; auto: fewer than {config.min_fit_prompts} prompts with human ICC"
                )
            )
            model = (
                f"prior (paper Table 6): ICC = b0 + {config.prior_slope:g} x ai_diff, b0 = "
                f"{config.prior_mean_icc:g} - {config.prior_slope:g} x mean ai_diff = {b0:.4f}{why}"
            )
        pred = np.clip(raw, config.icc_floor, config.icc_ceiling)
        clipped = ok & (raw != pred)
        fill = float(np.mean(pred[ok]))
        notes = block["note"].to_numpy(object)
        for i in np.flatnonzero(~ok):
            notes[i] = "; ".join(
                s
                for s in (
                    notes[i],
                    f"no AI differentiation: given the modality's mean predicted ICC {fill:.3f} (uniform count)",
                )
                if s
            )
        pred = np.where(ok, pred, fill)
        block["predicted_icc"] = pred
        block["icc_clipped"] = clipped
        block["icc_model"] = model
        block["note"] = notes
        out.append(block)
    return pd.concat(out, ignore_index=True)


def rater_plan(
    diffs: pd.DataFrame, config: AllocationConfig = AllocationConfig(), per_prompt_icc: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The plan (:data:`PLAN_COLUMNS`), one row per prompt and modality, sorted by modality and prompt.

    ``diffs``: AI differentiation per prompt and modality
    (:func:`modprefs.stats.tables.ai_alignment_table6.ai_differentiation`); ``per_prompt_icc``: optional human
    per-prompt ICC(2,1) for the fitted model. The budget, if any, applies per modality.
    """
    pred = predict_icc(diffs, config, per_prompt_icc).sort_values(["modality", "prompt_id"], kind="stable")
    parts = []
    for _, block in pred.groupby("modality", sort=True):
        block = block.copy()
        rho = block["predicted_icc"].to_numpy(float)
        k, binding = allocate(rho, config.target, config.min_raters, config.max_raters, config.budget)
        ku = uniform_raters(rho, config.target, config.min_raters, config.max_raters, config.budget)
        block["raters_planned"] = k
        block["predicted_icc_k"] = icc_k(rho, k)
        block["uniform_raters"] = ku
        block["predicted_icc_uniform"] = icc_k(rho, ku)
        block["reaches_target"] = block["predicted_icc_k"] >= config.target - 1e-12
        block["target"] = config.target
        block["budget_binding"] = binding
        parts.append(block)
    return pd.concat(parts, ignore_index=True)[PLAN_COLUMNS]


def plan_summary(plan: pd.DataFrame) -> pd.DataFrame:
    """Per modality: prompts, total raters planned vs uniform, and under the plan's own model the
    share of prompts reaching the target and the mean predicted ICC(2,k) of both designs."""
    rows = []
    for m, b in plan.groupby("modality", sort=True):
        t = float(b["target"].iloc[0])
        rows.append(
            {
                "modality": m,
                "n_prompts": len(b),
                "total_planned": int(b["raters_planned"].sum()),
                "total_uniform": int(b["uniform_raters"].sum()),
                "share_reaching_target_plan": float((b["predicted_icc_k"] >= t - 1e-12).mean()),
                "share_reaching_target_uniform": float((b["predicted_icc_uniform"] >= t - 1e-12).mean()),
                "mean_icc_k_plan": float(b["predicted_icc_k"].mean()),
                "mean_icc_k_uniform": float(b["predicted_icc_uniform"].mean()),
                "budget_binding": bool(b["budget_binding"].iloc[0]),
                "icc_model": b["icc_model"].iloc[0],
            }
        )
    return pd.DataFrame(rows)


class RaterPlanInputError(UserInputError):
    """The judge table cannot drive a rater plan (no usable AI ratings); the message says why."""


def plan_from_tables(
    judges: pd.DataFrame,
    stimuli: pd.DataFrame,
    config: AllocationConfig,
    judge_by_modality: Mapping[str, str | None] | None = None,
    per_prompt_icc: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(plan, summary)`` from the workflow's tables: results/judges/ratings.csv and stimuli.csv.

    The AI differentiation per prompt comes from one judge per modality
    (:func:`modprefs.stats.tables.ai_alignment.select_judge_ratings`); ``per_prompt_icc`` (human per-prompt
    ICC(2,1), optional) feeds the fitted model.

    Raises:
        RaterPlanInputError: the judge table has no usable response-quality rating.
    """
    from modprefs.stats.tables.ai_alignment import ai_clip_means, judges_skip_reason, select_judge_ratings
    from modprefs.stats.tables.ai_alignment_table6 import ai_differentiation

    reason = judges_skip_reason(judges)
    if reason:
        raise RaterPlanInputError(f"rater plan: {reason}")
    ai = select_judge_ratings(judges, judge_by_modality or None)
    plan = rater_plan(ai_differentiation(ai_clip_means(ai, stimuli), stimuli), config, per_prompt_icc)
    return plan, plan_summary(plan)


def human_per_prompt_icc(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame | None:
    """The human per-prompt ICC(2,1) table the rater plan's model is fitted to: ``per_prompt_icc`` when given,
    else computed from ``ratings`` + ``participants`` + ``stimuli`` (Table 6's), else None (the default link)."""
    if "per_prompt_icc" in tables:
        return tables["per_prompt_icc"]
    if {"ratings", "participants"} <= set(tables):
        from modprefs.stats.tables.modality import per_prompt_icc, rating_frame

        return per_prompt_icc(rating_frame(tables["ratings"], tables["participants"], tables["stimuli"]))
    return None


def summary_lines(summary: pd.DataFrame, target: float) -> list[str]:
    """One log line per modality of :func:`plan_summary`'s table."""
    return [
        f"{r.modality}: {r.n_prompts} prompts, {r.total_planned} raters planned vs {r.total_uniform} uniform "
        f"(predicted share reaching {target:.2f}: {r.share_reaching_target_plan:.2f} vs "
        f"{r.share_reaching_target_uniform:.2f}); budget binding: {r.budget_binding}; model: {r.icc_model}"
        for r in summary.itertuples(index=False)
    ]


def plan_warnings(plan: pd.DataFrame) -> list[str]:
    """What a user should know about a plan: the prior model's cost, and every prompt note."""
    out = []
    if plan["icc_model"].astype(str).str.startswith("prior").any():
        out.append(
            "the plan uses the paper's prior slope; benchmarks/validity/judges_allocation.py found it costs more "
            "raters than a uniform design unless the AI explains most of the per-prompt ICC heterogeneity: prefer "
            "icc_model 'fitted' with human per-prompt ICCs from a pilot"
        )
    out += [f"rater plan note: {note}" for note in plan.loc[plan["note"] != "", "note"].unique()]
    return out


def figure_rater_plan(plan: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    """Left: raters planned against AI differentiation per modality (dashed: the uniform count).
    Right: predicted ICC(2,k) of the plan and of the uniform design (dotted: the target). PNG, Agg."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from modprefs.stats.figures import COLOURS, save_png

    fig = Figure(figsize=(10, 4.2))
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    for m, b in plan.groupby("modality", sort=True):
        c = COLOURS.get(m)
        b = b.sort_values("ai_diff")
        ax1.scatter(
            b["ai_diff"],
            b["raters_planned"],
            s=14,
            color=c,
            alpha=0.8,
            label=f"{m}: {int(b['raters_planned'].sum())} raters planned",
        )
        ax1.axhline(
            b["uniform_raters"].iloc[0],
            color=c,
            ls="--",
            lw=1,
            label=f"{m} uniform: {int(b['uniform_raters'].sum())} raters",
        )
        ax2.scatter(b["ai_diff"], b["predicted_icc_k"], s=14, color=c, alpha=0.8, label=f"{m}: plan")
        ax2.scatter(
            b["ai_diff"], b["predicted_icc_uniform"], s=14, color=c, alpha=0.5, marker="x", label=f"{m}: uniform"
        )
    ax2.axhline(float(plan["target"].iloc[0]), color="#555555", ls=":", lw=1)
    ax1.set(xlabel="AI differentiation (points)", ylabel="raters per prompt", title="Rater plan")
    ax2.set(
        xlabel="AI differentiation (points)",
        ylabel="predicted ICC(2,k)",
        ylim=(0, 1),
        title=f"Predicted reliability (target {float(plan['target'].iloc[0]):g})",
    )
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, target)


__all__ = [
    "AllocationConfig",
    "PAPER_MEAN_ICC",
    "PAPER_SLOPE",
    "PLAN_COLUMNS",
    "allocate",
    "figure_rater_plan",
    "fit_icc_line",
    "fitted_predictions",
    "minimal_raters",
    "plan_summary",
    "predict_icc",
    "prior_icc",
    "rater_plan",
    "uniform_raters",
]
