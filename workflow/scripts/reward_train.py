"""Snakemake adapter (rule reward_train): pair files -> one reward-model run in results/reward/{run}/
(model.safetensors + config.json, metrics.json, scores.csv, curve.png)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import torch  # noqa: E402

from modprefs.reward.pairs import read_pairs  # noqa: E402
from modprefs.reward.train import TrainConfig, train_reward_model  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
logging.captureWarnings(True)


def main(smk) -> None:  # noqa: ANN001
    pairs = read_pairs(smk.input.pairs)
    train = TrainConfig.from_dict({**smk.params.train, "threads": smk.threads, "progress": sys.stderr.isatty()})
    logging.info("run %s: %d pairs (%s), model %s, train %s", smk.wildcards.run, len(pairs),
                 pairs["category"].value_counts().to_dict(), smk.params.model, train)
    torch.set_num_threads(max(1, int(smk.threads)))
    _, metrics = train_reward_model(pairs, Path(smk.output.metrics).parent, smk.params.model, train,
                                    cache_dir=smk.params.cache_dir)
    logging.info("run %s: train acc %.3f, val %s, mean reward %.3f, %.1f s (%.1f pairs/s)", smk.wildcards.run,
                 metrics["train"]["accuracy"], metrics["val"] and round(metrics["val"]["accuracy"], 3),
                 metrics["all"]["mean_reward"], metrics["timing"]["total_s"], metrics["timing"]["train_pairs_per_s"])


run_adapter(main, smk)
