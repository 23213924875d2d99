rule sample_prompts:
    """Stratified draw of prompts (long-difference vs other) with text screening and replacement."""
    input:
        conversations="results/data/conversations.parquet",
        harmful_terms=config["sampling"]["screening"]["harmful_terms"],
    output:
        prompts="results/sampling/prompts.csv",
        removals="results/sampling/removals.csv",
    params:
        sampling=config["sampling"],
        seed=config["seed"],
    conda:
        "../envs/data.yaml"
    log:
        "results/logs/sampling/sample_prompts.log",
    script:
        "../workflow/scripts/sample_prompts.py"
