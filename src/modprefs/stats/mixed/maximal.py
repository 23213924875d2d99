"""By-group random slopes, as many as the data support: a fixed fallback ladder (lme4 formulas).

A fixed effect that varies within the levels of a grouping factor (a rater's order or trial effect)
is tested against the residual unless the model lets it vary between those levels too; when it does
vary (raters with their own primacy and drift), the test is anti-conservative (Barr, Levy, Scheepers
& Tily 2013, J. Mem. Lang. 68). The maximal structure is not always estimable, so, as Bates, Kliegl,
Vasishth & Baayen (2015, arXiv:1506.04967) and Matuschek et al. (2017, J. Mem. Lang. 94) recommend,
it is simplified step by step until the fit is regular. With fixed part ``F``, grouping factor ``g``,
slope columns ``s1 .. sk`` and the other random terms ``R``, the steps are::

    correlated     F + (1 + s1 + ... + sk | g) + R
    uncorrelated   F + (1 + s1 + ... + sk || g) + R      (lme4: (1 | g) + (0 + s1 | g) + ...)
    reduced        F + (1 + <the slopes whose variance the uncorrelated fit left above 0> || g) + R
    intercept      F + (1 | g) + R

The first step whose fit converged and is not singular *in g's terms* (lme4's ``isSingular`` rule:
a relative Cholesky diagonal below 1e-4, i.e. a variance at 0 or a correlation at +/-1) is used;
a step that cannot be fitted at all (more random effects than the data identify) counts as rejected.
The ``reduced`` step is skipped when it would equal a step already tried; the ``intercept`` step is
used whatever its fit (its singular flag is reported). Candidates are fitted without the
Satterthwaite df, each warm-started from the previous one's covariances; only the chosen fit gets
them (:func:`modprefs.stats.mixed.lmm.with_satterthwaite`), so its numbers are those of fitting its
formula directly.

With ``slope_alpha`` below 1 a regular step with slopes is then kept only if the ratings support its
slopes: a likelihood-ratio test against the intercept step (REML criteria, same fixed effects; lme4's
``anova(refit = FALSE)``; naive chi2 with the difference in covariance parameters as df) must give
p <= ``slope_alpha``, else the intercept step is used and the note says why. This is Matuschek, Kliegl,
Vasishth, Baayen & Bates's (2017) remedy for the maximal model's lost power, with their alpha of .2 as
the usual choice, taken as one joint test of all the group's slopes: where raters share one slope, a slope
variance that happens to be estimated above 0 inflates the fixed effect's SE and the test becomes
conservative. In Table 2's null studies without rater-specific slopes the ladder alone kept slopes in about
three of four studies, with the test in one of eight to one of five (``benchmarks/out/table2_null_slopes.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from modprefs.errors import InsufficientDataError
from modprefs.stats.mixed.formula import build_design
from modprefs.stats.mixed.lmm import (
    SINGULAR_TOL,
    LmmFit,
    LrtResult,
    RandomTerm,
    fit_lmm,
    lrt,
    reml_lrt,
    with_satterthwaite,
)

#: The ladder's steps, richest first.
STEPS = ("correlated", "uncorrelated", "reduced", "intercept")


@dataclass(frozen=True)
class LadderFit:
    """The fit a ladder chose and how it got there.

    Attributes:
        fit: the chosen fit (with Satterthwaite df when requested).
        formula: its formula.
        random: its random-effects part (the formula after the fixed part).
        step: which of :data:`STEPS` it is.
        rejected: (step, random part, reason) of every richer step that was tried and rejected.
        slope_test: the likelihood-ratio test of the slopes against the intercept step (``slope_alpha`` < 1 and a
            regular step with slopes), else None.
    """

    fit: LmmFit
    formula: str
    random: str
    step: str
    rejected: tuple[tuple[str, str, str], ...]
    slope_test: LrtResult | None = None

    @property
    def note(self) -> str:
        """'' when the first step was used; else ``"fell back to <step>: <step> <why>; ..."``."""
        if not self.rejected:
            return ""
        return f"fell back to {self.step}: " + "; ".join(f"{step} {why}" for step, _, why in self.rejected)


def slope_terms(group: str, slopes: Sequence[str], step: str, keep: Sequence[str] | None = None) -> str:
    """The random term(s) of ``group`` at one step of the ladder (``keep``: the slopes of ``reduced``)."""
    if step == "intercept":
        return f"(1 | {group})"
    cols = " + ".join(["1", *(keep if step == "reduced" and keep is not None else slopes)])
    return f"({cols} | {group})" if step == "correlated" else f"({cols} || {group})"


def _theta_segments(fit: LmmFit) -> list[np.ndarray]:
    """The fit's theta cut into its terms' lower triangles (column-major), in the fit's term order."""
    out, start = [], 0
    for re_ in fit.random_effects:
        r = len(re_.coef_names)
        out.append(fit.theta[start : start + r * (r + 1) // 2])
        start += r * (r + 1) // 2
    return out


def singular_in(fit: LmmFit, group: str) -> bool:
    """Whether any term of ``group`` is on the boundary (a diagonal of its relative Cholesky factor < 1e-4)."""
    for re_, seg in zip(fit.random_effects, _theta_segments(fit)):
        if re_.group != group:
            continue
        r = len(re_.coef_names)
        diag = [sum(r - c for c in range(j)) for j in range(r)]  # column-major positions of T's diagonal
        if np.any(seg[diag] < SINGULAR_TOL):
            return True
    return False


def positive_slopes(fit: LmmFit, group: str, slopes: Sequence[str]) -> list[str]:
    """The slopes of ``group`` whose variance is above the boundary in ``fit`` (in ``slopes``' order)."""
    sd: dict[str, float] = {}
    for re_ in fit.random_effects:
        if re_.group == group:
            sd.update(zip(re_.coef_names, re_.sd))
    return [s for s in slopes if s in sd and sd[s] >= SINGULAR_TOL * fit.sigma]


def _warm_start(prev: LmmFit | None, terms: list[RandomTerm]) -> np.ndarray | None:
    """Start values for ``terms`` from a previous fit: each term's relative covariance, where the previous fit
    had those coefficients in the same group (lme4's default of 1 on the diagonal otherwise)."""
    if prev is None:
        return None
    parts = []
    for t in terms:
        names = list(t.coef_names or ())
        cov = np.eye(len(names)) * prev.sigma2
        for re_ in prev.random_effects:
            if re_.group == t.name and all(n in re_.coef_names for n in names):
                idx = [re_.coef_names.index(n) for n in names]
                cov = re_.cov[np.ix_(idx, idx)]
                break
        rel = cov / prev.sigma2 + 1e-6 * np.eye(len(names))  # jitter: a boundary fit's factor is singular
        T = np.linalg.cholesky(rel)
        parts.append(T.T[np.triu_indices(len(names))])  # T's lower triangle, column-major
    return np.concatenate(parts)


def _fit(df: pd.DataFrame, formula: str, reml: bool, prev: LmmFit | None) -> LmmFit:
    d = build_design(df, formula)
    terms = [
        RandomTerm(group=g, Z=Z, name=gn, coef_names=tuple(cn))
        for g, Z, gn, cn in zip(d.groups, d.Zs, d.group_names, d.coef_names)
    ]
    return fit_lmm(d.y, d.X, terms, reml=reml, x_names=d.x_names, satterthwaite=False, theta0=_warm_start(prev, terms))


def _reject_reason(fit: LmmFit, group: str) -> str:
    if not fit.converged:
        return "did not converge"
    if singular_in(fit, group):
        return f"singular (a {group} variance at 0 or a correlation at +/-1)"
    return ""


def _test_slopes(
    df: pd.DataFrame, fixed: str, intercept_random: str, reml: bool, chosen: LmmFit
) -> tuple[LmmFit, LrtResult] | None:
    """(the intercept step's fit, the LRT of ``chosen``'s slopes against it); None when the intercept step cannot be
    fitted."""
    try:
        small = _fit(df, f"{fixed} + {intercept_random}", reml, chosen)
    except InsufficientDataError:
        return None
    return small, (reml_lrt(small, chosen) if reml else lrt(small, chosen, refit=False))


def fit_maximal(
    df: pd.DataFrame,
    fixed: str,
    group: str,
    slopes: Sequence[str],
    other: str = "",
    reml: bool = True,
    satterthwaite: bool = True,
    slope_alpha: float = 1.0,
) -> LadderFit:
    """Fit ``fixed + <group's terms> + other`` down the ladder (module docstring) and return the first regular fit.

    Args:
        df: the data (see :func:`modprefs.stats.mixed.lmm.fit_formula`).
        fixed: ``"y ~ fixed terms"``.
        group: the grouping column of the slopes (e.g. ``"participant_id"``).
        slopes: numeric columns whose effects may vary by ``group`` (no slopes: the intercept step alone).
        other: the other random terms, ``"(1 | a) + (1 | b)"`` ('' for none).
        reml, satterthwaite: as :func:`modprefs.stats.mixed.lmm.fit_lmm`.
        slope_alpha: in (0, 1]; a regular step with slopes is kept only if their likelihood-ratio test against the
            intercept step gives p <= slope_alpha (1: always kept, the ladder alone; Matuschek et al. 2017: .2).

    Raises:
        InsufficientDataError: when not even the intercept step can be fitted.
    """
    if not 0.0 < slope_alpha <= 1.0:
        raise ValueError(f"slope_alpha must be in (0, 1], got {slope_alpha!r}")
    rejected: list[tuple[str, str, str]] = []
    tried: set[str] = set()
    intercept_random = " + ".join(p for p in (slope_terms(group, slopes, "intercept"), other) if p)
    prev: LmmFit | None = None
    keep: list[str] | None = None
    for step in STEPS if slopes else ("intercept",):
        if step == "reduced" and not keep:
            continue  # no slope left: that is the intercept step
        random = " + ".join(p for p in (slope_terms(group, slopes, step, keep), other) if p)
        if random in tried:
            continue
        tried.add(random)
        try:
            fit = _fit(df, f"{fixed} + {random}", reml, prev)
        except InsufficientDataError as err:
            if step == "intercept":
                raise
            rejected.append((step, random, f"not estimable ({err})"))
            continue
        why = _reject_reason(fit, group)
        if step == "uncorrelated":
            keep = positive_slopes(fit, group, slopes)
        if why and step != "intercept":
            rejected.append((step, random, why))
            prev = fit
            continue
        test = None
        tested = (
            _test_slopes(df, fixed, intercept_random, reml, fit) if step != "intercept" and slope_alpha < 1 else None
        )
        if tested is not None:
            test = tested[1]
            if test.p > slope_alpha:
                fit = tested[0]
                why = (
                    f"not supported by the ratings (LRT against (1 | {group}): chi2({test.df}) = {test.chi2:.2f}, "
                    f"p = {test.p:.3f} > {slope_alpha:g})"
                )
                rejected.append((step, random, why))
                step, random = "intercept", intercept_random
        chosen = with_satterthwaite(fit) if satterthwaite else fit
        return LadderFit(chosen, f"{fixed} + {random}", random, step, tuple(rejected), test)
    raise AssertionError("the ladder ends with the intercept step")  # pragma: no cover
