wildcard_constraints:
    round=r"\d+",
    shard=r"\d+",


localrules:
    audio_review,


rule render_shard:
    """Render one shard of one round's clips (model loaded once per job) to results/audio/clips/.

    Round 0 renders the first draw and the attention check; round r > 0 renders the prompts that
    replaced those whose audio failed QC in round r - 1. The manifest lists the WAVs; the shard's QC
    takes their fingerprint as a param, so a clip changed or damaged afterwards reruns its QC.
    """
    input:
        prompts=lambda wildcards: round_prompts(wildcards.round),
        conversations="results/data/conversations.parquet",
        attention_check=config["attention_check"],
        given_audio=given_shard_audio,
        named=config_section_files(study_tts_config(), ("tts",)),  # local model, voices, espeak files
    output:
        manifest="results/audio/rounds/{round}/shards/{shard}.csv",
    log:
        "results/logs/speech/render_round{round}_shard{shard}.log",
    priority: RENDER_FIRST_PRIORITY
    conda:
        "../envs/tts.yaml"
    threads: render_threads
    # SLURM (docs/cluster.md): the shard's characters at the backend's measured speed; the torch Kokoro pipeline
    # (unless tts.device is cpu) asks for one GPU and goes to the profile's gpu_partition
    resources:
        mem_mb=grown(render_mem_mb(study_tts_config())),
        runtime=grown_minutes(render_seconds),
        gpu=tts_gpus(study_tts_config()),
        slurm_partition=partition(tts_gpus(study_tts_config())),
    params:
        tts=study_tts_config(),
        shard_size=config["tts"]["shard_size"],
        balanced=True,  # shards of about equal text length (modprefs.speech.clips.shard)
        clip_dir="results/audio/clips",
        with_attention_check=lambda wildcards: int(wildcards.round) == 0,
        inject_silence=config["audio_qc"].get("inject_silence", []),
        level=config.get("audio", {}),
    script:
        "../workflow/scripts/render_shard.py"


rule audio_qc:
    """Per-clip QC of one shard: round-trip WER (faster-whisper), DNSMOS, level, silences, speaking rate.

    `clips` fingerprints the shard's WAVs (modprefs.speech.render.clip_fingerprint): in a local run a clip
    changed after rendering reruns this QC, which fails an unreadable clip (reason `unreadable`) so the
    review replaces it. Not on a cluster executor (see tracked_clips in rules/common.smk).
    """
    input:
        manifest="results/audio/rounds/{round}/shards/{shard}.csv",
    output:
        "results/audio/rounds/{round}/qc/{shard}.csv",
    log:
        "results/logs/speech/audio_qc_round{round}_shard{shard}.log",
    conda:
        "../envs/tts.yaml"
    threads: lambda wildcards: side_by_side_threads(len(round_shards(wildcards.round)))
    resources:
        mem_mb=grown(2000),
        runtime=grown_minutes(qc_seconds),  # the shard's audio at the measured ASR and DNSMOS speeds
        slurm_partition=partition(0),
    params:
        qc={k: v for k, v in config["audio_qc"].items() if k in ("asr", "dnsmos", "thresholds", "wer_min_words")},
        backend=config["tts"]["backend"],  # a lab's given audio has defaults of its own (qc.default_thresholds)
        # by name, not via `input`: Snakemake does not compare params derived from input
        clips=lambda wildcards: tracked_clips(shard_manifest(wildcards.round, wildcards.shard)),
    script:
        "../workflow/scripts/audio_qc.py"


checkpoint audio_review:
    """Review one round's QC: prompts with a failing clip are replaced from their stratum (bounded rounds)."""
    input:
        prompts=lambda wildcards: round_prompts(wildcards.round),
        shards=lambda wildcards: round_files(wildcards.round, "shards"),
        qc=lambda wildcards: round_files(wildcards.round, "qc"),
        conversations="results/data/conversations.parquet",
        harmful_terms=config["sampling"]["screening"]["harmful_terms"],
        language_ids="results/sampling/language_ids.csv",
        used=lambda wildcards: used_before(wildcards.round),
    output:
        decisions="results/audio/review/round{round}/decisions.csv",
        replacements="results/audio/review/round{round}/replacements.csv",
        removals="results/audio/review/round{round}/removals.csv",
    log:
        "results/logs/speech/audio_review_round{round}.log",
    conda:
        "../envs/data.yaml"
    params:
        sampling=config["sampling"],
        seed=config["seed"],
        max_rounds=config["audio_qc"]["max_rounds"],
        on_exhausted=config["audio_qc"]["on_exhausted"],
    script:
        "../workflow/scripts/audio_review.py"


rule audio_manifest:
    """The final clips (every review round joined) -> results/audio/manifest.csv; all QC -> qc.csv."""
    input:
        prompts="results/sampling/final_prompts.csv",
        attention_check=config["attention_check"],
        shards=lambda wildcards: all_round_files("shards"),
        qc=lambda wildcards: all_round_files("qc"),
    output:
        manifest="results/audio/manifest.csv",
        qc="results/audio/qc.csv",
    log:
        "results/logs/speech/audio_manifest.log",
    conda:
        "../envs/tts.yaml"
    script:
        "../workflow/scripts/audio_manifest.py"


rule render_engine_shard:
    """The final clips rendered by another TTS engine (out-of-distribution evaluation of reward models)."""
    input:
        prompts="results/sampling/final_prompts.csv",
        conversations="results/data/conversations.parquet",
        attention_check=config["attention_check"],
        named=lambda wildcards: config_section_files(engine_config(wildcards.engine), ("tts", "engines", "*")),
    output:
        manifest="results/audio/engines/{engine}/shards/{shard}.csv",
    log:
        "results/logs/speech/render_{engine}_shard_{shard}.log",
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/tts.yaml"
    # two: a one-thread job beside the 2-thread judges would starve them
    threads: lambda wildcards: gpu_job_threads(tts_gpus(engine_config(wildcards.engine)), SPEECH_MAX_THREADS)
    resources:
        mem_mb=lambda wildcards, attempt: slurm_costs.grown(render_mem_mb(engine_config(wildcards.engine)), attempt),
        runtime=grown_minutes(engine_seconds),
        gpu=lambda wildcards: tts_gpus(engine_config(wildcards.engine)),
        slurm_partition=lambda wildcards: partition(tts_gpus(engine_config(wildcards.engine))),
    params:
        tts=lambda wildcards: engine_config(wildcards.engine),
        shard_size=config["tts"]["shard_size"],
        balanced=False,  # shard_size clips each: piper's and espeak-ng's renditions depend on the clips before them
        clip_dir=lambda wildcards: f"results/audio/engines/{wildcards.engine}",
        with_attention_check=True,
        inject_silence=[],
        level=config.get("audio", {}),
    script:
        "../workflow/scripts/render_shard.py"


rule engine_manifest:
    """One manifest per other engine: results/audio/engines/{engine}/manifest.csv (every clip checked readable)."""
    input:
        shards=lambda wildcards: engine_shard_manifests(wildcards.engine),
    output:
        "results/audio/engines/{engine}/manifest.csv",
    log:
        "results/logs/speech/engine_manifest_{engine}.log",
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/tts.yaml"
    params:
        clips=lambda wildcards: tracked_clips(engine_shard_manifests(wildcards.engine)),  # see audio_qc
    script:
        "../workflow/scripts/engine_manifest.py"
