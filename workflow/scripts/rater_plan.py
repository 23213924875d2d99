"""Adapter (rule rater_plan): judges, stimuli (+ per_prompt_icc or ratings+participants) -> plan, figure, summary."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))


from modprefs.io import write_csv  # noqa: E402
from modprefs.io_tables import read_table  # noqa: E402
from modprefs.judges.allocation import (  # noqa: E402
    AllocationConfig,
    figure_rater_plan,
    plan_from_tables,
    plan_warnings,
    summary_lines,
)
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(sm) -> None:  # noqa: ANN001
    setup_logging(sm, fmt="%(asctime)s %(name)s %(message)s")
    params, outputs = dict(sm.params.items()), dict(sm.output.items())
    # one reader: ids verbatim (a participant called NA stays a participant)
    tables = {k: read_table(v, allow_empty=True) for k, v in sm.input.items()}
    per_prompt = tables.get("per_prompt_icc")
    if per_prompt is None and {"ratings", "participants"} <= set(tables):
        from modprefs.stats.modality import per_prompt_icc, rating_frame
        per_prompt = per_prompt_icc(rating_frame(tables["ratings"], tables["participants"], tables["stimuli"]))
    config = AllocationConfig.from_mapping(params.get("allocation"))
    logging.info("allocation config: %s; human per-prompt ICCs: %s", config, per_prompt is not None)
    plan, summary = plan_from_tables(tables["judges"], tables["stimuli"], config, params.get("judge_by_modality"),
                                     per_prompt)
    write_csv(plan, outputs["plan"])
    figure_rater_plan(plan, outputs["figure"])
    if "summary" in outputs:
        write_csv(summary, outputs["summary"])
    for line in summary_lines(summary, config.target):
        logging.info("%s", line)
    for warning in plan_warnings(plan):
        logging.warning("%s", warning)


run_adapter(main, snakemake)  # noqa: F821
