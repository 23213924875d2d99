"""Publish a finished study as a Hugging Face ``datasets`` dataset (``modprefs publish``, rule ``publish``).

:func:`publish` reads ``results/`` (docs/CONTRACTS.md), builds the splits (:mod:`.build`, identifiers removed by
:mod:`.privacy`), the card (:mod:`.card`) and writes the folder (:mod:`.write`); :mod:`.hub` pushes it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from modprefs.publish.build import PublishError, PublishOptions, build_splits, read_results
from modprefs.publish.card import dataset_card

__all__ = ["PublishError", "PublishOptions", "publish"]


def publish(
    results: Path, folder: Path, opts: PublishOptions, config: Mapping[str, Any] | None = None
) -> dict[str, int]:
    """Write the published dataset of ``results`` into ``folder`` (new or empty); rows per split.

    ``opts.salt`` empty: a random salt for this call (pseudonyms then differ between calls). ``config``: the
    workflow config shown in the card (its ``publish.salt`` left out).

    Raises:
        PublishError: a missing or incomplete results folder (the file named).
    """
    from modprefs.publish.write import to_dataset_dict, write_dataset  # noqa: PLC0415 (datasets: slow import)

    run = read_results(results)
    if not opts.salt:
        opts = PublishOptions(opts.license, opts.drop_fields, opts.scrub_emails, opts.scrub_urls, secrets.token_hex(16))
    splits = build_splits(run, opts)
    card = dataset_card(splits.frames, run.icc, config, opts.license, splits.ties, splits.dropped)
    write_dataset(to_dataset_dict(splits.frames), card, folder)
    return {name: len(df) for name, df in splits.frames.items()}
