rule conversations:
    """PRISM conversations, or a lab's pairs table -> one interaction (history, prompt, two responses) per item."""
    input:
        # the JSONL / pairs table is an input (editing it reruns this and what follows); the hub has no file
        data_inputs(),
    output:
        **data_outputs(),
    log:
        "results/logs/data/conversations.log",
    conda:
        "../envs/data.yaml"
    threads: 2 if PAIRS else 1
    params:
        data=config["data"],
        seed=config["seed"],
        backend=config["tts"]["backend"],
        audio_dir="results/data/given_audio",
    script:
        "../workflow/scripts/conversations.py"
