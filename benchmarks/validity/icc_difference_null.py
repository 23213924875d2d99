"""Size and power of Table 4's difference tests (audio - text): ICC(2,1), ICC(2,k) and Krippendorff's alpha.

ICC tests, scored on the same studies (one set of leave-one-out refits serves both):

    jackknife    the crossed-jackknife t test (modprefs.stats.reliability.icc_difference, ``stats.icc_test:
                 jackknife``; ``--n-noise`` residual refits per condition)
    calibrated   the same t with its variance calibrated under H0 (``stats.icc_test: calibrated``, the default;
                 the calibration's defaults unless ``--n-replicates``/``--n-null`` say otherwise)
    permutation  the paper's participant permutation (only with ``--n-perm`` > 0; ``--n-perm`` 79 is an
                 exact-size .05 grid)

Alpha tests (continuous: interval alpha on the ratings, units = clips; ordinal and nominal: the A/Tie/B
preferences, units = prompts), on the same studies:

    permutation   the paper's participant permutation of the difference (``--n-perm-alpha`` permutations)
    studentized   the participant permutation of the crossed-jackknife t (Table 4's default; the same permutations)
    jackknife     that t referred to Student's t
                  (modprefs.stats.reliability.alpha_difference.alpha_difference_jackknife; not shipped, scored to
                  show the jackknife's bias)

Generating models (benchmarks/tools/generators.py unless said otherwise), every null with equal population ICCs and
alphas in the two conditions:

    simulator_exchangeable  the project's simulator with text's parameters set to audio's (exchangeable)
    gaussian_same           gaussian_crossed, the same parameters in both conditions (clip x modality
                            deviations independent: the conditions are not exchangeable)
    gaussian_scaled         as gaussian_same with text's every part x 1.6 (random effects, length and order
                            effects) and its mean 10 lower: the same ICCs and alphas on another scale
    gaussian_raters         text's participant variance 450 and residual 600 (audio 150 and 900): the same
                            ICCs and continuous alpha, raters who differ more (the preference alphas differ:
                            this null scores the ICC and continuous-alpha tests only)
    heavy_same              heavy_scale_clipped (t effects, rater scale use, rounding, clipping), the same
                            parameters in both conditions
    rater_heterogeneous     rater_heterogeneous (own primacy and drift, coarse raters, ties at 50/100), the same
                            parameters in both conditions
    rater_types             rater_types (issue #50: Gaussian effects; compressed, stretched and coarse rater
                            types, scale use, a tie-at-50 habit, own primacy and drift, raters skipping 0-40 % of
                            their trials), the same parameters in both conditions
    rater_types_sparse      rater_types with each rater skipping 30-60 % of their trials: at the ``dense`` size
                            (every rater assigned every prompt) raters rate 16-28 of the 40 prompts, the design of
                            the generator in issue #50 (about 11 raters per clip)

Alternatives (power): ``gaussian_alt10`` / ``gaussian_alt20`` = gaussian_same with an extra Gaussian clip effect in
audio (variance 312 / 780: population ICC(2,1) .468 / .568 vs .368, differences .10 / .20); ``rater_types_alt10`` /
``rater_types_alt20`` = rater_types with the same extra audio clip effect inside the generator (before the rater
types, rounding and clipping, so the realised difference is smaller: the tables give the mean D).

Preferences for the generators' studies: the response rated higher, a tie when the two ratings are within 5
points (x 1.6 for gaussian_scaled's text); the simulator states its own.

Sizes: ``small`` = 40 prompts x 20 raters per condition x 10 trials; ``paper`` = 100 x 53 x 20; ``dense`` = 40 x 20
x 40 (every rater assigned every prompt, for ``rater_types_sparse``). Each cell reports
the rejection rate at alpha .05 with its Monte Carlo SE sqrt(r (1 - r) / n) and Clopper-Pearson 95 % interval,
and for the ICC tests mean(V) / mean(D^2) over the studies (the variance each test uses against the squared
difference it should describe; 1 when unbiased, mean D^2 being the variance under a null). Mean D^2 is taken over
the tested studies and ``--truth`` studies fitted only (a tenth of a second each): 4,000 per null cell, so that its
error (about 6 % of it over 600 studies, as large as the ratio band's upper margin) does not decide a cell; the
ratio's SE carries both means' errors (:func:`ratio_se`).

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python benchmarks/validity/icc_difference_null.py --size small \\
        --models simulator_exchangeable,gaussian_scaled,heavy_same --n-studies 100 [--workers 2] [--append]

Writes benchmarks/out/icc_difference_null_v2.json (the summary: config, runs, per-cell rates) and .md, and the
per-study records benchmarks/out/records/icc_difference_null_v2/<size>__<model>.jsonl.gz (benchmarks/tools/_records.py;
``--append`` merges into them; ``--summarise-only`` rebuilds the summary and .md from the records, byte for byte;
the first version's benchmarks/out/icc_difference_null.json is kept). The alpha-only runs (``--no-icc --out
benchmarks/out/alpha_difference_null.json``) write the same layout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

import _records  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from generators import GeneratorParams, generate, study_design  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.ratings.simulation.params import SimulationParams  # noqa: E402
from modprefs.stats.reliability import alpha as alpha_mod  # noqa: E402
from modprefs.stats.reliability import alpha_difference as ad  # noqa: E402
from modprefs.stats.reliability import icc_difference as idiff  # noqa: E402
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, fit_iccs  # noqa: E402
from modprefs.stats.tables import reliability_alpha as alpha_rows  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "icc_difference_null_v2.json"
ALPHA = 0.05
SIZES = {"small": (40, 20, 10), "paper": (100, 53, 20), "dense": (40, 20, 40)}
NULLS = (
    "simulator_exchangeable",
    "gaussian_same",
    "gaussian_scaled",
    "gaussian_raters",
    "heavy_same",
    "rater_heterogeneous",
    "rater_types",
    "rater_types_sparse",
)
#: alternatives: an extra audio clip effect of this variance (gaussian_*: added to the ratings; rater_types_*: inside
#: the generator, before the rater types, rounding and clipping)
ALTERNATIVES = {
    "gaussian_alt10": 312.0,
    "gaussian_alt20": 780.0,
    "rater_types_alt10": 312.0,
    "rater_types_alt20": 780.0,
}
ICC_TESTS = ("jackknife", "calibrated", "calibrated_jkdf", "calibrated_max", "calibrated_raters", "permutation")
#: ``calibrated_jkdf``: the calibrated variance on the jackknife's own df (Table 4's calibrated test before V_cal got
#: its own Satterthwaite df, modprefs.stats.reliability.jackknife_excess.calibrated_variance); ``calibrated_max``:
#: the calibrated test as run before issue #50's rule (V_cal = max(V - (E* - Var*), V Var* / E*); rescore())
ALPHA_METRICS = ("continuous", "ordinal", "nominal")
TIE_BAND = 5.0


def exchangeable_params() -> SimulationParams:
    """The simulator's defaults with every ``_text`` parameter set to its ``_audio`` value, no modality effects."""
    p = SimulationParams()
    same = {
        f.name: getattr(p, f.name[: -len("_text")] + "_audio")
        for f in dataclasses.fields(p)
        if f.name.endswith("_text") and hasattr(p, f.name[: -len("_text")] + "_audio")
    }
    same.update(b_text=0.0, b_len_text=0.0, b_trial_text=0.0, b_first_text=0.0)
    if hasattr(p, "rho_clip_modality"):
        same["rho_clip_modality"] = 0.999
    return dataclasses.replace(p, **same)


def generator_params(model: str) -> GeneratorParams:
    base = GeneratorParams(mu_text=70.0, b_len_text=3.5)
    if model.startswith("rater_types_alt"):
        return dataclasses.replace(base, model="rater_types", var_clip_audio_extra=ALTERNATIVES[model])
    if model == "rater_types_sparse":  # issue #50's generator: each rater skips 30-60 % of the prompts
        return dataclasses.replace(base, model="rater_types", missing_share=(0.3, 0.6))
    if model in ("heavy_same", "rater_heterogeneous", "rater_types"):
        return dataclasses.replace(base, model="heavy_scale_clipped" if model == "heavy_same" else model)
    if model == "gaussian_scaled":  # every part of text x 1.6: random effects (scale_text), length and order
        return dataclasses.replace(base, scale_text=1.6, mu_text=60.0, b_len_text=1.6 * 3.5, b_first_text=0.6 * -2.5)
    if model == "gaussian_raters":
        return base  # text's participant / residual variances are changed in simulate()
    return base


def preferences(ratings: pd.DataFrame, assignments: pd.DataFrame, band_text: float) -> pd.DataFrame:
    """Trials with the preferred response ('0', '1', 'tie': within the band) from each trial's two ratings."""
    wide = ratings.assign(response=ratings["clip_id"].str.rsplit("_", n=1).str[1]).pivot_table(
        index=["participant_id", "condition", "prompt_id", "trial"], columns="response", values="rating"
    )
    wide = wide.reset_index()
    gap = wide["1"] - wide["0"]
    band = np.where(wide["condition"] == "text", band_text, TIE_BAND)
    pref = np.where(gap > band, "1", np.where(gap < -band, "0", "tie"))
    return wide[["participant_id", "prompt_id", "trial"]].assign(preference=pref)


def _two_generators(model: str, stimuli: pd.DataFrame, assignments: pd.DataFrame, seed: int) -> pd.DataFrame:
    """gaussian_raters: audio's ratings from the base model, text's from one with var_participant 450, resid 600."""
    base = generator_params("gaussian_same")
    a, parts = generate(base, stimuli, assignments, seed)
    t, _ = generate(dataclasses.replace(base, var_participant=450.0, var_resid=600.0), stimuli, assignments, seed)
    return pd.concat([a[a["condition"] == "audio"], t[t["condition"] == "text"]], ignore_index=True), parts


def simulate(model: str, size: str, seed: int) -> tuple[pd.DataFrame, ...]:
    """(ratings, trials, participants, stimuli, assignments) of one study."""
    prompts, raters, trials = SIZES[size]
    stimuli, assignments = study_design(prompts, raters, trials, seed)
    if model == "simulator_exchangeable":
        ratings, trial_table, participants, _ = simulate_ratings(stimuli, assignments, exchangeable_params(), seed=seed)
        return ratings, trial_table, participants, stimuli, assignments
    if model == "gaussian_raters":
        ratings, participants = _two_generators(model, stimuli, assignments, seed)
    else:
        params = generator_params("gaussian_same" if model.startswith("gaussian_alt") else model)
        ratings, participants = generate(params, stimuli, assignments, seed)
    if model.startswith("gaussian_alt"):  # an extra clip effect in audio: a higher audio ICC
        rng = np.random.default_rng([seed, 0xA17])
        clips = sorted(ratings["clip_id"].unique())
        extra = pd.Series(np.sqrt(ALTERNATIVES[model]) * rng.standard_normal(len(clips)), index=clips)
        audio = ratings["condition"] == "audio"
        ratings.loc[audio, "rating"] += ratings.loc[audio, "clip_id"].map(extra).to_numpy()
    band_text = TIE_BAND * (1.6 if model == "gaussian_scaled" else 1.0)
    return ratings, preferences(ratings, assignments, band_text), participants, stimuli, assignments


def icc_tests(frames: dict[str, pd.DataFrame], seed: int, args: argparse.Namespace) -> dict:
    """Both ICC tests from one set of refits: {test: {stat: {p, D, V}}}, the calibration, seconds."""
    t0 = time.perf_counter()
    streams = np.random.SeedSequence([seed, 0xD1FF]).spawn(2)
    parts = {
        c: idiff._condition_parts(frames[c], args.n_noise, np.random.default_rng(s))
        for c, s in zip(idiff.CONDITIONS, streams, strict=True)
    }
    jk = idiff.difference_tests(parts)
    t1 = time.perf_counter()
    options = {"n_replicates": args.n_replicates, "n_null": args.n_null}
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xCA1B]))
    cal = idiff.calibrated_tests(jk, idiff.calibration(parts, rng, **{k: v for k, v in options.items() if v}))
    t2 = time.perf_counter()
    out: dict = {"seconds": {"jackknife": t1 - t0, "calibration": t2 - t1}}
    for name, res in (("jackknife", jk), ("calibrated", cal)):
        out[name] = {s: {"p": r.p_value, "D": r.difference, "V": r.variance, "df": r.df} for s, r in res.items()}
    out["calibrated_jkdf"] = {
        s: {"p": idiff._p_value(r.t, r.parts.get("df_jackknife", r.df)), "D": r.difference, "V": r.variance}
        for s, r in cal.items()
    }
    out["calibration"] = {s: {k: v for k, v in cal[s].parts.items() if k.startswith("null")} for s in cal}
    if "raters" in args.null_models:  # the same study calibrated in the raters null world, on the same stream
        t3 = time.perf_counter()
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0xCA1B]))
        cal_options = {k: v for k, v in options.items() if v}
        raters = idiff.calibrated_tests(jk, idiff.calibration(parts, rng, **cal_options, null_model="raters"))
        out["seconds"]["calibration_raters"] = time.perf_counter() - t3
        out["calibrated_raters"] = {
            s: {"p": r.p_value, "D": r.difference, "V": r.variance, "df": r.df} for s, r in raters.items()
        }
    return out


def alpha_tests(study: tuple[pd.DataFrame, ...], model: str, seed: int, args: argparse.Namespace) -> dict:
    """{metric: {D, p_permutation (the paper's), p_studentized (the shipped test), p_jackknife (its t referred to
    Student's t), V}} of the alpha differences."""
    ratings, trials, participants, stimuli, assignments = study
    metrics = ("continuous",) if model == "gaussian_raters" else ALPHA_METRICS
    out = {}
    for metric, stream in zip(metrics, np.random.SeedSequence([seed, 0xA1F]).spawn(len(metrics)), strict=True):
        level, _, _ = alpha_rows.ALPHA_METRICS[metric]
        domain = None if level == "interval" else alpha_rows.PREFERENCE_DOMAIN
        conditions = ("audio", "text")
        mat, cond = alpha_rows._pooled_matrix(metric, ratings, trials, assignments, participants, conditions, stimuli)
        rng_p, rng_s = (np.random.default_rng(x) for x in stream.spawn(2))
        perm = ad.alpha_difference_test(mat, cond, level, domain, args.n_perm_alpha, rng_p, conditions, "permutation")
        stud = ad.alpha_difference_test(mat, cond, level, domain, args.n_perm_alpha, rng_s, conditions, "studentized")
        feats = {c: alpha_mod.alpha_features(mat[cond == c], level, domain) for c in conditions}
        jk = ad.alpha_difference_jackknife(feats["audio"], feats["text"])
        out[metric] = {
            "D": jk["diff"],
            "p_permutation": perm["p_value"],
            "p_studentized": stud["p_value"],
            "p_jackknife": jk["p_value"],
            "V": jk["variance"],
        }
    return out


def truth_study(task: tuple[str, str, int, argparse.Namespace]) -> dict:
    """A study fitted only: its ICC differences, for the variance of D under the cell's model."""
    size, model, seed, _ = task
    ratings, _, participants, stimuli, _ = simulate(model, size, seed)
    est = {}
    for c in ("audio", "text"):
        _, _, icc1, icck = fit_iccs(condition_design(analysable_ratings(ratings, participants, c, stimuli)))
        est[c] = np.array([icc1, icck])
    return {"size": size, "model": model, "seed": seed, "truth": True, "D": (est["audio"] - est["text"]).tolist()}


def one_study(task: tuple[str, str, int, argparse.Namespace]) -> dict:
    size, model, seed, args = task
    if seed < 0:
        return truth_study((size, model, -1 - seed, args))
    study = simulate(model, size, seed)
    ratings, _, participants, stimuli, _ = study
    rec: dict = {"size": size, "model": model, "seed": seed}
    if args.icc:
        frames = {c: analysable_ratings(ratings, participants, c, stimuli) for c in ("audio", "text")}
        rec["icc"] = icc_tests(frames, seed, args)
        if args.n_perm:
            from modprefs.stats.tables.reliability_table import icc_permutation_test

            perm = icc_permutation_test(ratings, participants, args.n_perm, seed, stimuli)
            rec["icc"]["permutation"] = {s: {"p": perm[s]["p_value"], "D": perm[s]["observed"]} for s in perm}
    if args.alpha:
        t0 = time.perf_counter()
        rec["alpha"] = alpha_tests(study, model, seed, args)
        rec["alpha_seconds"] = time.perf_counter() - t0
    return rec


def rate(ps: list[float]) -> dict:
    p = np.array([x for x in ps if x == x])
    k, n = int(np.sum(p <= ALPHA)), int(len(p))
    r = k / n if n else float("nan")
    lo, hi = proportion_confint(k, n, alpha=0.05, method="beta") if n else (np.nan, np.nan)
    se = float(np.sqrt(r * (1 - r) / n)) if n else float("nan")
    return {"rate": r, "rejected": k, "n": n, "mc_se": se, "ci95": [float(lo), float(hi)], "undefined": len(ps) - n}


def ratio_se(rows: list[dict], d_null: np.ndarray) -> float:
    """SE of mean V / E[D^2] (delta method) with both means' sampling errors: V's over the tested studies ``rows``
    ({D, V}), E[D^2]'s over ``d_null`` (every null study's D, the tested ones included), and their covariance
    through the tested studies (a study's V and D^2 are not independent)."""
    pairs = np.array([(x["V"], x["D"] ** 2) for x in rows if np.isfinite(x.get("V", np.nan)) and np.isfinite(x["D"])])
    d2 = d_null**2
    if len(pairs) < 3 or len(d2) < 3:
        return float("nan")
    v_bar, d_bar = float(pairs[:, 0].mean()), float(d2.mean())
    var_v = float(np.var(pairs[:, 0], ddof=1)) / len(pairs)
    var_d = float(np.var(d2, ddof=1)) / len(d2)
    cov = float(np.cov(pairs[:, 0], pairs[:, 1])[0, 1]) / len(d2)  # sum over the shared studies / (n_v n_d)
    rel = var_v / v_bar**2 + var_d / d_bar**2 - 2.0 * cov / (v_bar * d_bar)
    return float(v_bar / d_bar * math.sqrt(max(rel, 0.0)))


def summarise(studies: list[dict]) -> dict:
    cells: dict = {}
    for rec in studies:
        cell = cells.setdefault(
            f"{rec['size']}/{rec['model']}", {"size": rec["size"], "model": rec["model"], "recs": [], "truth": []}
        )
        cell["truth" if rec.get("truth") else "recs"].append(rec)
    out = {}
    for key, cell in sorted(cells.items()):
        recs, block = cell["recs"], {"size": cell["size"], "model": cell["model"], "n_studies": len(cell["recs"])}
        truth = np.array([r["D"] for r in cell["truth"]], float).reshape(-1, 2)
        tested = [
            [r["icc"]["jackknife"][s]["D"] for s in idiff.STATISTICS] for r in recs if "jackknife" in r.get("icc", {})
        ]
        truth = np.vstack([truth, np.array(tested, float).reshape(-1, 2)])  # the tested studies are null studies too
        truth = truth[np.isfinite(truth).all(axis=1)]
        if len(truth) > 2:  # E[D^2] over the cell's null studies: the variance each test should use
            block["truth"] = {"n_studies": len(truth), "mean_D2": (truth**2).mean(axis=0).tolist()}
            block["truth"]["se_mean_D2"] = ((truth**2).std(axis=0, ddof=1) / np.sqrt(len(truth))).tolist()
        for test in ICC_TESTS + ("calibrated_paired",):
            for stat in idiff.STATISTICS:
                if test == "calibrated_paired":  # `calibrated` on the studies that also ran `calibrated_raters`,
                    # under the rule those ran with (the max rule where they ran before issue #50's)
                    rows = [
                        r["icc"].get("calibrated_max", r["icc"]["calibrated"])[stat]
                        for r in recs
                        if "calibrated_raters" in r.get("icc", {})
                    ]
                else:
                    rows = [r["icc"][test][stat] for r in recs if test in r.get("icc", {})]
                if not rows:
                    continue
                block[f"icc/{test}/{stat}"] = rate([x["p"] for x in rows])
                d2 = np.mean([x["D"] ** 2 for x in rows if np.isfinite(x["D"])])
                v = [x["V"] for x in rows if "V" in x and np.isfinite(x["V"])]
                if v:
                    j = idiff.STATISTICS.index(stat)
                    ref = block["truth"]["mean_D2"][j] if "truth" in block else d2
                    block[f"icc/{test}/{stat}"]["mean_V_over_mean_D2"] = float(np.mean(v) / ref)
                    block[f"icc/{test}/{stat}"]["se_mean_V"] = float(np.std(v, ddof=1) / np.sqrt(len(v)) / ref)
                    if "truth" in block:
                        block[f"icc/{test}/{stat}"]["se_ratio"] = ratio_se(rows, truth[:, j])
        for metric in ALPHA_METRICS:
            rows = [r["alpha"][metric] for r in recs if metric in r.get("alpha", {})]
            for test in ("permutation", "studentized", "jackknife"):
                if rows:
                    block[f"alpha/{test}/{metric}"] = rate([x[f"p_{test}"] for x in rows])
            if rows:
                d2 = np.mean([x["D"] ** 2 for x in rows if np.isfinite(x["D"])])
                v = [x["V"] for x in rows if np.isfinite(x["V"])]
                block[f"alpha/jackknife/{metric}"]["mean_V_over_mean_D2"] = float(np.mean(v) / d2) if v else None
        if cell["model"] in ALTERNATIVES and tested:  # the realised effect the power rows are about
            block["mean_D"] = np.nanmean(np.array(tested, float), axis=0).tolist()
        secs = [r["icc"]["seconds"] for r in recs if "icc" in r]
        if secs:
            keys = [k for k in secs[0] if all(k in s for s in secs)]
            block["median_seconds"] = {k: float(np.median([s[k] for s in secs])) for k in keys}
        out[key] = block
    return out


def _cell(r: dict | None) -> str:
    if not r:
        return "-"
    return f"{100 * r['rate']:.1f} ± {100 * r['mc_se']:.1f} ({r['n']})"


def _pooled(doc: dict, size: str) -> dict:
    """Rejections pooled over a size's null cells: {column: (rejected, n)}."""
    out: dict = {}
    for b in doc["summary"].values():
        if b["size"] != size or b["model"] in ALTERNATIVES:
            continue
        for key, r in b.items():
            if isinstance(r, dict) and "rejected" in r:
                k, n = out.get(key, (0, 0))
                out[key] = (k + r["rejected"], n + r["n"])
    return out


def _ratio(r: dict | None) -> str:
    if not r or r.get("mean_V_over_mean_D2") is None:
        return "-"
    return f"{r['mean_V_over_mean_D2']:.2f} ± {r.get('se_ratio', r.get('se_mean_V', float('nan'))):.2f}"


def alpha_markdown(doc: dict) -> str:
    """The alpha tests alone (a run with ``--no-icc``): per alpha, each test's rejection rate and the jackknife
    variance's mean over E[D^2] (D^2 of the same studies)."""
    c = doc["config"]
    lines = [
        "# Table 4's alpha-difference tests under equal alphas",
        "",
        "Sizes: small = 40 prompts x 20 raters per condition x 10 trials, paper = 100 x 53 x 20 (the workflow's "
        "design: make_assignments). Tests, on the same studies: `permutation` = the paper's participant "
        "permutation of the difference; `studentized` = the participant permutation of the crossed-jackknife t "
        "(Table 4's default); `jackknife` = that t referred to Student's t (not shipped). "
        f"{c['n_perm_alpha']} participant reassignments per test and study. Nulls: equal population alphas in "
        "both conditions (benchmarks/validity/icc_difference_null.py; `gaussian_raters` differs in rater variance "
        "and is a "
        "null for the continuous alpha only; `gaussian_scaled` is left out: an affine copy of `gaussian_same` "
        "whose alphas equal it study by study). Acceptance band: 5 % +/- 2 MC SE. Runs: "
        + "; ".join(
            f"{r['config']['size']} {r['config']['models']}: {r['studies_done']} of {r['of']} tasks, "
            f"{r['wall_s']} s on {r['config']['workers']} workers"
            for r in doc.get("runs", [])
        )
        + ".",
        "",
        "## Rejection rate at alpha .05 (%, ± Monte Carlo SE, studies) and mean V / mean D^2 of the jackknife",
        "",
        "| size | model | alpha | permutation (paper) | studentized (default) | jackknife t | mean V / mean D^2 |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in doc["summary"].values():
        for m in ALPHA_METRICS:
            if f"alpha/studentized/{m}" not in b:
                continue
            jk = b.get(f"alpha/jackknife/{m}") or {}
            ratio = jk.get("mean_V_over_mean_D2")
            cells = [_cell(b.get(f"alpha/{t}/{m}")) for t in ("permutation", "studentized", "jackknife")]
            lines.append(
                f"| {b['size']} | {b['model']} | {m} | "
                + " | ".join(cells)
                + f" | {'-' if ratio is None else f'{ratio:.2f}'} |"
            )
    for size in SIZES:
        pooled = _pooled(doc, size)
        for m in ALPHA_METRICS:
            row = [pooled.get(f"alpha/{t}/{m}", (0, 0)) for t in ("permutation", "studentized", "jackknife")]
            if row[1][1]:
                cells = [f"{k}/{n} = {100 * k / n:.1f} %" for k, n in row]
                lines.append(f"| {size} | **all nulls** | {m} | " + " | ".join(cells) + " | |")
    return "\n".join(lines) + "\n"


def without_expected_noise(studies: list[dict]) -> dict[str, int]:
    """{size: calibrated studies whose df leave out E*'s own noise}: run before the calibration stored the
    replicates' variance (``null_expected_variance_var``), they were rescored without it (their df too high, their
    rate if anything too high)."""
    out: dict[str, int] = {}
    for r in studies:
        cal = r.get("icc", {}).get("calibration", {})
        if cal and not any("null_expected_variance_var" in c for c in cal.values()):
            out[r["size"]] = out.get(r["size"], 0) + 1
    return out


def markdown(doc: dict) -> str:
    if not any("icc" in r for r in doc.get("studies", [])):
        return alpha_markdown(doc)
    c = doc["config"]
    older = without_expected_noise(doc.get("studies", []))
    with_alpha = any("alpha" in r for r in doc.get("studies", []))
    lines = [
        "# Table 4's ICC-difference tests under equal ICCs (and one alternative)",
        "",
        "Sizes: small = 40 prompts x 20 raters per condition x 10 trials, paper = 100 x 53 x 20, dense = 40 x 20 x 40 "
        "(every rater assigned every prompt; with `rater_types_sparse` each rates 16-28 of them). ICC tests: the "
        "crossed jackknife (`jackknife`) and the same t calibrated in null studies from each study's fit "
        f"(`calibrated`, Table 4's default; {c.get('n_replicates') or idiff.N_REPLICATES} null studies with a "
        f"sampled jackknife + {c.get('n_null') or idiff.N_NULL} fitted only; on the calibrated variance's own "
        "Satterthwaite df; `calibrated, jackknife df` = the same variance on the jackknife's df, the test before "
        "that"
        + (f" -- {doc['rescored']}" if doc.get("rescored") else "")
        + "".join(
            f"; {n} {size} studies ran before E*'s own noise was stored: their df leave it out"
            for size, n in older.items()
        )
        + "), one set of refits for both; jackknife "
        f"noise term {c['n_noise']} residual refits. Acceptance band: 5 % +/- 2 MC SE. "
        + (
            f"Alpha tests: the paper's permutation of the difference and the studentized permutation of the "
            f"crossed-jackknife t, {c['n_perm_alpha']} participant reassignments each. "
            if with_alpha
            else "Alpha tests: benchmarks/out/alpha_difference_null.md. "
        )
        + (doc.get("alpha_removed", "") + ". " if doc.get("alpha_removed") else "")
        + "`gaussian_alt10` / `gaussian_alt20` are alternatives (audio ICC(2,1) .10 / .20 higher): their rows are "
        "power, on the same studies for every test. Runs: "
        + "; ".join(
            f"{r['config']['size']} {r['config']['models']}: {r['studies_done']} of {r['of']} tasks, "
            f"{r['wall_s']} s on {r['config']['workers']} workers"
            for r in doc.get("runs", [])
        )
        + ".",
        "",
        "## Rejection rate at alpha .05 (%, ± Monte Carlo SE sqrt(r(1-r)/n), studies)",
        "",
        "| size | model | ICC(2,1) jackknife | ICC(2,1) calibrated | ICC(2,1) calibrated, jackknife df | ICC(2,k) "
        "jackknife | ICC(2,k) calibrated | ICC(2,k) calibrated, jackknife df "
        + ("| alpha permutation cont / ord / nom | alpha studentized cont / ord / nom |" if with_alpha else "|"),
        "|---|---|---|---|---|---|---|---|" + ("---|---|" if with_alpha else ""),
    ]
    icc_keys = [f"icc/{t}/{s}" for s in idiff.STATISTICS for t in ("jackknife", "calibrated", "calibrated_jkdf")]
    tests = ("permutation", "studentized")
    for b in doc["summary"].values():
        if not any(k in b for k in icc_keys) and not with_alpha:
            continue
        alpha = [" / ".join(_cell(b.get(f"alpha/{t}/{m}")) for m in ALPHA_METRICS) for t in tests] if with_alpha else []
        lines.append(
            f"| {b['size']} | {b['model']} | " + " | ".join([_cell(b.get(k)) for k in icc_keys] + alpha) + " |"
        )
    for size in SIZES:
        pooled = _pooled(doc, size)
        if not pooled:
            continue

        def fmt(key: str, pooled: dict = pooled) -> str:
            k, n = pooled.get(key, (0, 0))
            return f"{k}/{n} = {100 * k / n:.1f} %" if n else "-"

        alpha = [" / ".join(fmt(f"alpha/{t}/{m}") for m in ALPHA_METRICS) for t in tests] if with_alpha else []
        lines.append(
            f"| {size} | **all nulls (rejected/n)** | " + " | ".join([fmt(k) for k in icc_keys] + alpha) + " |"
        )
    lines += [
        "",
        "## ICC tests: mean variance used / E[D^2] (± SE of the ratio, from both means' sampling errors; 1 = "
        "unbiased under a null)",
        "",
        "E[D^2] over the cell's studies: those tested and those fitted only (seeds 10000+). Alternatives are left out.",
        "",
        "| size | model | studies for E[D^2] | E[D^2] ICC(2,1) | jackknife | calibrated | E[D^2] ICC(2,k) | jackknife "
        "| calibrated |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for b in doc["summary"].values():
        if "icc/jackknife/icc_2_1" not in b or b["model"] in ALTERNATIVES:
            continue
        t = b.get("truth", {})
        cells = [str(t.get("n_studies", 0))]
        for j, s in enumerate(idiff.STATISTICS):
            d2 = f"{t['mean_D2'][j]:.5f} ± {t['se_mean_D2'][j]:.5f}" if t else "-"
            cells += [d2, _ratio(b.get(f"icc/jackknife/{s}")), _ratio(b.get(f"icc/calibrated/{s}"))]
        lines.append(f"| {b['size']} | {b['model']} | " + " | ".join(cells) + " |")
    return "\n".join(lines + bands_markdown(doc) + power_markdown(doc) + raters_markdown(doc)) + "\n"


#: the bands a null cell of the shipped test is held to: rejection 5 % +/- 2 MC SE (at 5 %, the cell's n), mean
#: V / E[D^2] within these
RATIO_BAND = (0.90, 1.15)


def within_bands(block: dict, test: str = "calibrated") -> dict[str, tuple[bool, bool]]:
    """{statistic: (rejection within 5 % +/- 2 MC SE, mean V / E[D^2] within RATIO_BAND)} of a null cell."""
    out = {}
    for s in idiff.STATISTICS:
        r = block.get(f"icc/{test}/{s}")
        if not r or not r["n"]:
            continue
        half = 2 * math.sqrt(ALPHA * (1 - ALPHA) / r["n"])
        ratio = r.get("mean_V_over_mean_D2")
        in_ratio = ratio is not None and RATIO_BAND[0] <= ratio <= RATIO_BAND[1]
        out[s] = (abs(r["rate"] - ALPHA) <= half, in_ratio)
    return out


def bands_markdown(doc: dict) -> list[str]:
    """Each null cell of Table 4's test (``calibrated``) against the bands: rate and ratio, and whether inside."""
    rows = []
    for b in doc["summary"].values():
        if b["model"] in ALTERNATIVES or "icc/calibrated/icc_2_1" not in b:
            continue
        bands = within_bands(b)
        cells = []
        for s in idiff.STATISTICS:
            r = b[f"icc/calibrated/{s}"]
            ok_rate, ok_ratio = bands[s]
            cells += [
                f"{100 * r['rate']:.1f} % {'in' if ok_rate else '**out**'}",
                f"{_ratio(r)} {'in' if ok_ratio else '**out**'}",
            ]
        rows.append(f"| {b['size']} | {b['model']} | {b['n_studies']} | " + " | ".join(cells) + " |")
    return [
        "",
        "## Table 4's test (`calibrated`) against the bands: rejection 5 % +/- 2 MC SE, mean V / E[D^2] "
        f"{RATIO_BAND[0]:.2f}-{RATIO_BAND[1]:.2f}",
        "",
        "| size | model | studies | ICC(2,1) rejected | V / E[D^2] | ICC(2,k) rejected | V / E[D^2] |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]


def power_markdown(doc: dict) -> list[str]:
    """The alternatives' rows again with the realised mean difference: power at the effect the studies had."""
    rows = []
    for b in doc["summary"].values():
        if b["model"] not in ALTERNATIVES or "mean_D" not in b:
            continue
        cells = []
        for j, s in enumerate(idiff.STATISTICS):
            tests = ("jackknife", "calibrated_max", "calibrated")
            cells += [f"{b['mean_D'][j]:+.3f}"] + [_cell(b.get(f"icc/{t}/{s}")) for t in tests]
        rows.append(f"| {b['size']} | {b['model']} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return [
        "",
        "## Power: rejection at .05 under the alternatives, at the mean difference the studies had",
        "",
        "`calibrated, max rule` = Table 4's test before issue #50 (V_cal = max(V - (E* - Var*), V Var* / E*)); "
        "`calibrated` = today's (modprefs.stats.reliability.jackknife_excess), on the same studies.",
        "",
        "| size | model | mean D ICC(2,1) | jackknife | calibrated, max rule | calibrated | mean D ICC(2,k) "
        "| jackknife | calibrated, max rule | calibrated |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]


#: cells with fewer studies scored in both null worlds are left out of their table (a stopped run's leftovers)
MIN_PAIRED = 50


def raters_markdown(doc: dict) -> list[str]:
    """The calibration's two null worlds side by side on the studies that ran both (``--null-models
    gaussian,raters``): rejection at .05 and mean V / E[D^2] per statistic."""
    rows = []
    for b in doc["summary"].values():
        if "icc/calibrated_raters/icc_2_1" not in b:
            continue
        n = b["icc/calibrated_raters/icc_2_1"]["n"]
        if n < MIN_PAIRED:
            continue
        cells = []
        for s in idiff.STATISTICS:
            for test in ("calibrated_paired", "calibrated_raters"):
                cells += [_cell(b.get(f"icc/{test}/{s}")), _ratio(b.get(f"icc/{test}/{s}"))]
        rows.append(f"| {b['size']} | {b['model']} | {n} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return [
        "",
        "## The calibration's null world: raters alike (`calibrated`) or each rater's own slope and residual scale "
        "(`raters`)",
        "",
        "On the same studies and the same random stream (`--null-models gaussian,raters`; cells with at least "
        f"{MIN_PAIRED} such studies); mean V / E[D^2] as above.",
        "",
        "| size | model | studies | ICC(2,1) gaussian | V/E[D^2] | ICC(2,1) raters | V/E[D^2] | ICC(2,k) gaussian | "
        "V/E[D^2] | ICC(2,k) raters | V/E[D^2] |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]


def write(doc: dict, out: Path) -> None:
    """The summary JSON (``doc`` less its studies), the studies as records (benchmarks/tools/_records.py) and the
    Markdown."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _records.write_records(out, doc.get("studies", []), lambda r: f"{r['size']}/{r['model']}")
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(_records.without_studies(doc), indent=1) + "\n")
    tmp.replace(out)
    out.with_suffix(".md").write_text(markdown(doc))


def max_rule(v: float, df: float, expected: float, null: float, n_null: int, ev: float) -> tuple[float, float]:
    """Table 4's (V_cal, df) before issue #50: V_cal = max(V - (E* - Var*), V Var* / E*), Satterthwaite's df for the
    branch taken (the three estimates independent; where the ratio applies their relative variances add)."""
    rel_v = 2.0 / df if math.isfinite(df) and df > 0 else 0.0
    rel_null = 2.0 / (n_null - 1) if n_null > 1 else math.inf
    expected_var = max(ev, 0.0)  # E*'s sampling variance
    subtracted, ratio = v - (expected - null), v * null / expected
    if subtracted >= ratio:
        spread = rel_v * v**2 + expected_var + rel_null * null**2
        return subtracted, (2.0 * subtracted**2 / spread if spread > 0 else math.inf)
    relative = rel_v + expected_var / expected**2 + rel_null
    return ratio, (2.0 / relative if relative > 0 else math.inf)


def _calibrated_by(rule: Callable[..., tuple[float, float]], jk: dict, cal: dict) -> dict | None:
    """{p, D, V, df, p_jkdf} of the calibrated test under ``rule`` from a study's stored jackknife test and
    calibration of one statistic; None where it was not calibrated (no positive E* and Var*)."""
    e, n, m = (cal.get(k, math.nan) for k in ("null_expected_variance", "null_variance", "null_studies"))
    if not (np.isfinite([jk["V"], e, n]).all() and e > 0 and n > 0):
        return None
    spread = cal.get("null_expected_variance_var", 0.0)  # studies run before it was stored: 0 (df too high)
    v_cal, df = rule(jk["V"], jk["df"], e, n, int(m), spread)
    t = idiff._t(jk["D"], v_cal)
    return {"p": idiff._p_value(t, df), "D": jk["D"], "V": v_cal, "df": df, "p_jkdf": idiff._p_value(t, jk["df"])}


def rescore(rec: dict) -> dict:
    """A stored study's calibrated test recomputed from what the study stored (D, V and df of the jackknife test, E*,
    Var*, the number of null differences and E*'s own noise): the test is a function of those alone. ``calibrated``
    becomes today's (:func:`~modprefs.stats.reliability.jackknife_excess.calibrated_variance`), ``calibrated_jkdf``
    today's V_cal on the jackknife's df, ``calibrated_max`` the test under :func:`max_rule` (Table 4's before
    issue #50). The test as stored must be one of the two (checked), so the rule a study ran with is never lost."""
    icc = rec.get("icc")
    if not icc or "calibration" not in icc:
        return rec
    new, jkdf, old_rule = {}, {}, {}
    for stat, jk in icc["jackknife"].items():
        cal = icc["calibration"].get(stat, {})
        today, before = _calibrated_by(idiff.calibrated_variance, jk, cal), _calibrated_by(max_rule, jk, cal)
        if today is None or before is None:
            new[stat] = jkdf[stat] = old_rule[stat] = dict(jk)  # not calibrated: the jackknife test, as run
            continue
        stored = icc["calibrated"][stat]["V"]
        if not any(np.isclose(stored, x["V"], rtol=1e-9) for x in (today, before)):
            raise ValueError(f"seed {rec['seed']} {stat}: stored V_cal {stored} is neither rule's")
        jkdf[stat] = {"p": today.pop("p_jkdf"), "D": jk["D"], "V": today["V"]}
        before.pop("p_jkdf")
        new[stat], old_rule[stat] = today, before
    icc["calibrated"], icc["calibrated_jkdf"], icc["calibrated_max"] = new, jkdf, old_rule
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-studies", type=int, default=100, help="studies per cell")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--models", default=",".join(NULLS), help=f"comma list of {NULLS + tuple(ALTERNATIVES)}")
    ap.add_argument("--truth", type=int, default=0, help="studies per cell fitted only, for E[D^2] (seeds 10000+)")
    ap.add_argument("--n-noise", type=int, default=30)
    ap.add_argument(
        "--n-replicates", type=int, default=0, help="calibration null studies with a jackknife (0: default)"
    )
    ap.add_argument("--n-null", type=int, default=0, help="calibration null studies fitted only (0: default)")
    ap.add_argument(
        "--null-models",
        default="gaussian",
        help="comma list of the calibration's null worlds to score (gaussian: Table 4's `calibrated`; raters: "
        "`calibrated_raters`, rater-specific residual scales)",
    )
    ap.add_argument("--n-perm", type=int, default=0, help="ICC participant permutations (0: not scored)")
    ap.add_argument("--n-perm-alpha", type=int, default=199)
    ap.add_argument("--no-icc", dest="icc", action="store_false")
    ap.add_argument("--no-alpha", dest="alpha", action="store_false")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--append", action="store_true", help="merge into --out's studies (those already there are kept, not rerun)"
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--rescore",
        action="store_true",
        help="recompute the stored studies' calibrated test with today's rule and df (rescore()) and rewrite --out; "
        "no runs",
    )
    ap.add_argument(
        "--summarise-only",
        action="store_true",
        help="rebuild --out's summary and Markdown from its stored records; no runs",
    )
    args = ap.parse_args()
    if args.summarise_only:
        doc = _records.load(args.out)
        if not doc:
            sys.exit(f"--summarise-only: no {args.out}")
        write({**doc, "summary": summarise(doc["studies"])}, args.out)
        return
    if args.rescore:
        doc = _records.load(args.out)
        studies = [rescore(r) for r in doc["studies"]]
        doc["rescored"] = (
            "calibrated: today's V_cal on its own Satterthwaite df (jackknife_excess.calibrated_variance), recomputed "
            "from each study's stored jackknife test and calibration; calibrated_jkdf: the same V_cal on the "
            "jackknife's df; calibrated_max: as run before issue #50, V_cal = max(V - (E* - Var*), V Var* / E*)"
        )
        write({**doc, "summary": summarise(studies), "studies": studies}, args.out)
        return
    models = args.models.split(",")
    tasks = [(args.size, m, s, args) for s in range(args.first_seed, args.first_seed + args.n_studies) for m in models]
    tasks += [(args.size, m, -1 - (10000 + s), args) for s in range(args.truth) for m in models]
    old = _records.load(args.out) if args.append and args.out.exists() else {"studies": [], "runs": []}
    keep = {(r["size"], r["model"], r["seed"], bool(r.get("truth"))): r for r in old["studies"]}
    tasks = [t for t in tasks if (t[0], t[1], -1 - t[2] if t[2] < 0 else t[2], t[2] < 0) not in keep]  # done
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()} | {"alpha": ALPHA}
    t0, cpu0 = time.perf_counter(), time.process_time()
    written = t0
    with get_context("spawn").Pool(args.workers) as pool:
        chunk = max(1, min(16, len(tasks) // (16 * args.workers)))  # fitted-only studies take a tenth of a second
        for i, rec in enumerate(pool.imap_unordered(one_study, tasks, chunk), 1):
            keep[(rec["size"], rec["model"], rec["seed"], bool(rec.get("truth")))] = rec
            # checkpoint every 10 studies, but at most once a minute (thousands of fitted-only studies run fast)
            if i == len(tasks) or (i % 10 == 0 and time.perf_counter() - written >= 60):
                written = time.perf_counter()
                studies = sorted(keep.values(), key=lambda r: (r["size"], r["model"], r["seed"]))
                run = {
                    "config": config,
                    "studies_done": i,
                    "of": len(tasks),
                    "wall_s": round(time.perf_counter() - t0, 1),
                }
                doc = {"config": config, "runs": old["runs"] + [run], "summary": summarise(studies), "studies": studies}
                if "rescored" in old:
                    doc["rescored"] = old["rescored"]
                write(doc, args.out)
                print(f"{i}/{len(tasks)} studies, {run['wall_s']} s", file=sys.stderr)
    if not tasks:  # nothing to run: rewrite the summary and the Markdown from the stored studies
        studies = sorted(keep.values(), key=lambda r: (r["size"], r["model"], r["seed"]))
        write({**old, "summary": summarise(studies), "studies": studies}, args.out)
    print(f"main-process cpu {time.process_time() - cpu0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
