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
   at the looks-corrected level (:func:`modprefs.stats.sequential.look_level`: 1 - .05 / 4) and at 95 %; each
   declared rule (``RULES``: ICC(2,k)'s lower bound >= .7, or its half-width <= .15, in both conditions,
   :func:`modprefs.stats.sequential.decide`) stops the study at the first look that meets it (else at 40). The
   records keep every look's intervals, so both rules are applied to the same studies.

Design: 24 prompts x 2 clips, 12 trials (prompts) per participant, up to 40 participants per condition.

Reported per generating model, allocation and rule: coverage of the TRUE ICC(2,k) (at the look's effective k) by
the interval reported at the stop (per condition; Clopper-Pearson 95 % interval of the coverage), looks-corrected
and naive (the plain 95 % interval, stopping on it), the share stopped early, participants per condition at the
stop and saved against the fixed design of 40, the fixed design at equal precision (the fewest look-point
participants whose plain 95 % interval meets the rule in at least as many studies as the sequential design stopped
with ``met``) and the participants saved against it; and, at the fixed design of 40 per condition, the root mean
squared error of ICC(2,1) and ICC(2,k) and the mean 95 % interval width: judge-guided against balanced at the same
number of ratings.

Generating models (written here; prompts p with two clips, raters r; variances .3 clip, .1 rater, .6 residual)::

    gaussian             y = u_pc + v_r + e             u_pc ~ N(0, .3 h_p): prompts differ in agreement,
                                                        h_p lognormal (sd .8, mean 1); judge gap ~ log h_p, rho .8
    rater_heterogeneity  y = s_r u_pc + v_r + t_r e      s_r (scale use, CV .3) and t_r (noise, CV .8) per rater
    weak_judges          as gaussian, rho .1             the judges barely see which prompts humans agree on
    heavy_tailed         as gaussian, u, v, e t(4)

True ICC(2,1) = E[s]^2 .3 / (E[s^2] .3 + .1 + .6) (E[h] = E[t^2] = 1); ICC(2,k) its Spearman-Brown image at the
study's effective k. The judge-guided design gives the prompts whose clips differ little (small h_p: low agreement)
more raters; what that does to a pooled ICC is the question.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/live_allocation.py [--n-studies 500] [--workers 2]

Writes benchmarks/out/live_allocation.json and live_allocation.md, and the per-study records
benchmarks/out/records/live_allocation/<model>__<block>.jsonl.gz (benchmarks/tools/_records.py; ``--summarise-only``
rebuilds the tables from them), every ``--checkpoint-every`` studies and at the end. ``--n-boot`` (default 50) is
the jackknife's residual refits for its noise term (the app uses ``stats.n_boot``, 2000 by default: the cost of 32
intervals per study).
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

import _records  # noqa: E402
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
N_PROMPTS, TRIALS = 24, 12
VAR_CLIP, VAR_RATER, VAR_RESID = 0.3, 0.1, 0.6
PROMPT_SD = 0.8  # sd of log h_p
SCALE_CV, NOISE_CV = 0.3, 0.8
#: The rules the table reports, declared before the 500-study run (the looks and their level, 1 - .05/4, are the
#: same for both: each study's records keep every look's intervals and each rule is applied to them). RULE, the
#: first, also sets the looks and the prompts' reliability target.
RULES = (
    StoppingRule(rule="lower_bound", target_icc=0.7, min_participants=10, max_participants=40, look_every=10),
    StoppingRule(rule="half_width", half_width=0.15, min_participants=10, max_participants=40, look_every=10),
)
RULE = RULES[0]
PROMPT_TARGET = 0.75  # a prompt's mean rating counted reliable
SHARD = 250  # studies per records file (each under 1 MB)
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
    return {"mean": float(r.mean()), "share_75": float((r >= PROMPT_TARGET).mean()), "min": float(r.min())}


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


def rule_label(rule: StoppingRule) -> str:
    """``lower_bound >= .7`` / ``half_width <= .15``: the rule as the table names it."""
    if rule.rule == "lower_bound":
        return f"lower bound >= {rule.target_icc:g}"
    return f"half-width <= {rule.half_width:g}"


def _stop(rule: StoppingRule, looks: list[dict], key: str) -> tuple[dict, str]:
    """The look at which ``rule`` stops a study on its ``key`` intervals ("bonferroni" or "nominal"), and why."""
    for i, look in enumerate(looks):
        ivs = {c: (look[c][key]["icc_2_k_lo"], look[c][key]["icc_2_k_hi"]) for c in CONDITIONS}
        decision = decide(rule, ivs, look["n"], i)
        if decision != "continue":
            return look, decision
    return looks[-1], "max"


def _covers(iv: dict, true1: float) -> bool:
    return iv["icc_2_k_lo"] <= float(icc_k(true1, iv["k"])) <= iv["icc_2_k_hi"]


def _fixed40(rs: list[dict], allocation: str, true1: float) -> dict:
    """At the fixed design (every look's last, 40 per condition, plain 95 %): RMSE, width and coverage."""
    sq: dict[str, list[float]] = {"icc_2_1": [], "icc_2_k": []}
    widths, cover = [], 0
    for r in rs:
        for c in CONDITIONS:
            iv = r[allocation][-1][c]["nominal"]
            sq["icc_2_1"].append((iv["icc_2_1"] - true1) ** 2)
            sq["icc_2_k"].append((iv["icc_2_k"] - float(icc_k(true1, iv["k"]))) ** 2)
            widths.append(iv["icc_2_k_hi"] - iv["icc_2_k_lo"])
            cover += _covers(iv, true1)
    return {
        "fixed40_rmse_icc_2_1": math.sqrt(float(np.mean(sq["icc_2_1"]))),
        "fixed40_rmse_icc_2_k": math.sqrt(float(np.mean(sq["icc_2_k"]))),
        "fixed40_width_icc_2_k": float(np.mean(widths)),
        "fixed40_coverage": cover / (2 * len(rs)),
    }


def summarise_rule(rule: StoppingRule, rs: list[dict], allocation: str, true1: float) -> dict:
    """One rule on one cell's studies: coverage of the interval reported at the stop (looks-corrected and naive),
    participants at the stop, and the fixed design at equal precision."""
    cover = {"bonferroni": 0, "naive": 0}
    stop_n, met = [], 0
    meets_at = {look_point(rule, i): 0 for i in range(n_looks(rule))}
    for r in rs:
        looks = r[allocation]
        for level, key in (("bonferroni", "bonferroni"), ("naive", "nominal")):
            look, decision = _stop(rule, looks, key)
            cover[level] += sum(_covers(look[c][key], true1) for c in CONDITIONS)
            if level == "bonferroni":
                stop_n.append(look["n"])
                met += decision == "met"
        for look in looks:
            ivs = [(look[c]["nominal"]["icc_2_k_lo"], look[c]["nominal"]["icc_2_k_hi"]) for c in CONDITIONS]
            meets_at[look["n"]] += all(condition_meets(rule, lo, hi) for lo, hi in ivs)
    n_obs = 2 * len(rs)
    equal = next((n for n, hits in meets_at.items() if hits >= met), None) if met else None
    mean_stop = float(np.mean(stop_n))
    return {
        "rule": rule_label(rule),
        "coverage_at_stop": cover["bonferroni"] / n_obs,
        "coverage_at_stop_ci": clopper_pearson(cover["bonferroni"], n_obs),
        "naive_coverage_at_stop": cover["naive"] / n_obs,
        "naive_coverage_at_stop_ci": clopper_pearson(cover["naive"], n_obs),
        "stopped_met": met / len(rs),
        "stopped_early": float(np.mean([n < rule.max_participants for n in stop_n])),
        "mean_participants_at_stop": mean_stop,
        "saved_vs_max": rule.max_participants - mean_stop,
        "fixed_at_equal_precision": equal,
        "saved_vs_equal_precision": (equal - mean_stop) if equal is not None else None,
        "fixed_meets_share": {str(n): hits / len(rs) for n, hits in meets_at.items()},
    }


def summarise(records: list[dict]) -> list[dict]:
    """One cell per generating model, allocation and rule."""
    cells = []
    for model in MODELS:
        rs = [r for r in records if r["model"] == model]
        if not rs:
            continue
        true1 = true_icc1(model)
        for allocation in ALLOCATIONS:
            common = {
                "model": model, "allocation": allocation, "n_studies": len(rs), "n_intervals": 2 * len(rs),
                "true_icc_2_1": true1, **_fixed40(rs, allocation, true1),
                "prompt_reliability_mean": float(np.mean([r[f"{allocation}_prompts"]["mean"] for r in rs])),
                "prompt_share_at_target": float(np.mean([r[f"{allocation}_prompts"]["share_75"] for r in rs])),
                "prompt_reliability_min": float(np.mean([r[f"{allocation}_prompts"]["min"] for r in rs])),
            }  # fmt: skip
            cells += [common | summarise_rule(rule, rs, allocation, true1) for rule in RULES]
    return cells


def _interval(ci: list[float] | tuple[float, float]) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def markdown(doc: dict) -> str:
    meta, cells = doc["meta"], doc["summary"]
    n = min(c["n_studies"] for c in cells)
    lines = [
        "# Judge-guided allocation and the stopping rule through the app's slots (issue #54)",
        "",
        f"{n} studies per model ({2 * n} condition intervals per cell); {N_PROMPTS} prompts x 2 clips, {TRIALS} "
        f"trials per participant, up to {RULE.max_participants} participants per condition; looks at "
        f"{', '.join(str(look_point(RULE, i)) for i in range(n_looks(RULE)))} completed, each at 1 - .05/"
        f"{n_looks(RULE)}; rules on ICC(2,k) in both conditions: {'; '.join(rule_label(r) for r in RULES)}; "
        f"{ABANDON:.0%} of "
        f"arrivals abandon (slot reissued); jackknife noise refits {meta['n_boot']}; {meta['seconds']:.0f} s on "
        f"{meta['workers']} processes.",
        "",
        "Stopping: coverage of the TRUE ICC(2,k) by the interval reported at the stop (looks-corrected; naive: the "
        "plain 95 % interval, stopping on it), share of studies stopped early, participants per condition at the stop "
        "and saved against the fixed design of 40, and the fixed n at equal precision.",
        "",
        "| model | allocation | rule | coverage at stop (95 % CI) | naive coverage at stop (95 % CI) "
        "| stopped early | participants at stop | saved vs 40 | fixed n at equal precision | saved vs it |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        eq = "-" if c["fixed_at_equal_precision"] is None else str(c["fixed_at_equal_precision"])
        saved = "-" if c["saved_vs_equal_precision"] is None else f"{c['saved_vs_equal_precision']:.1f}"
        lines.append(
            f"| {c['model']} | {c['allocation']} | {c['rule']} | {c['coverage_at_stop']:.3f} "
            f"{_interval(c['coverage_at_stop_ci'])} | {c['naive_coverage_at_stop']:.3f} "
            f"{_interval(c['naive_coverage_at_stop_ci'])} | {c['stopped_early']:.2f} | "
            f"{c['mean_participants_at_stop']:.1f} | {c['saved_vs_max']:.1f} | {eq} | {saved} |"
        )
    lines += [
        "",
        "Allocation, at the fixed design of 40 per condition (the same number of ratings under both): RMSE, mean "
        "width and coverage of the plain 95 % interval; prompts' reliability: each prompt's true reliability of its "
        "mean rating (Spearman-Brown of its own ICC(2,1) at its raters), mean over prompts and conditions, share at "
        f">= {PROMPT_TARGET}, lowest (mean over studies).",
        "",
        "| model | allocation | RMSE ICC(2,1) | RMSE ICC(2,k) | width ICC(2,k) | coverage | prompts' reliability: "
        f"mean / share >= {PROMPT_TARGET} / lowest |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        if c["rule"] != rule_label(RULE):
            continue
        lines.append(
            f"| {c['model']} | {c['allocation']} | {c['fixed40_rmse_icc_2_1']:.3f} | {c['fixed40_rmse_icc_2_k']:.3f} | "
            f"{c['fixed40_width_icc_2_k']:.3f} | {c['fixed40_coverage']:.3f} | {c['prompt_reliability_mean']:.3f} / "
            f"{c['prompt_share_at_target']:.2f} / {c['prompt_reliability_min']:.3f} |"
        )
    lines += [
        "",
        "Fixed n at equal precision: the fewest look-point participants per condition whose plain 95 % interval meets "
        "the rule in at least as many studies as the sequential design stopped with the rule met; saved vs it = that "
        "n - the mean participants at the stop (negative: the looks-corrected interval needs more participants to "
        "meet the rule than one plain interval at a fixed n chosen in hindsight).",
    ]
    return "\n".join(lines) + "\n"


def write(doc: dict, out: Path) -> None:
    """The summary JSON (``doc`` less its studies), the studies as records, one file per model and ``SHARD`` studies
    (benchmarks/tools/_records.py), and the Markdown; each written whole, then renamed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _records.write_records(out, doc.get("studies", []), lambda r: f"{r['model']}/{r['study'] // SHARD:02d}")
    for path, text in (
        (out, json.dumps(_records.without_studies(doc), indent=1) + "\n"),
        (out.with_suffix(".md"), markdown(doc)),
    ):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-studies", type=int, default=500)
    ap.add_argument("--n-boot", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--out", type=Path, default=OUT / "live_allocation.json")
    ap.add_argument("--checkpoint-every", type=int, default=200, help="write the records and tables every N studies")
    ap.add_argument("--summarise-only", action="store_true", help="recompute the tables from the stored records")
    args = ap.parse_args()
    if args.summarise_only:
        doc = _records.load(args.out)
        write({**doc, "summary": summarise(doc["studies"])}, args.out)
        print(markdown(doc | {"summary": summarise(doc["studies"])}))
        return 0
    jobs = [(m, i, args.n_boot) for i in range(args.n_studies) for m in args.models]
    start = time.time()
    records: list[dict] = []

    def doc() -> dict:
        meta = {"n_boot": args.n_boot, "workers": args.workers, "seconds": time.time() - start}
        cells = summarise(sorted(records, key=lambda r: (MODELS.index(r["model"]), r["study"])))
        return {"meta": meta, "summary": cells, "studies": sorted(records, key=lambda r: (r["model"], r["study"]))}

    with ProcessPoolExecutor(args.workers) as pool:
        for i, record in enumerate(pool.map(one_study, jobs, chunksize=1)):
            records.append(record)
            if (i + 1) % 20 == 0:
                print(f"{i + 1}/{len(jobs)} studies, {time.time() - start:.0f} s", flush=True)
            if (i + 1) % args.checkpoint_every == 0:
                write(doc(), args.out)
    final = doc()
    write(final, args.out)
    print(markdown(final))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
