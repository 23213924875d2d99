"""The record of the config a run used: ``results/config.yaml`` (rule ``run_config``), read by publishing.

Snakemake merges config.yaml, every ``--configfile`` and ``--config`` and the schema's defaults into one
``config``; the rule ``run_config`` (rules/publish.smk) writes that merged config, with every key named like a
secret left out (``publish.salt``; :func:`modprefs.publish.card.public_config`), to ``results/config.yaml``. Its
params are the whole config, so any config change rewrites it. ``modprefs publish`` and the rule ``publish`` show
this record in the dataset card and take the study's rating scale (``study.scale``) from it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from modprefs.errors import UserInputError
from modprefs.io import write_text
from modprefs.publish.card import public_config

#: the record, relative to the results folder
RUN_CONFIG = "config.yaml"
HEADER = (
    "# The merged config this run used (config.yaml, --configfile, --config and the schema's defaults),\n"
    "# keys named like secrets left out. Written by the rule run_config (rules/publish.smk); read by publish.\n"
)
HOW_TO_MAKE = (
    "make it in the run's folder with `snakemake --cores 1 results/config.yaml` (the same --configfile / "
    "--config options as the run)"
)


class RunConfigError(UserInputError):
    """The run's config record is missing or unreadable; the message says how to make it."""


def run_config_record(config: Mapping[str, Any]) -> dict[str, Any]:
    """The record of ``config``: a plain mapping, secret-named keys (``publish.salt``) left out."""
    return public_config(config)


def write_run_config(config: Mapping[str, Any], target: str | os.PathLike[str]) -> None:
    """Write :func:`run_config_record` of ``config`` as YAML to ``target``, atomically."""
    body = yaml.safe_dump(run_config_record(config), sort_keys=False, allow_unicode=True)
    write_text(HEADER + body, target)


def read_run_config(results: str | os.PathLike[str]) -> dict[str, Any]:
    """The config record ``results/config.yaml`` of a finished run.

    Raises:
        RunConfigError: the file is missing (how to make it said), not YAML or not a mapping.
    """
    from modprefs.config_files import load_config_file  # noqa: PLC0415

    path = Path(results) / RUN_CONFIG
    if not path.is_file():
        raise RunConfigError(
            f"--results {results}: missing {path}, the record of the config the run used (rule run_config); "
            + HOW_TO_MAKE
        )
    try:
        return load_config_file(path)
    except UserInputError as exc:
        raise RunConfigError(f"--results {results}: {exc}") from None
