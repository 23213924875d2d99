"""Logging for the workflow's ``script:`` adapters (``workflow/scripts/*.py``).

Every adapter calls :func:`setup_logging` first. It sends the root logger to the rule's log file
(``snakemake.log[0]``) and writes one line saying where the job ran: host, process id and
``SLURM_JOB_ID`` (``none`` outside a SLURM job). That line is how a lab (and ``tests/cluster/test_slurm.py``)
tells a job that ran on a cluster node from one that ran on the submitting host (``localrules``).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

from modprefs.errors import UserInputError

DEFAULT_FORMAT = "%(asctime)s %(message)s"
ORIGIN_PREFIX = "job origin:"


def job_origin() -> dict[str, str]:
    """Host, pid, SLURM job id and partition (``none`` when not inside a SLURM job) of this process."""
    return {
        "host": socket.gethostname(),
        "pid": str(os.getpid()),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID", "none"),
        "slurm_partition": os.environ.get("SLURM_JOB_PARTITION", "none"),
    }


def format_origin(origin: dict[str, str] | None = None) -> str:
    origin = origin or job_origin()
    return (
        f"{ORIGIN_PREFIX} host={origin['host']} pid={origin['pid']} SLURM_JOB_ID={origin['slurm_job_id']}"
        f" SLURM_JOB_PARTITION={origin.get('slurm_partition', 'none')}"
    )


def parse_origin(text: str) -> dict[str, str] | None:
    """The ``job origin`` line of a log written through :func:`setup_logging` (first one), or None."""
    for line in text.splitlines():
        if ORIGIN_PREFIX in line:
            fields = dict(part.split("=", 1) for part in line.split(ORIGIN_PREFIX, 1)[1].split())
            return {
                "host": fields["host"],
                "pid": fields["pid"],
                "slurm_job_id": fields["SLURM_JOB_ID"],
                "slurm_partition": fields.get("SLURM_JOB_PARTITION", "none"),  # logs before it was recorded: none
            }
    return None


def setup_logging(
    snakemake: Any, fmt: str = DEFAULT_FORMAT, filemode: str = "a", level: int = logging.INFO
) -> logging.Logger:
    """Log to ``snakemake.log[0]`` (root logger, replacing any handlers) and record the job's origin.

    ``fmt`` and ``filemode`` are passed to :func:`logging.basicConfig` so each adapter keeps its own
    format. Returns the root logger.
    """
    logging.basicConfig(filename=str(snakemake.log[0]), level=level, format=fmt, filemode=filemode, force=True)
    root = logging.getLogger()
    root.info("%s", format_origin())
    return root


def run_adapter(main: Callable[[Any], None], snakemake: Any) -> None:
    """Run a ``script:`` adapter's ``main(snakemake)``; an expected error ends the job cleanly.

    A :class:`~modprefs.errors.UserInputError` (bad config, table, audio, ...) is logged and printed
    to stderr as its message alone, then the job exits with status 1 (Snakemake reports the rule as
    failed and removes its outputs) -- no Python traceback for an error the user can fix. Any other
    exception propagates with its traceback: that is a bug.
    """
    try:
        main(snakemake)
    except UserInputError as exc:
        logging.getLogger().error("%s", exc)
        print(f"modprefs: error: {exc}", file=sys.stderr)
        sys.exit(1)
