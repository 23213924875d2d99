"""Study design: balance of raters per prompt and presentation order, determinism."""

from __future__ import annotations

import pytest

from modprefs.study.design import make_assignments


@pytest.mark.parametrize("n_prompts,raters,trials", [(12, 18, 8), (100, 53, 20), (7, 5, 7), (10, 9, 3)])
def test_balance(n_prompts, raters, trials):
    prompts = [f"p{i:03d}" for i in range(n_prompts)]
    t = make_assignments(prompts, raters, trials, seed=3)
    assert t.groupby("condition")["participant_id"].nunique().to_dict() == {"text": raters, "audio": raters}
    per_participant = t[t.trial > 0].groupby("participant_id")["prompt_id"]
    assert (per_participant.nunique() == trials).all() and (per_participant.size() == trials).all()
    assert (t[t.trial == 0]["prompt_id"] == "attn").all()
    rated = t[t.trial > 0]
    counts = rated.groupby(["condition", "prompt_id"]).size().unstack(0).reindex(prompts).fillna(0)
    assert (counts.max() - counts.min()).max() <= 1
    first = rated.groupby(["condition", "prompt_id"])["first_clip"].agg(["sum", "count"])
    assert ((first["count"] - 2 * first["sum"]).abs() <= 1).all()
    attn = t[t.trial == 0].groupby("condition")["first_clip"].agg(["sum", "count"])
    assert ((attn["count"] - 2 * attn["sum"]).abs() <= 1).all()


def test_deterministic_and_seeded():
    prompts = [f"p{i}" for i in range(12)]
    a = make_assignments(prompts, 10, 6, seed=5)
    assert a.equals(make_assignments(prompts, 10, 6, seed=5))
    assert not a.equals(make_assignments(prompts, 10, 6, seed=6))


def test_too_many_trials():
    with pytest.raises(ValueError, match="trials_per_participant"):
        make_assignments(["a", "b"], 3, 3, seed=1)
