"""Snakemake adapter for the statistics rules: read the named inputs with the shared reader, run one
analysis of ``modprefs.stats.tables.analyses`` (``params.analysis``; outputs whose inputs are absent are
skipped with the reason) and write each table (CSV + Markdown) and figure (PNG) to the rule's
output of the same name, atomically."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.ratings.read import read_study  # noqa: E402
from modprefs.stats.tables.analyses import run_analysis  # noqa: E402
from modprefs.stats.tables.outputs import write_result  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:  # noqa: ANN001
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    inputs = {name: path for name, path in smk.input.items() if str(path).endswith(".csv")}
    study = read_study({k: v for k, v in inputs.items() if k != "assignments"}, design=inputs.get("assignments"))
    params = dict(smk.params.items())
    if "modality_terms" in smk.input.keys():  # the justification analysis' stop list (an input, so edits rerun it)
        params["modality_terms"] = smk.input.modality_terms
    result = run_analysis(params.pop("analysis"), study.tables, params, study.present)
    write_result(result, dict(smk.output.items()))


if __name__ == "__main__" and "snakemake" in globals():
    run_adapter(main, snakemake)  # noqa: F821
