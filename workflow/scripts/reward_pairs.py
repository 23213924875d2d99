"""Snakemake adapter (rule reward_pairs): study ratings, judge ratings, clips, conversations (and a user corpus
where configured) -> results/reward/pairs/*.parquet + summary.json (modprefs.reward.build)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_json  # noqa: E402
from modprefs.io_tables import read_table  # noqa: E402
from modprefs.reward.build import build_pair_sets  # noqa: E402
from modprefs.reward.pairs import write_pairs  # noqa: E402
from modprefs.scale import scale_from_config  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402


def main(smk) -> None:
    setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
    p, i = smk.params, smk.input
    sets, summary = build_pair_sets(
        p.pairs,
        read_table(i.ratings),
        read_table(i.stimuli),
        read_table(i.manifest),
        pd.read_parquet(i.conversations),
        read_table(p.judge_ratings, allow_empty=True) if p.judge_ratings else None,
        p.tts,
        p.audio_dir,
        int(p.seed),
        threads=smk.threads,
        scale=scale_from_config(p.scale),
    )
    for name, pairs in sets.items():
        write_pairs(pairs, getattr(smk.output, name))
    write_json(summary, smk.output.summary)


run_adapter(main, snakemake)  # noqa: F821
