# Publish the finished study as a Hugging Face dataset (modprefs.publish; README, "Publish the study as a
# dataset"). Not part of `rule all` (it copies every study WAV once more); run on demand:
#   snakemake --cores 2 publish
# Settings: the `publish:` config block (license, drop_fields, scrub, salt). `modprefs publish --results results
# --out DIR [--push-to-hub OWNER/NAME]` does the same outside Snakemake and can push to the hub.
# Both show the run's config record results/config.yaml (rule run_config, part of `rule all`) in the card.


localrules:
    run_config,
    publish,


rule run_config:
    """results/config.yaml: the merged config this run used (config files, --config, schema defaults), secret-named keys (publish.salt) left out; rewritten whenever any config value changes (params)."""
    output:
        "results/config.yaml",
    log:
        "results/logs/publish/run_config.log",
    params:
        config=config,
    run:
        from modprefs.publish.run_config import write_run_config

        write_run_config(params.config, output[0])
        Path(log[0]).write_text(f"wrote {output[0]}\n")


rule publish:
    """results/dataset/: the DatasetDict (save_to_disk), data/<split>/train-00000-of-00001.parquet and README.md (card)."""
    input:
        config="results/config.yaml",
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
        publish=config.get("publish", {}),  # the options and the salt (the record leaves the salt out)
    script:
        "../workflow/scripts/publish.py"
