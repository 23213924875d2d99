"""Speed and agreement of the per-unit-counts Krippendorff's alpha (modprefs.stats.reliability.alpha).

1. One alpha on a 46 x 200 coders x clips matrix (each rater rates 40 of 200 clips, 1-100
   integer ratings, ~9.2 raters per clip) for nominal/ordinal/interval, and on a 46 x 100
   participants x prompts matrix of A/Tie/B codes (ordinal, nominal): median per-call time of this
   implementation (--reps calls) vs ``krippendorff.alpha`` (--package-reps calls), and their
   largest absolute difference.
2. The paper's scale (simulated with modprefs.ratings.simulate: 100 prompts, 53 raters per
   condition, 20 trials each): for each of the three Table-4 alphas, the time of a 5,000-resample
   stimulus bootstrap (per condition) and of a 5,000-permutation between-condition test, median of
   --repeats runs; the whole ``alpha_table`` (3 alphas x (2 bootstraps + 1 permutation test)); and
   the package-based equivalent of one 5,000 bootstrap, extrapolated from --package-reps resamples.
   Also reports the simulated table and the four (frame x level) preference alphas per condition.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/stats_alpha.py [--reps 300] [--package-reps 20]

Writes benchmarks/out/stats_alpha.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

import krippendorff  # noqa: E402

from modprefs.io import write_json  # noqa: E402
from modprefs.ratings.simulate import simulate_ratings  # noqa: E402
from modprefs.stats.reliability.alpha import (
    LEVELS,
    alpha_features,
    bootstrap_alpha,
    group_alpha_difference,
    krippendorff_alpha,
)
from modprefs.stats.reliability.resampling import (  # noqa: E402
    draw_counts,
    draw_units,
    make_rng,
    permutation_test_between_groups,
    stimulus_bootstrap,
)
from modprefs.stats.tables.reliability_alpha import (
    ALPHA_METRICS,
    PREFERENCE_DOMAIN,
    _pooled_matrix,
    alpha_table,
    preference_matrix,
)
from modprefs.study.design import make_assignments  # noqa: E402
from support.ratings_helpers import make_stimuli  # noqa: E402


def per_call(fn, reps: int) -> float:
    """Median seconds of ``reps`` timed calls (after one warm-up)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def paper_matrix(
    rng: np.random.Generator, n_coders: int = 46, n_prompts: int = 100, per_coder: int = 20, clips: bool = True
) -> np.ndarray:
    """Coders x units with each coder rating ``per_coder`` prompts (both clips when ``clips``)."""
    n_units = 2 * n_prompts if clips else n_prompts
    truth = rng.normal(0, 15, n_units)
    x = np.full((n_coders, n_units), np.nan)
    for c in range(n_coders):
        prompts = rng.choice(n_prompts, per_coder, replace=False)
        cols = np.concatenate([2 * prompts, 2 * prompts + 1]) if clips else prompts
        bias = rng.normal(0, 8)
        if clips:
            x[c, cols] = np.clip(np.round(55 + bias + truth[cols] + rng.normal(0, 20, cols.size)), 1, 100)
        else:
            p = 1 / (1 + np.exp(-(truth[cols] / 15 + rng.normal(0, 1.2, cols.size))))
            x[c, cols] = np.where(rng.random(cols.size) < 0.25, 1.0, np.where(p > 0.5, 2.0, 0.0))
    return x


def single_call_block(reps: int, package_reps: int) -> dict:
    rng = np.random.default_rng(46)
    out = {}
    cases = (("ratings_46x200", True, LEVELS), ("preferences_46x100", False, ("ordinal", "nominal")))
    for name, clips, levels in cases:
        x = paper_matrix(rng, clips=clips)
        domain = None if clips else PREFERENCE_DOMAIN
        block = {"shape": list(x.shape), "coders_per_unit": float((~np.isnan(x)).sum(axis=0).mean())}
        for level in levels:
            ours = krippendorff_alpha(x, level, domain)
            kw = {} if domain is None or level == "interval" else {"value_domain": list(domain)}
            ref = float(krippendorff.alpha(x, level_of_measurement=level, **kw))
            t_ours = per_call(lambda: krippendorff_alpha(x, level, domain), reps)  # noqa: B023 (called in this iteration)
            t_pkg = per_call(lambda: krippendorff.alpha(x, level_of_measurement=level, **kw), package_reps)  # noqa: B023 (called in this iteration)
            block[level] = {
                "alpha": ours,
                "abs_diff_vs_package": abs(ours - ref),
                "ms_this": 1e3 * t_ours,
                "ms_package": 1e3 * t_pkg,
                "speedup": t_pkg / t_ours,
            }
        out[name] = block
    return out


def simulated_study(seed: int = 11) -> tuple[pd.DataFrame, ...]:
    stim = make_stimuli(100, seed=seed)
    asg = make_assignments(list(dict.fromkeys(stim["prompt_id"])), 53, 20, seed=seed)
    ratings, trials, participants, _ = simulate_ratings(stim, asg, seed=seed)
    return ratings, trials, asg, participants


def resampling_block(
    study: tuple[pd.DataFrame, ...], n_boot: int, n_perm: int, repeats: int, package_reps: int
) -> dict:
    ratings, trials, asg, participants = study
    out: dict = {}
    for metric, (level, _frame, _unit) in ALPHA_METRICS.items():
        domain = None if level == "interval" else PREFERENCE_DOMAIN
        mat, cond = _pooled_matrix(metric, ratings, trials, asg, participants, ("audio", "text"), None)
        sub = mat[cond == "audio"]
        sub = sub.loc[:, sub.notna().any(axis=0)]
        feats = alpha_features(sub, level, domain)
        pooled = alpha_features(mat, level, domain)
        t_boot = [], []
        for r in range(repeats):
            t0 = time.perf_counter()
            stimulus_bootstrap(sub.shape[1], lambda w: bootstrap_alpha(feats, w), n_boot, make_rng(r))  # noqa: B023 (called in this iteration)
            t_boot[0].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            permutation_test_between_groups(
                cond,
                lambda m: group_alpha_difference(pooled, m),  # noqa: B023 (called in this iteration)
                n_perm,
                make_rng(r),
                groups=("audio", "text"),
            )
            t_boot[1].append(time.perf_counter() - t0)
        # the package on the same resamples (a unit drawn twice = a duplicated column)
        draws = draw_units(sub.shape[1], package_reps, make_rng(99))
        x = sub.to_numpy()
        kw = {} if domain is None or level == "interval" else {"value_domain": list(domain)}
        t0 = time.perf_counter()
        ref = [float(krippendorff.alpha(x[:, d], level_of_measurement=level, **kw)) for d in draws]
        t_pkg = (time.perf_counter() - t0) / package_reps
        ours = bootstrap_alpha(feats, draw_counts(draws, sub.shape[1]))
        out[metric] = {
            "level": level,
            "matrix_audio": list(sub.shape),
            "matrix_pooled": list(mat.shape),
            f"bootstrap_{n_boot}_s_median": float(np.median(t_boot[0])),
            f"permutation_{n_perm}_s_median": float(np.median(t_boot[1])),
            f"package_bootstrap_{n_boot}_s_extrapolated": t_pkg * n_boot,
            "bootstrap_max_abs_diff_vs_package": float(np.max(np.abs(ours - np.array(ref)))),
        }
    t_table = []
    table = None
    for r in range(repeats):
        t0 = time.perf_counter()
        table = alpha_table(ratings, trials, asg, participants, n_boot=n_boot, n_perm=n_perm, seed=r)
        t_table.append(time.perf_counter() - t0)
    out["alpha_table_s_median"] = float(np.median(t_table))
    out["alpha_table_seed_last"] = json.loads(table.to_json(orient="records"))
    frames = {}
    for c in ("audio", "text"):
        for frame in ("response", "position"):
            m = preference_matrix(trials, asg, participants, c, frame)
            frames[f"{c}/{frame}"] = {
                lvl: krippendorff_alpha(m, lvl, PREFERENCE_DOMAIN) for lvl in ("ordinal", "nominal")
            }
    out["preference_alpha_by_frame"] = frames
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300, help="timed calls of this implementation")
    parser.add_argument("--package-reps", type=int, default=20, help="timed calls of krippendorff.alpha")
    parser.add_argument("--n-boot", type=int, default=5000)
    parser.add_argument("--n-perm", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5, help="repeats of each bootstrap / permutation run")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "stats_alpha.json"))
    args = parser.parse_args()
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "krippendorff": version("krippendorff"),
            "platform": platform.platform(),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        },
        "settings": vars(args),
        "single_call": single_call_block(args.reps, args.package_reps),
        "resampling": resampling_block(simulated_study(), args.n_boot, args.n_perm, args.repeats, args.package_reps),
    }
    write_json(result, args.out)
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
