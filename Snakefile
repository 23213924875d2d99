# modprefs: a cross-modal (text vs audio) preference study for speech alignment, end to end.
# Stages: data -> sampling -> speech (QC, replacement) -> study design -> ratings, judges -> statistics,
# reward models -> report.

import sys
from pathlib import Path

# The library lives in src/; make it importable here and for `script:` jobs without an install.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from modprefs.config_files import exit_on_user_error, load_config_file  # noqa: E402

# Read config.yaml ourselves first: a YAML error is then named by file, line and column, and an
# empty file says so (Snakemake's own messages name neither). Files given with --configfile are
# read by Snakemake before this line runs (docs: README, "If the config is wrong").
if Path("config.yaml").exists():
    with exit_on_user_error():
        load_config_file("config.yaml")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/sampling.smk"
include: "rules/speech.smk"
include: "rules/study.smk"
include: "rules/judges.smk"
include: "rules/ratings.smk"
include: "rules/stats.smk"
include: "rules/reward.smk"
include: "rules/report.smk"
include: "rules/app.smk"
include: "rules/plan.smk"
include: "rules/publish.smk"


rule all:
    default_target: True
    input:
        "results/data/conversations.parquet",
        "results/sampling/prompts.csv",
        "results/sampling/removals.csv",
        "results/audio/manifest.csv",
        engine_manifests(),
        "results/study/stimuli.csv",
        "results/study/assignments.csv",
        "results/judges/ratings.csv",
        "results/judges/rater_plan.csv",
        expand("results/reward/{run}/eval/eval.json", run=REWARD_RUNS),
        "results/reward/summary/runs.csv",
        expand("results/ratings/{table}.csv", table=RATING_TABLES),
        "results/stats/tables/icc.csv",
        "results/stats/tables/icc.md",
        stats_outputs(),
        "results/report/report.html",
        "results/config.yaml",  # the merged config this run used (rule run_config, rules/publish.smk)
