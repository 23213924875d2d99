"""Snakemake adapters for evaluation.

rule reward_eval: one run's checkpoint + every pair file and their summary.json (+ other engines' renditions) ->
    results/reward/{run}/eval/{accuracy,ood,drift,length_bias,scores}.csv and eval.json.
rule reward_summary (``snakemake.rule == "reward_summary"``): every run's eval folder ->
    results/reward/summary/{transfer,drift,runs,pair_types}.csv and .md.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.reward.evaluate import evaluate_run, pair_ceilings, write_summary_files  # noqa: E402
from modprefs.reward.pairs import read_pairs  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(max(1, int(smk.threads)))
    if smk.rule == "reward_summary":
        write_summary_files(smk.params.runs, smk.input.evals, smk.input.pairs_summary, Path(smk.output.runs_csv).parent)
        return
    out = evaluate_run(
        Path(smk.input.checkpoint).parent,
        read_pairs(smk.input.pairs),
        smk.params.engines_dir or None,
        smk.params.engines,
        out_dir=Path(smk.output.summary).parent,
        cache_dir=smk.params.cache_dir,
        ceilings=pair_ceilings(smk.input.pairs_summary),
    )
    logging.info("run %s: %s", smk.wildcards.run, out["summary"])


run_adapter(main, snakemake)  # noqa: F821
