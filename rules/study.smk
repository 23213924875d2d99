rule stimuli:
    """The final stimulus set (after screening and replacement) that every later stage reads."""
    input:
        prompts="results/sampling/final_prompts.csv",
        conversations="results/data/conversations.parquet",
        manifest="results/audio/manifest.csv",
    output:
        "results/study/stimuli.csv",
    log:
        "results/logs/study/stimuli.log",
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/stats.yaml"
    script:
        "../workflow/scripts/stimuli.py"


rule assignments:
    """Participants -> condition, balanced block random trial order, counterbalanced clip order."""
    input:
        stimuli="results/study/stimuli.csv",
        judges=judge_allocation_input,
    output:
        "results/study/assignments.csv",
    log:
        "results/logs/study/assignments.log",
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/stats.yaml"
    params:
        study=config["study"],
        allocation=config["judges"].get("allocation", {}),
        judge_by_modality=config["stats"]["ai_alignment"]["judge_by_modality"],
        seed=config["seed"],
    script:
        "../workflow/scripts/assignments.py"
