"""Cross-modality agreement of winners (§4.3, Figure 3).

For each prompt, each modality's winner is the response with the higher mean raw rating over
that modality's analysed raters (passed attention check, trial >= 1). At a decisiveness
threshold tau, a modality's outcome is ``0``/``1`` when the mean-rating gap exceeds tau and
``tie`` otherwise. Two curves over tau, as the paper's Figure 3:

* ``agree_decisive`` (blue): share of prompts with the same winner among prompts where both
  modalities are decisive (their count, ``n_both_decisive``, is the green bars);
* ``agree_all`` (red): share of all prompts with the same outcome, a tie in one modality and a
  winner in the other counting as a disagreement (both ties agree).

At tau = 0 the paper reports 53/100 with a binomial test against 50 % of p = .31: that p is the
one-sided (greater) test (two-sided would be .62); we report both and say which matches.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.stats.reliability.icc import analysable_ratings
from modprefs.study.terms import CONDITIONS


def clip_means(ratings: pd.DataFrame, participants: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """Mean rating per clip and condition (columns audio, text), indexed by clip_id, with prompt_id/response."""
    parts = []
    for c in CONDITIONS:
        df = analysable_ratings(ratings, participants, c, stimuli)
        parts.append(pd.to_numeric(df["rating"]).groupby(df["clip_id"].astype(str)).mean().rename(c))
    means = pd.concat(parts, axis=1)
    meta = stimuli.assign(clip_id=stimuli["clip_id"].astype(str)).set_index("clip_id")[["prompt_id", "response"]]
    return meta.join(means, how="left")


def prompt_gaps(means: pd.DataFrame) -> pd.DataFrame:
    """Per prompt and condition: mean rating of response 0 minus response 1 (NaN if a clip is unrated)."""
    wide = means.pivot_table(index="prompt_id", columns="response", values=["audio", "text"])
    return pd.DataFrame({c: wide[(c, 0)] - wide[(c, 1)] for c in CONDITIONS}).dropna()


def outcomes(gap: pd.Series, tau: float | np.number) -> pd.Series:
    """The winner a prompt's mean-rating gap (response 0 minus response 1, points) names at threshold ``tau``:
    ``"0"`` or ``"1"`` when ``|gap| > tau``, else ``"tie"``; the index is kept.

    Examples
    --------
    >>> import pandas as pd
    >>> from modprefs.stats.tables.agreement import outcomes
    >>> outcomes(pd.Series([12.0, -3.0, 5.0, -9.5]), tau=5).tolist()
    ['0', 'tie', 'tie', '1']
    """
    return pd.Series(np.where(gap.abs() > tau, np.where(gap > 0, "0", "1"), "tie"), index=gap.index)


def agreement_curve(gaps: pd.DataFrame, taus: np.ndarray | None = None) -> pd.DataFrame:
    """Figure 3's numbers: per tau, agreement among both-decisive prompts and over all prompts."""
    taus = np.arange(0, 41) if taus is None else np.asarray(taus, dtype=float)
    rows = []
    for tau in taus:
        a, t = outcomes(gaps["audio"], tau), outcomes(gaps["text"], tau)
        both = (a != "tie") & (t != "tie")
        n_both = int(both.sum())
        rows.append(
            {
                "tau": float(tau),
                "n_prompts": len(gaps),
                "n_both_decisive": n_both,
                "n_agree_decisive": int((a[both] == t[both]).sum()),
                "agree_decisive": float((a[both] == t[both]).mean()) if n_both else np.nan,
                "agree_all": float((a == t).mean()) if len(gaps) else np.nan,
                "note": "" if n_both else "no prompt decisive in both modalities at this threshold",
            }
        )
    return pd.DataFrame(rows)


def agreement_at_zero(gaps: pd.DataFrame) -> dict:
    """Winner agreement at tau = 0 with binomial tests against 50 % (one- and two-sided)."""
    curve = agreement_curve(gaps, np.array([0.0])).iloc[0]
    k, n = int(curve["n_agree_decisive"]), int(curve["n_both_decisive"])
    if n == 0:
        return {
            "n_agree": 0,
            "n": 0,
            "agreement": np.nan,
            "p_greater": np.nan,
            "p_two_sided": np.nan,
            "reason": "no prompt with a decisive winner in both modalities",
        }
    return {
        "n_agree": k,
        "n": n,
        "agreement": k / n,
        "p_greater": float(stats.binomtest(k, n, 0.5, alternative="greater").pvalue),
        "p_two_sided": float(stats.binomtest(k, n, 0.5).pvalue),
        "reason": "",
    }


def figure3_agreement(curve: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    """Figure 3: agreement (%) vs threshold, both curves, with the both-decisive counts as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from modprefs.stats.figures import save_png

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax2 = ax.twinx()
    ax2.bar(
        curve["tau"], curve["n_both_decisive"], color="#2ca02c", alpha=0.25, width=0.8, label="prompts decisive in both"
    )
    ax.plot(curve["tau"], 100 * curve["agree_decisive"], color="#1f77b4", label="agreement (both decisive)")
    ax.plot(curve["tau"], 100 * curve["agree_all"], color="#d62728", label="agreement (tie vs decisive = disagree)")
    ax.axhline(50, color="grey", lw=0.8, ls=":")
    ax.set(
        xlabel="rating-gap threshold",
        ylabel="cross-modality agreement (%)",
        ylim=(0, 100),
        title="Cross-modality agreement of winners",
    )
    ax2.set_ylabel("prompts decisive in both modalities")
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    save_png(fig, target)
    plt.close(fig)
