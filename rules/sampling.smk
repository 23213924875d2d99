localrules:
    final_sample,


checkpoint sample_prompts:
    """First stratified draw of prompts (long-difference vs other, or the lab's strata) with text screening and
    replacement; a lab's pool no larger than sampling.n_prompts is used whole. A checkpoint: a given-audio study's
    render shards declare the audio files of their clips, known once the draw is made."""
    input:
        conversations="results/data/conversations.parquet",
        harmful_terms=config["sampling"]["screening"]["harmful_terms"],
    output:
        prompts="results/sampling/prompts.csv",
        removals="results/sampling/screening_removals.csv",
        language_ids="results/sampling/language_ids.csv",
    log:
        "results/logs/sampling/sample_prompts.log",
    conda:
        "../envs/data.yaml"
    resources:
        mem_mb=grown(4000),  # language detection over every candidate response
        runtime=grown(20),
        slurm_partition=partition(0),
    params:
        sampling=config["sampling"],
        seed=config["seed"],
    script:
        "../workflow/scripts/sample_prompts.py"


rule final_sample:
    """The final prompt set after audio-QC review rounds, and every removal of the draw and the reviews."""
    input:
        first_draw="results/sampling/prompts.csv",
        screening_removals="results/sampling/screening_removals.csv",
        decisions=lambda wildcards: review_files("decisions"),
        replacements=lambda wildcards: review_files("replacements"),
        removals=lambda wildcards: review_files("removals"),
    output:
        prompts="results/sampling/final_prompts.csv",
        removals="results/sampling/removals.csv",
        review="results/audio/review.csv",
    log:
        "results/logs/sampling/final_sample.log",
    conda:
        "../envs/data.yaml"
    script:
        "../workflow/scripts/final_sample.py"
