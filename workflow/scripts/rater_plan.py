"""Snakemake adapter: AI judge ratings (+ optional human per-prompt ICCs) -> an AI-guided rater plan.

Inputs: ``judges`` (results/judges/ratings.csv), ``stimuli`` (results/study/stimuli.csv) and,
optionally, ``per_prompt_icc`` (results/stats/tables/per_prompt_icc.csv) or ``ratings`` +
``participants`` (the per-prompt ICCs are then computed here) for the fitted ICC model.
Params: ``allocation`` (config ``judges.allocation``, see :class:`modprefs.judges.allocation.AllocationConfig`),
optional ``judge_by_modality``. Outputs: ``plan`` (CSV), ``figure`` (PNG), optional ``summary`` (CSV),
all written atomically. See :mod:`modprefs.judges.allocation` for the method.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_csv  # noqa: E402
from modprefs.judges.allocation import AllocationConfig, figure_rater_plan, plan_summary, rater_plan  # noqa: E402
from modprefs.stats.ai_alignment import (ai_clip_means, ai_differentiation, judges_skip_reason,  # noqa: E402
                                         select_judge_ratings)
from modprefs.workflow_log import setup_logging  # noqa: E402

sm = snakemake  # noqa: F821
setup_logging(sm, fmt="%(asctime)s %(name)s %(message)s")
ids = {c: str for c in ("participant_id", "prompt_id", "clip_id")}
inputs = dict(sm.input.items())
params = dict(sm.params.items())
outputs = dict(sm.output.items())

judges = pd.read_csv(inputs["judges"], dtype=ids)
stimuli = pd.read_csv(inputs["stimuli"], dtype=ids)
reason = judges_skip_reason(judges)
if reason:
    logging.error("rater plan: %s", reason)
    raise RuntimeError(f"rater plan: {reason}")
config = AllocationConfig.from_mapping(params.get("allocation"))
ai = select_judge_ratings(judges, params.get("judge_by_modality") or None)
diffs = ai_differentiation(ai_clip_means(ai, stimuli), stimuli)

per_prompt = None
if "per_prompt_icc" in inputs:
    per_prompt = pd.read_csv(inputs["per_prompt_icc"], dtype=ids)
    logging.info("human per-prompt ICCs from %s (%d rows)", inputs["per_prompt_icc"], len(per_prompt))
elif "ratings" in inputs and "participants" in inputs:
    from modprefs.stats.modality import per_prompt_icc, rating_frame

    ratings = pd.read_csv(inputs["ratings"], dtype=ids)
    participants = pd.read_csv(inputs["participants"], dtype=ids)
    per_prompt = per_prompt_icc(rating_frame(ratings, participants, stimuli))
    logging.info("human per-prompt ICCs computed from %d ratings", len(ratings))
else:
    logging.info("no human ratings given: the ICC model is the prior (icc_model=%s)", config.icc_model)

logging.info("allocation config: %s", config)
plan = rater_plan(diffs, config, per_prompt)
summary = plan_summary(plan)
write_csv(plan, outputs["plan"])
figure_rater_plan(plan, outputs["figure"])
if "summary" in outputs:
    write_csv(summary, outputs["summary"])
for row in summary.itertuples(index=False):
    logging.info("%s: %d prompts, %d raters planned vs %d uniform (predicted share reaching %.2f: %.2f vs %.2f); "
                 "budget binding: %s; model: %s", row.modality, row.n_prompts, row.total_planned, row.total_uniform,
                 config.target, row.share_reaching_target_plan, row.share_reaching_target_uniform, row.budget_binding,
                 row.icc_model)
if plan["icc_model"].str.startswith("prior").any():
    logging.warning("the plan uses the paper's prior slope; benchmarks/judges_allocation.py found it costs more raters "
                    "than a uniform design unless the AI explains most of the per-prompt ICC heterogeneity: prefer "
                    "icc_model 'fitted' with human per-prompt ICCs from a pilot")
for note in plan.loc[plan["note"] != "", "note"].unique():
    logging.warning("rater plan note: %s", note)
logging.info("wrote %s and %s", outputs["plan"], outputs["figure"])
