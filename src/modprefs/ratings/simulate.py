"""A simulated rater panel: crossed random effects calibrated to the paper (§3.3, §4.1–§4.3, Tables 1–4).

Everything random comes from ``np.random.SeedSequence(seed)``: one child stream per component
(clips, participants, ratings, trial behaviour, demographics, justifications), so the same seed
gives identical tables, and changing e.g. the justification parameters leaves the ratings alone.

Response ratings (trials >= 1)
------------------------------
For participant p in condition c (``is_text`` = 1 for text), clip i, trial t::

    latent = intercept + b_first*first + b_text*is_text
             + (b_len + b_len_text*is_text) * len_z_i
             + (b_trial + b_trial_text*is_text) * trial_z_t
             + b_first_text * first * is_text
             + u_i[c] + v_p + e
    rating = clip(round(latent), 1, 100)            (clipping can be switched off: clip_ratings)
    then mapped onto the study's scale (default the paper's 1..100; see "The study's rating scale")

The coefficients are LATENT values, not Table 2's estimates. Table 2 is an LMM fitted to the
observed slider ratings, which are rounded and clipped to 1..100 (with intercepts ~75 and large
latent variances, about a third of the ratings sit on a bound) and, on tie trials, pulled together
(see ties below). Both attenuate every effect on the observed scale (~35-45 % for order and
length, and the observed intercept falls ~10 points below the latent one), so feeding Table 2's
numbers in as latent inputs would make a researcher's fit on the simulated data miss the paper.
The defaults are therefore tuned (fixed-point iteration on the fixed effects, coarse-to-fine
search on the rest; benchmarks/validity/ratings_calibration.py checks the result over 50 seeds) so that
Table 2's omnibus model fitted on the simulated, observed ratings with the paper's specification
-- ``rating ~ first*text + len_z*text + trial_z*text + (1|participant) + (1|clip)`` (REML),
attention failures excluded -- returns the paper's estimates on average (intercept 74.80,
presented first -2.61, text -6.21, length 3.35, trial 0.03, first x text -0.51, text x length
1.53, text x trial 0.90), jointly with Table 4's ICCs, §4.1's gaps and tie rates, §4.3's
cross-modality agreement and random modality slope. With clipping off (``clip_ratings=False``,
``tie_mode="threshold"``) a fit recovers the latent values themselves (tests/ratings/test_recovery.py);
benchmarks/validity/recovery.py shows the difference.

* ``first`` = the clip was presented first; ``len_z`` = z-score of the stimuli's ``n_chars`` over
  the stimulus set (sample SD, as R's ``scale``); ``trial_z`` = (t - mean)/sd over trials 1..T.
* Clip effects (``draw_clip_effects``): u_i[c] = P_prompt[c] + D_i[c]. The prompt part (share
  ``rho_clip_within_prompt_c`` of ``var_clip_c``) is common to the prompt's two clips: it counts
  as clip variance in the ICC but cancels in a trial's gap, in the per-trial preference score and
  in the cross-modality winner. The clip's own deviation D carries the within-prompt preference.
  Across modalities the prompt parts correlate by ``rho_prompt_modality`` (0.8: a good
  conversation is good in both; this is the clip variance Table 2's shared ``(1|clip)`` sees) and
  the deviations by ``rho_clip_modality`` (0.15). Small, weakly correlated deviations are what the
  paper's §4.3 shows: a by-prompt random modality slope of SD 12.93 (chi2(2) = 22.1) together with
  53 % cross-modality winner agreement; the previous calibration (one clip correlation, no shared
  prompt part in text) gave a slope SD of ~25 and chi2 ~150-200. Per prompt the six draws are a
  multivariate t (``clip_df``).
* ``v_p`` ~ N(0, var_participant_c); ``e`` = sqrt(var_resid_c) x s_p x a unit-variance Student t
  with ``resid_df`` degrees of freedom (``inf`` = normal), s_p a rater's lognormal noise scale with
  E[s_p^2] = 1 and CV ``resid_scale_cv``: careful raters (small s_p) next to erratic ones whose
  sliders mostly sit near the ends. This rater heterogeneity is the mechanism that lets raters
  agree on WHICH response wins (Krippendorff's ordinal alpha, a sign-based statistic) more than
  the noisy mean ratings agree across modalities, and it gives the skewed gaps (decisive Mdn/M =
  20/27.9 audio, 34/41.7 text).
* The length effect is a clip property: in ``rating ~ first + trial_z + (1|clip) + (1|participant)``
  (the ICC model, Table 4) it adds about (b_len + b_len_text*is_text)^2 to the clip variance.
  The ceiling at 100 shrinks every variance; the defaults are tuned *through* the clipping so the
  fitted ICC(2,1) is ~.333 audio / .295 text.

Calibration limits (numbers: benchmarks/out/ratings_calibration.md)
-------------------------------------------------------------------
Some of the paper's numbers cannot all be matched by one exchangeable random-effects model;
where two conflict, the defaults match the first named and the other stays off:

* ICC(2,1) (.333 / .295) over Krippendorff's interval alpha (.315 / .228). Both estimate the
  clip share of the rating variance on the same matrix (alpha without the order/trial covariates,
  which are tiny here), so under any model where raters are exchangeable they agree in
  expectation; the paper's text alpha is .067 below its ICC. We match the ICC (it drives the
  raters-needed planner); the simulated text alpha is ~.28.
* The §4.3 random slope (SD 12.93) and winner agreement (53 %) over the ordinal alpha (.157 /
  .217). With a slope SD of 12.93 the text-minus-audio prompt preference varies little, and with
  53 % agreement the modalities' prompt preferences barely correlate, so within each modality the
  prompt-level preference signal is small, which caps how much raters can agree on the winner:
  ordinal alpha comes out ~.12 / .13. Rater heterogeneity (``resid_scale_cv``) raises it, but
  also inflates the slope's LRT chi2 (heavy-tailed score noise): at CV 1.2 the chi2 averages ~35
  against the paper's 22.1 (and winner agreement .56); in a tuning run CV 1.5 gave ordinal alpha
  ~.17 / .19 at chi2 ~57.
* Nominal alpha (.010 / .031): near zero as in the paper, but ~.09 / .07: ties cluster on prompts
  whose two clips both sit at the slider's ceiling (equal ratings are a tie).
* Table 2's CI half-widths are 15-20 % wider than the paper's for the within-trial terms (order,
  trial and their interactions): the pooled residual of the paper's omnibus model is smaller than
  the simulator's at the paper's gaps, ICC and slope.

Where each part lives (:mod:`modprefs.ratings.simulation`)
----------------------------------------------------------
* :mod:`~modprefs.ratings.simulation.params` -- :class:`SimulationParams`, every parameter and its calibration.
* :mod:`~modprefs.ratings.simulation.latent` -- clip effects, the rater panel (attention check, dropout), the
  trials each rater did and their latent ratings.
* :mod:`~modprefs.ratings.simulation.observed` -- ties, rounding and clipping, audio quality, the study's scale.
* :mod:`~modprefs.ratings.simulation.tables` -- behaviour per trial and the trials, ratings and truth tables.
* :mod:`~modprefs.ratings.simulation.questionnaire` -- the participants table and its demographics.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from modprefs.ratings.schema import RATINGS_COLUMNS, TRIALS_COLUMNS
from modprefs.ratings.simulation.latent import done_trials, latent_ratings, simulate_clips, simulate_panel
from modprefs.ratings.simulation.observed import audio_quality, observed_ratings, on_study_scale
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.ratings.simulation.questionnaire import participants_table
from modprefs.ratings.simulation.tables import ratings_table, trial_table, truth_table
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.study.terms import (
    ATTENTION_PROMPT,
    CONDITIONS,
)

#: SimulationParams is documented here (config.schema.yaml: ratings.simulation); it lives in simulation.params
__all__ = ["SimulationParams", "simulate_ratings"]


def _check_inputs(stimuli: pd.DataFrame, assignments: pd.DataFrame) -> None:
    need_s = {"prompt_id", "clip_id", "response", "n_chars"}
    need_a = {"participant_id", "condition", "trial", "prompt_id", "first_clip"}
    if missing := need_s - set(stimuli.columns):
        raise ValueError(f"stimuli is missing column(s): {sorted(missing)}")
    if missing := need_a - set(assignments.columns):
        raise ValueError(f"assignments is missing column(s): {sorted(missing)}")
    if stimuli["clip_id"].duplicated().any():
        raise ValueError("stimuli has duplicate clip_id values")
    bad = ~assignments["condition"].isin(CONDITIONS)
    if bad.any():
        raise ValueError(f"assignments has unknown condition(s): {sorted(assignments.loc[bad, 'condition'].unique())}")
    if (assignments.groupby("participant_id")["condition"].nunique() > 1).any():
        raise ValueError("a participant appears in both conditions in assignments")
    known = set(stimuli["prompt_id"]) | {ATTENTION_PROMPT}
    unknown = set(assignments["prompt_id"]) - known
    if unknown:
        raise ValueError(f"assignments name prompts missing from stimuli: {sorted(unknown)[:10]}")
    if assignments.duplicated(["participant_id", "trial"]).any():
        raise ValueError("assignments has duplicate participant x trial rows")


def simulate_ratings(
    stimuli: pd.DataFrame,
    assignments: pd.DataFrame,
    params: SimulationParams | None = None,
    seed: int = 0,
    scale: RatingScale | None = None,
    clip_seed: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Simulate ``(ratings, trials, participants, truth)`` for the given design (see module docstring).

    ``scale``: the study's rating scale (default the paper's 1..100); the ratings and audio-quality
    ratings are mapped onto it after the tie logic, the parameters and the truth table stay in 1..100.
    ``clip_seed``: draw the clip effects as the study with that seed does (the raters, their ratings and the
    rest still from ``seed``): studies that share their clips and differ in their raters, to split a
    statistic's variance into its clip and rater parts.
    """
    p = params if params is not None else SimulationParams()
    scale = scale or PAPER_SCALE
    _check_inputs(stimuli, assignments)
    streams = np.random.SeedSequence(seed).spawn(6)
    rng_clip, rng_part, rng_rate, rng_trial, rng_demo, rng_just = (np.random.default_rng(s) for s in streams)
    if clip_seed is not None:
        rng_clip = np.random.default_rng(np.random.SeedSequence(clip_seed).spawn(6)[0])
    clips = simulate_clips(stimuli, p, rng_clip)
    panel = simulate_panel(assignments, p, rng_part)
    done = done_trials(panel)
    ci, latent = latent_ratings(clips, panel, done, p, rng_rate)
    rating, pref = observed_ratings(latent, panel, done, p, rng_rate)
    aq = audio_quality(clips, panel, done, ci, latent, p, rng_rate)
    rating, aq = on_study_scale(rating, aq, scale, p.clip_ratings)
    trials, dtime = trial_table(clips, panel, done, ci, pref, p, rng_trial, rng_just)
    ratings = ratings_table(clips, done, ci, rating, aq, scale.is_integer)
    participants = participants_table(panel, done, dtime, p, rng_part, rng_demo)
    truth = truth_table(clips, panel, p)
    return ratings[RATINGS_COLUMNS], trials[TRIALS_COLUMNS], participants, truth
