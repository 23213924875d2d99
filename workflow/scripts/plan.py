"""Snakemake adapter: the `plan:` config block (and study.scale) -> `modprefs plan` -> results/plan/ (designs,
recommendation, report).

A design grid that meets no target still writes every output (recommendation.csv says so and the log
warns); a bad option fails the job with the message naming it (no traceback).
"""

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.plan.cli import EXIT_UNMET, plan_from_args  # noqa: E402
from modprefs.plan.options import add_arguments, options_from_config, scale_option  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:
    setup_logging(smk)
    parser = argparse.ArgumentParser(prog="plan (config key plan)")
    add_arguments(parser)
    argv = scale_option(smk.params.scale) + options_from_config(smk.params.options)  # study.scale, then plan:
    argv += ["--out", smk.params.out, "--jobs", str(smk.threads), "--no-progress"]
    logging.info("modprefs plan %s", " ".join(argv))
    if plan_from_args(parser.parse_args(argv)) == EXIT_UNMET:
        logging.warning(
            "no design in the grid meets every target under the central priors: see %s", smk.output.recommendation
        )


run_adapter(main, snakemake)  # noqa: F821
