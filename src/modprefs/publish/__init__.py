"""Publish a finished study as a Hugging Face ``datasets`` dataset (``modprefs publish``, rule ``publish``).

:func:`publish` reads ``results/`` (docs/CONTRACTS.md) and the config the run used (``results/config.yaml``,
:mod:`.run_config`), builds the splits (:mod:`.build`, identifiers removed by :mod:`.privacy`), the card
(:mod:`.card`: the run's config and its rating scale) and writes the folder (:mod:`.write`); :mod:`.hub` pushes it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from modprefs.publish.build import PublishError, PublishOptions, build_splits, read_results
from modprefs.publish.card import dataset_card, scale_sentence
from modprefs.publish.run_config import read_run_config
from modprefs.scale import scale_from_config

__all__ = ["PublishError", "PublishOptions", "publish"]


def publish(
    results: Path, folder: Path, opts: PublishOptions, config: Mapping[str, Any] | None = None
) -> dict[str, int]:
    """Write the published dataset of ``results`` into ``folder`` (new or empty); rows per split.

    ``opts.salt`` empty: a random salt for this call (pseudonyms then differ between calls). ``config``: the
    workflow config the run used, shown in the card (secret-named keys such as ``publish.salt`` left out) and
    giving the rating scale (``study.scale``) the dataset records; default the run's record
    ``results/config.yaml``.

    Raises:
        PublishError: a missing or incomplete results folder (the file named), or a bad ``study.scale``.
        RunConfigError: ``config`` None and ``results/config.yaml`` missing (how to make it said).
    """
    from modprefs.publish.write import to_dataset_dict, write_dataset  # noqa: PLC0415 (datasets: slow import)

    config = read_run_config(results) if config is None else config
    try:
        scale = scale_from_config(config)
    except ValueError as exc:
        raise PublishError(f"the run's config: {exc}") from None
    run = read_results(results)
    if not opts.salt:
        opts = PublishOptions(opts.license, opts.drop_fields, opts.scrub_emails, opts.scrub_urls, secrets.token_hex(16))
    splits = build_splits(run, opts)
    card = dataset_card(splits.frames, run.icc, config, opts.license, splits.ties, splits.dropped, scale=scale)
    dd = to_dataset_dict(splits.frames)
    judges = bool((splits.frames["ratings"]["source"] == "judge").any())
    dd["ratings"].info.description = "One row per rating. " + scale_sentence(scale, judges)
    write_dataset(dd, card, folder)
    return {name: len(df) for name, df in splits.frames.items()}
