"""Judge-guided against balanced allocation, and the stopping rule's interval, through the app's own allocation
(issue #54, items 3 and 4).

Each simulated study is built and run as a lab runs it:

1. judges: a judge rating per response, whose gap between a prompt's two responses is related to how much human
   raters agree on the prompt (strongly, ``rho = .8``, or weakly, ``rho = .1``);
2. design: :func:`modprefs.study.design.make_assignments`, balanced, or judge-guided with
   :func:`modprefs.study.allocation.judge_weights` on that judges' table (``judges.allocation`` defaults);
3. intake: the app's slots (:func:`modprefs.app.loader.slot_order`) in a SQLite database of the app's own models;
   simulated participants arrive at random (exponential gaps), take the open slot with the lowest position
   (:func:`modprefs.app.service.claim_slot`), take a lognormal time to finish, and 15 % abandon half-way (their slot
   is reopened, :func:`modprefs.app.service.release_slot`, and the next arrival takes it), so completions come out
   of slot order;
4. looks: when the fewest completed participants of a condition reach a look point (10, 20, 30, 40), ICC(2,k) per
   condition by ``modprefs stats``' interval code (:func:`modprefs.stats.reliability.icc_ci.icc_ci_for_design`,
   ``auto``: the crossed jackknife on these incomplete designs) on the ratings of the participants completed by then,
   at the looks-corrected level (:func:`modprefs.stats.sequential.look_level`: 1 - .05 / 4) and at 95 %; the rule
   (``lower_bound``: ICC(2,k)'s lower bound >= .75 in both conditions, :func:`modprefs.stats.sequential.decide`)
   stops the study at the first look that meets it (else at 40).

Reported per generating model and allocation: coverage of the TRUE ICC(2,k) (at the look's effective k) by the
interval reported at the stop (per condition; Clopper-Pearson 95 % interval of the coverage), participants per
condition at the stop, the fixed design at equal precision (the fewest look-point participants whose plain 95 %
interval meets the rule in at least as many studies as the sequential design stopped with ``met``) and the
participants saved against it; and, at the fixed design of 40 per condition, the root mean squared error of ICC(2,1)
and ICC(2,k) and the mean 95 % interval width: judge-guided against balanced at the same number of ratings.

Generating models (written here; prompts p with two clips, raters r; variances .3 clip, .1 rater, .6 residual)::

    gaussian             y = u_pc + v_r + e             u_pc ~ N(0, .3 h_p): prompts differ in agreement,
                                                        h_p lognormal (sd .8, mean 1); judge gap ~ log h_p, rho .8
    rater_heterogeneity  y = s_r u_pc + v_r + t_r e      s_r (scale use, CV .3) and t_r (noise, CV .8) per rater
    weak_judges          as gaussian, rho .1             the judges barely see which prompts humans agree on
    heavy_tailed         as gaussian, u, v, e t(4)

True ICC(2,1) = E[s]^2 .3 / (E[s^2] .3 + .1 + .6) (E[h] = E[t^2] = 1); ICC(2,k) its Spearman-Brown image at the
study's effective k. The judge-guided design gives the prompts whose clips differ little (small h_p: low agreement)
more raters; what that does to a pooled ICC is the question.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/live_allocation.py [--n-studies 100] [--workers 2]

Writes benchmarks/out/live_allocation.json and live_allocation.md. ``--n-boot`` (default 50) is the jackknife's
residual refits for its noise term (the app uses ``stats.n_boot``, 2000 by default: the cost of 32 intervals per
study).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from sqlalchemy import select

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # stopping_coverage, beside it

from stopping_coverage import clopper_pearson  # noqa: E402  (benchmarks/validity/, beside this script)

from modprefs.app import service  # noqa: E402
from modprefs.app.db import Database  # noqa: E402
from modprefs.app.loader import slot_order  # noqa: E402
from modprefs.app.models import Participant, Prompt, Slot, SlotTrial  # noqa: E402
from modprefs.stats.reliability.icc import condition_design  # noqa: E402
from modprefs.stats.reliability.icc_ci import icc_ci_for_design  # noqa: E402
from modprefs.stats.reliability.rater_scaling import icc_k  # noqa: E402
from modprefs.stats.sequential import StoppingRule, condition_meets, decide, look_level, look_point, n_looks  # noqa: E402
from modprefs.study.allocation import judge_weights  # noqa: E402
from modprefs.study.design import make_assignments  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
MODELS = ("gaussian", "rater_heterogeneity", "weak_judges", "heavy_tailed")
ALLOCATIONS = ("balanced", "judges")
CONDITIONS = ("audio", "text")
N_PROMPTS, TRIALS = 24, 8
VAR_CLIP, VAR_RATER, VAR_RESID = 0.3, 0.1, 0.6
PROMPT_SD = 0.8  # sd of log h_p
SCALE_CV, NOISE_CV = 0.3, 0.8
RULE = StoppingRule(rule="lower_bound", target_icc=0.75, min_participants=10, max_participants=40, look_every=10)
ABANDON = 0.15


def _lognormal_unit(rng: np.random.Generator, cv: float, size: int) -> np.ndarray:
    """Lognormal draws with mean 1 and coefficient of variation ``cv``."""
    sigma = math.sqrt(math.log(1 + cv**2))
    return rng.lognormal(-(sigma**2) / 2, sigma, size)


def _t(rng: np.random.Generator, var: float, size: int | tuple[int, ...]) -> np.ndarray:
    return rng.standard_t(4, size) * math.sqrt(var / 2)  # t(4) has variance 2


def true_icc1(model: str) -> float:
    if model == "rater_heterogeneity":
        es2 = 1 + SCALE_CV**2
        return VAR_CLIP / (es2 * VAR_CLIP + VAR_RATER + VAR_RESID)
    return VAR_CLIP / (VAR_CLIP + VAR_RATER + VAR_RESID)


class World:
    """One study's population: prompts (with their agreement h_p and judge gaps) and a pool of raters."""

    def __init__(self, model: str, rng: np.random.Generator):
        self.model = model
        self.prompts = [f"q{i:02d}" for i in range(N_PROMPTS)]
        eta = rng.normal(0, 1, N_PROMPTS)
        h = np.exp(PROMPT_SD * eta - PROMPT_SD**2 / 2)
        self.h = h
        rho = 0.1 if model == "weak_judges" else 0.8
        self.gap = {c: np.clip(15 + 10 * (rho * eta + math.sqrt(1 - rho**2) * rng.normal(0, 1, N_PROMPTS)), 0, 98)
                    for c in CONDITIONS}  # fmt: skip
        self.clip_effect = {}
        for c in CONDITIONS:
            for p, hp in zip(self.prompts, h):
                for r in (0, 1):
                    draw = (
                        _t(rng, VAR_CLIP * hp, 1)[0]
                        if model == "heavy_tailed"
                        else rng.normal(0, math.sqrt(VAR_CLIP * hp))
                    )
                    self.clip_effect[(c, f"{p}_{r}")] = float(draw)
        self.rng = rng

    def judges(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows = []
        for c in CONDITIONS:
            for p, g in zip(self.prompts, self.gap[c]):
                for r, rating in ((0, 50.0 - float(g) / 2), (1, 50.0 + float(g) / 2)):  # on the judges' 1..100
                    rows.append({"judge": f"sim-{c}", "prompt_version": "v1", "modality": c, "kind": "response_quality",
                                 "prompt_id": p, "clip_id": f"{p}_{r}", "sample": 0, "rating": rating, "status": "ok",
                                 "reason": ""})  # fmt: skip
        stimuli = pd.DataFrame(
            [{"prompt_id": p, "clip_id": f"{p}_{r}", "response": r} for p in self.prompts for r in (0, 1)]
        )
        return pd.DataFrame(rows), stimuli

    def rater_ratings(self, pid: str, condition: str, trials: pd.DataFrame) -> list[dict]:
        """One completed participant's ratings of both clips of each assigned prompt."""
        rng = self.rng
        heavy = self.model == "heavy_tailed"
        v = _t(rng, VAR_RATER, 1)[0] if heavy else rng.normal(0, math.sqrt(VAR_RATER))
        s = t = 1.0
        if self.model == "rater_heterogeneity":  # scale use s (E[s] = 1) and noise scale t (E[t^2] = 1)
            s, t = float(_lognormal_unit(rng, SCALE_CV, 1)[0]), math.sqrt(float(_lognormal_unit(rng, NOISE_CV, 1)[0]))
        out = []
        for row in trials.itertuples():
            for r in (0, 1):
                e = _t(rng, VAR_RESID, 1)[0] if heavy else rng.normal(0, math.sqrt(VAR_RESID))
                first = int(row.first_clip == r)
                y = s * self.clip_effect[(condition, f"{row.prompt_id}_{r}")] + v + t * e + 0.1 * first
                out.append({"participant_id": pid, "clip_id": f"{row.prompt_id}_{r}", "prompt_id": row.prompt_id,
                            "trial": int(row.trial), "presented_first": bool(first), "rating": float(y)})  # fmt: skip
        return out


def _load_slots(db: Database, asg: pd.DataFrame, prompts: list[str]) -> None:
    db.create_all()
    with db.transaction() as s:
        for p in [*prompts, "attn"]:
            s.add(Prompt(prompt_id=p, prompt="", text_0="", text_1=""))
        for pos, (pid, cond) in enumerate(slot_order(asg)):
            s.add(Slot(slot_id=pid, condition=cond, position=pos, status="open", issues=0))
        for row in asg.itertuples():
            s.add(SlotTrial(slot_id=row.participant_id, trial=int(row.trial), prompt_id=row.prompt_id,
                            first_clip=int(row.first_clip)))  # fmt: skip


def intake(asg: pd.DataFrame, prompts: list[str], rng: np.random.Generator) -> tuple[list[tuple[str, str]], int]:
    """(slot_id, condition) of the completed participants in the order they complete, through the app's slots,
    and the number of slots handed out more than once (an abandoned slot reissued)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{tmp}/app.db")
        _load_slots(db, asg, prompts)
        clock, events, done = 0.0, [], []
        n_slots = asg["participant_id"].nunique()
        while len(done) < n_slots:
            clock += rng.exponential(1.0)
            # events finishing before this arrival: completions and abandonments (reopening their slots)
            for _when, kind, pid, slot, cond in sorted(e for e in events if e[0] <= clock):
                with db.transaction() as s:
                    if kind == "abandon":
                        service.release_slot(s, slot, pid)
                    else:
                        s.execute(Slot.__table__.update().where(Slot.slot_id == slot).values(status="done"))
                        done.append((slot, cond))
            events = [e for e in events if e[0] > clock]
            with db.transaction() as s:
                p = Participant(token=service.new_token(), csrf="x", created_at=clock, last_seen=clock)
                s.add(p)
                s.flush()
                if not service.claim_slot(s, p):
                    continue  # every slot held: a real arrival would be told the study is full
                duration = rng.lognormal(math.log(8.0), 0.5)
                kind = "abandon" if rng.random() < ABANDON else "complete"
                events.append(
                    (clock + (duration / 2 if kind == "abandon" else duration), kind, p.id, p.slot_id, p.condition)
                )
        with db.transaction() as s:
            reissued = len(s.scalars(select(Slot.slot_id).where(Slot.issues > 1)).all())
        db.dispose()
    return done, reissued


def interval(ratings: pd.DataFrame, level: float, n_boot: int, seed: int) -> dict:
    """ICC(2,1) and ICC(2,k) with ``modprefs stats``' ``auto`` interval at ``level`` on one condition's ratings."""
    design = condition_design(ratings)
    row = icc_ci_for_design("x", design, "auto", n_boot, np.random.default_rng(seed), level)
    keys = ("icc_2_1", "icc_2_1_lo", "icc_2_1_hi", "icc_2_k", "icc_2_k_lo", "icc_2_k_hi", "k_effective")
    out = {k.removesuffix("_effective"): float(row[k]) for k in keys}
    out |= {"method": str(row["ci_method"]), "note": str(row["note"]), "df": _jackknife_df(design)}
    return out


def _jackknife_df(design) -> float:  # noqa: ANN001
    """The crossed jackknife's t df, (prompts - 1) + (participants - 1) (icc_ci.jackknife_interval)."""
    return float(len(np.unique(design.prompt)) - 1 + design.n_participants - 1)


def _logit(x: float) -> float:
    return math.log(x / (1 - x))


def at_level(iv: dict, level_from: float, level_to: float) -> dict | None:
    """The same logit-t jackknife interval at another level: same centre and standard error, the other t quantile.
    None where ``iv`` is not a logit-t interval centred on the estimate (Fisher's z fallback, undefined bounds): the
    caller then computes it afresh."""
    lo, hi, est = iv["icc_2_1_lo"], iv["icc_2_1_hi"], iv["icc_2_1"]
    if "jackknife" not in iv["method"] or not (0 < lo < est < hi < 1):
        return None
    a, b = _logit(lo), _logit(hi)
    if abs((a + b) / 2 - _logit(est)) > 1e-9:
        return None
    ratio = stats.t.ppf(0.5 + level_to / 2, iv["df"]) / stats.t.ppf(0.5 + level_from / 2, iv["df"])
    mid, half = (a + b) / 2, (b - a) / 2 * ratio
    lo1, hi1 = (1 / (1 + math.exp(-(mid + d))) for d in (-half, half))
    k = iv["k"]
    return iv | {
        "icc_2_1_lo": lo1,
        "icc_2_1_hi": hi1,
        "icc_2_k_lo": float(icc_k(lo1, k)),
        "icc_2_k_hi": float(icc_k(hi1, k)),
    }


def true_prompt_icc1(model: str, h: np.ndarray) -> np.ndarray:
    """Each prompt's own ICC(2,1) (its clips' variance .3 h_p against the raters' and the noise)."""
    es2 = 1 + SCALE_CV**2 if model == "rater_heterogeneity" else 1.0
    return VAR_CLIP * h / (es2 * VAR_CLIP * h + VAR_RATER + VAR_RESID)


def prompt_reliability(world: World, asg: pd.DataFrame) -> dict:
    """What judge-guided allocation aims at, with the full design (every slot completed): per prompt and condition,
    the TRUE reliability of its mean rating, Spearman-Brown of its own ICC(2,1) at its raters; mean, share of the
    prompts at >= .75, and the lowest."""
    counts = asg[asg.trial > 0].groupby(["condition", "prompt_id"]).size()
    rel = []
    for c in CONDITIONS:
        k = counts[c].reindex(world.prompts).fillna(0).to_numpy(float)
        rel.append(icc_k(true_prompt_icc1(world.model, world.h), np.maximum(k, 1)))
    r = np.concatenate(rel)
    return {"mean": float(r.mean()), "share_75": float((r >= RULE.target_icc).mean()), "min": float(r.min())}


def one_study(args: tuple[str, int, int]) -> dict:
    """Both allocations of one simulated study (same world, same raters' draws per allocation seed)."""
    model, index, n_boot = args
    out: dict = {"model": model, "study": index}
    for allocation in ALLOCATIONS:
        rng = np.random.default_rng([54, MODELS.index(model), index])
        world = World(model, rng)
        weights = None
        if allocation == "judges":
            judges, stimuli = world.judges()
            weights = judge_weights(judges, stimuli, {})
        asg = make_assignments(world.prompts, RULE.max_participants, TRIALS, seed=index, weights=weights, min_raters=2)
        out[f"{allocation}_prompts"] = prompt_reliability(world, asg)
        order, _ = intake(asg, world.prompts, np.random.default_rng([55, MODELS.index(model), index]))
        rated = asg[asg.trial > 0]
        by_pid = {pid: world.rater_ratings(pid, cond, rated[rated.participant_id == pid]) for pid, cond in order}
        looks = []
        for i in range(n_looks(RULE)):
            n = look_point(RULE, i)
            look: dict = {"n": n}
            # the app looks when the slower condition has n completed: everyone completed by then is in the export
            upto = next(
                j for j in range(len(order) + 1) if all(sum(c == k for _, c in order[:j]) >= n for k in CONDITIONS)
            )
            for cond in CONDITIONS:
                pids = [pid for pid, c in order[:upto] if c == cond]
                frame = pd.DataFrame([r for pid in pids for r in by_pid[pid]])
                seed = 1000 * index + 10 * i + CONDITIONS.index(cond)
                corrected = interval(frame, look_level(RULE), n_boot, seed)
                nominal = at_level(corrected, look_level(RULE), 0.95) or interval(frame, 0.95, n_boot, seed)
                look[cond] = {"bonferroni": corrected, "nominal": nominal}
            looks.append(look)
        out[allocation] = looks
    return out


def summarise(records: list[dict]) -> list[dict]:
    cells = []
    for model in MODELS:
        rs = [r for r in records if r["model"] == model]
        if not rs:
            continue
        true1 = true_icc1(model)
        for allocation in ALLOCATIONS:
            cover = {"bonferroni": 0, "naive": 0}
            stop_n, met, sq = [], 0, {"icc_2_1": [], "icc_2_k": []}
            widths, fixed_cover = [], 0
            meets_at = {look_point(RULE, i): 0 for i in range(n_looks(RULE))}
            for r in rs:
                looks = r[allocation]
                for level, key in (("bonferroni", "bonferroni"), ("naive", "nominal")):
                    for i, look in enumerate(looks):
                        ivs = {c: (look[c][key]["icc_2_k_lo"], look[c][key]["icc_2_k_hi"]) for c in CONDITIONS}
                        decision = decide(RULE, ivs, look["n"], i)
                        if decision != "continue":
                            break
                    for c in CONDITIONS:
                        iv = look[c][key]
                        cover[level] += iv["icc_2_k_lo"] <= float(icc_k(true1, iv["k"])) <= iv["icc_2_k_hi"]
                    if level == "bonferroni":
                        stop_n.append(look["n"])
                        met += decision == "met"
                for look in looks:
                    ivs = {c: (look[c]["nominal"]["icc_2_k_lo"], look[c]["nominal"]["icc_2_k_hi"]) for c in CONDITIONS}
                    meets_at[look["n"]] += all(condition_meets(RULE, lo, hi) for lo, hi in ivs.values())
                last = looks[-1]
                for c in CONDITIONS:
                    iv = last[c]["nominal"]
                    sq["icc_2_1"].append((iv["icc_2_1"] - true1) ** 2)
                    sq["icc_2_k"].append((iv["icc_2_k"] - float(icc_k(true1, iv["k"]))) ** 2)
                    widths.append(iv["icc_2_k_hi"] - iv["icc_2_k_lo"])
                    fixed_cover += iv["icc_2_k_lo"] <= float(icc_k(true1, iv["k"])) <= iv["icc_2_k_hi"]
            n_obs = 2 * len(rs)
            equal = next((n for n, hits in meets_at.items() if hits >= met), None) if met else None
            mean_stop = float(np.mean(stop_n))
            cells.append({
                "model": model, "allocation": allocation, "n_studies": len(rs), "n_intervals": n_obs,
                "true_icc_2_1": true1,
                "coverage_at_stop": cover["bonferroni"] / n_obs,
                "coverage_at_stop_ci": clopper_pearson(cover["bonferroni"], n_obs),
                "naive_coverage_at_stop": cover["naive"] / n_obs,
                "stopped_met": met / len(rs), "mean_participants_at_stop": mean_stop,
                "fixed_at_equal_precision": equal,
                "saved_vs_equal_precision": (equal - mean_stop) if equal is not None else None,
                "saved_vs_max": RULE.max_participants - mean_stop,
                "fixed_meets_share": {str(n): hits / len(rs) for n, hits in meets_at.items()},
                "fixed40_rmse_icc_2_1": math.sqrt(float(np.mean(sq["icc_2_1"]))),
                "fixed40_rmse_icc_2_k": math.sqrt(float(np.mean(sq["icc_2_k"]))),
                "fixed40_width_icc_2_k": float(np.mean(widths)),
                "fixed40_coverage": fixed_cover / n_obs,
                "prompt_reliability_mean": float(np.mean([r[f"{allocation}_prompts"]["mean"] for r in rs])),
                "prompt_share_at_target": float(np.mean([r[f"{allocation}_prompts"]["share_75"] for r in rs])),
                "prompt_reliability_min": float(np.mean([r[f"{allocation}_prompts"]["min"] for r in rs])),
            })  # fmt: skip
    return cells


def markdown(cells: list[dict], meta: dict) -> str:
    lines = [
        "# Judge-guided allocation and the stopping rule through the app's slots (issue #54)",
        "",
        f"{meta['n_studies']} studies per model ({meta['n_studies'] * 2} condition intervals per cell); "
        f"{N_PROMPTS} prompts x 2 clips, {TRIALS} trials per participant, up to {RULE.max_participants} participants "
        f"per condition; looks at 10, 20, 30, 40 completed; rule: ICC(2,k) lower bound >= {RULE.target_icc} in both "
        f"conditions at 1 - .05/4; {ABANDON:.0%} of arrivals abandon (slot reissued); jackknife noise refits "
        f"{meta['n_boot']}; {meta['seconds']:.0f} s on {meta['workers']} processes.",
        "",
        "| model | allocation | coverage at stop (95 % CI) | naive | stopped met | participants at stop "
        "| fixed n at equal precision | saved | RMSE ICC(2,1) at 40 | RMSE ICC(2,k) at 40 | width ICC(2,k) at 40 "
        "| coverage at 40 | prompts' reliability at 40: mean / share >= .75 / lowest |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        ci = c["coverage_at_stop_ci"]
        eq = "-" if c["fixed_at_equal_precision"] is None else str(c["fixed_at_equal_precision"])
        saved = "-" if c["saved_vs_equal_precision"] is None else f"{c['saved_vs_equal_precision']:.1f}"
        lines.append(
            f"| {c['model']} | {c['allocation']} | {c['coverage_at_stop']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] | "
            f"{c['naive_coverage_at_stop']:.3f} | {c['stopped_met']:.2f} | "
            f"{c['mean_participants_at_stop']:.1f} | {eq} | "
            f"{saved} | {c['fixed40_rmse_icc_2_1']:.3f} | {c['fixed40_rmse_icc_2_k']:.3f} | "
            f"{c['fixed40_width_icc_2_k']:.3f} | {c['fixed40_coverage']:.3f} | {c['prompt_reliability_mean']:.3f} / "
            f"{c['prompt_share_at_target']:.2f} / {c['prompt_reliability_min']:.3f} |"
        )
    lines += [
        "",
        "Fixed n at equal precision: the fewest look-point participants per condition whose plain 95 % interval meets "
        "the rule in at least as many studies as the sequential design stopped with `met`; saved = that n - the mean "
        "participants at the stop. RMSE and width at 40: the same number of ratings under both allocations. Prompts' "
        "reliability: each prompt's true reliability of its mean rating (Spearman-Brown of its own ICC(2,1) at its "
        "raters), mean over prompts and conditions, share at >= .75, lowest (mean over studies).",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-studies", type=int, default=100)
    ap.add_argument("--n-boot", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--summarise-only", action="store_true", help="recompute the tables from the stored records")
    args = ap.parse_args()
    if args.summarise_only:
        with gzip.open(OUT / "live_allocation_records.json.gz", "rt", encoding="utf-8") as fh:
            records = json.load(fh)
        meta = json.loads((OUT / "live_allocation.json").read_text(encoding="utf-8"))["meta"]
        cells = summarise(records)
        (OUT / "live_allocation.json").write_text(json.dumps({"meta": meta, "cells": cells}, indent=2) + "\n")
        (OUT / "live_allocation.md").write_text(markdown(cells, meta), encoding="utf-8")
        print(markdown(cells, meta))
        return 0
    jobs = [(m, i, args.n_boot) for i in range(args.n_studies) for m in args.models]
    start = time.time()
    records = []
    with ProcessPoolExecutor(args.workers) as pool:
        for i, record in enumerate(pool.map(one_study, jobs, chunksize=1)):
            records.append(record)
            if (i + 1) % 20 == 0:
                print(f"{i + 1}/{len(jobs)} studies, {time.time() - start:.0f} s", flush=True)
    meta = {"n_studies": args.n_studies, "n_boot": args.n_boot, "workers": args.workers, "seconds": time.time() - start}
    cells = summarise(records)
    OUT.mkdir(parents=True, exist_ok=True)
    with gzip.open(OUT / "live_allocation_records.json.gz", "wt", encoding="utf-8") as fh:
        json.dump(records, fh)  # every look's intervals: the summary can be recomputed (--summarise-only)
    (OUT / "live_allocation.json").write_text(
        json.dumps({"meta": meta, "cells": cells}, indent=2) + "\n", encoding="utf-8"
    )
    (OUT / "live_allocation.md").write_text(markdown(cells, meta), encoding="utf-8")
    print(markdown(cells, meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
