import functools
import math
import os
import sys
from pathlib import Path

import yaml

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

min_version("9.0")

# Small-matrix numerics run 2-8x slower and erratically with several BLAS threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from modprefs.config_checks import (  # noqa: E402
    capped_option_notes,
    check_config,
    drop_unused_tts_keys,
    unset_null_keys,
    unused_option_notes,
    validate_config,
)
from modprefs.config_files import config_sources, exit_on_user_error  # noqa: E402
from modprefs.config_paths import named_files, schema_at  # noqa: E402
from modprefs.judges.startup import check_judges_at_start  # noqa: E402
from modprefs.speech.render import clip_fingerprint  # noqa: E402


# SLURM: partition(), grown(), grown_minutes(), gpu_job_threads() and modprefs.cluster as slurm_costs
include: "cluster.smk"


# The whole config, checked before any job is scheduled: every schema problem named by its dotted key
# and the file and line that set it; snakemake's own validation then fills in the schema's defaults;
# then the cross-key, file, voice/language and data-size checks (modprefs.config_checks). An error prints
# one message and exits 1, without a traceback. API judges' key, endpoint and models are checked at onstart
# (below), not here: parsing also happens for -n, --lint, --report and inside every cluster job.
with exit_on_user_error():
    # lowest precedence first: the Snakefile's config.yaml, then --configfile files, then --config
    _cli_files = [str(f) for f in workflow.config_settings.configfiles]
    _own_files = [str(f) for f in workflow.configfiles if str(f) not in _cli_files]
    CONFIG_SOURCES = config_sources([*_own_files, *_cli_files], workflow.config_settings.config)
    CONFIG_SCHEMA = yaml.safe_load((Path(workflow.basedir) / "workflow/schemas/config.schema.yaml").read_text())
    # an overlay's `key: null` unsets the key (its default applies); null stays where it is a value (tts.seed)
    unset_null_keys(config, CONFIG_SCHEMA)
    validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml", CONFIG_SOURCES)
    validate(config, schema="../workflow/schemas/config.schema.yaml")
    # keys the chosen TTS backend does not read (the shipped voice under a lab's backend: given): dropped, noted
    _dropped = drop_unused_tts_keys(config)
    if workflow.is_main_process:  # a job's own process (e.g. inside SLURM) need not read the data again
        check_config(config, ".", CONFIG_SOURCES)
        for _note in unused_option_notes(config, CONFIG_SOURCES, _dropped):
            print(_note, file=sys.stderr)
        for _note in capped_option_notes(config, CONFIG_SOURCES):
            print(_note, file=sys.stderr)


onstart:
    # Once the DAG is built and jobs are about to run (Snakemake skips onstart for -n, --lint, --report and
    # when nothing is to be done): API judges' key, endpoint and models, so a bad key stops the run before
    # any job rather than when the judge job starts. `modprefs check-judges` runs the same check on demand.
    if workflow.is_main_process:
        with exit_on_user_error():
            check_judges_at_start(config["judges"])
            stage_weights_at_start()


def stage_weights_at_start() -> None:
    """A cluster run's hub downloads (Kokoro, Qwen2.5-Omni, PRISM), made here on the submitting host before any job
    into $HF_HOME (modprefs.weights; docs/cluster.md). MODPREFS_STAGE_WEIGHTS=0 skips it (weights staged by hand)."""
    if not CLUSTER_RUN:
        return
    from modprefs.errors import UserInputError
    from modprefs.weights import hub_items, stage_in_subprocess

    items = hub_items(config)
    if not items:
        return
    if os.environ.get("MODPREFS_STAGE_WEIGHTS", "1") == "0":
        print(f"weights: not staged (MODPREFS_STAGE_WEIGHTS=0): {len(items)} hub download(s) left to the jobs")
        return
    if stage_in_subprocess(items, sys.executable) != 0:
        raise UserInputError(
            "the hub weights the jobs need could not be staged (above); `modprefs fetch-weights --dry-run` lists them"
        )


RATING_TABLES = ["ratings", "trials", "participants"]
# Once the final sample is drawn, the longest chain is judges -> reward pairs -> reward training -> evaluation
# (reward training alone is ~100 s per run on one core). Its jobs, and the small ones it waits for (stimuli,
# ratings, the other engines' clips), go first; the one-core statistics tables fill the core left free.
# Measured in benchmarks/out/default_run_compare.json.
REWARD_PATH_PRIORITY = 1
# Round 0's one-thread render shards go before their QC shards (longest jobs first): the QC of the shards
# already rendered then fills the cores while the last renders finish, instead of the last render and its QC
# running after everything else.
RENDER_FIRST_PRIORITY = 1

# --- a lab's own stimuli (data.format: pairs; modprefs.data.pairs) -----------------------------------------
PAIRS = config["data"].get("format", "prism") == "pairs"
GIVEN_AUDIO = config["tts"]["backend"] == "given"
# a lab's pool no larger than sampling.n_prompts is used whole (modprefs.sampling.draw.sample_study_prompts): no
# prompt can be replaced, so the study's prompts are the first draw whatever audio QC finds
WHOLE_POOL = False
if PAIRS:
    from modprefs.data.pairs import pool_size

    _pool = pool_size(config["data"])
    WHOLE_POOL = _pool is not None and _pool <= config["sampling"]["n_prompts"]
    if _pool is not None and _pool < config["sampling"]["n_prompts"]:
        config["sampling"]["n_prompts"] = _pool


def data_inputs() -> list[str]:
    """Files the data step reads: PRISM's JSONL; a pairs table (every file of a datasets folder) and the audio of
    audio-only sides (their ASR transcript is the text condition). Given audio with text is read by rendering."""
    source = config["data"]["source"]
    if not PAIRS:
        return [source] if source != "prism" else []
    from modprefs.data.pairs import declared_pairs_files

    return declared_pairs_files(source, ".", config["data"].get("columns"), audio_only_sides=True)


def data_outputs() -> dict:
    outputs = {"conversations": "results/data/conversations.parquet"}
    if PAIRS:  # a datasets source's audio cells, written out as files
        outputs["given_audio"] = directory("results/data/given_audio")
    return outputs


@functools.lru_cache(maxsize=None)
def _round_shard_clip_ids(prompts: str, mtime: float, attention: str | None, shard_size: int) -> list[list[str]]:
    """Each shard's clip ids for one round's prompts, as render_shard cuts them (read once per version of the
    prompts file: ``mtime`` is part of the cache key)."""
    from modprefs.speech.clips import read_study_clips, shard_bounds

    clips = read_study_clips(prompts, "results/data/conversations.parquet", attention)
    bounds, ids = shard_bounds(clips, shard_size), clips["clip_id"].tolist()
    return [ids[a:b] for a, b in zip(bounds, bounds[1:])]


def given_shard_audio(wildcards) -> list[str]:
    """The lab's audio files one render shard reads (tts.backend given, a pairs table of files): exactly the
    shard's clips', so editing one file reruns its shard and what follows, not the data step or the draw."""
    if not (GIVEN_AUDIO and PAIRS):
        return []
    if config["data"]["source"].startswith("hf://") or Path(config["data"]["source"]).is_dir():
        return ["results/data/given_audio"]  # a datasets source: its Audio cells, written out by the data step
    from modprefs.data.pairs import given_audio_files

    r = int(wildcards.round)
    if r == 0:
        prompts = checkpoints.sample_prompts.get().output.prompts
    else:
        prompts = checkpoints.audio_review.get(round=r - 1).output.replacements
    attention = config["attention_check"] if r == 0 else None
    files = given_audio_files(config["data"]["source"], ".", config["data"].get("columns"))
    shards = _round_shard_clip_ids(prompts, os.path.getmtime(prompts), attention, config["tts"]["shard_size"])
    shard = shards[int(wildcards.shard)] if int(wildcards.shard) < len(shards) else []  # past the end: empty
    return [files[c] for c in shard if c in files]


localrules:
    all,


def tracked_clips(manifests) -> str:
    """The clip-fingerprint param of the rules that read clips, in local runs; a constant on a cluster.

    Snakemake records a job's params as evaluated when the DAG is built. Locally it evaluates them again
    just before the job runs (after the WAVs exist); a cluster executor (SLURM) keeps the DAG-time value,
    "pending", so the next run would see a changed param and redo QC and everything after it. On a cluster
    a clip damaged after rendering is therefore not noticed by the DAG: `--forcerun audio_qc` checks
    every clip again (docs/cluster.md).
    """
    if workflow.remote_exec or not workflow.local_exec:
        return "not tracked on a cluster executor"
    return clip_fingerprint(manifests)


def n_clips() -> int:
    """Clips rendered for the study: two per prompt plus the attention check's two."""
    return 2 * config["sampling"]["n_prompts"] + 2


def speech_shards() -> list[int]:
    return list(range(math.ceil(n_clips() / config["tts"]["shard_size"])))


#: Threads a speech job (Kokoro, Piper, Whisper, DNSMOS) takes at most: a second thread makes one of them 1.6-1.7x
#: as fast, not 2x (benchmarks/out/tts_profile.json), and their outputs are bit-identical at any thread count.
SPEECH_MAX_THREADS = 2


def side_by_side_threads(n_jobs: int, most: int = SPEECH_MAX_THREADS) -> int:
    """Threads for each of ``n_jobs`` like jobs that could run side by side: the cores split among them (1..most).

    On 2 cores two one-thread jobs finish in about 0.8x the time of the same two jobs one after the other with
    2 threads each (Kokoro and Whisper: ~1.65x from a second thread), and a job alone in its round keeps
    both cores. Local runs only: on a cluster each job has its own CPUs. Only for kernels whose results do not
    depend on the thread count (onnxruntime, CTranslate2):
    the local judge's torch model gives other scores with another count, so it keeps its fixed ``threads``
    (and so do the jobs that run beside it: a one-thread job there holds a core while the judge waits for two).
    """
    if not workflow.local_exec:  # a cluster executor: every job gets its own allocation of `most` CPUs
        return most
    try:
        cores = workflow.cores or most
    except WorkflowError:  # no --cores given
        cores = most
    return max(1, min(most, int(cores) // max(1, int(n_jobs))))


def study_tts_config() -> dict:
    """The study rendition's tts settings (without the other engines, so adding one reruns nothing here)."""
    return {k: v for k, v in config["tts"].items() if k != "engines"}


def config_section_files(section, pattern: tuple) -> list[str]:
    """The local files a config section's path keys name (modprefs.config_paths): inputs of the rule reading it."""
    return named_files(section, schema_at(CONFIG_SCHEMA, pattern))


def engine_config(engine: str) -> dict:
    """The tts config of another engine: its entry in tts.engines (backend = the engine's name)."""
    for entry in config["tts"].get("engines", []):
        if entry["backend"] == engine:
            return {**entry}
    raise ValueError(f"tts.engines has no engine {engine!r}")


def engine_shard_manifests(engine: str) -> list[str]:
    return [f"results/audio/engines/{engine}/shards/{shard}.csv" for shard in speech_shards()]


def engine_manifests() -> list[str]:
    return [f"results/audio/engines/{e['backend']}/manifest.csv" for e in config["tts"].get("engines", [])]


# --- audio-QC review rounds (rules/speech.smk; modprefs.sampling.audio_review) -----------------
# Round 0 renders the first draw; the checkpoint `audio_review` of round r writes the prompts that
# replace round r's failures, which round r + 1 renders. The walk below asks each round's checkpoint
# in turn, so Snakemake re-evaluates the DAG after every review.


def _csv_rows(path) -> int:
    import pandas as pd

    return len(pd.read_csv(path))


def round_prompts(round_) -> str:
    """The prompts a round renders: the first draw, or the previous review's replacements."""
    r = int(round_)
    return "results/sampling/prompts.csv" if r == 0 else f"results/audio/review/round{r - 1}/replacements.csv"


def round_shards(round_) -> list[int]:
    """Shard indices of one round (round 0: known from the config; later: after the previous review)."""
    r = int(round_)
    if r == 0:
        return speech_shards()
    replacements = checkpoints.audio_review.get(round=r - 1).output.replacements
    return list(range(math.ceil(2 * _csv_rows(replacements) / config["tts"]["shard_size"])))


def shard_manifest(round_, shard) -> str:
    """The manifest render_shard writes for one shard of one round (the WAVs it rendered)."""
    return f"results/audio/rounds/{int(round_)}/shards/{int(shard)}.csv"


def round_files(round_, kind: str) -> list[str]:
    """A round's shard manifests (kind "shards") or shard QC tables (kind "qc")."""
    return [f"results/audio/rounds/{int(round_)}/{kind}/{s}.csv" for s in round_shards(round_)]


def used_before(round_) -> list[str]:
    """Files naming every conversation drawn or removed before this round (never drawn again)."""
    files = ["results/sampling/prompts.csv", "results/sampling/screening_removals.csv"]
    for r in range(int(round_)):
        files += [f"results/audio/review/round{r}/replacements.csv", f"results/audio/review/round{r}/removals.csv"]
    return files


def review_rounds() -> int:
    """How many rounds were reviewed: walk the checkpoints until a review replaces nothing."""
    r = 0
    while _csv_rows(checkpoints.audio_review.get(round=r).output.replacements):
        r += 1
    return r + 1


def review_files(kind: str) -> list[str]:
    return [f"results/audio/review/round{r}/{kind}.csv" for r in range(review_rounds())]


def all_round_files(kind: str) -> list[str]:
    return [f for r in range(review_rounds()) for f in round_files(r, kind)]


# --- synthetic judges (rules/judges.smk) ---------------------------------------------------------
JUDGE_MODALITIES = ["text", "audio"]


wildcard_constraints:
    modality="text|audio",


def judge_inputs(wildcards) -> dict:
    """A modality's judge inputs: the audio judge also reads the clips (so a voice change reruns it). The text judge
    of a pool used whole reads the first draw, which no audio changes (every item; judges_table keeps the final
    study's), so that an edited clip reruns what reads audio and not the text judge."""
    text_of_whole_pool = wildcards.modality == "text" and WHOLE_POOL
    inputs = {
        "conversations": "results/data/conversations.parquet",
        "prompts": "results/sampling/prompts.csv" if text_of_whole_pool else "results/sampling/final_prompts.csv",
        "attention_check": config["attention_check"],
        "named": config_section_files(config["judges"], ("judges",)),  # a local model, prompt folder, ASR model
    }
    if wildcards.modality == "audio":
        inputs["manifest"] = "results/audio/manifest.csv"
    return inputs


def judge_allocation_input(wildcards) -> list:
    """The judges' table when study.allocation is judges (their rater plan sets the raters per prompt), else none."""
    return ["results/judges/ratings.csv"] if config["study"].get("allocation") == "judges" else []


def judge_seconds(wildcards) -> float:
    """Measured cost of one modality's offline judge: its model loads and one rating per clip."""
    load_s, per_clip_s = slurm_costs.JUDGE_COSTS[wildcards.modality]
    return load_s + per_clip_s * n_clips()


def if_present(path):
    """[path] when the file exists at parse time, else [] (an optional input: a benchmark result, the plan)."""
    return [path] if os.path.isfile(path) else []


# --- statistics outputs (rules/stats.smk, rules/report.smk) -------------------------------------------------
def _tables(*names):
    """Named outputs <name>_csv / <name>_md under results/stats/tables/."""
    out = {}
    for name in names:
        out[f"{name}_csv"] = f"results/stats/tables/{name}.csv"
        out[f"{name}_md"] = f"results/stats/tables/{name}.md"
    return out


def analysis_outputs():
    """Analysis -> {output name: path}: its tables (CSV + Markdown) and figures (PNG), from the library."""
    from modprefs.stats.tables.catalog import OUTPUTS

    return {
        name: {**_tables(*tables), **{f: f"results/stats/figures/{f}.png" for f in figures}}
        for name, (tables, figures) in OUTPUTS.items()
    }


def stats_outputs():
    return [path for outputs in STATS_OUTPUTS.values() for path in outputs.values()]


def reported(outputs: dict) -> dict:
    """Outputs for `snakemake --report`: figures and CSV tables flagged with report(), captioned."""
    flagged = {}
    for key, path in outputs.items():
        name = Path(path).stem
        if path.endswith(".png"):
            flagged[key] = report(
                path, caption=f"../workflow/report/{name}.rst", category="Figures", labels={"figure": name}
            )
        elif path.endswith(".csv"):
            flagged[key] = report(
                path, caption="../workflow/report/table.rst", category="Tables", labels={"table": name}
            )
        else:
            flagged[key] = path
    return flagged


# --- reward models (rules/reward.smk; REWARD is set there) ----------------------------------------------------
def reward_run_model(wildcards):
    return run_settings(REWARD, wildcards.run, config["seed"])[0]


def reward_run_train(wildcards):
    return run_settings(REWARD, wildcards.run, config["seed"])[1]


# the optional `plan` target's options (rules/plan.smk); it plans for the ICC-difference test and the ICC interval
# (method and level) the analysis uses
PLAN = {
    "icc_test": config["stats"]["icc_test"],
    "ci_method": config["stats"]["icc_ci_method"],
    "ci_level": config["stats"]["ci_level"],
    **(config.get("plan") or {}),
}


def plan_inputs(wildcards):
    """The pilot's files when the plan is fitted to a pilot (so a changed pilot reruns the plan)."""
    if not PLAN.get("pilot"):
        return []
    from modprefs.ratings.sources import source_files

    files = [str(f) for f in source_files(PLAN["pilot"])]
    return files + ([PLAN["pilot_clips"]] if PLAN.get("pilot_clips") else [])


#: characters per clip assumed when a shard's texts cannot be read (they always can once its job exists)
_FALLBACK_CHARS = 2000


@functools.lru_cache(maxsize=None)
def _shard_chars(prompts: str, mtime: float, attention: str | None, shard_size: int, balanced: bool) -> list:
    """Characters of each clip, per shard, as render_shard (balanced) or render_engine_shard cuts a prompts file."""
    from modprefs.speech.clips import read_study_clips, shard_bounds

    clips = read_study_clips(prompts, "results/data/conversations.parquet", attention)
    chars = clips["text"].fillna("").astype(str).str.len().tolist()
    if balanced:
        bounds = shard_bounds(clips, shard_size)
    else:
        bounds = list(range(0, len(chars), shard_size)) + [len(chars)]
    return [chars[a:b] for a, b in zip(bounds, bounds[1:])]


def shard_chars(prompts: str, attention: str | None, shard, balanced: bool = True) -> list[int]:
    try:
        shards = _shard_chars(prompts, os.path.getmtime(prompts), attention, config["tts"]["shard_size"], balanced)
    except (OSError, ValueError, KeyError):
        return [_FALLBACK_CHARS] * config["tts"]["shard_size"]
    return shards[int(shard)] if int(shard) < len(shards) else []


def _tts_cost(tts: dict) -> "slurm_costs.TtsCost":
    backend = tts["backend"]
    if backend == "kokoro" and tts_gpus(tts):  # on a GPU: bounded by the int8 model on 2 CPU threads
        return slurm_costs.KOKORO_GPU_BOUND
    return slurm_costs.TTS_COSTS.get(backend, slurm_costs.TTS_COSTS["kokoro-onnx"])


def tts_gpus(tts: dict) -> int:
    """1 for the torch Kokoro pipeline unless its device is cpu (SLURM: the GPU partition, --gpus=1)."""
    return int(tts["backend"] == "kokoro" and str(tts.get("device", "auto")) != "cpu")


def render_seconds(wildcards) -> float:
    """Measured rendering cost of one shard of a round: its clips' characters at the backend's speed."""
    r = int(wildcards.round)
    attention = config["attention_check"] if r == 0 else None
    return _tts_cost(study_tts_config()).seconds(shard_chars(round_prompts(r), attention, wildcards.shard))


def qc_seconds(wildcards) -> float:
    """Measured QC cost of one shard: its clips' audio seconds (from the manifest once rendered) at ASR/DNSMOS speed."""
    manifest = shard_manifest(wildcards.round, wildcards.shard)
    try:
        import pandas as pd

        audio = pd.read_csv(manifest)["duration_s"].astype(float).tolist()
    except (OSError, ValueError, KeyError):
        r = int(wildcards.round)
        attention = config["attention_check"] if r == 0 else None
        chars = shard_chars(round_prompts(r), attention, wildcards.shard)
        audio = [c * slurm_costs.AUDIO_S_PER_CHAR for c in chars]
    qc = config["audio_qc"]
    return slurm_costs.QC_COSTS.seconds(audio, asr=bool(qc.get("asr", True)), dnsmos=bool(qc.get("dnsmos", True)))


def engine_seconds(wildcards) -> float:
    """Measured rendering cost of one other engine's shard (shard_size clips of the final prompts, in order)."""
    chars = shard_chars(
        "results/sampling/final_prompts.csv", config["attention_check"], wildcards.shard, balanced=False
    )
    return _tts_cost(engine_config(wildcards.engine)).seconds(chars)


def render_mem_mb(tts: dict) -> int:
    """Host memory of a rendering job: torch's Kokoro pipeline (and the CUDA libraries on a GPU) needs more."""
    if tts["backend"] == "kokoro":
        return 6000 if tts_gpus(tts) else 4000
    return 2000


def render_threads(wildcards) -> int:
    """render_shard's threads: a round's shards share the cores locally; a GPU shard fills a group layer (below)."""
    return gpu_job_threads(tts_gpus(study_tts_config()), side_by_side_threads(len(round_shards(wildcards.round))))


# --- reward runs' resources (REWARD is set in rules/reward.smk) ---------------------------------------------------
def _reward_pairs_count() -> int:
    """Pairs the reward runs train and evaluate on (row counts of the pair files; they exist when a run starts)."""
    try:
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(p).metadata.num_rows for p in REWARD_PAIRS if os.path.exists(p))
    except Exception:  # unreadable: the estimate below
        return 0


def _reward_backbone(wildcards) -> dict:
    return run_settings(REWARD, wildcards.run, config["seed"])[0]["backbone"]


def _is_qwen(wildcards) -> bool:
    return _reward_backbone(wildcards).get("name") == "qwen2.5-omni"


def reward_mem_mb(wildcards) -> int:
    """Host memory: docs/reward.md's table for Qwen2.5-Omni (modprefs.cluster.qwen_host_mem_mb), 4 GB otherwise."""
    return slurm_costs.qwen_host_mem_mb(_reward_backbone(wildcards)) if _is_qwen(wildcards) else 4000


def _n_pairs() -> int:
    # before the pairs exist (never at submission): 8 pairs per prompt, about what the default pair sets make
    return _reward_pairs_count() or 8 * config["sampling"]["n_prompts"]


def reward_train_minutes(wildcards) -> int:
    if _is_qwen(wildcards):
        return slurm_costs.QWEN_TRAIN_MINUTES
    train = run_settings(REWARD, wildcards.run, config["seed"])[1]
    work = slurm_costs.REWARD_COSTS.train_seconds(
        _n_pairs(), int(train.get("epochs", 20)), float(train.get("val_fraction", 0.25))
    )
    return slurm_costs.minutes(work)


def reward_eval_minutes(wildcards) -> int:
    if _is_qwen(wildcards):
        return slurm_costs.QWEN_EVAL_MINUTES
    n_engine_clips = n_clips() * len(config["tts"].get("engines", []))
    return slurm_costs.minutes(slurm_costs.REWARD_COSTS.eval_seconds(_n_pairs() + n_engine_clips))
