"""Cross-modality agreement (Figure 3), raters needed (Figure 4), Table 4 permutations, the report."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.report.html import build_report
from modprefs.stats.reliability.icc import icc_from_components
from modprefs.stats.reliability.rater_scaling import icc_k, raters_needed, raters_needed_table
from modprefs.stats.tables.agreement import agreement_at_zero, agreement_curve, clip_means, prompt_gaps
from modprefs.stats.tables.reliability_table import icc_permutation_test
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli


@pytest.mark.parametrize("rho,k", [(0.3, 9), (0.05, 3), (0.6, 1)])
def test_spearman_brown_equals_components(rho, k):
    s_stim, rest = rho, 1 - rho
    assert icc_k(rho, k) == pytest.approx(icc_from_components(s_stim, rest / 2, rest / 2, k)[1])


@pytest.mark.parametrize("rho,target", [(0.3, 0.75), (0.333, 0.8), (0.295, 0.9), (0.1, 0.5), (0.8, 0.75)])
def test_raters_needed_is_the_smallest_k(rho, target):
    k = raters_needed(rho, target)
    assert icc_k(rho, k) >= target - 1e-12
    assert k == 1 or icc_k(rho, k - 1) < target
    assert np.isnan(raters_needed(0.0, target)) and np.isnan(raters_needed(float("nan"), target))


def test_raters_needed_paper_numbers():
    # The paper: ICC(2,1) = .333 audio -> "good" (.75) needs 6-7 raters, ~9 raters give ~.82.
    assert raters_needed(0.333, 0.75) == 7
    assert icc_k(0.333, 9.2) == pytest.approx(0.821, abs=0.002)
    table = raters_needed_table(
        pd.DataFrame(
            [{"condition": "audio", "icc_2_1": 0.333, "icc_2_1_lo": 0.286, "icc_2_1_hi": 0.365, "k_mean_raters": 9.2}]
        )
    )
    row = table.set_index("target_icc_2_k").loc[0.75]
    assert row.raters_needed_optimistic <= row.raters_needed <= row.raters_needed_pessimistic


def _means(a0, a1, t0, t1):
    rows = []
    for i, (x0, x1, y0, y1) in enumerate(zip(a0, a1, t0, t1)):
        rows += [
            {"prompt_id": f"p{i}", "response": 0, "audio": x0, "text": y0},
            {"prompt_id": f"p{i}", "response": 1, "audio": x1, "text": y1},
        ]
    return pd.DataFrame(rows)


def test_agreement_by_hand():
    # gaps audio: +10, -3, +1, +20 ; text: +5, +4, -2, +30
    gaps = prompt_gaps(_means([60, 50, 51, 80], [50, 53, 50, 60], [60, 54, 48, 90], [55, 50, 50, 60]))
    curve = agreement_curve(gaps, np.array([0, 2, 6])).set_index("tau")
    assert curve.loc[0, "n_both_decisive"] == 4 and curve.loc[0, "n_agree_decisive"] == 2
    # tau 2: audio outcomes 0,1,tie,0 ; text 0,0,tie,0 -> both decisive: p0,p1,p3 (agree 2); all: 3/4
    assert curve.loc[2, "n_both_decisive"] == 3 and curve.loc[2, "n_agree_decisive"] == 2
    assert curve.loc[2, "agree_all"] == pytest.approx(0.75)
    # tau 6: audio 0,tie,tie,0 ; text tie,tie,tie,0 -> both decisive p3 only; all: p1,p2,p3 agree
    assert curve.loc[6, "n_both_decisive"] == 1 and curve.loc[6, "agree_all"] == pytest.approx(0.75)
    z = agreement_at_zero(gaps)
    assert (z["n_agree"], z["n"]) == (2, 4)


def test_binomial_matches_paper():
    gaps = pd.DataFrame({"audio": [1.0] * 53 + [1.0] * 47, "text": [1.0] * 53 + [-1.0] * 47})
    z = agreement_at_zero(gaps)
    assert z["n_agree"] == 53 and z["p_greater"] == pytest.approx(0.31, abs=0.01)
    assert z["p_two_sided"] == pytest.approx(0.62, abs=0.01)


def _study(seed: int, **overrides):
    stimuli = paper_stimuli(seed)
    a = make_assignments(list(dict.fromkeys(stimuli.prompt_id)), 20, 10, seed=seed)
    params = dataclasses.replace(SimulationParams(), **overrides)
    ratings, trials, participants, _ = simulate_ratings(stimuli, a, params, seed=seed)
    return stimuli, a, ratings, trials, participants


def test_clip_means_use_analysable_raters_only():
    stimuli, _, ratings, _, participants = _study(1)
    means = clip_means(ratings, participants, stimuli)
    passed = set(participants[participants.passed_attention.astype(str).str.lower() == "true"].participant_id)
    r = ratings[(ratings.trial >= 1) & ratings.participant_id.isin(passed) & (ratings.condition == "audio")]
    assert means.loc["p000_0", "audio"] == pytest.approx(r[r.clip_id == "p000_0"].rating.mean())


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_icc_permutation_has_power_and_size():
    # a strong modality difference in reliability -> small p; equal settings -> not small (typically)
    # Gaussian, mid-scale settings fixed here so the contrast does not depend on the simulator's calibrated
    # (heavy-tailed, clipped) rater noise
    stimuli, _, ratings, _, participants = _study(
        2,
        var_clip_text=60.0,
        var_clip_audio=1500.0,
        var_resid_audio=1000.0,
        var_resid_text=1000.0,
        resid_scale_cv=0.0,
        resid_df=float("inf"),
        clip_df=float("inf"),
        intercept=50.0,
    )
    strong = icc_permutation_test(ratings, participants, n_perm=99, seed=1, stimuli=stimuli)
    assert strong["icc_2_1"]["observed"] > 0 and strong["icc_2_1"]["p_value"] <= 0.02
    assert strong["icc_2_1"]["n_valid"] >= 95
    again = icc_permutation_test(ratings, participants, n_perm=99, seed=1, stimuli=stimuli)
    assert again == strong


def test_report_escapes_and_embeds(tmp_path):
    png = tmp_path / "fig.png"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    fig.savefig(png)
    html = build_report(
        [
            ("Tables", [("T <1>", pd.DataFrame({"term": ["<script>x</script>"], "p": [0.01]}))]),
            ("Figures", [("fig", png)]),
        ],
        {"seed": 1},
        notes=["simulated <b>"],
    )
    assert "<script>x</script>" not in html and "&lt;script&gt;" in html
    assert "data:image/png;base64," in html and "simulated &lt;b&gt;" in html and "seed: 1" in html
