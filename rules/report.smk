localrules:
    report,


# The ICC coverage measured by benchmarks/validity/icc_coverage.py and Table 2's null rejection rates
# (benchmarks/validity/table2_null.py), named relative to the working directory: an
# absolute path in params would make a moved checkout rerun the report. As an input (when present), a
# new measurement reruns the report.
COVERAGE_JSON = os.path.relpath(Path(workflow.basedir) / "benchmarks/out/icc_coverage.json")
TABLE2_NULL_JSON = os.path.relpath(Path(workflow.basedir) / "benchmarks/out/table2_null.json")
TABLE2_NULL_SLOPES_JSON = os.path.relpath(Path(workflow.basedir) / "benchmarks/out/table2_null_slopes.json")
ICC_NULL_JSON = os.path.relpath(Path(workflow.basedir) / "benchmarks/out/icc_difference_null_v2.json")
ALPHA_NULL_JSON = os.path.relpath(Path(workflow.basedir) / "benchmarks/out/alpha_difference_null.json")
# the planner's recommendation and figures, when `snakemake plan` has run (the answers page quotes it)
PLAN_RECOMMENDATION = "results/plan/recommendation.csv"


rule report:
    """results/report/report.html: the three answers, Tables 1-6, figures, every table, reward models, the run's
    config and package versions (modprefs.report.study_report, the renderer `modprefs stats` uses too)."""
    input:
        ratings="results/ratings/ratings.csv",
        judges="results/judges/ratings.csv",
        tables=["results/stats/tables/icc.csv"] + [p for p in stats_outputs() if p.endswith(".csv")],
        figures=[p for p in stats_outputs() if p.endswith(".png")],
        rater_plan="results/judges/rater_plan.csv",
        rater_plan_figure="results/judges/rater_plan.png",
        reward_tables=expand("results/reward/summary/{name}.csv", name=["runs", "pair_types", "transfer", "drift"])
        + expand(
            "results/reward/{run}/eval/{table}.csv", run=REWARD_RUNS[:1], table=["accuracy", "ood", "length_bias"]
        ),
        reward_curves=expand("results/reward/{run}/curve.png", run=REWARD_RUNS[:1]),
        coverage=if_present(COVERAGE_JSON),
        table2_null=if_present(TABLE2_NULL_JSON),
        table2_null_slopes=if_present(TABLE2_NULL_SLOPES_JSON),
        icc_null=if_present(ICC_NULL_JSON),
        alpha_null=if_present(ALPHA_NULL_JSON),
        plan=if_present(PLAN_RECOMMENDATION),
    output:
        "results/report/report.html",
    log:
        "results/logs/report/report.log",
    conda:
        "../envs/stats.yaml"
    params:
        icc_ci_method=config["stats"]["icc_ci_method"],
        table2_random=config["stats"]["table2_random"],
    script:
        "../workflow/scripts/report.py"
