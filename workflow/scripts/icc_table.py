"""Snakemake adapter: ratings + participants + stimuli -> stats/tables/icc.csv and icc.md
(``modprefs.stats.analyses.icc_table``, the same call as ``modprefs stats``)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.ratings.read import read_study  # noqa: E402
from modprefs.stats.analyses import icc_table  # noqa: E402
from modprefs.stats.outputs import write_result  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(sm) -> None:  # noqa: ANN001
    setup_logging(sm, fmt="%(asctime)s %(name)s %(message)s")
    study = read_study({"ratings": sm.input.ratings, "participants": sm.input.participants,
                        "stimuli": sm.input.stimuli})
    params = {"icc_ci_method": sm.params.ci_method, "n_boot": sm.params.n_boot, "seed": sm.params.seed,
              "ci_level": sm.params.ci_level}
    logging.info("ICC: %d ratings, params %s; %s", len(study.tables["ratings"]), params, "; ".join(study.notes))
    result = icc_table(study.tables, params)
    write_result(result, {"icc_csv": sm.output.csv, "icc_md": sm.output.md})
    logging.info("wrote %s\n%s", sm.output.csv, result.tables["icc"].to_string())


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821
