"""Snakemake adapter: ratings + participants + stimuli -> stats/tables/icc.csv and icc.md
(``modprefs.stats.tables.analyses.icc_table``, the same call as ``modprefs stats``)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.ratings.read import read_study  # noqa: E402
from modprefs.stats.tables.analyses import icc_table  # noqa: E402
from modprefs.stats.tables.outputs import write_result  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    study = read_study(
        {"ratings": smk.input.ratings, "participants": smk.input.participants, "stimuli": smk.input.stimuli}
    )
    params = {
        "icc_ci_method": smk.params.ci_method,
        "n_boot": smk.params.n_boot,
        "seed": smk.params.seed,
        "ci_level": smk.params.ci_level,
        "scale": getattr(smk.params, "scale", {}),  # the config's study.scale (the ICC table names a non-paper scale)
    }
    logging.info("ICC: %d ratings, params %s; %s", len(study.tables["ratings"]), params, "; ".join(study.notes))
    result = icc_table(study.tables, params)
    write_result(result, {"icc_csv": smk.output.csv, "icc_md": smk.output.md})
    logging.info("wrote %s\n%s", smk.output.csv, result.tables["icc"].to_string())


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821
