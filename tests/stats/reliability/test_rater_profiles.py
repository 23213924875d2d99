"""Each rater's slope on the clip effects and residual scale (modprefs.stats.reliability.rater_profiles), against
raters whose slopes and noise are known; the null world that uses them is tested in test_icc_difference.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from modprefs.stats.reliability.icc import condition_design, fit_iccs
from modprefs.stats.reliability.rater_profiles import rater_profiles


def _crossed_ratings(rater_scale: np.ndarray, seed: int, slopes: np.ndarray | None = None, df: float = math.inf):
    """Every rater rates all 60 clips: clip SD 20 (times the rater's slope), rater SD 10, residual SD 25 x the rater's
    scale (t(df) residuals scaled to variance 1 when df is finite). A ConditionDesign of it."""
    rng = np.random.default_rng(seed)
    n_clips, n_raters = 60, rater_scale.size
    slopes = np.ones(n_raters) if slopes is None else slopes
    clip, rater = (x.ravel() for x in np.meshgrid(np.arange(n_clips), np.arange(n_raters), indexing="ij"))
    z = rng.standard_normal(clip.size)
    if math.isfinite(df):
        z = rng.standard_t(df, clip.size) / math.sqrt(df / (df - 2))
    y = 50 + 20 * rng.standard_normal(n_clips)[clip] * slopes[rater] + 10 * rng.standard_normal(n_raters)[rater]
    y = y + 25 * rater_scale[rater] * z
    frame = pd.DataFrame(
        {
            "prompt_id": [f"p{c // 2:03d}" for c in clip],
            "clip_id": [f"c{c:03d}" for c in clip],
            "participant_id": [f"r{r:02d}" for r in rater],
            "trial": clip // 2,
            "presented_first": clip % 2 == 0,
            "rating": y,
        }
    )
    return condition_design(frame)


def test_rater_profiles_find_the_raters_own_noise_and_slope():
    """Known truth: raters with residual SD x .5 / 1 / 2, and (separately) raters who follow the clips at slope
    .5 / 1 / 1.5 (who compress or stretch the slider). The estimates rank and size them; with equal raters, Gaussian
    or heavy-tailed (t(5): no spurious spread from the tails), every slope and scale is close to 1."""
    truth = np.repeat([0.5, 1.0, 2.0], 8)
    design = _crossed_ratings(truth, seed=3)
    profile = rater_profiles(design, fit_iccs(design)[0])
    assert np.mean(profile.scales**2) == pytest.approx(1.0) and np.mean(profile.slopes) == pytest.approx(1.0)
    relative = truth / math.sqrt(np.mean(truth**2))
    assert np.corrcoef(np.log(profile.scales), np.log(relative))[0, 1] > 0.95
    for level in (0.5, 1.0, 2.0):
        own = profile.scales[truth == level].mean() / relative[truth == level][0]
        assert 0.8 < own < 1.2, (level, own)
    assert np.std(profile.slopes) < 0.1  # noise differs, slopes do not
    slopes = np.repeat([0.5, 1.0, 1.5], 8)
    design = _crossed_ratings(np.full(24, 0.6), seed=5, slopes=slopes)
    profile = rater_profiles(design, fit_iccs(design)[0])
    for level in (0.5, 1.0, 1.5):
        assert profile.slopes[slopes == level].mean() == pytest.approx(level, abs=0.12), (level, profile.slopes)
    for df in (math.inf, 5.0):
        equal = _crossed_ratings(np.ones(24), seed=4, df=df)
        flat = rater_profiles(equal, fit_iccs(equal)[0])
        assert np.std(flat.scales) < 0.1 and np.std(flat.slopes) < 0.1, (df, flat)
