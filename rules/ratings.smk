if config["ratings"]["source"] == "simulate":

    rule simulate_ratings:
        """A simulated rater panel from a crossed random-effects model calibrated to the paper."""
        input:
            stimuli="results/study/stimuli.csv",
            assignments="results/study/assignments.csv",
        output:
            expand("results/ratings/{table}.csv", table=RATING_TABLES),
            truth="results/ratings/simulation_truth.csv",
        params:
            simulation=config["ratings"].get("simulation", {}),
            seed=config["seed"],
        conda:
            "../envs/stats.yaml"
        log:
            "results/logs/ratings/simulate_ratings.log",
        script:
            "../workflow/scripts/simulate_ratings.py"

else:

    rule ingest_ratings:
        """Validate ratings collected elsewhere and copy them into results/ratings/."""
        input:
            ratings=Path(config["ratings"]["source"]) / "ratings.csv",
            trials=Path(config["ratings"]["source"]) / "trials.csv",
            participants=Path(config["ratings"]["source"]) / "participants.csv",
            stimuli="results/study/stimuli.csv",
        output:
            expand("results/ratings/{table}.csv", table=RATING_TABLES),
        conda:
            "../envs/stats.yaml"
        log:
            "results/logs/ratings/ingest_ratings.log",
        script:
            "../workflow/scripts/ingest_ratings.py"
