localrules:
    icc_table,


rule icc_table:
    """ICC(2,1) and ICC(2,k) per modality with stimulus-bootstrap CIs (Table 4's first rows)."""
    input:
        ratings="results/ratings/ratings.csv",
        participants="results/ratings/participants.csv",
        stimuli="results/study/stimuli.csv",
    output:
        csv="results/stats/tables/icc.csv",
        md="results/stats/tables/icc.md",
    params:
        n_boot=config["stats"]["n_boot"],
        ci_level=config["stats"]["ci_level"],
        seed=config["seed"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/icc_table.log",
    script:
        "../workflow/scripts/icc_table.py"
