"""Does the ICC-difference calibration's null world vary as much as the studies it stands for?

Issue #50. Table 4's calibrated test (:mod:`modprefs.stats.reliability.icc_difference`) removes the crossed
jackknife's excess E* - Var* measured in a null world built from the study's fit. Subtracting it (Table 4's rule
until issue #50) is right only where the null world's own variance of D = ICC_audio - ICC_text (Var*) is the study's:
in the paper-calibrated simulator at the paper's size the benchmark (benchmarks/out/icc_difference_rules.md) found
Var* about a third of E[D^2], so the excess it measures is too small and the test stayed as conservative as the
jackknife (the rule since, :mod:`modprefs.stats.reliability.jackknife_excess`, also scales it). This benchmark asks
where the shortfall comes from, per condition:

    truth       over ``--n-truth`` studies of a generating model (seeds 10000+, fitted only): the variances of the
                audio and text estimates, their correlation (the conditions share prompts) and the variance of D
    null world  over ``--n-studies`` studies (seeds 0+): each study's null world (:func:`null_world`, models
                ``gaussian``, Table 4's, and ``raters``, each rater's own slope and residual scale) drawn ``--n-null``
                times and fitted; the same four numbers, averaged over the studies

so that a null world short of the truth shows whether it lacks each condition's own variance (the raters and the
rating noise) or misstates the conditions' covariance (the shared prompts). Generating models: the benchmark's
``simulator_exchangeable`` and variants of it with one feature switched off (``SIMULATOR_VARIANTS``), and two of the
generators for contrast (``gaussian_same``, ``rater_types``; benchmarks/tools/generators.py). The truth's variance of
D carries a 95 % bootstrap interval over its studies.

Why raters far apart in noise are hard for any null world built from one study: the simulator's rater noise scale s is
lognormal with E[s^2] = 1 and CV 1.2 (``resid_scale_cv``), so with sigma^2 = log(1 + 1.2^2) = .89 the CV of s^2 is
sqrt(exp(4 sigma^2) - 1) = 5.9: a panel's mean residual variance turns on its few noisiest raters, whom a panel of ~46
usually under-represents, so even a world that resamples the study's own raters (``raters``) has less rater variance
on average than the truth. Clipping at the scale's ends bounds the noisiest raters' variance and so narrows the gap
(compare ``sim_normal_noise`` with ``sim_normal_unclipped``).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/icc_null_world_fidelity.py --size paper \\
        [--models simulator_exchangeable,sim_equal_rater_noise] [--n-truth 150] [--n-studies 10] [--workers 2]

Writes benchmarks/out/icc_null_world_fidelity.json (config, per-model truth estimates and per-study null-world
variances) and .md; ``--summarise-only`` rebuilds both from the JSON's studies.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))
sys.path.insert(0, str(ROOT / "benchmarks" / "validity"))

import icc_difference_null as null_bench  # noqa: E402
import numpy as np  # noqa: E402

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.stats.reliability import icc_difference as idiff  # noqa: E402
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, fit_iccs  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "icc_null_world_fidelity.json"
#: the paper-calibrated simulator (exchangeable conditions) with one feature switched off
SIMULATOR_VARIANTS: dict[str, dict[str, float | bool]] = {
    "sim_equal_rater_noise": {"resid_scale_cv": 0.0},
    "sim_normal_noise": {"resid_df": math.inf},
    "sim_unclipped": {"clip_ratings": False},
    "sim_normal_unclipped": {"resid_df": math.inf, "clip_ratings": False},
    "sim_gaussian_unclipped": {
        "resid_scale_cv": 0.0,
        "resid_df": math.inf,
        "clip_df": math.inf,
        "clip_ratings": False,
    },
}
MODELS = ("simulator_exchangeable", *SIMULATOR_VARIANTS, "gaussian_same", "rater_types")
NULL_MODELS = idiff.NULL_MODELS
#: per statistic: var(audio), var(text), cov(audio, text), var(D)
PARTS = ("var_audio", "var_text", "cov", "var_d")


def study_frames(model: str, size: str, seed: int, raters_seed: int | None = None) -> dict:
    """One study's analysable ratings per condition; ``raters_seed`` (simulator models only): the study's design
    and clip effects with other raters and rating noise (``simulate_ratings``' ``clip_seed``)."""
    if model in SIMULATOR_VARIANTS or (raters_seed is not None and model == "simulator_exchangeable"):
        prompts, raters, trials = null_bench.SIZES[size]
        stimuli, assignments = null_bench.study_design(prompts, raters, trials, seed)
        params = dataclasses.replace(null_bench.exchangeable_params(), **SIMULATOR_VARIANTS.get(model, {}))
        run_seed, clip_seed = (seed, None) if raters_seed is None else (raters_seed, seed)
        ratings, _, participants, _ = simulate_ratings(stimuli, assignments, params, seed=run_seed, clip_seed=clip_seed)
    elif raters_seed is not None:
        raise ValueError(f"{model}: only the simulator's models hold their clips fixed")
    else:
        ratings, _, participants, stimuli, _ = null_bench.simulate(model, size, seed)
    return {c: analysable_ratings(ratings, participants, c, stimuli) for c in idiff.CONDITIONS}


def fitted_parts(frames: dict) -> dict[str, idiff.ConditionParts]:
    """Each condition's fit and design (no jackknife: the null world needs only these)."""
    parts = {}
    for c in idiff.CONDITIONS:
        design = condition_design(frames[c])
        fit, _, icc1, icck = fit_iccs(design)
        labels = tuple(map(str, np.sort(frames[c]["prompt_id"].astype(str).unique())))
        parts[c] = idiff.ConditionParts(
            np.array([icc1, icck]), {}, np.zeros((0, 2)), np.zeros((0, 2)), design, fit, labels
        )
    return parts


def moments(audio: np.ndarray, text: np.ndarray) -> dict[str, list[float]]:
    """Per statistic (columns ICC(2,1), ICC(2,k)) the four PARTS over the rows."""
    out = {}
    for j, stat in enumerate(idiff.STATISTICS):
        a, t = audio[:, j], text[:, j]
        ok = np.isfinite(a) & np.isfinite(t)
        a, t = a[ok], t[ok]
        cov = float(np.cov(a, t)[0, 1])
        out[stat] = [float(np.var(a, ddof=1)), float(np.var(t, ddof=1)), cov, float(np.var(a - t, ddof=1))]
    return out


def truth_study(task: tuple) -> dict:
    """A study fitted only (kind ``truth``), or (kind ``given_clips``) study ``seed``'s clips with the raters and
    rating noise of replicate ``rep``."""
    kind, model, size, seed, rep = task
    raters_seed = None if kind == "truth" else 1_000_000 + 1000 * seed + rep
    parts = fitted_parts(study_frames(model, size, seed, raters_seed))
    est = [parts[c].estimates.tolist() for c in idiff.CONDITIONS]
    return {"kind": kind, "model": model, "seed": seed, "rep": rep, "est": est}


def null_study(task: tuple) -> dict:
    """One study's null worlds: the four PARTS of each over ``n_null`` null studies, prompts resampled (``all``)
    and each prompt keeping its clip effects (``given_clips``: the raters and the noise drawn anew)."""
    _, model, size, seed, n_null = task
    parts = fitted_parts(study_frames(model, size, seed))
    out: dict = {"kind": "null", "model": model, "seed": seed}
    for null_model in NULL_MODELS:
        world = idiff.null_world(parts, null_model)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0xF1DE]))
        out[null_model] = {}
        for mode, resample in (("all", True), ("given_clips", False)):
            est: dict[str, list] = {c: [] for c in idiff.CONDITIONS}
            for _ in range(n_null):
                y = idiff.draw_null(world, rng, resample_prompts=resample)
                try:
                    row = {c: idiff._refit(world.designs[c], y[c], world.fits[c].theta)[1] for c in idiff.CONDITIONS}
                except (ValueError, np.linalg.LinAlgError):
                    continue
                for c in idiff.CONDITIONS:
                    est[c].append(row[c])
            out[null_model][mode] = moments(np.array(est["audio"]), np.array(est["text"]))
    return out


def run(task: tuple) -> dict:
    return null_study(task) if task[0] == "null" else truth_study(task)


def _bootstrap_var_d(d: np.ndarray, rng: np.random.Generator, n_boot: int = 2000) -> list[float]:
    idx = rng.integers(0, d.size, (n_boot, d.size))
    boots = np.var(d[idx], axis=1, ddof=1)
    return [float(x) for x in np.quantile(boots, [0.025, 0.975])]


def _given_clips_truth(rows: list[dict], j: int) -> tuple[float, float, int] | None:
    """Mean over studies of the variances of the audio and text estimates across their rater replicates."""
    by_seed: dict[int, list] = {}
    for r in rows:
        by_seed.setdefault(r["seed"], []).append(r["est"])
    per = []
    for ests in by_seed.values():
        est = np.array(ests)[:, :, j]
        est = est[np.isfinite(est).all(axis=1)]
        if len(est) >= 3:
            per.append(np.var(est, axis=0, ddof=1))
    if not per:
        return None
    mean = np.mean(per, axis=0)
    return float(mean[0]), float(mean[1]), len(per)


def summarise(records: list[dict]) -> dict:
    """Per model and statistic: the truth's PARTS (and a bootstrap interval for var_d), each null world's mean
    PARTS over the studies and its var_d / the truth's; where the model holds its clips fixed, the rater part
    (variance with the clips fixed) of the truth and of each null world, over the same studies."""
    out: dict = {}
    for model in dict.fromkeys(r["model"] for r in records):
        truth = [r for r in records if r["model"] == model and r["kind"] == "truth"]
        null = [r for r in records if r["model"] == model and r["kind"] == "null"]
        given = [r for r in records if r["model"] == model and r["kind"] == "given_clips"]
        if len(truth) < 3 or not null:
            continue
        est = np.array([r["est"] for r in truth])  # (n, condition, statistic)
        t_moments = moments(est[:, 0, :], est[:, 1, :])
        rng = np.random.default_rng(0xB007)
        block: dict = {"n_truth": len(truth), "n_studies": len(null)}
        for j, stat in enumerate(idiff.STATISTICS):
            d = est[:, 0, j] - est[:, 1, j]
            d = d[np.isfinite(d)]
            entry: dict = {"truth": dict(zip(PARTS, t_moments[stat], strict=True))}
            entry["truth"]["var_d_ci95"] = _bootstrap_var_d(d, rng)
            for null_model in NULL_MODELS:
                mean = np.mean([r[null_model]["all"][stat] for r in null], axis=0)
                entry[null_model] = dict(zip(PARTS, map(float, mean), strict=True))
                entry[null_model]["var_d_over_truth"] = float(mean[3] / t_moments[stat][3])
            rater_part = _given_clips_truth(given, j)
            if rater_part is not None:
                seeds = {r["seed"] for r in given}
                same = [r for r in null if r["seed"] in seeds]
                entry["given_clips"] = {"n_studies": rater_part[2], "truth": list(rater_part[:2])}
                for null_model in NULL_MODELS:
                    mean = np.mean([r[null_model]["given_clips"][stat][:2] for r in same], axis=0)
                    entry["given_clips"][null_model] = [float(x) for x in mean]
            block[stat] = entry
        out[model] = block
    return out


def _corr(m: dict) -> float:
    return (
        m["cov"] / math.sqrt(m["var_audio"] * m["var_text"]) if m["var_audio"] > 0 and m["var_text"] > 0 else math.nan
    )


def _stat_name(stat: str) -> str:
    return stat.replace("icc_2_1", "ICC(2,1)").replace("icc_2_k", "ICC(2,k)")


def markdown(doc: dict) -> str:
    cfg = doc["config"]
    lines = [
        "# The calibration's null world against the truth, per condition",
        "",
        f"Size {cfg['size']} ({' x '.join(map(str, null_bench.SIZES[cfg['size']]))} prompts x raters x trials). "
        "Variances x 1e4. Truth: over the model's studies (fitted only); null worlds (`gaussian`: Table 4's; "
        "`raters`: each rater's own slope and residual scale): each study's null world drawn "
        f"{cfg['n_null']} times, averaged over the studies. Var*/Var(D): the null world's variance of D against the "
        "truth's (1: the level the calibration needs).",
        "",
        "| model | statistic | studies (truth / null) | truth Var(audio) | Var(text) | corr | Var(D) [95 %] "
        + "".join(f"| {m} Var(audio) | Var(text) | corr | Var*/Var(D) " for m in NULL_MODELS)
        + "|",
        "|---|---|---|---|---|---|---|" + "---|---|---|---|" * len(NULL_MODELS),
    ]
    for model, block in doc["summary"].items():
        for stat in idiff.STATISTICS:
            e = block[stat]
            t = e["truth"]
            lo, hi = t["var_d_ci95"]
            cells = [
                model,
                _stat_name(stat),
                f"{block['n_truth']} / {block['n_studies']}",
                f"{1e4 * t['var_audio']:.1f}",
                f"{1e4 * t['var_text']:.1f}",
                f"{_corr(t):.2f}",
                f"{1e4 * t['var_d']:.1f} [{1e4 * lo:.1f}, {1e4 * hi:.1f}]",
            ]
            for m in NULL_MODELS:
                w = e[m]
                cells += [f"{1e4 * w['var_audio']:.1f}", f"{1e4 * w['var_text']:.1f}", f"{_corr(w):.2f}"]
                cells.append(f"{w['var_d_over_truth']:.2f}")
            lines.append("| " + " | ".join(cells) + " |")
    given = [
        (m, s, b[s]["given_clips"])
        for m, b in doc["summary"].items()
        for s in idiff.STATISTICS
        if "given_clips" in b[s]
    ]
    if given:
        lines += [
            "",
            "## The rater part: each study's clips held, its raters and rating noise drawn anew",
            "",
            f"Truth: {cfg['n_reps']} replicates of each study with its own design and clip effects and other raters "
            "(`simulate_ratings`' `clip_seed`); null worlds: each prompt keeps its own clip effects. Variances of the "
            "audio / text estimates x 1e4, averaged over the studies.",
            "",
            "| model | statistic | studies | truth audio / text | "
            + " | ".join(f"{m} audio / text | {m} / truth" for m in NULL_MODELS)
            + " |",
            "|---|---|---|---|" + "---|---|" * len(NULL_MODELS),
        ]
        for model, stat, g in given:
            ta, tt = g["truth"]
            cells = [model, _stat_name(stat), str(g["n_studies"]), f"{1e4 * ta:.1f} / {1e4 * tt:.1f}"]
            for m in NULL_MODELS:
                na, nt = g[m]
                cells += [f"{1e4 * na:.1f} / {1e4 * nt:.1f}", f"{(na + nt) / (ta + tt):.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Simulator variants: " + "; ".join(f"`{k}` {v}" for k, v in SIMULATOR_VARIANTS.items()) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(null_bench.SIZES), default="paper")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma list of {MODELS}")
    ap.add_argument("--n-truth", type=int, default=150, help="studies per model fitted only (seeds 10000+)")
    ap.add_argument("--n-studies", type=int, default=10, help="studies per model whose null worlds are drawn")
    ap.add_argument("--n-null", type=int, default=100, help="draws of each null world per study")
    ap.add_argument(
        "--n-given-clips", type=int, default=3, help="studies (the first null ones) whose rater part is measured"
    )
    ap.add_argument("--n-reps", type=int, default=40, help="rater replicates per study with its clips held")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--summarise-only", action="store_true", help="rebuild --out's summary and Markdown from its studies; no runs"
    )
    args = ap.parse_args()
    if args.summarise_only:
        stored = json.loads(args.out.read_text())
        write({**stored, "summary": summarise(stored["studies"])}, args.out)
        return
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"--models: unknown {unknown}; expected some of {MODELS}")
    tasks = [("null", m, args.size, s, args.n_null) for m in models for s in range(args.n_studies)]
    tasks += [("truth", m, args.size, 10000 + s, 0) for m in models for s in range(args.n_truth)]
    held = [m for m in models if m == "simulator_exchangeable" or m in SIMULATOR_VARIANTS]
    n_given = min(args.n_given_clips, args.n_studies)
    tasks += [("given_clips", m, args.size, s, r) for m in held for s in range(n_given) for r in range(args.n_reps)]
    t0 = time.perf_counter()
    with get_context("spawn").Pool(args.workers) as pool:
        records = sorted(
            pool.imap_unordered(run, tasks), key=lambda r: (r["model"], r["kind"], r["seed"], r.get("rep", 0))
        )
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    config["wall_s"] = round(time.perf_counter() - t0, 1)
    write({"config": config, "summary": summarise(records), "studies": records}, args.out)


def write(doc: dict, out: Path) -> None:
    """The JSON and its Markdown beside it, each written to a temporary file and renamed."""
    for path, text in ((out, json.dumps(doc, indent=1) + "\n"), (out.with_suffix(".md"), markdown(doc))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)


if __name__ == "__main__":
    main()
