"""Modality effects on ratings (§4.1, §4.3): Table 2 and its follow-ups.

All models are fitted by :mod:`modprefs.stats.mixed.lmm` (REML, Satterthwaite df and p as lmerTest;
CIs are Wald intervals with t(df) quantiles at ``ci_level``, config ``stats.ci_level``, default 95 %)
on the rated trials (trial >= 1) of participants who passed the attention check.

* **Table 2** (omnibus): ``rating ~ presented_first * modality + len_z * modality + trial_z * modality``
  with ``modality`` = 1 for text (reference audio), ``presented_first`` 0/1, ``len_z`` = the clip's
  original-text character count standardised over the stimulus set (sample SD), ``trial_z`` = the
  trial number standardised over the analysed rows, and one of three random-effects structures
  (:data:`TABLE2_RANDOM`, config ``stats.table2_random``):

  - ``participant_slopes`` (default): ``(1 + presented_first + trial_z | participant_id) + (1 | clip_id)
    + (1 | clip_id:modality)``. Raters differ in their primacy (order effect) and in their drift over
    the session; without by-participant slopes those differences fall into the residual and the
    modality x order and modality x trial interactions, which compare raters of one modality with
    raters of the other, are tested as if each rating were an independent replicate: anti-conservative
    (``benchmarks/validity/table2_null.py --experiment slopes``, ``benchmarks/out/table2_null_slopes.md``). The
    slopes are the maximal feasible structure: when the correlated fit is singular or does not converge the
    model falls back to uncorrelated slopes (``||``), then to the slopes with a variance above 0,
    then to ``(1 | participant_id)`` (:func:`modprefs.stats.mixed.maximal.fit_maximal`), and the slopes of
    the regular fit are kept only where their likelihood-ratio test against ``(1 | participant_id)``
    gives p <= ``stats.table2_slope_alpha`` (default .2, Matuschek et al. 2017): slopes fitted to raters who
    share one primacy and one drift make the two tests conservative. The table's ``model`` and ``note``
    columns and its title say which structure was used and why.
  - ``stimulus_modality``: ``(1 | participant_id) + (1 | clip_id) + (1 | clip_id:modality)``.
    The stimulus a rater meets is a clip *in a modality*; a clip's own text-vs-audio deviation (which
    the paper's random-slope LRT, §4.3, shows exists) is a random effect of the clip x modality cell.
  - ``paper``: ``(1 | participant_id) + (1 | clip_id)``, the paper's literal specification. It shares
    one clip intercept across both modalities, so clip-specific modality deviations fall into the
    residual, and the modality x clip-level interactions (modality x length) are tested against the
    residual as if every rating were an independent replicate of the clip's modality deviation:
    anti-conservative. ``benchmarks/validity/table2_null.py`` measures the false-positive rate of the
    structures under null simulations from several generating models
    (``benchmarks/out/table2_null.json``; the report quotes it).

  Modality x order and modality x trial vary within clips, so their tests barely depend on the clip
  terms, but they vary within raters: their tests depend on the participant terms. Modality x length
  (a clip property) and the modality main effect depend on the clip terms.
* **Simple effects**: the same model without modality terms, fitted per modality (the paper's
  text b = 4.92 vs audio b = 3.52 for length), with the structure's participant terms (and the same
  ladder) and ``(1 | clip_id)`` (within one modality a clip x modality cell is the clip).
* **Practice**: ``log(decision_time_s) ~ trial_z * modality + (1 | participant_id) + (1 | prompt_id)``
  plus per-modality slopes; ``pct_change_per_sd`` = 100 (exp(b) - 1). Under ``participant_slopes`` the
  participant term is ``(1 + trial_z | participant_id)`` with the same ladder (raters speed up at
  their own rates; the modality x trial interaction compares raters).
* **Prompt-specific modality effects** (§4.3): per trial, ``score`` = rating of response 0 minus
  rating of response 1; ``score ~ modality + (1 | prompt_id) + (1 | participant_id)`` against
  ``score ~ modality + (1 + modality | prompt_id) + (1 | participant_id)``, likelihood-ratio test on
  ML refits (lme4's ``anova``), χ² with 2 df; the random slope's SD.
* **Audio quality** (the paper's fidelity control): its distribution, its correlation with response
  ratings (per rating and per clip means), and the audio-condition simple-effects model with
  ``aq_z`` (audio quality standardised) added — do length and order effects survive?
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.stats.mixed.lmm import LmmFit, anova_refit_ml, fit_formula
from modprefs.stats.mixed.maximal import LadderFit, fit_maximal
from modprefs.stats.reliability.icc import analysable_ratings
from modprefs.study.terms import CONDITIONS

TABLE2_FIXED = "rating ~ presented_first * modality + len_z * modality + trial_z * modality"
#: The within-rater covariates whose effects vary by participant under ``participant_slopes``.
TABLE2_SLOPES = ("presented_first", "trial_z")
#: Table 2's stimulus terms per structure.
_STIMULUS = {
    "participant_slopes": "(1 | clip_id) + (1 | clip_id:modality)",
    "stimulus_modality": "(1 | clip_id) + (1 | clip_id:modality)",
    "paper": "(1 | clip_id)",
}
#: Table 2's random-effects structures (``stats.table2_random``; for ``participant_slopes`` the richest step
#: of its fallback ladder); see the module docstring.
TABLE2_RANDOM: dict[str, str] = {
    "participant_slopes": f"(1 + {' + '.join(TABLE2_SLOPES)} | participant_id) + {_STIMULUS['participant_slopes']}",
    "stimulus_modality": f"(1 | participant_id) + {_STIMULUS['stimulus_modality']}",
    "paper": f"(1 | participant_id) + {_STIMULUS['paper']}",
}
DEFAULT_TABLE2_RANDOM = "participant_slopes"
#: ``participant_slopes`` keeps the ladder's slopes only where their likelihood-ratio test against
#: ``(1 | participant_id)`` gives p <= this (Matuschek et al. 2017; config ``stats.table2_slope_alpha``).
DEFAULT_SLOPE_ALPHA = 0.2
TABLE2_FORMULA = f"{TABLE2_FIXED} + {TABLE2_RANDOM['paper']}"  # the paper's literal model
#: How every interval of this module is computed (titles and the ``ci`` column say it with the level).
CI_METHOD = "Wald, t(Satterthwaite df) quantiles"


def table2_formula(random: str = DEFAULT_TABLE2_RANDOM) -> str:
    """Table 2's omnibus formula with the named random-effects structure (:data:`TABLE2_RANDOM`; for
    ``participant_slopes`` the ladder's first step -- :func:`table2_fit` may use a simpler one)."""
    _check_random(random)
    return f"{TABLE2_FIXED} + {TABLE2_RANDOM[random]}"


def _check_random(random: str) -> None:
    if random not in TABLE2_RANDOM:
        raise ValueError(f"stats.table2_random: unknown structure {random!r}; expected one of {sorted(TABLE2_RANDOM)}")


def fit_structure(
    df: pd.DataFrame,
    fixed: str,
    random: str,
    stimulus: str,
    slopes: tuple[str, ...],
    slope_alpha: float = DEFAULT_SLOPE_ALPHA,
) -> LadderFit:
    """``fixed`` + the participant terms of structure ``random`` + ``stimulus``: under ``participant_slopes``
    by-participant ``slopes`` down the fallback ladder, kept where their likelihood-ratio test gives
    p <= ``slope_alpha`` (:func:`modprefs.stats.mixed.maximal.fit_maximal`), otherwise ``(1 | participant_id)``."""
    _check_random(random)
    chosen = slopes if random == "participant_slopes" else ()
    return fit_maximal(df, fixed, "participant_id", chosen, stimulus, slope_alpha=slope_alpha)


def table2_fit(
    frame: pd.DataFrame, random: str = DEFAULT_TABLE2_RANDOM, slope_alpha: float = DEFAULT_SLOPE_ALPHA
) -> LadderFit:
    """Table 2's omnibus model under structure ``random`` (the ladder's choice for ``participant_slopes``)."""
    _check_random(random)
    return fit_structure(frame, TABLE2_FIXED, random, _STIMULUS[random], TABLE2_SLOPES, slope_alpha)


SIMPLE_FIXED = "rating ~ presented_first + len_z + trial_z"
SIMPLE_FORMULA = f"{SIMPLE_FIXED} + (1 | participant_id) + (1 | clip_id)"
PRACTICE_FIXED = "log_time ~ trial_z * modality"
PRACTICE_FORMULA = f"{PRACTICE_FIXED} + (1 | participant_id) + (1 | prompt_id)"
SLOPE_NULL = "score ~ modality + (1 | prompt_id) + (1 | participant_id)"
SLOPE_FULL = "score ~ modality + (1 + modality | prompt_id) + (1 | participant_id)"

TERM_LABELS = {
    "(Intercept)": "Intercept",
    "presented_first": "Presented first",
    "modality": "Modality (text)",
    "len_z": "Character length (z)",
    "trial_z": "Trial number (z)",
    "presented_first:modality": "Presented first x Modality",
    "modality:len_z": "Modality x Char. length",
    "len_z:modality": "Modality x Char. length",
    "modality:trial_z": "Modality x Trial number",
    "trial_z:modality": "Modality x Trial number",
    "aq_z": "Audio quality (z)",
}


def _zscore(x: pd.Series) -> pd.Series:
    x = pd.to_numeric(x, errors="coerce").astype(float)
    sd = x.std(ddof=1)
    return (x - x.mean()) / sd if sd > 0 else x * 0.0


def rating_frame(ratings: pd.DataFrame, participants: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Analysed ratings of both modalities with the model's covariates (see the module docstring).

    ``len_z`` is NaN without ``stimuli.n_chars`` (the models that use it are then skipped by
    :data:`modprefs.stats.tables.analyses.NEEDS`); ``response`` is each clip's response index from the stimuli.
    """
    frames = [analysable_ratings(ratings, participants, c, stimuli) for c in CONDITIONS]
    df = pd.concat(frames, ignore_index=True)
    by_clip = stimuli.assign(clip_id=stimuli["clip_id"].astype(str)).set_index("clip_id")
    chars = by_clip["n_chars"] if "n_chars" in by_clip.columns else pd.Series(np.nan, index=by_clip.index)
    len_z = _zscore(chars)
    df["clip_id"] = df["clip_id"].astype(str)
    if "response" in by_clip.columns:
        df["response"] = df["clip_id"].map(pd.to_numeric(by_clip["response"], errors="coerce")).astype(float)
    df["rating"] = pd.to_numeric(df["rating"]).astype(float)
    df["modality"] = (df["condition"] == "text").astype(float)
    df["presented_first"] = df["presented_first"].astype(str).str.lower().isin(["true", "1"]).astype(float)
    df["len_z"] = df["clip_id"].map(len_z).astype(float)
    df["trial_z"] = _zscore(df["trial"])
    df["audio_quality"] = pd.to_numeric(df.get("audio_quality"), errors="coerce")
    return df


def ci_label(ci_level: float) -> str:
    """``"95 % CI: Wald, t(Satterthwaite df) quantiles"``: the level and method every interval here has."""
    return f"{100 * ci_level:g} % CI: {CI_METHOD}"


def coefficient_table(fit: LmmFit, model: str, ci_level: float = 0.95, note: str = "") -> pd.DataFrame:
    """One model's rows: b, SE, ``ci_level`` t-interval, Satterthwaite df, t, p, and the fit's flags.

    ``note``: e.g. the fallback ladder's (:attr:`modprefs.stats.mixed.maximal.LadderFit.note`)."""
    t = fit.coef_table(ci_level)
    return pd.DataFrame(
        {
            "model": model,
            "term": t["term"].map(lambda s: TERM_LABELS.get(s, s)),
            "b": t["estimate"],
            "se": t["se"],
            "ci_lo": t["ci_t_lo"],
            "ci_hi": t["ci_t_hi"],
            "df": t["df"],
            "t": t["t"],
            "p": t["p"],
            "n_obs": fit.n_obs,
            "singular": fit.singular,
            "converged": fit.converged,
            "ci": ci_label(ci_level),
            "note": note,
        }
    )


def _ladder_rows(ladder: LadderFit, label: str, ci_level: float) -> pd.DataFrame:
    """A model's coefficient rows with its random effects (``random``) and the ladder's ``note``."""
    return coefficient_table(ladder.fit, label, ci_level, ladder.note).assign(random=ladder.random)


def table2(
    frame: pd.DataFrame,
    random: str = DEFAULT_TABLE2_RANDOM,
    ci_level: float = 0.95,
    slope_alpha: float = DEFAULT_SLOPE_ALPHA,
) -> pd.DataFrame:
    """Table 2's omnibus fixed effects (reference: audio) and the per-modality simple effects.

    ``random`` names the random-effects structure (:data:`TABLE2_RANDOM`); the ``random`` column says
    which terms each model actually has (the omnibus ``model`` label too: ``omnibus (random: ...)``) and
    ``note`` why richer participant terms were dropped, if they were. Within one modality a clip x
    modality cell is the clip, so the simple-effects models have ``(1 | clip_id)`` under every structure
    and their participant terms follow ``random`` (slopes kept where their LRT gives p <= ``slope_alpha``).
    CIs: ``ci_level``, t(Satterthwaite df) quantiles.
    """
    omnibus = table2_fit(frame, random, slope_alpha)
    parts = [_ladder_rows(omnibus, f"omnibus (random: {omnibus.random})", ci_level)]
    for c in CONDITIONS:
        sub = frame[frame["condition"] == c]
        fit = fit_structure(sub, SIMPLE_FIXED, random, "(1 | clip_id)", TABLE2_SLOPES, slope_alpha)
        parts.append(_ladder_rows(fit, f"simple: {c}", ci_level))
    return pd.concat(parts, ignore_index=True)


def _omnibus_structure(table: pd.DataFrame | None) -> tuple[str, str]:
    """(random effects, ladder note) of the omnibus model of a :func:`table2` or :func:`practice_effects` table."""
    if table is None or "random" not in table.columns:
        return "", ""
    omnibus = table[table["model"].astype(str).str.contains("omnibus")]
    if omnibus.empty:
        return "", ""
    return str(omnibus["random"].iloc[0]), str(omnibus["note"].iloc[0] or "")


def _structure_clause(random: str, table: pd.DataFrame | None) -> str:
    """``omnibus random effects: <used> (stats.table2_random: <random>[; <ladder note>])``; without a fitted table
    only the option."""
    used, note = _omnibus_structure(table)
    option = f"stats.table2_random: {random}" + (f"; {note}" if note else "")
    return f"omnibus random effects: {used} ({option})" if used else f"({option})"


def table2_title(random: str, table: pd.DataFrame | None, ci_level: float = 0.95) -> str:
    """Table 2's title: what it holds, the interval level and method, the structure asked for and the one used."""
    return (
        "Table 2: fixed effects of the omnibus LMM (reference audio) and per-modality simple effects "
        f"(REML, Satterthwaite df; {ci_label(ci_level)}); {_structure_clause(random, table)}"
    )


def practice_title(random: str, table: pd.DataFrame | None, ci_level: float = 0.95) -> str:
    """The practice-effects table's title with its interval level and method and the omnibus model's random effects."""
    return (
        "Practice effects: log trial duration over standardised trial number "
        f"(REML, Satterthwaite df; {ci_label(ci_level)}); {_structure_clause(random, table)}"
    )


def practice_effects(
    trials: pd.DataFrame,
    participants: pd.DataFrame,
    random: str = DEFAULT_TABLE2_RANDOM,
    ci_level: float = 0.95,
    slope_alpha: float = DEFAULT_SLOPE_ALPHA,
) -> pd.DataFrame:
    """Log trial duration over trials: interaction model and per-modality slopes (§4.1 Practice).

    ``random``: Table 2's structure name; ``participant_slopes`` gives every model by-participant trial
    slopes (down the fallback ladder, kept where their LRT gives p <= ``slope_alpha``), the others
    ``(1 | participant_id)``. CIs at ``ci_level``."""
    cond = participants.set_index(participants["participant_id"].astype(str))["condition"]
    passed = participants.loc[participants["passed_attention"].astype(str).str.lower() == "true", "participant_id"]
    d = trials[
        (pd.to_numeric(trials["trial"]) >= 1) & trials["participant_id"].astype(str).isin(set(passed.astype(str)))
    ].copy()
    d["participant_id"] = d["participant_id"].astype(str)
    d["condition"] = d["participant_id"].map(cond)
    d["log_time"] = np.log(pd.to_numeric(d["decision_time_s"], errors="coerce"))
    d = d[np.isfinite(d["log_time"])]
    d["modality"] = (d["condition"] == "text").astype(float)
    d["trial_z"] = _zscore(d["trial"])
    stimulus, slopes = "(1 | prompt_id)", ("trial_z",)
    parts = [
        _ladder_rows(
            fit_structure(d, PRACTICE_FIXED, random, stimulus, slopes, slope_alpha), "log duration: omnibus", ci_level
        )
    ]
    for c in CONDITIONS:
        fit = fit_structure(d[d["condition"] == c], "log_time ~ trial_z", random, stimulus, slopes, slope_alpha)
        parts.append(_ladder_rows(fit, f"log duration: {c}", ci_level))
    out = pd.concat(parts, ignore_index=True)
    out["pct_change_per_sd"] = 100 * (np.exp(out["b"]) - 1)
    return out


def _with_response(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows of responses 0 and 1 with an integer ``response`` (from its column, else the clip ids)."""
    if "response" in frame.columns:
        response = pd.to_numeric(frame["response"], errors="coerce")
    else:
        response = pd.to_numeric(frame["clip_id"].astype(str).str.extract(r"_([01])$")[0], errors="coerce")
    keep = response.isin([0, 1]).to_numpy()
    return frame[keep].assign(response=response[keep].astype(int))


def preference_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """Per trial: rating of response 0 minus response 1 (trials with both ratings)."""
    f = _with_response(frame)
    wide = f.pivot_table(index=["participant_id", "prompt_id", "condition"], columns="response", values="rating")
    wide = wide.dropna().reset_index()
    return pd.DataFrame(
        {
            "participant_id": wide["participant_id"],
            "prompt_id": wide["prompt_id"],
            "condition": wide["condition"],
            "modality": (wide["condition"] == "text").astype(float),
            "score": wide[0] - wide[1],
        }
    )


def random_slope_test(frame: pd.DataFrame) -> pd.DataFrame:
    """§4.3: fixed modality effect on preference scores and the LRT for a by-prompt modality slope."""
    scores = preference_scores(frame)
    null = fit_formula(scores, SLOPE_NULL)
    full = fit_formula(scores, SLOPE_FULL)
    test = anova_refit_ml(null, full)
    slope = next(r for r in full.random_effects if r.group == "prompt_id")
    i = list(full.x_names).index("modality")
    return pd.DataFrame(
        [
            {
                "n_trials": null.n_obs,
                "modality_b": full.beta[i],
                "modality_se": full.beta_se[i],
                "modality_df": full.df[i],
                "modality_p": full.p_value[i],
                "chi2": test.chi2,
                "lrt_df": test.df,
                "lrt_p": test.p,
                "slope_sd": float(slope.sd[-1]),
                "intercept_sd": float(slope.sd[0]),
                "slope_intercept_corr": float(slope.corr[1, 0]),
                "singular": full.singular,
                "note": "LRT on ML refits (lme4 anova); estimates from the REML fit",
            }
        ]
    )


def audio_quality_analysis(frame: pd.DataFrame) -> pd.DataFrame:
    """Distribution of audio-quality ratings, their link to response ratings, and whether the
    audio-condition effects survive adding audio quality as a covariate."""
    audio = frame[frame["condition"] == "audio"].dropna(subset=["audio_quality"]).copy()
    if audio.empty:
        return pd.DataFrame([{"statistic": "audio quality", "value": np.nan, "note": "no audio-quality ratings"}])
    aq = audio["audio_quality"].astype(float)
    rows = [
        {"statistic": name, "value": float(v), "note": ""}
        for name, v in (
            ("n ratings", len(aq)),
            ("mean", aq.mean()),
            ("sd", aq.std(ddof=1)),
            ("median", aq.median()),
            ("q10", aq.quantile(0.1)),
            ("q90", aq.quantile(0.9)),
        )
    ]
    r, p = stats.pearsonr(aq, audio["rating"])
    rows.append({"statistic": "r(audio quality, rating), per rating", "value": float(r), "note": f"p = {p:.3g}"})
    clip = audio.groupby("clip_id")[["audio_quality", "rating"]].mean()
    if len(clip) > 2:
        rho, p = stats.spearmanr(clip["audio_quality"], clip["rating"])
        rows.append(
            {
                "statistic": "Spearman rho(clip mean audio quality, clip mean rating)",
                "value": float(rho),
                "note": f"p = {p:.3g}, {len(clip)} clips",
            }
        )
    audio["aq_z"] = _zscore(audio["audio_quality"])
    base = coefficient_table(fit_formula(audio, SIMPLE_FORMULA), "audio").set_index("term")
    adj = coefficient_table(
        fit_formula(audio, SIMPLE_FORMULA.replace("trial_z +", "trial_z + aq_z +")), "audio + audio quality"
    ).set_index("term")
    for term in ("Presented first", "Character length (z)", "Audio quality (z)"):
        if term in adj.index:
            rows.append(
                {
                    "statistic": f"{term}: b without / with audio quality",
                    "value": float(adj.loc[term, "b"]),
                    "note": (
                        f"without {base.loc[term, 'b']:.3f} (p {base.loc[term, 'p']:.3g}); "
                        if term in base.index
                        else ""
                    )
                    + f"with {adj.loc[term, 'b']:.3f} (p {adj.loc[term, 'p']:.3g})",
                }
            )
    return pd.DataFrame(rows)


def per_prompt_icc(frame: pd.DataFrame) -> pd.DataFrame:
    """Per prompt and modality ICC(2,1) (Table 6's outcome).

    Definition: the prompt's block of its 2 clips (targets) x the raters who rated both (judges),
    two-way random effects, absolute agreement, single rater — Shrout & Fleiss (1979) ICC(2,1) =
    (MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n) with n = 2 targets and k raters, from the
    two-way ANOVA without replication. With two targets the between-target mean square has one
    df, so a single prompt's ICC is very noisy and can be negative (kept as is, not truncated).
    """
    f = _with_response(frame)
    rows = []
    for (prompt, cond), block in f.groupby(["prompt_id", "condition"]):
        wide = block.pivot_table(index="response", columns="participant_id", values="rating").dropna(axis=1)
        n, k = wide.shape
        if n < 2 or k < 2:
            rows.append(
                {
                    "prompt_id": prompt,
                    "condition": cond,
                    "n_raters": k,
                    "icc_2_1": np.nan,
                    "note": "needs both clips rated by at least 2 raters",
                }
            )
            continue
        x = wide.to_numpy(float)
        grand = x.mean()
        msr = k * ((x.mean(axis=1) - grand) ** 2).sum() / (n - 1)
        msc = n * ((x.mean(axis=0) - grand) ** 2).sum() / (k - 1)
        sse = ((x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + grand) ** 2).sum()
        mse = sse / ((n - 1) * (k - 1))
        denom = msr + (k - 1) * mse + k * (msc - mse) / n
        icc = (msr - mse) / denom if denom > 0 else np.nan
        rows.append(
            {
                "prompt_id": prompt,
                "condition": cond,
                "n_raters": k,
                "icc_2_1": icc,
                "mean_gap": float(x[0].mean() - x[1].mean()),
                "note": "" if denom > 0 else "zero variance",
            }
        )
    return pd.DataFrame(rows)
