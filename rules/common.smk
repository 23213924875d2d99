import math
import os
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")

# Small-matrix numerics run 2-8x slower and erratically with several BLAS threads (DESIGN.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The library lives in src/; make it importable for `script:` jobs without an install.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from modprefs.config_checks import check_config, validate_config  # noqa: E402

# Every schema problem, named by its dotted key, before any job is scheduled; then
# snakemake's own validation fills in the schema's defaults.
validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")
validate(config, schema="../workflow/schemas/config.schema.yaml")
check_config(config)

RATING_TABLES = ["ratings", "trials", "participants"]


localrules:
    all,


def n_clips() -> int:
    """Clips rendered for the study: two per prompt plus the attention check's two."""
    return 2 * config["sampling"]["n_prompts"] + 2


def speech_shards() -> list[int]:
    return list(range(math.ceil(n_clips() / config["tts"]["shard_size"])))


def study_tts_config() -> dict:
    """The study rendition's tts settings (without the other engines, so adding one reruns nothing here)."""
    return {k: v for k, v in config["tts"].items() if k != "engines"}


def engine_config(engine: str) -> dict:
    """The tts config of another engine: its entry in tts.engines (backend = the engine's name)."""
    for entry in config["tts"].get("engines", []):
        if entry["backend"] == engine:
            return {**entry}
    raise ValueError(f"tts.engines has no engine {engine!r}")


def engine_manifests() -> list[str]:
    return [f"results/audio/engines/{e['backend']}/manifest.csv" for e in config["tts"].get("engines", [])]
