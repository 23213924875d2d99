"""Snakemake adapter (rule reward_train): pair files -> one reward-model run in results/reward/{run}/
(model.safetensors + config.json, metrics.json, scores.csv, curve.png)."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import torch  # noqa: E402

from modprefs.reward.pairs import read_pairs  # noqa: E402
from modprefs.reward.train import TrainConfig, metrics_message, run_message, train_reward_model  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    logging.captureWarnings(True)
    pairs = read_pairs(smk.input.pairs)
    train = TrainConfig.from_dict({**smk.params.train, "threads": smk.threads, "progress": sys.stderr.isatty()})
    logging.info("%s", run_message(smk.wildcards.run, pairs, smk.params.model, train))
    torch.set_num_threads(max(1, int(smk.threads)))
    _, m = train_reward_model(
        pairs, Path(smk.output.metrics).parent, smk.params.model, train, cache_dir=smk.params.cache_dir
    )
    logging.info("%s", metrics_message(smk.wildcards.run, m))


run_adapter(main, snakemake)  # noqa: F821
