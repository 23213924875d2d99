"""``make_plan``: priors x design grid x targets -> the design table and the recommendation per scenario."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from modprefs.plan.engine import SimSettings, Task, run_tasks
from modprefs.plan.errors import PlanInputError
from modprefs.plan.grid import Costs, Design, Targets
from modprefs.plan.intervals import calibration_designs, fit_ratio_model
from modprefs.plan.priors import SCENARIOS, Priors, icc_diff_params
from modprefs.plan.summary import recommend, shortfalls, summarise

PRIORS_STATEMENT = (
    "The priors drive this answer. Every number here is what the simulator predicts if the priors are right: "
    "above all each modality's single-rater reliability ICC(2,1) ({iccs}, from {source}). If your raters, "
    "prompts or rating scale differ from the priors' source, the answer moves: the pessimistic and optimistic "
    "rows show how far across the priors' uncertainty. A pilot (--pilot) replaces the priors with your own."
)


@dataclass
class PlanResult:
    """Everything a plan produces: the design table (one row per scenario x design) and the recommendations."""

    table: pd.DataFrame
    recommendations: pd.DataFrame
    unmet: dict[str, list[str]]
    statement: str


def analysis_ratios(results: dict[Design, dict[str, np.ndarray]]) -> dict[Design, dict[str, float]]:
    """Per design and condition, the analysis / Wald half-width ratio from the grid-wide model
    (:func:`modprefs.plan.intervals.fit_ratio_model`) over every design's calibration studies."""
    out: dict[Design, dict[str, float]] = {d: {} for d in results}
    conditions = sorted({c for d in results for c in d.conditions})
    for c in conditions:
        rows, logs = [], []
        for d, res in results.items():
            if f"cal_analysis:{c}" in res:
                lr = np.log(res[f"cal_analysis:{c}"] / res[f"cal_wald:{c}"])
                rows += [[d.prompts, d.raters, d.trials]] * lr.size
                logs.append(lr)
        if not logs:
            continue
        lr = np.concatenate(logs)
        if not np.isfinite(lr).any():
            raise PlanInputError(
                f"--n-calibration: none of the {lr.size} calibration studies of the {c} condition gave both the "
                "analysis' interval and the Wald interval of ICC(2,k) (designs this small often put the ICC at 0 "
                "or 1); raise --n-calibration, use larger designs, or --interval sampling"
            )
        model = fit_ratio_model(np.array(rows, float), lr)
        for d in results:
            if c in d.conditions:
                out[d][c] = float(model(np.array([[d.prompts, d.raters, d.trials]], float))[0])
    return out


def jackknife_test_calibration(results: dict[Design, dict[str, np.ndarray]]) -> dict[Design, tuple[float, float]]:
    """Per design, (SE ratio, df) of Table 4's crossed-jackknife difference test: the ratio of its SE to the
    Wald SE sqrt(se_audio^2 + se_text^2) of the ICC(2,1) difference and its Satterthwaite df, each from a
    log-linear model in the design's size (:func:`modprefs.plan.intervals.fit_ratio_model`) over every
    calibration study of the alternative's simulations."""
    rows, ratios, dfs = [], [], []
    for d, res in results.items():
        if "cal_jk_se" in res:
            ratios.append(np.log(res["cal_jk_se"] / res["cal_wald_diff_se"]))
            dfs.append(np.log(res["cal_jk_df"]))
            rows += [[d.prompts, d.raters, d.trials]] * res["cal_jk_se"].size
    if not ratios:
        return {}
    lr, ldf = np.concatenate(ratios), np.concatenate(dfs)
    if not np.isfinite(lr).any():
        raise PlanInputError(
            f"--n-calibration: none of the {lr.size} calibration studies of the ICC-difference alternative gave both "
            "the jackknife test and the Wald SE (designs this small often put an ICC at 0 or 1); raise "
            "--n-calibration or use larger designs"
        )
    ratio_model = fit_ratio_model(np.array(rows, float), lr)
    df_model = fit_ratio_model(np.array(rows, float), ldf)
    sizes = np.array([[d.prompts, d.raters, d.trials] for d in results], float)
    return {d: (float(r), float(df)) for d, r, df in zip(results, ratio_model(sizes), df_model(sizes), strict=True)}


def make_plan(
    priors: Priors,
    designs: list[Design],
    targets: Targets,
    costs: Costs,
    settings: SimSettings,
    scenarios: tuple[str, ...] = SCENARIOS,
    jobs: int = 1,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> PlanResult:
    """Simulate every design under every scenario and summarise (see :mod:`modprefs.plan.summary`)."""
    targets.check(designs[0].conditions)
    costs.check()
    pool = tuple(map(tuple, priors.lengths_pool.tolist())) if priors.lengths_pool is not None else None
    if pool is not None and max(d.prompts for d in designs) > len(pool):
        from modprefs.plan.errors import PlanInputError

        raise PlanInputError(
            f"--prompts: {max(d.prompts for d in designs)} prompts exceed the {len(pool)} prompts "
            "whose lengths the clips table gives"
        )
    sizes = np.array([[d.prompts, d.raters, d.trials] for d in designs], float)
    calibrated = {designs[i] for i in calibration_designs(sizes, settings.calibration_designs)}
    uncalibrated = dataclasses.replace(settings, n_calibration=0)
    tasks: list[Task] = []
    index = []
    for s in scenarios:
        params = priors.scenarios[s]
        alt_params = icc_diff_params(params, priors, targets.icc_diff) if targets.icc_diff is not None else None
        for d in designs:
            sd = settings if d in calibrated else uncalibrated
            tasks.append(Task(s, "main", params, d, sd, pool, priors.scale))
            index.append((s, d, "main"))
            if alt_params is not None:
                tasks.append(Task(s, "icc_diff", alt_params, d, sd, pool, priors.scale))
                index.append((s, d, "icc_diff"))
    results = run_tasks(tasks, jobs=jobs, cache_dir=cache_dir, progress=progress)
    by = {key: res for key, res in zip(index, results)}
    rows = []
    for s in scenarios:
        ratios = analysis_ratios({d: by[(s, d, "main")] for d in designs}) if settings.interval == "analysis" else {}
        jk = jackknife_test_calibration({d: by[(s, d, "icc_diff")] for d in designs if (s, d, "icc_diff") in by})
        for d in designs:
            row = summarise(
                d,
                by[(s, d, "main")],
                priors.scenarios[s],
                targets,
                costs,
                settings.interval,
                by.get((s, d, "icc_diff")),
                ratios.get(d),
                jk.get(d),
            )
            rows.append({"scenario": s, **row})
    table = pd.DataFrame(rows)
    recs, unmet = [], {}
    for s in scenarios:
        sub = table[table["scenario"] == s]
        best = recommend(sub)
        if best is None:
            unmet[s] = shortfalls(sub)
            recs.append({"scenario": s, "met": False, "note": "; ".join(unmet[s])})
        else:
            recs.append({**best.to_dict(), "met": True, "note": ""})
    iccs = ", ".join(f"{r.condition} {r.central:.3f}" for r in priors.table.itertuples() if r.quantity == "ICC(2,1)")
    return PlanResult(
        table=table,
        recommendations=pd.DataFrame(recs),
        unmet=unmet,
        statement=PRIORS_STATEMENT.format(iccs=iccs, source=priors.source),
    )
