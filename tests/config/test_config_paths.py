"""Every file a config option names is an input of the rules that read it (modprefs.config_paths).

The schema walk: every key marked ``format: path`` in the config schema is either declared by name as a rule
input or lies in a config section whose named files a rule lists as inputs; both are read from the rule files
themselves, so a new path key without an input fails here. The dry-run check that editing such a file plans
its rule is in tests/workflow/test_workflow.py (test_editing_a_file_a_config_option_names_reruns_its_reader).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from modprefs.config_paths import (
    DIRECT_INPUT_KEYS,
    SECTION_RULES,
    named_files,
    path_key_patterns,
    schema_at,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
RULES = {p.name: p.read_text() for p in (ROOT / "rules").glob("*.smk")}


def _under(key: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(key) > len(pattern) and all(p == k for p, k in zip(pattern, key))


def _rule_text(name: str) -> str:
    """The text of ``rule name:`` (up to the next rule) in rules/*.smk, or of a helper function in common.smk."""
    for text in RULES.values():
        m = re.search(rf"^ *(?:rule|checkpoint|def) {name}\b.*?(?=^ *(?:rule|checkpoint|def) |\Z)", text, re.S | re.M)
        if m:
            return m.group(0)
    raise AssertionError(f"no rule or function {name!r} in rules/")


def test_every_path_key_is_an_input_of_a_rule():
    keys = path_key_patterns(SCHEMA)
    assert len(keys) >= 25 and ("reward", "pairs", "colloquial", "rewrites") in keys
    untracked = [k for k in keys if k not in DIRECT_INPUT_KEYS and not any(_under(k, p) for p in SECTION_RULES)]
    assert untracked == [], f"path keys that no rule declares as an input: {untracked}"
    # the tts section's rule leaves tts.engines out; each engine's entry has its own
    assert _under(("tts", "engines", "*", "model_path"), ("tts", "engines", "*"))


def test_each_section_is_listed_by_its_rule():
    where = {
        ("tts",): ("render_shard", 'config_section_files(study_tts_config(), ("tts",))'),
        ("tts", "engines", "*"): (
            "render_engine_shard",
            'config_section_files(engine_config(wildcards.engine), ("tts", "engines", "*"))',
        ),
        ("judges",): ("judge_inputs", 'config_section_files(config["judges"], ("judges",))'),
        ("reward", "pairs"): ("reward_pairs", 'config_section_files(REWARD["pairs"], ("reward", "pairs"))'),
    }
    assert set(where) == set(SECTION_RULES)
    for rule, call in where.values():
        assert call in _rule_text(rule), (rule, call)
    assert "study_tts_config" in _rule_text("render_shard") and '"engines"' in _rule_text("study_tts_config")


def test_each_directly_named_key_is_a_declared_input():
    inputs = {
        ("attention_check",): ["render_shard", "render_engine_shard", "judge_inputs"],
        ("sampling", "screening", "harmful_terms"): ["sample_prompts", "audio_review"],
        ("stats", "modality_terms"): ["justifications"],
        ("data", "source"): ["data_inputs"],
        ("ratings", "source"): ["ingest_ratings"],
    }
    assert set(inputs) == set(DIRECT_INPUT_KEYS)
    for key, rules in inputs.items():
        access = "".join(f'["{k}"]' for k in key)
        for rule in rules:
            text = _rule_text(rule)
            block = text.split("output:")[0]  # the input section (data_inputs: the whole function)
            assert f"config{access}" in block, (key, rule)


def test_named_files_follow_the_schema(tmp_path):
    (tmp_path / "rewrites.csv").write_text("item_id,written,spoken\n")
    prompts = tmp_path / "prompts"
    (prompts / "sub").mkdir(parents=True)
    (prompts / "a.yaml").write_text("x")
    (prompts / "sub" / "b.yaml").write_text("y")
    pairs = {"colloquial": {"rewrites": "rewrites.csv", "n": 3}, "corpus": {"manifest": "missing.csv"}}
    assert named_files(pairs, schema_at(SCHEMA, ("reward", "pairs")), tmp_path) == ["rewrites.csv"]
    judges = {"backend": "local", "local": {"prompts_dir": "prompts", "model_file": None}, "prompts_dir": None}
    assert named_files(judges, schema_at(SCHEMA, ("judges",)), tmp_path) == ["prompts/a.yaml", "prompts/sub/b.yaml"]
    data = schema_at(SCHEMA, ("data",))
    assert named_files({"source": "hf://lab/pairs"}, data, tmp_path) == []
    assert named_files({"source": "prism"}, data, tmp_path) == []
