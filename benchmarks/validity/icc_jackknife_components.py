"""Which part of the crossed-jackknife variance of an ICC(2,1) is biased? Each estimated part against its truth.

One condition, a Gaussian crossed model with known truth (rating = 50 + clip + rater + noise; variances
``--var-clip`` / ``--var-rater`` / ``--var-noise``, ICC(2,1) .30 by default), ``--prompts`` prompts x 2 clips,
``--raters`` raters x ``--trials`` prompts each (a balanced cyclic deal, both clips of a prompt rated), the
ICC model without covariates. Truth, by simulation:

    total     var of the ICC(2,1) estimate over ``--n-total`` independent studies
    N         var over redrawn noise, clip and rater effects held (mean over ``--n-base`` base studies)
    P + N     var over redrawn clips and noise, rater effects held
    R + N     var over redrawn raters and noise, clip effects held

Estimated (mean over ``--n-studies`` studies): the prompt jackknife ``v_prompt`` (estimates P + N), the
participant jackknife ``v_participant`` (R + N), the residual bootstrap ``v_noise`` (N) and
V = v_prompt + v_participant - v_noise (total), as :mod:`modprefs.stats.reliability.icc_difference` and
:func:`modprefs.stats.reliability.icc_ci.jackknife_interval` combine them.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/icc_jackknife_components.py [--raters 20,40]

Writes benchmarks/out/icc_jackknife_components.json.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from modprefs.io import write_json  # noqa: E402
from modprefs.stats.reliability.icc import ConditionDesign, fit_iccs, model_formula  # noqa: E402
from modprefs.stats.reliability.icc_difference import condition_parts  # noqa: E402
from modprefs.stats.reliability.resampling import jackknife_variance  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "icc_jackknife_components.json"


def balanced_layout(prompts: int, raters: int, trials: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rater, clip) per rating: rater j rates prompts perm[(j*trials + t) % prompts], both clips (2g, 2g + 1)."""
    perm = rng.permutation(prompts)
    g = perm[(np.arange(raters)[:, None] * trials + np.arange(trials)[None, :]) % prompts]  # (raters, trials)
    rater = np.repeat(np.arange(raters), 2 * trials)
    clip = np.stack([2 * g, 2 * g + 1], axis=-1).ravel()
    return rater, clip


def design(rater: np.ndarray, clip: np.ndarray, y: np.ndarray) -> ConditionDesign:
    _, c = np.unique(clip, return_inverse=True)
    _, r = np.unique(rater, return_inverse=True)
    _, p = np.unique(clip // 2, return_inverse=True)
    return ConditionDesign(
        y=y,
        X=np.ones((y.size, 1)),
        clip=c,
        participant=r,
        n_clips=int(c.max()) + 1,
        n_participants=int(r.max()) + 1,
        terms=(),
        formula=model_formula(()),
        prompt=p,
        n_prompts=int(p.max()) + 1,
    )


def icc1(rater: np.ndarray, clip: np.ndarray, y: np.ndarray) -> float:
    return float(fit_iccs(design(rater, clip, y))[2])


def one_size(args: argparse.Namespace, raters: int) -> dict:
    rng = np.random.default_rng([args.seed, raters])
    sd = {k: math.sqrt(getattr(args, f"var_{k}")) for k in ("clip", "rater", "noise")}

    def ratings(layout, clips=None, rater_fx=None):
        rater, clip = layout
        clips = rng.normal(0, sd["clip"], 2 * args.prompts) if clips is None else clips
        rater_fx = rng.normal(0, sd["rater"], raters) if rater_fx is None else rater_fx
        return 50.0 + clips[clip] + rater_fx[rater] + rng.normal(0, sd["noise"], clip.size), clips, rater_fx

    def new_layout():
        return balanced_layout(args.prompts, raters, args.trials, rng)

    total = [icc1(*lay, ratings(lay)[0]) for lay in (new_layout() for _ in range(args.n_total))]
    held: dict[str, list[float]] = {"N": [], "P+N": [], "R+N": []}
    for _ in range(args.n_base):
        lay = new_layout()
        _, clips, rater_fx = ratings(lay)
        for key, kw in (
            ("N", {"clips": clips, "rater_fx": rater_fx}),
            ("P+N", {"rater_fx": rater_fx}),
            ("R+N", {"clips": clips}),
        ):
            held[key].append(float(np.var([icc1(*lay, ratings(lay, **kw)[0]) for _ in range(args.n_redraw)], ddof=1)))
    est: dict[str, list[float]] = {"v_prompt": [], "v_participant": [], "v_noise": []}
    for _ in range(args.n_studies):
        lay = new_layout()
        y = ratings(lay)[0]
        parts = condition_parts(design(*lay, y), np.unique(lay[1] // 2).astype(str), args.n_noise, rng)
        est["v_prompt"].append(jackknife_variance(np.array(list(parts.prompt_loo.values()))[:, 0])[0])
        est["v_participant"].append(jackknife_variance(parts.participant_loo[:, 0])[0])
        noise = parts.noise[:, 0]
        est["v_noise"].append(float(np.var(noise[np.isfinite(noise)], ddof=1)))
    truth = {"total": float(np.var(total, ddof=1)), **{k: float(np.mean(v)) for k, v in held.items()}}
    mean = {k: float(np.mean(v)) for k, v in est.items()}
    mean["V"] = mean["v_prompt"] + mean["v_participant"] - mean["v_noise"]
    return {
        "raters": raters,
        "truth": truth,
        "truth_mean_icc": float(np.mean(total)),
        "estimated_mean": mean,
        "ratio_estimated_to_truth": {
            "v_prompt / (P+N)": mean["v_prompt"] / truth["P+N"],
            "v_participant / (R+N)": mean["v_participant"] / truth["R+N"],
            "v_noise / N": mean["v_noise"] / truth["N"],
            "V / total": mean["V"] / truth["total"],
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raters", default="20,40")
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--var-clip", type=float, default=0.3)
    ap.add_argument("--var-rater", type=float, default=0.1)
    ap.add_argument("--var-noise", type=float, default=0.6)
    ap.add_argument("--n-total", type=int, default=400)
    ap.add_argument("--n-base", type=int, default=10)
    ap.add_argument("--n-redraw", type=int, default=40)
    ap.add_argument("--n-studies", type=int, default=150)
    ap.add_argument("--n-noise", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    t0 = time.perf_counter()
    sizes = [one_size(args, int(r)) for r in args.raters.split(",")]
    doc = {
        "config": {k: v for k, v in vars(args).items() if k != "out"},
        "sizes": sizes,
        "runtime_s": round(time.perf_counter() - t0, 1),
    }
    write_json(doc, args.out)
    for s in sizes:
        print(s["raters"], {k: round(v, 3) for k, v in s["ratio_estimated_to_truth"].items()})


if __name__ == "__main__":
    main()
