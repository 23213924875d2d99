rule conversations:
    """PRISM conversations -> one interaction (history, prompt, two responses) per conversation."""
    output:
        "results/data/conversations.parquet",
    params:
        data=config["data"],
        seed=config["seed"],
    conda:
        "../envs/data.yaml"
    log:
        "results/logs/data/conversations.log",
    script:
        "../workflow/scripts/conversations.py"
