"""How many threads or worker processes a command may usefully run: no more than the cores it is given.

``modprefs stats --threads 10000`` ran 7x slower than with 2 threads on a 2-core machine, without a word, and
``modprefs plan --jobs 10000`` started a process per design. :func:`capped_at_cores` caps such a number at
:func:`usable_cores` and returns the note the command prints.
"""

from __future__ import annotations

import os

__all__ = ["capped_at_cores", "usable_cores"]


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def capped_at_cores(value: int, option: str) -> tuple[int, str | None]:
    """``value`` capped at :func:`usable_cores`, and the note saying so (None when it was not capped): more threads
    or worker processes than cores only make them wait for each other (``--threads 10000`` ran 7x slower)."""
    cores = usable_cores()
    if value <= cores:
        return value, None
    return cores, f"note: {option} {value} is more than the {cores} cores this machine gives the command; using {cores}"
