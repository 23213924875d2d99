"""False-positive rates of Table 2's modality interactions under null simulations (issues #12 and #27).

Two experiments, each fitting Table 2's omnibus LMM (:func:`modprefs.stats.tables.modality.table2_fit`: the
omnibus model alone, Satterthwaite p as the table prints it) on simulated studies with NO modality x length, NO
modality x order and (except the simulator's) NO modality x trial effect, and reporting the share of studies
whose p < .05 per interaction with its Monte-Carlo SE, sqrt(r (1 - r) / n), and a Clopper-Pearson 95 % interval.

``--experiment clip`` (issue #12; the default; writes benchmarks/out/table2_null.json): the clip terms.
    Paper-size studies (100 prompts x 2 clips, 53 raters per condition x 20 trials) from three generating
    models, fitted with ``stimulus_modality`` (+ (1 | clip_id:modality)) and ``paper`` ((1 | participant_id)
    + (1 | clip_id)):

    ``simulator``            modprefs.ratings.simulate defaults (the paper calibration: clipped, heavy-tailed,
                             tie snapping), b_len_text = b_first_text = 0 (it keeps the paper's modality x trial
                             effect: its rate there is power);
    ``gaussian_crossed``     benchmarks/tools/generators.py: the textbook Gaussian crossed LMM with a clip x modality
                             variance, no rounding or clipping;
    ``heavy_scale_clipped``  benchmarks/tools/generators.py: Student t(4) effects, rater-specific scale use, rounded
                             and clipped to 1..100.

``--experiment slopes`` (issue #27; writes benchmarks/out/table2_null_slopes.json and .md): the participant terms.
    ``rater_heterogeneous`` studies (benchmarks/tools/generators.py: each rater has their own primacy, SD
    ``--primacy-sd`` 5 points, and their own drift per SD of trial, SD ``--drift-sd`` 2.5, on top of
    heavy_scale_clipped, coarse raters and ties at 50/100) and the three models above (no rater-specific
    slopes) at two sizes (``paper`` as above; ``small`` = 40 prompts, 36 raters per condition x 10 trials),
    fitted with ``participant_slopes`` (the default: by-participant presented-first and trial slopes, down the
    fallback ladder of :mod:`modprefs.stats.mixed.maximal`; which step each study used is counted) and, with
    ``--structures``, ``stimulus_modality`` (the old default: one participant intercept). ``--keep-other-models``
    keeps the cells of earlier runs, so models and sizes can be run one at a time; ``--extend`` adds studies to
    the cells run now (on the seeds after each cell's last) until each has ``--n-studies``, summarised with the
    ones already there.

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python benchmarks/validity/table2_null.py [--experiment clip|slopes]
        [--n-studies 500] [--sizes paper,small] [--workers 2]

Output is rewritten as studies finish: the summary ``benchmarks/out/<name>.json`` (config, runs, per-cell rates)
and the per-study records ``benchmarks/out/records/<name>/<model>__<size>.jsonl.gz`` (benchmarks/tools/_records.py).
``--summarise-only`` rebuilds the summary and the Markdown from the stored records (no fits), byte for byte.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from collections import Counter
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

import _records  # noqa: E402
from generators import GeneratorParams, generate, study_design  # noqa: E402

from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.ratings.simulation.params import SimulationParams  # noqa: E402
from modprefs.stats.tables import modality  # noqa: E402

OUT = {
    "clip": ROOT / "benchmarks" / "out" / "table2_null.json",
    "slopes": ROOT / "benchmarks" / "out" / "table2_null_slopes.json",
    "main": ROOT / "benchmarks" / "out" / "table2_null_main.json",
}
SIZES = {"paper": (100, 53, 20), "small": (40, 36, 10)}  # prompts, raters per condition, trials per rater
EXPERIMENTS = {
    "clip": {
        "models": ("simulator", "gaussian_crossed", "heavy_scale_clipped"),
        "sizes": ("paper",),
        "structures": ("stimulus_modality", "paper"),
    },
    "slopes": {
        "models": ("rater_heterogeneous", "simulator", "gaussian_crossed", "heavy_scale_clipped"),
        "sizes": ("paper", "small"),
        "structures": ("stimulus_modality", "participant_slopes"),
    },
    # issue #50: the modality main effect too, under raters who use the scale differently (equal condition means)
    "main": {
        "models": ("rater_types", "gaussian_crossed"),
        "sizes": ("paper",),
        "structures": ("participant_slopes",),
        "terms": ("modality", "modality_x_order", "modality_x_trial", "modality_x_length"),
        "equal_means": True,
    },
}
TERMS = {
    "modality": "modality",
    "modality_x_length": "modality:len_z",
    "modality_x_order": "presented_first:modality",
    "modality_x_trial": "modality:trial_z",
}
#: the terms an experiment tests (the interactions unless it says otherwise: their means differ by modality)
INTERACTIONS = ("modality_x_length", "modality_x_order", "modality_x_trial")
ALPHA = 0.05


def experiment_terms(experiment: str) -> tuple[str, ...]:
    return tuple(EXPERIMENTS[experiment].get("terms", INTERACTIONS))


def simulate(model: str, size: str, seed: int, params: GeneratorParams):
    stimuli, assignments = study_design(*SIZES[size], seed)
    if model == "simulator":
        sim = dataclasses.replace(SimulationParams(), b_len_text=0.0, b_first_text=0.0)
        ratings, _, participants, _ = simulate_ratings(stimuli, assignments, sim, seed=seed)
    else:
        ratings, participants = generate(dataclasses.replace(params, model=model), stimuli, assignments, seed)
    return stimuli, ratings, participants


def study_task(args: tuple[str, str, int, tuple[str, ...], GeneratorParams, float, tuple[str, ...]]) -> dict:
    model, size, seed, structures, params, slope_alpha, terms = args
    t0 = time.process_time()
    stimuli, ratings, participants = simulate(model, size, seed, params)
    frame = modality.rating_frame(ratings, participants, stimuli)
    out: dict = {"model": model, "size": size, "seed": seed, "n_ratings": len(frame), "structures": {}}
    for structure in structures:
        t1 = time.process_time()
        ladder = modality.table2_fit(frame, structure, slope_alpha)
        ct = ladder.fit.coef_table().set_index("term")
        out["structures"][structure] = {
            "p": {k: float(ct.loc[TERMS[k], "p"]) for k in terms},
            "se": {k: float(ct.loc[TERMS[k], "se"]) for k in terms},
            "b": {k: float(ct.loc[TERMS[k], "estimate"]) for k in terms},
            "df": {k: float(ct.loc[TERMS[k], "df"]) for k in terms},
            "converged": bool(ladder.fit.converged),
            "singular": bool(ladder.fit.singular),
            "step": ladder.step,
            "slope_lrt_p": None if ladder.slope_test is None else float(ladder.slope_test.p),
            "cpu_seconds": time.process_time() - t1,
        }
    out["cpu_seconds"] = time.process_time() - t0
    return out


def _cell(row: dict, experiment: str) -> str:
    return row["model"] if experiment == "clip" else f"{row['model']}/{row['size']}"


def _compact(row: dict) -> dict:
    """One study's record for the JSON: per structure its p-values, estimates, SEs, df, fit flags and ladder step
    (all a later ``--extend`` run needs to summarise it with new studies)."""
    keep = ("p", "se", "b", "df", "converged", "singular", "step", "slope_lrt_p", "cpu_seconds")
    return {
        "model": row["model"],
        "size": row["size"],
        "seed": row["seed"],
        **{k: row[k] for k in ("n_ratings", "cpu_seconds") if k in row},
        "structures": {s: {k: f[k] for k in keep if k in f} for s, f in row["structures"].items()},
    }


def clopper_pearson(x: int, n: int, level: float = 0.95) -> list[float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion x/n (statsmodels' "beta" method)."""
    lo, hi = proportion_confint(x, n, alpha=1 - level, method="beta")
    return [float(lo), float(hi)]


def _term_block(rows: list[dict], structure: str, term: str) -> dict:
    """Rejections over every study; the estimates' SD, mean SE and median df over the studies that recorded them
    (records of runs before ``--extend`` existed kept only p-values)."""
    p = np.array([r["structures"][structure]["p"][term] for r in rows])
    full = [r["structures"][structure] for r in rows if "b" in r["structures"][structure]]
    b = np.array([f["b"][term] for f in full])
    se = np.array([f["se"][term] for f in full])
    n = len(rows)
    x = int(np.sum(p < ALPHA))
    rate = x / n
    return {
        "rejections": x,
        "rate": rate,
        "mc_se": math.sqrt(rate * (1 - rate) / n),
        "rate_ci95": clopper_pearson(x, n),
        "studies_with_estimates": len(full),
        "sd_estimate_across_studies": float(b.std(ddof=1)) if len(full) > 1 else None,
        "mean_model_se": float(se.mean()) if full else None,
        "median_df": float(np.median([f["df"][term] for f in full])) if full else None,
    }


def summarise_cell(rows: list[dict], structures: tuple[str, ...], terms: tuple[str, ...] = INTERACTIONS) -> dict:
    n_ratings = [r["n_ratings"] for r in rows if "n_ratings" in r]
    block: dict = {"n_studies": len(rows), "mean_n_ratings": float(np.mean(n_ratings)) if n_ratings else None}
    for structure in structures:
        sub = [r for r in rows if structure in r["structures"]]  # runs may have fitted only some structures
        if not sub:
            continue
        s_block: dict = {"n_studies": len(sub), **{term: _term_block(sub, structure, term) for term in terms}}
        fits = [r["structures"][structure] for r in sub]
        s_block["nonconverged"] = int(sum(not f.get("converged", True) for f in fits))
        s_block["singular"] = int(sum(f.get("singular", False) for f in fits))
        s_block["steps"] = dict(Counter(f.get("step", "as specified") for f in fits))
        s_block["rate_by_step"] = {
            step: {"studies": len(sub), **{t: float(np.mean([f["p"][t] < ALPHA for f in sub])) for t in terms}}
            for step in s_block["steps"]
            for sub in [[f for f in fits if f.get("step", "as specified") == step]]
        }
        cpu = [f["cpu_seconds"] for f in fits if "cpu_seconds" in f]
        s_block["cpu_seconds_per_fit"] = float(np.median(cpu)) if cpu else math.nan
        block[structure] = s_block
    return block


def summarise(results: list[dict], experiment: str) -> dict:
    spec = EXPERIMENTS[experiment]
    summary: dict = {}
    for model in spec["models"]:
        for size in spec["sizes"]:
            rows = [r for r in results if r["model"] == model and r["size"] == size]
            if rows:
                key = model if experiment == "clip" else f"{model}/{size}"
                summary[key] = summarise_cell(rows, spec["structures"], experiment_terms(experiment))
    return summary


def markdown(doc: dict) -> str:
    """The slopes experiment's table: rejection rate +/- MC SE per model x size x structure x interaction."""
    cfg = doc["config"]
    lines = [
        "# Table 2 interactions under null models with and without rater-specific primacy and drift",
        "",
        "Null: no modality x order, x trial or x length effect, except `simulator`, which keeps the paper's "
        "modality x trial effect (its trial column is power). Generating models: `rater_heterogeneous` "
        f"(benchmarks/tools/generators.py; each rater's own primacy, SD {cfg['primacy_sd']} points, and drift, SD "
        f"{cfg['drift_sd']} points per SD of trial, on top of heavy_scale_clipped, coarse raters and ties at "
        "50/100), `simulator` (modprefs.ratings.simulate, b_len_text = b_first_text = 0), `gaussian_crossed` and "
        "`heavy_scale_clipped` (benchmarks/tools/generators.py; no participant slopes, so the slopes are singular and "
        f"the ladder steps down). Rejection rates at alpha = {ALPHA} of Table 2's Satterthwaite t tests, +/- "
        "Monte-Carlo SE (Clopper-Pearson 95 % interval). Nominal: 5 %; the acceptance band is 5 % +/- 2 MC SE, "
        "the MC SE at the nominal rate, sqrt(.05 x .95 / n). `benchmarks/validity/table2_null.py --experiment slopes`.",
        "",
        "| model | size | structure | studies | modality x order | modality x trial | modality x length | steps used |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cell, block in doc["summary"].items():
        model, size = cell.split("/")
        for structure in modality.TABLE2_RANDOM:
            s = block.get(structure)
            if not s:
                continue
            rates = [
                f"{100 * s[t]['rate']:.1f} ± {100 * s[t]['mc_se']:.1f} % "
                f"[{100 * s[t]['rate_ci95'][0]:.1f}, {100 * s[t]['rate_ci95'][1]:.1f}]"
                for t in ("modality_x_order", "modality_x_trial", "modality_x_length")
            ]
            steps = ", ".join(f"{k} {v}" for k, v in sorted(s["steps"].items()))
            lines.append(
                f"| {model} | {size} | {structure} | {s.get('n_studies', block['n_studies'])} | "
                + " | ".join(rates)
                + f" | {steps} |"
            )
    lines += [
        "",
        "Structures: `stimulus_modality` = (1 | participant_id) + (1 | clip_id) + (1 | clip_id:modality); "
        "`participant_slopes` (Table 2's default) = (1 + presented_first + trial_z | participant_id) + "
        "(1 | clip_id) + (1 | clip_id:modality), simplified down the ladder of modprefs.stats.mixed.maximal when "
        "singular (correlated -> uncorrelated -> non-zero slopes -> intercept), its slopes then kept only where "
        "their likelihood-ratio test against (1 | participant_id) gives p <= "
        f"{doc['config'].get('slope_alpha', 1.0):g} (1: the ladder alone; `steps used` counts the structure used).",
        "",
        "Median CPU seconds per omnibus fit: "
        + "; ".join(
            f"{cell} {structure} {block[structure]['cpu_seconds_per_fit']:.2f} s"
            for cell, block in doc["summary"].items()
            for structure in modality.TABLE2_RANDOM
            if structure in block
        )
        + ". "
        + runs_sentence(doc),
        "",
    ]
    return "\n".join(lines)


def runs_sentence(doc: dict) -> str:
    """'Runs: <cell>: <n> studies from seed <s>, <date>; ...' for the Markdown."""
    runs = (
        f"{cell}: {r['n_studies']} studies from seed {r.get('first_seed', 1000)}, {r['date']}"
        for cell, r in doc["runs"].items()
    )
    return "Runs: " + "; ".join(runs) + "."


def markdown_main(doc: dict) -> str:
    """The main-effect experiment's table: per model, each term's rejection rate, the SD of its t over the studies
    (1 for a calibrated test) and its median Satterthwaite df."""
    lines = [
        "# Table 2's modality main effect and interactions under raters who use the scale differently",
        "",
        "Null: equal condition means (mu_text = mu_audio) and no modality x order, x trial or x length effect. "
        "Paper size (100 prompts x 2 clips, 53 raters per condition x 20 trials). Generating models "
        "(benchmarks/tools/generators.py): `rater_types` (issue #50: compressed, stretched and coarse rater types, "
        "lognormal scale use, a tie-at-50 habit, each rater's own primacy and drift, raters skipping 0-40 % of their "
        "trials) and `gaussian_crossed` (the textbook crossed LMM, for reference). Table 2's omnibus model with "
        "`participant_slopes`, Satterthwaite t tests at alpha = "
        f"{ALPHA}; rate +/- Monte-Carlo SE [Clopper-Pearson 95 %]; SD of t = SD over the studies of estimate / SE "
        "(1 when the SEs are right). Acceptance band: 5 % +/- 2 MC SE. "
        "`benchmarks/validity/table2_null.py --experiment main`.",
        "",
        "| model | size | studies | term | rejected | SD of t | median df |",
        "|---|---|---|---|---|---|---|",
    ]
    studies = doc.get("studies", [])
    for cell, block in doc["summary"].items():
        model, size = cell.split("/")
        s = block.get("participant_slopes")
        if not s:
            continue
        fits = [r["structures"]["participant_slopes"] for r in studies if f"{r['model']}/{r['size']}" == cell]
        for term in EXPERIMENTS["main"]["terms"]:
            t = s[term]
            ts = [f["b"][term] / f["se"][term] for f in fits if "b" in f and f["se"][term] > 0]
            sd_t = f"{np.std(ts, ddof=1):.2f}" if len(ts) > 1 else "-"
            lines.append(
                f"| {model} | {size} | {s['n_studies']} | {term} | {100 * t['rate']:.1f} ± {100 * t['mc_se']:.1f} % "
                f"[{100 * t['rate_ci95'][0]:.1f}, {100 * t['rate_ci95'][1]:.1f}] | {sd_t} | {t['median_df']:.0f} |"
            )
    lines += ["", runs_sentence(doc), ""]
    return "\n".join(lines)


def write_doc(doc: dict, out_path: Path, experiment: str) -> None:
    """The summary JSON (``doc`` less its studies), the studies as records, and (slopes) the Markdown."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    _records.write_records(out_path, doc.get("studies", []), lambda r: f"{r['model']}/{r['size']}")
    tmp = out_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(_records.without_studies(doc), indent=2) + "\n", encoding="utf-8")
    tmp.replace(out_path)
    if experiment in ("slopes", "main") and doc["summary"]:
        text = markdown(doc) if experiment == "slopes" else markdown_main(doc)
        out_path.with_suffix(".md").write_text(text, encoding="utf-8")


def resummarise(doc: dict, experiment: str) -> dict:
    """``doc`` with its summary recomputed from its studies, cells in the stored order (new cells last); cells with
    no stored studies (runs before the studies were kept) keep their stored summary."""
    fresh = summarise(doc.get("studies", []), experiment)
    old = doc.get("summary", {})
    summary = {cell: fresh.get(cell, block) for cell, block in old.items()}
    summary.update({cell: block for cell, block in fresh.items() if cell not in summary})
    return {**doc, "summary": summary}


def summarise_only(out_path: Path, experiment: str) -> None:
    """Rewrite ``out_path`` (and its Markdown) from the summary's config and runs and the stored records."""
    doc = _records.load(out_path)
    if not doc:
        sys.exit(f"--summarise-only: no {out_path}")
    write_doc(resummarise(doc, experiment), out_path, experiment)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", choices=sorted(EXPERIMENTS), default="clip")
    ap.add_argument("--n-studies", type=int, default=500, help="studies per model x size")
    ap.add_argument("--models", default=None, help="comma-separated subset of the experiment's models")
    ap.add_argument("--sizes", default=None, help="comma-separated subset of the experiment's sizes")
    ap.add_argument("--primacy-sd", type=float, default=GeneratorParams().primacy_sd)
    ap.add_argument("--drift-sd", type=float, default=GeneratorParams().drift_sd)
    ap.add_argument("--first-seed", type=int, default=1000, help="studies use seeds first-seed, first-seed + 1, ...")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--structures", default=None, help="comma-separated subset of the experiment's structures")
    ap.add_argument(
        "--slope-alpha",
        type=float,
        default=modality.DEFAULT_SLOPE_ALPHA,
        help="participant_slopes keeps the ladder's slopes where their LRT gives p <= this (1: the ladder alone)",
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--extend",
        action="store_true",
        help="add studies to the cells run now until each has --n-studies, on seeds after its last one, summarised "
        "with the studies already in --out (implies --keep-other-models)",
    )
    ap.add_argument(
        "--keep-other-models",
        action="store_true",
        help="keep the summaries of cells not run now from an existing --out (runs of one model at a time)",
    )
    ap.add_argument(
        "--summarise-only",
        action="store_true",
        help="rebuild --out's summary (and Markdown) from its stored records; no fits",
    )
    args = ap.parse_args()
    spec = EXPERIMENTS[args.experiment]
    out_path = args.out or OUT[args.experiment]
    if args.summarise_only:
        summarise_only(out_path, args.experiment)
        return
    models = args.models.split(",") if args.models else list(spec["models"])
    sizes = args.sizes.split(",") if args.sizes else list(spec["sizes"])
    params = GeneratorParams(primacy_sd=args.primacy_sd, drift_sd=args.drift_sd)
    if spec.get("equal_means"):  # a null for the modality main effect as well
        params = dataclasses.replace(params, mu_text=params.mu_audio)
    structures = tuple(args.structures.split(",")) if args.structures else tuple(spec["structures"])
    t_start = time.perf_counter()
    config = {
        "experiment": args.experiment,
        "sizes": {
            s: dict(zip(("n_prompts", "raters_per_condition", "trials_per_participant"), SIZES[s]))
            for s in spec["sizes"]
        },
        "n_studies_per_cell": args.n_studies,
        "alpha": ALPHA,
        "models": models,
        "structures": {s: modality.TABLE2_RANDOM[s] for s in structures},
        "fixed": modality.TABLE2_FIXED,
        "slope_alpha": args.slope_alpha,
        "generator_defaults": dataclasses.asdict(params),
        "primacy_sd": args.primacy_sd,
        "drift_sd": args.drift_sd,
        "simulator_null": "SimulationParams() with b_len_text = b_first_text = 0",
        "workers": args.workers,
    }
    results: list[dict] = []
    kept: dict = {}
    kept_studies: list[dict] = []
    earlier: list[dict] = []  # --extend: the cells' studies already in --out
    old_runs: dict = {}
    if (args.keep_other_models or args.extend) and out_path.exists():
        old = _records.load(out_path)
        old_runs = old.get("runs", {})
        ran = set(models) if args.experiment == "clip" else {f"{m}/{s}" for m in models for s in sizes}
        kept = {m: {**b, "run": old_runs.get(m)} for m, b in old["summary"].items() if m not in ran}
        kept_studies = [r for r in old.get("studies", []) if _cell(r, args.experiment) in kept]
        if args.extend:
            same = {k: old["config"].get(k) for k in ("primacy_sd", "drift_sd")} == {
                "primacy_sd": args.primacy_sd,
                "drift_sd": args.drift_sd,
            } and old["config"].get("slope_alpha", 1.0) == args.slope_alpha
            if not same:
                sys.exit(f"--extend: {out_path} was run with other generator settings; give the same or a new --out")
            earlier = [r for r in old.get("studies", []) if _cell(r, args.experiment) in ran]
    run_info = {
        "n_studies": args.n_studies,
        "first_seed": args.first_seed,
        "date": time.strftime("%Y-%m-%d"),
        "workers": args.workers,
    }

    def cell_run(cell: str) -> dict:
        """The cell's run record; an extended cell's says how many studies each run added."""
        before = old_runs.get(cell) if args.extend else None
        n_before = sum(_cell(r, args.experiment) == cell for r in earlier)
        if not before or not n_before:
            return run_info
        n_now = sum(_cell(r, args.experiment) == cell for r in results)
        return {
            **run_info,
            "n_studies": n_before + n_now,
            "first_seed": before.get("first_seed", 1000),
            "date": f"{before.get('date', '?')} ({n_before} studies), extended {run_info['date']} (+{n_now})",
        }

    def write(final: bool) -> None:
        summary = {
            **{m: {k: v for k, v in b.items() if k != "run"} for m, b in kept.items()},
            **summarise(earlier + results, args.experiment),
        }
        runs = {
            **{m: b["run"] for m, b in kept.items() if b.get("run")},
            **{m: cell_run(m) for m in summarise(earlier + results, args.experiment)},
        }
        doc = {
            "config": config,
            "summary": summary,
            "runs": runs,
            "studies_done": len(results),
            "complete": final,
            "runtime_s": time.perf_counter() - t_start,
            "cpu_s": float(sum(r["cpu_seconds"] for r in results)),
            "date": run_info["date"],
            "studies": kept_studies + earlier + [_compact(r) for r in results],
        }
        write_doc(doc, out_path, args.experiment)

    tasks = []
    for s in sizes:
        for m in models:
            done = [r["seed"] for r in earlier if r["model"] == m and r["size"] == s]
            start = max(done) + 1 if done else args.first_seed
            tasks += [
                (m, s, seed, structures, params, args.slope_alpha, experiment_terms(args.experiment))
                for seed in range(start, start + args.n_studies - len(done))
            ]
    tasks.sort(key=lambda t: t[2])
    with get_context("spawn").Pool(args.workers) as pool:
        for k, res in enumerate(pool.imap_unordered(study_task, tasks, chunksize=1), 1):
            results.append(res)
            if k % 10 == 0:
                write(False)
                print(f"{k}/{len(tasks)} studies, {time.perf_counter() - t_start:.0f} s", flush=True)
    write(True)
    print(json.dumps(summarise(results, args.experiment), indent=1))


if __name__ == "__main__":
    main()
