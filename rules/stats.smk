localrules:
    icc_table,


rule icc_table:
    """ICC(2,1) and ICC(2,k) per modality with stats.ci_level CIs by stats.icc_ci_method (default auto: F-based on complete balanced ratings, else the crossed jackknife; Table 4's first rows)."""
    input:
        ratings="results/ratings/ratings.csv",
        participants="results/ratings/participants.csv",
        stimuli="results/study/stimuli.csv",
    output:
        csv=report(
            "results/stats/tables/icc.csv",
            caption="../workflow/report/table.rst",
            category="Tables",
            labels={"table": "icc"},
        ),
        md="results/stats/tables/icc.md",
    log:
        "results/logs/stats/icc_table.log",
    conda:
        "../envs/stats.yaml"
    params:
        n_boot=config["stats"]["n_boot"],
        ci_level=config["stats"]["ci_level"],
        ci_method=config["stats"]["icc_ci_method"],
        seed=config["seed"],
        scale=config["study"].get("scale", {}),
    script:
        "../workflow/scripts/icc_table.py"


STUDY_TABLES = dict(
    ratings="results/ratings/ratings.csv",
    trials="results/ratings/trials.csv",
    participants="results/ratings/participants.csv",
    stimuli="results/study/stimuli.csv",
    assignments="results/study/assignments.csv",
)

# Each analysis' tables and figures, as modprefs.stats.tables.analyses.OUTPUTS declares them (one declaration: the
# library writes what it declares, the rules below ask for it).
STATS_OUTPUTS = analysis_outputs()


localrules:
    table1,
    table3,
    decision_thresholds,
    table4,
    raters_needed,
    cross_modality,
    justifications,
    table2,
    modality_effects,
    table5,
    table6,


rule table1:
    """Table 1: participant demographics by condition."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["table1"]),
    log:
        "results/logs/stats/table1.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="table1",
    script:
        "../workflow/scripts/analysis.py"


rule table3:
    """Table 3 session characteristics (Fisher's exact, Mann-Whitney) and rater behaviour."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["table3"]),
    log:
        "results/logs/stats/table3.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="table3",
    script:
        "../workflow/scripts/analysis.py"


rule decision_thresholds:
    """Rating gaps on decisive vs tie trials (Mann-Whitney, rank-biserial r), Figure 2, binarisation thresholds."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["decision_thresholds"]),
    log:
        "results/logs/stats/decision_thresholds.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="decision_thresholds",
        n_boot_threshold=config["stats"]["n_boot_threshold"],
        ci_level=config["stats"]["ci_level"],
        seed=config["seed"],
        scale=config["study"].get("scale", {}),
    script:
        "../workflow/scripts/analysis.py"


rule table4:
    """Table 4: ICC(2,1), ICC(2,k), Krippendorff's alpha by modality, bootstrap CIs, permutation tests."""
    input:
        **STUDY_TABLES,
        icc="results/stats/tables/icc.csv",
    output:
        **reported(STATS_OUTPUTS["table4"]),
    log:
        "results/logs/stats/table4.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="table4",
        seed=config["seed"],
        n_perm=config["stats"]["n_perm"],
        icc_test=config["stats"]["icc_test"],
        n_boot=config["stats"]["n_boot"],
        n_boot_alpha=config["stats"]["n_boot_alpha"],
        n_perm_alpha=config["stats"]["n_perm_alpha"],
        ci_level=config["stats"]["ci_level"],
    script:
        "../workflow/scripts/analysis.py"


rule raters_needed:
    """Figure 4: ICC(2,k) by number of raters with Koo & Li bands; raters needed for .5/.75/.9."""
    input:
        icc="results/stats/tables/icc.csv",
    output:
        **reported(STATS_OUTPUTS["raters_needed"]),
    log:
        "results/logs/stats/raters_needed.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="raters_needed",
    script:
        "../workflow/scripts/analysis.py"


rule cross_modality:
    """Figure 3: agreement of per-prompt winners between modalities by threshold; binomial test."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["cross_modality"]),
    log:
        "results/logs/stats/cross_modality.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="cross_modality",
        scale=config["study"].get("scale", {}),
    script:
        "../workflow/scripts/analysis.py"


rule justifications:
    """Justification terms: TF-IDF + Porter stems, chi-square by modality, Benjamini-Hochberg (§4.3)."""
    input:
        **STUDY_TABLES,
        modality_terms=config["stats"]["modality_terms"],
    output:
        **reported(STATS_OUTPUTS["justifications"]),
    log:
        "results/logs/stats/justifications.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="justifications",
        seed=config["seed"],
        n_perm=config["stats"]["n_perm"],
    script:
        "../workflow/scripts/analysis.py"


rule table2:
    """Table 2 omnibus LMM, per-modality simple effects, practice effects on log trial duration."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["table2"]),
    log:
        "results/logs/stats/table2.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="table2",
        table2_random=config["stats"]["table2_random"],
        table2_slope_alpha=config["stats"]["table2_slope_alpha"],
        ci_level=config["stats"]["ci_level"],
        scale=config["study"].get("scale", {}),
    script:
        "../workflow/scripts/analysis.py"


rule modality_effects:
    """By-prompt modality slope (LRT), audio quality as a covariate, per-prompt ICC."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["modality_effects"]),
    log:
        "results/logs/stats/modality_effects.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="modality_effects",
        ci_level=config["stats"]["ci_level"],
        scale=config["study"].get("scale", {}),
    script:
        "../workflow/scripts/analysis.py"


rule table5:
    """Table 5: AI-human absolute error by modality (LMM), PRISM vs external annotators (paired t)."""
    input:
        **STUDY_TABLES,
        judges="results/judges/ratings.csv",
    output:
        **reported(STATS_OUTPUTS["table5"]),
    log:
        "results/logs/stats/table5.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="table5",
        judge_by_modality=config["stats"]["ai_alignment"]["judge_by_modality"],
        scale=config["study"].get("scale", {}),
    script:
        "../workflow/scripts/analysis.py"


rule table6:
    """Table 6: AI rating gap predicts per-prompt human ICC(2,1) (OLS with modality interaction, Spearman)."""
    input:
        **STUDY_TABLES,
        judges="results/judges/ratings.csv",
    output:
        **reported(STATS_OUTPUTS["table6"]),
    log:
        "results/logs/stats/table6.log",
    conda:
        "../envs/stats.yaml"
    params:
        analysis="table6",
        judge_by_modality=config["stats"]["ai_alignment"]["judge_by_modality"],
        scale=config["study"].get("scale", {}),
    script:
        "../workflow/scripts/analysis.py"
