"""Checks on the workflow configuration that a JSON Schema cannot express.

The schema (``workflow/schemas/config.schema.yaml``) catches wrong types, unknown keys and
out-of-range values; :func:`check_config` then checks relations between keys and that the files
the config names exist, so that a bad config stops the run before any job starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from modprefs.errors import UserInputError


class ConfigError(UserInputError):
    """A configuration problem; the message names the offending key."""


def schema_errors(config: Mapping[str, Any], schema_path: str | Path) -> list[str]:
    """Every schema violation in ``config`` as ``'<dotted.key>: <message>'`` lines.

    Used to turn jsonschema's first-error report into a list a user can act on at once.
    The schema may ``$ref`` sibling files by relative name.
    """
    schema_path = Path(schema_path).resolve()
    schema = yaml.safe_load(schema_path.read_text())
    registry = _sibling_registry(schema_path.parent)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, registry=registry)
    lines = []
    for err in sorted(validator.iter_errors(dict(config)), key=lambda e: list(map(str, e.path))):
        key = ".".join(str(p) for p in err.absolute_path) or "<top level>"
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            prefix = f"{key}." if err.absolute_path else ""
            for name in extra:
                lines.append(f"{prefix}{name}: unknown key (allowed: {', '.join(sorted(err.schema.get('properties', {})))})")
            continue
        lines.append(f"{key}: {err.message}")
    return lines


def _sibling_registry(folder: Path):
    from referencing import Registry, Resource

    resources = []
    for path in folder.glob("*.yaml"):
        text = path.read_text()
        if not text.strip():
            continue
        contents = yaml.safe_load(text)
        resources.append((path.name, Resource.from_contents(contents, default_specification=_draft())))
    return Registry().with_resources(resources)


def _draft():
    from referencing.jsonschema import DRAFT202012

    return DRAFT202012


def check_config(config: Mapping[str, Any], base_dir: str | Path = ".") -> None:
    """Raise :class:`ConfigError` listing every cross-key or missing-file problem in ``config``.

    ``base_dir`` is the folder relative paths are resolved against (the working directory
    Snakemake runs in).
    """
    base = Path(base_dir)
    problems: list[str] = []

    def exists(key: str, value: str, kind: str = "file") -> None:
        path = base / value
        ok = path.is_file() if kind == "file" else path.is_dir()
        if not ok:
            problems.append(f"{key}: {kind} not found: {value!r}")

    source = config["data"]["source"]
    if source != "prism":
        exists("data.source", source)
    exists("attention_check", config["attention_check"])
    screening = config["sampling"].get("screening", {})
    if "harmful_terms" in screening:
        exists("sampling.screening.harmful_terms", screening["harmful_terms"])

    if "modality_terms" in config["stats"]:
        exists("stats.modality_terms", config["stats"]["modality_terms"])

    n_prompts = config["sampling"]["n_prompts"]
    trials = config["study"]["trials_per_participant"]
    if trials > n_prompts:
        problems.append(
            f"study.trials_per_participant: {trials} exceeds sampling.n_prompts ({n_prompts}); "
            "a participant cannot rate the same prompt twice"
        )

    ratings_source = config["ratings"]["source"]
    if ratings_source != "simulate":
        exists("ratings.source", ratings_source, kind="directory")

    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def validate_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Schema validation that reports every problem with its dotted key, then :func:`check_config`.

    Raises :class:`ConfigError`. Defaults from the schema are *not* filled in here; the
    Snakefile calls ``snakemake.utils.validate`` for that after this passes.
    """
    lines = schema_errors(config, schema_path)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))


def dataclass_kwargs(cls: type, mapping: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """``mapping`` as keyword arguments for the dataclass ``cls``; an unknown key is an error naming ``where``.

    A typo in a config block must stop the run, not be ignored: ``where`` is the block's dotted key
    (e.g. ``judges.allocation``).
    """
    import dataclasses

    values = dict(mapping or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known: {sorted(names)}")
    return values
