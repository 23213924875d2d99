"""Snakemake adapters for evaluation.

rule reward_eval: one run's checkpoint + every pair file (+ other engines' renditions) ->
    results/reward/{run}/eval/{accuracy,ood,drift,length_bias,scores}.csv and eval.json.
rule reward_summary (``snakemake.rule == "reward_summary"``): every run's eval folder ->
    results/reward/summary/{transfer,drift,runs}.csv and .md.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from modprefs.io import write_csv, write_markdown_table  # noqa: E402
from modprefs.reward.evaluate import evaluate_run, read_eval, summary_tables  # noqa: E402
from modprefs.reward.pairs import read_pairs  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")


def main(smk) -> None:  # noqa: ANN001
    import torch
    torch.set_num_threads(max(1, int(smk.threads)))
    if smk.rule == "reward_summary":
        evals = {run: read_eval(Path(p).parent) for run, p in zip(smk.params.runs, smk.input.evals)}
        tables = summary_tables(evals)
        titles = {"transfer": "Cross-modal transfer: held-out accuracy by label set (rows: what the run trained on)",
                  "drift": "Reward drift: mean chosen/rejected reward per run (centering λ) and source",
                  "runs": "Reward runs: held-out micro/macro accuracy and mean reward"}
        for name, df in tables.items():
            write_csv(df, getattr(smk.output, f"{name}_csv"))
            write_markdown_table(df, getattr(smk.output, f"{name}_md"), title=titles[name], floatfmt=".3f")
        logging.info("summary of %d runs\n%s", len(evals), tables["runs"].to_string())
    else:
        pairs = read_pairs(smk.input.pairs)
        out = evaluate_run(Path(smk.input.checkpoint).parent, pairs, smk.params.engines_dir, smk.params.engines,
                           out_dir=Path(smk.output.summary).parent, cache_dir=smk.params.cache_dir)
        logging.info("run %s: %s", smk.wildcards.run, out["summary"])


run_adapter(main, smk)
