rule conversations:
    """PRISM conversations -> one interaction (history, prompt, two responses) per conversation."""
    input:
        # the JSONL is an input (editing it reruns this and what follows); the hub dataset has no file
        [config["data"]["source"]] if config["data"]["source"] != "prism" else [],
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
