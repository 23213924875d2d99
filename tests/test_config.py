"""Bad configurations stop the run before any job, with a message naming the key."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from modprefs.config_checks import ConfigError, check_config, validate_config

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


def _default() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def _set(cfg: dict, dotted: str, value) -> dict:
    cfg = copy.deepcopy(cfg)
    *path, last = dotted.split(".")
    node = cfg
    for p in path:
        node = node[p]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return cfg


class _Delete:
    """Marks a key to delete (a stable repr, so that test ids are the same in every xdist worker)."""

    def __repr__(self) -> str:
        return "<deleted>"


_DELETE = _Delete()

SCHEMA_CASES = [
    ("sampling.n_prompts", "twelve", "sampling.n_prompts"),
    ("sampling.n_prompts", 1, "sampling.n_prompts"),
    ("sampling.long_fraction", 1.5, "sampling.long_fraction"),
    ("sampling.long_percentile", 100, "sampling.long_percentile"),
    ("sampling.n_promts", 12, "sampling.n_promts: unknown key"),
    ("seed", -1, "seed"),
    ("seed", 1.5, "seed"),
    ("tts.backend", "festival", "tts.backend"),
    ("tts.speed", 0, "tts.speed"),
    ("tts.speed", 3.0, "tts.speed"),
    ("study.raters_per_condition", 1, "study.raters_per_condition"),
    ("stats.n_boot", -5, "stats.n_boot"),
    ("stats.ci_level", 95, "stats.ci_level"),
    ("ratings.source", "", "ratings.source"),
    ("data.conversation_type", "guided", "data.conversation_type"),
    ("sampling.screening.language", "english", "sampling.screening.language"),
    ("tts.voice", _DELETE, "'voice' is a required property"),
    ("colour", "blue", "colour: unknown key"),
    ("ratings.simulation.b_frist", -2.6, "ratings.simulation.b_frist: unknown key"),
    ("ratings.simulation.var_clip_audio", -1, "ratings.simulation.var_clip_audio"),
]


@pytest.mark.parametrize("key,value,expected", SCHEMA_CASES, ids=[c[0] + "=" + repr(c[1]) for c in SCHEMA_CASES])
def test_schema_errors_name_the_key(key, value, expected):
    with pytest.raises(ConfigError) as info:
        validate_config(_set(_default(), key, value), SCHEMA)
    assert expected in str(info.value)


def test_default_config_is_valid():
    validate_config(_default(), SCHEMA)
    check_config(_default(), ROOT)


def test_all_problems_reported_at_once():
    cfg = _set(_set(_default(), "seed", "x"), "stats.n_boot", -1)
    with pytest.raises(ConfigError) as info:
        validate_config(cfg, SCHEMA)
    assert "seed" in str(info.value) and "stats.n_boot" in str(info.value)


@pytest.mark.parametrize("key,value,expected", [
    ("study.trials_per_participant", 13, "study.trials_per_participant: 13 exceeds sampling.n_prompts"),
    ("data.source", "missing.jsonl", "data.source: file not found"),
    ("attention_check", "nope.json", "attention_check: file not found"),
    ("ratings.source", "no/such/dir", "ratings.source: not found: 'no/such/dir'"),
    ("ratings.source", "results/ratings", "ratings.source: 'results/ratings' is inside results/"),
    ("ratings.columns", {"ratng": "score"}, "ratings.columns: unknown column 'ratng'"),
])
def test_cross_key_checks(key, value, expected):
    with pytest.raises(ConfigError, match=expected):
        check_config(_set(_default(), key, value), ROOT)


def test_snakemake_stops_before_any_job(tmp_path):
    cfg = _set(_default(), "sampling.long_fraction", "a lot")
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "sampling.long_fraction" in proc.stdout + proc.stderr
    assert "Job stats" not in proc.stdout + proc.stderr
