"""Snakemake adapter: a finished run's results/ -> results/dataset/ (``modprefs.publish.publish``, the same call as
``modprefs publish``; the card shows the run's config record results/config.yaml); built in a staged folder beside
the output and moved into place whole."""

import logging
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.output_folder import staged_folder  # noqa: E402
from modprefs.publish import PublishOptions, publish  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    opts = PublishOptions.from_config(smk.params.publish)
    opts.salt = opts.salt or os.environ.get("MODPREFS_PUBLISH_SALT", "")
    results = Path(smk.input.config).parent  # results/config.yaml (rule run_config) -> results
    out = Path(smk.output[0])
    with staged_folder(out, option="output") as tmp:
        rows = publish(results, tmp, opts)  # config: the record results/config.yaml
    logging.info("wrote %s: %s", out, ", ".join(f"{k} {v}" for k, v in rows.items()))


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821
