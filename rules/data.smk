rule conversations:
    """PRISM conversations, or a lab's pairs table -> one interaction (history, prompt, two responses) per item."""
    input:
        # the JSONL / pairs table is an input (editing it reruns this and what follows); the hub has no file
        data_inputs(),
        # a pairs table's audio-only sides: their transcripts are screened with the term list
        harmful_terms=[config["sampling"]["screening"]["harmful_terms"]] if PAIRS else [],
    output:
        **data_outputs(),
    log:
        "results/logs/data/conversations.log",
    conda:
        "../envs/data.yaml"
    threads: 2 if PAIRS else 1
    # SLURM: PRISM's 8,011 conversations in pandas; not measured on PRISM itself (15 s for this step and the draw on
    # the synthetic PRISM-scale data: benchmarks/out/dag_scale.json)
    resources:
        mem_mb=grown(8000),
        runtime=grown(10),
        slurm_partition=partition(0),
    params:
        data=config["data"],
        seed=config["seed"],
        backend=config["tts"]["backend"],
        audio_dir="results/data/given_audio",
        screening=config["sampling"]["screening"] if PAIRS else {},
    script:
        "../workflow/scripts/conversations.py"
