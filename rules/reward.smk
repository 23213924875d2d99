# Speech reward models (SDiaReward-style Bradley-Terry): pairs -> one run per reward.runs entry ->
# evaluation per run -> a summary across runs. Logic: src/modprefs/reward; settings: the `reward:`
# section (defaults in modprefs.reward.config.DEFAULTS, so the section may be absent).

from modprefs.reward.config import PAIR_SETS, judge_ratings_path, needs_gpu, reward_config, run_settings, train_threads

REWARD = reward_config(config)
REWARD_RUNS = list(REWARD["runs"])
REWARD_PAIRS = expand("results/reward/pairs/{name}.parquet", name=PAIR_SETS)
REWARD_CACHE = "results/reward/cache"


localrules:
    reward_summary,


rule reward_pairs:
    """Preference pairs: study ratings (human and judge, text and audio), clean-vs-degraded clips, colloquial
    pairs (rule-based rewrites by default) and, with a user corpus, natural vs TTS (several voices)."""
    input:
        ratings="results/ratings/ratings.csv",
        stimuli="results/study/stimuli.csv",
        manifest="results/audio/manifest.csv",
        conversations="results/data/conversations.parquet",
        judges=[p for p in [judge_ratings_path(config)] if p],
        named=config_section_files(REWARD["pairs"], ("reward", "pairs")),  # the rewrites table, the corpus manifest
    output:
        **{name: f"results/reward/pairs/{name}.parquet" for name in PAIR_SETS},
        summary="results/reward/pairs/summary.json",
    log:
        "results/logs/reward/pairs.log",
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/reward.yaml"
    threads: 2
    resources:
        mem_mb=grown(4000),
        runtime=grown_minutes(lambda wildcards: slurm_costs.REWARD_PAIRS_S_PER_CLIP * n_clips()),
        slurm_partition=partition(0),
    params:
        pairs=REWARD["pairs"],
        judge_ratings=lambda wildcards, input: input.judges[0] if input.judges else None,
        tts=study_tts_config(),
        audio_dir="results/reward/audio",
        seed=config["seed"],
        scale=config["study"]["scale"],
    script:
        "../workflow/scripts/reward_pairs.py"


rule reward_train:
    """Train one reward model (reward.runs.{run} over reward.model / reward.train) into results/reward/{run}/."""
    input:
        pairs=REWARD_PAIRS,
    output:
        checkpoint="results/reward/{run}/model.safetensors",
        config="results/reward/{run}/config.json",
        metrics="results/reward/{run}/metrics.json",
        scores="results/reward/{run}/scores.csv",
        curve="results/reward/{run}/curve.png",
    log:
        "results/logs/reward/train_{run}.log",
    wildcard_constraints:
        run="|".join(REWARD_RUNS),
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/reward.yaml"
    # 1 for the default backbone (benchmarks/out/reward_train.json), 4 for qwen2.5-omni
    threads: lambda wildcards: train_threads(REWARD, wildcards.run)
    # SLURM (docs/cluster.md): one GPU for a large backbone (qwen2.5-omni) unless reward.train.device is cpu, on the
    # profile's gpu_partition, with docs/reward.md's host memory; the default backbone's measured time per pair
    resources:
        mem_mb=lambda wildcards, attempt: slurm_costs.grown(reward_mem_mb(wildcards), attempt),
        runtime=lambda wildcards, attempt: slurm_costs.grown(reward_train_minutes(wildcards), attempt),
        gpu=lambda wildcards: needs_gpu(REWARD, wildcards.run),
        slurm_partition=lambda wildcards: partition(needs_gpu(REWARD, wildcards.run)),
    params:
        model=reward_run_model,
        train=reward_run_train,
        cache_dir=REWARD_CACHE,
    script:
        "../workflow/scripts/reward_train.py"


rule reward_eval:
    """Accuracy (micro, by category and source, macro; ties apart) beside the baselines and, for human labels,
    the human agreement ceiling; OOD by TTS engine, drift, length bias."""
    input:
        checkpoint="results/reward/{run}/model.safetensors",
        pairs=REWARD_PAIRS,
        pairs_summary="results/reward/pairs/summary.json",
        engines=engine_manifests(),
    output:
        summary="results/reward/{run}/eval/eval.json",
        accuracy="results/reward/{run}/eval/accuracy.csv",
        ood="results/reward/{run}/eval/ood.csv",
        drift="results/reward/{run}/eval/drift.csv",
        length_bias="results/reward/{run}/eval/length_bias.csv",
        scores="results/reward/{run}/eval/scores.csv",
    log:
        "results/logs/reward/eval_{run}.log",
    wildcard_constraints:
        run="|".join(REWARD_RUNS),
    priority: REWARD_PATH_PRIORITY
    conda:
        "../envs/reward.yaml"
    threads: lambda wildcards: train_threads(REWARD, wildcards.run)
    resources:
        mem_mb=lambda wildcards, attempt: slurm_costs.grown(reward_mem_mb(wildcards), attempt),
        runtime=lambda wildcards, attempt: slurm_costs.grown(reward_eval_minutes(wildcards), attempt),
        gpu=lambda wildcards: needs_gpu(REWARD, wildcards.run),
        slurm_partition=lambda wildcards: partition(needs_gpu(REWARD, wildcards.run)),
    params:
        engines_dir=lambda wildcards, input: os.path.dirname(os.path.dirname(input.engines[0])) if input.engines else "",
        engines=[e["backend"] for e in config["tts"].get("engines", [])],
        cache_dir=REWARD_CACHE,
    script:
        "../workflow/scripts/reward_eval.py"


rule reward_summary:
    """Across runs: accuracy by pair type, cross-modal transfer (text labels -> audio labels and back), drift
    with/without centering."""
    input:
        evals=expand("results/reward/{run}/eval/eval.json", run=REWARD_RUNS),
        pairs_summary="results/reward/pairs/summary.json",
    output:
        **{
            f"{name}_{ext}": f"results/reward/summary/{name}.{ext}"
            for name in ("runs", "pair_types", "transfer", "drift")
            for ext in ("csv", "md")
        },
    log:
        "results/logs/reward/summary.log",
    conda:
        "../envs/reward.yaml"
    params:
        runs=REWARD_RUNS,
    script:
        "../workflow/scripts/reward_eval.py"
