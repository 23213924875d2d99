"""Adapter (rule rater_plan): judges, stimuli (+ per_prompt_icc or ratings+participants) -> plan, figure, summary."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_csv  # noqa: E402
from modprefs.io_tables import read_table  # noqa: E402
from modprefs.stats.tables import rater_allocation as al  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    params, outputs = dict(smk.params.items()), dict(smk.output.items())
    # one reader: ids verbatim (a participant called NA stays a participant)
    tables = {k: read_table(v, allow_empty=True) for k, v in smk.input.items()}
    per_prompt = al.human_per_prompt_icc(tables)
    config = al.AllocationConfig.from_mapping(params.get("allocation"))
    logging.info("allocation config: %s; human per-prompt ICCs: %s", config, per_prompt is not None)
    plan, summary = al.plan_from_tables(
        tables["judges"], tables["stimuli"], config, params.get("judge_by_modality"), per_prompt
    )
    write_csv(plan, outputs["plan"])
    al.figure_rater_plan(plan, outputs["figure"])
    if "summary" in outputs:
        write_csv(summary, outputs["summary"])
    for line in al.summary_lines(summary, config.target):
        logging.info("%s", line)
    for warning in al.plan_warnings(plan):
        logging.warning("%s", warning)


run_adapter(main, snakemake)  # noqa: F821
