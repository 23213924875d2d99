localrules:
    icc_table,


rule icc_table:
    """ICC(2,1) and ICC(2,k) per modality with 95 % CIs by stats.icc_ci_method (default: the crossed jackknife; Table 4's first rows)."""
    input:
        ratings="results/ratings/ratings.csv",
        participants="results/ratings/participants.csv",
        stimuli="results/study/stimuli.csv",
    output:
        csv=report("results/stats/tables/icc.csv", caption="../workflow/report/table.rst", category="Tables",
                   labels={"table": "icc"}),
        md="results/stats/tables/icc.md",
    params:
        n_boot=config["stats"]["n_boot"],
        ci_level=config["stats"]["ci_level"],
        ci_method=config["stats"]["icc_ci_method"],
        seed=config["seed"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/icc_table.log",
    script:
        "../workflow/scripts/icc_table.py"


def _tables(*names):
    """Named outputs <name>_csv / <name>_md under results/stats/tables/."""
    out = {}
    for name in names:
        out[f"{name}_csv"] = f"results/stats/tables/{name}.csv"
        out[f"{name}_md"] = f"results/stats/tables/{name}.md"
    return out


STUDY_TABLES = dict(
    ratings="results/ratings/ratings.csv",
    trials="results/ratings/trials.csv",
    participants="results/ratings/participants.csv",
    stimuli="results/study/stimuli.csv",
    assignments="results/study/assignments.csv",
)

STATS_OUTPUTS = {
    "table1": _tables("table1_demographics"),
    "table3": _tables("table3_session", "behaviour"),
    "decision_thresholds": {**_tables("thresholds_gaps", "thresholds_recommendations"),
                            "figure2_gap_cdf": "results/stats/figures/figure2_gap_cdf.png"},
    "table4": _tables("table4_reliability"),
    "raters_needed": {**_tables("raters_needed"), "figure4_icc_by_k": "results/stats/figures/figure4_icc_by_k.png"},
    "cross_modality": {**_tables("cross_modality_agreement", "cross_modality_binomial"),
                       "figure3_agreement": "results/stats/figures/figure3_agreement.png"},
    "justifications": _tables("justifications", "justifications_counts"),
    "table2": _tables("table2_lmm", "practice_effects"),
    "modality_effects": _tables("random_slope", "audio_quality", "per_prompt_icc"),
    "table5": {**_tables("table5_ai_human", "table5_clips"),
               "figure_ai_human": "results/stats/figures/figure_ai_human.png"},
    "table6": {**_tables("table6_ai_diff_icc", "table6_per_prompt"),
               "figure_ai_diff_icc": "results/stats/figures/figure_ai_diff_icc.png"},
}


def stats_outputs():
    return [path for outputs in STATS_OUTPUTS.values() for path in outputs.values()]


def reported(outputs: dict) -> dict:
    """Outputs for `snakemake --report`: figures and CSV tables flagged with report(), captioned."""
    flagged = {}
    for key, path in outputs.items():
        name = Path(path).stem
        if path.endswith(".png"):
            flagged[key] = report(path, caption=f"../workflow/report/{name}.rst", category="Figures",
                                  labels={"figure": name})
        elif path.endswith(".csv"):
            flagged[key] = report(path, caption="../workflow/report/table.rst", category="Tables",
                                  labels={"table": name})
        else:
            flagged[key] = path
    return flagged


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
    params:
        analysis="table1",
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/table1.log",
    script:
        "../workflow/scripts/analysis.py"


rule table3:
    """Table 3 session characteristics (Fisher's exact, Mann-Whitney) and rater behaviour."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["table3"]),
    params:
        analysis="table3",
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/table3.log",
    script:
        "../workflow/scripts/analysis.py"


rule decision_thresholds:
    """Rating gaps on decisive vs tie trials (Mann-Whitney, rank-biserial r), Figure 2, binarisation thresholds."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["decision_thresholds"]),
    params:
        analysis="decision_thresholds",
        n_boot_threshold=config["stats"]["n_boot_threshold"],
        seed=config["seed"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/decision_thresholds.log",
    script:
        "../workflow/scripts/analysis.py"


rule table4:
    """Table 4: ICC(2,1), ICC(2,k), Krippendorff's alpha by modality, bootstrap CIs, permutation tests."""
    input:
        **STUDY_TABLES,
        icc="results/stats/tables/icc.csv",
    output:
        **reported(STATS_OUTPUTS["table4"]),
    params:
        analysis="table4",
        seed=config["seed"],
        n_perm=config["stats"]["n_perm"],
        n_boot_alpha=config["stats"]["n_boot_alpha"],
        n_perm_alpha=config["stats"]["n_perm_alpha"],
        ci_level=config["stats"]["ci_level"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/table4.log",
    script:
        "../workflow/scripts/analysis.py"


rule raters_needed:
    """Figure 4: ICC(2,k) by number of raters with Koo & Li bands; raters needed for .5/.75/.9."""
    input:
        icc="results/stats/tables/icc.csv",
    output:
        **reported(STATS_OUTPUTS["raters_needed"]),
    params:
        analysis="raters_needed",
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/raters_needed.log",
    script:
        "../workflow/scripts/analysis.py"


rule cross_modality:
    """Figure 3: agreement of per-prompt winners between modalities by threshold; binomial test."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["cross_modality"]),
    params:
        analysis="cross_modality",
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/cross_modality.log",
    script:
        "../workflow/scripts/analysis.py"


rule justifications:
    """Justification terms: TF-IDF + Porter stems, chi-square by modality, Benjamini-Hochberg (§4.3)."""
    input:
        **STUDY_TABLES,
        modality_terms=config["stats"]["modality_terms"],
    output:
        **reported(STATS_OUTPUTS["justifications"]),
    params:
        analysis="justifications",
        modality_terms=config["stats"]["modality_terms"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/justifications.log",
    script:
        "../workflow/scripts/analysis.py"


rule table2:
    """Table 2 omnibus LMM, per-modality simple effects, practice effects on log trial duration."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["table2"]),
    params:
        analysis="table2",
        table2_random=config["stats"]["table2_random"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/table2.log",
    script:
        "../workflow/scripts/analysis.py"


rule modality_effects:
    """By-prompt modality slope (LRT), audio quality as a covariate, per-prompt ICC."""
    input:
        **STUDY_TABLES,
    output:
        **reported(STATS_OUTPUTS["modality_effects"]),
    params:
        analysis="modality_effects",
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/modality_effects.log",
    script:
        "../workflow/scripts/analysis.py"


rule table5:
    """Table 5: AI-human absolute error by modality (LMM), PRISM vs external annotators (paired t)."""
    input:
        **STUDY_TABLES,
        judges="results/judges/ratings.csv",
    output:
        **reported(STATS_OUTPUTS["table5"]),
    params:
        analysis="table5",
        judge_by_modality=config["stats"]["ai_alignment"]["judge_by_modality"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/table5.log",
    script:
        "../workflow/scripts/analysis.py"


rule table6:
    """Table 6: AI rating gap predicts per-prompt human ICC(2,1) (OLS with modality interaction, Spearman)."""
    input:
        **STUDY_TABLES,
        judges="results/judges/ratings.csv",
    output:
        **reported(STATS_OUTPUTS["table6"]),
    params:
        analysis="table6",
        judge_by_modality=config["stats"]["ai_alignment"]["judge_by_modality"],
    conda:
        "../envs/stats.yaml"
    log:
        "results/logs/stats/table6.log",
    script:
        "../workflow/scripts/analysis.py"
