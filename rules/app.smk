# The annotation web app (docs/app.md): collect real ratings with the paper's protocol.
# Not part of `rule all`; run on demand:
#   snakemake --cores 1 app_load                            # study design + audio -> the app's database
#   modprefs app serve --db sqlite:///results/app/study.db  # participants take part (docs/app.md)
#   snakemake --cores 1 app_export --forcerun app_export    # collected data -> results/app/export/
# To analyse the collected ratings, set `ratings: {source: results/app/export}` in the config: the
# ingest rule then validates and copies them (and asks for app_export, which it finds here).
# The database: $MODPREFS_APP_DB (default sqlite:///results/app/study.db; postgresql://... works too).
# Both rules call the `modprefs app` command (modprefs.app.cli).

from snakemake.settings.types import DeploymentMethod

APP_DB = os.environ.get("MODPREFS_APP_DB", "sqlite:///results/app/study.db")
APP_EXPORT_TABLES = ["ratings", "trials", "participants", "sessions", "events", "incidents"]
# With --use-conda the rules' own environment (envs/app.yaml) runs the command: its `python`; otherwise the
# interpreter running Snakemake (which may not be the `python` on PATH).
_APP_PYTHON = "python" if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method else sys.executable
APP_CLI = f"PYTHONPATH={Path(workflow.basedir) / 'src'}${{PYTHONPATH:+:$PYTHONPATH}} {_APP_PYTHON} -m modprefs.cli app"


localrules:
    app_load,
    app_export,


rule app_load:
    """Load assignments, stimuli, conversations and the audio manifest into the app's database, with the run's
    merged config (results/config.yaml): study.scale for the sliders, study.stopping for the live statistics and
    the stopping rule, and stats/seed for how the live ICC is computed.

    A study already there is replaced; a database holding participants' data is refused (export first).
    """
    input:
        assignments="results/study/assignments.csv",
        stimuli="results/study/stimuli.csv",
        prompts="results/sampling/final_prompts.csv",
        conversations="results/data/conversations.parquet",
        manifest="results/audio/manifest.csv",
        attention=config["attention_check"],
        run_config="results/config.yaml",
    output:
        "results/app/loaded.json",
    log:
        "results/logs/app/app_load.log",
    conda:
        "../envs/app.yaml"
    params:
        db=APP_DB,
        cli=APP_CLI,
    shell:
        "{params.cli} load --db {params.db:q} --assignments {input.assignments:q} --stimuli {input.stimuli:q}"
        " --prompts {input.prompts:q} --conversations {input.conversations:q} --manifest {input.manifest:q}"
        " --attention-check {input.attention:q} --base-dir . --configfile {input.run_config:q} --replace"
        " --summary {output:q} > {log:q} 2>&1"


rule app_export:
    """The collected data in the ratings schemas (validated against the stimuli), plus sessions and events."""
    input:
        loaded="results/app/loaded.json",
        stimuli="results/study/stimuli.csv",
    output:
        expand("results/app/export/{table}.csv", table=APP_EXPORT_TABLES),
    log:
        "results/logs/app/app_export.log",
    conda:
        "../envs/app.yaml"
    params:
        db=APP_DB,
        cli=APP_CLI,
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.cli} export --db {params.db:q} --out {params.out:q} --validate {input.stimuli:q} > {log:q} 2>&1"
