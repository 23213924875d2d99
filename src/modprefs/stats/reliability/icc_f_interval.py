"""The F-based interval of ICC(A,1) / ICC(A,k) (McGraw & Wong 1996) for complete, balanced ratings.

When every rater rated every clip exactly once, each clip is its own sampled item (not one of a prompt's
pair) and the ICC model has no covariates, the two-way
random-effects ANOVA without replication gives the ICC's sampling distribution in closed form (under
the Gaussian model): with n clips (targets), k raters and the mean squares of clips (MSR), raters (MSC)
and the residual (MSE),

    ICC(A,1) = (MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n)

and its confidence interval for absolute agreement (McGraw & Wong 1996, case 2A; Shrout & Fleiss 1979,
ICC(2,1)) uses an F distribution whose denominator degrees of freedom ``v`` come from Satterthwaite's
approximation to the linear combination of MSC and MSE in the denominator:

    a = k ICC / (n (1 - ICC)),  b = 1 + k ICC (n - 1) / (n (1 - ICC))
    v = (a MSC + b MSE)^2 / ((a MSC)^2 / (k - 1) + (b MSE)^2 / ((n - 1)(k - 1)))
    F* = F_{1 - alpha/2}(n - 1, v),  F_* = F_{1 - alpha/2}(v, n - 1)
    lower = n (MSR - F* MSE) / (F* (k MSC + (k n - k - n) MSE) + n MSR)
    upper = n (F_* MSR - MSE) / (k MSC + (k n - k - n) MSE + n F_* MSR)

(the same formulas as pingouin's ``intraclass_corr`` for ICC(A,1), written there with the equivalent
expression for ``v``). ICC(A,k)'s bounds are the Spearman-Brown images of ICC(A,1)'s at k. The REML point
estimate of :mod:`modprefs.stats.reliability.icc` equals the ANOVA one whenever MSR > MSE and MSC > MSE
(no variance component on its zero bound), so the interval belongs to the reported estimate.

It is exact (for the Gaussian model) only in this design; any missing cell, a rater who rated a clip
twice, or a covariate in the model (``presented_first``, ``trial_z``) makes the mean squares' expectations
depend on the design: the crossed jackknife (:mod:`modprefs.stats.reliability.icc_ci`) is used instead
(``stats.icc_ci_method: auto``). Clips nested in prompts (the pairwise design) are not independent targets:
``f_based`` refuses them; ``auto`` takes them as items with MSR's df those of the prompts and the clips within them
(:func:`targets_df`).

``auto`` uses :func:`robust_f_interval`: the same interval with each mean square's df shrunk to what the ratings
show (:func:`robust_degrees`; the nominal df, so the exact interval, where they look Gaussian), and keeps it only
where :mod:`modprefs.stats.reliability.f_assumptions`' checks and the crossed jackknife do not contradict it.
Measured (benchmarks/out/icc_interval_width.md, 500 studies per cell; coverage of nominal 95 %, width / the
oracle's 2 z SD): the exact interval covers .92-.96 at 0.86-1.02 x the oracle on complete single-item designs
(16 x 4, 30 x 10) under the Gaussian and two heavy-tailed generators, but only .81 at 0.65 x under the
paper-calibrated simulator (t(3) noise with rater-specific spread, ceiling at 100); the robust-df interval .94-.97
at 0.93-1.04 x under the first three (single items and prompt pairs) and .83-.88 at 0.67-0.77 x under the
simulator, where ``auto`` mostly reports the jackknife instead.

References:
    McGraw, K. O. & Wong, S. P. (1996). Forming inferences about some intraclass correlation
    coefficients. Psychological Methods 1(1), 30-46 (Table 7, case 2A; correction: 1(4), 390).
    Shrout, P. E. & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater reliability.
    Psychological Bulletin 86(2), 420-428.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
    Biometrics Bulletin 2(6), 110-114.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.stats.reliability.f_assumptions import interaction_residuals, prompt_sums_of_squares
from modprefs.stats.reliability.icc import ConditionDesign
from modprefs.stats.reliability.rater_scaling import icc_k

#: ``ci_method`` text of the F-based interval
F_LABEL = (
    "F-based, McGraw & Wong (1996) ICC(A,1) interval (two-way ANOVA mean squares, Satterthwaite df; "
    "complete balanced ratings of independent items, no covariates)"
)


@dataclass(frozen=True)
class MeanSquares:
    """Two-way ANOVA without replication of an (n targets x k raters) table: MSR (targets), MSC (raters), MSE."""

    msr: float
    msc: float
    mse: float
    n: int
    k: int

    @property
    def icc_a1(self) -> float:
        """The ANOVA estimate of ICC(A,1) (Shrout & Fleiss' ICC(2,1)); NaN when its denominator is not positive."""
        denom = self.msr + (self.k - 1) * self.mse + self.k * (self.msc - self.mse) / self.n
        return (self.msr - self.mse) / denom if denom > 0 else math.nan


def mean_squares(table: np.ndarray) -> MeanSquares:
    """:class:`MeanSquares` of a complete (n targets, k raters) table of ratings (n, k >= 2).

    Examples
    --------
    Shrout & Fleiss's (1979) table (six targets, four judges; ICC(2,1) = .29 in their Table 2):

    >>> import numpy as np
    >>> from modprefs.stats.reliability.icc_f_interval import mean_squares
    >>> table = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    >>> ms = mean_squares(table)
    >>> round(ms.msr, 3), round(ms.msc, 3), round(ms.mse, 3), round(ms.icc_a1, 2)
    (11.242, 32.486, 1.019, 0.29)
    """
    x = np.asarray(table, float)
    n, k = x.shape
    grand = x.mean()
    rows, cols = x.mean(axis=1), x.mean(axis=0)
    ssr = k * float(((rows - grand) ** 2).sum())
    ssc = n * float(((cols - grand) ** 2).sum())
    sse = float(((x - rows[:, None] - cols[None, :] + grand) ** 2).sum())
    return MeanSquares(ssr / (n - 1), ssc / (k - 1), sse / ((n - 1) * (k - 1)), n, k)


@dataclass(frozen=True)
class FDegrees:
    """Degrees of freedom of MSR (targets), MSC (raters) and MSE (residual) that the F interval uses."""

    targets: float
    raters: float
    resid: float

    @classmethod
    def nominal(cls, n: int, k: int) -> FDegrees:
        """The two-way ANOVA's own: n - 1, k - 1, (n - 1)(k - 1) (exact under the Gaussian model)."""
        return cls(float(n - 1), float(k - 1), float((n - 1) * (k - 1)))


def satterthwaite_df(ms: MeanSquares, icc: float, df: FDegrees | None = None) -> float:
    """McGraw & Wong's Satterthwaite denominator df ``v`` of the ICC(A,1) interval at the estimate ``icc``:
    v = (a MSC + b MSE)^2 / ((a MSC)^2 / df_raters + (b MSE)^2 / df_resid) with a = k ICC / (n (1 - ICC)) and
    b = 1 + k ICC (n - 1) / (n (1 - ICC)); ``df`` defaults to :meth:`FDegrees.nominal`."""
    n, k = ms.n, ms.k
    df = df or FDegrees.nominal(n, k)
    a = k * icc / (n * (1 - icc))
    b = 1 + k * icc * (n - 1) / (n * (1 - icc))
    den = (a * ms.msc) ** 2 / df.raters + (b * ms.mse) ** 2 / df.resid
    return (a * ms.msc + b * ms.mse) ** 2 / den if den > 0 else math.nan


def icc_a1_interval(ms: MeanSquares, level: float = 0.95, df: FDegrees | None = None) -> tuple[float, float, float]:
    """(lower, upper, v): the two-sided ``level`` interval of ICC(A,1) (not truncated to [0, 1]) and its df.

    ``v`` is Satterthwaite's df at the ANOVA estimate (clamped to [0, 1): a negative estimate, possible with few
    clips, uses the df of a null ICC). NaN bounds when the interval is undefined (MSE = 0, a non-finite estimate).
    ``df``: the mean squares' df (:func:`robust_degrees`); the exact interval's (:meth:`FDegrees.nominal`) if None.

    Examples
    --------
    McGraw & Wong's interval on Shrout & Fleiss's table; pingouin's ``intraclass_corr`` gives [0.02, 0.76] for ICC2:

    >>> import numpy as np
    >>> from modprefs.stats.reliability.icc_f_interval import icc_a1_interval, mean_squares
    >>> table = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    >>> lower, upper, df = icc_a1_interval(mean_squares(table))
    >>> round(lower, 3), round(upper, 3), round(df, 2)
    (0.019, 0.761, 4.79)
    """
    if not (ms.n >= 2 and ms.k >= 2 and ms.mse > 0):
        return math.nan, math.nan, math.nan
    icc = ms.icc_a1
    # a negative estimate (MSR < MSE) can drive the df to 0 and collapse the interval onto the estimate; the df are
    # evaluated at the estimate clamped to [0, 1), at 0 the residual df (n - 1)(k - 1), as for a null ICC
    df = df or FDegrees.nominal(ms.n, ms.k)
    v = satterthwaite_df(ms, min(max(icc, 0.0), 1.0 - 1e-12), df) if math.isfinite(icc) else math.nan
    if not (math.isfinite(v) and v > 0):
        return math.nan, math.nan, v
    n, k, msr, msc, mse = ms.n, ms.k, ms.msr, ms.msc, ms.mse
    q = 0.5 + level / 2.0
    f_up = float(stats.f.ppf(q, df.targets, v))
    f_lo = float(stats.f.ppf(q, v, df.targets))
    rest = k * msc + (k * n - k - n) * mse
    lower = n * (msr - f_up * mse) / (f_up * rest + n * msr)
    upper = n * (f_lo * msr - mse) / (rest + n * f_lo * msr)
    return float(lower), float(upper), float(v)


def targets_df(table: np.ndarray, prompt: np.ndarray) -> float:
    """Satterthwaite's df of MSR when the targets (rows of ``table``) are nested in prompts (``prompt``: codes).

    MSR's sum of squares splits into prompts (P - 1 df, mean square MS_P) and clips within prompts (C - P df,
    MS_C); as a sum of two independent scaled chi-squares it has about
    (df_P MS_P + df_C MS_C)^2 / (df_P MS_P^2 + df_C MS_C^2) df: C - 1 when a prompt's clips are independent
    (MS_P ~ MS_C), falling towards P - 1 as they share their prompt's effect (Satterthwaite 1946).
    """
    x = np.asarray(table, float)
    ss_p, df_p, ss_c, df_c = prompt_sums_of_squares(x.mean(axis=1), prompt)
    ss_p, ss_c = x.shape[1] * ss_p, x.shape[1] * ss_c  # MSR's sums of squares (k x those of the clip means)
    if df_p < 1 or df_c < 1:
        return float(x.shape[0] - 1)
    denom = ss_p**2 / df_p + ss_c**2 / df_c
    return float((ss_p + ss_c) ** 2 / denom) if denom > 0 else float(x.shape[0] - 1)


def robust_degrees(table: np.ndarray, prompt: np.ndarray | None = None) -> FDegrees:
    """The F interval's df, each no larger than the exact interval's, shrunk to what the ratings show.

    A mean square's df say how variable it is: Var(MS) = 2 E[MS]^2 / df for a scaled chi-square. Noise whose
    spread differs by rater or is heavy-tailed, and clips that share their prompt's effect, make the mean squares
    more variable than the Gaussian model's df claim, and the exact interval too short. So:

    * MSR (targets): the smaller of n - 1 and :func:`targets_df` (clips nested in ``prompt``: codes per row of
      ``table``; None = every row its own prompt);
    * MSE (residual): the smaller of (n - 1)(k - 1) and 2 MSE^2 / V, V = the variance of the raters' own residual
      mean squares / k (MSE is their mean: a rater whose noise is wider, or heavier-tailed, shows here);
    * MSC (raters): k - 1 (a handful of raters cannot say more).

    Under the Gaussian model MSE's estimated df are mostly above the nominal ones (so the interval is the exact one,
    as on pingouin's example); under heavy-tailed generators the interval widens by what the ratings show
    (benchmarks/out/icc_interval_width.md, rows ``f_robust``).
    """
    x = np.asarray(table, float)
    n, k = x.shape
    nominal = FDegrees.nominal(n, k)
    codes = np.arange(n) if prompt is None else np.asarray(prompt)
    ms = mean_squares(x)
    df_targets = min(nominal.targets, targets_df(x, codes))
    resid = interaction_residuals(x)
    own = (resid * resid).sum(axis=0) * k / nominal.resid  # rater j's residual mean square; their mean is MSE
    var_mse = float(np.var(own, ddof=1)) / k
    df_resid = min(nominal.resid, 2.0 * ms.mse**2 / var_mse) if var_mse > 0 else nominal.resid
    return FDegrees(float(df_targets), nominal.raters, float(df_resid))


def clip_prompt_codes(design: ConditionDesign) -> np.ndarray:
    """(n_clips,) the prompt code of each clip of a design (from its rows' ``prompt`` codes)."""
    assert design.prompt is not None  # condition_design always sets the prompt codes
    codes = np.zeros(design.n_clips, dtype=np.intp)
    codes[design.clip] = design.prompt
    return codes


def clips_nested_in_prompts(design: ConditionDesign) -> bool:
    """Whether some prompt has more than one clip (the pairwise design), so the clips are not independent items."""
    return design.prompt is not None and design.n_prompts != design.n_clips


def complete_table(design: ConditionDesign, clips_as_items: bool = False) -> tuple[np.ndarray | None, str]:
    """The (clips x raters) table of a design where the F interval is exact, or (None, why not).

    Needs no covariate (X = the intercept only), at least 2 clips and 2 raters, every rater's rating of every
    clip exactly once, and clips that are the sampled units: each clip its own prompt (a single-stimulus design).
    In the pairwise design a prompt's clips share the prompt's effect, so its n clips are not n independent
    targets and the interval's n - 1 df for MSR overstate the information (in the project's simulator, whose
    clips correlate .9 within a prompt, it covered 69-76 % at nominal 95 %: benchmarks/out/icc_interval_width.md);
    the crossed jackknife leaves whole prompts out instead. ``clips_as_items=True`` takes a prompt's clips as
    items all the same (``auto`` does, and keeps the interval only where the jackknife agrees with it).
    """
    if design.X.shape[1] != 1:
        return None, f"the ICC model has covariates ({', '.join(design.terms)})"
    n, k = design.n_clips, design.n_participants
    if n < 2 or k < 2:
        return None, "fewer than 2 clips or 2 raters"
    if clips_nested_in_prompts(design) and not clips_as_items:
        return None, f"clips are nested in prompts ({design.n_prompts} prompts, {n} clips): not independent targets"
    counts = np.bincount(design.clip * k + design.participant, minlength=n * k)
    if design.y.size != n * k or (counts != 1).any():
        return None, "not every rater rated every clip exactly once (incomplete or unbalanced ratings)"
    table = np.empty(n * k)
    table[design.clip * k + design.participant] = design.y
    return table.reshape(n, k), ""


def f_interval(
    design: ConditionDesign, level: float = 0.95, clips_as_items: bool = False
) -> tuple[tuple[float, float], tuple[float, float], str]:
    """((lo, hi) of ICC(A,1), (lo, hi) of ICC(A,k), reason): the F-based interval of a complete balanced design.

    Bounds are truncated to [0, 1] (an ICC's range; the REML estimate is never negative) and ICC(A,k)'s are
    the Spearman-Brown images at k (the number of raters). A design where the interval does not apply gives
    NaN bounds and the reason; ``clips_as_items``: as :func:`complete_table`.
    """
    ci1, cik, reason, _ = _f_interval(design, level, clips_as_items, robust=False)
    return ci1, cik, reason


def robust_f_interval(
    design: ConditionDesign, level: float = 0.95
) -> tuple[tuple[float, float], tuple[float, float], str, FDegrees | None]:
    """As :func:`f_interval` with the df of :func:`robust_degrees` (a prompt's clips taken as items, their shared
    prompt effect counted in MSR's df), plus those df (None where the interval does not apply). Equal to the exact
    interval wherever the df are the nominal ones (:meth:`FDegrees.nominal`)."""
    return _f_interval(design, level, clips_as_items=True, robust=True)


def _f_interval(
    design: ConditionDesign, level: float, clips_as_items: bool, robust: bool
) -> tuple[tuple[float, float], tuple[float, float], str, FDegrees | None]:
    table, reason = complete_table(design, clips_as_items)
    nan = (math.nan, math.nan)
    if table is None:
        return nan, nan, f"F-based interval not applicable: {reason}", None
    ms = mean_squares(table)
    if robust:
        df = robust_degrees(table, clip_prompt_codes(design))
    else:
        df = FDegrees.nominal(ms.n, ms.k)
    lo, hi, _ = icc_a1_interval(ms, level, df)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return nan, nan, "F-based interval undefined (no residual variance)", df
    lo, hi = min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)
    return (lo, hi), (float(icc_k(lo, ms.k)), float(icc_k(hi, ms.k))), "", df


def per_prompt_intervals(frame: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """The F-based interval of each per-prompt ICC(2,1) (:func:`modprefs.stats.tables.modality.per_prompt_icc`).

    ``frame``: analysed ratings with prompt_id, condition, participant_id, rating and ``response`` (or clip ids
    ending in ``_0``/``_1``). Each prompt's block is its 2 clips x the raters who rated both (complete, no
    covariates), as the per-prompt ICC is computed; bounds are not truncated (the per-prompt estimate is not).
    Columns prompt_id, condition, icc_2_1_lo, icc_2_1_hi; NaN bounds where the block has < 2 raters.
    """
    if "response" in frame.columns:
        response = pd.to_numeric(frame["response"], errors="coerce")
    else:
        response = pd.to_numeric(frame["clip_id"].astype(str).str.extract(r"_([01])$")[0], errors="coerce")
    keep = response.isin([0, 1]).to_numpy()
    f = frame[keep].assign(response=response[keep].astype(int))
    rows = []
    for (prompt, cond), block in f.groupby(["prompt_id", "condition"]):
        wide = block.pivot_table(index="response", columns="participant_id", values="rating").dropna(axis=1)
        lo = hi = math.nan
        if wide.shape[0] >= 2 and wide.shape[1] >= 2:
            lo, hi, _ = icc_a1_interval(mean_squares(wide.to_numpy(float)), level)
        rows.append({"prompt_id": prompt, "condition": cond, "icc_2_1_lo": lo, "icc_2_1_hi": hi})
    return pd.DataFrame(rows, columns=["prompt_id", "condition", "icc_2_1_lo", "icc_2_1_hi"])
