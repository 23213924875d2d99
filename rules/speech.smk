rule render_shard:
    """Render one shard of study clips (model loaded once per job) to results/audio/clips/."""
    input:
        prompts="results/sampling/prompts.csv",
        conversations="results/data/conversations.parquet",
        attention_check=config["attention_check"],
    output:
        manifest="results/audio/shards/{shard}.csv",
    params:
        tts=study_tts_config(),
        shard_size=config["tts"]["shard_size"],
        clip_dir="results/audio/clips",
    threads: 2
    resources:
        mem_mb=2000,
        runtime=60,
        # one GPU for the torch Kokoro pipeline unless tts.device is cpu (SLURM: --gpus=1; docs/cluster.md)
        gpu=int(config["tts"]["backend"] == "kokoro" and str(config["tts"].get("device", "auto")) != "cpu"),
    conda:
        "../envs/tts.yaml"
    log:
        "results/logs/speech/render_shard_{shard}.log",
    script:
        "../workflow/scripts/render_shard.py"


rule audio_qc:
    """Per-clip QC of one shard: round-trip WER (faster-whisper), DNSMOS, level, silences, speaking rate."""
    input:
        manifest="results/audio/shards/{shard}.csv",
    output:
        "results/audio/qc/{shard}.csv",
    params:
        qc=config["audio_qc"],
    threads: 2
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/tts.yaml"
    log:
        "results/logs/speech/audio_qc_{shard}.log",
    script:
        "../workflow/scripts/audio_qc.py"


rule audio_manifest:
    """Concatenate the shard manifests and their QC into results/audio/manifest.csv and qc.csv."""
    input:
        shards=expand("results/audio/shards/{shard}.csv", shard=speech_shards()),
        qc=expand("results/audio/qc/{shard}.csv", shard=speech_shards()),
    output:
        manifest="results/audio/manifest.csv",
        qc="results/audio/qc.csv",
    conda:
        "../envs/tts.yaml"
    log:
        "results/logs/speech/audio_manifest.log",
    script:
        "../workflow/scripts/audio_manifest.py"


rule render_engine_shard:
    """The same clips rendered by another TTS engine (out-of-distribution evaluation of reward models)."""
    input:
        prompts="results/sampling/prompts.csv",
        conversations="results/data/conversations.parquet",
        attention_check=config["attention_check"],
    output:
        manifest="results/audio/engines/{engine}/shards/{shard}.csv",
    params:
        tts=lambda wildcards: engine_config(wildcards.engine),
        shard_size=config["tts"]["shard_size"],
        clip_dir=lambda wildcards: f"results/audio/engines/{wildcards.engine}",
    threads: 2
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/tts.yaml"
    log:
        "results/logs/speech/render_{engine}_shard_{shard}.log",
    script:
        "../workflow/scripts/render_shard.py"


rule engine_manifest:
    """One manifest per other engine: results/audio/engines/{engine}/manifest.csv."""
    input:
        lambda wildcards: expand("results/audio/engines/{engine}/shards/{shard}.csv", engine=wildcards.engine,
                                 shard=speech_shards()),
    output:
        "results/audio/engines/{engine}/manifest.csv",
    conda:
        "../envs/tts.yaml"
    log:
        "results/logs/speech/engine_manifest_{engine}.log",
    script:
        "../workflow/scripts/engine_manifest.py"
