# Plan a study before running it (docs/plan.md): prompts, raters, trials and cost for precision and
# power targets, by simulation from the paper's priors or a pilot. Not part of `rule all`; run on demand:
#   snakemake --cores 2 plan
# Its settings are the `plan:` config block, whose keys are `modprefs plan`'s options (`_` for `-`).
# With `plan: {pilot: SOURCE}` the priors are fitted to that ratings source (e.g. results/ratings of a pilot run; any
# source `modprefs stats` reads, foreign columns renamed by `pilot_map: {rating: score, ...}`).

PLAN_OUT = "results/plan"


rule plan:
    """Design table, recommendation per scenario (pessimistic / central / optimistic priors), figures, report."""
    input:
        plan_inputs,
    output:
        designs=f"{PLAN_OUT}/designs.csv",
        recommendation=f"{PLAN_OUT}/recommendation.csv",
        priors=f"{PLAN_OUT}/priors.csv",
        summary=f"{PLAN_OUT}/plan.json",
        report=f"{PLAN_OUT}/report.html",
    log:
        "results/logs/plan/plan.log",
    conda:
        "../envs/stats.yaml"
    # plan.jobs worker processes, at most --cores (more only wait: modprefs.cores)
    threads: max(1, min(int(PLAN.get("jobs") or workflow.cores), workflow.cores))
    params:
        options=PLAN,
        scale=config["study"].get("scale", {}),  # the study's rating scale: the plan's simulated ratings are on it
        out=lambda wildcards, output: str(Path(output.designs).parent),
    script:
        "../workflow/scripts/plan.py"
