"""The files a config option names, as inputs of the rules that read them.

Snakemake reruns a job when one of its declared input files changes, not when a file that only reaches the
job through a ``params`` value does. Every config key whose value is a local file or folder is marked
``format: path`` in ``workflow/schemas/config.schema.yaml``; a rule that reads a config section lists
:func:`named_files` of that section among its inputs, so editing the file (a rewrites table, a TTS model, a
judge's prompt folder) reruns exactly that rule and what depends on it.

Keys a rule names one by one as an input (``data.source`` through ``data_inputs``, ``attention_check``, ...)
are listed in :data:`DIRECT_INPUT_KEYS`; the sections read whole are :data:`SECTION_RULES`. The test
``tests/config/test_config_paths.py`` walks the schema and checks that every path key is one or the other.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

KeyPattern = tuple[str, ...]  # "*" stands for every item of a list

#: path keys a rule declares as an input by name (rule names for the reader)
DIRECT_INPUT_KEYS: dict[KeyPattern, str] = {
    ("data", "source"): "conversations (data_inputs in rules/common.smk)",
    ("ratings", "source"): "ingest_ratings (rules/ratings.smk)",
    ("attention_check",): "render_shard, render_engine_shard, judge_modality, app_load",
    ("sampling", "screening", "harmful_terms"): "sample_prompts, audio_review",
    ("stats", "modality_terms"): "justifications",
}

#: config sections a rule reads whole, with the rule that lists their named files as inputs
SECTION_RULES: dict[KeyPattern, str] = {
    ("tts",): "render_shard (the study's tts settings, tts.engines left out)",
    ("tts", "engines", "*"): "render_engine_shard (each engine's entry)",
    ("judges",): "judge_modality",
    ("reward", "pairs"): "reward_pairs",
}

#: the value of a path key that names no local file (a hub dataset, PRISM from the hub, a simulated panel)
NOT_LOCAL_PREFIXES = ("hf://",)
NOT_LOCAL_VALUES = frozenset({"prism", "simulate"})


def _children(schema: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, sub in (schema.get("properties") or {}).items():
        yield str(name), sub
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield "*", items


def path_key_patterns(schema: Mapping[str, Any], prefix: KeyPattern = ()) -> list[KeyPattern]:
    """Every key marked ``format: path`` in a JSON schema, as a key pattern (``*`` for list items)."""
    found: list[KeyPattern] = []
    for name, sub in _children(schema):
        if not isinstance(sub, Mapping):
            continue
        if sub.get("format") == "path":
            found.append((*prefix, name))
        found += path_key_patterns(sub, (*prefix, name))
    return found


def schema_at(schema: Mapping[str, Any], pattern: KeyPattern) -> Mapping[str, Any]:
    """The sub-schema of a key pattern (KeyError if the schema has no such key)."""
    node = schema
    for part in pattern:
        node = node["items"] if part == "*" else node["properties"][part]
    return node


def is_local(value: object) -> bool:
    return isinstance(value, str) and value not in NOT_LOCAL_VALUES and not value.startswith(NOT_LOCAL_PREFIXES)


def named_files(node: Any, schema: Mapping[str, Any], base: str | Path = ".") -> list[str]:
    """The existing local files named by the ``format: path`` keys of ``node`` (a config section) under
    ``schema`` (that section's sub-schema, :func:`schema_at`); a named folder contributes every file in it.

    Paths are returned as given (relative to ``base``, the working directory), sorted, without duplicates.
    Missing paths are left out: the config check reports them.
    """
    out: set[str] = set()

    def walk(value: Any, sub: Mapping[str, Any]) -> None:
        if sub.get("format") == "path":
            if is_local(value):
                path = Path(base) / str(value)
                if path.is_file():
                    out.add(str(value))
                elif path.is_dir():
                    out.update(str(Path(str(value)) / f.relative_to(path)) for f in path.rglob("*") if f.is_file())
            return
        if isinstance(value, Mapping):
            props = sub.get("properties") or {}
            for key, item in value.items():
                if key in props and isinstance(props[key], Mapping):
                    walk(item, props[key])
        elif isinstance(value, list) and isinstance(sub.get("items"), Mapping):
            for item in value:
                walk(item, sub["items"])

    walk(node, schema)
    return sorted(out)
