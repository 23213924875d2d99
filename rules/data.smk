rule conversations:
    """PRISM conversations -> one interaction (history, prompt, two responses) per conversation."""
    input:
        # the JSONL is an input (editing it reruns this and what follows); the hub dataset has no file
        [config["data"]["source"]] if config["data"]["source"] != "prism" else [],
    output:
        "results/data/conversations.parquet",
    log:
        "results/logs/data/conversations.log",
    conda:
        "../envs/data.yaml"
    params:
        data=config["data"],
        seed=config["seed"],
    script:
        "../workflow/scripts/conversations.py"
