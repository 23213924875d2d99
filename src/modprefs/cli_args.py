"""The argparse types every ``modprefs`` command shares, and the ``--threads`` option.

Each type raises :class:`argparse.ArgumentTypeError`, whose message argparse prints after the option's name
(``argument --port: 0 is not in 1..65535``). ``stats``, ``plan``, ``app`` and ``publish`` take their converters
from here, so that one kind of value is checked, and refused, in the same words everywhere. Only the standard
library is imported at load (``modprefs app`` starts without numpy; :func:`pinned_threads` loads its own).
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from modprefs.scale import RatingScale


def _float_of(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number") from None


def _int_of(raw: str, noun: str = "an integer") -> int:
    try:
        return int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not {noun}") from None


def whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An integer >= ``minimum`` and, if given, <= ``maximum``."""

    def parse(raw: str) -> int:
        value = _int_of(raw)
        if maximum is not None and not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{value} is not in {minimum}..{maximum}")
        if value < minimum:
            below = "is negative (must be >= 0)" if minimum == 0 else f"is below the minimum {minimum}"
            raise argparse.ArgumentTypeError(f"{value} {below}")
        return value

    return parse


#: a count: an integer >= 0 (seeds, resamples, permutations)
count = whole(0)


def number(minimum: float | None = None, strict: bool = False, maximum: float | None = None) -> Callable[[str], float]:
    """A finite number, and if given >= ``minimum`` (> with ``strict``) and <= ``maximum``."""
    low = "" if minimum is None else f"{'>' if strict else '>='} {minimum:g}"
    high = "" if maximum is None else f"<= {maximum:g}"
    bounds = " and ".join(b for b in (low, high) if b)

    def parse(raw: str) -> float:
        value = _float_of(raw)
        too_low = minimum is not None and (value < minimum or (strict and value == minimum))
        if not math.isfinite(value) or too_low or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{raw} must be a finite number" + (f" {bounds}" if bounds else ""))
        return value

    return parse


def level(text: str) -> float:
    """A number strictly between 0 and 1 (an interval's level)."""
    value = _float_of(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not strictly between 0 and 1 (e.g. 0.95)")
    return value


def slope_alpha(text: str) -> float:
    """A level in (0, 1] for the slopes' likelihood-ratio test (1 keeps every regular slope fit)."""
    value = _float_of(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not in (0, 1] (e.g. 0.2; 1 keeps every regular slope fit)")
    return value


def threads(text: str) -> int:
    """A whole number >= 1 (-1 and 0 are refused in the same words)."""
    value = _int_of(text, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a number of threads (a whole number >= 1)")
    return value


def scale_arg(text: str) -> RatingScale:
    """``MIN:MAX[:STEP]`` (:func:`modprefs.scale.parse_scale_arg`), with neutral end labels."""
    from modprefs.scale import parse_scale_arg  # noqa: PLC0415

    try:
        return parse_scale_arg(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def label(raw: str) -> str:
    """A label shown to participants: 1-100 characters, not only spaces."""
    if not raw.strip() or len(raw) > 100:
        raise argparse.ArgumentTypeError(f"{raw!r}: a label is 1-100 characters")
    return raw


def base_url(raw: str) -> str:
    """An ``http://`` or ``https://`` URL."""
    if not raw.startswith(("http://", "https://")) or len(raw) < 9:
        raise argparse.ArgumentTypeError(f"{raw!r} is not an http:// or https:// URL")
    return raw


#: the environment variables BLAS/OpenMP libraries read when they load (Snakemake sets the same for script jobs)
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def add_threads_arg(parser: argparse.ArgumentParser) -> None:
    """``--threads N`` (default 1) on ``modprefs stats`` and ``modprefs plan``."""
    parser.add_argument(
        "--threads",
        type=threads,
        default=1,
        help="threads for the numeric kernels (BLAS/OpenMP), pinned for the whole run; 1 suits these small-matrix "
        "fits (on two busy cores a paper-size study's fits took 54 s with the default threading, 5.7 s with one)",
    )


@contextlib.contextmanager
def pinned_threads(n: int) -> Iterator[None]:
    """Run the body with BLAS/OpenMP pinned to ``n`` threads (``--threads``): the environment variables for
    libraries loaded later and for child processes (``modprefs plan --jobs``), threadpoolctl for those already
    loaded (numpy's and scipy's OpenBLAS are loaded first: threadpoolctl only limits loaded libraries). Restores
    both afterwards."""
    import os  # noqa: PLC0415

    import scipy.linalg  # noqa: F401, PLC0415  (loads scipy's own OpenBLAS, so that the limit reaches it)
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # noqa: PLC0415

    before = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    os.environ.update({k: str(n) for k in THREAD_VARIABLES})
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
