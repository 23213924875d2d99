localrules:
    judges_table,
    rater_plan,  # statistics: reads small tables


# The API judges wait on the network, which compute nodes often lack: they run on the submitting host (docs/cluster.md)
if config["judges"].get("backend", "local") == "openai":

    localrules:
        judge_modality,


rule judge_modality:
    """Synthetic ratings (paper §3.2.3) of every final clip and the attention check in one modality.

    Records go to results/judges/raw/ (one JSON per call, cached by request hash: a rerun buys
    nothing twice); the modality's tidy table to results/judges/{modality}.csv.
    """
    input:
        unpack(judge_inputs),
    output:
        "results/judges/{modality}.csv",
    log:
        "results/logs/judges/judge_{modality}.log",
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/judges.yaml"
    threads: 2
    # SLURM: the offline judges at their measured speed per clip (the API judges are local rules, above)
    resources:
        mem_mb=grown(4000),
        runtime=grown_minutes(judge_seconds),
        slurm_partition=partition(0),
    params:
        judges={k: v for k, v in config["judges"].items() if k != "allocation"},
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    script:
        "../workflow/scripts/judge_modality.py"


rule judges_table:
    """results/judges/ratings.csv: both modalities' synthetic ratings (columns in docs/CONTRACTS.md)."""
    input:
        tables=expand("results/judges/{modality}.csv", modality=JUDGE_MODALITIES),
        prompts="results/sampling/final_prompts.csv",  # the study's prompts (a judge may have rated more)
        attention_check=config["attention_check"],
    output:
        "results/judges/ratings.csv",
    log:
        "results/logs/judges/judges_table.log",
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/judges.yaml"
    script:
        "../workflow/scripts/judges_table.py"


rule rater_plan:
    """AI-guided rater allocation: per-prompt AI gap -> predicted ICC -> raters to reach the target ICC(2,k)."""
    input:
        judges="results/judges/ratings.csv",
        stimuli="results/study/stimuli.csv",
        per_prompt_icc="results/stats/tables/per_prompt_icc.csv",
    output:
        plan="results/judges/rater_plan.csv",
        figure=report(
            "results/judges/rater_plan.png",
            caption="../workflow/report/rater_plan.rst",
            category="Figures",
            labels={"figure": "rater_plan"},
        ),
        summary="results/judges/rater_plan_summary.csv",
    log:
        "results/logs/judges/rater_plan.log",
    conda:
        "../envs/stats.yaml"
    params:
        allocation=config["judges"]["allocation"],
        judge_by_modality=config["stats"]["ai_alignment"]["judge_by_modality"],
    script:
        "../workflow/scripts/rater_plan.py"
