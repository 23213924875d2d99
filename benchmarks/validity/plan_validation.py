"""Validation of ``modprefs plan`` against the analysis itself, on fresh simulated studies (issue #17, 4a and 4c).

``--part precision`` (plan_precision.json)
    Paper priors; grid: 40 prompts, 10 trials, raters {12, 16, ..., 40}; target: audio ICC(2,k) CI
    half-width <= .20 in >= 80 % of studies, with the default (analysis-calibrated) planning interval.
    The recommended design is then simulated afresh (``--n-fresh`` studies from streams the planner
    never used) and the analysis' own interval (:func:`modprefs.stats.reliability.icc_ci.icc_ci_for_design`,
    its default method, ``--n-boot`` resamples) computed on each: the share meeting .20 must be >= the
    promised .80 within Monte-Carlo error, and is compared with the planner's predicted assurance.
``--part power_icc`` (plan_power_icc.json)
    Design 40 prompts x 20 raters x 10 trials. For audio - text ICC(2,1) differences .1, .2, .3 (the
    planner's alternative, :func:`modprefs.plan.priors.icc_diff_params`): the planner's power
    (``--n-sims`` studies) vs the empirical rejection rate of Table 4's own test on fresh studies at the
    same parameters, from their tables: ``--icc-test jackknife`` (the default,
    :func:`modprefs.stats.reliability.icc_difference.icc_difference_test`, ``--n-noise`` residual refits),
    ``calibrated`` (the same test with its variance calibrated under H0, Table 4's default; written to
    plan_power_icc_calibrated.json and plan_null_calibrated.json) or ``permutation``
    (:func:`modprefs.stats.tables.reliability_table.icc_permutation_test`, ``--n-perm``); reject at p <= .05.
``--part power_table2`` (plan_power_table2.json)
    Same design. Latent modality effects b_text 0, -4, -9, -14: Table 2's own model
    (:func:`modprefs.stats.tables.modality.table2_fit` as Table 2 fits it: the default structure down its fallback
    ladder, slopes kept where their LRT gives p <= the default slope alpha; Satterthwaite p) on fresh studies;
    the planner's power (location shift of its central studies) at the mean estimated effect.
``--part null`` (plan_null.json)
    Two nulls at the same design, the planned test's rejection rate (the planner's own machinery on
    ``--n-sims`` studies) and the analysis' test's (``--icc-test``, fresh studies): ``exchangeable`` -- no modality
    difference at all (text = audio parameters, same clip effects up to rho .999); ``equal_icc`` --
    the planner's alternative at difference 0 (equal expected ICC(2,1), modality-specific clips).

    OPENBLAS_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/validity/plan_validation.py --part precision
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # _plan_common
from _plan_common import OUT, ROOT, Clock, fresh_study, mc_se, parallel_map

from modprefs.io import write_json
from modprefs.plan.engine import SimSettings, Task, cached_object, code_fingerprint, run_tasks
from modprefs.plan.fastsim import study_tables
from modprefs.plan.grid import Costs, Design, Targets, design_grid
from modprefs.plan.intervals import ANALYSIS_CI_METHOD, analysis_half_widths
from modprefs.plan.planner import jackknife_test_calibration, make_plan
from modprefs.plan.priors import icc_diff_params, paper_priors
from modprefs.plan.summary import icc_diff_power, table2_power
from modprefs.stats.tables.modality import DEFAULT_SLOPE_ALPHA

CACHE = ROOT / "results" / "plan_benchmark_cache"
DESIGN = Design(40, 20, 10, ("audio", "text"))
ALPHA = 0.05
# the jackknife interval (the analysis default) is ~2x the Wald one: .20 is reached inside this grid (~32 raters)
TARGET_HW = 0.20


def priors():
    return cached_object(
        CACHE, {"paper": True, "seed": 1, "boot": 60, "q": (0.1, 0.9)}, lambda: paper_priors(seed=1, n_boot=60)
    )


def _z(a: float, se_a: float, b: float, se_b: float) -> float:
    return float((a - b) / math.sqrt(se_a**2 + se_b**2)) if se_a + se_b > 0 else math.nan


# ------------------------------------------------------------------------------------------- precision
def _fresh_hw(args):
    params, design, i, method, n_boot = args
    study, rng = fresh_study(params, design, 7, i)
    return analysis_half_widths(study, method, n_boot, rng, 0.95)["audio"]


def part_precision(args) -> dict:
    pr = priors()
    designs = design_grid([40], [12, 16, 20, 24, 28, 32, 40], [10], "both")
    targets = Targets(ci_half_width=TARGET_HW, target_conditions=("audio",), assurance=0.8)
    result = make_plan(
        pr,
        designs,
        targets,
        Costs(),
        SimSettings(n_sims=args.n_sims, seed=1),
        ("central",),
        jobs=args.jobs,
        cache_dir=CACHE,
    )
    rec = result.recommendations.iloc[0]
    if not rec["met"]:
        raise SystemExit(f"no design met the target: {rec['note']}")
    d = Design(int(rec["prompts"]), int(rec["raters"]), int(rec["trials"]), ("audio", "text"))
    hw = np.array(
        parallel_map(
            _fresh_hw, [(pr.central, d, i, ANALYSIS_CI_METHOD, args.n_boot) for i in range(args.n_fresh)], args.jobs
        )
    )
    ok = np.isfinite(hw)
    share = float(np.mean(hw[ok] <= TARGET_HW))
    table = result.table[
        [
            "raters",
            "ci_half_width_audio",
            "ci_half_width_audio_mcse",
            "assurance_audio",
            "assurance_audio_mcse",
            "interval_factor_audio",
            "cost",
        ]
    ]
    return {
        "target": {"ci_half_width": TARGET_HW, "condition": "audio", "assurance": 0.8},
        "analysis_ci_method": ANALYSIS_CI_METHOD,
        "n_boot_fresh": args.n_boot,
        "recommended": {
            "prompts": d.prompts,
            "raters": d.raters,
            "trials": d.trials,
            "predicted_assurance": float(rec["assurance_audio"]),
            "predicted_assurance_mcse": float(rec["assurance_audio_mcse"]),
            "predicted_mean_half_width": float(rec["ci_half_width_audio"]),
        },
        "fresh": {
            "n_studies": int(ok.sum()),
            "share_meeting_target": share,
            "share_mcse": mc_se(share, int(ok.sum())),
            "mean_half_width": float(hw[ok].mean()),
            "mean_half_width_mcse": float(hw[ok].std(ddof=1) / math.sqrt(ok.sum())),
        },
        "meets_promise_within_mc_error": bool(share + 2 * mc_se(share, int(ok.sum())) >= 0.8),
        "z_fresh_share_vs_predicted": _z(
            share, mc_se(share, int(ok.sum())), float(rec["assurance_audio"]), float(rec["assurance_audio_mcse"])
        ),
        "grid": json.loads(table.to_json(orient="records")),
    }


# ------------------------------------------------------------------------------------------- ICC power
def _analysis_test(args) -> tuple[float, float]:
    """Table 4's own test of the ICC(2,1) difference on one fresh study, from its tables: (p, difference)."""
    from modprefs.stats.reliability.icc import analysable_ratings
    from modprefs.stats.reliability.icc_difference import icc_difference_test
    from modprefs.stats.tables.reliability_table import icc_permutation_test

    params, design, i, test, n_resamples = args
    study, _ = fresh_study(params, design, 11, i)
    ratings, participants, stimuli = study_tables(study)
    if test == "permutation":
        res = icc_permutation_test(ratings, participants, n_resamples, seed=i)["icc_2_1"]
        return res["p_value"], res["observed"]
    frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}
    res = icc_difference_test(frames, n_noise=n_resamples, seed=i, method=test)["icc_2_1"]
    return res.p_value, res.difference


def planned_icc_test(params, args, seeds: tuple[int, ...] = (1,)) -> dict:
    """The planner's ICC-difference test on ``--n-sims`` studies per seed at ``params`` (its own engine; for the
    jackknife test calibrated on the first ``--n-calibration`` of each seed's studies), pooled over ``seeds``
    (one seed: what a plan computes; several: less Monte-Carlo error in the check)."""
    runs = []
    for seed in seeds:
        settings = SimSettings(
            n_sims=args.n_sims,
            seed=seed,
            interval="sampling",
            table2=False,
            icc_test=args.icc_test,
            n_calibration=args.n_calibration,
            n_boot=args.n_noise,
        )
        [res] = run_tasks([Task("central", "icc_diff", params, DESIGN, settings)], jobs=1, cache_dir=CACHE)
        jk = jackknife_test_calibration({DESIGN: res}).get(DESIGN) if args.icc_test != "permutation" else None
        power, se, crit = icc_diff_power(res, ALPHA, jk)
        run = {
            "seed": seed,
            "power": power,
            "mcse": se,
            "critical_z": crit,
            "n": args.n_sims,
            "mean_diff": float(np.nanmean(res["rec:diff1"])),
        }
        if jk is not None:
            run.update(jackknife_se_ratio=jk[0], jackknife_df=jk[1], n_calibration=args.n_calibration)
        runs.append(run)
    power = float(np.mean([r["power"] for r in runs]))
    return {
        "power": power,
        "mcse": mc_se(power, args.n_sims * len(runs)),
        "n": args.n_sims * len(runs),
        "mean_diff": float(np.mean([r["mean_diff"] for r in runs])),
        "runs": runs,
    }


def empirical_test(params, args) -> dict:
    """The analysis' own test (``--icc-test``) on ``--n-fresh`` fresh studies: rejection rate at ALPHA (cached)."""
    n_resamples = args.n_perm if args.icc_test == "permutation" else args.n_noise
    tasks = [(params, DESIGN, i, args.icc_test, n_resamples) for i in range(args.n_fresh)]
    payload = {
        "fresh": dataclasses.asdict(params),
        "design": dataclasses.asdict(DESIGN),
        "n": args.n_fresh,
        "test": args.icc_test,
        "resamples": n_resamples,
        "code": code_fingerprint(),
    }
    out = np.array(cached_object(CACHE, payload, lambda: parallel_map(_analysis_test, tasks, args.jobs)), float)
    ok = np.isfinite(out[:, 0])
    rate = float(np.mean(out[ok, 0] <= ALPHA))
    return {
        "test": args.icc_test,
        "rejection_rate": rate,
        "mcse": mc_se(rate, int(ok.sum())),
        "mean_diff": float(np.nanmean(out[:, 1])),
        "n": int(ok.sum()),
        "undefined": int((~ok).sum()),
        "n_resamples": n_resamples,
    }


def part_power_icc(args) -> dict:
    pr = priors()
    points = []
    for delta in (0.1, 0.2, 0.3):
        params = icc_diff_params(pr.central, pr, delta)
        planned = planned_icc_test(params, args, args.planner_seeds)
        emp = empirical_test(params, args)
        z = _z(planned["power"], planned["mcse"], emp["rejection_rate"], emp["mcse"])
        points.append(
            {"delta": delta, "planned": planned, "analysis_test": emp, "z": z, "agree_within_2_mcse": bool(abs(z) <= 2)}
        )
    return {
        "design": dataclasses.asdict(DESIGN),
        "alpha": ALPHA,
        "icc_test": args.icc_test,
        "points": points,
        "n_agreeing": sum(p["agree_within_2_mcse"] for p in points),
    }


# ------------------------------------------------------------------------------------------- Table 2 power
def _table2_fit(args):
    """(modality estimate, its p, the ladder step) of Table 2's default fit (structure, fallback ladder and slope
    LRT as :func:`modprefs.stats.tables.modality.table2` uses them) on one fresh study."""
    from modprefs.stats.tables.modality import rating_frame, table2_fit

    params, design, i = args
    study, _ = fresh_study(params, design, 13, i)
    ratings, participants, stimuli = study_tables(study)
    ladder = table2_fit(rating_frame(ratings, participants, stimuli))
    ct = ladder.fit.coef_table().set_index("term")
    return ct.loc["modality", "estimate"], ct.loc["modality", "p"], ladder.step


def part_power_table2(args) -> dict:
    pr = priors()
    settings = SimSettings(n_sims=args.n_sims, seed=1, interval="sampling", table2=True)
    [central] = run_tasks([Task("central", "main", pr.central, DESIGN, settings)], jobs=1, cache_dir=CACHE)
    points = []
    for b_latent in (0.0, -4.0, -9.0, -14.0):
        params = dataclasses.replace(pr.central, b_text=b_latent)
        rows = parallel_map(_table2_fit, [(params, DESIGN, i) for i in range(args.n_fresh)], args.jobs)
        fits = np.array([r[:2] for r in rows], dtype=float)
        effect = float(fits[:, 0].mean())
        rate = float(np.mean(fits[:, 1] < ALPHA))
        planned, se = table2_power(central, "modality", effect, ALPHA)
        z = _z(planned, se, rate, mc_se(rate, len(fits)))
        points.append(
            {
                "b_text_latent": b_latent,
                "mean_estimated_effect": effect,
                "table2_rejection_rate": rate,
                "table2_mcse": mc_se(rate, len(fits)),
                "planned_power": planned,
                "planned_mcse": se,
                "z": z,
                "agree_within_2_mcse": bool(abs(z) <= 2),
                "n": len(fits),
                "steps_used": dict(Counter(r[2] for r in rows)),
            }
        )
    return {
        "design": dataclasses.asdict(DESIGN),
        "alpha": ALPHA,
        "term": "modality",
        "model": "table2_fit() default: participant_slopes down its fallback ladder, slopes kept where their LRT "
        f"gives p <= {DEFAULT_SLOPE_ALPHA}; Satterthwaite p",
        "points": points,
        "n_agreeing": sum(p["agree_within_2_mcse"] for p in points),
    }


# ------------------------------------------------------------------------------------------- nulls
def exchangeable_null(p):
    """Text = audio for every per-condition parameter, no modality fixed effects, (almost) the same clips."""
    same = {
        f.name: getattr(p, f.name.replace("_text", "_audio"))
        for f in dataclasses.fields(p)
        if f.name.endswith("_text") and hasattr(p, f.name.replace("_text", "_audio"))
    }
    same.update(b_text=0.0, b_len_text=0.0, b_trial_text=0.0, b_first_text=0.0, rho_clip_modality=0.999)
    return dataclasses.replace(p, **same)


def part_null(args) -> dict:
    pr = priors()
    out = {}
    for name, params in (
        ("exchangeable", exchangeable_null(pr.central)),
        ("equal_icc", icc_diff_params(pr.central, pr, 0.0)),
    ):
        planned = planned_icc_test(params, args, tuple(s + 1 for s in args.planner_seeds))
        emp = empirical_test(params, args)
        out[name] = {
            "planned_test_size": planned,
            "analysis_test_size": emp,
            "planned_within_2_mcse_of_5pct": bool(abs(planned["power"] - ALPHA) <= 2 * planned["mcse"]),
            "analysis_within_2_mcse_of_5pct": bool(abs(emp["rejection_rate"] - ALPHA) <= 2 * emp["mcse"]),
        }
    return {"design": dataclasses.asdict(DESIGN), "alpha": ALPHA, "icc_test": args.icc_test, "nulls": out}


PARTS = {
    "precision": (part_precision, "plan_precision.json"),
    "power_icc": (part_power_icc, "plan_power_icc.json"),
    "power_table2": (part_power_table2, "plan_power_table2.json"),
    "null": (part_null, "plan_null.json"),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=sorted(PARTS), required=True)
    ap.add_argument("--n-sims", type=int, default=200, help="planner studies per design")
    ap.add_argument("--n-fresh", type=int, default=100, help="fresh studies per point for the analysis' own test")
    ap.add_argument(
        "--icc-test",
        choices=("calibrated", "jackknife", "permutation"),
        default="jackknife",
        help="Table 4's ICC-difference test (stats.icc_test) that power_icc and null validate (calibrated: written to "
        "plan_null_calibrated.json / plan_power_icc_calibrated.json)",
    )
    ap.add_argument("--n-perm", type=int, default=79, help="permutations of Table 4's test (79: exact size .05)")
    ap.add_argument("--n-noise", type=int, default=99, help="residual refits of the jackknife test")
    ap.add_argument(
        "--planner-seeds",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        default=(1,),
        help="planner seeds pooled for the planned power (null: each + 1); default 1, what a plan uses",
    )
    ap.add_argument(
        "--n-calibration",
        type=int,
        default=10,
        help="planner studies that calibrate the jackknife test (one design here, a grid has several)",
    )
    ap.add_argument("--n-boot", type=int, default=200, help="resamples of the analysis' interval on fresh studies")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    fn, name = PARTS[args.part]
    clock = Clock()
    result = fn(args)
    result["settings"] = vars(args)
    result["seconds"] = clock.seconds()
    if args.part in ("null", "power_icc") and args.icc_test == "calibrated":  # beside the jackknife's files
        name = name.replace(".json", "_calibrated.json")
    write_json(result, OUT / name)
    print(json.dumps(result, indent=1, default=str)[:4000])


if __name__ == "__main__":
    main()
