"""Calibration of the rating simulator against the paper (§3.3, §4.1, §4.3, Tables 1–4).

Simulates the paper-size study (100 prompts: 25 long-difference with |Δchars| >= 449, 75 others;
53 recruited raters per condition; 20 trials + the attention check) with the default
``SimulationParams`` over several seeds and reports each figure next to the paper's. Analyses use
the paper's sample: participants who passed the attention check, trials >= 1.

Table 2 is checked on the OBSERVED (rounded, clipped, tie-snapped) ratings: its omnibus LMM
``rating ~ presented_first * modality + len_z * modality + trial_z * modality + (1|participant) +
(1|clip)`` (modality text = 1, reference audio; len_z = z of n_chars over the stimulus set, sample
SD; trial_z = z of the trial position over positions 1..20, sample SD, as the simulator defines it)
is fitted by REML per seed and averaged (``table2_omnibus``: mean, SD over seeds, Monte-Carlo SE of
the mean, mean model SE of one study), plus §4.1's per-condition simple length effects
(``simple_len_z``) and the share of ratings on 1 or 100. The simulator's latent defaults are tuned
so these match the paper.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/ratings_calibration.py [--seeds 100]

Writes benchmarks/out/ratings_calibration.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from modprefs.ratings.simulate import SimulationParams, simulate_ratings  # noqa: E402

PAPER = {
    "decisive_gap_mean": {"text": 41.7, "audio": 27.9},
    "decisive_gap_median": {"text": 34.0, "audio": 20.0},
    "tie_gap_mean": {"text": 3.3, "audio": 3.9},
    # not reported; implied by the Mann–Whitney U statistics of §4.1 (see simulate.py docstring)
    "tie_rate_implied": {"text": 0.277, "audio": 0.270},
    "failed_attention": {"text": 0.094, "audio": 0.132},
    "completed_table3": {"text": 0.925, "audio": 0.962},
    "trial_time_mean": {"text": 78.8, "audio": 136.4},
    "trial_time_sd": {"text": 41.6, "audio": 35.9},
    "log_time_trial_slope": {"text": -0.17, "audio": -0.09},
    "session_minutes_mean": {"text": 27.0, "audio": 47.3},
    "session_minutes_sd": {"text": 13.3, "audio": 12.4},
    "difficulty_mean": {"text": 2.45, "audio": 2.50},
    "difficulty_sd": {"text": 0.90, "audio": 0.96},
    "relisten_first_rate": {"audio": 214 / 920},
    "justification_rate": {"text": 311 / 890, "audio": 347 / 920},
    "raters_per_stimulus": {"text": 8.9, "audio": 9.2},
    "icc21": {"text": 0.295, "audio": 0.333},
    "icc2k": {"text": 0.788, "audio": 0.821},
    # §4.1 modality-specific simple effect of character length (z), separate per-condition models
    "simple_len_z": {"text": 4.92, "audio": 3.52},
    "cross_modality_winner_agreement": 0.53,
    "age_mean": {"text": 45.0, "audio": 40.2},
    "woman": {"text": 0.646, "audio": 0.543},
    "native_english": {"text": 0.854, "audio": 0.913},
    "bachelor_plus": {"text": 0.604, "audio": 0.435},
}

#: Table 2: the omnibus LMM rating ~ presented_first * modality + len_z * modality + trial_z * modality
#: + (1|participant) + (1|clip); modality coded text = 1 (reference audio).
TABLE2 = {
    "intercept": 74.80, "presented_first": -2.61, "modality_text": -6.21, "len_z": 3.35, "trial_z": 0.03,
    "first_x_modality": -0.51, "modality_x_len_z": 1.53, "modality_x_trial_z": 0.90,
}


def paper_stimuli(seed: int, n_prompts: int = 100, n_long: int = 25) -> pd.DataFrame:
    """A PRISM-like stimulus set: response lengths lognormal; the long stratum differs by >= 449 chars."""
    rng = np.random.default_rng([seed, 77])
    rows = []
    for i in range(n_prompts):
        pid = f"p{i:03d}"
        long = i < n_long
        while True:
            a, b = np.rint(rng.lognormal(np.log(380), 0.55, 2))
            if long:
                b = a + 449 + rng.exponential(350)
            if (abs(a - b) >= 449) == long:
                break
        lens = [a, b] if rng.random() < 0.5 else [b, a]
        for r, n in enumerate(lens):
            rows.append({"prompt_id": pid, "clip_id": f"{pid}_{r}", "response": r,
                         "stratum": "long_diff" if long else "other", "n_chars": int(n),
                         "n_chars_spoken": int(n), "duration_s": round(n / 15.0, 2), "model_name": "m",
                         "prism_score": 70, "history_chars": 0, "history_turns": 0})
    return pd.DataFrame(rows)


def assignments_for(prompt_ids: list[str], raters: int, trials: int, seed: int) -> pd.DataFrame:
    try:
        from modprefs.study.design import make_assignments
        return make_assignments(prompt_ids, raters, trials, seed)
    except ImportError:  # a simple balanced design
        rng = np.random.default_rng(seed)
        rows = []
        for k, cond in enumerate(["text", "audio"]):
            for j in range(raters):
                pid = f"P{k * raters + j + 1:04d}"
                rows.append((pid, cond, 0, "attn", int(rng.integers(2))))
                chosen = [prompt_ids[(j * trials + t) % len(prompt_ids)] for t in range(trials)]
                for t, pr in enumerate(rng.permutation(chosen)):
                    rows.append((pid, cond, t + 1, pr, int(rng.integers(2))))
        return pd.DataFrame(rows, columns=["participant_id", "condition", "trial", "prompt_id", "first_clip"])


def fit_icc(r: pd.DataFrame, trial_max: int) -> tuple[float, float, dict]:
    """ICC(2,1) and ICC(2,k) from rating ~ presented_first + trial_z + (1|clip) + (1|participant), REML."""
    tvals = np.arange(1, trial_max + 1)
    tz = (r["trial"].to_numpy(float) - tvals.mean()) / tvals.std(ddof=1)
    X = np.column_stack([np.ones(len(r)), r["presented_first"].astype(float).to_numpy(), tz])
    y = r["rating"].to_numpy(float)
    try:
        from modprefs.stats.reml import fit_crossed_intercepts
        fit = fit_crossed_intercepts(y, X, r["clip_id"].to_numpy(), r["participant_id"].to_numpy())
        s_clip, s_part, s_res = fit.var_g1, fit.var_g2, fit.var_resid
    except ImportError:
        import statsmodels.api as sm
        df = pd.DataFrame({"y": y, "first": X[:, 1], "tz": tz, "clip": r["clip_id"].to_numpy(),
                           "part": r["participant_id"].to_numpy(), "g": 1})
        md = sm.MixedLM.from_formula("y ~ first + tz", groups="g", re_formula="0", data=df,
                                     vc_formula={"clip": "0 + C(clip)", "part": "0 + C(part)"})
        res = md.fit(reml=True)
        names = list(res.model.exog_vc.names)
        s_clip, s_part = float(res.vcomp[names.index("clip")]), float(res.vcomp[names.index("part")])
        s_res = float(res.scale)
    k = r.groupby("clip_id").size().mean()
    icc1 = s_clip / (s_clip + s_part + s_res)
    icck = s_clip / (s_clip + (s_part + s_res) / k)
    return icc1, icck, {"var_clip": s_clip, "var_participant": s_part, "var_resid": s_res, "k": k}


def _std_predictors(r: pd.DataFrame, stim: pd.DataFrame, trial_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """presented_first (0/1), len_z and trial_z of rating rows, standardised as the simulator does.

    len_z: z-score of ``n_chars`` over the stimulus set (sample SD, R's ``scale``); trial_z: the
    trial position standardised over positions 1..trial_max (sample SD), i.e. the simulator's own
    definition (not over the analysed rows, which differ only through the few dropouts' trials).
    """
    n_chars = stim.set_index("clip_id")["n_chars"].astype(float)
    len_z = ((n_chars - n_chars.mean()) / n_chars.std(ddof=1)).reindex(r["clip_id"]).to_numpy()
    tvals = np.arange(1, trial_max + 1, dtype=float)
    trial_z = (r["trial"].to_numpy(float) - tvals.mean()) / tvals.std(ddof=1)
    first = r["presented_first"].astype(float).to_numpy()
    return first, len_z, trial_z


def fit_table2(r: pd.DataFrame, stim: pd.DataFrame, trial_max: int) -> dict[str, float]:
    """Table 2's omnibus LMM on the observed ratings, plus §4.1's per-condition simple length effects.

    ``r``: rated trials (trial >= 1) of participants who passed the attention check, both conditions.
    Omnibus: rating ~ first * text + len_z * text + trial_z * text + (1|participant) + (1|clip), with
    ``text`` = 1 for the text condition (reference audio) and the clip factor shared across
    modalities (clip_id names the same response in both). Simple effects: per condition,
    rating ~ first + len_z + trial_z + (1|participant) + (1|clip). REML (equal to lme4).
    """
    from modprefs.stats.reml import fit_crossed_intercepts
    first, len_z, trial_z = _std_predictors(r, stim, trial_max)
    text = (r["condition"] == "text").to_numpy(float)
    X = np.column_stack([np.ones(len(r)), first, text, len_z, trial_z, first * text, text * len_z, text * trial_z])
    y = r["rating"].to_numpy(float)
    fit = fit_crossed_intercepts(y, X, r["clip_id"].to_numpy(), r["participant_id"].to_numpy())
    out = dict(zip(TABLE2, map(float, fit.beta)))
    out.update({f"se_{k}": float(se) for k, se in zip(TABLE2, fit.beta_se)})
    for c in ("audio", "text"):
        m = (r["condition"] == c).to_numpy()
        Xc = np.column_stack([np.ones(m.sum()), first[m], len_z[m], trial_z[m]])
        fc = fit_crossed_intercepts(y[m], Xc, r["clip_id"].to_numpy()[m], r["participant_id"].to_numpy()[m])
        out[f"simple_len_z_{c}"] = float(fc.beta[2])
    return out


def one_seed(seed: int, params: SimulationParams, n_raters: int = 53, n_trials: int = 20) -> dict:
    stim = paper_stimuli(seed)
    asg = assignments_for(sorted(stim["prompt_id"].unique()), n_raters, n_trials, seed)
    ratings, trials, parts, truth = simulate_ratings(stim, asg, params, seed)
    out: dict = {}
    rated = ratings[ratings["trial"] > 0]
    out["share_on_bound"] = float(((rated["rating"] <= 1) | (rated["rating"] >= 100)).mean())
    passed = parts.loc[parts["passed_attention"], "participant_id"]
    cond_of = parts.set_index("participant_id")["condition"]
    tr = trials[(trials["trial"] > 0) & trials["participant_id"].isin(passed)].copy()
    tr["condition"] = tr["participant_id"].map(cond_of).to_numpy()
    wide = ratings[ratings["trial"] > 0].pivot_table(index=["participant_id", "trial"], columns="presented_first",
                                                     values="rating").reset_index()
    wide["gap"] = (wide[True] - wide[False]).abs()
    tr = tr.merge(wide[["participant_id", "trial", "gap"]], on=["participant_id", "trial"])
    rr = ratings[(ratings["trial"] > 0) & ratings["participant_id"].isin(passed)]
    means = {}
    for c in ("text", "audio"):
        t = tr[tr["condition"] == c]
        dec, tie = t[t["preference"] != "tie"], t[t["preference"] == "tie"]
        pc = parts[parts["condition"] == c]
        pp = pc[pc["passed_attention"]]
        ltime = np.log(t["decision_time_s"].to_numpy(float))
        tz = (t["trial"].to_numpy(float) - 10.5) / np.arange(1, 21).std(ddof=1)
        # practice slope: within-participant regression of log time on trial_z
        lt_dm = ltime - t.groupby("participant_id")["decision_time_s"].transform(lambda s: np.log(s).mean()).to_numpy()
        tz_dm = tz - pd.Series(tz, index=t.index).groupby(t["participant_id"]).transform("mean").to_numpy()
        slope = float((lt_dm * tz_dm).sum() / (tz_dm ** 2).sum())
        icc1, icck, comps = fit_icc(rr[rr["condition"] == c], n_trials)
        pmean = t.groupby("participant_id")["decision_time_s"].mean()
        diff = pc.loc[pc["completed"], "difficulty"].astype(float)
        out[c] = {
            "decisive_gap_mean": dec["gap"].mean(), "decisive_gap_median": dec["gap"].median(),
            "tie_gap_mean": tie["gap"].mean(), "tie_rate": len(tie) / len(t),
            "failed_attention": 1 - pc["passed_attention"].mean(),
            "completed_table3": 1 - ((~pp["completed"]).sum() / len(pc)),
            # Table 3 / §4.2: M (SD) over participants' mean trial durations (U = 255 on 46 x 48 people)
            "trial_time_mean": pmean.mean(), "trial_time_sd": pmean.std(),
            "log_time_trial_slope": slope,
            "session_minutes_mean": pp["session_minutes"].mean(), "session_minutes_sd": pp["session_minutes"].std(),
            "difficulty_mean": diff.mean(), "difficulty_sd": diff.std(),
            "justification_rate": (t["justification"].fillna("") != "").mean(),
            "raters_per_stimulus": len(t) / stim["prompt_id"].nunique(),
            "icc21": icc1, "icc2k": icck, **{f"fit_{k}": v for k, v in comps.items()},
            "age_mean": pp["age"].mean(), "woman": (pp["gender"] == "Woman").mean(),
            "native_english": pp["native_english"].mean(),
            "bachelor_plus": pp["education"].isin(["Bachelor's degree", "Master's degree",
                                                   "Doctoral or professional degree"]).mean(),
        }
        if c == "audio":
            out[c]["relisten_first_rate"] = t["relistened_first"].astype(bool).mean()
        means[c] = rr[rr["condition"] == c].groupby("clip_id")["rating"].mean()
    # cross-modality winner agreement at threshold 0
    agree = []
    for pid in stim["prompt_id"].unique():
        d = [means[c].get(f"{pid}_0", np.nan) - means[c].get(f"{pid}_1", np.nan) for c in ("audio", "text")]
        if np.all(np.isfinite(d)) and d[0] != 0 and d[1] != 0:
            agree.append(np.sign(d[0]) == np.sign(d[1]))
    out["cross_modality_winner_agreement"] = float(np.mean(agree))
    t2 = fit_table2(rr, stim, n_trials)
    out["table2"] = {k: v for k, v in t2.items() if k in TABLE2 or k.startswith("se_")}
    for c in ("text", "audio"):
        out[c]["simple_len_z"] = t2[f"simple_len_z_{c}"]
    return out


def summarise(results: list[dict]) -> dict:
    summary: dict = {}
    for key, paper in PAPER.items():
        if isinstance(paper, dict):
            summary[key] = {}
            for c, pv in paper.items():
                vals = [r[c][key] for r in results if key in r[c]]
                summary[key][c] = {"paper": pv, "sim_mean": float(np.mean(vals)), "sim_sd": float(np.std(vals, ddof=1))
                                   if len(vals) > 1 else 0.0}
            if key == "tie_rate_implied":
                for c in paper:
                    vals = [r[c]["tie_rate"] for r in results]
                    summary[key][c].update(sim_mean=float(np.mean(vals)), sim_sd=float(np.std(vals, ddof=1)))
        else:
            vals = [r[key] for r in results]
            summary[key] = {"paper": paper, "sim_mean": float(np.mean(vals)), "sim_sd": float(np.std(vals, ddof=1))}
    summary["table2_omnibus"] = {}
    for k, pv in TABLE2.items():
        vals = np.array([r["table2"][k] for r in results])
        ses = np.array([r["table2"][f"se_{k}"] for r in results])
        summary["table2_omnibus"][k] = {
            "paper": pv, "sim_mean": float(vals.mean()), "sim_sd": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0,
            # Monte-Carlo SE of the mean over seeds, and the mean model SE of one paper-size study
            "mc_se": float(vals.std(ddof=1) / np.sqrt(len(vals))) if len(vals) > 1 else 0.0,
            "model_se": float(ses.mean())}
    vals = [r["share_on_bound"] for r in results]
    summary["share_of_ratings_on_1_or_100"] = {"paper": None, "sim_mean": float(np.mean(vals)),
                                               "sim_sd": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0}
    return summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "ratings_calibration.json"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a simulation parameter (for tuning)")
    args = ap.parse_args(argv)
    overrides = {k: float(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    params = SimulationParams.from_config(overrides)
    t0 = time.time()
    results = [one_seed(1000 + s, params) for s in range(args.seeds)]
    summary = summarise(results)
    for key, v in summary.items():
        if key == "table2_omnibus":
            for k, w in v.items():
                print(f"{'table2 ' + k:36s} paper {w['paper']:8.3f}  sim {w['sim_mean']:8.3f} ± {w['sim_sd']:.3f}"
                      f"  (MC SE {w['mc_se']:.3f}, model SE {w['model_se']:.3f})")
        elif "paper" in v:
            pv = "    n/a " if v["paper"] is None else f"{v['paper']:8.3f}"
            print(f"{key:36s} paper {pv}  sim {v['sim_mean']:8.3f} ± {v['sim_sd']:.3f}")
        else:
            for c, w in v.items():
                print(f"{key + ' ' + c:36s} paper {w['paper']:8.3f}  sim {w['sim_mean']:8.3f} ± {w['sim_sd']:.3f}")
    from modprefs.io import write_json
    write_json({"n_seeds": args.seeds, "seconds": round(time.time() - t0, 1), "params": params.to_dict(),
                "figures": summary,
                "fit_variance_components": {c: {k: float(np.mean([r[c][f"fit_{k}"] for r in results]))
                                                for k in ("var_clip", "var_participant", "var_resid", "k")}
                                            for c in ("text", "audio")}}, args.out)
    print(f"wrote {args.out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
