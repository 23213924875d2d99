"""What the analysis would report on one simulated study, computed the fast way.

Per condition (Table 4's ICC model, :func:`modprefs.stats.reliability.icc.condition_design`'s arrays built
directly from the simulator's): REML ICC(2,1), ICC(2,k), k = the effective ratings per clip (harmonic mean), and
their Wald SEs (:mod:`modprefs.plan.wald`). Across conditions: the audio - text ICC(2,1) difference; Table 2's
modality main effect and modality x length interaction (estimate, SE, Satterthwaite df) from
``rating ~ presented_first * modality + len_z * modality + trial_z * modality
+ (1 | participant_id) + (1 | clip_id) + (1 | clip_id:modality)``, the model Table 2 fits in most studies (its
default's intercept step: by-participant slopes are kept only where the ratings support them, and the simulator
gives every rater one primacy and one drift); benchmarks/validity/plan_validation.py compares the planned power with the
rejection rate of Table 2's own fit on fresh studies; the cross-modality winner
agreement at threshold 0 (:mod:`modprefs.stats.tables.agreement`'s definition) and each condition's
winner accuracy (share of prompts whose observed winner is the population's).
"""

from __future__ import annotations

import math

import numpy as np

from modprefs.plan.fastsim import ConditionRatings, SimulatedStudy
from modprefs.plan.wald import icc_standard_errors, theta_hessian
from modprefs.stats.mixed.lmm import RandomTerm, fit_lmm
from modprefs.stats.reliability.icc import ConditionDesign, fit_iccs, model_formula
from modprefs.stats.reliability.icc_difference import calibration, condition_parts, difference_tests
from modprefs.study.terms import CONDITIONS

#: Table 2's fixed effects in the engine's column order (lme4's expansion of TABLE2_FIXED).
TABLE2_TERMS = (
    "presented_first",
    "modality",
    "len_z",
    "trial_z",
    "presented_first:modality",
    "modality:len_z",
    "modality:trial_z",
)


def _zscore(x: np.ndarray) -> np.ndarray:
    sd = x.std(ddof=1) if x.size > 1 else 0.0
    return (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)


def icc_design(r: ConditionRatings) -> ConditionDesign:
    """The ICC model's arrays, as :func:`modprefs.stats.reliability.icc.condition_design` builds them from a table."""
    covariates = {"presented_first": r.first, "trial_z": _zscore(r.trial.astype(float))}
    terms = tuple(name for name, col in covariates.items() if col.size and np.ptp(col) > 0)
    X = np.column_stack([np.ones(r.y.size)] + [covariates[t] for t in terms])
    _, clip = np.unique(r.clip, return_inverse=True)
    _, part = np.unique(r.participant, return_inverse=True)
    _, prompt = np.unique(r.clip // 2, return_inverse=True)  # clip code = 2 x prompt + response
    return ConditionDesign(
        y=r.y.astype(float),
        X=X,
        clip=clip.astype(np.intp),
        participant=part.astype(np.intp),
        n_clips=int(clip.max()) + 1 if clip.size else 0,
        n_participants=int(part.max()) + 1 if part.size else 0,
        terms=terms,
        formula=model_formula(terms),
        prompt=prompt.astype(np.intp),
        n_prompts=int(prompt.max()) + 1 if prompt.size else 0,
    )


def condition_record(
    r: ConditionRatings, theta0: np.ndarray | None = None
) -> tuple[dict[str, float], np.ndarray | None]:
    """ICC(2,1), ICC(2,k), k and Wald SEs of one condition; and the fit's theta (a warm start for the next)."""
    out = {
        "n_ratings": float(r.y.size),
        "k": math.nan,
        "icc1": math.nan,
        "icck": math.nan,
        "se1": math.nan,
        "sek": math.nan,
        "ok": 0.0,
        "tie_rate": float(r.tie.mean()) if r.tie.size else math.nan,
        "mean_rating": float(r.y.mean()) if r.y.size else math.nan,
    }
    try:
        design = icc_design(r)
        fit, k, icc1, icck = fit_iccs(design, theta0=theta0)
    except (ValueError, np.linalg.LinAlgError):
        return out, None
    out.update(k=k, icc1=icc1, icck=icck, ok=float(fit.converged))
    try:
        out["se1"], out["sek"] = icc_standard_errors(fit.theta, theta_hessian(design, fit), k)
    except np.linalg.LinAlgError:
        pass
    return out, fit.theta


def table2_record(
    study: SimulatedStudy, theta0: np.ndarray | None = None
) -> tuple[dict[str, float], np.ndarray | None]:
    """Table 2's modality and modality x length estimates, SEs and Satterthwaite df, from the model Table 2 fits
    in most studies: ``TABLE2_FIXED + (1 | participant_id) + (1 | clip_id) + (1 | clip_id:modality)`` (the
    ``participant_slopes`` default's intercept step, and the ``stimulus_modality`` structure), REML, with the
    general mixed-model engine. ``theta0`` warm-starts the fit (the previous study's theta)."""
    out = {key: math.nan for term in ("t2_modality", "t2_len") for key in (f"{term}_b", f"{term}_se", f"{term}_df")}
    if set(study.ratings) != {"audio", "text"}:
        return out, None
    parts = []
    offset = 0
    n_cells = 2 * study.len_z.shape[0]
    for m, c in enumerate(CONDITIONS):
        r = study.ratings[c]
        parts.append((r, float(m), r.clip + m * n_cells, r.participant + offset))
        offset += int(r.participant.max()) + 1 if r.participant.size else 0
    y = np.concatenate([p[0].y for p in parts]).astype(float)
    first = np.concatenate([p[0].first for p in parts])
    modality = np.concatenate([np.full(p[0].y.size, p[1]) for p in parts])
    clips = np.concatenate([p[0].clip for p in parts])
    len_z = study.len_z.ravel()[clips]
    trial_z = _zscore(np.concatenate([p[0].trial for p in parts]).astype(float))
    X = np.column_stack(
        [np.ones(y.size), first, modality, len_z, trial_z, first * modality, modality * len_z, modality * trial_z]
    )
    ones = np.ones(y.size)
    terms = [
        RandomTerm(np.concatenate([p[3] for p in parts]), ones, "participant_id"),
        RandomTerm(clips, ones, "clip_id"),
        RandomTerm(np.concatenate([p[2] for p in parts]), ones, "clip_id:modality"),
    ]
    try:
        fit = fit_lmm(y, X, terms, reml=True, theta0=theta0)
    except (ValueError, np.linalg.LinAlgError):
        return out, None
    for term, j in (("t2_modality", 2), ("t2_len", 6)):
        out.update(
            {f"{term}_b": float(fit.beta[j]), f"{term}_se": float(fit.beta_se[j]), f"{term}_df": float(fit.df[j])}
        )
    return out, fit.theta


def prompt_gaps(r: ConditionRatings, n_prompts: int) -> np.ndarray:
    """(n_prompts,) mean rating of response 0 minus response 1 (NaN where a clip is unrated)."""
    n_clips = 2 * n_prompts
    count = np.bincount(r.clip, minlength=n_clips)
    total = np.bincount(r.clip, weights=r.y, minlength=n_clips)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return means[0::2] - means[1::2]


def agreement_record(study: SimulatedStudy) -> dict[str, float]:
    """Winner agreement across modalities at threshold 0 and each modality's winner accuracy.

    Agreement (as :func:`modprefs.stats.tables.agreement.agreement_at_zero`): among prompts decisive in both
    modalities (non-zero mean gap), the share with the same winner; ``agreement_n`` = their number.
    Accuracy: share of prompts whose observed winner (sign of the mean gap; a zero gap is a miss)
    equals the population winner (sign of the true gap).
    """
    n_prompts = study.len_z.shape[0]
    gaps = {c: prompt_gaps(r, n_prompts) for c, r in study.ratings.items()}
    out: dict[str, float] = {}
    for c, g in gaps.items():
        truth = np.sign(study.true_gap[c])
        out[f"accuracy_{c}"] = float(np.mean(np.nan_to_num(np.sign(g)) == truth))
    if set(gaps) == {"audio", "text"}:
        a, t = gaps["audio"], gaps["text"]
        both = np.isfinite(a) & np.isfinite(t) & (a != 0) & (t != 0)
        n = int(both.sum())
        out["agreement_n"] = float(n)
        out["agreement"] = float(np.mean(np.sign(a[both]) == np.sign(t[both]))) if n else math.nan
    return out


def study_record(
    study: SimulatedStudy, warm: dict[str, np.ndarray | None] | None = None, table2: bool = True
) -> dict[str, float]:
    """Every planning quantity of one study as a flat dict (keys ``{name}_{condition}`` per condition).

    ``warm`` maps "audio"/"text"/"table2" to starting thetas and is updated in place with this
    study's fits (warm starts change iterations, not the optimum).
    """
    warm = {} if warm is None else warm
    rec: dict[str, float] = {}
    for c, r in study.ratings.items():
        values, theta = condition_record(r, warm.get(c))
        warm[c] = theta if theta is not None else warm.get(c)
        rec.update({f"{k}_{c}": v for k, v in values.items()})
    if {"audio", "text"} <= set(study.ratings):
        rec["diff1"] = rec["icc1_audio"] - rec["icc1_text"]
        if table2:
            values, theta = table2_record(study, warm.get("table2"))
            warm["table2"] = theta if theta is not None else warm.get("table2")
            rec.update(values)
    rec.update(agreement_record(study))
    return rec


def jackknife_difference_record(
    study: SimulatedStudy, n_noise: int, rng: np.random.Generator, test: str = "jackknife"
) -> dict[str, float]:
    """Table 4's crossed-jackknife test of the ICC(2,1) difference on one study
    (:func:`modprefs.stats.reliability.icc_difference.difference_tests`; ``test="calibrated"``: with its variance
    calibrated, :func:`~modprefs.stats.reliability.icc_difference.calibration`): its SE (``jk_se``, ICC scale) and
    Satterthwaite df (``jk_df``), NaN where undefined or a fit failed."""
    parts = {}
    for c in CONDITIONS:
        r = study.ratings[c]
        try:
            parts[c] = condition_parts(icc_design(r), np.unique(r.clip // 2).astype(str), n_noise, rng)
        except (ValueError, np.linalg.LinAlgError):
            return {"jk_se": math.nan, "jk_df": math.nan}
    res = difference_tests(parts, calibration(parts, rng) if test == "calibrated" else None)["icc_2_1"]
    return {"jk_se": math.sqrt(res.variance) if res.variance >= 0 else math.nan, "jk_df": res.df}


def permutation_draws(
    study: SimulatedStudy, n: int, rng: np.random.Generator, theta0: np.ndarray | None = None
) -> np.ndarray:
    """``n`` draws of Table 4's permutation statistic: ICC(2,1) difference of random pseudo-groups.

    As :func:`modprefs.stats.tables.reliability_table.icc_permutation_test`: the analysed participants of both
    conditions are pooled and split at random into pseudo-audio / pseudo-text groups of the
    original sizes; each group's ICC(2,1) is refitted with the ICC model (trial_z standardised
    within the group). A clip is one level across the groups (its id is shared). NaN = a failed fit.
    """
    a, t = study.ratings["audio"], study.ratings["text"]
    n_a = int(a.participant.max()) + 1 if a.participant.size else 0
    n_t = int(t.participant.max()) + 1 if t.participant.size else 0
    pooled = ConditionRatings(
        y=np.concatenate([a.y, t.y]),
        first=np.concatenate([a.first, t.first]),
        trial=np.concatenate([a.trial, t.trial]),
        clip=np.concatenate([a.clip, t.clip]),
        participant=np.concatenate([a.participant, t.participant + n_a]),
        tie=np.zeros(0, bool),
    )
    out = np.full(n, np.nan)
    for i in range(n):
        is_a = np.zeros(n_a + n_t, bool)
        is_a[rng.choice(n_a + n_t, n_a, replace=False)] = True
        iccs = []
        for member in (is_a, ~is_a):
            rows = member[pooled.participant]
            group = ConditionRatings(
                y=pooled.y[rows],
                first=pooled.first[rows],
                trial=pooled.trial[rows],
                clip=pooled.clip[rows],
                participant=pooled.participant[rows],
                tie=np.zeros(0, bool),
            )
            try:
                fit, _, icc1, _ = fit_iccs(icc_design(group), theta0=theta0)
            except (ValueError, np.linalg.LinAlgError):
                icc1 = math.nan
            else:
                icc1 = icc1 if fit.converged else math.nan
            iccs.append(icc1)
        out[i] = iccs[0] - iccs[1]
    return out
