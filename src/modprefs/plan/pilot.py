"""Priors from a pilot: read its ratings, refit the simulator to them, bootstrap the uncertainty.

Input: any ratings source ``modprefs stats`` accepts (a folder of ratings/trials/participants tables, one
long or wide table, a ``datasets`` folder, ...; foreign column names mapped with ``--pilot-map``), validated
by the project's ratings ingest, and optionally a clips table (clip_id, prompt_id, n_chars) for the length
effect. :func:`read_pilot` is the single entry point for pilot data.

Fit (per condition, on the ratings the ICC analysis keeps: passed the attention check, trial >= 1).
The pilot's summary statistics -- the ICC model's REML variance components (clip, participant,
residual) and fixed effects (presented first, trial), the mean rating and, with trials.csv, the tie
rate -- are matched by the simulator's latent parameters (``var_clip_c``, ``var_participant_c``,
``var_resid_c``, ``intercept`` / ``b_text``, ``b_first`` / ``b_first_text``, ``b_trial`` /
``b_trial_text``, ``tie_threshold_mean_c``) by indirect inference: replicas of the pilot (its own
layout: same participants, prompts, trials and presentation orders) are simulated, refitted, and the
latent parameters updated (variances multiplicatively, fixed effects additively) until the replicas'
mean statistics equal the pilot's. The slider's clipping and ties attenuate what a fit sees, which is
why the latent values are not the fitted ones. Attrition comes from participants.csv (attention
failures among recruits; non-completers among passers), minutes per trial from trials.csv's
``decision_time_s``. What a pilot cannot pin down (tail shapes, within-prompt and cross-modality clip
correlations, rater scale heterogeneity, the length effect without clips) stays at the paper's priors;
:attr:`Priors.notes` says so.

Rating scale (``scale``, config ``study.scale``): the pilot's ratings are on the study's scale, and so are
the replicas' (:mod:`modprefs.plan.fastsim` maps the simulated 1..100 ratings onto it), so the statistics
are matched in scale units; the additive updates of the latent intercept and fixed effects convert a gap in
scale units to the paper's 1..100 units (x 99 / (max - min)). The pilot's statistics in priors.csv are in
scale units.

Uncertainty: a parametric bootstrap -- ``n_boot`` replicas at the fitted parameters, refitted --
gives each statistic's sampling SD and the pessimistic / optimistic scenarios
(:func:`modprefs.plan.priors.build_scenarios`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.io_tables import as_bool_column
from modprefs.plan.errors import PlanInputError
from modprefs.plan.fastsim import ConditionRatings, simulate_study
from modprefs.plan.layout import Layout, layout_from_assignments, prism_like_lengths
from modprefs.plan.priors import Priors, build_scenarios, icc_curve, jeffreys
from modprefs.ratings.ingest import validate_ratings
from modprefs.ratings.read import read_stimuli
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.ratings.source_tables import ATTENTION_CLIPS, RawTables
from modprefs.ratings.sources import load_ratings_source
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.reliability.icc import analysable_ratings, fit_iccs, icc_from_components
from modprefs.study.terms import CONDITIONS

PILOT_COLUMNS = ("trial", "presented_first")  # beyond what every ratings source has: the fit's layout needs them
STATS = ("var_clip", "var_participant", "var_resid", "b_first", "b_trial", "mean_rating", "tie_rate")


@dataclass
class Pilot:
    """A pilot's validated tables (canonical schema, typed); ``trials`` and ``clips`` may be None.

    ``source`` is the ratings source as given (a folder, a table file, a ``datasets`` folder, ...).
    """

    source: str
    ratings: pd.DataFrame
    participants: pd.DataFrame
    trials: pd.DataFrame | None
    clips: pd.DataFrame | None


def _stimuli_from_ratings(raw: RawTables) -> pd.DataFrame:
    """The stimulus table a pilot without ``--pilot-clips`` implies: its rated clips, ``{prompt_id}_{0|1}``."""
    ratings = raw.tables["ratings"]
    if "clip_id" in ratings.columns:
        clips = ratings["clip_id"].dropna().astype(str)
    elif {"prompt_id", "response"} <= set(ratings.columns):
        clips = (
            ratings["prompt_id"].astype(str)
            + "_"
            + ratings["response"].astype(str).str.replace(r"\.0$", "", regex=True)
        )
    else:
        raise PlanInputError(
            f"--pilot: {raw.origins['ratings'].file()}: no clip_id (or prompt_id and response) column "
            f"after --pilot-map (has {list(ratings.columns)})"
        )
    clips = clips[~clips.isin(list(ATTENTION_CLIPS))]
    suffix = clips.str.extract(r"^(.*)_([01])$")
    bad = clips[suffix[0].isna()]
    if len(bad):
        raise PlanInputError(
            f"--pilot: {raw.origins['ratings'].file()}: clip id {bad.iloc[0]!r} does not end in _0 or "
            "_1 (the response index); give --pilot-clips with each clip's prompt_id and response"
        )
    prompts = sorted(set(suffix[0]))
    return pd.DataFrame(
        {
            "prompt_id": [p for p in prompts for _ in (0, 1)],
            "clip_id": [f"{p}_{r}" for p in prompts for r in (0, 1)],
            "response": [r for _ in prompts for r in (0, 1)],
        }
    )


def read_pilot(
    source: str | Path,
    clips: str | Path | None = None,
    columns: Mapping[str, str] | None = None,
    scale: RatingScale | None = None,
) -> Pilot:
    """Read and validate a pilot: any ratings source ``modprefs stats`` accepts, foreign names mapped by ``columns``.

    Args:
        source: the pilot's ratings source (:func:`modprefs.ratings.sources.load_ratings_source`: a folder of
            ratings/trials/participants tables, one long or wide table, a ``datasets`` folder, ...).
        clips: the pilot's clips table (clip_id, prompt_id [, response, n_chars]); without it the stimuli are the
            rated clips (ids ``{prompt_id}_{0|1}``) and the length effect stays at the paper's prior.
        columns: {canonical name: the pilot's column name} (``--pilot-map``).
        scale: the study's rating scale the pilot's ratings are checked against (default the paper's 1..100).

    The tables go through the project's ratings validation (:func:`modprefs.ratings.ingest.validate_ratings`),
    so every problem names the file, row and column; the fit also needs each rating's ``trial`` and
    ``presented_first``. Raises :class:`PlanInputError` (or the ingest's errors, all
    :class:`~modprefs.errors.UserInputError`).
    """
    stimuli = read_stimuli(clips, what=f"--pilot-clips {clips}") if clips is not None else None
    if not str(source).startswith("hf://") and not Path(source).exists():
        raise PlanInputError(f"--pilot: {source} does not exist (a ratings folder, table file or datasets folder)")
    raw = load_ratings_source(source, columns, stimuli)
    valid = validate_ratings(
        raw, stimuli if stimuli is not None else _stimuli_from_ratings(raw), scale=scale or PAPER_SCALE
    )
    ratings = valid.tables["ratings"]
    missing = [c for c in PILOT_COLUMNS if c not in ratings.columns or ratings[c].isna().all()]
    if missing:
        raise PlanInputError(
            f"--pilot: {source}: the ratings ({raw.origins['ratings'].file()}) have no "
            f"{' or '.join(missing)} column (after "
            "--pilot-map): the fit replicates the pilot's trial order and presentation order "
            f"(has {list(ratings.columns)})"
        )
    participants = valid.tables["participants"]
    if "passed_attention" not in participants.columns:
        raise PlanInputError(
            f"--pilot: {source}: no passed_attention (participants) and no attention-check "
            "answer (trial 0 preference in trials) to derive it from"
        )
    clip_table = None
    if stimuli is not None:
        if "n_chars" in stimuli.columns:
            clip_table = stimuli
    return Pilot(str(source), ratings, participants, valid.tables.get("trials"), clip_table)


# --------------------------------------------------------------------------------------------------
# the pilot as arrays
# --------------------------------------------------------------------------------------------------
@dataclass
class PilotArrays:
    """The pilot's analysed ratings per condition, its layout and (optional) lengths, coded as the simulator's."""

    ratings: dict[str, ConditionRatings]
    layout: Layout
    lengths: np.ndarray | None
    prompts: list[str]


def pilot_arrays(pilot: Pilot) -> PilotArrays:
    """Code the pilot's analysed ratings (participants who passed, trial >= 1) like the simulator's output."""
    frames = {c: analysable_ratings(pilot.ratings, pilot.participants, c) for c in CONDITIONS}
    frames = {c: f for c, f in frames.items() if not f.empty}
    if not frames:
        raise PlanInputError(
            f"--pilot: {pilot.source} has no analysable ratings "
            "(participants who passed the attention check, trial >= 1)"
        )
    prompts = sorted(set().union(*(set(f["prompt_id"].astype(str)) for f in frames.values())))
    code = {p: i for i, p in enumerate(prompts)}
    ratings, rows = {}, []
    for c, f in frames.items():
        f = f.sort_values(["participant_id", "trial", "clip_id"]).reset_index(drop=True)
        people = sorted(f["participant_id"].astype(str).unique())
        pcode = {p: i for i, p in enumerate(people)}
        response = f["clip_id"].astype(str).str.extract(r"_([01])$")[0].astype(int).to_numpy()
        prompt = f["prompt_id"].astype(str).map(code).to_numpy()
        first = as_bool_column(f["presented_first"]).to_numpy()
        trial = pd.to_numeric(f["trial"]).to_numpy(np.int64)
        part = f["participant_id"].astype(str).map(pcode).to_numpy()
        ratings[c] = ConditionRatings(
            y=pd.to_numeric(f["rating"]).to_numpy(float),
            first=first.astype(float),
            trial=trial,
            clip=2 * prompt + response,
            participant=part,
            tie=_pilot_ties(pilot, f, c),
        )
        trial_rows = f[first].assign(first_clip=response[first])
        rows.append(trial_rows[["participant_id", "condition", "trial", "prompt_id", "first_clip"]])
    assignments = pd.concat(rows, ignore_index=True)
    layout = layout_from_assignments(assignments, prompts)
    lengths = None
    if pilot.clips is not None:
        table = pilot.clips.assign(clip_id=pilot.clips["clip_id"].astype(str))
        n_chars = table.set_index("clip_id")["n_chars"].astype(float)
        wanted = [f"{p}_{r}" for p in prompts for r in (0, 1)]
        lacking = [w for w in wanted if w not in n_chars.index or pd.isna(n_chars.get(w))]
        if lacking:
            raise PlanInputError(f"--pilot-clips: no n_chars for clip(s) {lacking[:5]} rated in the pilot")
        lengths = n_chars.reindex(wanted).to_numpy().reshape(-1, 2)
    return PilotArrays(ratings, layout, lengths, prompts)


def _pilot_ties(pilot: Pilot, f: pd.DataFrame, condition: str) -> np.ndarray:
    """(n_trials,) tie flags of the analysed trials from trials.csv (empty when it is absent)."""
    if pilot.trials is None or "preference" not in pilot.trials.columns:
        return np.zeros(0, bool)
    t = pilot.trials.assign(
        participant_id=pilot.trials["participant_id"].astype(str),
        trial=pd.to_numeric(pilot.trials["trial"], errors="coerce"),
    )
    keys = (
        f[["participant_id", "trial"]]
        .drop_duplicates()
        .assign(participant_id=lambda x: x["participant_id"].astype(str), trial=lambda x: pd.to_numeric(x["trial"]))
    )
    merged = keys.merge(t, on=["participant_id", "trial"], how="left")
    return (merged["preference"].astype(str).str.strip().str.lower() == "tie").to_numpy()


def statistics(r: ConditionRatings) -> dict[str, float]:
    """The statistics the fit matches: ICC-model variance components and fixed effects, mean rating, tie rate."""
    from modprefs.plan.analysis import icc_design

    design = icc_design(r)
    fit, k, icc1, _ = fit_iccs(design)
    beta = dict(zip(("intercept",) + design.terms, fit.beta))
    return {
        "var_clip": fit.var_g1,
        "var_participant": fit.var_g2,
        "var_resid": fit.var_resid,
        "b_first": float(beta.get("presented_first", math.nan)),
        "b_trial": float(beta.get("trial_z", math.nan)),
        "mean_rating": float(r.y.mean()),
        "tie_rate": float(r.tie.mean()) if r.tie.size else math.nan,
        "icc1": icc1,
        "k": k,
    }


def _replicas(
    p: SimulationParams, arrays: PilotArrays, n: int, seed: int, scale: RatingScale = PAPER_SCALE
) -> dict[str, pd.DataFrame]:
    """Statistics of ``n`` simulated replicas of the pilot (its layout; no further dropout or failures), their
    ratings on ``scale``."""
    q = dataclasses.replace(p, p_incomplete_audio=0.0, p_incomplete_text=0.0)
    out: dict[str, list[dict[str, float]]] = {c: [] for c in arrays.ratings}
    for b in range(n):
        rng = np.random.default_rng([seed, 0x911, b])
        lengths = arrays.lengths if arrays.lengths is not None else prism_like_lengths(arrays.layout.n_prompts, rng)
        study = simulate_study(q, arrays.layout, lengths, rng, attention=False, scale=scale)
        for c in out:
            try:
                out[c].append(statistics(study.ratings[c]))
            except (ValueError, np.linalg.LinAlgError):
                continue
    return {c: pd.DataFrame(v) for c, v in out.items()}


def _update(
    p: SimulationParams,
    target: dict[str, dict[str, float]],
    sim: dict[str, pd.DataFrame],
    floor: SimulationParams,
    per_point: float = 1.0,
) -> SimulationParams:
    """One indirect-inference step: variances multiplicatively, means and fixed effects additively (a gap in
    scale units times ``per_point``, the paper's 1..100 units per scale unit)."""
    new: dict[str, Any] = {}  # SimulationParams fields
    shift: dict[str, dict[str, float]] = {}
    for c, t in target.items():
        m = sim[c].mean()
        for v in ("var_clip", "var_participant", "var_resid"):
            name = f"{v}_{c}"
            ratio = max(t[v], 0.0) / max(m[v], 1e-9)
            new[name] = max(getattr(p, name) * float(np.clip(ratio, 0.25, 4.0)), 0.01 * getattr(floor, name))
        if math.isfinite(t["tie_rate"]) and m["tie_rate"] > 0:
            name = f"tie_threshold_mean_{c}"
            ratio = max(t["tie_rate"], 1e-3) / m["tie_rate"]
            new[name] = getattr(p, name) * float(np.clip(ratio, 0.5, 2.0))
        shift[c] = {k: (t[k] - m[k]) * per_point for k in ("mean_rating", "b_first", "b_trial") if math.isfinite(t[k])}
    audio, text = shift.get("audio", {}), shift.get("text", {})
    for key, base, inter in (
        ("mean_rating", "intercept", "b_text"),
        ("b_first", "b_first", "b_first_text"),
        ("b_trial", "b_trial", "b_trial_text"),
    ):
        if key in audio:
            new[base] = getattr(p, base) + audio[key]
            if key in text:
                new[inter] = getattr(p, inter) + text[key] - audio[key]
        elif key in text:
            new[inter] = getattr(p, inter) + text[key]
    return dataclasses.replace(p, **new)


@dataclass
class PilotFit:
    """The fitted parameters, the pilot's statistics, the replicas' at the fit and the bootstrap's."""

    params: SimulationParams
    target: dict[str, dict[str, float]]
    fitted: dict[str, pd.DataFrame]
    boot: dict[str, pd.DataFrame]
    arrays: PilotArrays
    iterations: int


def fit_pilot(
    pilot: Pilot,
    base: SimulationParams | None = None,
    seed: int = 1,
    n_iter: int = 8,
    n_rep: int = 32,
    n_boot: int = 100,
    scale: RatingScale = PAPER_SCALE,
) -> PilotFit:
    """Fit the simulator to a pilot (see the module docstring); ``base`` = the starting priors (paper);
    ``scale``: the rating scale of the pilot's (and the replicas') ratings."""
    base = base if base is not None else SimulationParams()
    arrays = pilot_arrays(pilot)
    target = {}
    for c, r in arrays.ratings.items():
        try:
            target[c] = statistics(r)
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise PlanInputError(f"--pilot: the {c} ratings cannot be fitted ({exc})") from None
    # attrition and timing from the pilot's participants and trials, first: the simulator's rating model
    # reads the trial times (listening, dropout), so the replicas must have the pilot's
    counts = attrition_counts(pilot)
    updates: dict[str, Any] = {}  # SimulationParams fields
    for c, k in counts.items():
        if k["recruited"]:
            updates[f"p_fail_attention_{c}"] = k["failed"] / k["recruited"]
        if k["passed"] and k["incomplete"] is not None:
            updates[f"p_incomplete_{c}"] = k["incomplete"] / k["passed"]
        if math.isfinite(k["minutes"]):
            updates[f"trial_time_mean_{c}"] = 60 * k["minutes"]
            updates[f"trial_time_sd_{c}"] = (
                60 * k["minutes_sd"] if math.isfinite(k["minutes_sd"]) else base.by_condition("trial_time_sd", c)
            )
    p = dataclasses.replace(base, **updates)
    for _ in range(n_iter):
        p = _update(p, target, _replicas(p, arrays, n_rep, seed, scale), base, scale.paper_units_per_point())
    return PilotFit(
        params=p,
        target=target,
        fitted=_replicas(p, arrays, n_rep, seed + 1, scale),
        boot=_replicas(p, arrays, n_boot, seed + 2, scale),
        arrays=arrays,
        iterations=n_iter,
    )


def attrition_counts(pilot: Pilot) -> dict[str, dict[str, Any]]:
    """Per condition: recruited, failed, passed, incomplete (None without ``completed``), minutes per trial."""
    part = pilot.participants.assign(participant_id=pilot.participants["participant_id"].astype(str))
    if "condition" not in part.columns:
        cond = pilot.ratings.groupby(pilot.ratings["participant_id"].astype(str))["condition"].first()
        part["condition"] = part["participant_id"].map(cond)
    out = {}
    for c in CONDITIONS:
        g = part[part["condition"].astype(str) == c]
        if g.empty:
            continue
        passed = as_bool_column(g["passed_attention"])
        incomplete = int((~as_bool_column(g.loc[passed, "completed"])).sum()) if "completed" in g.columns else None
        minutes = minutes_sd = math.nan
        if pilot.trials is not None and "decision_time_s" in pilot.trials.columns:
            t = pilot.trials[pilot.trials["participant_id"].astype(str).isin(set(g.loc[passed, "participant_id"]))]
            t = t[pd.to_numeric(t["trial"], errors="coerce") >= 1]
            secs = pd.to_numeric(t["decision_time_s"], errors="coerce")
            if secs.notna().any():
                per_person = secs.groupby(t["participant_id"].astype(str)).mean()
                minutes = float(secs.mean() / 60)
                minutes_sd = float(per_person.std(ddof=1) / 60) if len(per_person) > 1 else math.nan
        out[c] = {
            "recruited": len(g),
            "failed": int((~passed).sum()),
            "passed": int(passed.sum()),
            "incomplete": incomplete,
            "minutes": minutes,
            "minutes_sd": minutes_sd,
            "n_time": int(passed.sum()),
        }
    return out


def pilot_priors(
    pilot: Pilot,
    seed: int = 1,
    n_boot: int = 100,
    quantiles: tuple[float, float] = (0.1, 0.9),
    base: SimulationParams | None = None,
    scale: RatingScale = PAPER_SCALE,
) -> Priors:
    """Priors fitted to a pilot, with pessimistic / optimistic scenarios from its parametric bootstrap;
    ``scale``: the rating scale of the pilot's ratings (and of the plan's simulated studies)."""
    base = base if base is not None else SimulationParams()
    fit = fit_pilot(pilot, base, seed=seed, n_boot=n_boot, scale=scale)
    central = fit.params
    curves = {c: icc_curve(central, c, seed, scale=scale) for c in CONDITIONS}
    estimate, boot = {}, {}
    for c, t in fit.target.items():
        estimate[c] = icc_from_components(t["var_clip"], t["var_participant"], t["var_resid"], 1.0)[0]
        b = fit.boot[c]
        boot[c] = np.array(
            [icc_from_components(x.var_clip, x.var_participant, x.var_resid, 1.0)[0] for x in b.itertuples()]
        )
    rates, minutes = _attrition_scenarios(pilot, quantiles)
    scen, table = build_scenarios(central, {c: curves[c] for c in estimate}, estimate, boot, rates, minutes, quantiles)
    extra = _pilot_estimates(fit)
    notes = _pilot_notes(pilot, fit)
    if not scale.is_paper:
        notes.append(
            f"The pilot's statistics in priors.csv (variance components, fixed effects, mean rating) are in units of "
            f"the rating scale {scale.min:g}-{scale.max:g} (step {scale.step:g}); the simulator's latent parameters "
            "stay in the paper's 1-100 units."
        )
    return Priors(
        source=f"pilot {pilot.source}",
        scenarios=scen,
        curves=curves,
        table=pd.concat([table, pd.DataFrame(extra)], ignore_index=True),
        lengths_pool=None,
        notes=notes,
        scale=scale,
    )


def _attrition_scenarios(pilot: Pilot, quantiles: tuple[float, float]):
    """Per condition (estimate, pessimistic, optimistic) attrition rates (Jeffreys bounds) and minutes per trial."""
    q_lo, q_hi = quantiles
    rates: dict[str, dict[str, tuple[float, float, float]]] = {"p_fail_attention": {}, "p_incomplete": {}}
    minutes = {}
    for c, k in attrition_counts(pilot).items():
        if k["recruited"]:
            rates["p_fail_attention"][c] = (
                k["failed"] / k["recruited"],
                jeffreys(k["failed"], k["recruited"], q_lo),
                jeffreys(k["failed"], k["recruited"], q_hi),
            )
        if k["passed"] and k["incomplete"] is not None:
            rates["p_incomplete"][c] = (
                k["incomplete"] / k["passed"],
                jeffreys(k["incomplete"], k["passed"], q_lo),
                jeffreys(k["incomplete"], k["passed"], q_hi),
            )
        if math.isfinite(k["minutes"]) and math.isfinite(k["minutes_sd"]):
            from scipy import stats

            se = k["minutes_sd"] / math.sqrt(max(k["n_time"], 1))
            minutes[c] = (
                k["minutes"],
                k["minutes"] + stats.norm.ppf(q_lo) * se,
                k["minutes"] + stats.norm.ppf(q_hi) * se,
            )
    return rates, minutes


def _pilot_estimates(fit: PilotFit) -> list[dict]:
    """priors.csv rows of the pilot's own statistics, each with its bootstrap SD and the replicas' average."""
    extra = []
    for c, t in fit.target.items():
        for s in ("var_clip", "var_participant", "var_resid", "b_first", "b_trial", "mean_rating", "tie_rate"):
            if not math.isfinite(t[s]):
                continue
            b = fit.boot[c][s].dropna()
            extra.append(
                {
                    "quantity": f"pilot {s}",
                    "condition": c,
                    "central": t[s],
                    "pessimistic": math.nan,
                    "optimistic": math.nan,
                    "bootstrap_sd": float(b.std(ddof=1)) if len(b) > 1 else math.nan,
                    "method": f"pilot estimate; replicas at the fit average {fit.fitted[c][s].mean():.4g}",
                }
            )
    return extra


def _pilot_notes(pilot: Pilot, fit: PilotFit) -> list[str]:
    """What the pilot fixed and what stays at the paper's priors."""
    n_raters = sum(len(np.unique(r.participant)) for r in fit.arrays.ratings.values())
    notes = [
        f"Fitted to the pilot {pilot.source} ({n_raters} "
        "analysed raters) by indirect inference; tail shapes, within-prompt and cross-modality clip correlations "
        "and rater scale heterogeneity stay at the paper's priors."
    ]
    missing = [c for c in CONDITIONS if c not in fit.target]
    if missing:
        notes.append(
            f"The pilot has no analysable {', '.join(missing)} ratings: that condition keeps the paper's priors."
        )
    if pilot.clips is None:
        notes.append("No clips table (--pilot-clips): the length effect stays at the paper's priors.")
    if all(not r.tie.size for r in fit.arrays.ratings.values()):
        notes.append("No trials.csv preferences: tie behaviour stays at the paper's priors.")
    return notes
