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
search on the rest; benchmarks/ratings_calibration.py checks the result over 50 seeds) so that
Table 2's omnibus model fitted on the simulated, observed ratings with the paper's specification
-- ``rating ~ first*text + len_z*text + trial_z*text + (1|participant) + (1|clip)`` (REML),
attention failures excluded -- returns the paper's estimates on average (intercept 74.80,
presented first -2.61, text -6.21, length 3.35, trial 0.03, first x text -0.51, text x length
1.53, text x trial 0.90), jointly with Table 4's ICCs, §4.1's gaps and tie rates, §4.3's
cross-modality agreement and random modality slope. With clipping off (``clip_ratings=False``,
``tie_mode="threshold"``) a fit recovers the latent values themselves (tests/test_recovery.py);
benchmarks/recovery.py shows the difference.

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

Preferences and ties (``tie_mode``)
-----------------------------------
Each rater has a tie threshold tau_p (lognormal, mean ``tie_threshold_mean_c``, CV
``tie_threshold_cv``); on each trial the threshold is tau_p x a mean-one Weibull draw (shape
``tie_threshold_shape``; ``inf`` = always tau_p), which keeps some small gaps decisive. With
``tie_mode="snap"`` (default) the rater compares the perceived (clipped, unrounded) gap
|latent_0 - latent_1|; below the trial's threshold they call a tie and set the two sliders
close together: the ratings become the pair's midpoint -/+ g/2 with g ~ geometric (mean
``tie_gap_mean_c``), the better clip keeping the higher slider. This is what gives the paper's
small tie gaps (3.3 text / 3.9 audio) at a tie rate of ~28 % (the rate the paper's Mann–Whitney
U statistics imply: n_ties(audio) x n_ties(text) ~ 61,000 of ~920 / ~890 trials). With
``tie_mode="threshold"`` ratings are never modified and a tie is called when the observed gap is
below tau_p (a pure LMM, for parameter-recovery tests). In both modes equal ratings are a tie;
otherwise the preference is the higher-rated response index. Note that snapping pulls tie trials'
ratings together, which slightly attenuates within-trial effects (order, length) relative to the
parameters.

Attention check (trial 0, prompt ``attn``)
------------------------------------------
A participant fails with probability ``p_fail_attention_c`` (§3.3: 7/53 audio, 5/53 text): they
rate the nonsensical ``attn_1`` above the coherent ``attn_0`` and prefer it (preference 1); their
data stop there (only trial-0 rows; passed_attention False, completed False, difficulty empty).
Passers rate attn_0 high and attn_1 low and prefer 0.

Dropout
-------
A participant who passed stops early after K ~ Poisson(``incomplete_trials_mean``) trials,
truncated to 0..T-1 (completed False, difficulty empty), with probability ``p_incomplete_c`` x
exp(beta a_p - beta^2/2) (a_p the participant's standard-normal slowness of the time model,
beta = ``incomplete_speed_effect``; the factor has mean one, so the expected dropout rate stays
``p_incomplete_c``): slow raters drop out more often. Defaults match Table 3's "Completed"
(92.5 % text = 49/53, 96.2 % audio = 51/53, i.e. 4 and 2 non-completers among those who
passed): p = 4/48 text, 2/46 audio. §3.3 mentions the 4 text dropouts only; we match Table 3,
which implies 2 in audio too. The paper's text condition has 8.9 raters per stimulus = 890
trials: the 4 dropouts did ~2.5 trials on average. Why slow dropouts: Table 3's session
duration (completers) is 27.0 (SD 13.3) min in text, while its trial duration over all analysed
participants is 78.8 (SD 41.6) s; 20 trials at 78.8 s are already 26.3 min and an SD of 41.6 s
gives 13.9 min, leaving no room for the attention check and the rest of the session unless the
completers were faster and less spread out than the 48 analysed participants, i.e. the dropouts
were slow. beta = 0.5 (with the overheads below) gives both rows.

Behaviour per trial
-------------------
* decision_time_s = listening time (audio: each clip's duration x (1 + replays); 0 in text) +
  a lognormal "other" time, log other = mu + a_p + slope * trial_z + eps. Its parameters are
  solved so the total matches Table 3's trial duration M (SD) — the SD is over participants'
  mean trial times (the table's U = 255 compares 46 x 48 people) — and §4.1's practice slopes
  (-0.17 text, -0.09 audio) for this design's clip durations (``_other_time_params``); eps has SD
  ``log_time_resid_sd``. The attention check uses trial 1's trial_z.
* replays (audio only): Poisson with a gamma-distributed rater propensity; the first-presented
  clip's rate is set so that P(replays >= 1) = ``p_relisten_first`` (23.3 % = 214/920, §4.2);
  relistened_first = that clip was replayed. Text: empty.
* deliberation_time_s (audio only): time from the end of the last listen to submission, lognormal
  (median ``deliberation_median_s``), at most the trial's time left after listening. Text: empty.
* rating_changes: Poisson, gamma rater propensity, mean ``rating_changes_mean_c``.
* justification: written with probability ``p_justification_c`` (347/920 audio, 311/890 text,
  §4.3); an opener and one to three reasons (:mod:`modprefs.ratings.justification_text`). Reasons
  carry a modality tilt: "user"/"help" lean audio, "response"/"detail"/"give" lean text (tuned so
  the §4.3 chi-square values average the paper's 12.8, 9.8, 14.5, 14.5, 17.0), listening/reading
  reasons are modality-specific, and neutral reasons draw content words so the TF-IDF vocabulary
  is ~223 terms; ``justification_modality_strength`` scales every tilt (0 = identical word
  distributions in both conditions, a null).
* audio_quality (audio only): per-clip true quality q_i ~ N(aq_mean, var_aq_clip) + rater offset
  + b_aq_rating * (latent - condition mean) + noise, rounded and clipped to 1..100.

The study's rating scale (``study.scale``, :mod:`modprefs.scale`)
-----------------------------------------------------------------
Every parameter above (intercept, effects, variances, tie thresholds and gaps, audio quality) is in the
paper's 1..100 slider units, and all of the logic above runs there: rounding, clipping to 1..100, tie
snapping and the preference. Only then are the observed response-quality and audio-quality ratings
mapped onto the study's scale with :meth:`RatingScale.from_paper_units` (1 -> min, 100 -> max,
linearly, rounded to the scale's step): a 1..5 scale gives ratings in {1, ..., 5}, 0..10 in steps of
0.5 values on that grid, and the paper's effect sizes keep their size relative to the scale's range.
The preference is the rater's judgement made before the mapping, so on a coarse scale a decisive
trial may carry two equal ratings (a rater who gives both responses 4 of 5 may still prefer one);
on the paper's scale nothing changes (the mapping is the identity and is skipped). The truth table
stays in 1..100 units. With ``clip_ratings=False`` the mapped ratings are rounded to the step but
not clipped to the scale.

Participants
------------
Demographics by condition match Table 1 (age M/SD, woman %, White %, Hispanic/Latino %, native
English %, bachelor's or above %); the other §3.2.1 fields are drawn from fixed lists.
session_minutes = sum of the participant's trial times (attention check included; that trial's
non-listening time is scaled by ``attention_time_factor``, a quick obvious judgement)/60 + a
lognormal overhead with mean ``session_overhead_min_c`` and CV ``session_overhead_cv``
(instructions, questionnaire). Table 3 (completers): 27.0 (13.3) text, 47.3 (12.4) audio.
difficulty (1–5, completers only) from
``difficulty_probs_c`` (Table 3: 2.45/0.90 text, 2.50/0.96 audio).

Truth table (one long frame, written as ``simulation_truth.csv``)
-----------------------------------------------------------------
``kind="clip"``: one row per clip and condition: clip_id, prompt_id, condition, effect (u_i[c]),
len_z, expected_rating (intercept + b_text*is_text + (b_len + b_len_text*is_text)*len_z + u_i[c]
+ (b_first + b_first_text*is_text)/2, i.e. the latent mean over the two presentation orders at
trial_z 0 for an average rater, before rounding/clipping) and audio_quality_true (q_i).
``kind="participant"``: one row per participant: participant_id, condition, effect (v_p),
tie_threshold (tau_p), time_effect (the participant's standard-normal speed, scaled per condition
in the time model). Unused columns are empty.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from modprefs.ratings.justification_text import justification_texts
from modprefs.ratings.schema import PARTICIPANTS_COLUMNS, RATINGS_COLUMNS, TRIALS_COLUMNS
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.study.terms import (
    ATTENTION_CLIPS,
    ATTENTION_PROMPT,
    BACHELOR_PLUS,
    CONDITIONS,
    EDUCATION_LEVELS,
    EMPLOYMENT,
    ENGLISH_PROFICIENCY,
    GENDERS,
    RACES,
)

TRUTH_COLUMNS = [
    "kind",
    "condition",
    "clip_id",
    "prompt_id",
    "participant_id",
    "effect",
    "len_z",
    "expected_rating",
    "audio_quality_true",
    "tie_threshold",
    "time_effect",
]

TIMEZONES = [
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Phoenix",
    "America/Los_Angeles",
    "America/Anchorage",
    "Pacific/Honolulu",
]
OTHER_PRIMARY = ["Spanish", "Chinese", "Tagalog", "Vietnamese", "Arabic", "Korean", "Russian", "Hindi"]
OTHER_LANGUAGES = ["Spanish", "French", "German", "Chinese", "Japanese", "Italian", "Portuguese", "ASL"]
BIRTHPLACES_ABROAD = ["Mexico", "India", "Philippines", "China", "Vietnam", "Canada", "United Kingdom", "Nigeria"]


@dataclass
class SimulationParams:
    """All simulation parameters; the defaults are the paper calibration (see config.yaml comments).

    Per-condition parameters carry an ``_audio``/``_text`` suffix.
    """

    # --- fixed effects: LATENT values (reference level audio), tuned so that Table 2's omnibus LMM
    # fitted on the simulated, rounded and clipped ratings returns the paper's estimates (mean over
    # seeds, benchmarks/ratings_calibration.py); the ceiling at 100 and tie snapping attenuate every
    # effect by ~30 %, so the latent values are larger than Table 2's (see the module docstring).
    intercept: float = 85.4  # latent; tuned so the fitted Table 2 intercept = 74.80
    b_first: float = -4.45  # latent; tuned so the fitted Table 2 presented-first = -2.61
    b_text: float = -2.36  # latent; tuned so the fitted Table 2 modality (text) = -6.21
    b_len: float = 5.47  # latent; tuned so the fitted Table 2 char. length (z) = 3.35
    # The paper's modality-specific simple effects (text 4.92, audio 3.52) differ by 1.40, not 1.53,
    # because they come from separate models; we match the omnibus 1.53.
    b_len_text: float = 4.5  # latent; tuned so the fitted Table 2 modality x char. length = 1.53
    b_trial: float = 0.02  # latent; tuned so the fitted Table 2 trial number (z) = 0.03
    b_trial_text: float = 1.83  # latent; tuned so the fitted Table 2 modality x trial number = 0.90
    b_first_text: float = -2.2  # latent; tuned so the fitted Table 2 presented first x modality = -0.51
    # --- random effects (latent; tuned jointly: fitted ICC(2,1) ~.333 audio / .295 text (Table 4),
    # §4.1's decisive gaps and tie rates, §4.3's random modality slope SD 12.93 and 53 % winner
    # agreement; see "Calibration limits" in the module docstring for what stays off) -------------
    var_clip_audio: float = 880.0
    var_clip_text: float = 1500.0
    rho_prompt_modality: float = 0.8  # prompt effects across modalities (Table 2's shared clip variance)
    rho_clip_modality: float = 0.15  # clip deviations across modalities (slope SD 12.93, agreement 53 %)
    rho_clip_within_prompt_audio: float = 0.9
    rho_clip_within_prompt_text: float = 0.76
    clip_df: float = 4.0
    var_participant_audio: float = 350.0
    var_participant_text: float = 200.0
    var_resid_audio: float = 4000.0
    var_resid_text: float = 16000.0
    resid_df: float = 3.0
    resid_scale_cv: float = 1.2  # rater noise heterogeneity: ordinal alpha vs the slope LRT chi2
    clip_ratings: bool = True
    # --- ties (§4.1) ----------------------------------------------------------------------------
    tie_mode: str = "snap"
    tie_threshold_mean_audio: float = 2.4
    tie_threshold_mean_text: float = 5.0
    tie_threshold_cv: float = 1.2
    tie_threshold_shape: float = 0.6
    tie_gap_mean_audio: float = 3.9
    tie_gap_mean_text: float = 3.3
    # --- attention check and dropout (§3.3, Table 3) -------------------------------------------
    p_fail_attention_audio: float = 7 / 53
    p_fail_attention_text: float = 5 / 53
    p_incomplete_audio: float = 2 / 46
    p_incomplete_text: float = 4 / 48
    incomplete_trials_mean: float = 2.5
    incomplete_speed_effect: float = 0.5  # slow raters drop out more (Table 3 session vs trial durations)
    attention_coherent_mean: float = 85.0
    attention_nonsense_mean: float = 10.0
    attention_sd: float = 10.0
    # --- timing (Table 3, §4.1 practice effects) ------------------------------------------------
    trial_time_mean_audio: float = 136.4
    trial_time_sd_audio: float = 35.9
    trial_time_mean_text: float = 78.8
    trial_time_sd_text: float = 41.6
    log_time_trial_slope_audio: float = -0.09
    log_time_trial_slope_text: float = -0.17
    log_time_resid_sd: float = 0.30
    session_overhead_min_audio: float = 1.5
    session_overhead_min_text: float = 1.0
    session_overhead_cv: float = 2.0  # audio session SD 12.4 needs ~3 min overhead spread
    attention_time_factor: float = 0.5  # the attention check's non-listening time vs a first trial
    chars_per_second: float = 15.0
    attention_clip_duration_s: float = 8.0
    deliberation_median_s: float = 8.0
    # --- audio behaviour (§4.2) -----------------------------------------------------------------
    p_relisten_first: float = 214 / 920
    replays_second_mean: float = 0.15
    replay_propensity_shape: float = 2.0
    # --- other behaviour ------------------------------------------------------------------------
    rating_changes_mean_audio: float = 0.35
    rating_changes_mean_text: float = 0.30
    difficulty_probs_audio: tuple[float, ...] = (0.16, 0.33, 0.38, 0.11, 0.02)
    difficulty_probs_text: tuple[float, ...] = (0.15, 0.35, 0.40, 0.08, 0.02)
    p_justification_audio: float = 347 / 920
    p_justification_text: float = 311 / 890
    justification_modality_strength: float = 1.0
    # --- audio quality ratings ------------------------------------------------------------------
    aq_mean: float = 78.0
    var_aq_clip: float = 60.0
    var_aq_participant: float = 80.0
    var_aq_resid: float = 90.0
    b_aq_rating: float = 0.10
    # --- demographics (Table 1) -----------------------------------------------------------------
    age_mean_audio: float = 40.2
    age_sd_audio: float = 11.7
    age_mean_text: float = 45.0
    age_sd_text: float = 13.8
    p_woman_audio: float = 0.543
    p_woman_text: float = 0.646
    p_white_audio: float = 0.652
    p_white_text: float = 0.604
    p_hispanic_audio: float = 0.152
    p_hispanic_text: float = 0.062
    p_native_english_audio: float = 0.913
    p_native_english_text: float = 0.854
    p_bachelor_plus_audio: float = 0.435
    p_bachelor_plus_text: float = 0.604

    def __post_init__(self) -> None:
        for name in ("difficulty_probs_audio", "difficulty_probs_text"):
            probs = tuple(float(x) for x in getattr(self, name))
            if len(probs) != 5 or min(probs) < 0 or not math.isclose(sum(probs), 1.0, abs_tol=1e-6):
                raise ValueError(f"ratings.simulation.{name}: need 5 non-negative probabilities summing to 1")
            setattr(self, name, probs)
        if self.tie_mode not in ("snap", "threshold"):
            raise ValueError(f"ratings.simulation.tie_mode: {self.tie_mode!r} is not 'snap' or 'threshold'")
        for name in ("resid_df", "clip_df"):
            if not getattr(self, name) > 2:
                raise ValueError(f"ratings.simulation.{name} must exceed 2 (finite variance); use .inf for normal")
        for name in ("rho_prompt_modality", "rho_clip_modality"):
            if not -1 < getattr(self, name) < 1:
                raise ValueError(f"ratings.simulation.{name} must lie in (-1, 1)")
        for name in ("rho_clip_within_prompt_audio", "rho_clip_within_prompt_text"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"ratings.simulation.{name} must lie in [0, 1) (a shared prompt effect)")
        for c in CONDITIONS:
            if not (self.by_condition("trial_time_mean", c) > 0 and self.by_condition("trial_time_sd", c) > 0):
                raise ValueError(f"ratings.simulation: trial_time_mean_{c} and trial_time_sd_{c} must be positive")

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> SimulationParams:
        """Build from the ``ratings.simulation`` config block; unknown keys are an error."""
        from modprefs.config_files import dataclass_kwargs

        config = dataclass_kwargs(cls, config, "ratings.simulation")
        if "resid_df" in config and config["resid_df"] in (None, "inf", ".inf"):
            config["resid_df"] = math.inf
        return cls(**config)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for k, v in out.items():
            if isinstance(v, tuple):
                out[k] = list(v)
        return out

    def by_condition(self, name: str, condition: str) -> Any:
        return getattr(self, f"{name}_{condition}")


def _other_time_params(
    p: SimulationParams, condition: str, listen: np.ndarray, who: np.ndarray, trial_z: np.ndarray
) -> tuple[float, float, float, float]:
    """(mu, participant log-variance, residual log-variance, practice slope) of the non-listening time.

    ``listen``, ``who``, ``trial_z``: the condition's response trials (listening seconds, participant
    index, standardised position). Table 3's trial-duration M (SD) are over participants (its
    Mann–Whitney U = 255 compares 46 x 48 participant means): M is the mean of participants' mean
    trial times and SD their between-participant SD, dropouts (few, early, slower trials) included.
    The non-listening time is ``exp(mu + a_p + slope * trial_z + eps)``, a_p ~ N(0, var_a), eps ~
    N(0, log_time_resid_sd^2). With X_p = participant p's mean of exp(slope z + eps) (its practice
    profile and trial noise), mu and var_a solve, exactly for this design,

        exp(mu + var_a/2) E_p[E X_p] = M,
        exp(var_a) = (1 + (SD/M)^2) (E_p[E X_p])^2 / E_p[E X_p^2]          (var_a >= 0),

    so the trial noise and the practice profile of short (dropout) sessions count towards SD.
    Text: no listening. Audio: the listening part is subtracted first: other mean = M - mean of
    participants' mean listening (at least M/4), other SD = sqrt(SD^2 - their variance) (at least
    10 % of the mean), slope scaled by M / other mean (d log total ~ (other/total) d log other).
    """
    m = p.by_condition("trial_time_mean", condition)
    sd = p.by_condition("trial_time_sd", condition)
    slope = p.by_condition("log_time_trial_slope", condition)
    var_e = p.log_time_resid_sd**2
    if not len(trial_z):
        return math.log(m) - math.log1p((sd / m) ** 2) / 2 - var_e / 2, math.log1p((sd / m) ** 2), var_e, slope
    if condition == "audio":
        pm = pd.Series(listen).groupby(who).mean()
        lm, lv = float(pm.mean()), (float(pm.var(ddof=0)) if len(pm) > 1 else 0.0)
        om = max(m - lm, m / 4)
        osd = math.sqrt(max(sd**2 - lv, (0.1 * om) ** 2))
        slope = slope * m / om
        m, sd = om, osd
    g = np.exp(slope * np.asarray(trial_z, float))
    by = pd.DataFrame({"who": who, "g": g, "g2": g**2}).groupby("who")
    n_p = by.size().to_numpy(float)
    ex = by["g"].mean().to_numpy() * math.exp(var_e / 2)  # E X_p
    var_x = by["g2"].sum().to_numpy() / n_p**2 * math.exp(var_e) * math.expm1(var_e)
    ex2 = var_x + ex**2  # E X_p^2
    var_a = max(math.log1p((sd / m) ** 2) + 2 * math.log(ex.mean()) - math.log(ex2.mean()), 0.0)
    mu = math.log(m) - var_a / 2 - math.log(ex.mean())
    return mu, var_a, var_e, slope


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------
def lognormal_draws(rng: np.random.Generator, mean: float, cv: float, size: int) -> np.ndarray:
    if cv <= 0:
        return np.full(size, float(mean))
    s2 = math.log1p(cv**2)
    return rng.lognormal(math.log(mean) - s2 / 2, math.sqrt(s2), size)


def _gamma_unit(rng: np.random.Generator, shape: float, size: int) -> np.ndarray:
    return rng.gamma(shape, 1.0 / shape, size)


def unit_variance_t(rng: np.random.Generator, df: float, size: int) -> np.ndarray:
    if math.isinf(df):
        return rng.standard_normal(size)
    return rng.standard_t(df, size) * math.sqrt((df - 2) / df)


def _bool_or_empty(values: np.ndarray, mask: np.ndarray) -> pd.Series:
    s = pd.Series(values, dtype="boolean")
    s[~mask] = pd.NA
    return s


def draw_clip_effects(stim: pd.DataFrame, p: SimulationParams, rng: np.random.Generator) -> np.ndarray:
    """(n_clips, 2) clip effects [audio, text] on the latent 0..100 scale.

    A clip's effect in modality c is its prompt's shared effect plus its own deviation,
    ``u_ic = P_pc + D_ic``, with Var(P_c) = rho_w_c x var_clip_c and Var(D_c) = (1 - rho_w_c) x
    var_clip_c (rho_w_c = ``rho_clip_within_prompt_c``, the correlation of the two clips of a
    prompt within modality c). Across modalities the prompt effects correlate by
    ``rho_prompt_modality`` and each clip's deviations by ``rho_clip_modality``; the two clips'
    deviations are independent. Per prompt the six draws (P_a, P_t, D_0a, D_0t, D_1a, D_1t) are
    normal, or multivariate t with ``clip_df`` degrees of freedom (one chi-square scale per prompt,
    rescaled to the stated variances). The prompt part raises the ICC's clip variance but cancels in
    a trial's gap, in the per-trial preference score and in the cross-modality winner; the
    deviations carry the within-prompt preference, and their cross-modality correlation sets the
    by-prompt random modality slope of §4.3. Clips whose prompt lacks a partner get the marginal
    distribution.
    """
    va, vt = p.var_clip_audio, p.var_clip_text
    rwa, rwt = p.rho_clip_within_prompt_audio, p.rho_clip_within_prompt_text
    if rwa < 0 or rwt < 0:
        raise ValueError(
            "ratings.simulation: rho_clip_within_prompt_audio/_text must be >= 0 "
            "(a shared prompt effect has a non-negative variance)"
        )

    def pair(var_a: float, var_t: float, rho: float) -> np.ndarray:
        c = rho * math.sqrt(var_a * var_t)
        return np.linalg.cholesky(np.array([[var_a, c], [c, var_t]]) + 1e-12 * np.eye(2))

    chol_p = pair(rwa * va, rwt * vt, p.rho_prompt_modality)
    chol_d = pair((1 - rwa) * va, (1 - rwt) * vt, p.rho_clip_modality)
    prompts = list(dict.fromkeys(stim["prompt_id"]))
    z = rng.standard_normal((len(prompts), 6))
    shared = z[:, 0:2] @ chol_p.T
    dev = np.stack([z[:, 2:4] @ chol_d.T, z[:, 4:6] @ chol_d.T], axis=1)  # (prompts, response, modality)
    eff = shared[:, None, :] + dev
    if math.isfinite(p.clip_df):  # multivariate t per prompt (one chi-square scale for its effects)
        w = rng.chisquare(p.clip_df, len(prompts)) / p.clip_df
        eff *= (math.sqrt((p.clip_df - 2) / p.clip_df) / np.sqrt(w))[:, None, None]
    row = {pid: i for i, pid in enumerate(prompts)}
    u = np.zeros((len(stim), 2))
    for i, (pid, resp) in enumerate(zip(stim["prompt_id"], stim["response"].astype(int))):
        u[i] = eff[row[pid], resp]
    return u


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


# --------------------------------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------------------------------
def snap_ties(
    rating: np.ndarray, perceived: np.ndarray, tie: np.ndarray, gap: np.ndarray, clip_ratings: bool
) -> np.ndarray:
    """Put each tied trial's two sliders ``gap`` points apart around its perceived mean (in place).

    ``rating``, ``perceived``: (n, 2) rounded and perceived ratings; ``tie``: (n,) the trials judged
    ties; ``gap``: (n,) whole-point gaps. The pair is shifted back inside 1..100 when ratings are
    clipped; the better-perceived clip gets the higher slider. Returns the tie flags, now also
    counting trials whose two ratings came out equal.
    """
    low = np.rint(perceived.mean(axis=1) - gap / 2)
    high = low + gap
    if clip_ratings:
        shift_down = np.maximum(high - 100, 0)
        low, high = low - shift_down, high - shift_down
        shift_up = np.maximum(1 - low, 0)
        low, high = low + shift_up, high + shift_up
    better0 = perceived[:, 0] >= perceived[:, 1]
    rating[tie, 0] = np.where(better0, high, low)[tie]
    rating[tie, 1] = np.where(better0, low, high)[tie]
    return tie | (rating[:, 0] == rating[:, 1])


def simulate_ratings(
    stimuli: pd.DataFrame,
    assignments: pd.DataFrame,
    params: SimulationParams | None = None,
    seed: int = 0,
    scale: RatingScale | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Simulate ``(ratings, trials, participants, truth)`` for the given design (see module docstring).

    ``scale``: the study's rating scale (default the paper's 1..100); the ratings and audio-quality
    ratings are mapped onto it after the tie logic, the parameters and the truth table stay in 1..100.
    """
    p = params if params is not None else SimulationParams()
    scale = scale or PAPER_SCALE
    _check_inputs(stimuli, assignments)
    streams = np.random.SeedSequence(seed).spawn(6)
    rng_clip, rng_part, rng_rate, rng_trial, rng_demo, rng_just = (np.random.default_rng(s) for s in streams)
    clips = _simulate_clips(stimuli, p, rng_clip)
    panel = _simulate_panel(assignments, p, rng_part)
    done = _done_trials(panel)
    ci, latent = _latent_ratings(clips, panel, done, p, rng_rate)
    rating, pref = _observed_ratings(latent, panel, done, p, rng_rate)
    aq = _audio_quality(clips, panel, done, ci, latent, p, rng_rate)
    rating, aq = _on_study_scale(rating, aq, scale, p.clip_ratings)
    trials, dtime = _trial_table(clips, panel, done, ci, pref, p, rng_trial, rng_just)
    ratings = _ratings_table(clips, done, ci, rating, aq, scale.is_integer)
    participants = _participants_table(panel, done, dtime, p, rng_part, rng_demo)
    truth = _truth_table(clips, panel, p)
    return ratings[RATINGS_COLUMNS], trials[TRIALS_COLUMNS], participants, truth


@dataclass
class _Clips:
    """The simulated clip properties, one entry per stimulus row (in the stimuli's order)."""

    stim: pd.DataFrame  # the stimuli, index reset, prompt_id and clip_id as strings
    len_z: np.ndarray  # (n_clip,) z-scored n_chars
    n_clip: int
    u: np.ndarray  # (n_clip, 2) clip effects [audio, text]
    aq_true: np.ndarray  # (n_clip,) true audio quality q_i
    aq_attn: np.ndarray  # (2,) true audio quality of attn_0 and attn_1
    duration: np.ndarray  # (n_clip,) seconds
    prompt_clips: dict[str, dict[int, int]]  # prompt -> {response: clip row}


def _simulate_clips(stimuli: pd.DataFrame, p: SimulationParams, rng_clip: np.random.Generator) -> _Clips:
    """The clips' length z-scores, effects, true audio quality and durations (draws from the clip stream)."""
    stim = stimuli.reset_index(drop=True).copy()
    stim["prompt_id"] = stim["prompt_id"].astype(str)
    stim["clip_id"] = stim["clip_id"].astype(str)
    n_chars = stim["n_chars"].to_numpy(float)
    sd_chars = n_chars.std(ddof=1) if len(n_chars) > 1 else 0.0
    len_z = (n_chars - n_chars.mean()) / sd_chars if sd_chars > 0 else np.zeros(len(n_chars))
    n_clip = len(stim)
    u = draw_clip_effects(stim, p, rng_clip)
    aq_true = p.aq_mean + math.sqrt(p.var_aq_clip) * rng_clip.standard_normal(n_clip)
    aq_attn = p.aq_mean + math.sqrt(p.var_aq_clip) * rng_clip.standard_normal(2)
    if "duration_s" in stim.columns:
        duration = pd.to_numeric(stim["duration_s"], errors="coerce").to_numpy(float)
        duration = np.where(np.isfinite(duration), duration, n_chars / p.chars_per_second)
    else:
        duration = n_chars / p.chars_per_second
    prompt_clips: dict[str, dict[int, int]] = {}
    for i, (pid, resp) in enumerate(zip(stim["prompt_id"], stim["response"].astype(int))):
        prompt_clips.setdefault(pid, {})[resp] = i
    for pid, d in prompt_clips.items():
        if set(d) != {0, 1}:
            raise ValueError(f"stimuli: prompt {pid} does not have exactly the responses 0 and 1")
    return _Clips(stim, len_z, n_clip, u, aq_true, aq_attn, duration, prompt_clips)


@dataclass
class _Panel:
    """The simulated participants, one entry per participant (in ``part``'s order)."""

    asg: pd.DataFrame  # the assignments, typed, sorted by participant and trial
    part: pd.DataFrame  # participant_id, condition
    n_part: int
    cond: np.ndarray
    is_text_p: np.ndarray
    max_trial: int
    v: np.ndarray  # participant effects v_p
    tau: np.ndarray  # tie thresholds tau_p
    failed: np.ndarray  # failed the attention check
    a_time: np.ndarray  # standard-normal slowness
    n_done: np.ndarray  # response trials done
    completed: np.ndarray
    resid_scale: np.ndarray  # rater noise scale s_p
    replay_prop: np.ndarray
    change_prop: np.ndarray
    aq_offset: np.ndarray
    overhead: np.ndarray  # session overhead (minutes)
    pidx: dict[str, int]  # participant_id -> index


def _per_condition(p: SimulationParams, cond: np.ndarray, name: str) -> np.ndarray:
    """Parameter ``name``'s text or audio value for each entry of ``cond``, as floats."""
    return np.where(cond == "text", getattr(p, f"{name}_text"), getattr(p, f"{name}_audio")).astype(float)


def _simulate_panel(assignments: pd.DataFrame, p: SimulationParams, rng_part: np.random.Generator) -> _Panel:
    """The participants' effects, thresholds, attention, dropout and propensities (from the participant stream)."""
    asg = assignments.copy()
    asg["participant_id"] = asg["participant_id"].astype(str)
    asg["prompt_id"] = asg["prompt_id"].astype(str)
    asg["trial"] = asg["trial"].astype(int)
    asg["first_clip"] = asg["first_clip"].astype(int)
    asg = asg.sort_values(["participant_id", "trial"], kind="stable").reset_index(drop=True)
    part = asg.groupby("participant_id", sort=False)["condition"].first().reset_index()
    n_part = len(part)
    cond = part["condition"].to_numpy()
    is_text_p = (cond == "text").astype(float)
    max_trial = int(asg["trial"].max()) if len(asg) else 0
    n_trials_assigned = asg[asg["trial"] > 0].groupby("participant_id").size().reindex(part["participant_id"]).fillna(0)
    n_trials_assigned = n_trials_assigned.to_numpy(int)

    v = np.sqrt(_per_condition(p, cond, "var_participant")) * rng_part.standard_normal(n_part)
    tau_mean = _per_condition(p, cond, "tie_threshold_mean")
    tau = (
        np.array([lognormal_draws(rng_part, m, p.tie_threshold_cv, 1)[0] for m in tau_mean]) if n_part else np.zeros(0)
    )
    failed = rng_part.random(n_part) < _per_condition(p, cond, "p_fail_attention")
    a_time = rng_part.standard_normal(n_part)  # participant slowness (standard normal; scaled per condition)
    # dropout: rate p_incomplete_c among passers, tilted towards slow raters (exp(beta a - beta^2/2)
    # has mean one over a standard normal a, so the expected rate stays p_incomplete_c)
    beta = p.incomplete_speed_effect
    p_drop = np.clip(_per_condition(p, cond, "p_incomplete") * np.exp(beta * a_time - beta**2 / 2), 0.0, 1.0)
    drop = (~failed) & (rng_part.random(n_part) < p_drop)
    k_drop = rng_part.poisson(p.incomplete_trials_mean, n_part)
    n_done = np.where(
        failed, 0, np.where(drop, np.minimum(k_drop, np.maximum(n_trials_assigned - 1, 0)), n_trials_assigned)
    )
    completed = (~failed) & (n_done == n_trials_assigned)
    # rater-specific residual scale: lognormal with E[scale^2] = 1, so var_resid_c is the mean variance
    s2 = math.log1p(p.resid_scale_cv**2)
    resid_scale = np.exp(math.sqrt(s2) * rng_part.standard_normal(n_part) - s2)
    replay_prop = _gamma_unit(rng_part, p.replay_propensity_shape, n_part)
    change_prop = _gamma_unit(rng_part, 2.0, n_part)
    aq_offset = math.sqrt(p.var_aq_participant) * rng_part.standard_normal(n_part)
    overhead = _per_condition(p, cond, "session_overhead_min") * lognormal_draws(
        rng_part, 1.0, p.session_overhead_cv, n_part
    )
    pidx = {pid: i for i, pid in enumerate(part["participant_id"])}
    return _Panel(
        asg,
        part,
        n_part,
        cond,
        is_text_p,
        max_trial,
        v,
        tau,
        failed,
        a_time,
        n_done,
        completed,
        resid_scale,
        replay_prop,
        change_prop,
        aq_offset,
        overhead,
        pidx,
    )


@dataclass
class _DoneTrials:
    """The trials that happen (a dropout's later trials removed), one entry per trial."""

    tr: pd.DataFrame  # their assignment rows, with ``_p`` the participant's index
    n_tr: int
    tp: np.ndarray  # participant index
    t_cond: np.ndarray
    t_text: np.ndarray
    trial: np.ndarray
    first_clip: np.ndarray
    attn: np.ndarray  # the attention check (trial 0)
    trial_z: np.ndarray  # standardised trial number (trial 1's for the attention check)


def _done_trials(panel: _Panel) -> _DoneTrials:
    """The trials each participant gets to (attention check at trial 0 only, checked) and their trial_z.

    Adds ``_p`` (the participant's index) to ``panel.asg``.
    """
    asg = panel.asg
    asg["_p"] = asg["participant_id"].map(panel.pidx)
    done = asg["trial"].to_numpy() <= panel.n_done[asg["_p"].to_numpy()]
    tr = asg[done].reset_index(drop=True)
    n_tr = len(tr)
    tp = tr["_p"].to_numpy()
    t_cond = panel.cond[tp]
    t_text = panel.is_text_p[tp]
    trial = tr["trial"].to_numpy()
    first_clip = tr["first_clip"].to_numpy()
    attn = trial == 0
    if (tr.loc[attn, "prompt_id"] != ATTENTION_PROMPT).any() or (tr.loc[~attn, "prompt_id"] == ATTENTION_PROMPT).any():
        raise ValueError("assignments: trial 0 must be the attention check 'attn' and only trial 0")
    tvals = np.arange(1, max(panel.max_trial, 1) + 1, dtype=float)
    t_mean, t_sd = tvals.mean(), (tvals.std(ddof=1) if len(tvals) > 1 else 1.0)
    trial_z = (np.where(attn, 1, trial) - t_mean) / t_sd
    return _DoneTrials(tr, n_tr, tp, t_cond, t_text, trial, first_clip, attn, trial_z)


def _latent_ratings(
    clips: _Clips, panel: _Panel, d: _DoneTrials, p: SimulationParams, rng_rate: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(ci, latent): each trial's clip rows (-1 at the attention check) and latent ratings, (n_tr, 2) each."""
    n_tr, tp, attn, t_cond, t_text = d.n_tr, d.tp, d.attn, d.t_cond, d.t_text
    n_clip, u, len_z = clips.n_clip, clips.u, clips.len_z
    # ---- latent ratings: columns = response 0, response 1 ---------------------------------------
    ci = np.full((n_tr, 2), -1)
    for r in (0, 1):
        ci[~attn, r] = [clips.prompt_clips[pid][r] for pid in d.tr.loc[~attn, "prompt_id"]]
    latent = np.zeros((n_tr, 2))
    sd_res = np.sqrt(np.where(t_cond == "text", p.var_resid_text, p.var_resid_audio)) * panel.resid_scale[tp]
    for r in (0, 1):
        first = (d.first_clip == r).astype(float)
        lz = np.where(attn, 0.0, len_z[ci[:, r]] if n_clip else 0.0)
        uc = np.where(attn, 0.0, np.where(t_text == 1, u[ci[:, r], 1], u[ci[:, r], 0]) if n_clip else 0.0)
        latent[:, r] = (
            p.intercept
            + p.b_first * first
            + p.b_text * t_text
            + (p.b_len + p.b_len_text * t_text) * lz
            + (p.b_trial + p.b_trial_text * t_text) * d.trial_z
            + p.b_first_text * first * t_text
            + uc
            + panel.v[tp]
            + sd_res * unit_variance_t(rng_rate, p.resid_df, n_tr)
        )
    # attention check: coherent high, nonsense low (reversed for failers)
    att_noise = p.attention_sd * rng_rate.standard_normal((n_tr, 2))
    hi = p.attention_coherent_mean + att_noise[:, 0]
    lo = p.attention_nonsense_mean + att_noise[:, 1]
    f_t = panel.failed[tp]
    a0 = np.where(f_t, np.minimum(hi, lo), np.maximum(hi, lo))
    a1 = np.where(f_t, np.maximum(hi, lo), np.minimum(hi, lo))
    latent[attn, 0] = a0[attn]
    latent[attn, 1] = a1[attn]
    return ci, latent


def _observed_ratings(
    latent: np.ndarray, panel: _Panel, d: _DoneTrials, p: SimulationParams, rng_rate: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(rating, pref): the rounded (clipped) slider ratings after tie handling and each trial's preference."""
    n_tr, tp, attn, t_cond = d.n_tr, d.tp, d.attn, d.t_cond
    f_t = panel.failed[tp]
    lo_b, hi_b = (1.0, 100.0) if p.clip_ratings else (-np.inf, np.inf)
    perceived = np.clip(latent, lo_b, hi_b)
    rating = np.rint(perceived)
    gap_perceived = np.abs(perceived[:, 0] - perceived[:, 1])
    # per-trial threshold: the rater's tau_p times a unit-scale Weibull(shape) draw
    k_w = p.tie_threshold_shape
    thr = panel.tau[tp] * (rng_rate.weibull(k_w, n_tr) / math.gamma(1 + 1 / k_w) if math.isfinite(k_w) else 1.0)
    if p.tie_mode == "snap":
        tie = (~attn) & (gap_perceived < thr)
        gm = np.where(t_cond == "text", p.tie_gap_mean_text, p.tie_gap_mean_audio)
        g = (rng_rate.geometric(1.0 / (1.0 + gm)) - 1).astype(float)
        tie = snap_ties(rating, perceived, tie, np.minimum(g, 20.0), p.clip_ratings)
    else:
        tie = (~attn) & ((np.abs(rating[:, 0] - rating[:, 1]) < thr) | (rating[:, 0] == rating[:, 1]))
    tie = tie & ~attn
    pref = np.where(tie, "tie", np.where(rating[:, 0] > rating[:, 1], "0", "1"))
    pref = np.where(attn, np.where(f_t, "1", "0"), pref)
    rating = rating.astype(int) if p.clip_ratings else rating.astype(np.int64)
    return rating, pref


def _audio_quality(
    clips: _Clips,
    panel: _Panel,
    d: _DoneTrials,
    ci: np.ndarray,
    latent: np.ndarray,
    p: SimulationParams,
    rng_rate: np.random.Generator,
) -> np.ndarray:
    """(n_tr, 2) audio-quality ratings: true quality + rater offset + rating tilt + noise, rounded, 1..100."""
    n_tr, tp, attn = d.n_tr, d.tp, d.attn
    cond_mean = p.intercept + p.b_text * d.t_text
    aq = np.zeros((n_tr, 2))
    for r in (0, 1):
        q = np.where(attn, clips.aq_attn[r], clips.aq_true[ci[:, r]] if clips.n_clip else clips.aq_attn[r])
        aq[:, r] = np.clip(
            np.rint(
                q
                + panel.aq_offset[tp]
                + p.b_aq_rating * (latent[:, r] - cond_mean)
                + math.sqrt(p.var_aq_resid) * rng_rate.standard_normal(n_tr)
            ),
            1,
            100,
        )
    return aq


def _on_study_scale(
    rating: np.ndarray, aq: np.ndarray, scale: RatingScale, clip: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The observed 1..100 ratings and audio-quality ratings on the study's scale (module docstring).

    The paper's scale is returned as is; integer scales keep integer arrays. Without ``clip`` the ratings are
    rounded to the step but may leave [min, max] (as they leave 1..100 unmapped).
    """
    if scale.is_paper:
        return rating, aq
    if clip:
        mapped = scale.from_paper_units(rating)
    else:
        raw = scale.from_paper_units(rating, snap=False)
        mapped = scale.min + np.round((raw - scale.min) / scale.step) * scale.step
    mapped_aq = scale.from_paper_units(aq)
    if scale.is_integer:
        return np.rint(mapped).astype(np.int64), np.rint(mapped_aq)
    return mapped, mapped_aq


def _trial_table(
    clips: _Clips,
    panel: _Panel,
    d: _DoneTrials,
    ci: np.ndarray,
    pref: np.ndarray,
    p: SimulationParams,
    rng_trial: np.random.Generator,
    rng_just: np.random.Generator,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(trials, dtime): the trials table (timing, replays, changes, justifications) and each decision time."""
    n_tr, tp, attn, t_cond, trial_z, first_clip = d.n_tr, d.tp, d.attn, d.t_cond, d.trial_z, d.first_clip
    is_audio_t = t_cond == "audio"
    dur = np.zeros((n_tr, 2))
    for r in (0, 1):
        dur[:, r] = np.where(attn, p.attention_clip_duration_s, clips.duration[ci[:, r]] if clips.n_clip else 0.0)
    k = p.replay_propensity_shape
    lam_first = k * ((1 - p.p_relisten_first) ** (-1 / k) - 1) if p.p_relisten_first < 1 else 50.0
    rep_first = rng_trial.poisson(lam_first * panel.replay_prop[tp])
    rep_second = rng_trial.poisson(p.replays_second_mean * panel.replay_prop[tp])
    rep = np.zeros((n_tr, 2), dtype=int)
    rep[:, 0] = np.where(first_clip == 0, rep_first, rep_second)
    rep[:, 1] = np.where(first_clip == 0, rep_second, rep_first)
    listen = np.where(is_audio_t, dur[:, 0] * (1 + rep[:, 0]) + dur[:, 1] * (1 + rep[:, 1]), 0.0)
    # decision time = listening (audio) + a lognormal "other" time (reading, rating, deliberating)
    # whose mean/SD/practice slope are set so the *total* matches the paper's M/SD/slope for
    # this design's clip durations (see _other_time_params).
    z_eps = rng_trial.standard_normal(n_tr)
    other = np.zeros(n_tr)
    for c in CONDITIONS:
        m = t_cond == c
        if not m.any():
            continue
        ref = m & ~attn
        mu, var_a, var_e, s_other = _other_time_params(p, c, listen[ref], tp[ref], trial_z[ref])
        # a_time is a standard normal per participant; scale it by this condition's SD
        other[m] = np.exp(
            mu + math.sqrt(var_a) * panel.a_time[tp[m]] + s_other * trial_z[m] + math.sqrt(var_e) * z_eps[m]
        )
    other[attn] *= p.attention_time_factor  # the attention check is a quick, obvious judgement
    dtime = listen + other
    delib = lognormal_draws(rng_trial, p.deliberation_median_s * math.exp(0.65**2 / 2), 0.65, n_tr)
    delib = np.where(is_audio_t, np.minimum(delib, 0.8 * other), np.nan)
    changes = rng_trial.poisson(
        np.where(t_cond == "text", p.rating_changes_mean_text, p.rating_changes_mean_audio) * panel.change_prop[tp]
    )
    write = rng_just.random(n_tr) < np.where(t_cond == "text", p.p_justification_text, p.p_justification_audio)
    write &= ~attn
    texts = justification_texts(
        t_cond[write], pref[write], first_clip[write], p.justification_modality_strength, rng_just
    )
    justification = np.full(n_tr, None, dtype=object)
    justification[write] = texts

    trials = pd.DataFrame(
        {
            "participant_id": d.tr["participant_id"].to_numpy(),
            "prompt_id": d.tr["prompt_id"].to_numpy(),
            "trial": d.trial.astype(int),
            "preference": pref,
            "justification": justification,
            "decision_time_s": np.round(dtime, 2),
            "deliberation_time_s": pd.array(np.round(delib, 2), dtype="Float64"),
            "rating_changes": changes.astype(int),
            "replays_0": pd.array(np.where(is_audio_t, rep[:, 0], 0), dtype="Int64"),
            "replays_1": pd.array(np.where(is_audio_t, rep[:, 1], 0), dtype="Int64"),
            "relistened_first": _bool_or_empty(rep_first > 0, is_audio_t),
            "source": "simulated",
        }
    )
    for c in ("replays_0", "replays_1"):
        trials.loc[~is_audio_t, c] = pd.NA
    trials.loc[~is_audio_t, "deliberation_time_s"] = pd.NA
    return trials, dtime


def _ratings_table(
    clips: _Clips, d: _DoneTrials, ci: np.ndarray, rating: np.ndarray, aq: np.ndarray, integer: bool = True
) -> pd.DataFrame:
    """The ratings table: two rows per trial (response 0, then 1), in trial order."""
    n_tr, attn, t_cond = d.n_tr, d.attn, d.t_cond
    is_audio_t = t_cond == "audio"
    stim = clips.stim
    rows = []
    for r in (0, 1):
        clip_ids = np.where(attn, ATTENTION_CLIPS[r], stim["clip_id"].to_numpy()[ci[:, r]] if clips.n_clip else "")
        if integer:
            aq_col = pd.array(np.where(is_audio_t, aq[:, r], 0).astype(int), dtype="Int64")
        else:  # a scale with a fractional step (e.g. 0..10 in steps of 0.5)
            aq_col = pd.array(np.where(is_audio_t, aq[:, r], 0).astype(float), dtype="Float64")
        aq_col[~is_audio_t] = pd.NA
        rows.append(
            pd.DataFrame(
                {
                    "participant_id": d.tr["participant_id"].to_numpy(),
                    "condition": t_cond,
                    "prompt_id": d.tr["prompt_id"].to_numpy(),
                    "clip_id": clip_ids,
                    "trial": d.trial.astype(int),
                    "presented_first": d.first_clip == r,
                    "rating": rating[:, r],
                    "audio_quality": aq_col,
                    "source": "simulated",
                    "_order": np.arange(n_tr) * 2 + r,
                }
            )
        )
    return pd.concat(rows).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def _participants_table(
    panel: _Panel,
    d: _DoneTrials,
    dtime: np.ndarray,
    p: SimulationParams,
    rng_part: np.random.Generator,
    rng_demo: np.random.Generator,
) -> pd.DataFrame:
    """The participants table: demographics, attention, completion, session minutes and difficulty."""
    n_part, cond, completed = panel.n_part, panel.cond, panel.completed
    session = panel.overhead + (pd.Series(dtime).groupby(d.tp).sum().reindex(range(n_part)).fillna(0).to_numpy()) / 60.0
    difficulty = (
        np.array([rng_part.choice(5, p=np.array(p.by_condition("difficulty_probs", c))) + 1 for c in cond], dtype=int)
        if n_part
        else np.zeros(0, dtype=int)
    )
    diff_col = pd.array(difficulty, dtype="Int64")
    diff_col[~completed] = pd.NA
    participants = pd.concat(
        [
            panel.part[["participant_id", "condition"]].reset_index(drop=True),
            _demographics(cond, p, rng_demo),
        ],
        axis=1,
    )
    participants["passed_attention"] = ~panel.failed
    participants["completed"] = completed
    participants["session_minutes"] = np.round(session, 2)
    participants["difficulty"] = diff_col
    participants["source"] = "simulated"
    return participants[PARTICIPANTS_COLUMNS]


def _truth_table(clips: _Clips, panel: _Panel, p: SimulationParams) -> pd.DataFrame:
    """The truth table: one row per clip and condition, one per participant (module docstring)."""
    stim, u, len_z = clips.stim, clips.u, clips.len_z
    truth_rows = []
    for ci_c, c in enumerate(CONDITIONS):
        it = 1.0 if c == "text" else 0.0
        exp = (
            p.intercept
            + p.b_text * it
            + (p.b_len + p.b_len_text * it) * len_z
            + u[:, ci_c]
            + (p.b_first + p.b_first_text * it) / 2
        )
        truth_rows.append(
            pd.DataFrame(
                {
                    "kind": "clip",
                    "condition": c,
                    "clip_id": stim["clip_id"],
                    "prompt_id": stim["prompt_id"],
                    "participant_id": pd.NA,
                    "effect": u[:, ci_c],
                    "len_z": len_z,
                    "expected_rating": exp,
                    "audio_quality_true": clips.aq_true,
                    "tie_threshold": np.nan,
                    "time_effect": np.nan,
                }
            )
        )
    truth_rows.append(
        pd.DataFrame(
            {
                "kind": "participant",
                "condition": panel.cond,
                "clip_id": pd.NA,
                "prompt_id": pd.NA,
                "participant_id": panel.part["participant_id"],
                "effect": panel.v,
                "len_z": np.nan,
                "expected_rating": np.nan,
                "audio_quality_true": np.nan,
                "tie_threshold": panel.tau,
                "time_effect": panel.a_time,
            }
        )
    )
    return pd.concat(truth_rows, ignore_index=True)[TRUTH_COLUMNS]


def _demographics(cond: np.ndarray, p: SimulationParams, rng: np.random.Generator) -> pd.DataFrame:
    n = len(cond)

    def pc(name: str) -> np.ndarray:
        return np.where(cond == "text", getattr(p, f"{name}_text"), getattr(p, f"{name}_audio")).astype(float)

    age = np.clip(np.rint(pc("age_mean") + pc("age_sd") * rng.standard_normal(n)), 18, 90).astype(int)
    woman = rng.random(n) < pc("p_woman")
    other_gender = rng.choice(GENDERS[1:], size=n, p=[0.93, 0.05, 0.02])
    gender = np.where(woman, "Woman", other_gender)
    white = rng.random(n) < pc("p_white")
    race = np.where(white, "White", rng.choice(RACES[1:], size=n, p=[0.40, 0.25, 0.03, 0.02, 0.20, 0.10]))
    hispanic = rng.random(n) < pc("p_hispanic")
    native = rng.random(n) < pc("p_native_english")
    bach = rng.random(n) < pc("p_bachelor_plus")
    edu = np.where(
        bach,
        rng.choice(BACHELOR_PLUS, size=n, p=[0.65, 0.27, 0.08]),
        rng.choice(EDUCATION_LEVELS[:4], size=n, p=[0.04, 0.36, 0.40, 0.20]),
    )
    employment = rng.choice(EMPLOYMENT, size=n, p=[0.45, 0.15, 0.10, 0.10, 0.06, 0.06, 0.05, 0.03])
    born_abroad = rng.random(n) < np.where(native, 0.04, 0.75)
    birthplace = np.where(born_abroad, rng.choice(BIRTHPLACES_ABROAD, size=n), "United States")
    primary = np.where(native, "English", rng.choice(OTHER_PRIMARY, size=n))
    proficiency = np.where(
        native, np.array(None, dtype=object), rng.choice(ENGLISH_PROFICIENCY, size=n, p=[0.05, 0.20, 0.40, 0.35])
    )
    other: list[str | None] = []
    for is_native in native:
        if not is_native:
            other.append("English")
        elif rng.random() < 0.3:
            k = 1 + int(rng.random() < 0.25)
            other.append(";".join(sorted(rng.choice(OTHER_LANGUAGES, size=k, replace=False))))
        else:
            other.append(None)
    tz = rng.choice(TIMEZONES, size=n, p=[0.46, 0.29, 0.06, 0.03, 0.14, 0.01, 0.01])
    return pd.DataFrame(
        {
            "age": age,
            "gender": gender,
            "race": race,
            "hispanic_latino": hispanic,
            "birthplace": birthplace,
            "education": edu,
            "employment": employment,
            "country": "United States",
            "primary_language": primary,
            "native_english": native,
            "english_proficiency": proficiency,
            "other_languages": other,
            "timezone": tz,
        }
    )
