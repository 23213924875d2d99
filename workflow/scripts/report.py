"""Snakemake adapter: the statistics, judges, reward models and method checks -> report.html (modprefs.report)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_text  # noqa: E402
from modprefs.report.workflow_report import workflow_report  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    optional = {
        k: Path(smk.input[k][0] if k not in ("judges", "rater_plan") else smk.input[k])
        for k in ("judges", "rater_plan", "coverage", "table2_null", "table2_null_slopes", "icc_null", "alpha_null")
        if smk.input.get(k)
    }  # absent: not run
    if smk.input.get("plan"):
        optional["plan"] = Path(smk.input.plan[0]).parent
    rewards = {k: [Path(p) for p in smk.input[k]] for k in ("reward_tables", "reward_curves") if k in smk.input.keys()}
    html, n_tables = workflow_report(
        [Path(p) for p in smk.input.tables],
        [Path(p) for p in smk.input.figures],
        Path(smk.input.ratings),
        smk.config,
        smk.params.icc_ci_method,
        smk.params.table2_random,
        **optional,
        **rewards,
    )
    write_text(html, smk.output[0])
    logging.info("report with %d tables and %d figures", n_tables, len(smk.input.figures))


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821
