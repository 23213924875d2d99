# Publish the finished study as a Hugging Face dataset (modprefs.publish; README, "Publish the study as a
# dataset"). Not part of `rule all` (it copies every study WAV once more); run on demand:
#   snakemake --cores 2 publish
# Settings: the `publish:` config block (license, drop_fields, scrub, salt). `modprefs publish --results results
# --out DIR [--push-to-hub OWNER/NAME]` does the same outside Snakemake and can push to the hub.


localrules:
    publish,


rule publish:
    """results/dataset/: the DatasetDict (save_to_disk), data/<split>/train-00000-of-00001.parquet and README.md (card)."""
    input:
        conversations="results/data/conversations.parquet",
        final_prompts="results/sampling/final_prompts.csv",
        manifest="results/audio/manifest.csv",
        stimuli="results/study/stimuli.csv",
        ratings="results/ratings/ratings.csv",
        trials="results/ratings/trials.csv",
        participants="results/ratings/participants.csv",
        icc="results/stats/tables/icc.csv",
        judges="results/judges/ratings.csv",
    output:
        directory("results/dataset"),
    log:
        "results/logs/publish/publish.log",
    conda:
        "../envs/data.yaml"
    params:
        publish=config.get("publish", {}),
        config=config,
    script:
        "../workflow/scripts/publish.py"
