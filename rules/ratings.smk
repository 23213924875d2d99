if config["ratings"]["source"] == "simulate":

    rule simulate_ratings:
        """A simulated rater panel from a crossed random-effects model calibrated to the paper."""
        input:
            stimuli="results/study/stimuli.csv",
            assignments="results/study/assignments.csv",
        output:
            expand("results/ratings/{table}.csv", table=RATING_TABLES),
            truth="results/ratings/simulation_truth.csv",
        log:
            "results/logs/ratings/simulate_ratings.log",
        priority: REWARD_PATH_PRIORITY
        conda:
            "../envs/stats.yaml"
        resources:
            mem_mb=grown(4000),
        params:
            simulation=config["ratings"].get("simulation", {}),
            seed=config["seed"],
            scale=config["study"].get("scale", {}),
        script:
            "../workflow/scripts/simulate_ratings.py"

else:
    from modprefs.ratings.sources import source_files  # noqa: E402

    rule ingest_ratings:
        """Validate a ratings source (a folder, one table in long or wide format, Parquet, a datasets folder,
        hf://owner/name; ratings.columns maps foreign names) into results/ratings/."""
        input:
            # every file the source reads (a hub id reads none: its params are the input)
            source=[str(p) for p in source_files(config["ratings"]["source"])],
            stimuli="results/study/stimuli.csv",
            assignments="results/study/assignments.csv",
        output:
            expand("results/ratings/{table}.csv", table=RATING_TABLES),
        log:
            "results/logs/ratings/ingest_ratings.log",
        priority: REWARD_PATH_PRIORITY
        conda:
            "../envs/stats.yaml"
        params:
            source=config["ratings"]["source"],
            columns=config["ratings"].get("columns", {}),
            scale=config["study"].get("scale", {}),
        script:
            "../workflow/scripts/ingest_ratings.py"
