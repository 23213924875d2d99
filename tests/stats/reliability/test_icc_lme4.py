"""The ICC table's variance components on a simulated study equal lme4's (tight tolerances)."""

from __future__ import annotations

import numpy as np
import pytest

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.stats.reliability.icc import analysable_ratings, condition_design, icc_from_components
from modprefs.stats.reliability.icc_ci import icc_by_condition
from modprefs.study.design import make_assignments
from support.lme4_reference import lme4_fit, require_lme4
from support.recovery_model import paper_stimuli

pytestmark = pytest.mark.r


@pytest.mark.parametrize("seed", [3, 4])
def test_icc_table_matches_lme4_on_simulated_ratings(seed):
    require_lme4()
    stimuli = paper_stimuli(seed)
    assignments = make_assignments(list(dict.fromkeys(stimuli.prompt_id)), 30, 12, seed=seed)
    ratings, _, participants, _ = simulate_ratings(stimuli, assignments, SimulationParams(), seed=seed)
    table = icc_by_condition(ratings, participants, n_boot=0, seed=seed, stimuli=stimuli).set_index("condition")
    for condition in ("audio", "text"):
        design = condition_design(analysable_ratings(ratings, participants, condition, stimuli))
        assert design.terms == ("presented_first", "trial_z")
        ref = lme4_fit(design.y, design.X, design.clip, design.participant, reml=True)
        row = table.loc[condition]
        for ours, theirs in [
            (row.var_clip, ref["var_g1"]),
            (row.var_participant, ref["var_g2"]),
            (row.var_resid, ref["var_resid"]),
        ]:
            assert ours == pytest.approx(theirs, rel=1e-3)
        per_clip = np.bincount(design.clip)
        k = per_clip.size / np.sum(1.0 / per_clip)  # ICC(2,k)'s effective k: the harmonic mean ratings per clip
        icc1, icck = icc_from_components(ref["var_g1"], ref["var_g2"], ref["var_resid"], k)
        assert row.icc_2_1 == pytest.approx(icc1, rel=1e-3) and row.icc_2_k == pytest.approx(icck, rel=1e-3)
