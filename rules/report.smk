localrules:
    report,


# The ICC coverage measured by benchmarks/icc_coverage.py and Table 2's null rejection rates
# (benchmarks/table2_null.py), named relative to the working directory: an
# absolute path in params would make a moved checkout rerun the report. As an input (when present), a
# new measurement reruns the report.
COVERAGE_JSON = os.path.relpath(Path(workflow.basedir) / "benchmarks/out/icc_coverage.json")
TABLE2_NULL_JSON = os.path.relpath(Path(workflow.basedir) / "benchmarks/out/table2_null.json")


rule report:
    """results/report/report.html: every table and figure, the run's config and package versions."""
    input:
        ratings="results/ratings/ratings.csv",
        judges="results/judges/ratings.csv",
        tables=["results/stats/tables/icc.csv"]
        + [p for p in stats_outputs() if p.endswith(".csv")]
        + ["results/judges/rater_plan.csv"],
        figures=[p for p in stats_outputs() if p.endswith(".png")] + ["results/judges/rater_plan.png"],
        reward_tables=expand("results/reward/summary/{name}.csv", name=["runs", "pair_types", "transfer", "drift"])
        + expand(
            "results/reward/{run}/eval/{table}.csv", run=REWARD_RUNS[:1], table=["accuracy", "ood", "length_bias"]
        ),
        reward_curves=expand("results/reward/{run}/curve.png", run=REWARD_RUNS[:1]),
        coverage=[COVERAGE_JSON] if os.path.isfile(COVERAGE_JSON) else [],
        table2_null=[TABLE2_NULL_JSON] if os.path.isfile(TABLE2_NULL_JSON) else [],
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
